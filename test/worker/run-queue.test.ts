/**
 * The run queue on the Worker: the Worker's own `queue` handler (the Cloudflare Queue consumer of
 * wrangler.toml's RUN_QUEUE) acknowledges processed and failed runs, retries what may succeed
 * later, and on the final delivery fails the run instead of leaving it pending. Uploads through
 * SELF reach it through the real queue binding (test/routes/uploads run here too).
 */
import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRuns, uploadPayloads } from "../../src/db/schema";
import type { RunMessage } from "../../src/ingest/run-queue";
import { recordTestRunArrival } from "../../src/services/runs/test-runs";
import worker from "./support/worker-entry";
import { RUN_QUEUE_MAX_ATTEMPTS } from "../../src/worker/run-queue";
import { type Harness, createHarness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

async function deliver(messages: { body: unknown; attempts: number }[], workerEnv: typeof env = env) {
  const batch = createMessageBatch<RunMessage>(
    "ci-analytics-runs",
    messages.map((m, i) => ({ id: `m${i}`, timestamp: new Date(), attempts: m.attempts, body: m.body as RunMessage })),
  );
  const ctx = createExecutionContext();
  await worker.queue!(batch, workerEnv, ctx);
  return getQueueResult(batch, ctx);
}

async function pendingRun(projectId: string, content: string) {
  return (await recordTestRunArrival({ db: h.db, clock: h.clock }, projectId, {}, { format: "junit_xml", content })).run;
}

describe("the Worker's run queue consumer", () => {
  it("processes a run and acknowledges it; a redelivery of the same message is acknowledged without processing twice", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const run = await pendingRun(
      project.id,
      `<testsuite name="s"><testcase name="a"/><testcase name="b"><failure/></testcase></testsuite>`,
    );
    const first = await deliver([{ body: { testRunId: run.id }, attempts: 1 }]);
    expect(first.explicitAcks).toEqual(["m0"]);
    expect(first.retryMessages).toEqual([]);
    const row = await h.runRow(run.id);
    expect(row).toMatchObject({ status: "processed", testsCount: 2, failedCount: 1, result: "tests_failed" });
    expect(await h.db.select().from(uploadPayloads).where(eq(uploadPayloads.testRunId, run.id))).toEqual([]);

    const again = await deliver([{ body: { testRunId: run.id }, attempts: 2 }]);
    expect(again.explicitAcks).toEqual(["m0"]);
    expect((await h.runRow(run.id)).testsCount).toBe(2);
  });

  it("an unreadable report fails its run at once (no retry) with the parser's reason", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const run = await pendingRun(project.id, `<!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites>&a;</testsuites>`);
    const result = await deliver([{ body: { testRunId: run.id }, attempts: 1 }]);
    expect(result.explicitAcks).toEqual(["m0"]);
    const row = await h.runRow(run.id);
    expect(row.status).toBe("failed");
    expect(row.failureReason).toMatch(/DOCTYPE/);
  });

  it("a database failure is retried; on the final delivery the run is failed instead of left pending", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const run = await pendingRun(project.id, `<testsuite name="s"><testcase name="a"/></testsuite>`);
    // A constraint that only this run's suites break makes its storing transaction fail, as a
    // database fault would, without touching runs of tests running alongside.
    await h.db.execute(`alter table test_suites add constraint queue_test_no_suites check (test_run_id <> ${run.id}) not valid` as never);
    try {
      const early = await deliver([{ body: { testRunId: run.id }, attempts: 1 }]);
      expect(early.explicitAcks).toEqual([]);
      expect(early.retryMessages).toHaveLength(1);
      expect((await h.runRow(run.id)).status).toBe("pending");

      const last = await deliver([{ body: { testRunId: run.id }, attempts: RUN_QUEUE_MAX_ATTEMPTS }]);
      expect(last.explicitAcks).toEqual(["m0"]);
      const row = await h.runRow(run.id);
      expect(row.status).toBe("failed");
      expect(row.failureReason).toMatch(/could not be processed/);
      expect(row.testsCount).toBe(0);
    } finally {
      await h.db.execute(`alter table test_suites drop constraint queue_test_no_suites` as never);
    }
  });

  it("a database outage uses up no delivery: the message is queued again, delayed, counting its outages, even on the final delivery", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const run = await pendingRun(project.id, `<testsuite name="s"><testcase name="a"/></testsuite>`);
    // Nothing listens on port 1 of this machine: every connection is refused, as in an outage.
    const away = new URL(env.DATABASE_URL);
    away.port = "1";
    const sent: { body: unknown; delaySeconds?: number }[] = [];
    const recordingQueue = {
      send: async (body: unknown, options?: { delaySeconds?: number }) => void sent.push({ body, delaySeconds: options?.delaySeconds }),
    };
    const outageEnv = { ...env, DATABASE_URL: away.toString(), RUN_QUEUE: recordingQueue } as unknown as typeof env;

    const first = await deliver([{ body: { testRunId: run.id }, attempts: RUN_QUEUE_MAX_ATTEMPTS }], outageEnv);
    expect(first.explicitAcks).toEqual(["m0"]);
    expect(first.retryMessages).toEqual([]);
    expect(sent).toEqual([{ body: { testRunId: run.id, outages: 1 }, delaySeconds: 5 }]);

    const again = await deliver([{ body: { testRunId: run.id, outages: 6 }, attempts: 1 }], outageEnv);
    expect(again.explicitAcks).toEqual(["m0"]);
    expect(sent[1]).toEqual({ body: { testRunId: run.id, outages: 7 }, delaySeconds: 300 });
    // Not failed by the final delivery: still pending, and processed once the database is back.
    expect((await h.runRow(run.id)).status).toBe("pending");
    const back = await deliver([{ body: { testRunId: run.id, outages: 7 }, attempts: 1 }]);
    expect(back.explicitAcks).toEqual(["m0"]);
    expect(await h.runRow(run.id)).toMatchObject({ status: "processed", testsCount: 1 });
  });

  it("a malformed message is acknowledged and dropped", async () => {
    const result = await deliver([
      { body: { nope: true }, attempts: 1 },
      { body: { testRunId: 999_999_999 }, attempts: 1 },
    ]);
    expect(result.explicitAcks.sort()).toEqual(["m0", "m1"]);
    expect(await h.db.select().from(testRuns).where(eq(testRuns.id, 999_999_999))).toEqual([]);
  });
});
