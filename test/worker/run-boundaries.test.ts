/**
 * The Worker's queue consumer stores runs with BEGIN and COMMIT folded into the transaction's
 * first and last statements (the Neon driver's clients fold them: src/db/transaction-boundaries.ts),
 * their values written as literals. Names and messages that would end a naively quoted literal are
 * stored as reported; a report that turns out unreadable after cases were sent fails its run with
 * nothing of it written.
 */
import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testCases, testSuites, tests } from "../../src/db/schema";
import type { RunMessage } from "../../src/ingest/run-queue";
import { recordTestRunArrival } from "../../src/services/runs/test-runs";
import { AWKWARD } from "../support/awkward-text";
import worker from "./support/worker-entry";
import { type Harness, createHarness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

async function deliver(testRunId: number) {
  const batch = createMessageBatch<RunMessage>("ci-analytics-runs", [
    { id: "m0", timestamp: new Date(), attempts: 1, body: { testRunId } },
  ]);
  const ctx = createExecutionContext();
  await worker.queue!(batch, env, ctx);
  return getQueueResult(batch, ctx);
}

describe("the Worker's consumer, storing with folded transaction boundaries", () => {
  it("stores a report whose names hold quotes, backslashes, $$ and ;commit; as reported", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const cases = AWKWARD.map((text, i) => ({
      name: `${text} #${i}`,
      classname: text,
      status: i === 4 ? "failed" : "passed",
      duration_ms: i,
      ...(i === 4 ? { failure_message: `expected ${text}` } : {}),
    }));
    const content = JSON.stringify({ suites: [{ name: `suite ${AWKWARD[5]}`, cases }] });
    const { run } = await recordTestRunArrival({ db: h.db, clock: h.clock }, project.id, {}, { format: "json", content });
    expect((await deliver(run.id)).explicitAcks).toEqual(["m0"]);
    expect(await h.runRow(run.id)).toMatchObject({ status: "processed", testsCount: AWKWARD.length, failedCount: 1 });
    const stored = await h.db.select().from(testCases).where(eq(testCases.testRunId, run.id)).orderBy(testCases.durationMs);
    expect(stored.map((c) => [c.name, c.classname, c.failureMessage])).toEqual(
      cases.map((c) => [c.name, c.classname, c.failure_message ?? null]),
    );
    expect((await h.db.select().from(testSuites).where(eq(testSuites.testRunId, run.id))).map((s) => s.name)).toEqual([
      `suite ${AWKWARD[5]}`,
    ]);
    expect((await h.db.select().from(tests).where(eq(tests.projectId, project.id))).map((t) => t.name).sort()).toEqual(
      cases.map((c) => c.name).sort(),
    );
  });

  it("a report found unreadable after its first suite's cases were sent fails its run, nothing of it written", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const testcases = (suite: string, n: number) =>
      Array.from({ length: n }, (_, i) => `<testcase classname="${suite}" name="t${i} &apos;;commit;" time="0.001"/>`).join("");
    // The first suite (1,200 cases, more than one chunk) is complete and stored; the second ends mid-element.
    const content = `<testsuites><testsuite name="a">${testcases("a", 1_200)}</testsuite><testsuite name="b">${testcases("b", 10)}<testcase name="`;
    const { run } = await recordTestRunArrival({ db: h.db, clock: h.clock }, project.id, {}, { format: "junit_xml", content });
    expect((await deliver(run.id)).explicitAcks).toEqual(["m0"]);
    expect((await h.runRow(run.id)).status).toBe("failed");
    expect(await h.db.$count(testCases, eq(testCases.testRunId, run.id))).toBe(0);
    expect(await h.db.$count(testSuites, eq(testSuites.testRunId, run.id))).toBe(0);
    expect(await h.db.$count(tests, eq(tests.projectId, project.id))).toBe(0);
  });
});
