/**
 * processTestRun with a payload handed over by the queue (the in-process queue gives the upload's
 * body to the first attempt): the same result as reading it back, and a redelivery of an already
 * processed run stays a no-op even though the payload comes along again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { testCases, uploadPayloads } from "../../../src/db/schema";
import { processTestRun } from "../../../src/services/runs/run-processing";
import { recordTestRunArrival } from "../../../src/services/runs/test-runs";
import { type Harness, WEB_APP_URL, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const report = (n: number) =>
  `<testsuite name="s">${Array.from({ length: n }, (_, i) => `<testcase classname="c" name="t${i}" time="0.01"${i % 3 ? "/>" : '><failure message="no"/></testcase>'}`).join("")}</testsuite>`;
const quiet = { info() {}, error() {} };

async function pendingRun(content: string) {
  const { organization } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  return (await recordTestRunArrival({ db: h.db, clock: h.clock }, project.id, {}, { format: "junit_xml", content })).run;
}

describe("a handed-over payload", () => {
  it("is processed as if read back: same counts, the stored payload deleted", async () => {
    const content = report(2_500);
    const handed = await pendingRun(content);
    const readBack = await pendingRun(content);
    const deps = { db: h.db, clock: h.clock, logger: quiet, webAppUrl: WEB_APP_URL };
    expect(await processTestRun(deps, handed.id, { finalAttempt: false, payload: { format: "junit_xml", content } })).toBe("processed");
    expect(await processTestRun(deps, readBack.id, { finalAttempt: false })).toBe("processed");
    const [a, b] = [await h.runRow(handed.id), await h.runRow(readBack.id)];
    expect([a.testsCount, a.failedCount, a.passedCount]).toEqual([2_500, 834, 1_666]);
    expect([b.testsCount, b.failedCount, b.passedCount]).toEqual([a.testsCount, a.failedCount, a.passedCount]);
    expect(await h.db.select().from(uploadPayloads).where(eq(uploadPayloads.testRunId, handed.id))).toEqual([]);
  });

  it("does not process a run twice when the message is delivered again", async () => {
    const content = report(1_200);
    const run = await pendingRun(content);
    const deps = { db: h.db, clock: h.clock, logger: quiet, webAppUrl: WEB_APP_URL };
    const attempt = { finalAttempt: false, payload: { format: "junit_xml" as const, content } };
    expect(await processTestRun(deps, run.id, attempt)).toBe("processed");
    expect(await processTestRun(deps, run.id, attempt)).toBe("already_done");
    expect(await h.db.$count(testCases, eq(testCases.testRunId, run.id))).toBe(1_200);
  });
});
