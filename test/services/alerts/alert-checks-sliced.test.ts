/**
 * A large run's alert checks on a database of one session (PGlite) run in slices
 * (runAlertChecksInSlices in src/services/alerts/alert-checks.ts): short statements, the run's new
 * entries staged, one short transaction at the end, the staged entries moved into place after it.
 * Each run of a simulated stream is checked first in one transaction that is rolled back (the
 * reference: the checks as they run on Postgres), then in slices, committed: both must leave the
 * same rows. A process killed mid-checks (here: every statement failing from some point on, so that
 * nothing is cleaned up) leaves the run's checks to do again with the same result, before or after
 * the slices' last transaction committed. Reads made between the slices never see a half-checked run.
 */
import { type SQL, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgDialect } from "drizzle-orm/pg-core";
import { CHECKS } from "../../../src/checks";
import { rowsOf } from "../../../src/db/rows";
import { hasSingleSession, markSingleSession } from "../../../src/db/single-session";
import type { Database } from "../../../src/db/types";
import { runAlertChecks } from "../../../src/services/alerts/alert-checks";
import { processTestRun } from "../../../src/services/runs/run-processing";
import { recordTestRunArrival, type TestRunRow } from "../../../src/services/runs/test-runs";
import { generateStream, toJUnitXml } from "../../../src/simulator/streams";
import { type Harness, WEB_APP_URL, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const logger = { info() {}, error() {} };
const dialect = new PgDialect();
/** Every run is checked as a large one, in chunks of 7 cases (a run of 40 tests: about six chunks a pass). */
const SLICED = { largeAbove: 0, chunkCases: 7 };

/** What the checks leave in the project, without the ids a rolled-back sequence moves on. */
async function checksOutcome(db: Database, projectId: string) {
  const rows = (query: SQL) => rowsOf<Record<string, unknown>>(db.execute(query));
  return {
    states: await rows(
      sql`select alert_type, state, detector_version, last_run_number, runs_checked from alert_check_states where project_id = ${projectId} order by alert_type`,
    ),
    events: await rows(sql`
      select a.alert_type, e.test_run_id, e.metadata, e.triggered_at from alert_events e join alerts a on a.id = e.alert_id
      where a.project_id = ${projectId} order by e.id`),
    alerts: await rows(sql`select alert_type, events_count from alerts where project_id = ${projectId} order by alert_type`),
    tests: await rows(sql`
      select t.id, e.state, t.health, t.health_changed_at, t.passing_streak from tests t left join test_check_states e on e.test_id = t.id
      where t.project_id = ${projectId} order by t.id`),
    project: await rows(sql`select quarantine_version, flaky_tests_count from projects where id = ${projectId}`),
    transitions: await rows(sql`
      select x.test_id, x.from_health, x.to_health, x.reason, x.test_run_id from test_health_transitions x join tests t on t.id = x.test_id
      where t.project_id = ${projectId} order by x.test_run_id, x.test_id, x.to_health`),
  };
}

/** What is staged (entries, commit marks) for the project's runs. */
async function staged(projectId: string) {
  const [row] = await rowsOf<{ entries: number; marks: number }>(
    h.db.execute(sql`select
      (select count(*)::int from staged_test_check_states s join test_runs r on r.id = s.test_run_id where r.project_id = ${projectId}) as entries,
      (select count(*)::int from committed_check_slices where project_id = ${projectId}) as marks`),
  );
  return row!;
}

class RolledBack extends Error {}

/** The checks of the run in one transaction, rolled back: what they leave. */
async function reference(projectId: string, run: TestRunRow) {
  let outcome: Awaited<ReturnType<typeof checksOutcome>> | null = null;
  await h.db
    .transaction(async (outer) => {
      await runAlertChecks({ db: outer, clock: h.clock, logger, checks: CHECKS, webAppUrl: WEB_APP_URL }, run);
      outcome = await checksOutcome(outer, projectId);
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  return outcome!;
}

/**
 * The database as a process that dies: its statements outside transactions fail from the one
 * `dies` says (counted, or matched by its SQL) on, and so do the transactions begun after that.
 */
function dying(dies: (text: string, count: number) => boolean): Database {
  let dead = false;
  let count = 0;
  const db = Object.create(h.db) as Database;
  db.execute = ((query: SQL) => {
    dead ||= dies(dialect.sqlToQuery(query).sql, ++count);
    return dead ? Promise.reject(new Error("killed")) : h.db.execute(query);
  }) as Database["execute"];
  db.transaction = ((work: Parameters<Database["transaction"]>[0]) =>
    dead ? Promise.reject(new Error("killed")) : h.db.transaction(work)) as Database["transaction"];
  markSingleSession(db);
  return db;
}

/** A project fed a simulated stream: each run processed, and `check` called with it (after its processing, instead of the checks). */
async function feed(runs: number, check: (projectId: string, run: TestRunRow, index: number) => Promise<void>) {
  const { organization } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  const stream = generateStream({ seed: 1, runs, tests: 40, knobs: { retryProbability: 0.5 } });
  const deps = { db: h.db, clock: h.clock, logger, webAppUrl: WEB_APP_URL };
  let failure: unknown = null;
  for (const [i, run] of stream.runs.entries()) {
    h.clock.set(Date.parse(run.created_at));
    const payload = { format: "junit_xml" as const, content: toJUnitXml(run) };
    const { run: arrived } = await recordTestRunArrival(
      deps,
      project.id,
      { branch: run.branch, commitSha: run.commit_sha, startedAt: new Date(run.created_at) },
      payload,
    );
    // Run processing logs what its hook throws and goes on: the first failure is thrown below.
    const hooked = {
      ...deps,
      afterRunProcessed: (stored: TestRunRow) => check(project.id, stored, i).catch((error: unknown) => void (failure ??= error)),
    };
    expect(await processTestRun(hooked, arrived.id, { finalAttempt: false, payload })).toBe("processed");
  }
  if (failure) throw failure;
  return project.id;
}

const checksDeps = (db: Database) => ({ db, clock: h.clock, logger, checks: CHECKS, webAppUrl: WEB_APP_URL });

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))("alert checks of a large run in slices (PGlite)", () => {
  it("runs on a database of one session", () => {
    expect(hasSingleSession(h.db)).toBe(true);
  });

  it("leave what the checks in one transaction leave, run after run, for every check", async () => {
    const tripped = new Set<unknown>();
    let compared = 0;
    const projectId = await feed(120, async (project, run) => {
      const expected = await reference(project, run);
      await runAlertChecks(checksDeps(h.db), run, SLICED);
      expect(await checksOutcome(h.db, project)).toEqual(expected);
      expect(await staged(project)).toEqual({ entries: 0, marks: 0 });
      compared++;
    });
    for (const event of (await checksOutcome(h.db, projectId)).events) tripped.add(event.alert_type);
    expect(compared).toBe(120);
    expect(tripped).toEqual(new Set(["test_flakiness", "failure_rate_spike", "skipped_test_count_creep"]));
  }, 240_000);

  it("leave the checks to do again, with the same result, when the process dies before their last transaction", async () => {
    let killed = 0;
    let leftStaged = 0;
    await feed(40, async (project, run, index) => {
      const expected = await reference(project, run);
      if (index % 3 === 2) {
        // Killed a few slices in: staged entries are left, and nothing else changed.
        const before = await checksOutcome(h.db, project);
        await expect(runAlertChecks(checksDeps(dying((_, count) => count > 8 + (index % 7))), run, SLICED)).rejects.toThrow("killed");
        expect(await checksOutcome(h.db, project)).toEqual(before);
        expect((await staged(project)).marks).toBe(0);
        if ((await staged(project)).entries > 0) leftStaged++;
        killed++;
      }
      await runAlertChecks(checksDeps(h.db), run, SLICED);
      expect(await checksOutcome(h.db, project)).toEqual(expected);
      expect(await staged(project)).toEqual({ entries: 0, marks: 0 });
    });
    expect(killed).toBe(13);
    expect(leftStaged).toBeGreaterThan(0);
  }, 240_000);

  it("keep the checks of a process that dies after their last transaction, while their entries are moved into place", async () => {
    let interrupted = 0;
    await feed(40, async (project, run, index) => {
      // The next run's checks move what is left before they read: the same as the checks in one transaction.
      const expected = await reference(project, run);
      if (index % 2 === 1) {
        // Killed while the staged entries are moved (after the first slice moved): the checks are committed.
        // (The first statement that moves staged entries is the one before the checks read: nothing to move then.)
        let moves = 0;
        const dies = (text: string) => text.includes("committed_check_slices") && text.includes("limit") && ++moves > 1;
        await runAlertChecks(checksDeps(dying(dies)), run, SLICED);
        const left = await staged(project);
        expect(left.marks).toBe(1);
        if (left.entries > 0) interrupted++;
        // A test's entries still staged are not in test_check_states yet: the tests are compared once the next checks moved them.
        expect({ ...(await checksOutcome(h.db, project)), tests: undefined }).toEqual({ ...expected, tests: undefined });
      } else {
        await runAlertChecks(checksDeps(h.db), run, SLICED);
        expect(await checksOutcome(h.db, project)).toEqual(expected);
        expect(await staged(project)).toEqual({ entries: 0, marks: 0 });
      }
    });
    expect(interrupted).toBeGreaterThan(0);
  }, 240_000);
});
