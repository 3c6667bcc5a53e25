/**
 * Reads past retention (docs/retention.md): a run's suites and cases, a case, and an export window
 * from before the project's retention answer 410 `past_retention` in the envelope, naming the
 * retention and the first kept instant, before the sweep deleted them and after; the run's summary
 * stays readable; a project's own retention moves the boundary; the test_runs export follows
 * SUMMARY_RETENTION_DAYS (400 by default).
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects, testCases } from "../../../src/db/schema";
import { keptFrom } from "../../../src/lib/retention";
import { sweepRetention } from "../../../src/services/runs/retention-sweep";
import { type CallResult, type Harness, captureLogger, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const DAY = 86_400_000;

function expectPastRetention(res: CallResult, days: number, from: Date) {
  expect(res.status, res.text).toBe(410);
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  expect(res.body.error.code).toBe("past_retention");
  expect(res.body.error.message).toContain(`${days}-day retention`);
  expect(res.body.error.message).toContain(from.toISOString());
}

/** A project with one run `ageDays` days old (by the harness clock) and its case's id. */
async function oldRun(ageDays: number) {
  const org = await h.newOrganization();
  const { project } = await h.newProject(org.organization.id);
  const now = h.clock.now().getTime();
  h.clock.set(now - ageDays * DAY);
  const run = await h.newRun(project.id, {
    report: { suites: [{ name: "s", cases: [{ name: "old", status: "failed" as const, failureMessage: "x" }] }] },
  });
  h.clock.set(now);
  const [stored] = await h.db.select({ id: testCases.id }).from(testCases).where(eq(testCases.testRunId, run.id));
  return { key: org.apiKey, projectId: project.id as string, number: run.number, caseId: stored!.id };
}

describe("a run's cases past retention", () => {
  it("suites, cases and a case are 410 before and after the sweep; the run itself is a 200", async () => {
    const { key, projectId, number, caseId } = await oldRun(95);
    const from = keptFrom(h.clock.now(), 90);
    const runPath = `/api/v1/projects/${projectId}/test_runs/${number}`;
    const reads = [`${runPath}/test_suites`, `${runPath}/test_suites/1/test_cases`, `/api/v1/test_cases/${caseId}`];
    for (const path of reads) expectPastRetention(await h.get(path, key), 90, from);
    expect((await h.get(runPath, key)).status).toBe(200);

    await sweepRetention(
      { db: h.db, clock: h.clock, logger: captureLogger([]), retention: { days: 90, summaryDays: 400 } },
      { maxBatches: 500, pauseFactor: 0 },
    );
    // Deleted: the run's reads still say why; a case no longer stored is not found (its run is no longer known from its id).
    for (const path of reads.slice(0, 2)) expectPastRetention(await h.get(path, key), 90, from);
    expect((await h.get(`/api/v1/test_cases/${caseId}`, key)).status).toBe(404);
    const run = await h.get(runPath, key);
    expect(run.status).toBe(200);
    expect(run.body.tests_count).toBe(1);
  });

  it("within retention the same reads are 200, and a project's own retention moves the boundary", async () => {
    const { key, projectId, number, caseId } = await oldRun(20);
    expect((await h.get(`/api/v1/test_cases/${caseId}`, key)).status).toBe(200);
    expect((await h.get(`/api/v1/projects/${projectId}/test_runs/${number}/test_suites`, key)).status).toBe(200);
    await h.db.update(projects).set({ retentionDays: 10 }).where(eq(projects.id, projectId));
    expectPastRetention(await h.get(`/api/v1/test_cases/${caseId}`, key), 10, keptFrom(h.clock.now(), 10));
  });
});

describe("exports past retention", () => {
  it("a window wholly or partly before the cases' retention is 410 for test_cases; test_runs follows the summaries'", async () => {
    const { key, projectId } = await oldRun(1);
    const now = h.clock.now().getTime();
    const iso = (ms: number) => new Date(ms).toISOString();
    const exportOf = (resource: string, since: number, until: number) =>
      h.get(`/api/v1/projects/${projectId}/exports/${resource}?since=${iso(since)}&until=${iso(until)}`, key);
    const from = keptFrom(new Date(now), 90);
    expectPastRetention(await exportOf("test_cases", now - 120 * DAY, now - 100 * DAY), 90, from);
    expectPastRetention(await exportOf("test_cases", from.getTime() - 1, from.getTime() + 10 * DAY), 90, from);
    expect((await exportOf("test_cases", from.getTime(), from.getTime() + 10 * DAY)).status).toBe(200);
    expect((await exportOf("test_runs", now - 120 * DAY, now - 100 * DAY)).status).toBe(200);
    expectPastRetention(await exportOf("test_runs", now - 410 * DAY, now - 400 * DAY), 400, keptFrom(new Date(now), 400));
  });
});
