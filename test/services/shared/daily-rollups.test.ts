/**
 * Daily rollups (src/services/daily-rollups.ts): the duration buckets and their accuracy, the
 * same buckets in Postgres (the migration's backfill), rows kept by run processing equal to a
 * recomputation from the runs after several processed runs over several days, the backfill equal
 * to what processing keeps, and the project overview's figures read from them.
 */
import { readFileSync } from "node:fs";
import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alerts, projectDailyRollups, projects, testRuns } from "../../../src/db/schema";
import {
  DURATION_BUCKET_BOUNDS,
  bucketValue,
  durationBucket,
  histogramPercentile,
  mergeHistograms,
  utcDay,
} from "../../../src/services/shared/daily-rollups";
import { projectOverview } from "../../../src/services/runs/project-overview";
import { type Report, completeTestRun, recordTestRunArrival } from "../../../src/services/runs/test-runs";
import { createHarness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

const DAY = 86_400_000;
type Status = "passed" | "failed" | "errored" | "skipped";

function report(durationMs: number | null, statuses: Status[], names?: string[]): Report {
  return {
    durationMs: durationMs ?? undefined,
    suites: [
      {
        name: "suite",
        cases: statuses.map((status, i) => ({
          name: names?.[i] ?? `case_${i}`,
          classname: "Shop",
          status,
          durationMs: 3,
          failureMessage: status === "failed" || status === "errored" ? "boom" : null,
        })),
      },
    ],
  };
}

/** The exact nearest-rank percentile. */
function exactPercentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(fraction * sorted.length)) - 1]!;
}

describe("duration buckets", () => {
  it("a bucket's value is within 1 ms plus 4.5 % of every duration in it below 22 days, exact up to 13 ms", () => {
    for (let ms = 0; ms <= 13; ms++) expect(bucketValue(durationBucket(ms))).toBe(ms);
    for (const ms of [14, 99, 100, 1_000, 4_321, 65_535, 65_536, 3_600_000, 1_969_251_187]) {
      expect(Math.abs(bucketValue(durationBucket(ms)) - ms)).toBeLessThanOrEqual(1 + 0.045 * ms);
    }
    for (let ms = 14; ms < 200_000; ms += 97) expect(Math.abs(bucketValue(durationBucket(ms)) - ms)).toBeLessThanOrEqual(1 + 0.045 * ms);
  });

  it("Postgres' width_bucket over the same bounds puts every duration in the same bucket (the backfill's)", async () => {
    const samples = [0, 1, 2, 13, 14, 15, 16, 99, 100, 1023, 1024, 1025, 65_536, 1_969_251_187, 1_969_251_188, 2_147_483_647];
    for (let i = 0; i < 300; i++) samples.push(Math.floor(1.07 ** i));
    const result = await h.db.execute(
      sql`select x, width_bucket(x, ${`{${DURATION_BUCKET_BOUNDS.join(",")}}`}::int[]) as b from unnest(${`{${samples.join(",")}}`}::int[]) as x`,
    );
    const rows = (result as unknown as { rows: { x: number; b: number }[] }).rows;
    expect(rows).toHaveLength(samples.length);
    for (const row of rows) expect(Number(row.b)).toBe(durationBucket(Number(row.x)));
  });

  it("percentiles of merged histograms are those of the exact durations, within the bucket's accuracy", () => {
    const durations = Array.from({ length: 501 }, (_, i) => 1_000 + ((i * 7919) % 90_000));
    const days = [durations.slice(0, 200), durations.slice(200)];
    const histograms = days.map((values) => {
      const histogram: Record<string, number> = {};
      for (const value of values) histogram[durationBucket(value)] = (histogram[durationBucket(value)] ?? 0) + 1;
      return histogram;
    });
    for (const fraction of [0.5, 0.95]) {
      const exact = exactPercentile(durations, fraction);
      expect(Math.abs(histogramPercentile(mergeHistograms(histograms), fraction)! - exact)).toBeLessThanOrEqual(1 + 0.045 * exact);
    }
    expect(histogramPercentile({}, 0.5)).toBeNull();
  });
});

describe("maintained by run processing", () => {
  it("after several processed runs over three days, each day's row equals a recomputation from the runs", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const plan: [number, number | null, Status[]][] = [
      [0, 1_200, ["passed", "passed", "skipped"]],
      [0, 95_000, ["passed", "failed"]],
      [0, null, ["errored", "skipped", "skipped"]],
      [1, 14, ["passed"]],
      [1, 14, ["passed", "passed"]],
      [2, 3_600_000, ["failed", "skipped", "passed", "passed"]],
    ];
    const start = h.clock.now().getTime();
    for (const [dayOffset, duration, statuses] of plan) {
      h.clock.set(start + dayOffset * DAY);
      await h.newRun(project.id, { meta: { branch: "main", commitSha: `c${dayOffset}` }, report: report(duration, statuses) });
    }
    // A pending and a failed run count nowhere.
    await h.newRun(project.id, { outcome: "pending" });
    await h.newRun(project.id, { outcome: "failed" });

    const runs = await h.db
      .select()
      .from(testRuns)
      .where(and(eq(testRuns.projectId, project.id), eq(testRuns.status, "processed")));
    const expected = new Map<string, Record<string, unknown>>();
    for (const run of runs) {
      const day = utcDay(run.createdAt);
      const row = (expected.get(day) ?? {
        runsCount: 0,
        passedRunsCount: 0,
        failedRunsCount: 0,
        erroredRunsCount: 0,
        durationsCount: 0,
        durationSumMs: 0,
        durationHistogram: {},
        casesCount: 0,
        skippedCasesCount: 0,
      }) as Record<string, any>;
      row.runsCount++;
      if (run.result === "tests_passed") row.passedRunsCount++;
      if (run.result === "tests_failed") row.failedRunsCount++;
      if (run.result === "tests_errored") row.erroredRunsCount++;
      if (run.durationMs !== null) {
        row.durationsCount++;
        row.durationSumMs += run.durationMs;
        const bucket = String(durationBucket(run.durationMs));
        row.durationHistogram[bucket] = (row.durationHistogram[bucket] ?? 0) + 1;
      }
      row.casesCount += run.testsCount;
      row.skippedCasesCount += run.skippedCount;
      expected.set(day, row);
    }
    const rows = await h.db
      .select()
      .from(projectDailyRollups)
      .where(eq(projectDailyRollups.projectId, project.id))
      .orderBy(projectDailyRollups.day);
    expect(rows.map((row) => row.day)).toEqual([...expected.keys()].sort());
    for (const row of rows) {
      // The cost of flakiness has its own file (test/services/runs/flakiness-cost.test.ts).
      const {
        projectId: _p,
        day,
        flakyTestsCount: _f,
        retryMs: _r,
        flakyFailuresMs: _ff,
        quarantinedFailuresMs: _q,
        rerunMs: _rm,
        rerunsCount: _rc,
        ...figures
      } = row;
      expect(figures).toEqual(expected.get(day));
    }
    expect(rows[0]).toMatchObject({
      runsCount: 3,
      passedRunsCount: 1,
      failedRunsCount: 1,
      erroredRunsCount: 1,
      durationsCount: 2,
      casesCount: 8,
      skippedCasesCount: 3,
    });
  });

  it("keeps the project's flaky-test count on the day: a test that passes and fails on one commit turns flaky", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const names = ["stable", "wobbles"];
    await h.newRun(project.id, { meta: { branch: "main", commitSha: "c1" }, report: report(100, ["passed", "passed"], names) });
    let [row] = await h.db.select().from(projectDailyRollups).where(eq(projectDailyRollups.projectId, project.id));
    expect(row!.flakyTestsCount).toBe(0);
    h.clock.advance(60_000);
    await h.newRun(project.id, { meta: { branch: "main", commitSha: "c1" }, report: report(100, ["passed", "failed"], names) });
    [row] = await h.db
      .select()
      .from(projectDailyRollups)
      .where(and(eq(projectDailyRollups.projectId, project.id), eq(projectDailyRollups.day, utcDay(h.clock.now()))));
    const [stored] = await h.db.select({ flaky: projects.flakyTestsCount }).from(projects).where(eq(projects.id, project.id));
    expect(stored!.flaky).toBe(1);
    expect(row!.flakyTestsCount).toBe(1);
  });

  it("a run that arrived before midnight and was processed after it counts on its arrival day; the flaky count it leaves goes to its processing day", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const names = ["stable", "wobbles"];
    h.clock.set(Date.parse("2026-03-10T12:00:00Z"));
    await h.newRun(project.id, { meta: { branch: "main", commitSha: "c1" }, report: report(100, ["passed", "passed"], names) });
    // Arrives at 23:59:30, processed at 00:00:30 the next day, and turns "wobbles" flaky.
    h.clock.set(Date.parse("2026-03-10T23:59:30Z"));
    const { run } = await recordTestRunArrival(h, project.id, { branch: "main", commitSha: "c1" });
    h.clock.set(Date.parse("2026-03-11T00:00:30Z"));
    await completeTestRun(h.storeDeps, run.id, report(200, ["passed", "failed"], names));
    const rows = await h.db
      .select()
      .from(projectDailyRollups)
      .where(eq(projectDailyRollups.projectId, project.id))
      .orderBy(projectDailyRollups.day);
    expect(rows.map((row) => [row.day, row.runsCount, row.durationsCount, row.flakyTestsCount])).toEqual([
      ["2026-03-10", 2, 2, 0],
      ["2026-03-11", 0, 0, 1],
    ]);
    expect(rows[1]!.durationHistogram).toEqual({});
  });

  it("the migration's backfill computes the same rows from the runs as processing kept", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const start = h.clock.now().getTime();
    for (let i = 0; i < 8; i++) {
      h.clock.set(start + Math.floor(i / 3) * DAY + i * 1000);
      await h.newRun(project.id, {
        meta: { branch: "main", commitSha: `c${i}` },
        report: report(500 + i * 37_000, i % 3 === 0 ? ["failed", "skipped"] : ["passed"]),
      });
    }
    const kept = await h.db
      .select()
      .from(projectDailyRollups)
      .where(eq(projectDailyRollups.projectId, project.id))
      .orderBy(projectDailyRollups.day);
    const migration = readFileSync(new URL("../../../drizzle/0019_project_pages.sql", import.meta.url), "utf8");
    const backfill = migration.split("--> statement-breakpoint").find((part) => part.includes("WITH runs AS"))!;
    // Rebuilt in a transaction rolled back afterwards: the other files' rows on a shared database are left as they were.
    const rebuilt = await h.db
      .transaction(async (tx) => {
        await tx.delete(projectDailyRollups);
        await tx.execute(sql.raw(backfill));
        const rows = await tx
          .select()
          .from(projectDailyRollups)
          .where(eq(projectDailyRollups.projectId, project.id))
          .orderBy(projectDailyRollups.day);
        throw Object.assign(new Error("rollback"), { rows });
      })
      .catch((error: { rows?: unknown }) => {
        if (!error.rows) throw error;
        return error.rows as typeof kept;
      });
    expect(rebuilt.map(({ flakyTestsCount: _f, ...row }) => row)).toEqual(kept.map(({ flakyTestsCount: _f, ...row }) => row));
  });
});

describe("the project overview", () => {
  it("headline figures over the last 30 days against the 30 before, daily series, latest runs", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const now = h.clock.now().getTime();
    // The previous window: 2 runs 40 days ago (1 passed), durations 10 s and 20 s.
    h.clock.set(now - 40 * DAY);
    await h.newRun(project.id, { meta: { branch: "main", commitSha: "a1" }, report: report(10_000, ["passed", "skipped"]) });
    await h.newRun(project.id, { meta: { branch: "main", commitSha: "a2" }, report: report(20_000, ["failed", "passed"]) });
    // The current window: 3 runs 2 days ago and today, all passed, one skipped case of 6.
    h.clock.set(now - 2 * DAY);
    await h.newRun(project.id, { meta: { branch: "main", commitSha: "b1" }, report: report(30_000, ["passed", "passed"]) });
    h.clock.set(now);
    await h.newRun(project.id, { meta: { branch: "main", commitSha: "b2" }, report: report(40_000, ["passed", "skipped"]) });
    await h.newRun(project.id, { meta: { branch: "main", commitSha: "b3" }, report: report(50_000, ["passed", "passed"]) });
    // Older than 60 days: outside both windows.
    h.clock.set(now - 70 * DAY);
    await h.newRun(project.id, { meta: { branch: "main", commitSha: "z1" }, report: report(1, ["failed"]) });
    h.clock.set(now);

    const [row] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    const overview = await projectOverview({ db: h.db, clock: h.clock }, row!);
    expect(overview.current).toMatchObject({ runs: 3, passRate: 1, skippedShare: 1 / 6, flakyTests: 0 });
    expect(Math.abs(overview.current.medianDurationMs! - 40_000)).toBeLessThanOrEqual(1 + 0.045 * 40_000);
    expect(overview.previous).toMatchObject({ runs: 2, passRate: 0.5, skippedShare: 0.25 });
    expect(Math.abs(overview.previous.medianDurationMs! - 10_000)).toBeLessThanOrEqual(1 + 0.045 * 10_000);

    expect(overview.days).toHaveLength(30);
    expect(overview.days[29]!.day).toBe(utcDay(h.clock.now()));
    expect(overview.days[29]).toMatchObject({ runs: 2, passed: 2, failed: 0 });
    expect(overview.days[27]).toMatchObject({ runs: 1, passed: 1 });
    expect(overview.days[28]).toMatchObject({ runs: 0, durationP50Ms: null });
    expect(overview.days.reduce((sum, day) => sum + day.runs, 0)).toBe(3);

    // Newest arrival first; the one from 70 days ago arrived last by number but first in time.
    expect(overview.latestRuns.map((run) => run.commitSha)).toEqual(["b3", "b2", "b1", "a2", "a1", "z1"]);
    expect(overview.openAlerts).toEqual([]);

    // An alert that tripped on the latest run is open; once snoozed it is not.
    const [alertRow] = await h.db
      .select()
      .from(alerts)
      .where(and(eq(alerts.projectId, project.id), eq(alerts.alertType, "failure_rate_spike")));
    const [latest] = await h.db
      .select()
      .from(testRuns)
      .where(and(eq(testRuns.projectId, project.id), eq(testRuns.commitSha, "b3")));
    await h.newEvent(alertRow!.id, latest!.id);
    const withAlert = await projectOverview({ db: h.db, clock: h.clock }, row!);
    expect(withAlert.openAlerts).toEqual([
      { id: alertRow!.id, alertType: "failure_rate_spike", eventsCount: 1, lastTriggeredAt: h.clock.now() },
    ]);
    await h.db
      .update(alerts)
      .set({ snoozedUntil: new Date(h.clock.now().getTime() + DAY) })
      .where(eq(alerts.id, alertRow!.id));
    expect((await projectOverview({ db: h.db, clock: h.clock }, row!)).openAlerts).toEqual([]);
  });
});
