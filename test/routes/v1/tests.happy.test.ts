/**
 * Tests as resources (/api/v1): identity across runs, per-test state and health kept by run
 * processing, the tests list with its filters and sorts, one test, its executions and its health
 * transitions. Happy paths; errors and cross-organization access are in tests.errors.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Report } from "../../../src/services/runs/test-runs";
import { type Harness, WEB_APP_URL, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

type CaseSpec = {
  name: string;
  classname?: string | null;
  file?: string | null;
  status?: "passed" | "failed" | "errored" | "skipped";
  durationMs?: number;
  attempts?: ("passed" | "failed")[];
};
const report = (cases: CaseSpec[], suite = "suite"): Report => ({
  suites: [
    {
      name: suite,
      cases: cases.map((c) => ({
        name: c.name,
        classname: c.classname === undefined ? "pkg.Tests" : c.classname,
        file: c.file ?? null,
        status: c.status ?? "passed",
        durationMs: c.durationMs ?? 10,
        failureMessage: c.status === "failed" ? "boom" : null,
        attempts: c.attempts?.map((status) => ({ status, durationMs: 5, failureMessage: status === "failed" ? "boom" : null })),
      })),
    },
  ],
});

async function project() {
  const { organization, apiKey } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  return { apiKey, projectId: project.id as string, organizationId: organization.id as string };
}

async function run(projectId: string, cases: CaseSpec[], meta: { branch?: string; commitSha?: string } = {}, suite?: string) {
  h.clock.advance(60_000);
  return h.newRun(projectId, {
    meta: { branch: meta.branch ?? "main", commitSha: meta.commitSha ?? `sha-${Math.random().toString(16).slice(2)}` },
    report: report(cases, suite),
  });
}

const listTests = async (apiKey: string, projectId: string, query = "") => {
  const res = await h.get(`/api/v1/projects/${projectId}/tests${query ? `?${query}` : ""}`, apiKey);
  expect(res.status, res.text).toBe(200);
  return res.body;
};

describe("test identity", () => {
  it("the same classname and name are one test across runs and suites; the file stands in for a missing classname; the suite is not part of it", async () => {
    const { apiKey, projectId } = await project();
    await run(projectId, [{ name: "adds" }, { name: "adds", classname: null, file: "math.test.js" }], {}, "Suite A");
    await run(
      projectId,
      [{ name: "adds" }, { name: "adds", classname: null, file: "math.test.js" }, { name: "adds", classname: null, file: "other.test.js" }],
      {},
      "Suite B",
    );
    const body = await listTests(apiKey, projectId, "sort=name");
    expect(body.data).toHaveLength(3);
    const withClass = body.data.find((t: any) => t.classname === "pkg.Tests");
    expect(withClass).toMatchObject({
      name: "adds",
      file: null,
      suite: "Suite B",
      executions_count: 2,
      health: "healthy",
      last_status: "passed",
    });
    expect(
      body.data
        .filter((t: any) => t.classname === null)
        .map((t: any) => [t.file, t.executions_count])
        .sort(),
    ).toEqual([
      ["math.test.js", 2],
      ["other.test.js", 1],
    ]);

    // Every stored case points to its test.
    const executions = await h.get(`/api/v1/tests/${withClass.id}/executions`, apiKey);
    expect(executions.body.data).toHaveLength(2);
    for (const execution of executions.body.data) expect(execution.test_id).toBe(withClass.id);
    const projectBody = (await h.get(`/api/v1/projects/${projectId}`, apiKey)).body;
    expect(projectBody).toMatchObject({ tests_count: 3, flaky_tests_count: 0, broken_tests_count: 0 });
  });
});

/**
 * The documented duration estimate (docs/tests.md) computed independently: over the first 50
 * known durations, the exact mean and population variance of ln(1 + ms); p50 = e^mean − 1,
 * p95 = e^(mean + 1.645·sd) − 1, rounded.
 */
function logNormalQuantiles(durations: number[]) {
  const logs = durations.map((ms) => Math.log(1 + ms));
  const mean = logs.reduce((a, b) => a + b, 0) / logs.length;
  const variance = logs.reduce((a, b) => a + (b - mean) ** 2, 0) / logs.length;
  return {
    duration_p50_ms: Math.round(Math.exp(mean) - 1),
    duration_p95_ms: Math.round(Math.exp(mean + 1.6448536 * Math.sqrt(variance)) - 1),
  };
}

describe("per-test state", () => {
  it("counts every branch, keeps the window on the default branch: failure rate, flip rate, impact, durations", async () => {
    const { apiKey, projectId } = await project();
    const outcomes: NonNullable<CaseSpec["status"]>[] = ["passed", "failed", "passed", "passed", "failed"];
    for (const [i, status] of outcomes.entries()) await run(projectId, [{ name: "t", status, durationMs: (i + 1) * 100 }]);
    await run(projectId, [{ name: "t", status: "failed", durationMs: 9_000 }], { branch: "feature" });
    await run(projectId, [{ name: "t", status: "skipped" }]);
    const [test] = (await listTests(apiKey, projectId)).data;
    expect(test).toMatchObject({
      executions_count: 7,
      last_status: "skipped",
      failure_rate: 0.4,
      flip_rate: 0.75,
      impact: 2,
      ...logNormalQuantiles([100, 200, 300, 400, 500]),
      window: { executions: 5, max_executions: 50, branch: null },
      health: "healthy",
    });
    expect(test.url).toBe(`${WEB_APP_URL}/projects/${projectId}/tests/${test.id}`);
    expect(new Date(test.last_failed_at).getTime()).toBeLessThan(new Date(test.last_executed_at).getTime());
    expect(new Date(test.first_seen_at).getTime()).toBeLessThan(new Date(test.last_failed_at).getTime());
    expect(await h.get(`/api/v1/tests/${test.id}`, apiKey).then((r) => r.body)).toEqual(test);
    // 261 and 663 ms: the fitted median sits below the plain one (300); p95 extrapolates the fit.
    expect([test.duration_p50_ms, test.duration_p95_ms]).toEqual([261, 663]);
  });

  it("failing_streak: the latest consecutive default-branch failures; other branches leave it; a pass resets it; 10 make the test broken", async () => {
    const { apiKey, projectId } = await project();
    const streak = async () => (await listTests(apiKey, projectId)).data[0];
    await run(projectId, [{ name: "t", status: "passed" }]);
    expect(await streak()).toMatchObject({ failing_streak: 0, health: "healthy" });
    await run(projectId, [{ name: "t", status: "failed" }]);
    await run(projectId, [{ name: "t", status: "errored" }]);
    await run(projectId, [{ name: "t", status: "passed" }], { branch: "feature" });
    await run(projectId, [{ name: "t", status: "skipped" }]);
    const failing = await streak();
    expect(failing).toMatchObject({ failing_streak: 2, health: "healthy" });
    expect((await h.get(`/api/v1/tests/${failing.id}`, apiKey)).body.failing_streak).toBe(2);
    await run(projectId, [{ name: "t", status: "passed" }]);
    expect(await streak()).toMatchObject({ failing_streak: 0 });
    for (let i = 0; i < 10; i++) await run(projectId, [{ name: "t", status: "failed" }]);
    expect(await streak()).toMatchObject({ failing_streak: 10, health: "broken" });
  });

  it("counts the passes on retry in the window (a failed attempt, then passed): passes for the rates, the default branch only", async () => {
    const { apiKey, projectId } = await project();
    for (const spec of [
      { status: "passed", attempts: ["failed"] },
      { status: "passed", attempts: ["failed", "failed"] },
      { status: "failed" },
      { status: "passed", attempts: ["passed"] },
      { status: "failed", attempts: ["failed"] },
    ] as const)
      await run(projectId, [{ name: "t", ...spec, attempts: [...(spec.attempts ?? [])] }]);
    await run(projectId, [{ name: "t", status: "passed", attempts: ["failed"] }], { branch: "feature" });
    const [test] = (await listTests(apiKey, projectId)).data;
    // Window r r f p f: two passes on retry, two failures, flips r→f→p→f.
    expect(test).toMatchObject({
      passed_on_retry_count: 2,
      failure_rate: 0.4,
      impact: 2,
      flip_rate: 0.75,
      window: { executions: 5 },
      executions_count: 6,
      health: "flaky",
    });
    expect((await h.get(`/api/v1/tests/${test.id}`, apiKey)).body.passed_on_retry_count).toBe(2);
  });

  it("estimates durations over about the last 50 executions: a test that became 10× slower is reported slow within the window", async () => {
    const { apiKey, projectId } = await project();
    for (let i = 0; i < 60; i++) await run(projectId, [{ name: "t", status: "passed", durationMs: i < 50 ? 100 : 1_000 }]);
    const after10 = (await listTests(apiKey, projectId)).data[0];
    for (let i = 0; i < 50; i++) await run(projectId, [{ name: "t", status: "passed", durationMs: 1_000 }]);
    const after60 = (await listTests(apiKey, projectId)).data[0];
    expect(after10.duration_p50_ms).toBeGreaterThan(100);
    expect(after10.duration_p50_ms).toBeLessThan(after60.duration_p50_ms);
    // Exponential weight 1/50: the old level's weight after 60 new executions is 0.98^60 ≈ 0.3.
    expect(after60.duration_p50_ms).toBeGreaterThan(400);
    expect(after60.duration_p95_ms).toBeGreaterThanOrEqual(after60.duration_p50_ms);
  });
});

describe("health", () => {
  it("a pass and a failure on one commit make a test flaky at that run, retries included; the project counts it", async () => {
    const { apiKey, projectId } = await project();
    await run(projectId, [
      { name: "retried", status: "passed", attempts: ["failed"] },
      { name: "steady", status: "passed" },
    ]);
    await run(projectId, [{ name: "cross", status: "passed" }], { commitSha: "abc123" });
    await run(projectId, [{ name: "cross", status: "failed" }], { commitSha: "abc123", branch: "retry-branch" });
    const flaky = await listTests(apiKey, projectId, "health=flaky&sort=name");
    expect(flaky.data.map((t: any) => t.name)).toEqual(["cross", "retried"]);
    expect((await listTests(apiKey, projectId, "health=healthy")).data.map((t: any) => t.name)).toEqual(["steady"]);
    expect((await h.get(`/api/v1/projects/${projectId}`, apiKey)).body).toMatchObject({
      tests_count: 3,
      flaky_tests_count: 2,
      broken_tests_count: 0,
    });

    const cross = flaky.data[0];
    const transitions = await h.get(`/api/v1/tests/${cross.id}/health_transitions`, apiKey);
    expect(transitions.status).toBe(200);
    expect(transitions.body.data).toEqual([
      {
        id: expect.any(Number),
        test_id: cross.id,
        from: "healthy",
        to: "flaky",
        reason: expect.stringContaining("abc123"),
        test_run: {
          number: 3,
          branch: "retry-branch",
          commit_sha: "abc123",
          created_at: expect.any(String),
          url: `${WEB_APP_URL}/projects/${projectId}/runs/3`,
        },
        created_at: cross.health_changed_at,
      },
    ]);
  });

  it("ten consecutive failing default-branch executions make a test broken; a pass makes it healthy again", async () => {
    const { apiKey, projectId } = await project();
    await run(projectId, [{ name: "breaks", status: "passed" }]);
    for (let i = 0; i < 9; i++) await run(projectId, [{ name: "breaks", status: "failed" }]);
    expect((await listTests(apiKey, projectId)).data[0].health).toBe("healthy");
    await run(projectId, [{ name: "breaks", status: "errored" }]);
    const broken = (await listTests(apiKey, projectId)).data[0];
    expect(broken).toMatchObject({ health: "broken", impact: 10 });
    expect((await h.get(`/api/v1/projects/${projectId}`, apiKey)).body.broken_tests_count).toBe(1);
    // Failures elsewhere do not make it broken sooner; a pass on the default branch heals it.
    await run(projectId, [{ name: "breaks", status: "passed" }]);
    const healed = (await listTests(apiKey, projectId)).data[0];
    expect(healed.health).toBe("healthy");
    const transitions = (await h.get(`/api/v1/tests/${healed.id}/health_transitions`, apiKey)).body.data;
    expect(transitions.map((t: any) => [t.from, t.to, t.test_run.number])).toEqual([
      ["broken", "healthy", 12],
      ["healthy", "broken", 11],
    ]);
    expect((await h.get(`/api/v1/projects/${projectId}`, apiKey)).body.broken_tests_count).toBe(0);
  });

  it("a re-run where five or more tests contradict their commit at once (a burst re-run green) leaves them to the flakiness check; four are flaky", async () => {
    for (const failing of [5, 4]) {
      const { apiKey, projectId } = await project();
      const names = Array.from({ length: 8 }, (_, i) => `t${i}`);
      await run(
        projectId,
        names.map((name) => ({ name })),
      );
      // One run of commit "blip" fails `failing` tests at once; its re-run passes them all.
      await run(
        projectId,
        names.map((name, i) => ({ name, status: i < failing ? "failed" : "passed" })),
        { commitSha: "blip" },
      );
      await run(
        projectId,
        names.map((name) => ({ name })),
        { commitSha: "blip" },
      );
      const flaky = (await listTests(apiKey, projectId, "health=flaky&sort=name")).data.map((t: any) => t.name);
      expect(flaky, `${failing} failing`).toEqual(failing >= 5 ? [] : names.slice(0, failing));
    }
  });
});

describe("GET /projects/:id/tests", () => {
  it("each sort walks every test exactly once in its order, ties by id; q matches name, classname or file case-insensitively", async () => {
    const { apiKey, projectId } = await project();
    const cases: CaseSpec[] = Array.from({ length: 23 }, (_, i) => ({
      name: `test_${String(i).padStart(2, "0")}`,
      classname: i % 2 === 0 ? "Alpha.Suite" : null,
      file: i % 2 === 0 ? null : `spec/beta_${i}.ts`,
      status: i % 3 === 0 ? "failed" : "passed",
      durationMs: (i % 5) * 10,
    }));
    await run(projectId, cases);
    await run(
      projectId,
      cases.map((c, i) => ({ ...c, status: i % 4 === 0 ? "failed" : "passed" })),
    );

    const everyId = (await collectAll(h, `/api/v1/projects/${projectId}/tests?sort=name`, apiKey, 100)).items.map((t: any) => t.id).sort();
    expect(everyId).toHaveLength(23);
    const keyOf: Record<string, (t: any) => number | string> = {
      impact: (t) => t.impact,
      failure_rate: (t) => t.failure_rate ?? -1,
      duration: (t) => t.duration_p95_ms ?? -1,
      last_failed: (t) => (t.last_failed_at ? Date.parse(t.last_failed_at) : Number.NEGATIVE_INFINITY),
      name: (t) => t.name,
    };
    for (const sort of Object.keys(keyOf)) {
      const { items, pages } = await collectAll(h, `/api/v1/projects/${projectId}/tests?sort=${sort}`, apiKey, 4);
      expect(pages).toBe(6);
      expect(items.map((t: any) => t.id).sort()).toEqual(everyId);
      for (let i = 1; i < items.length; i++) {
        const [a, b] = [keyOf[sort]!(items[i - 1]), keyOf[sort]!(items[i])];
        if (sort === "name") expect(a < b || (a === b && items[i - 1].id < items[i].id)).toBe(true);
        else expect(a > b || (a === b && items[i - 1].id > items[i].id)).toBe(true);
      }
    }
    const byImpact = (await listTests(apiKey, projectId)).data;
    expect(byImpact[0].impact).toBe(2);

    const alpha = await collectAll(h, `/api/v1/projects/${projectId}/tests?q=ALPHA.su`, apiKey, 100);
    expect(alpha.items).toHaveLength(12);
    const beta = await collectAll(h, `/api/v1/projects/${projectId}/tests?q=beta_1`, apiKey, 100);
    expect(beta.items.map((t: any) => t.file).sort()).toEqual([
      "spec/beta_1.ts",
      "spec/beta_11.ts",
      "spec/beta_13.ts",
      "spec/beta_15.ts",
      "spec/beta_17.ts",
      "spec/beta_19.ts",
    ]);
    expect((await listTests(apiKey, projectId, "q=%25")).data).toEqual([]);
    expect((await listTests(apiKey, projectId, "q=test_0&sort=name&limit=3")).data.map((t: any) => t.name)).toEqual([
      "test_00",
      "test_01",
      "test_02",
    ]);
  });
});

describe("GET /tests/:id/executions", () => {
  it("lists a test's cases across runs, newest first, with their run, filtered by status and branch", async () => {
    const { apiKey, projectId } = await project();
    await run(projectId, [{ name: "hist", status: "passed" }], { commitSha: "c1" });
    await run(projectId, [{ name: "hist", status: "failed" }], { branch: "feature", commitSha: "c2" });
    await run(projectId, [{ name: "hist", status: "passed" }], { commitSha: "c3" });
    const [test] = (await listTests(apiKey, projectId)).data;
    const all = (await h.get(`/api/v1/tests/${test.id}/executions`, apiKey)).body;
    expect(all.data.map((e: any) => [e.test_run.number, e.status, e.test_run.branch, e.test_run.commit_sha])).toEqual([
      [3, "passed", "main", "c3"],
      [2, "failed", "feature", "c2"],
      [1, "passed", "main", "c1"],
    ]);
    expect(all.data[0]).toMatchObject({
      name: "hist",
      classname: "pkg.Tests",
      test_id: test.id,
      test_run_number: 3,
      test_run: { url: `${WEB_APP_URL}/projects/${projectId}/runs/3` },
    });
    const failed = (await h.get(`/api/v1/tests/${test.id}/executions?status=failed`, apiKey)).body.data;
    expect(failed.map((e: any) => e.test_run.number)).toEqual([2]);
    const onMain = (await h.get(`/api/v1/tests/${test.id}/executions?branch=main&limit=1`, apiKey)).body;
    expect(onMain.data.map((e: any) => e.test_run.number)).toEqual([3]);
    const next = (
      await h.get(
        `/api/v1/tests/${test.id}/executions?branch=main&limit=1&cursor=${encodeURIComponent(onMain.pagination.next_cursor)}`,
        apiKey,
      )
    ).body;
    expect(next.data.map((e: any) => e.test_run.number)).toEqual([1]);
    expect(next.pagination).toEqual({ next_cursor: null, has_more: false });
  });
});

describe("health and the flakiness alert", () => {
  it("a test the flakiness check flags is flaky, with or without the alert: disabling it stops the events, not the health", async () => {
    for (const disabled of [false, true]) {
      const { organization, apiKey } = await h.newOrganization();
      const { project, uploadToken, alertIds } = await h.newProject(organization.id);
      if (disabled) expect((await h.post(`/api/v1/alerts/${alertIds.test_flakiness}/disable`, apiKey)).status).toBe(200);
      // Passing and failing on alternate commits of main: no same-commit evidence, never 10
      // failures in a row; only the check's history rule (flips) can call it flaky.
      for (let i = 0; i < 26; i++) {
        h.clock.advance(60_000);
        const cases = [
          ...["a", "b", "c", "d", "e"].map((name) => ({ name, classname: "Stable", status: "passed" })),
          { name: "wobbles", classname: "Wobbly", status: i % 2 === 0 ? "passed" : "failed", failure_message: i % 2 === 0 ? null : "boom" },
        ];
        await h.uploadAndWait(uploadToken, {
          branch: "main",
          commit_sha: `commit${String(i).padStart(4, "0")}`,
          suites: [{ name: "s", cases }],
        });
      }
      const events = (await h.get(`/api/v1/alerts/${alertIds.test_flakiness}/events`, apiKey)).body.data;
      const wobbly = (await h.get(`/api/v1/projects/${project.id}/tests?q=wobbles`, apiKey)).body.data[0];
      expect(wobbly.health, `alert disabled: ${disabled}`).toBe("flaky");
      const transitions = (await h.get(`/api/v1/tests/${wobbly.id}/health_transitions`, apiKey)).body.data;
      expect(transitions.at(-1)).toMatchObject({ from: "healthy", to: "flaky", reason: expect.stringContaining("flakiness check") });
      if (disabled) expect(events).toEqual([]);
      else expect(events.map((e: any) => e.metadata.test_id)).toContain(wobbly.id);
    }
  });
});
