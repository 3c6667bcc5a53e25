/**
 * The detection benchmark's in-memory health (src/simulator/health-replay.ts) is the service's:
 * a simulated stream stored run by run as JUnit XML by the service (arrival, then processing with
 * the alert checks as its after-processing step, as the queue consumer runs them: advanceTest's
 * statements, the flakiness check, markTestsFlaky) leaves the same health transitions, at the same
 * runs and with the same reasons, and the same final rows as replayHealth gives without a database.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { CHECKS } from "../../src/checks";
import { testHealthTransitions, testRuns, tests } from "../../src/db/schema";
import { runAlertChecks } from "../../src/services/alerts/alert-checks";
import { processTestRun } from "../../src/services/runs/run-processing";
import { type TestProgress, advanceTest, flagTestFlaky, markTestsFlaky } from "../../src/services/tests/tests-state";
import { recordTestRunArrival } from "../../src/services/runs/test-runs";
import { replayHealth } from "../../src/simulator/health-replay";
import { generateStream, toJUnitXml } from "../../src/simulator/streams";
import type { CaseStatus } from "../../src/lib/vocabulary";
import { type Harness, WEB_APP_URL, createHarness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

describe("replayHealth", () => {
  it("gives the service's health transitions and final health on an uploaded stream", async () => {
    // 100 runs of ~30 tests: same-commit re-runs (one of them turns a failure spike green: a
    // same-commit burst of 7 tests), flaky tests the check flags by their history, breakages of
    // 10 runs and more (broken, then healthy again).
    const stream = generateStream({
      seed: 35,
      runs: 100,
      tests: 30,
      knobs: { retryProbability: 0.5, inRunRetries: 0, breakagesPer100: 5 },
    });
    const replay = replayHealth(stream.runs);
    const kinds = new Set(replay.transitions.map((t) => `${t.from}>${t.to}:${t.by}`));
    expect([...kinds].sort()).toEqual([
      "broken>healthy:run",
      "flaky>healthy:run",
      "healthy>broken:run",
      "healthy>flaky:flakiness_check",
      "healthy>flaky:run",
    ]);

    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const logger = { info() {}, error() {} };
    const deps = {
      db: h.db,
      clock: h.clock,
      logger,
      webAppUrl: WEB_APP_URL,
      afterRunProcessed: async (run: Parameters<typeof runAlertChecks>[1]) =>
        void (await runAlertChecks({ db: h.db, clock: h.clock, logger, checks: CHECKS, webAppUrl: WEB_APP_URL }, run)),
    };
    for (const run of stream.runs) {
      // The checks read the run's arrival time (their 14-day windows): it arrives when it started.
      h.clock.set(Date.parse(run.created_at));
      const payload = { format: "junit_xml" as const, content: toJUnitXml(run) };
      const { run: arrived } = await recordTestRunArrival(
        deps,
        project.id,
        { branch: run.branch, commitSha: run.commit_sha, startedAt: new Date(run.created_at) },
        payload,
      );
      expect(arrived.number).toBe(run.number);
      expect(await processTestRun(deps, arrived.id, { finalAttempt: false, payload })).toBe("processed");
    }

    const nameOf = (key: string) => key.split("\u001f").slice(1).join(" › ");
    const stored = await h.db
      .select({
        classname: tests.classname,
        name: tests.name,
        from: testHealthTransitions.fromHealth,
        to: testHealthTransitions.toHealth,
        reason: testHealthTransitions.reason,
        run: testRuns.number,
      })
      .from(testHealthTransitions)
      .innerJoin(tests, eq(tests.id, testHealthTransitions.testId))
      .innerJoin(testRuns, eq(testRuns.id, testHealthTransitions.testRunId))
      .where(eq(tests.projectId, project.id));
    const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    const service = stored.map((t) => `${t.run} ${t.classname} › ${t.name}: ${t.from} → ${t.to} (${t.reason})`).sort(order);
    const replayed = replay.transitions.map((t) => `${t.run} ${nameOf(t.test)}: ${t.from} → ${t.to} (${t.reason})`).sort(order);
    expect(service).toEqual(replayed);

    const rows = await h.db
      .select({
        classname: tests.classname,
        name: tests.name,
        health: tests.health,
        streak: tests.passingStreak,
        failing: tests.failingStreak,
      })
      .from(tests)
      .where(eq(tests.projectId, project.id));
    expect(rows.map((r) => `${r.classname} › ${r.name}: ${r.health} ${r.failing}/${r.streak}`).sort(order)).toEqual(
      [...replay.rows].map(([key, row]) => `${nameOf(key)}: ${row.health} ${row.state.cf}/${row.state.cp}`).sort(order),
    );
  });

  it("flagTestFlaky does to a row what markTestsFlaky's statement does", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const statuses: CaseStatus[] = ["failed", "passed", "passed", "passed"];
    let progress: TestProgress | null = null;
    for (const [i, status] of statuses.entries()) {
      h.clock.advance(60_000);
      const meta = { branch: "main", commitSha: `c${i}` };
      const run = await h.newRun(project.id, {
        meta,
        report: { suites: [{ name: "s", cases: [{ name: "t", classname: "C", status, durationMs: 5 }] }] },
      });
      const execution = {
        name: "t",
        classname: "C",
        file: null,
        suite: "s",
        status,
        passed: status === "passed",
        failed: status !== "passed",
        durationMs: 5,
      };
      progress = advanceTest(progress, execution, {
        runId: run.id,
        number: run.number,
        createdAt: run.createdAt,
        commitSha: `c${i}`,
        onDefaultBranch: true,
      }).progress;
    }
    const [row] = await h.db.select().from(tests).where(eq(tests.projectId, project.id));
    expect([row!.health, row!.passingStreak]).toEqual([progress!.health, progress!.state.cp]);
    expect(progress!.state.cp).toBe(3);

    const run = await h.runRow(
      (await h.db.select({ id: testRuns.id }).from(testRuns).where(eq(testRuns.projectId, project.id)).orderBy(testRuns.id)).at(-1)!.id,
    );
    for (const attempt of [1, 2]) {
      const flagged = flagTestFlaky(progress!, run, "the flakiness check flagged it (history_flips)");
      await h.db.transaction((tx) =>
        markTestsFlaky(tx, { id: run.id, projectId: project.id, createdAt: run.createdAt }, [
          { testId: row!.id, reason: "the flakiness check flagged it (history_flips)" },
        ]),
      );
      const [after] = await h.db.select().from(tests).where(eq(tests.projectId, project.id));
      expect([after!.health, after!.passingStreak, after!.failingStreak, after!.healthChangedAt?.getTime()]).toEqual([
        flagged.progress.health,
        flagged.progress.state.cp,
        flagged.progress.state.cf,
        flagged.progress.healthChangedAt?.getTime(),
      ]);
      const transitions = await h.db.select().from(testHealthTransitions).where(eq(testHealthTransitions.testId, row!.id));
      // The first flag is a transition; flagging a flaky test again changes nothing.
      expect(transitions.map((t) => [t.fromHealth, t.toHealth])).toEqual([["healthy", "flaky"]]);
      expect(flagged.change === null).toBe(attempt === 2);
      progress = flagged.progress;
    }
  });
});
