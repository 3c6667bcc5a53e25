/**
 * The fault and fuzz suite: requests generated from the service's three OpenAPI documents
 * (/api/v1, /admin/v1 and the upload interface), seeded and reproducible, sent to a target (the
 * app in process on Node, the Worker's fetch handler in workerd), some of them while a dependency
 * is down (the database, the key counters, the run queue). Every answer is held to four
 * invariants:
 *
 * 1. never a 5xx, except a 503 with Retry-After while a dependency is down (never a 500);
 * 2. every error in the envelope: JSON `{error: {code, message, details?}}`, the code's status,
 *    `application/json; charset=utf-8`, and a Request-Id on every answer;
 * 3. every 2xx valid against the response schema its operation declares (strictly: no field the
 *    document does not name);
 * 4. every status one the operation declares.
 *
 * Generation: ids from the fixtures and from earlier answers (new keys, cursors, webhooks),
 * near misses of each schema, odd strings, odd headers and content types, hostile bodies (deep
 * JSON, malformed JSON and XML, oversize, gzip), wrong credentials and wrong methods.
 */
import { ERROR_STATUS } from "../../../src/lib/vocabulary";
import { mulberry32 } from "../../../src/lib/seeded-random";
import type { Harness } from "../harness-core";
import { ADMIN_TOKEN } from "../constants";
import { Choices, type Components, type JsonSchema, ODD_STRINGS, ResponseValidators, nearMiss, valid } from "./schema";

/** A dependency the target can take down for one request. */
export type Fault = "database" | "counter" | "queue";

export type FuzzTarget = {
  send(request: Request, fault: Fault | null): Promise<Response>;
  /** The faults this target can inject (none: every request sees healthy dependencies). */
  faults: Fault[];
};

type Parameter = { name: string; in: "path" | "query" | "header"; required?: boolean; schema?: JsonSchema };
type MediaTypes = Record<string, { schema?: JsonSchema }>;
type Operation = {
  id: string;
  method: string;
  /** The full path template, e.g. /api/v1/projects/{id}. */
  path: string;
  parameters: Parameter[];
  body?: { content: MediaTypes };
  responses: Record<string, { content?: MediaTypes }>;
  credential: "apiKey" | "uploadToken" | "admin" | "none";
  components: Components;
};

/** Every operation of the three documents, each once (the /api/v1 document lists the upload operations too). */
async function loadOperations(
  target: FuzzTarget,
): Promise<{ operations: Operation[]; errorSchema: JsonSchema; validators: ResponseValidators }> {
  const documents: any[] = [];
  for (const [path, credential] of [
    ["/api/v1/openapi.json", null],
    ["/admin/v1/openapi.json", ADMIN_TOKEN],
    ["/uploads/v1/openapi.json", null],
  ] as const) {
    const response = await target.send(
      new Request(`http://fuzz.test${path}`, { headers: credential ? { authorization: `Bearer ${credential}` } : {} }),
      null,
    );
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
    documents.push(await response.json());
  }
  // One set of components: the documents build them from the same Zod schemas (test/openapi.test.ts checks they agree).
  const components: Components = { schemas: Object.assign({}, ...documents.map((d) => d.components?.schemas ?? {})) };
  const operations = new Map<string, Operation>();
  for (const document of documents) {
    for (const [path, item] of Object.entries<any>(document.paths)) {
      const server = new URL((item.servers ?? document.servers)[0].url).pathname.replace(/\/$/, "");
      for (const [method, operation] of Object.entries<any>(item)) {
        if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
        const full = `${server}${path}`;
        const key = `${method} ${full}`;
        if (operations.has(key)) continue;
        const scheme = Object.keys(operation.security?.[0] ?? {})[0];
        operations.set(key, {
          id: operation.operationId,
          method: method.toUpperCase(),
          path: full,
          parameters: operation.parameters ?? [],
          body: operation.requestBody,
          responses: operation.responses,
          credential:
            scheme === "bearerAuth" ? "apiKey" : scheme === "uploadToken" ? "uploadToken" : scheme === "adminToken" ? "admin" : "none",
          components,
        });
      }
    }
  }
  const errorSchema = components.schemas!.Error!;
  return { operations: [...operations.values()], errorSchema, validators: new ResponseValidators(components) };
}

type Org = { id: string; apiKey: string; projects: { id: string; uploadToken: string }[] };

/** What the requests are about: two organizations (the second one foreign to the first's key) and ids of everything. */
export type FuzzFixtures = {
  orgs: [Org, Org];
  /** Values for path parameters by the collection before them (`projects/{id}` → projects). */
  pools: Record<string, string[]>;
  cursors: string[];
};

const REPORT = (failing: boolean) =>
  `<?xml version="1.0" encoding="UTF-8"?><testsuites time="2.5"><testsuite name="fuzz.Suite" time="1.5">` +
  `<testcase classname="fuzz.A" name="passes" time="0.5"/>` +
  `<testcase classname="fuzz.A" name="sometimes" time="0.2">${failing ? '<failure message="expected 1 but was 2" type="AssertionError">at fuzz.A:12</failure>' : ""}</testcase>` +
  `<testcase classname="fuzz.A" name="skipped"><skipped/></testcase>` +
  `<testsuite name="fuzz.Nested"><testcase classname="fuzz.B" name="nested" time="0.1"><error message="boom"/></testcase></testsuite>` +
  `</testsuite></testsuites>`;

/** Builds the fixtures through the harness's API (the admin API and the upload path), as a client would. */
export async function createFuzzFixtures(h: Harness): Promise<FuzzFixtures> {
  const orgs: Org[] = [];
  const pools: Record<string, string[]> = {
    organizations: [],
    projects: [],
    alerts: [],
    tests: [],
    test_cases: [],
    webhooks: [],
    test_runs: ["1", "2", "3"],
    test_suites: ["1", "2"],
  };
  for (const name of ["Fuzz A", "Fuzz B"]) {
    const { organization, apiKey } = await h.newOrganization(name);
    const { project, uploadToken, alertIds } = await h.newProject(organization.id, `${name} project`);
    orgs.push({ id: organization.id, apiKey, projects: [{ id: project.id, uploadToken }] });
    pools.organizations!.push(organization.id);
    pools.projects!.push(project.id);
    pools.alerts!.push(...Object.values(alertIds));
    for (const failing of [false, true, true])
      await h.uploadAndWait(uploadToken, REPORT(failing), { query: "branch=main&commit_sha=f00d" });
    const tests = await h.get(`/api/v1/projects/${project.id}/tests`, apiKey);
    pools.tests!.push(...tests.body.data.map((t: { id: string }) => t.id));
    const cases = await h.get(`/api/v1/projects/${project.id}/test_runs/2/test_suites/1/test_cases`, apiKey);
    pools.test_cases!.push(...cases.body.data.map((c: { id: number }) => String(c.id)));
    // Loopback's discard port: deliveries to it fail fast and never leave the machine.
    const webhook = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: "http://127.0.0.1:9/fuzz-hook" });
    if (webhook.status !== 201) throw new Error(`creating a webhook failed: ${webhook.status} ${webhook.text}`);
    pools.webhooks!.push(webhook.body.webhook.id);
  }
  return { orgs: orgs as [Org, Org], pools, cursors: [] };
}

type Generated = { request: Request; kind: "operation" | "wrong-method"; fault: Fault | null; describe: string };

const ODD_IDS = [
  "0",
  "-1",
  "1.5",
  "abc",
  "9".repeat(25),
  "1e3",
  "%00",
  "😀",
  " x ",
  "null",
  "00000000-0000-0000-0000-000000000000",
  "ZZZZZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZZZZZZZZZ",
];
const ODD_CONTENT_TYPES = [
  "application/json;;;",
  "application/json; x",
  "text/plain",
  "",
  "application/xml",
  "multipart/form-data; boundary=x",
  "application/json; charset=latin1",
  "application/x-www-form-urlencoded",
  "*/*",
  "application/vnd.api+json",
  "APPLICATION/JSON",
];
const HOSTILE_JSON = [
  `${"[".repeat(4500)}${"]".repeat(4500)}`,
  `{"name":${"[".repeat(4500)}1${"]".repeat(4500)}}`,
  `{"a":${'{"b":'.repeat(3000)}1${"}".repeat(3000)}}`,
  '{"name":',
  "{name: 'x'}",
  "",
  "null",
  "[]",
  '"text"',
  "\ufeff{}",
  '{"name":"a\\u0000b","description":"\\ud800"}',
  '{"notification_cooldown_seconds":1e400,"duration":"1h"}',
  `{"name":"big","pad":"${"x".repeat(70 * 1024)}"}`,
  '{"__proto__":{"admin":true},"name":"proto"}',
];
const HOSTILE_XML = [
  '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite name="s">&a;</testsuite>',
  "<testsuite name='s'><testcase name='c'>",
  `${"<testsuite>".repeat(200)}${"</testsuite>".repeat(200)}`,
  '<?xml version="1.0" encoding="KOI8-R"?><testsuite name="s"/>',
  "<html><body>not junit</body></html>",
  "\u0000\u0001\u0002",
  '<testsuite name="s"><testcase name="c" time="-1e400"/></testsuite>',
];

/** CODEOWNERS lines, plausible and not (PUT /uploads/v1/codeowners): a file is some of them. */
const CODEOWNERS_LINES = [
  "* @fuzz/core",
  "/fuzz/ @fuzz/team fuzz@example.com",
  "*.xml",
  "# a comment",
  "",
  "!negated @x",
  "[ab]/ @x",
  "\\#escaped @x",
  "docs/* @docs # inline",
  "**/nested/** @deep",
  "not-an-owner pattern",
  "\u0000",
  "\uFFFD\uD800",
  "path\\ with\\ spaces/ @s",
  "/".repeat(300),
  `${"*".repeat(500)} @stars`,
];

function junit(choices: Choices): string {
  const statuses = ["", "<failure message='f'/>", "<error message='e' type='E'>trace</error>", "<skipped/>"];
  const cases = Array.from(
    { length: choices.int(0, 6) },
    (_, i) =>
      `<testcase classname="fuzz.C${choices.int(0, 3)}" name="case ${i}" time="${choices.int(0, 900) / 100}">${choices.pick(statuses)}</testcase>`,
  );
  return `<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="fuzz ${choices.int(0, 9)}">${cases.join("")}</testsuite></testsuites>`;
}

async function gzip(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function credentialFor(op: Operation, fixtures: FuzzFixtures, choices: Choices): { header: string | null; note: string } {
  const [a, b] = fixtures.orgs;
  const right =
    op.credential === "apiKey"
      ? a.apiKey
      : op.credential === "uploadToken"
        ? a.projects[0]!.uploadToken
        : op.credential === "admin"
          ? ADMIN_TOKEN
          : null;
  const roll = choices.next();
  if (right === null || roll < 0.8) return { header: right ? `Bearer ${right}` : null, note: "valid" };
  if (roll < 0.85)
    return {
      header: `Bearer ${op.credential === "uploadToken" ? b.projects[0]!.uploadToken : op.credential === "apiKey" ? b.apiKey : ADMIN_TOKEN}`,
      note: "foreign",
    };
  if (roll < 0.9) return { header: `Bearer ${choices.pick([a.apiKey, a.projects[0]!.uploadToken, ADMIN_TOKEN])}`, note: "other kind" };
  if (roll < 0.95)
    return {
      header: choices.pick([
        "Bearer",
        "Basic YTpi",
        `bearer ${right}`,
        `Bearer ${right.slice(0, -1)}x`,
        `Bearer  ${right}`,
        "Bearer cta_",
        `Bearer ${right} extra`,
      ]),
      note: "malformed",
    };
  return { header: null, note: "none" };
}

function pathFor(op: Operation, fixtures: FuzzFixtures, choices: Choices): string {
  return op.path.replace(/\/([a-z_]+)\/\{([a-z_]+)\}/g, (_, collection: string) => {
    const pool = fixtures.pools[collection] ?? [];
    const value =
      pool.length && choices.chance(0.75) ? choices.pick(pool) : choices.pick([...ODD_IDS, choices.uuid(), choices.uuid().toUpperCase()]);
    return `/${collection}/${encodeURIComponent(value)}`;
  });
}

function queryFor(op: Operation, fixtures: FuzzFixtures, choices: Choices): string {
  const params = new URLSearchParams();
  for (const parameter of op.parameters.filter((p) => p.in === "query")) {
    if (!choices.chance(parameter.name === "cursor" ? 0.3 : 0.45)) continue;
    let value: string;
    if (parameter.name === "cursor")
      value =
        fixtures.cursors.length && choices.chance(0.6)
          ? choices.pick(fixtures.cursors)
          : choices.pick(["x", "a.b", "eyJ9.AAAA", ...ODD_STRINGS]);
    else if (parameter.name === "project_id") value = choices.pick([...fixtures.pools.projects!, choices.uuid(), "nope"]);
    else if (choices.chance(0.7)) value = String(valid(parameter.schema ?? {}, op.components, choices, parameter.name));
    else value = choices.pick([...ODD_STRINGS, "0", "-5", "1.5", "1e2", "101", "9".repeat(40)]);
    params.append(parameter.name, value);
    if (choices.chance(0.1)) params.append(parameter.name, choices.pick(ODD_STRINGS));
  }
  if (choices.chance(0.1)) params.append(choices.pick(["unknown", "reslt", "limit[]", "__proto__"]), choices.pick(ODD_STRINGS));
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** Header values the fetch API can carry (no NUL, CR, LF; bytes only), odd otherwise. */
const ODD_HEADER_VALUES = ["", " ", "\t", "x".repeat(4000), "a\u0001b", "%F0%9F%98%80", "() { :; }; echo"];

function oddHeaders(choices: Choices): Record<string, string> {
  const headers: Record<string, string> = {};
  const candidates: [string, () => string][] = [
    ["accept", () => choices.pick(["text/html", "application/xml", "*/*;q=0", "application/json;q=0", ...ODD_HEADER_VALUES])],
    ["accept-encoding", () => choices.pick(["gzip, br, zstd", "identity;q=0", "*;q=0"])],
    ["x-forwarded-host", () => "evil.example"],
    ["forwarded", () => "for=1.2.3.4;host=evil.example;proto=http"],
    ["x-forwarded-proto", () => "gopher"],
    ["x-http-method-override", () => choices.pick(["DELETE", "PUT", "PATCH"])],
    ["request-id", () => "client-chosen-id"],
    ["cookie", () => "session=abc; __proto__=x"],
    ["range", () => "bytes=0-10"],
    ["if-none-match", () => "*"],
    ["x-fuzz", () => choices.pick(ODD_HEADER_VALUES)],
    ["content-language", () => choices.pick(ODD_HEADER_VALUES)],
  ];
  for (let n = choices.int(1, 3); n > 0; n--) {
    const [name, value] = choices.pick(candidates);
    headers[name] = value();
  }
  return headers;
}

async function bodyFor(
  op: Operation,
  choices: Choices,
): Promise<{ body?: string | Uint8Array; contentType?: string; contentEncoding?: string; note: string }> {
  const declared = Object.keys(op.body?.content ?? {});
  if (declared.length === 0) {
    // Operations without a body must ignore one (GET cannot carry one in fetch).
    if (op.method !== "GET" && choices.chance(0.15))
      return { body: choices.pick(HOSTILE_JSON), contentType: "application/json", note: "junk body on a bodiless operation" };
    return { note: "no body" };
  }
  const contentType = choices.chance(0.75) ? choices.pick(declared) : choices.pick(ODD_CONTENT_TYPES);
  const isXml = /xml/i.test(contentType);
  let text: string;
  let note: string;
  const roll = choices.next();
  if (isXml && op.id === "uploadTestRun") {
    [text, note] = roll < 0.75 ? [junit(choices), "junit"] : [choices.pick(HOSTILE_XML), "hostile xml"];
  } else if (op.id === "putCodeowners" && roll < 0.75) {
    [text, note] = [
      Array.from({ length: choices.int(0, 12) }, () => choices.pick(CODEOWNERS_LINES)).join(choices.pick(["\n", "\r\n"])),
      "codeowners",
    ];
  } else {
    const schema = op.body!.content["application/json"]?.schema ?? {};
    if (roll < 0.55) [text, note] = [JSON.stringify(valid(schema, op.components, choices)), "valid json"];
    else if (roll < 0.8) [text, note] = [JSON.stringify(nearMiss(schema, op.components, choices)), "near-miss json"];
    else [text, note] = [choices.pick(HOSTILE_JSON), "hostile json"];
  }
  if (op.id === "uploadTestRun" && choices.chance(0.1)) {
    return {
      body: choices.chance(0.8) ? await gzip(text) : new TextEncoder().encode(`not gzip ${text}`),
      contentType,
      contentEncoding: "gzip",
      note: `${note}, gzip`,
    };
  }
  return {
    body: text,
    contentType,
    contentEncoding: choices.chance(0.03) ? choices.pick(["br", "identity", "x-unknown"]) : undefined,
    note,
  };
}

const WRONG_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** One request for `op`: mostly a plausible one, sometimes a wrong method, sometimes while a dependency is down. */
async function generateRequest(
  op: Operation,
  allOperations: Operation[],
  fixtures: FuzzFixtures,
  choices: Choices,
  faults: Fault[],
): Promise<Generated> {
  const path = pathFor(op, fixtures, choices) + queryFor(op, fixtures, choices);
  const headers: Record<string, string> = {};
  const credential = credentialFor(op, fixtures, choices);
  if (credential.header !== null) headers.authorization = credential.header;
  for (const parameter of op.parameters.filter((p) => p.in === "header")) {
    if (choices.chance(0.5))
      headers[parameter.name.toLowerCase()] = choices.chance(0.8)
        ? choices.uuid()
        : choices.pick(["x".repeat(300), "has space", "\u00fcml\u00e4ut", "\t", "a\u0001b"]);
  }
  if (choices.chance(0.2)) Object.assign(headers, oddHeaders(choices));

  let method = op.method;
  let kind: Generated["kind"] = "operation";
  if (choices.chance(0.05)) {
    const taken = new Set(allOperations.filter((o) => o.path === op.path).map((o) => o.method));
    const other = WRONG_METHODS.filter((m) => !taken.has(m));
    if (other.length) {
      method = choices.pick(other);
      kind = "wrong-method";
    }
  }
  const body = method === "GET" || method === "HEAD" ? { note: "no body" } : await bodyFor(op, choices);
  if ("contentType" in body && body.contentType) headers["content-type"] = body.contentType;
  if ("contentEncoding" in body && body.contentEncoding) headers["content-encoding"] = body.contentEncoding;
  const fault = faults.length && choices.chance(0.1) ? choices.pick(faults) : null;
  // A header value this runtime's fetch refuses to carry is left out (the HTTP layer below the app is test/node/http-server.test.ts's).
  const carried = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    try {
      carried.set(name, value);
    } catch {
      continue;
    }
  }
  const request = new Request(`http://fuzz.test${path}`, { method, headers: carried, body: "body" in body ? body.body : undefined });
  const describe = `${method} ${path} [${op.id}; credential ${credential.note}; ${body.note}${headers["content-type"] !== undefined ? `; content-type ${JSON.stringify(headers["content-type"])}` : ""}${fault ? `; ${fault} down` : ""}]`;
  return { request, kind, fault, describe };
}

type Violation = {
  kind: "5xx" | "envelope" | "schema" | "undeclared";
  index: number;
  request: string;
  status: number;
  problem: string;
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The four invariants for one answer. */
function checkAnswer(
  op: Operation,
  generated: Generated,
  response: Response,
  text: string,
  schemas: { errorSchema: JsonSchema; validators: ResponseValidators },
): Omit<Violation, "index" | "request" | "status">[] {
  const problems: Omit<Violation, "index" | "request" | "status">[] = [];
  const status = response.status;
  if (status >= 500 && !(generated.fault && status === 503)) problems.push({ kind: "5xx", problem: text.slice(0, 300) });
  if (status === 503 && !/^\d+$/.test(response.headers.get("retry-after") ?? ""))
    problems.push({ kind: "envelope", problem: "503 without Retry-After" });
  if (!UUID.test(response.headers.get("request-id") ?? ""))
    problems.push({ kind: "envelope", problem: `Request-Id ${JSON.stringify(response.headers.get("request-id"))}` });
  if (generated.kind === "operation" && !(String(status) in op.responses))
    problems.push({ kind: "undeclared", problem: `${status} is not declared by ${op.id}: ${text.slice(0, 200)}` });

  let body: unknown;
  const contentType = response.headers.get("content-type");
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      problems.push({ kind: status >= 400 ? "envelope" : "schema", problem: `body is not JSON: ${text.slice(0, 120)}` });
      return problems;
    }
  }
  if (status >= 400) {
    if (contentType !== "application/json; charset=utf-8")
      problems.push({ kind: "envelope", problem: `Content-Type ${JSON.stringify(contentType)}` });
    const errors = schemas.validators.check(schemas.errorSchema, body);
    if (errors.length) problems.push({ kind: "envelope", problem: `not the envelope: ${errors.join("; ")}: ${text.slice(0, 200)}` });
    const code = (body as { error?: { code?: string } } | undefined)?.error?.code;
    if (code && ERROR_STATUS[code as keyof typeof ERROR_STATUS] !== status)
      problems.push({ kind: "envelope", problem: `code ${code} with status ${status}` });
    if (!(body as { error?: { message?: string } } | undefined)?.error?.message)
      problems.push({ kind: "envelope", problem: "empty message" });
  } else if (status >= 200 && status < 300 && generated.kind === "operation") {
    const declared = op.responses[String(status)];
    const schema = declared?.content?.["application/json"]?.schema;
    if (!schema) {
      if (text !== "") problems.push({ kind: "schema", problem: `${status} declares no content but has a body` });
    } else {
      if (contentType !== "application/json; charset=utf-8")
        problems.push({ kind: "schema", problem: `Content-Type ${JSON.stringify(contentType)}` });
      const errors = schemas.validators.check(schema, body);
      if (errors.length) problems.push({ kind: "schema", problem: `${op.id} ${status}: ${errors.slice(0, 5).join("; ")}` });
    }
  }
  return problems;
}

/** What later requests can use from an answer: replaced credentials, new ids, cursors. */
function learn(op: Operation, request: Request, status: number, body: any, fixtures: FuzzFixtures): void {
  if (status < 200 || status >= 300 || typeof body !== "object" || body === null) return;
  const idInPath = decodeURIComponent(new URL(request.url).pathname.split("/")[4] ?? "");
  if (op.id === "adminRegenerateApiKey") {
    const org = fixtures.orgs.find((o) => o.id === idInPath);
    if (org) org.apiKey = body.api_key.secret;
  }
  if (op.id === "adminRegenerateUploadToken") {
    for (const org of fixtures.orgs)
      for (const project of org.projects) if (project.id === idInPath) project.uploadToken = body.upload_token;
  }
  if (op.id === "adminCreateWebhook") fixtures.pools.webhooks!.push(body.webhook.id);
  if (op.id === "adminCreateOrganization") fixtures.pools.organizations!.push(body.organization.id);
  if (op.id === "adminCreateProject") fixtures.pools.projects!.push(body.project.id);
  if (op.id === "uploadTestRun" && !fixtures.pools.test_runs!.includes(String(body.number)))
    fixtures.pools.test_runs!.push(String(body.number));
  const cursor = body.pagination?.next_cursor;
  if (typeof cursor === "string" && fixtures.cursors.length < 50) fixtures.cursors.push(cursor);
}

export type FuzzSummary = {
  seed: number;
  requests: number;
  byStatus: Record<string, number>;
  faulted: number;
  fiveXx: number;
  envelopeViolations: number;
  schemaViolations: number;
  undeclaredStatuses: number;
  violations: Violation[];
  operationsCovered: number;
  operations: number;
  seconds: number;
};

/** Runs `count` requests from `seed` against `target`; violations are collected, not thrown. */
export async function runFuzz(options: { target: FuzzTarget; fixtures: FuzzFixtures; seed: number; count: number }): Promise<FuzzSummary> {
  const started = Date.now();
  const { target, fixtures, seed, count } = options;
  const { operations, errorSchema, validators } = await loadOperations(target);
  const choices = new Choices(mulberry32(seed));
  const summary: FuzzSummary = {
    seed,
    requests: 0,
    byStatus: {},
    faulted: 0,
    fiveXx: 0,
    envelopeViolations: 0,
    schemaViolations: 0,
    undeclaredStatuses: 0,
    violations: [],
    operationsCovered: 0,
    operations: operations.length,
    seconds: 0,
  };
  const covered = new Set<string>();
  for (let index = 0; index < count; index++) {
    // Every operation once first, so a short profile covers them all; then seeded picks.
    const operation = index < operations.length ? operations[index]! : choices.pick(operations);
    const generated = await generateRequest(operation, operations, fixtures, choices, target.faults);
    covered.add(operation.id);
    let response: Response;
    try {
      response = await target.send(generated.request.clone(), generated.fault);
    } catch (error) {
      summary.requests++;
      summary.fiveXx++;
      summary.violations.push({
        kind: "5xx",
        index,
        request: generated.describe,
        status: 0,
        problem: `the target threw: ${error instanceof Error ? error.stack : String(error)}`,
      });
      continue;
    }
    const text = await response.text();
    summary.requests++;
    if (generated.fault) summary.faulted++;
    summary.byStatus[response.status] = (summary.byStatus[response.status] ?? 0) + 1;
    for (const problem of checkAnswer(operation, generated, response, text, { errorSchema, validators })) {
      if (problem.kind === "5xx") summary.fiveXx++;
      if (problem.kind === "envelope") summary.envelopeViolations++;
      if (problem.kind === "schema") summary.schemaViolations++;
      if (problem.kind === "undeclared") summary.undeclaredStatuses++;
      summary.violations.push({ ...problem, index, request: generated.describe, status: response.status });
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (generated.kind === "operation" && !generated.fault) learn(operation, generated.request, response.status, parsed, fixtures);
  }
  summary.operationsCovered = covered.size;
  summary.seconds = (Date.now() - started) / 1000;
  return summary;
}

/** The one line the suite prints: enough to compare runs and to rerun one (`npm run fuzz -- --seed N --count M`). */
export function summaryLine(label: string, summary: FuzzSummary): string {
  const statuses = Object.entries(summary.byStatus)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([status, n]) => `${status}:${n}`)
    .join(" ");
  return (
    `fuzz ${label}: seed=${summary.seed} requests=${summary.requests} operations=${summary.operationsCovered}/${summary.operations} faulted=${summary.faulted} ` +
    `5xx=${summary.fiveXx} envelope_violations=${summary.envelopeViolations} schema_violations=${summary.schemaViolations} undeclared_statuses=${summary.undeclaredStatuses} ` +
    `(${statuses}) in ${summary.seconds.toFixed(1)} s`
  );
}
