/**
 * What storing a small run sends to Postgres through a folding client (as the Worker's and Node's
 * pools are; src/db/transaction-boundaries.ts): four messages, BEGIN with the run's opening and
 * the run's comparison with its base, COMMIT with the last write, also when the report's names hold text that would end a naively
 * quoted literal; the run stored as reported.
 *
 * Postgres only: collected only when the suite runs on Postgres (vitest.config.ts).
 */
import { eq } from "drizzle-orm";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testCases } from "../../../src/db/schema";
import type { Database } from "../../../src/db/types";
import { type Report, completeTestRun, recordTestRunArrival } from "../../../src/services/runs/test-runs";
import { AWKWARD } from "../../support/awkward-text";
import { type Harness, createHarness, testDatabaseUrl as theTestDatabaseUrl } from "../../support/harness";
import { recordingPool } from "../../support/recording-pool";

const testDatabaseUrl = await theTestDatabaseUrl();
if (!testDatabaseUrl) throw new Error("test-runs.boundaries.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");

let h: Harness;
let pool: pg.Pool;
let db: Database;
let sent: string[];
beforeAll(async () => {
  h = await createHarness();
  ({ pool, db, sent } = recordingPool(testDatabaseUrl));
});
afterAll(async () => {
  await pool?.end();
  await h?.close();
});

/** 20 cases in two suites, one failing, named after the awkward texts. */
const report = (): Report => ({
  suites: ["alpha", "beta"].map((suite, s) => ({
    name: `${suite} ${AWKWARD[s]}`,
    cases: Array.from({ length: 10 }, (_, i) => ({
      name: `${AWKWARD[(s * 10 + i) % AWKWARD.length]} ${i}`,
      classname: AWKWARD[i % AWKWARD.length],
      status: s === 0 && i === 3 ? ("failed" as const) : ("passed" as const),
      durationMs: 5 + i,
      ...(s === 0 && i === 3 ? { failureMessage: `expected ${AWKWARD[4]} to be ${AWKWARD[5]}` } : {}),
    })),
  })),
});

describe("storing a small run through a folding client", () => {
  it("sends four messages: BEGIN with the run's opening, the cases, the comparison with its base, COMMIT with the last write", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    // Twice: a new project's first run creates its tests, the second updates them.
    for (let attempt = 0; attempt < 2; attempt++) {
      h.clock.advance(60_000);
      const { run } = await recordTestRunArrival({ db: h.db, clock: h.clock }, project.id);
      sent.length = 0;
      const processed = await completeTestRun({ ...h.storeDeps, db }, run.id, report());
      expect(processed).toMatchObject({ status: "processed", testsCount: 20, failedCount: 1 });
      expect(sent).toHaveLength(4);
      expect(sent[0]).toMatch(/^begin;\n\s*with r as \(select \* from "test_runs" where id = E'\d+' for update\)/);
      expect(sent[1]).toMatch(/^\s*with cases as \(/);
      // The comparison (src/services/runs/run-comparison.ts): before the tests are advanced, so it reads their health as the run found it.
      expect(sent[2]).toMatch(/^\s*with r as \(select \* from "test_runs" where id = \$1\)/);
      expect(sent[3]).toMatch(/^\/\* then commit \*\/ [\s\S]*\n;\ncommit$/);
      const names = (await h.db.select({ name: testCases.name }).from(testCases).where(eq(testCases.testRunId, run.id)))
        .map((c) => c.name)
        .sort();
      expect(names).toEqual(
        report()
          .suites.flatMap((s) => s.cases.map((c) => c.name))
          .sort(),
      );
    }
  });
});
