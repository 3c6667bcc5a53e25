/**
 * A test's page beyond the retention of its cases (docs/retention.md): once the sweep deleted a
 * test's old cases, its page still charts those days, from the per-test rollups; the service
 * gives every day of the range, the old ones with their figures.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects, testCases, testRuns } from "../../src/db/schema";
import { utcDay } from "../../src/services/shared/daily-rollups";
import { sweepRetention } from "../../src/services/runs/retention-sweep";
import { HISTORY_DAYS, testDailyHistory } from "../../src/services/tests/test-daily-history";
import { captureLogger, createHarness } from "../support/harness";
import { adminAndMember } from "../support/project-page-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

const DAY = 86_400_000;

describe("the test page beyond retention", () => {
  it("charts the days whose cases the sweep deleted, from the daily figures", async () => {
    const people = await adminAndMember(h);
    await people.admin.post("/projects/new", { name: "History", description: "", defaultBranch: "" });
    const [project] = await h.db.select().from(projects).where(eq(projects.organizationId, people.organizationId));
    const now = h.clock.now().getTime();
    const ages = [120, 119, 100, 3];
    for (const [i, age] of ages.entries()) {
      h.clock.set(now - age * DAY);
      const status = i === 1 ? ("failed" as const) : ("passed" as const);
      await h.newRun(project!.id, {
        report: {
          suites: [{ name: "s", cases: [{ name: "checkout", classname: "Shop", status, durationMs: 200 + i, failureMessage: null }] }],
        },
      });
    }
    h.clock.set(now);
    await sweepRetention(
      { db: h.db, clock: h.clock, logger: captureLogger([]), retention: { days: 90, summaryDays: 400 } },
      { maxBatches: 500, pauseFactor: 0 },
    );
    const runs = await h.db.select({ id: testRuns.id }).from(testRuns).where(eq(testRuns.projectId, project!.id));
    const cases = await h.db
      .select({ id: testCases.testId })
      .from(testCases)
      .innerJoin(testRuns, eq(testRuns.id, testCases.testRunId))
      .where(eq(testRuns.projectId, project!.id));
    // The runs' summaries stay; only the recent run still has its case.
    expect(runs).toHaveLength(4);
    expect(cases).toHaveLength(1);
    const test = cases[0];

    const history = await testDailyHistory(
      { db: h.db, clock: h.clock, webAppUrl: "", organizationId: people.organizationId },
      { id: test!.id, projectId: project!.id },
    );
    expect(history.days).toHaveLength(HISTORY_DAYS);
    const withExecutions = history.days.filter((day) => day.executions > 0);
    expect(withExecutions.map((day) => day.day)).toEqual(ages.map((age) => utcDay(new Date(now - age * DAY))));
    expect(withExecutions.map((day) => day.failures)).toEqual([0, 1, 0, 0]);
    expect(history.retentionDays).toBe(90);

    const page = await people.member.get(`/projects/${project!.id}/tests/${test!.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain("Daily history");
    expect(page.text).toContain(`4 executions from ${history.from}`);
    // The day of the failure, 119 days ago, is a point of the chart with its figures.
    expect(page.text).toContain(`${utcDay(new Date(now - 119 * DAY))}: Passed 0, Failed or errored 1`);
  });
});
