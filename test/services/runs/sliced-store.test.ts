/**
 * A run stored in slices on a database of one session (PGlite: src/services/runs/sliced-store.ts).
 * Reads made while it is stored get in between its slices, and never see it half-stored: the run
 * pending with nothing of it anywhere (cases, suites, tests' rows, transitions, failure groups,
 * the project's counts), or processed with all of it. A report that turns out unreadable leaves
 * nothing, its staged rows deleted. A test's row changed by another writer between the slices and
 * the final transaction is not overwritten: the run is stored again the usual way.
 * (The same results as the one-transaction paths: test/services/runs/large-run-processing.test.ts.)
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../../../src/db/rows";
import { ReportError, type ReportCase, type ReportSuite } from "../../../src/ingest/report";
import { storeTestRunInSlices } from "../../../src/services/runs/sliced-store";
import { recordTestRunArrival } from "../../../src/services/runs/test-runs";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const TESTS = 1_600;
/** Every 40th test fails in `run` when `failing`, with one of two messages (two failure groups). */
const suitesOf = (run: number, failing: boolean): ReportSuite[] =>
  Array.from({ length: 8 }, (_, s) => ({
    name: `suite ${s}`,
    durationMs: 100,
    cases: Array.from({ length: TESTS / 8 }, (_, i): ReportCase => {
      const n = s * (TESTS / 8) + i;
      return failing && n % 40 === 0
        ? { name: `t${n}`, classname: `app.S${s}`, status: "failed", durationMs: n % 17, failureMessage: `boom ${n % 2} in run ${run}` }
        : { name: `t${n}`, classname: `app.S${s}`, status: "passed", durationMs: n % 17 };
    }),
  }));

/** A source that hands the suites out one at a time, pausing (yielding) between them, as the parsers do. */
const sourceOf = (suites: ReportSuite[], failAfter?: number) => async (emit: (s: ReportSuite[]) => void, pause: () => Promise<void>) => {
  for (const [i, suite] of suites.entries()) {
    if (i === failAfter) throw new ReportError("The report ends in the middle of a test case.");
    emit([suite]);
    await pause();
  }
  return null;
};

type Seen = {
  status: string;
  cases: number;
  suites: number;
  staged: number;
  staged_tests: number;
  advanced: number;
  transitions: number;
  groups: number;
  tests_count: number;
  stored_cases: number;
};

/** The run and everything it touches, read by one statement (one snapshot). */
async function observe(runId: number): Promise<Seen> {
  const [row] = await rowsOf<Seen>(
    h.db.execute(sql`
      select r.status,
        (select count(*)::int from test_cases c where c.test_run_id = r.id) as cases,
        (select count(*)::int from test_suites s where s.test_run_id = r.id) as suites,
        (select count(*)::int from staged_test_cases c where c.test_run_id = r.id) as staged,
        (select count(*)::int from run_staging.tests t where t.staged_run_id = r.id) as staged_tests,
        (select count(*)::int from tests t where t.project_id = r.project_id and t.last_run_number = r.number) as advanced,
        (select count(*)::int from test_health_transitions x where x.test_run_id = r.id) as transitions,
        (select coalesce(sum(g.occurrences), 0)::int from failure_groups g where g.project_id = r.project_id) as groups,
        p.tests_count, p.stored_cases_count::int as stored_cases
      from test_runs r join projects p on p.id = r.project_id where r.id = ${runId}`),
  );
  return row!;
}

/** Stores the run in slices while reading it again and again; returns every reading. */
async function storeWhileObserving(runId: number, suites: ReportSuite[], meanwhile?: (seen: Seen) => Promise<void>) {
  let done = false;
  const seen: Seen[] = [];
  const observing = (async () => {
    while (!done) {
      const now = await observe(runId);
      seen.push(now);
      await meanwhile?.(now);
    }
  })();
  try {
    return { stored: await storeTestRunInSlices(h.storeDeps, runId, sourceOf(suites)), seen };
  } finally {
    done = true;
    await observing;
  }
}

async function projectWithFirstRun() {
  const { organization } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  h.clock.advance(60_000);
  const { run } = await recordTestRunArrival({ db: h.db, clock: h.clock }, project.id, { branch: "main", commitSha: "a".repeat(40) });
  expect((await storeTestRunInSlices(h.storeDeps, run.id, sourceOf(suitesOf(1, false))))?.status).toBe("processed");
  h.clock.advance(60_000);
  const second = await recordTestRunArrival({ db: h.db, clock: h.clock }, project.id, { branch: "main", commitSha: "b".repeat(40) });
  return { projectId: project.id as string, runId: second.run.id };
}

describe("a run stored in slices", () => {
  it("is read in between its slices, and never seen half-stored", async () => {
    const { runId } = await projectWithFirstRun();
    const { stored, seen } = await storeWhileObserving(runId, suitesOf(2, true));
    expect(stored).toMatchObject({ status: "processed", testsCount: TESTS, failedCount: TESTS / 40 });

    const before = {
      status: "pending",
      cases: 0,
      suites: 0,
      advanced: 0,
      transitions: 0,
      groups: 0,
      tests_count: TESTS,
      stored_cases: TESTS,
    };
    const after = {
      status: "processed",
      cases: TESTS,
      suites: 8,
      staged: 0,
      staged_tests: 0,
      advanced: TESTS,
      groups: TESTS / 40,
      tests_count: TESTS,
    };
    for (const reading of seen) {
      if (reading.status === "pending") expect(reading).toMatchObject(before);
      else expect(reading).toMatchObject({ ...after, stored_cases: 2 * TESTS });
    }
    // The readings got in while the run was under way: some saw its cases staged, some its tests' rows staged, none of it visible.
    const pending = seen.filter((reading) => reading.status === "pending");
    expect(pending.some((reading) => reading.staged > 0 && reading.staged < TESTS)).toBe(true);
    expect(pending.some((reading) => reading.staged_tests > 0)).toBe(true);
    expect(await observe(runId)).toMatchObject({ ...after, stored_cases: 2 * TESTS });
  });

  it("leaves nothing of a report found unreadable halfway, its staged rows deleted, the run pending", async () => {
    const { runId } = await projectWithFirstRun();
    await expect(storeTestRunInSlices(h.storeDeps, runId, sourceOf(suitesOf(2, true), 5))).rejects.toBeInstanceOf(ReportError);
    expect(await observe(runId)).toMatchObject({ status: "pending", cases: 0, suites: 0, staged: 0, staged_tests: 0, advanced: 0 });
    // Then stored whole.
    expect((await storeTestRunInSlices(h.storeDeps, runId, sourceOf(suitesOf(2, true))))?.status).toBe("processed");
    expect(await observe(runId)).toMatchObject({ status: "processed", cases: TESTS, staged: 0, staged_tests: 0, advanced: TESTS });
  });

  it("does not overwrite a test's row another writer changed meanwhile: the run is stored again, in one transaction", async () => {
    const { projectId, runId } = await projectWithFirstRun();
    let changed = false;
    const { stored } = await storeWhileObserving(runId, suitesOf(2, true), async (reading) => {
      // Once the tests' rows are being staged: one of them written by another writer of the tests' rows (a quarantine's reason).
      if (changed || reading.staged_tests === 0) return;
      changed = true;
      await h.db.execute(sql`update tests set quarantine_reason = 'written meanwhile' where project_id = ${projectId} and name = 't7'`);
    });
    expect(changed).toBe(true);
    expect(stored).toMatchObject({ status: "processed", testsCount: TESTS });
    expect(await observe(runId)).toMatchObject({ status: "processed", cases: TESTS, staged: 0, staged_tests: 0, advanced: TESTS });
    const [t7] = await rowsOf<{ quarantine_reason: unknown; executions_count: number }>(
      h.db.execute(sql`select quarantine_reason, executions_count from tests where project_id = ${projectId} and name = 't7'`),
    );
    expect(t7).toEqual({ quarantine_reason: "written meanwhile", executions_count: 2 });
  });
});
