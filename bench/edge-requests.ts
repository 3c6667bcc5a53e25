/**
 * The request types of the edge path (issue 18), measured by `npm run bench:edge` and held to
 * their round-trip budgets by test/node/edge-round-trips.test.ts: how to prepare their data
 * through the admin API, how to send each one, and how to read the bridge's counters around it.
 * Definitions of a round trip and of a statement: src/node/local-neon/wire-meter.ts.
 */
import type { BridgeCounters, BridgeReport } from "../src/node/local-neon";
import { countersBetween } from "../src/node/local-neon";

/** The Worker's sessions are named by handler (src/worker/neon.ts). */
export const FETCH_APPLICATION = "ci-analytics-worker:fetch";
export const QUEUE_APPLICATION = "ci-analytics-worker:queue";

export type EdgeFixture = {
  baseUrl: string;
  apiKey: string;
  uploadToken: string;
  projectId: string;
  alertId: string;
  /** A cursor of GET /projects?limit=1 (the second page). */
  projectsCursor: string;
  /** The ETag of GET /projects last answered (kept by the "projects" request type, for the 304's). */
  projectsEtag?: string;
};

type Answer = { status: number; body: Record<string, unknown>; etag: string | null };

async function send(
  baseUrl: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
  contentType = "application/json",
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": contentType }), ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, etag: response.headers.get("etag") };
}

function expectStatus(answer: Answer, status: number, what: string): Answer {
  if (answer.status !== status) throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
  return answer;
}

/** An organization with three projects (so GET /projects has a second page), through the admin API. */
export async function prepareEdgeFixture(baseUrl: string, adminToken: string): Promise<EdgeFixture> {
  const org = expectStatus(
    await send(baseUrl, "POST", "/admin/v1/organizations", adminToken, { name: `Edge ${Date.now()}` }),
    201,
    "create organization",
  ).body as {
    organization: { id: string };
    api_key: { secret: string };
  };
  let uploadToken = "";
  let projectId = "";
  for (const name of ["edge-a", "edge-b", "edge-c"]) {
    const created = expectStatus(
      await send(baseUrl, "POST", `/admin/v1/organizations/${org.organization.id}/projects`, adminToken, { name }),
      201,
      "create project",
    ).body as { project: { id: string }; upload_token: string };
    uploadToken = created.upload_token;
    projectId = created.project.id;
  }
  const apiKey = org.api_key.secret;
  const alerts = expectStatus(await send(baseUrl, "GET", `/api/v1/alerts?status=all&project_id=${projectId}`, apiKey), 200, "list alerts")
    .body as { data: { id: string }[] };
  const page = expectStatus(await send(baseUrl, "GET", "/api/v1/projects?limit=1", apiKey), 200, "first page").body as {
    pagination: { next_cursor: string };
  };
  return { baseUrl, apiKey, uploadToken, projectId, alertId: alerts.data[0]!.id, projectsCursor: page.pagination.next_cursor };
}

/** A small run in the JSON envelope: `cases` cases in two suites, one failing. */
export function smallReport(index: number, cases = 20): string {
  const suite = (name: string, from: number, to: number) => ({
    name,
    duration_ms: 100,
    cases: Array.from({ length: to - from }, (_, i) => ({
      name: `case ${from + i}`,
      classname: name,
      status: from + i === 3 ? "failed" : "passed",
      duration_ms: 5 + ((index + i) % 7),
      ...(from + i === 3 ? { failure_message: "expected 1 to be 2" } : {}),
    })),
  });
  return JSON.stringify({
    branch: "main",
    commit_sha: `c0ffee${String(index).padStart(6, "0")}`,
    build_id: String(index),
    suites: [suite("alpha", 0, cases / 2), suite("beta", cases / 2, cases)],
  });
}

export type EdgeRequestType = {
  key: string;
  label: string;
  /** Sends request number `i`; resolves once the answer is read whole. */
  send(fixture: EdgeFixture, i: number): Promise<Answer>;
};

/** Run 1 of the fixture's project: uploaded and processed (so compared) before the request types are measured. */
const comparisonPath = (f: EdgeFixture) => `/api/v1/projects/${f.projectId}/test_runs/1/comparison`;

/** A query parameter no route reads, different for every request: the edge cache's key then never matches (a cold read). */
const coldQuery = (i: number) => `edge_cold=${i}-${Math.random().toString(36).slice(2)}`;

/**
 * The reads the edge Worker answers from its cache (docs/edge-path.md, "Edge-cached reads"), warm
 * (answered by the edge) and cold (a miss: the placed Worker answers, and the edge stores it).
 */
export const EDGE_CACHED_REQUEST_TYPES: EdgeRequestType[] = [
  {
    key: "organization",
    label: "GET /organization (edge cache, warm)",
    send: (f) => send(f.baseUrl, "GET", "/api/v1/organization", f.apiKey).then((a) => expectStatus(a, 200, "organization")),
  },
  {
    key: "organization_cold",
    label: "GET /organization (edge cache, cold)",
    send: (f, i) =>
      send(f.baseUrl, "GET", `/api/v1/organization?${coldQuery(i)}`, f.apiKey).then((a) => expectStatus(a, 200, "organization cold")),
  },
  {
    key: "quarantine_list",
    label: "GET /uploads/v1/quarantined_tests (edge cache, warm)",
    send: (f) =>
      send(f.baseUrl, "GET", "/uploads/v1/quarantined_tests", f.uploadToken).then((a) => expectStatus(a, 200, "quarantine list")),
  },
  {
    key: "quarantine_list_cold",
    label: "GET /uploads/v1/quarantined_tests (edge cache, cold)",
    send: (f, i) =>
      send(f.baseUrl, "GET", `/uploads/v1/quarantined_tests?${coldQuery(i)}`, f.uploadToken).then((a) =>
        expectStatus(a, 200, "quarantine list cold"),
      ),
  },
  {
    key: "openapi",
    label: "GET /api/v1/openapi.json (edge memory)",
    send: async (f) => {
      const response = await fetch(`${f.baseUrl}/api/v1/openapi.json`);
      if (response.status !== 200) throw new Error(`openapi: HTTP ${response.status}`);
      await response.arrayBuffer();
      return { status: 200, body: {}, etag: response.headers.get("etag") };
    },
  },
];

/** The API request types of the issue (the upload and its processing are measured apart: measureUpload). */
export const EDGE_REQUEST_TYPES: EdgeRequestType[] = [
  ...EDGE_CACHED_REQUEST_TYPES,
  {
    key: "projects",
    label: "GET /projects (first page)",
    send: async (f) => {
      const answer = expectStatus(await send(f.baseUrl, "GET", "/api/v1/projects", f.apiKey), 200, "projects");
      f.projectsEtag = answer.etag ?? undefined;
      return answer;
    },
  },
  {
    key: "projects_not_modified",
    label: "GET /projects, If-None-Match of the current tag (304)",
    send: (f) =>
      send(f.baseUrl, "GET", "/api/v1/projects", f.apiKey, undefined, undefined, { "if-none-match": f.projectsEtag ?? "" }).then((a) =>
        expectStatus(a, 304, "projects 304"),
      ),
  },
  {
    key: "projects_cursor",
    label: "GET /projects (with a cursor)",
    send: (f) =>
      send(f.baseUrl, "GET", `/api/v1/projects?limit=1&cursor=${encodeURIComponent(f.projectsCursor)}`, f.apiKey).then((a) =>
        expectStatus(a, 200, "projects cursor"),
      ),
  },
  {
    key: "alerts",
    label: "GET /alerts",
    send: (f) => send(f.baseUrl, "GET", "/api/v1/alerts", f.apiKey).then((a) => expectStatus(a, 200, "alerts")),
  },
  {
    key: "alert_events",
    label: "GET /alerts/:id/events",
    send: (f) => send(f.baseUrl, "GET", `/api/v1/alerts/${f.alertId}/events`, f.apiKey).then((a) => expectStatus(a, 200, "alert events")),
  },
  {
    key: "patch_project",
    label: "PATCH /projects/:id",
    send: (f, i) =>
      send(f.baseUrl, "PATCH", `/api/v1/projects/${f.projectId}`, f.apiKey, { description: `edge run ${i}` }).then((a) =>
        expectStatus(a, 200, "patch project"),
      ),
  },
  {
    key: "snooze",
    label: "POST /alerts/:id/snooze",
    send: (f) =>
      send(f.baseUrl, "POST", `/api/v1/alerts/${f.alertId}/snooze`, f.apiKey, { duration: "1h" }).then((a) =>
        expectStatus(a, 200, "snooze"),
      ),
  },
  {
    key: "run_comparison",
    label: "GET …/test_runs/:number/comparison",
    send: (f) => send(f.baseUrl, "GET", comparisonPath(f), f.apiKey).then((a) => expectStatus(a, 200, "run comparison")),
  },
  {
    key: "flakiness_cost",
    label: "GET /projects/:id/flakiness_cost",
    send: (f) =>
      send(f.baseUrl, "GET", `/api/v1/projects/${f.projectId}/flakiness_cost`, f.apiKey).then((a) =>
        expectStatus(a, 200, "flakiness cost"),
      ),
  },
  {
    key: "run_failures",
    label: "GET …/test_runs/:number/comparison/failures",
    send: (f) => send(f.baseUrl, "GET", `${comparisonPath(f)}/failures`, f.apiKey).then((a) => expectStatus(a, 200, "run failures")),
  },
];

export const UPLOAD_LABEL = "POST /uploads/v1/test_runs (20 cases)";
export const PROCESSING_LABEL = "processing of that run (202 → processed)";

/** Reads the bridge's counters (in process, or from its HTTP endpoint). */
export type CounterSource = () => Promise<BridgeReport>;

/** The counters of sessions named `application` between two readings. */
export function countersOf(before: BridgeReport, after: BridgeReport, application: string): BridgeCounters {
  const zero = { connections: 0, handshakeRoundTrips: 0, flights: 0, statements: 0 };
  return countersBetween(before.byApplication[application] ?? zero, after.byApplication[application] ?? zero);
}

export type Sample = { ms: number; counters: BridgeCounters };

/** One request, timed from the client, with the round trips and statements of the Worker's fetch sessions it caused. */
export async function measureRequest(type: EdgeRequestType, fixture: EdgeFixture, i: number, counters: CounterSource): Promise<Sample> {
  const before = await counters();
  const start = performance.now();
  await type.send(fixture, i);
  const ms = performance.now() - start;
  // The pool is ended after the answer (ctx.waitUntil); its Terminate counts no round trip.
  return { ms, counters: countersOf(before, await counters(), FETCH_APPLICATION) };
}

/**
 * An upload (202), then its processing by the queue consumer until `status(number)` (read from the
 * database directly, not through the Worker) is no longer pending and the consumer's sessions
 * are quiet; the upload's figures from the fetch sessions, the processing's from the queue's.
 */
export async function measureUpload(
  fixture: EdgeFixture,
  i: number,
  counters: CounterSource,
  status: (number: number) => Promise<string>,
  quietMs: number,
): Promise<{ upload: Sample; processing: Sample }> {
  const before = await counters();
  const start = performance.now();
  const answer = expectStatus(
    await send(fixture.baseUrl, "POST", "/uploads/v1/test_runs", fixture.uploadToken, smallReport(i)),
    202,
    "upload",
  );
  const accepted = performance.now();
  const number = answer.body.number as number;
  let state = await status(number);
  while (state === "pending") {
    if (performance.now() - accepted > 60_000) throw new Error(`run ${number} still pending after 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    state = await status(number);
  }
  const processed = performance.now();
  if (state !== "processed") throw new Error(`run ${number} ended ${state}`);
  // The consumer may still be finishing (alert checks after the run is marked processed): wait until its sessions are quiet.
  let last = await counters();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const now = await counters();
    if (JSON.stringify(now.byApplication[QUEUE_APPLICATION]) === JSON.stringify(last.byApplication[QUEUE_APPLICATION])) break;
    last = now;
  }
  const after = await counters();
  return {
    upload: { ms: accepted - start, counters: countersOf(before, after, FETCH_APPLICATION) },
    processing: { ms: processed - accepted, counters: countersOf(before, after, QUEUE_APPLICATION) },
  };
}

export type Budget = { roundTrips: number; flights: number; statements: number };

/**
 * The round-trip budget of each request type, checked in CI by test/node/edge-round-trips.test.ts
 * (a warm API key; counted by the local bridge, definitions in src/node/local-neon/wire-meter.ts).
 * Round trips include the 3 handshake round trips of the request's one new connection (TCP, TLS,
 * WebSocket upgrade): the Worker cannot keep a WebSocket across requests. A change that adds a
 * round trip or a statement to a request fails the test; lower a budget when a change saves one.
 * Figures and choices: docs/edge-path.md.
 */
export const EDGE_BUDGETS: Record<string, Budget> = {
  /** Answered by the edge Worker from the organization's cache object: no database round trip (docs/edge-path.md). */
  organization: { roundTrips: 0, flights: 0, statements: 0 },
  /** A miss of the edge cache: the placed Worker's read, as before the edge cache. */
  organization_cold: { roundTrips: 4, flights: 1, statements: 1 },
  quarantine_list: { roundTrips: 0, flights: 0, statements: 0 },
  /** The upload token's lookup, the list's tag, then the list (a miss asks unconditionally: the edge applies If-None-Match). */
  quarantine_list_cold: { roundTrips: 6, flights: 3, statements: 3 },
  /** Kept in the edge Worker's memory; the placed Worker serves it from its own memory too. */
  openapi: { roundTrips: 0, flights: 0, statements: 0 },
  projects: { roundTrips: 4, flights: 1, statements: 1 },
  /** The organization's data version only (docs/conditional-requests.md): the list's query never runs. */
  projects_not_modified: { roundTrips: 4, flights: 1, statements: 1 },
  projects_cursor: { roundTrips: 4, flights: 1, statements: 1 },
  alerts: { roundTrips: 4, flights: 1, statements: 1 },
  /** A page with events; an empty page asks once more whether the alert exists (404) or has none. */
  alert_events: { roundTrips: 4, flights: 1, statements: 1 },
  patch_project: { roundTrips: 4, flights: 1, statements: 1 },
  snooze: { roundTrips: 4, flights: 1, statements: 1 },
  /** The project (with the data version), the run, then the stored comparison or one page of its verdicts (docs/verdicts.md). */
  run_comparison: { roundTrips: 6, flights: 3, statements: 3 },
  run_failures: { roundTrips: 6, flights: 3, statements: 3 },
  /** The project (with the data version), then its days and most costly tests in one statement (docs/flakiness-cost.md). */
  flakiness_cost: { roundTrips: 5, flights: 2, statements: 2 },
  /** The upload token's lookup, then the arrival (run, counter, payload) as one statement. */
  upload: { roundTrips: 5, flights: 2, statements: 2 },
  /**
   * The queue consumer's processing of a 20-case run: 3 flights until the run is processed (BEGIN with the run's opening and its payload,
   * riding with the connection; the cases with the read of their tests; every other write with the day's rollup, and COMMIT), then 2 for
   * the alert checks (BEGIN with the one read, the one write with COMMIT; src/services/alerts/alert-checks.ts) and the read of the run's test
   * events to deliver (queueRunTestEvents). BEGIN and COMMIT travel with the first and last statements: src/db/transaction-boundaries.ts.
   * Plus one flight for the run's comparison with its base (src/services/runs/run-comparison.ts, docs/verdicts.md): its own statement
   * between storing the cases and advancing the tests, which must see the tests' health as the run found it. Folding it into the
   * cases' flight would win that round trip back.
   */
  processing: { roundTrips: 10, flights: 7, statements: 7 },
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** SQL giving the fixture's alert `count` events (on runs of its project), to run straight in the database. */
export function seedAlertEventsSql(fixture: EdgeFixture, count = 3): string {
  if (!UUID.test(fixture.alertId) || !UUID.test(fixture.projectId) || !Number.isInteger(count)) throw new Error("not a fixture");
  return `insert into alert_events (alert_id, test_run_id, metadata, triggered_at)
    select '${fixture.alertId}', r.id, '{}'::jsonb, now() - (g * interval '1 minute')
    from (select id from test_runs where project_id = '${fixture.projectId}' order by id limit 1) r, generate_series(1, ${count}) g`;
}

/** Checks counted figures against a budget; the lines of what went over. */
export function overBudget(label: string, counted: BridgeCounters, budget: Budget): string[] {
  const roundTrips = counted.handshakeRoundTrips + counted.flights;
  if (roundTrips <= budget.roundTrips && counted.flights <= budget.flights && counted.statements <= budget.statements) return [];
  return [
    `${label}: ${roundTrips} round trips (${counted.flights} flights), ${counted.statements} statements; budget ${JSON.stringify(budget)}`,
  ];
}
