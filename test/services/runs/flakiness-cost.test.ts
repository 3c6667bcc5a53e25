/**
 * The cost of flakiness kept by run processing (docs/flakiness-cost.md): each upload goes through
 * POST /uploads/v1/test_runs and the queue, and the day's rollup and the tests' daily rows are read
 * back. Failed attempts of cases that then passed, failures of a flaky test and of a quarantined
 * one (their failed attempts included), a genuine failure that costs nothing, the re-run of a
 * commit that failed only by flaky or quarantined tests, and what is not a re-run (another build
 * of the same commit after a genuine failure, the same build, another variant's tags); and the
 * statements the reads cost on Node (the Worker's: bench/edge-requests.ts EDGE_BUDGETS.flakiness_cost).
 */
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectDailyRollups, testDailyCosts, testRuns, tests } from "../../../src/db/schema";
import { createHarness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

type Attempt = { status: "failed" | "errored"; duration_ms: number | null };
type Case = { name: string; status: "passed" | "failed" | "errored"; duration_ms?: number | null; attempts?: Attempt[] };
const pass = (name: string, duration_ms = 10, attempts?: Attempt[]): Case => ({ name, status: "passed", duration_ms, attempts });
const fail = (name: string, duration_ms = 10, attempts?: Attempt[]): Case => ({ name, status: "failed", duration_ms, attempts });
const failedTry = (duration_ms: number | null): Attempt => ({ status: "failed", duration_ms });

type Meta = { commit_sha: string; build_id?: string; tags?: string[]; branch?: string; duration_ms?: number };

async function costProject() {
  const { organization, apiKey } = await h.newOrganization("Cost Org");
  const { project, uploadToken } = await h.newProject(organization.id, "Cost");
  const upload = async (cases: Case[], meta: Meta) => {
    h.clock.advance(60_000);
    const suites = [
      {
        name: "s",
        cases: cases.map((c) => ({ classname: "Shop", ...c, ...(c.status === "passed" ? {} : { failure_message: "boom" }) })),
      },
    ];
    const run = await h.uploadAndWait(uploadToken, { branch: "main", ...meta, suites });
    expect(run.status).toBe("processed");
    return run as { number: number; created_at: string; duration_ms: number | null; result: string };
  };
  const testId = async (name: string) => {
    const [row] = await h.db
      .select({ id: tests.id })
      .from(tests)
      .where(and(eq(tests.projectId, project.id), eq(tests.name, name)));
    return row!.id;
  };
  const day = async () => {
    const [row] = await h.db.select().from(projectDailyRollups).where(eq(projectDailyRollups.projectId, project.id));
    return row!;
  };
  const testCosts = async () => {
    const rows = await h.db.select().from(testDailyCosts).where(eq(testDailyCosts.projectId, project.id));
    const names = await h.db.select({ id: tests.id, name: tests.name }).from(tests).where(eq(tests.projectId, project.id));
    const nameOf = new Map(names.map((t) => [t.id, t.name]));
    return Object.fromEntries(
      rows.map((r) => [
        nameOf.get(r.testId),
        { retry: r.retryMs, flaky: r.flakyFailuresMs, quarantined: r.quarantinedFailuresMs, day: r.day },
      ]),
    );
  };
  return { project, apiKey, upload, testId, day, testCosts };
}

/** Everything on one UTC day: the runs arrive a minute apart from 08:00. */
beforeAll(() => h.clock.set(Date.parse("2026-03-10T08:00:00Z")));

describe("the cost of flakiness kept by processing", () => {
  it("counts failed attempts of cases that passed, and the failures of flaky and quarantined tests with their attempts; a genuine failure costs nothing", async () => {
    const p = await costProject();
    // Run 1: every test passes once (so each has a row), none costs anything.
    await p.upload([pass("retried"), pass("flaky"), pass("quarantined"), pass("solid")], { commit_sha: "a".repeat(40) });
    expect((await p.day()).retryMs + (await p.day()).flakyFailuresMs + (await p.day()).quarantinedFailuresMs).toBe(0);
    await h.db
      .update(tests)
      .set({ health: "flaky" })
      .where(eq(tests.id, await p.testId("flaky")));
    const quarantine = await h.post(`/api/v1/tests/${await p.testId("quarantined")}/quarantine`, p.apiKey, {
      reason: "known flake",
      duration: "7d",
    });
    expect(quarantine.status).toBe(200);

    const run = await p.upload(
      [
        pass("retried", 50, [failedTry(60), { status: "errored", duration_ms: 40 }]),
        fail("flaky", 70, [failedTry(30)]),
        fail("quarantined", 25, [failedTry(null)]),
        fail("solid", 500, [failedTry(400)]),
      ],
      { commit_sha: "b".repeat(40), duration_ms: 2_000 },
    );
    expect(run.result).toBe("tests_failed");
    const day = await p.day();
    expect(day.day).toBe("2026-03-10");
    expect({ retry: day.retryMs, flaky: day.flakyFailuresMs, quarantined: day.quarantinedFailuresMs, rerun: day.rerunMs }).toEqual({
      retry: 100,
      flaky: 100,
      quarantined: 25,
      rerun: 0,
    });
    expect(day.rerunsCount).toBe(0);
    expect(await p.testCosts()).toEqual({
      retried: { retry: 100, flaky: 0, quarantined: 0, day: "2026-03-10" },
      flaky: { retry: 0, flaky: 100, quarantined: 0, day: "2026-03-10" },
      quarantined: { retry: 0, flaky: 0, quarantined: 25, day: "2026-03-10" },
    });

    // A second run the same day adds to the same rows.
    await p.upload([pass("retried", 5, [failedTry(7)]), fail("flaky", 3)], { commit_sha: "c".repeat(40) });
    const after = await p.day();
    expect([after.retryMs, after.flakyFailuresMs, after.quarantinedFailuresMs]).toEqual([107, 103, 25]);
    const costs = await p.testCosts();
    expect([costs.retried!.retry, costs.flaky!.flaky]).toEqual([107, 103]);
  });

  it("a flaky test quarantined counts once, as quarantined; a retried case of a quarantined test counts as a retry", async () => {
    const p = await costProject();
    await p.upload([pass("both"), pass("retried")], { commit_sha: "d".repeat(40) });
    for (const name of ["both", "retried"]) {
      await h.db
        .update(tests)
        .set({ health: "flaky" })
        .where(eq(tests.id, await p.testId(name)));
      const res = await h.post(`/api/v1/tests/${await p.testId(name)}/quarantine`, p.apiKey, { reason: "flake", duration: "1d" });
      expect(res.status).toBe(200);
    }
    await p.upload([fail("both", 40), pass("retried", 10, [failedTry(12)])], { commit_sha: "e".repeat(40) });
    const day = await p.day();
    expect([day.retryMs, day.flakyFailuresMs, day.quarantinedFailuresMs]).toEqual([12, 0, 40]);
  });

  it("a re-run after a build that failed only by a quarantined test counts", async () => {
    const p = await costProject();
    await p.upload([pass("muted"), pass("steady")], { commit_sha: "4".repeat(40) });
    const res = await h.post(`/api/v1/tests/${await p.testId("muted")}/quarantine`, p.apiKey, { reason: "muted", duration: "7d" });
    expect(res.status).toBe(200);
    await p.upload([fail("muted", 15), pass("steady")], { commit_sha: "5".repeat(40), build_id: "1", duration_ms: 300 });
    await p.upload([pass("muted"), pass("steady")], { commit_sha: "5".repeat(40), build_id: "2", duration_ms: 250 });
    const day = await p.day();
    expect([day.quarantinedFailuresMs, day.rerunMs, day.rerunsCount]).toEqual([15, 250, 1]);
  });

  it("a re-run of a commit whose previous run failed only by flaky or quarantined tests adds its duration; other runs of the commit do not", async () => {
    const p = await costProject();
    const sha = "f".repeat(40);
    await p.upload([pass("flaky"), pass("steady")], { commit_sha: "0".repeat(40) });
    await h.db
      .update(tests)
      .set({ health: "flaky" })
      .where(eq(tests.id, await p.testId("flaky")));

    // Build 1 fails only by the flaky test (the run keeps that count); its re-run (build 2) passes: the re-run's 900 ms count.
    const first = await p.upload([fail("flaky", 20), pass("steady")], { commit_sha: sha, build_id: "1", duration_ms: 1_000 });
    const [row] = await h.db
      .select()
      .from(testRuns)
      .where(and(eq(testRuns.projectId, p.project.id), eq(testRuns.number, first.number)));
    expect([row!.failedCount, row!.flakyFailuresCount, row!.quarantinedFailuresCount]).toEqual([1, 1, 0]);
    await p.upload([pass("flaky"), pass("steady")], { commit_sha: sha, build_id: "2", duration_ms: 900 });
    let day = await p.day();
    expect([day.rerunMs, day.rerunsCount]).toEqual([900, 1]);

    // Another shard of build 2 (same build id) re-runs build 1 too; another variant (other tags) re-runs nothing.
    await p.upload([pass("flaky"), pass("steady")], { commit_sha: sha, build_id: "2", duration_ms: 800 });
    await p.upload([pass("flaky"), pass("steady")], { commit_sha: sha, build_id: "3", duration_ms: 700, tags: ["e2e"] });
    day = await p.day();
    expect([day.rerunMs, day.rerunsCount]).toEqual([1_700, 2]);

    // A build of two shards, one failing by the flaky test: its second shard is not a re-run, the next build is.
    const sharded = "3".repeat(40);
    await p.upload([fail("flaky", 20)], { commit_sha: sharded, build_id: "10", duration_ms: 500 });
    await p.upload([pass("steady")], { commit_sha: sharded, build_id: "10", duration_ms: 400 });
    day = await p.day();
    expect([day.rerunMs, day.rerunsCount]).toEqual([1_700, 2]);
    await p.upload([pass("flaky")], { commit_sha: sharded, build_id: "11", duration_ms: 300 });
    day = await p.day();
    expect([day.rerunMs, day.rerunsCount]).toEqual([2_000, 3]);

    // A commit whose run failed by a genuine (new) failure as well: its re-run is not flakiness's.
    const other = "1".repeat(40);
    await p.upload([fail("flaky", 20), fail("steady", 5)], { commit_sha: other, build_id: "4", duration_ms: 1_000 });
    await p.upload([pass("flaky"), pass("steady")], { commit_sha: other, build_id: "5", duration_ms: 600 });
    day = await p.day();
    expect([day.rerunMs, day.rerunsCount]).toEqual([2_000, 3]);

    // A re-run that fails by the flaky test again counts, and so does the re-run after it; a run without a duration counts 0 ms.
    const third = "2".repeat(40);
    await p.upload([fail("flaky", 20), pass("steady")], { commit_sha: third, build_id: "6", duration_ms: 1_000 });
    await p.upload([fail("flaky", 20), pass("steady")], { commit_sha: third, build_id: "7", duration_ms: 300 });
    await p.upload(
      [
        { ...pass("flaky"), duration_ms: null },
        { ...pass("steady"), duration_ms: null },
      ],
      { commit_sha: third, build_id: "8" },
    );
    day = await p.day();
    expect([day.rerunMs, day.rerunsCount]).toEqual([2_300, 5]);
    // The flaky test's failures: builds 1, 10, 4, 6 and 7 (beside a genuine failure, it still costs its time).
    expect(day.flakyFailuresMs).toBe(100);
  });
});

describe("reading it", () => {
  /** Statements sent while `work` runs, once the queue is idle (nothing else runs meanwhile). */
  async function statementsOf(work: () => Promise<unknown>): Promise<string[]> {
    await h.queue.idle();
    const client = (h.db as unknown as { $client: { query: (...args: unknown[]) => Promise<unknown> } }).$client;
    const original = client.query;
    const seen: string[] = [];
    client.query = function (this: unknown, ...args: unknown[]) {
      const first = args[0];
      seen.push(typeof first === "string" ? first : String((first as { text?: string }).text));
      return original.apply(this, args);
    };
    try {
      await work();
    } finally {
      client.query = original;
    }
    return seen;
  }

  it("GET …/flakiness_cost is two statements over 90 days or by default, and so is a test's, with a warm key", async () => {
    const p = await costProject();
    await p.upload([pass("retried", 5, [failedTry(9)])], { commit_sha: "9".repeat(40) });
    const base = `/api/v1/projects/${p.project.id}/flakiness_cost`;
    expect((await h.get(base, p.apiKey)).body.totals.retry_ms).toBe(9);
    const test = `/api/v1/tests/${await p.testId("retried")}/flakiness_cost?from=2025-12-11&to=2026-03-10`;
    for (const path of [`${base}?from=2025-12-11&to=2026-03-10`, base, test]) {
      const statements = await statementsOf(async () => expect((await h.get(path, p.apiKey)).status).toBe(200));
      expect(statements, path).toHaveLength(2);
      expect(statements[0], path).toContain("data_version");
    }
  });
});
