/**
 * storeTestRun's first and last statements are written with their values as literals, so that
 * BEGIN and COMMIT travel with them (src/db/transaction-boundaries.ts; on Postgres the pool's
 * clients fold them, on PGlite the statements run inlined on their own). Names, messages and
 * texts that would end a naively quoted literal are stored exactly as reported, in the cases,
 * the suites, the tests' rows and the failure groups; and a report that turns out unreadable
 * after cases were already sent leaves nothing written, the run still pending.
 */
import { eq, inArray } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failureGroups, testCases, testSuites, tests, uploadPayloads } from "../../../src/db/schema";
import { ReportError } from "../../../src/ingest/report";
import { type Report, type ReportCase, completeTestRun, recordTestRunArrival, storeTestRun } from "../../../src/services/runs/test-runs";
import { AWKWARD } from "../../support/awkward-text";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

/** A case per awkward text, in its name, classname, file, message and text; every other one failing. */
const awkwardCases = (): ReportCase[] =>
  AWKWARD.map((text, i) => ({
    name: `${text} #${i}`,
    classname: text,
    file: `${text}.ts`,
    status: i % 2 === 0 ? ("failed" as const) : ("passed" as const),
    durationMs: i,
    ...(i % 2 === 0 ? { failureMessage: `expected ${text}`, failureText: `at ${text}\n  at line ${i}` } : {}),
    systemOut: text,
  }));

describe("storing a run whose report holds awkward text", () => {
  it("stores every name, message and text as reported, the run processed", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const report: Report = { suites: AWKWARD.slice(0, 3).map((name, i) => ({ name, cases: i === 0 ? awkwardCases() : [] })) };
    // Twice: the second run updates the tests' rows the first created (the last statement's writes).
    for (let attempt = 0; attempt < 2; attempt++) {
      h.clock.advance(60_000);
      const { run } = await recordTestRunArrival({ db: h.db, clock: h.clock }, project.id);
      const processed = await completeTestRun(h.storeDeps, run.id, report);
      expect(processed).toMatchObject({ status: "processed", testsCount: AWKWARD.length, failedCount: Math.ceil(AWKWARD.length / 2) });
      const cases = await h.db.select().from(testCases).where(eq(testCases.testRunId, run.id)).orderBy(testCases.durationMs);
      expect(cases.map((c) => [c.name, c.classname, c.file, c.failureMessage, c.failureText, c.systemOut])).toEqual(
        awkwardCases().map((c) => [c.name, c.classname, c.file, c.failureMessage ?? null, c.failureText ?? null, c.systemOut]),
      );
      const suites = await h.db.select().from(testSuites).where(eq(testSuites.testRunId, run.id)).orderBy(testSuites.number);
      expect(suites.map((s) => s.name)).toEqual(AWKWARD.slice(0, 3));
    }
    const stored = await h.db.select().from(tests).where(eq(tests.projectId, project.id));
    expect(stored.map((t) => [t.name, t.classname, t.file, t.suite, t.executionsCount]).sort()).toEqual(
      awkwardCases()
        .map((c) => [c.name, c.classname, c.file, AWKWARD[0], 2])
        .sort(),
    );
    const groups = await h.db.select().from(failureGroups).where(eq(failureGroups.projectId, project.id));
    expect(groups.map((g) => g.sampleMessage).sort()).toEqual(
      awkwardCases()
        .filter((c) => c.failureMessage)
        .map((c) => c.failureMessage)
        .sort(),
    );
  });
});

describe("a report found unreadable after cases were sent", () => {
  it("leaves nothing written: no cases, suites or tests; the run pending with its payload", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const { run } = await recordTestRunArrival(
      { db: h.db, clock: h.clock },
      project.id,
      {},
      { format: "junit_xml", content: "<testsuite/>" },
    );
    // More cases than one chunk: the first chunk's insert is under way before the report fails.
    const many = (from: number) =>
      Array.from({ length: 1_500 }, (_, i) => ({
        name: `${AWKWARD[i % AWKWARD.length]} ${from + i}`,
        status: "passed" as const,
        durationMs: 1,
      }));
    const error = new ReportError("The report ends in the middle of a test case.");
    await expect(
      storeTestRun(h.storeDeps, run.id, async (emit) => {
        emit([{ name: "first", cases: many(0) }]);
        emit([{ name: "second", cases: many(1_500) }]);
        throw error;
      }),
    ).rejects.toBe(error);
    expect(await h.db.$count(testCases, eq(testCases.testRunId, run.id))).toBe(0);
    expect(await h.db.$count(testSuites, eq(testSuites.testRunId, run.id))).toBe(0);
    expect(await h.db.$count(tests, eq(tests.projectId, project.id))).toBe(0);
    expect((await h.runRow(run.id)).status).toBe("pending");
    expect(await h.db.$count(uploadPayloads, inArray(uploadPayloads.testRunId, [run.id]))).toBe(1);
    // The connection is not left in the failed transaction: the run is then processed as usual.
    expect(
      await completeTestRun(h.storeDeps, run.id, { suites: [{ name: "s", cases: [{ name: "ok", status: "passed", durationMs: 1 }] }] }),
    ).toMatchObject({
      status: "processed",
      testsCount: 1,
    });
  });
});
