/**
 * The Worker's cron runs the retention sweep (src/services/runs/retention-sweep.ts, docs/retention.md)
 * with the Worker's settings (RETENTION_DAYS unset: 90 days): a run's cases past retention are
 * deleted and the run marked, its summary kept; a run within retention keeps its cases.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { testCases } from "../../src/db/schema";
import worker from "./support/worker-entry";
import { type Harness, createHarness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const DAY = 86_400_000;

async function cron() {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: "*/10 * * * *", scheduledTime: h.clock.now().getTime() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

const casesOf = async (runId: number) =>
  (await h.db.select({ id: testCases.id }).from(testCases).where(eq(testCases.testRunId, runId))).length;

it("deletes the cases of a run past RETENTION_DAYS and marks it; keeps a recent run's", async () => {
  const { organization } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  const now = h.clock.now().getTime();
  const report = {
    suites: [
      {
        name: "s",
        cases: [
          { name: "a", status: "passed" as const },
          { name: "b", status: "passed" as const },
        ],
      },
    ],
  };
  h.clock.set(now - 95 * DAY);
  const old = await h.newRun(project.id, { report });
  h.clock.set(now - 5 * DAY);
  const recent = await h.newRun(project.id, { report });
  h.clock.set(now);
  expect(await casesOf(old.id)).toBe(2);

  // Other files' old rows may come first: the cron goes on until this run is done (each trigger is bounded).
  for (let i = 0; i < 50 && (await casesOf(old.id)) > 0; i++) await cron();
  expect(await casesOf(old.id)).toBe(0);
  expect(await casesOf(recent.id)).toBe(2);
  const row = await h.runRow(old.id);
  expect(row.casesDeletedAt).not.toBeNull();
  expect(row.testsCount).toBe(2);
});
