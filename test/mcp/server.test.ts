/**
 * /mcp with the official SDK's client over HTTP: the app served by a real Node HTTP server on a
 * real database. Every tool's structured result is compared with the REST answer to the same
 * question; errors, other organizations' ids, authentication and the shared rate limit.
 */
import { type Server as HttpServer, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Report } from "../../src/services/runs/test-runs";
import type { Database } from "../../src/db/types";
import { type Harness, type HarnessOptions, createHarness, inProcessHarness, openTestDatabase } from "../support/harness";

type Served = { h: Harness; base: string; http: HttpServer };

/** The harness's app behind a real HTTP server on a free loopback port. */
async function serve(options: HarnessOptions = {}, harness?: Harness): Promise<Served> {
  const h = harness ?? (await createHarness(options));
  // Without overrideGlobalObjects the listener swaps the process's Request and Response for its own for good, and later files of this worker would inherit them.
  const http = createServer(getRequestListener((request) => h.app.request(request as unknown as string), { overrideGlobalObjects: false }));
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  return { h, http, base: `http://127.0.0.1:${(http.address() as AddressInfo).port}` };
}
async function stop(served: Served | undefined) {
  if (!served) return;
  await new Promise<void>((resolve) => served.http.close(() => resolve()));
  await served.h.close();
}

/** Every HTTP answer the client got, for its RateLimit headers. */
type Seen = { status: number; rateLimit: string | null; method: string };

async function connect(base: string, key: string | null, seen: Seen[] = []) {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : {},
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      seen.push({ status: response.status, rateLimit: response.headers.get("ratelimit"), method: init?.method ?? "GET" });
      return response;
    },
  });
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const report = (cases: Array<{ name: string; status: "passed" | "failed"; message?: string }>): Report => ({
  suites: [
    {
      name: "CartSuite",
      cases: cases.map((c) => ({
        name: c.name,
        classname: "shop.CartTest",
        file: "src/cart.test.ts",
        status: c.status,
        durationMs: 12,
        failureMessage: c.status === "failed" ? (c.message ?? "boom") : null,
        failureText: c.status === "failed" ? `${c.message ?? "boom"}\n  at cart.test.ts:10` : null,
      })),
    },
  ],
});

let served: Served;
let h: Harness;
let client: Client;
let apiKey: string;
let projectId: string;
let flakyTestId: string;
let flakyAlertId: string;
const other = { apiKey: "", projectId: "", testId: "", alertId: "" };

/** A project with a flaky test (a pass and a failure on one commit), a steady one, a failing one, and a flakiness event. */
async function seedProject(h: Harness, name: string) {
  const { organization, apiKey } = await h.newOrganization(name);
  const { project, alertIds } = await h.newProject(organization.id, `${name} checkout`);
  const runs = [];
  for (const [sha, checkout] of [
    ["sha-1", "passed"],
    ["sha-1", "failed"],
    ["sha-2", "failed"],
    ["sha-3", "passed"],
  ] as const) {
    h.clock.advance(60_000);
    runs.push(
      await h.newRun(project.id, {
        meta: { branch: "main", commitSha: sha },
        report: report([
          { name: "checkout", status: checkout, message: "expected 200, got 500" },
          { name: "adds items", status: "passed" },
          { name: "talks to the database", status: "failed", message: "Connection refused: db:5432" },
        ]),
      }),
    );
  }
  await h.newEvent(alertIds.test_flakiness!, runs[1]!.id, {
    subject: "test",
    name: "checkout",
    statistic: "flips",
    observed: 2,
    threshold: 1,
  });
  const tests = await h.get(`/api/v1/projects/${project.id}/tests?health=flaky`, apiKey);
  return { apiKey, projectId: project.id as string, flakyTestId: tests.body.data[0].id as string, flakyAlertId: alertIds.test_flakiness! };
}

beforeAll(async () => {
  served = await serve();
  h = served.h;
  ({ apiKey, projectId, flakyTestId, flakyAlertId } = await seedProject(h, "Acme"));
  const b = await seedProject(h, "Other");
  Object.assign(other, { apiKey: b.apiKey, projectId: b.projectId, testId: b.flakyTestId, alertId: b.flakyAlertId });
  client = await connect(served.base, apiKey);
});
afterAll(async () => {
  await client?.close();
  await stop(served);
});

const call = async (name: string, args: Record<string, unknown> = {}) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;
const text = (result: CallToolResult) => (result.content[0] as { type: "text"; text: string }).text;
const rest = async (path: string, key = apiKey): Promise<any> => {
  const res = await h.get(`/api/v1${path}`, key);
  expect(res.status, res.text).toBe(200);
  return res.body;
};

describe("the session", () => {
  it("initializes and lists the twelve tools, with input schemas from the REST parameters and output schemas", async () => {
    expect(client.getServerVersion()).toMatchObject({ name: "ci-test-analytics" });
    expect(client.getInstructions()).toMatch(/list_projects/);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      [
        "get_flakiness_cost",
        "get_test",
        "get_test_run",
        "list_alert_events",
        "list_alerts",
        "list_projects",
        "list_run_failures",
        "list_test_runs",
        "list_tests",
        "quarantine_test",
        "snooze_alert",
        "unquarantine_test",
      ].sort(),
    );
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName.list_tests!.inputSchema.properties!).sort()).toEqual([
      "cursor",
      "health",
      "limit",
      "owner",
      "project_id",
      "q",
      "quarantined",
      "variant",
    ]);
    expect(byName.list_tests!.inputSchema.required).toEqual(["project_id"]);
    expect(byName.list_alerts!.inputSchema.properties!.status).toMatchObject({ enum: ["active", "snoozed", "inactive", "all"] });
    expect(Object.keys(byName.quarantine_test!.inputSchema.properties!).sort()).toEqual([
      "all_variants",
      "duration",
      "expires_at",
      "issue_url",
      "owner",
      "reason",
      "test_id",
    ]);
    expect(byName.snooze_alert!.inputSchema.properties!.duration).toMatchObject({ enum: ["1h", "4h", "24h", "1w"] });
    expect(byName.get_test_run!.inputSchema.properties!.number).toMatchObject({ type: "integer" });
    expect(byName.list_tests!.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.quarantine_test!.annotations).toMatchObject({ readOnlyHint: false });
    for (const tool of tools) {
      expect(tool.outputSchema, tool.name).toMatchObject({ type: "object" });
      expect(tool.inputSchema.additionalProperties, tool.name).toBe(false);
    }
    expect(Object.keys(byName.get_test!.outputSchema!.properties!)).toEqual(
      expect.arrayContaining(["health", "recent_executions", "failure_groups"]),
    );
  });

  it("answers 'which tests in project X are flaky, and what is the history of the worst one?' in two tool calls", async () => {
    const flaky = await call("list_tests", { project_id: projectId, health: "flaky" });
    expect(flaky.isError).toBeFalsy();
    const worst = (flaky.structuredContent as any).data[0];
    expect(worst).toMatchObject({ name: "checkout", health: "flaky" });
    expect(text(flaky)).toMatch(/^1 test matching health=flaky, most failing first \(impact\): 1 flaky\./);
    expect(text(flaky)).toContain(`shop.CartTest › checkout (test_id ${worst.id}): flaky, failure rate 50% over 4 executions`);

    const history = await call("get_test", { test_id: worst.id });
    expect(history.isError).toBeFalsy();
    const body = history.structuredContent as any;
    expect(body.recent_executions.map((e: any) => [e.test_run.number, e.status])).toEqual([
      [4, "passed"],
      [3, "failed"],
      [2, "failed"],
      [1, "passed"],
    ]);
    expect(body.failure_groups).toHaveLength(1);
    expect(text(history)).toContain("Last 4 executions, newest first: 2 passed, 2 failed.");
    expect(text(history)).toContain("#4 passed, #3 failed, #2 failed, #1 passed");
    expect(text(history)).toContain('- "expected <n>, got <n>": 2 occurrences, last ');
    // A summary, not the JSON again.
    expect(text(history)).not.toContain("{");
  });
});

describe("each tool answers what the REST API answers", () => {
  it("list_projects, with its pages", async () => {
    const result = await call("list_projects");
    expect(result.structuredContent).toEqual(await rest("/projects"));
    expect(text(result)).toMatch(
      /^1 project\.\n- Acme checkout \(project_id [0-9a-f-]+\): 4 runs, latest tests_failed, last run .*; 3 tests, 1 flaky, 0 broken\.$/,
    );

    const { organization, apiKey: key } = await h.newOrganization("Paged");
    for (const name of ["one", "two", "three"]) {
      h.clock.advance(1_000);
      await h.newProject(organization.id, name);
    }
    const paged = await connect(served.base, key);
    try {
      const first = (await paged.callTool({ name: "list_projects", arguments: { limit: 2 } })) as CallToolResult;
      expect(first.structuredContent).toEqual(await rest("/projects?limit=2", key));
      expect(text(first)).toContain("More pages follow");
      const cursor = (first.structuredContent as any).pagination.next_cursor;
      const second = (await paged.callTool({ name: "list_projects", arguments: { limit: 2, cursor } })) as CallToolResult;
      expect(second.structuredContent).toEqual(await rest(`/projects?limit=2&cursor=${encodeURIComponent(cursor)}`, key));
      expect((second.structuredContent as any).data.map((p: any) => p.name)).toEqual(["one"]);
    } finally {
      await paged.close();
    }
  });

  it("list_tests with each filter", async () => {
    for (const [args, query] of [
      [{}, ""],
      [{ health: "flaky" }, "health=flaky"],
      [{ health: "healthy", limit: 1 }, "health=healthy&limit=1"],
      [{ q: "DATABASE" }, "q=DATABASE"],
      [{ quarantined: false }, "quarantined=false"],
      [{ quarantined: "true" }, "quarantined=true"],
      [{ owner: "@acme/none" }, "owner=%40acme%2Fnone"],
    ] as const) {
      const result = await call("list_tests", { project_id: projectId, ...args });
      expect(result.structuredContent, query).toEqual(await rest(`/projects/${projectId}/tests${query ? `?${query}` : ""}`));
    }
  });

  it("says what a healthy test failing on the default branch means: failing (N in a row), as the pages do", async () => {
    const result = await call("list_tests", { project_id: projectId, q: "database" });
    const [failing] = (result.structuredContent as any).data;
    expect(failing).toMatchObject({ name: "talks to the database", health: "healthy", failing_streak: 4 });
    expect(text(result)).toContain(
      `shop.CartTest › talks to the database (test_id ${failing.id}): failing (4 in a row), failure rate 100%`,
    );
    expect(text(await call("get_test", { test_id: failing.id }))).toMatch(
      /^shop\.CartTest › talks to the database \(test_id [^)]+\) is failing \(4 in a row\)/,
    );
  });

  it("get_test: the test, its last 20 executions and its failure groups", async () => {
    const result = await call("get_test", { test_id: flakyTestId });
    const [test, executions, groups] = await Promise.all([
      rest(`/tests/${flakyTestId}`),
      rest(`/tests/${flakyTestId}/executions?limit=20`),
      rest(`/tests/${flakyTestId}/failure_groups?limit=20`),
    ]);
    expect(result.structuredContent).toEqual({ ...test, recent_executions: executions.data, failure_groups: groups.data });
  });

  it("get_test_run: the run and its failure groups, largest first", async () => {
    const result = await call("get_test_run", { project_id: projectId, number: 2 });
    const [run, comparison, groups] = await Promise.all([
      rest(`/projects/${projectId}/test_runs/2`),
      rest(`/projects/${projectId}/test_runs/2/comparison`),
      rest(`/projects/${projectId}/test_runs/2/failure_groups?limit=20`),
    ]);
    expect(result.structuredContent).toEqual({ ...run, comparison, failure_groups: groups.data });
    expect((result.structuredContent as any).failure_groups).toHaveLength(2);
    // Run 1 (main, sha-1) is its base: the database failed there too, checkout passed.
    expect(comparison).toMatchObject({ base_choice: "previous_default", base: { number: 1 } });
    expect(text(result)).toMatch(
      /^Run #2 \(project_id [0-9a-f-]+\), main @ sha-1, arrived .*: processed, tests_failed\.\n3 tests: 1 passed, 2 failed, 0 errored, 0 skipped\.\nCompared with run #1 \(main @ sha-1\), the previous default-branch run: 1 new, 1 failing_on_base; 0 tests fixed\.\nEach failure with its verdict and reason: list_run_failures\.\n2 failure groups, largest first:/,
    );
  });

  it("get_flakiness_cost: the project's cost over the window, as GET …/flakiness_cost, and the most costly tests in its text", async () => {
    const result = await call("get_flakiness_cost", { project_id: projectId });
    expect(result.isError).toBeFalsy();
    const body = result.structuredContent as any;
    expect(body).toEqual(await rest(`/projects/${projectId}/flakiness_cost`));
    // `checkout` turned flaky at run 2 (a pass and a failure on sha-1): its failure in run 3 (12 ms) is the cost.
    expect(body.totals).toMatchObject({ total_ms: 12, flaky_failures_ms: 12, retry_ms: 0, rerun_ms: 0, runs_count: 4 });
    expect(body.days).toHaveLength(30);
    const lines = text(result).split("\n");
    expect(lines[0]).toBe(
      `Cost of flakiness of project_id ${projectId}, ${body.from} to ${body.to} (UTC days): 12 ms of test time over 4 runs.`,
    );
    expect(lines[1]).toBe("Retries that then passed 0 ms; failures of flaky tests 12 ms; of quarantined tests 0 ms; 0 re-runs 0 ms.");
    expect(lines).toContain(`- shop.CartTest › checkout (test_id ${flakyTestId}): 12 ms, 100% of the total.`);
    const named = await call("get_flakiness_cost", { project_id: projectId, from: "2020-01-01", to: "2020-01-31" });
    expect(named.structuredContent).toEqual(await rest(`/projects/${projectId}/flakiness_cost?from=2020-01-01&to=2020-01-31`));
    expect(text(named)).toContain("Nothing spent on retries, flaky or quarantined failures or re-runs in this window.");
  });

  it("list_alerts defaults to status=active, like GET /alerts; its filters", async () => {
    const result = await call("list_alerts");
    expect(result.structuredContent).toEqual(await rest("/alerts"));
    expect(text(result)).toMatch(/^4 alerts \(status=active\), 1 with events\./);
    const filtered = await call("list_alerts", { status: "all", project_id: projectId, alert_type: "test_flakiness" });
    expect(filtered.structuredContent).toEqual(await rest(`/alerts?status=all&project_id=${projectId}&alert_type=test_flakiness`));
    expect((filtered.structuredContent as any).data).toHaveLength(1);
  });

  it("list_alert_events", async () => {
    const result = await call("list_alert_events", { alert_id: flakyAlertId });
    expect(result.structuredContent).toEqual(await rest(`/alerts/${flakyAlertId}/events`));
    expect(text(result)).toMatch(
      /^1 event, newest first\.\n- event \d+, .*, run #2 \(main @ sha-1\), test checkout: flips 2 \(threshold 1\)\.$/,
    );
  });

  it("snooze_alert, quarantine_test and unquarantine_test change what REST reads", async () => {
    const snoozed = await call("snooze_alert", { alert_id: flakyAlertId, duration: "24h" });
    expect(snoozed.isError).toBeFalsy();
    expect(snoozed.structuredContent).toEqual(await rest(`/alerts/${flakyAlertId}`));
    expect(snoozed.structuredContent).toMatchObject({
      snoozed: true,
      snoozed_until: new Date(h.clock.now().getTime() + 86_400_000).toISOString(),
    });
    expect(text(snoozed)).toContain("is snoozed until");

    const quarantined = await call("quarantine_test", {
      test_id: flakyTestId,
      reason: "Races the payment stub",
      duration: "7d",
      owner: "@acme/checkout",
      issue_url: "https://example.com/issues/1",
    });
    expect(quarantined.isError, text(quarantined)).toBeFalsy();
    expect(quarantined.structuredContent).toEqual(await rest(`/tests/${flakyTestId}`));
    expect(quarantined.structuredContent).toMatchObject({
      quarantined: true,
      quarantine: {
        reason: "Races the payment stub",
        owner: "@acme/checkout",
        source: "manual",
        // Through the MCP server, by the request's API key (docs/quarantine.md, "Who quarantined it").
        quarantined_by: { via: "mcp", id: expect.any(String), name: expect.any(String), email: null },
      },
    });
    expect(text(quarantined)).toContain("is quarantined until");
    const listed = await call("list_tests", { project_id: projectId, quarantined: true });
    expect((listed.structuredContent as any).data.map((t: any) => t.id)).toEqual([flakyTestId]);

    const expiresAt = new Date(h.clock.now().getTime() + 3 * 86_400_000).toISOString();
    const replaced = await call("quarantine_test", { test_id: flakyTestId, reason: "Still racing", expires_at: expiresAt });
    expect(replaced.structuredContent).toMatchObject({ quarantine: { reason: "Still racing", expires_at: expiresAt, owner: null } });

    const ended = await call("unquarantine_test", { test_id: flakyTestId });
    expect(ended.structuredContent).toEqual(await rest(`/tests/${flakyTestId}`));
    expect(ended.structuredContent).toMatchObject({ quarantined: false, quarantine: null });
    expect(text(ended)).toContain("is not quarantined");
  });
});

describe("list_test_runs: what failed in the latest build on my branch", () => {
  const SHA = "9fceb02d0ae598e95dc970b74767f19372d61af8";
  let key: string;
  let project: string;
  let runsClient: Client;
  beforeAll(async () => {
    const { organization, apiKey: k } = await h.newOrganization("Runs by branch");
    key = k;
    project = (await h.newProject(organization.id, "Shop")).project.id;
    for (const [branch, sha, checkout] of [
      ["main", "0123456789abcdef0123456789abcdef01234567", "passed"],
      ["feature/cart", SHA, "passed"],
      ["feature/cart", SHA, "failed"],
      ["main", "abcdef0123456789abcdef0123456789abcdef01", "passed"],
    ] as const) {
      h.clock.advance(60_000);
      await h.newRun(project, {
        meta: { branch, commitSha: sha },
        report: report([
          { name: "checkout", status: checkout, message: "expected 200, got 500" },
          { name: "adds items", status: "passed" },
        ]),
      });
    }
    runsClient = await connect(served.base, key);
  });
  afterAll(async () => {
    await runsClient?.close();
  });
  const callRuns = async (args: Record<string, unknown>) =>
    (await runsClient.callTool({ name: "list_test_runs", arguments: args })) as CallToolResult;

  it("the latest run of a branch, then its failures, in two tool calls", async () => {
    const latest = await callRuns({ project_id: project, branch: "feature/cart", limit: 1 });
    expect(latest.isError, text(latest)).toBeFalsy();
    expect(latest.structuredContent).toEqual(await rest(`/projects/${project}/test_runs?branch=feature%2Fcart&limit=1`, key));
    const run = (latest.structuredContent as any).data[0];
    expect(run).toMatchObject({ number: 3, branch: "feature/cart", commit_sha: SHA, result: "tests_failed" });
    expect(text(latest)).toBe(
      [
        `1 run of project_id ${project} matching branch=feature/cart on this page, newest first: 1 failing.`,
        `- Run #3, feature/cart @ 9fceb02d, arrived ${run.created_at.replace(/:\d\d\.\d+Z$/, "Z").replace("T", " ")}: processed, tests_failed; 2 tests: 1 passed, 1 failed, 0 errored, 0 skipped.`,
        "A run's failures with their verdicts (is it mine?): list_run_failures with its number; grouped by cause: get_test_run.",
        "More pages follow: call again with cursor = pagination.next_cursor.",
      ].join("\n"),
    );
    const failures = (await runsClient.callTool({
      name: "get_test_run",
      arguments: { project_id: project, number: run.number },
    })) as CallToolResult;
    expect((failures.structuredContent as any).failure_groups.map((g: any) => g.message)).toEqual(["expected <n>, got <n>"]);
  });

  it("each filter, and pages with the REST cursors", async () => {
    for (const [args, query] of [
      [{}, ""],
      [{ commit_sha: "9FCEB02" }, "commit_sha=9FCEB02"],
      [{ commit_sha: SHA }, `commit_sha=${SHA}`],
      [{ result: "tests_passed", branch: "main" }, "result=tests_passed&branch=main"],
      [{ status: "processed", limit: 2 }, "status=processed&limit=2"],
    ] as const) {
      const result = await callRuns({ project_id: project, ...args });
      expect(result.isError, text(result)).toBeFalsy();
      expect(result.structuredContent, query).toEqual(await rest(`/projects/${project}/test_runs${query ? `?${query}` : ""}`, key));
    }
    const first = await callRuns({ project_id: project, commit_sha: "9fceb02", limit: 1 });
    const cursor = (first.structuredContent as any).pagination.next_cursor;
    const second = await callRuns({ project_id: project, commit_sha: "9fceb02", limit: 1, cursor });
    expect(second.structuredContent).toEqual(
      await rest(`/projects/${project}/test_runs?commit_sha=9fceb02&limit=1&cursor=${encodeURIComponent(cursor)}`, key),
    );
    expect((second.structuredContent as any).data.map((r: any) => r.number)).toEqual([2]);
    // The cursor is bound to the filters, as in REST.
    const other = await callRuns({ project_id: project, commit_sha: "0123456", limit: 1, cursor });
    expect(other.isError).toBe(true);
    expect(text(other)).toMatch(/^invalid_request: cursor is invalid/);
  });

  it("bad filters are invalid_request, another organization's project not_found", async () => {
    for (const [args, expected] of [
      [{ project_id: project, commit_sha: "main" }, /^invalid_request: Invalid argument: commit_sha must be a commit SHA/],
      [{ project_id: project, result: "failed" }, /^invalid_request: Invalid argument: result must be one of/],
      [{ branch: "main" }, /^invalid_request: Invalid argument: project_id /],
      [
        { project_id: project, commit: SHA },
        /^invalid_request: Unknown argument: commit\. list_test_runs takes project_id, branch, commit_sha, result, status, limit, cursor\./,
      ],
      [{ project_id: projectId }, /^not_found: Project not found\./],
    ] as const) {
      const result = await callRuns(args);
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(text(result)).toMatch(expected);
    }
  });
});

describe("list_run_failures: is this failure mine?", () => {
  const BASE_SHA = "28335f0a1b2c3d4e5f60718293a4b5c6d7e8f901";
  let key: string;
  let project: string;
  let verdictClient: Client;
  const callTool = async (name: string, args: Record<string, unknown>) =>
    (await verdictClient.callTool({ name, arguments: args })) as CallToolResult;

  beforeAll(async () => {
    const { organization, apiKey: k } = await h.newOrganization("Verdicts");
    key = k;
    project = (await h.newProject(organization.id, "Shop")).project.id;
    h.clock.advance(60_000);
    await h.newRun(project, {
      meta: { branch: "main", commitSha: BASE_SHA },
      report: report([
        { name: "checkout", status: "passed" },
        { name: "search", status: "failed", message: "index missing" },
        { name: "pays", status: "failed", message: "timeout" },
      ]),
    });
    h.clock.advance(60_000);
    await h.newRun(project, {
      meta: { branch: "feature/cart", commitSha: "b".repeat(40), baseCommitSha: BASE_SHA.slice(0, 7) },
      report: report([
        { name: "checkout", status: "failed", message: "expected 200, got 500" },
        { name: "search", status: "failed", message: "index missing" },
        { name: "pays", status: "passed" },
      ]),
    });
    h.clock.advance(60_000);
    await h.newRun(project, { meta: { branch: "feature/cart", commitSha: "c".repeat(40) }, outcome: "pending" });
    verdictClient = await connect(served.base, key);
  });
  afterAll(async () => {
    await verdictClient?.close();
  });

  it("the latest processed build of a branch, then its failures with verdicts, new first, in two calls", async () => {
    const latest = await callTool("list_test_runs", { project_id: project, branch: "feature/cart", status: "processed", limit: 1 });
    const number = (latest.structuredContent as any).data[0].number;
    expect(number).toBe(2);
    const failures = await callTool("list_run_failures", { project_id: project, number });
    expect(failures.isError, text(failures)).toBeFalsy();
    expect(failures.structuredContent).toEqual(await rest(`/projects/${project}/test_runs/2/comparison/failures`, key));
    const byName = Object.fromEntries((failures.structuredContent as any).data.map((f: any) => [f.name, f]));
    expect(byName.checkout).toMatchObject({ verdict: "new", failure_message: "expected 200, got 500", classname: "shop.CartTest" });
    expect(byName.search).toMatchObject({ verdict: "failing_on_base", reason: "also failed on main in run #1 (28335f0)" });
    expect(Object.keys(byName).sort()).toEqual(["checkout", "search"]);
    const lines = text(failures).split("\n");
    expect(lines[0]).toBe(`2 failures of run #2 (project_id ${project}).`);
    expect(lines[1]).toBe("new (1):");
    expect(lines[2]).toMatch(
      /^- shop\.CartTest › checkout \(test_id [0-9a-f-]+\), failed: expected 200, got 500\. passed on main in run #1 \(28335f0\)\.$/,
    );
    expect(lines[3]).toBe("failing_on_base (1):");
    expect(lines[4]).toMatch(
      /^- shop\.CartTest › search \(test_id [0-9a-f-]+\), failed: index missing\. also failed on main in run #1 \(28335f0\)\.$/,
    );
  });

  it("get_test_run carries the comparison: its base, counts per verdict and what it fixed", async () => {
    const result = await callTool("get_test_run", { project_id: project, number: 2 });
    const comparison = await rest(`/projects/${project}/test_runs/2/comparison`, key);
    expect((result.structuredContent as any).comparison).toEqual(comparison);
    expect(comparison).toMatchObject({ base_choice: "base_commit", base: { number: 1, commit_sha: BASE_SHA }, fixed_count: 1 });
    expect(text(result)).toContain(
      "Compared with run #1 (main @ 28335f0a), the run of the base commit the upload named: 1 new, 1 failing_on_base; 1 test fixed.",
    );
    const pending = await callTool("get_test_run", { project_id: project, number: 3 });
    expect(pending.structuredContent).toMatchObject({ status: "pending", comparison: null });
  });

  it("filters by verdict and pages with the REST cursors; a pending run is run_not_processed", async () => {
    const onlyNew = await callTool("list_run_failures", { project_id: project, number: 2, verdict: "new" });
    expect(onlyNew.structuredContent).toEqual(await rest(`/projects/${project}/test_runs/2/comparison/failures?verdict=new`, key));
    expect((onlyNew.structuredContent as any).data.map((f: any) => f.name)).toEqual(["checkout"]);
    const first = await callTool("list_run_failures", { project_id: project, number: 2, limit: 1 });
    const cursor = (first.structuredContent as any).pagination.next_cursor;
    const second = await callTool("list_run_failures", { project_id: project, number: 2, limit: 1, cursor });
    expect(second.structuredContent).toEqual(
      await rest(`/projects/${project}/test_runs/2/comparison/failures?limit=1&cursor=${encodeURIComponent(cursor)}`, key),
    );
    expect(text(first)).toContain("More pages follow");
    const pending = await callTool("list_run_failures", { project_id: project, number: 3 });
    expect(pending.isError).toBe(true);
    expect(text(pending)).toMatch(/^run_not_processed: Test run #3 is not processed yet/);
  });
});

describe("errors are tool errors with the API's code and message, and the session goes on", () => {
  it("bad arguments", async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        "list_tests",
        { project_id: projectId, health: "sometimes" },
        /^invalid_request: Invalid argument: health must be one of healthy, flaky, broken, all\./,
      ],
      ["list_tests", { project_id: projectId, limit: 0 }, /^invalid_request: limit must be an integer between 1 and 100\./],
      ["list_tests", { project_id: projectId, limit: 2.5 }, /^invalid_request: Invalid argument: limit must be an integer/],
      ["list_tests", { project_id: projectId, cursor: "forged" }, /^invalid_request: cursor is invalid/],
      ["list_tests", { health: "flaky" }, /^invalid_request: Invalid argument: project_id /],
      [
        "list_tests",
        { project_id: projectId, sort: "name" },
        /^invalid_request: Unknown argument: sort\. list_tests takes project_id, health, owner, quarantined, q, variant, limit, cursor\./,
      ],
      ["list_alerts", { status: "open" }, /^invalid_request: Invalid argument: status must be one of active, snoozed, inactive, all\./],
      ["get_test_run", { project_id: projectId, number: "two" }, /^invalid_request: Invalid argument: number must be an integer/],
      ["get_test_run", { project_id: projectId, number: 99 }, /^not_found: Test run not found\./],
      [
        "list_run_failures",
        { project_id: projectId, number: 2, verdict: "mine" },
        /^invalid_request: Invalid argument: verdict must be one of/,
      ],
      ["list_run_failures", { project_id: projectId, number: 99 }, /^not_found: Test run not found\./],
      ["get_test", { test_id: "not-a-uuid" }, /^not_found: Test not found\./],
      [
        "get_flakiness_cost",
        { project_id: projectId, from: "2026-02-30" },
        /^invalid_request: Invalid argument: from must be a date, YYYY-MM-DD/,
      ],
      [
        "get_flakiness_cost",
        { project_id: projectId, from: "2020-01-01", to: "2021-06-01" },
        /^invalid_request: Invalid query parameter: to must be at most 365 days after from/,
      ],
      [
        "snooze_alert",
        { alert_id: flakyAlertId, duration: "2h" },
        /^validation_failed: The request was understood but its data was rejected\.\n- duration: must be one of 1h, 4h, 24h, 1w$/,
      ],
      [
        "quarantine_test",
        { test_id: flakyTestId },
        /^validation_failed: .*\n- reason: can't be blank\n- duration: is required unless expires_at is given/,
      ],
      [
        "quarantine_test",
        { test_id: flakyTestId, reason: "x", duration: "7d", expires_at: "2030-01-01T00:00:00Z" },
        /\n- duration: can't be given with expires_at/,
      ],
      [
        "quarantine_test",
        { test_id: flakyTestId, reason: "x", expires_at: "2020-01-01T00:00:00Z" },
        /^validation_failed: .*\n- expires_at: /,
      ],
    ];
    for (const [name, args, expected] of cases) {
      const result = await call(name, args);
      expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      expect(text(result), `${name} ${JSON.stringify(args)}`).toMatch(expected);
      expect(result.structuredContent).toBeUndefined();
    }
    // An unknown tool is a protocol error (JSON-RPC), and the session still works afterwards.
    await expect(client.callTool({ name: "drop_database", arguments: {} })).rejects.toThrow(/Unknown tool: drop_database/);
    expect((await call("list_projects")).isError).toBeFalsy();
  });

  it("another organization's ids are not found, and nothing of it changes", async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["list_tests", { project_id: other.projectId }, "not_found: Project not found."],
      ["get_test", { test_id: other.testId }, "not_found: Test not found."],
      ["get_test_run", { project_id: other.projectId, number: 1 }, "not_found: Project not found."],
      ["list_run_failures", { project_id: other.projectId, number: 1 }, "not_found: Project not found."],
      ["list_alerts", { project_id: other.projectId }, "not_found: Project not found."],
      ["get_flakiness_cost", { project_id: other.projectId }, "not_found: Project not found."],
      ["list_alert_events", { alert_id: other.alertId }, "not_found: Alert not found."],
      ["snooze_alert", { alert_id: other.alertId, duration: "1w" }, "not_found: Alert not found."],
      ["quarantine_test", { test_id: other.testId, reason: "not mine", duration: "1d" }, "not_found: Test not found."],
      ["unquarantine_test", { test_id: other.testId }, "not_found: Test not found."],
    ];
    for (const [name, args, expected] of cases) {
      const result = await call(name, args);
      expect(result.isError, name).toBe(true);
      expect(text(result), name).toBe(expected);
      // The same answer as REST's for the same question.
    }
    expect((await h.get(`/api/v1/tests/${other.testId}`, apiKey)).body.error.message).toBe("Test not found.");
    expect(await rest(`/alerts/${other.alertId}`, other.apiKey)).toMatchObject({ snoozed: false });
    expect(await rest(`/tests/${other.testId}`, other.apiKey)).toMatchObject({ quarantined: false });
  });
});

describe("HTTP: authentication, methods, bodies", () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } },
  };
  const post = (headers: { authorization?: string }, body: string) =>
    fetch(`${served.base}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body,
    });

  it("401 in the error envelope without a key or with a wrong one; the SDK client cannot connect", async () => {
    for (const headers of [{}, { authorization: "Bearer cta_not_a_real_key_000000000000000000000000" }, { authorization: "Basic abc" }]) {
      const res = await post(headers, JSON.stringify(initialize));
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="api"');
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(((await res.json()) as any).error.code).toBe("unauthorized");
    }
    await expect(connect(served.base, null)).rejects.toThrow(/"code":"unauthorized"/);
  });

  it("a plain initialize with the key answers JSON, with RateLimit headers and no session id", async () => {
    const res = await post({ authorization: `Bearer ${apiKey}` }, JSON.stringify(initialize));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    expect(res.headers.get("ratelimit-policy")).toBe('"default";q=600;w=60');
    expect(res.headers.get("request-id")).toBeTruthy();
    const body: any = await res.json();
    expect(body).toMatchObject({
      jsonrpc: "2.0",
      id: 1,
      result: { serverInfo: { name: "ci-test-analytics" }, capabilities: { tools: {} } },
    });
  });

  it("GET and DELETE are 405 (stateless: no stream, no session); batches, bad JSON and big bodies are refused in the envelope", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(`${served.base}/mcp`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, accept: "text/event-stream" },
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(((await res.json()) as any).error.code).toBe("method_not_allowed");
    }
    const auth = { authorization: `Bearer ${apiKey}` };
    const batch = await post(auth, JSON.stringify([initialize, { jsonrpc: "2.0", method: "notifications/initialized" }]));
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as any).error).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("batches are not accepted"),
    });
    const malformed = await post(auth, "{");
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as any).error.code).toBe("invalid_request");
    const big = await post(auth, JSON.stringify({ ...initialize, padding: "x".repeat(70_000) }));
    expect(big.status).toBe(413);
    expect(((await big.json()) as any).error.code).toBe("payload_too_large");
  });
});

describe("the rate limit is /api/v1's", () => {
  let limited: Served;
  beforeAll(async () => {
    limited = await serve({ rateLimit: { limit: 12, windowMs: 60_000 } });
  });
  afterAll(() => stop(limited));

  it("one tool call is one request of the key's quota, shared with REST; past it, 429 in the envelope", async () => {
    const { organization, apiKey: key } = await limited.h.newOrganization("Limited");
    await limited.h.newProject(organization.id);
    const seen: Seen[] = [];
    const mcp = await connect(limited.base, key, seen);
    const remaining = () => Number(/r=(\d+)/.exec(seen.at(-1)!.rateLimit ?? "")?.[1]);

    // Every HTTP request of the session so far counted: initialize, the initialized notification, and the GET for a stream
    // that the client sends without waiting for it (405).
    for (let i = 0; i < 500 && seen.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen.map((s) => s.status)).toEqual([200, 202, 405]);
    expect(remaining()).toBe(12 - 3);

    await mcp.callTool({ name: "list_projects", arguments: {} });
    expect(remaining()).toBe(8);
    await mcp.callTool({ name: "list_alerts", arguments: {} });
    expect(remaining()).toBe(7);
    // A tool error costs its request too, like a REST 404.
    await mcp.callTool({ name: "get_test", arguments: { test_id: "nope" } });
    expect(remaining()).toBe(6);

    const restCall = await limited.h.get("/api/v1/projects", key);
    expect(restCall.headers.get("ratelimit")).toMatch(/r=5;/);
    await mcp.callTool({ name: "list_projects", arguments: {} });
    expect(remaining()).toBe(4);
    for (let i = 0; i < 4; i++) await mcp.callTool({ name: "list_projects", arguments: {} });
    expect(remaining()).toBe(0);

    await expect(mcp.callTool({ name: "list_projects", arguments: {} })).rejects.toThrow(/"code":"rate_limited"/);
    expect(seen.at(-1)!.status).toBe(429);
    const refused = await fetch(`${limited.base}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect(((await refused.json()) as any).error.code).toBe("rate_limited");
    await mcp.close();
  });
});

describe("a tool that fails unexpectedly", () => {
  let faulty: Served;
  const state: { fault: Error | null } = { fault: null };
  beforeAll(async () => {
    const database = await openTestDatabase();
    // The database as the requests see it: the real one until `state.fault` is set, then every query fails with it.
    const failing = new Proxy(database.db, {
      get: (target, property, receiver) =>
        state.fault && ["select", "execute", "transaction", "insert", "update", "delete"].includes(String(property))
          ? () => {
              throw state.fault;
            }
          : Reflect.get(target, property, receiver),
    });
    faulty = await serve(
      {},
      inProcessHarness(database.db, { overrides: { db: failing as Database } }, () => database.close()),
    );
  });
  afterAll(() => stop(faulty));

  it("answers a tool error (service_unavailable or internal_error), logs the cause, and the session goes on", async () => {
    const { organization, apiKey: key } = await faulty.h.newOrganization("Faulty");
    await faulty.h.newProject(organization.id);
    // Connecting admits the key once; later admissions need no database (the key-id cache and the counter).
    const mcp = await connect(faulty.base, key);
    try {
      state.fault = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
      const unavailable = (await mcp.callTool({ name: "list_projects", arguments: {} })) as CallToolResult;
      expect(unavailable).toMatchObject({
        isError: true,
        content: [{ type: "text", text: "service_unavailable: The database is momentarily unavailable; retry shortly." }],
      });

      state.fault = new Error("something nobody expected");
      const broken = (await mcp.callTool({ name: "list_alerts", arguments: {} })) as CallToolResult;
      const requestId =
        /^internal_error: An unexpected error occurred\. Quote the Request-Id header when reporting it\.\nRequest-Id: ([0-9a-f-]{36})$/.exec(
          text(broken),
        )?.[1];
      expect(requestId, text(broken)).toBeDefined();
      // The log line that the id finds.
      expect(
        faulty.h.logs.some(
          (line) =>
            line.includes("unhandled error") &&
            line.includes(requestId!) &&
            line.includes("list_alerts") &&
            line.includes("something nobody expected"),
        ),
      ).toBe(true);
      expect(faulty.h.logs.some((line) => line.includes("database unavailable") && line.includes("ECONNREFUSED"))).toBe(true);

      state.fault = null;
      const healed = (await mcp.callTool({ name: "list_projects", arguments: {} })) as CallToolResult;
      expect(healed.isError).toBeFalsy();
      expect((healed.structuredContent as any).data).toHaveLength(1);
    } finally {
      state.fault = null;
      await mcp.close();
    }
  });
});
