/**
 * The retention sweep (src/services/runs/retention-sweep.ts, docs/retention.md): cases deleted at
 * their project's retention (exactly at the boundary: a run from before the first kept midnight
 * goes, one from it stays), a project's own retention, payloads of runs left pending, summaries
 * kept until SUMMARY_RETENTION_DAYS except the runs an alert event refers to, rollups past it, and
 * every sweep bounded by its batches. The database is shared with other files: every assertion
 * reads this file's projects only, and sweeps run until they find nothing (other files' rows too).
 */
import { and, eq, inArray, isNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  projectDailyRollups,
  projects,
  runVerdicts,
  testCases,
  testRollupProgress,
  testRollups,
  testRuns,
  testSuites,
  uploadPayloads,
} from "../../../src/db/schema";
import { keptFrom } from "../../../src/lib/retention";
import { type RetentionSweepOptions, sweepRetention } from "../../../src/services/runs/retention-sweep";
import { type Report, completeTestRun } from "../../../src/services/runs/test-runs";
import { captureLogger, createHarness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

const DAY = 86_400_000;
const RETENTION = { days: 10, summaryDays: 30 };

const report = (cases: number, failing = 0): Report => ({
  suites: [
    {
      name: "suite",
      cases: Array.from({ length: cases }, (_, i) => ({
        name: `case ${i}`,
        status: i < failing ? ("failed" as const) : ("passed" as const),
        durationMs: 5,
        failureMessage: i < failing ? "boom" : null,
      })),
    },
  ],
});

const sweepDeps = () => ({ db: h.db, clock: h.clock, logger: captureLogger([]), retention: RETENTION });

/**
 * Sweeps until a sweep finds nothing left to do. Unpaced: the pause after each batch is for the
 * uploads of a live service, and here the sweeps also go through what earlier files of this
 * worker left in its database (thousands of cases since the large-run tests), which paced took
 * longer than a test may.
 */
async function sweepAll(options: RetentionSweepOptions = {}): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const counts = await sweepRetention(sweepDeps(), { pauseFactor: 0, ...options });
    if (Object.values(counts).every((n) => n === 0)) return;
  }
  throw new Error("the sweeps never ended");
}

const casesOf = async (runId: number) =>
  (await h.db.select({ id: testCases.id }).from(testCases).where(eq(testCases.testRunId, runId))).length;
const runOf = async (runId: number) => (await h.db.select().from(testRuns).where(eq(testRuns.id, runId)))[0];

/** A project whose runs arrive at the given instants (ms), each with `cases` cases. */
async function projectWithRuns(instants: number[], cases = 3) {
  const { organization } = await h.newOrganization();
  const { project, alertIds } = await h.newProject(organization.id);
  const runs = [];
  for (const at of instants) {
    h.clock.set(at);
    runs.push(await h.newRun(project.id, { report: report(cases, 1) }));
  }
  return { project, alertIds, runs };
}

describe("cases past retention", () => {
  it("deletes a run's cases from before the first kept midnight, keeps those from it, and keeps the run's summary", async () => {
    const now = Date.parse("2030-06-20T15:00:00Z");
    const boundary = keptFrom(new Date(now), RETENTION.days).getTime();
    expect(new Date(boundary).toISOString()).toBe("2030-06-10T00:00:00.000Z");
    const { project, runs } = await projectWithRuns([boundary - 1, boundary]);
    const [before, at] = runs;
    const storedCases = async () =>
      (await h.db.select({ stored: projects.storedCasesCount }).from(projects).where(eq(projects.id, project.id)))[0]!.stored;
    expect(await storedCases()).toBe(6);
    h.clock.set(now);
    await sweepAll();
    expect(await casesOf(before!.id)).toBe(0);
    expect(await casesOf(at!.id)).toBe(3);
    const gone = await runOf(before!.id);
    expect(gone).toMatchObject({ status: "processed", testsCount: 3, failedCount: 1 });
    expect(gone!.casesDeletedAt).toEqual(new Date(now));
    expect((await runOf(at!.id))!.casesDeletedAt).toBeNull();
    // What hangs off the cases goes with them; the quota's count follows.
    expect(await h.db.select().from(testSuites).where(eq(testSuites.testRunId, before!.id))).toHaveLength(0);
    expect(await h.db.select().from(testSuites).where(eq(testSuites.testRunId, at!.id))).toHaveLength(1);
    expect(await h.db.select().from(runVerdicts).where(eq(runVerdicts.testRunId, before!.id))).toHaveLength(0);
    expect(await storedCases()).toBe(3);
  });

  it("a project's own retention is used instead of the deployment's", async () => {
    const now = Date.parse("2030-07-20T12:00:00Z");
    const fiveDaysAgo = now - 5 * DAY;
    const own = await projectWithRuns([fiveDaysAgo]);
    const deployment = await projectWithRuns([fiveDaysAgo]);
    await h.db.update(projects).set({ retentionDays: 3 }).where(eq(projects.id, own.project.id));
    h.clock.set(now);
    await sweepAll();
    expect(await casesOf(own.runs[0]!.id)).toBe(0);
    expect(await casesOf(deployment.runs[0]!.id)).toBe(3);
  });

  it("a run left pending past retention is failed and its payload deleted", async () => {
    const now = Date.parse("2030-08-20T12:00:00Z");
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    h.clock.set(now - 11 * DAY);
    const pending = await h.newRun(project.id, { outcome: "pending" });
    await h.db
      .insert(uploadPayloads)
      .values({ testRunId: pending.id, format: "junit_xml", content: "<testsuite/>", createdAt: h.clock.now() });
    h.clock.set(now);
    await sweepAll();
    expect(await runOf(pending.id)).toMatchObject({ status: "failed" });
    expect((await runOf(pending.id))!.failureReason).toContain("retention (10 days)");
    expect(await h.db.select().from(uploadPayloads).where(eq(uploadPayloads.testRunId, pending.id))).toHaveLength(0);
  });
});

describe("summaries past SUMMARY_RETENTION_DAYS", () => {
  it("deletes runs and the days' rollups past it, keeps the runs alert events refer to and the summaries until then", async () => {
    const now = Date.parse("2030-10-20T12:00:00Z");
    const { project, alertIds, runs } = await projectWithRuns([now - 40 * DAY, now - 35 * DAY, now - 20 * DAY]);
    const [old, alerted, recent] = runs;
    const event = await h.newEvent(alertIds.failure_rate_spike!, alerted!.id);
    expect(event).toBeTruthy();
    h.clock.set(now);
    await sweepAll();
    const left = await h.db.select().from(testRuns).where(eq(testRuns.projectId, project.id));
    expect(left.map((run) => run.id).sort()).toEqual([alerted!.id, recent!.id].sort());
    expect(old).toBeTruthy();
    // Both kept runs are past RETENTION_DAYS: summaries only.
    expect(left.every((run) => run.casesDeletedAt !== null)).toBe(true);
    const days = await h.db
      .select({ day: projectDailyRollups.day })
      .from(projectDailyRollups)
      .where(eq(projectDailyRollups.projectId, project.id));
    expect(days.map((d) => d.day).sort()).toEqual([new Date(now - 20 * DAY).toISOString().slice(0, 10)]);
    // The tests' days were rolled up (every day before today), then their periods wholly before the summaries' retention deleted.
    const [progress] = await h.db.select().from(testRollupProgress).where(eq(testRollupProgress.projectId, project.id));
    expect(progress!.day).toBe(new Date(now).toISOString().slice(0, 10));
    const periods = await h.db.select({ period: testRollups.period }).from(testRollups).where(eq(testRollups.projectId, project.id));
    const firstKept = Math.floor(keptFrom(new Date(now), RETENTION.summaryDays).getTime() / DAY / 32);
    expect(periods.length).toBeGreaterThan(0);
    expect(periods.every((p) => p.period >= firstKept)).toBe(true);
  });
});

describe("the tests' daily figures and the cases' deletion", () => {
  it("a day's cases go only once it is rolled up, and a day whose cases went is not rolled again for a late run", async () => {
    const arrival = Date.parse("2031-05-10T12:00:00Z");
    const { project, runs } = await projectWithRuns([arrival], 3);
    const progress = async () => (await h.db.select().from(testRollupProgress).where(eq(testRollupProgress.projectId, project.id)))[0]!;
    h.clock.set(arrival + 12 * DAY);
    await sweepAll();
    expect(await casesOf(runs[0]!.id)).toBe(0);
    const today = new Date(arrival + 12 * DAY).toISOString().slice(0, 10);
    expect(await progress()).toMatchObject({ day: today, casesDeletedBefore: "2031-05-11" });
    // A run of that day processed now: its cases are stored, but its day keeps the figures it was rolled up with.
    h.clock.set(arrival + 60_000);
    const late = await h.newRun(project.id, { outcome: "pending" });
    h.clock.set(arrival + 12 * DAY + 60_000);
    await completeTestRun(h.storeDeps, late.id, report(3, 0));
    expect((await progress()).day).toBe(today);
  });
});

describe("bounded", () => {
  it("a sweep runs at most its batches of at most its rows, and the next goes on where it stopped", async () => {
    const now = Date.parse("2031-01-20T12:00:00Z");
    const { runs } = await projectWithRuns([now - 12 * DAY], 25);
    const run = runs[0]!;
    h.clock.set(now);
    // Other files' rows are swept too: what is bounded is the sweep's work, whatever its share of this run.
    const first = await sweepRetention(sweepDeps(), { batchRows: 5, maxBatches: 4 });
    expect(first.cases).toBeLessThanOrEqual(5 * 4);
    expect(first.packed + first.cases).toBeLessThanOrEqual(5 * 4);
    await sweepAll({ batchRows: 5, maxBatches: 4 });
    expect(await casesOf(run.id)).toBe(0);
    const [marked] = await h.db
      .select({ id: testRuns.id })
      .from(testRuns)
      .where(and(inArray(testRuns.id, [run.id]), isNull(testRuns.casesDeletedAt)));
    expect(marked).toBeUndefined();
  });

  it("a run whose cases are deleted over several batches is marked only once none is left", async () => {
    const arrival = Date.parse("2031-03-10T12:00:00Z");
    const { runs } = await projectWithRuns([arrival], 12);
    const run = runs[0]!;
    // First everything else is swept (other files' rows too), while this run is within retention.
    h.clock.set(arrival + 5 * DAY);
    await sweepAll();
    expect(await casesOf(run.id)).toBe(12);
    h.clock.set(arrival + 12 * DAY);
    // Two batches: the packing (nothing left) and 5 of the run's cases.
    const expectAfterSweep = async (cases: number, marked: boolean) => {
      await sweepRetention(sweepDeps(), { batchRows: 5, maxBatches: 2 });
      expect(await casesOf(run.id)).toBe(cases);
      expect((await runOf(run.id))!.casesDeletedAt !== null).toBe(marked);
    };
    await expectAfterSweep(7, false);
    await expectAfterSweep(2, false);
    await expectAfterSweep(0, true);
  });
});
