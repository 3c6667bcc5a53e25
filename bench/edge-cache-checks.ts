/**
 * The edge cache's checks of `npm run bench:edge` (docs/edge-path.md, "Edge-cached reads"):
 * write-then-read pairs that count stale reads, and the throughput of a warm cached read against
 * the same read on the placed Worker alone (today's path).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { PASSWORD, WebClient, uniqueEmail } from "../test/support/web-client";
import type { EdgeFixture } from "./edge-requests";
import { smallReport } from "./edge-requests";

type Answer = { status: number; etag: string | null; body: Record<string, unknown> };

async function call(baseUrl: string, method: string, path: string, token: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, etag: response.headers.get("etag"), body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function expectOk(answer: Answer, what: string): Answer {
  if (answer.status < 200 || answer.status > 299)
    throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  return answer;
}

export type StalenessResult = { pairs: number; stale: number; byWriter: Record<string, { pairs: number; stale: number }> };

/**
 * What the pairs need besides the fixtures: a way to learn that an upload's run is processed (read
 * from the database), and the admin token (a person is invited into each organization, for the pages' writes).
 */
export type StalenessDeps = { runStatus: (projectId: string, number: number) => Promise<string>; adminToken: string };

/** A pair's writer: makes its write, then says whether the read that follows shows it. */
type Writer = { name: string; every: number; pair: (target: PairTarget, i: number) => Promise<boolean> };

/** Waits until the run is processed, doing `meanwhile` before each look. */
async function waitProcessed(deps: StalenessDeps, projectId: string, number: number, meanwhile = async () => {}): Promise<void> {
  const start = Date.now();
  while ((await meanwhile(), await deps.runStatus(projectId, number)) === "pending") {
    if (Date.now() - start > 60_000) throw new Error(`run ${number} still pending after 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * One organization's side of the pairs: its fixture, four of its tests, an MCP session with its
 * key and a person signed in to the pages (invited by the operator, as an organization made by the
 * admin API gets its people). The fixture's project auto-quarantines a test that turns flaky.
 */
type PairTarget = { fixture: EdgeFixture; testIds: string[]; mcp: Client; web: WebClient; projectName: string };

/** A person invited into the fixture's organization through the admin API, signed up through the invitation's page. */
async function signedInPerson(fixture: EdgeFixture, adminToken: string): Promise<WebClient> {
  const organization = expectOk(await call(fixture.baseUrl, "GET", "/api/v1/organization", fixture.apiKey), "organization");
  const email = uniqueEmail("edge-bench");
  const invited = expectOk(
    await call(fixture.baseUrl, "POST", `/admin/v1/organizations/${organization.body.id}/invitations`, adminToken, {
      email,
      role: "admin",
    }),
    "invitation",
  );
  // The link is on WEB_APP_URL: its origin is the one the pages' forms come from.
  const link = new URL(invited.body.invitation_url as string);
  const web = new WebClient({ request: (path, init) => fetch(`${fixture.baseUrl}${path}`, init) }, link.origin);
  const token = link.pathname.split("/").at(-1)!;
  const joined = await web.post(`/invitations/${token}/sign-up`, { name: "Edge Bench", password: PASSWORD });
  if (joined.status !== 303) throw new Error(`invitation sign-up: HTTP ${joined.status} ${joined.text.slice(0, 200)}`);
  return web;
}

async function pairTarget(fixture: EdgeFixture, adminToken: string): Promise<PairTarget> {
  const tests = expectOk(
    await call(fixture.baseUrl, "GET", `/api/v1/projects/${fixture.projectId}/tests?limit=4`, fixture.apiKey),
    "tests",
  );
  const testIds = (tests.body.data as { id: string }[]).map((test) => test.id);
  if (testIds.length < 4) throw new Error("the fixture's project needs 4 tests");
  const mcp = new Client({ name: "bench-edge", version: "1.0.0" });
  const headers = { Authorization: `Bearer ${fixture.apiKey}` };
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${fixture.baseUrl}/mcp`), { requestInit: { headers } }));
  expectOk(
    await call(fixture.baseUrl, "PATCH", `/admin/v1/projects/${fixture.projectId}/check_settings`, adminToken, { auto_quarantine_days: 1 }),
    "auto-quarantine on",
  );
  const project = expectOk(await call(fixture.baseUrl, "GET", `/api/v1/projects/${fixture.projectId}`, fixture.apiKey), "project");
  const projectName = project.body.name as string;
  return { fixture, testIds, mcp, web: await signedInPerson(fixture, adminToken), projectName };
}

/** A form of the pages that answers 303 (its POST-redirect-GET) when it saved. */
async function postForm(web: WebClient, path: string, form: Record<string, string>): Promise<void> {
  const posted = await web.post(path, form);
  if (posted.status !== 303) throw new Error(`POST ${path}: HTTP ${posted.status} ${posted.text.slice(0, 200)}`);
}

/** The writers, each a write through one door and the read of the cached resource it changes. */
function writersOf(deps: StalenessDeps): Writer[] {
  let uploads = 1_000;
  const upload = async ({ fixture }: PairTarget, report: string, meanwhile?: () => Promise<void>) => {
    const answer = expectOk(await call(fixture.baseUrl, "POST", "/uploads/v1/test_runs", fixture.uploadToken, report), "upload");
    await waitProcessed(deps, fixture.projectId, answer.body.number as number, meanwhile);
  };
  const readOrganization = async ({ fixture }: PairTarget) =>
    expectOk(await call(fixture.baseUrl, "GET", "/api/v1/organization", fixture.apiKey), "organization");
  const readList = async ({ fixture }: PairTarget) =>
    expectOk(await call(fixture.baseUrl, "GET", "/uploads/v1/quarantined_tests", fixture.uploadToken), "list");
  const listed = (answer: Answer) => new Set((answer.body.data as { test_id: string }[]).map((test) => test.test_id));
  const listedNames = (answer: Answer) => new Set((answer.body.data as { name: string }[]).map((test) => test.name));
  /** The organization's ETag changes with every write of its data (its data version): the read must not show the one before. */
  const organizationChanges = async (target: PairTarget, write: () => Promise<void>) => {
    const before = (await readOrganization(target)).etag;
    await readOrganization(target);
    await write();
    return (await readOrganization(target)).etag !== before;
  };
  const api = (target: PairTarget, method: string, path: string, body?: unknown) =>
    call(target.fixture.baseUrl, method, path, target.fixture.apiKey, body).then((answer) => expectOk(answer, `${method} ${path}`));
  return [
    {
      name: "API: PATCH /projects/:id → GET /organization",
      every: 1,
      pair: (t, i) =>
        organizationChanges(t, async () => {
          await api(t, "PATCH", `/api/v1/projects/${t.fixture.projectId}`, { description: `pair ${i}` });
        }),
    },
    {
      name: "API: quarantine / release → GET /uploads/v1/quarantined_tests",
      every: 1,
      pair: async (t, i) => {
        const id = t.testIds[0]!;
        const was = listed(await readList(t)).has(id);
        await readList(t);
        await api(
          t,
          "POST",
          `/api/v1/tests/${id}/${was ? "unquarantine" : "quarantine"}`,
          was ? undefined : { reason: `pair ${i}`, duration: "1d" },
        );
        return listed(await readList(t)).has(id) !== was;
      },
    },
    {
      name: "MCP: snooze_alert → GET /organization",
      every: 1,
      pair: (t) =>
        organizationChanges(t, async () => {
          const result = await t.mcp.callTool({ name: "snooze_alert", arguments: { alert_id: t.fixture.alertId, duration: "1h" } });
          if (result.isError) throw new Error("snooze_alert failed");
        }),
    },
    {
      name: "MCP: quarantine_test → GET /uploads/v1/quarantined_tests",
      every: 1,
      pair: async (t, i) => {
        const id = t.testIds[1]!;
        if (listed(await readList(t)).has(id)) await api(t, "POST", `/api/v1/tests/${id}/unquarantine`);
        await readList(t);
        const result = await t.mcp.callTool({ name: "quarantine_test", arguments: { test_id: id, reason: `pair ${i}`, duration: "1d" } });
        if (result.isError) throw new Error("quarantine_test failed");
        return listed(await readList(t)).has(id);
      },
    },
    {
      name: "web app: project settings form → GET /organization",
      every: 1,
      pair: (t, i) =>
        organizationChanges(t, () =>
          postForm(t.web, `/projects/${t.fixture.projectId}/settings`, {
            name: t.projectName,
            description: `page pair ${i}`,
            defaultBranch: "",
            autoQuarantineDays: "1",
            retentionDays: "",
          }),
        ),
    },
    {
      name: "web app: quarantine / release form → GET /uploads/v1/quarantined_tests",
      every: 1,
      pair: async (t, i) => {
        const id = t.testIds[3]!;
        const was = listed(await readList(t)).has(id);
        await readList(t);
        const testPath = `/projects/${t.fixture.projectId}/tests/${id}`;
        if (was) await postForm(t.web, `${testPath}/unquarantine`, {});
        else await postForm(t.web, `${testPath}/quarantine`, { reason: `page pair ${i}`, duration: "1d", owner: "", issue_url: "" });
        return listed(await readList(t)).has(id) !== was;
      },
    },
    {
      name: "uploader: upload, processed by the queue consumer → GET /organization",
      every: 10,
      pair: (t) => organizationChanges(t, () => upload(t, smallReport(uploads++))),
    },
    {
      name: "queue consumer: auto-quarantine of a test turned flaky → GET /uploads/v1/quarantined_tests",
      every: 10,
      pair: async (t, i) => {
        // A new test passes, then fails on the same commit: flaky by the same-commit rule, auto-quarantined as the second run is processed.
        const name = `turns flaky ${i}-${uploads}`;
        const run = (status: "passed" | "failed") =>
          JSON.stringify({
            branch: "main",
            commit_sha: `f1a4e${String(uploads).padStart(7, "0")}`,
            suites: [
              {
                name: "auto",
                cases: [{ name, classname: "auto", status, duration_ms: 3, ...(status === "failed" ? { failure_message: "boom" } : {}) }],
              },
            ],
          });
        await upload(t, run("passed"));
        await readList(t);
        if (listedNames(await readList(t)).has(name)) return false;
        // The list is read (so held by the edge) while the run waits for the consumer, after the upload's own write.
        await upload(t, run("failed"), async () => {
          await readList(t);
        });
        uploads++;
        return listedNames(await readList(t)).has(name);
      },
    },
    {
      name: "expiry: a quarantine's end → GET /uploads/v1/quarantined_tests",
      every: 20,
      pair: async (t, i) => {
        const id = t.testIds[2]!;
        const ends = Date.now() + 400;
        await api(t, "POST", `/api/v1/tests/${id}/quarantine`, { reason: `pair ${i}`, expires_at: new Date(ends).toISOString() });
        await readList(t);
        if (!listed(await readList(t)).has(id)) return false;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, ends - Date.now()) + 1));
        return !listed(await readList(t)).has(id);
      },
    },
  ];
}

/**
 * `pairs` write-then-read pairs through the edge, each read issued right after its write's answer
 * (for an upload: right after the database says its run is processed; for an expiry: right after
 * the quarantine's end), the organizations taken in turn (each key's rate limit is 600 a minute).
 * Before each write the resource is read twice, so the edge holds it. A read is stale when it
 * shows the state before the write.
 */
export async function runStalenessPairs(fixtures: EdgeFixture[], deps: StalenessDeps, pairs: number): Promise<StalenessResult> {
  const targets: PairTarget[] = [];
  for (const fixture of fixtures) targets.push(await pairTarget(fixture, deps.adminToken));
  const writers = writersOf(deps);
  const result: StalenessResult = { pairs: 0, stale: 0, byWriter: {} };
  try {
    for (let i = 0; result.pairs < pairs; i++) {
      for (const writer of writers) {
        if (i % writer.every !== 0 || result.pairs >= pairs) continue;
        const fresh = await writer.pair(targets[result.pairs % targets.length]!, i);
        const counts = (result.byWriter[writer.name] ??= { pairs: 0, stale: 0 });
        counts.pairs++;
        result.pairs++;
        if (!fresh) {
          counts.stale++;
          result.stale++;
        }
      }
    }
  } finally {
    for (const target of targets) await target.mcp.close();
  }
  return result;
}

/** Requests per second of `total` GETs of `path`, `concurrency` at a time, the keys taken in turn (600 a minute each), after a warm-up. */
export async function throughput(baseUrl: string, path: string, tokens: string[], concurrency: number, total: number): Promise<number> {
  let sent = 0;
  const one = async () => {
    const token = tokens[sent++ % tokens.length]!;
    const response = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${path}: HTTP ${response.status}`);
  };
  for (let i = 0; i < 3 * tokens.length; i++) await one();
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        await one();
      }
    }),
  );
  return (total / (performance.now() - start)) * 1000;
}
