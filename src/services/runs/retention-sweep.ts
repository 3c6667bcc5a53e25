/**
 * The retention sweep (docs/retention.md): deletes what is past retention, in small batches, each
 * its own short statement (and transaction), so that nothing an upload waits on is held for longer
 * than one batch, and paced (after a batch, a pause of five times its duration) so that it takes
 * at most a sixth of the database's time while it runs. Node runs it on a timer, the Worker from its cron; each sweep does at most
 * `maxBatches` batches of at most `batchRows` rows, and the next sweep goes on where it stopped.
 *
 * In order:
 * 1. Rolls up the tests' figures of the days that are over from their cases
 *    (src/services/shared/test-rollups.ts): what a test's history reads beyond the retention of its cases.
 * 2. Cases past their project's retention (`projects.retention_days`, else RETENTION_DAYS) and of a
 *    day rolled up (a day's cases are deleted only once its figures are kept): a run's
 *    cases by batches, then its suites, verdicts and fixed tests (what hangs off its cases), and
 *    the run is marked (`cases_deleted_at`); its summary (the test_runs row) stays. Marking the run
 *    changes its organization's data version (the run's triggers), so conditional GETs see it.
 * 3. Payloads past retention: a run still pending after its project's retention is failed, which
 *    deletes its payloads (and their objects on the Worker).
 * 4. Summaries past SUMMARY_RETENTION_DAYS: runs (with what cascades from them: health transitions,
 *    deliveries, comparisons), except those an alert event refers to, which stay as long as the
 *    event (events embed their run); the project's and the tests' daily rollups of those days.
 *
 * Tests' rows (their state) are never deleted here: they go with their project.
 */
import { type SQL, sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows";
import {
  alertEvents,
  projectDailyRollups,
  projects,
  runFixedTests,
  runVerdicts,
  testCases,
  testDailyCosts,
  testRollupProgress,
  testRollups,
  testRuns,
  testSuites,
  uploadPayloads,
} from "../../db/schema";
import type { Database } from "../../db/types";
import type { PayloadStore } from "../../ingest/payload-store";
import type { Clock } from "../../lib/clock";
import { describeError } from "../../lib/errors";
import type { Logger } from "../../lib/logger";
import { type Retention, keptFrom } from "../../lib/retention";
import { utcDay } from "../shared/daily-rollups";
import { periodOf, rollTestDays } from "../shared/test-rollups";
import { failTestRun } from "./test-runs";

export type RetentionSweepDeps = { db: Database; clock: Clock; logger: Logger; retention: Retention; payloadStore?: PayloadStore };

export type RetentionSweepOptions = {
  /** Rows per statement; 500 unless a test chooses. */
  batchRows?: number;
  /**
   * After each batch the sweep waits this many times the batch's own duration, so that it takes at
   * most 1 / (1 + pauseFactor) of the database's time while it runs (uploads keep the rest); 5
   * unless a test chooses (0: no pause).
   */
  pauseFactor?: number;
  /** Batches per sweep, over all its steps (a batch: at most `batchRows` rows of a table, in at most three short statements); 50 unless a test chooses. */
  maxBatches?: number;
};

export type RetentionSweepCounts = {
  packed: number;
  cases: number;
  runsCleared: number;
  payloadRuns: number;
  runs: number;
  rollups: number;
};

const BATCH_ROWS = 500;
const PAUSE_FACTOR = 5;
const MAX_BATCHES = 50;
/** Pending runs failed per sweep (each its own transaction, and a payload object's deletion on the Worker). */
const PENDING_RUNS_PER_SWEEP = 100;
/** Runs whose cases one batch deletes together (their cases at most `batchRows`). */
const RUNS_PER_CASES_BATCH = 20;

const count = async (statement: Promise<unknown>) => Number((await rowsOf<{ n: number | string }>(statement))[0]?.n ?? 0);

/** The first instant kept of a project's cases: its own retention or the deployment's. */
const casesKeptFromSql = (now: Date, retention: Retention) =>
  sql`((${utcDay(now)}::date - coalesce(p.retention_days, ${retention.days})::int)::timestamp at time zone 'UTC')`;

export async function sweepRetention(deps: RetentionSweepDeps, options: RetentionSweepOptions = {}): Promise<RetentionSweepCounts> {
  const batchRows = options.batchRows ?? BATCH_ROWS;
  let budget = options.maxBatches ?? MAX_BATCHES;
  const counts: RetentionSweepCounts = { packed: 0, cases: 0, runsCleared: 0, payloadRuns: 0, runs: 0, rollups: 0 };
  const now = deps.clock.now();
  const paced = pacer(options.pauseFactor ?? PAUSE_FACTOR);
  /** Runs `batch` while the sweep has statements left and it finds rows; returns the rows it found. */
  const repeat = async (batch: () => Promise<number>): Promise<number> => {
    let total = 0;
    while (budget > 0) {
      budget--;
      const rows = await paced(batch);
      total += rows;
      if (rows === 0) break;
    }
    return total;
  };
  counts.packed = await repeat(() => rollTestDays(deps.db, now, batchRows));
  while (budget > 0) {
    budget--;
    const cleared = await paced(() => deleteCasesBatch(deps, now, batchRows));
    if (cleared === null) break;
    counts.cases += cleared.cases;
    counts.runsCleared += cleared.runs;
  }
  if (budget > 0) {
    budget--;
    counts.payloadRuns = await failRunsPastRetention(deps, now, batchRows);
  }
  counts.runs = await repeat(() => deleteRunsPastSummaryRetention(deps.db, now, deps.retention, batchRows));
  counts.rollups = await repeat(() => deleteRollupsPastSummaryRetention(deps.db, now, deps.retention, batchRows));
  if (Object.values(counts).some((n) => n > 0)) deps.logger.info("retention sweep", counts);
  return counts;
}

/**
 * Runs a batch, then waits `factor` times as long as it took (the wall clock's time, whatever the
 * test's clock says): the sweep's share of the database stays bounded however long it runs.
 */
function pacer(factor: number) {
  return async <T>(batch: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await batch();
    const pause = (performance.now() - started) * factor;
    if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
    return result;
  };
}

/**
 * The oldest runs whose cases are past retention and still kept (pending runs have none yet), and
 * whose day is rolled up, a few per project: test_runs_cases_kept_idx reads each project's oldest
 * such runs. Their projects' progress notes that the sweep deletes cases up to their day
 * (`cases_deleted_before`), in the statement that finds them: a run's day is not rolled again
 * once its cases may be partly gone (noteRunCasesSql). Rechecked on the progress' latest version,
 * so a project whose day was just moved back (a late part) has no run chosen this time.
 */
async function runsPastRetention(deps: RetentionSweepDeps, now: Date, limit: number): Promise<number[]> {
  const rolledBefore = sql`(g.day::timestamp at time zone 'UTC')`;
  const rows = await rowsOf<{ id: number | string }>(
    deps.db.execute(sql`
      with chosen as (
        select r.id, r.project_id, r.created_at from ${projects} p left join ${testRollupProgress} g on g.project_id = p.id cross join lateral (
          select r.id, r.project_id, r.created_at from ${testRuns} r
          where r.project_id = p.id and r.cases_deleted_at is null and r.created_at < ${casesKeptFromSql(now, deps.retention)}
            and (g.day is null or r.created_at < ${rolledBefore}) and r.status <> 'pending'
          order by r.created_at limit ${limit}) r
        order by r.created_at limit ${limit}),
      newest as (select project_id, max(created_at) as at from chosen group by project_id),
      noted as (
        update ${testRollupProgress} g set cases_deleted_before = greatest(g.cases_deleted_before, (n.at at time zone 'UTC')::date + 1)
        from newest n where g.project_id = n.project_id and n.at < ${rolledBefore}
        returning g.project_id)
      select c.id from chosen c
      where c.project_id in (select project_id from noted)
        or not exists (select 1 from ${testRollupProgress} g where g.project_id = c.project_id)`),
  );
  return rows.map((row) => Number(row.id));
}

/**
 * One batch of cases of the oldest runs past retention (at most `batchRows`), then, if that left
 * those runs without cases, their suites, verdicts and fixed tests and their mark: three short
 * statements. Null when no run is left to clear.
 */
async function deleteCasesBatch(deps: RetentionSweepDeps, now: Date, batchRows: number): Promise<{ cases: number; runs: number } | null> {
  const runs = await runsPastRetention(deps, now, RUNS_PER_CASES_BATCH);
  if (runs.length === 0) return null;
  const ids = sql`${`{${runs.join(",")}}`}::bigint[]`;
  // test_cases_run_suite_idx finds the runs' cases; the quota's trigger counts them off their project's stored cases.
  const cases = await count(
    deps.db.execute(sql`
      with gone as (delete from ${testCases} where ctid in (select ctid from ${testCases} where test_run_id = any(${ids}) limit ${batchRows}) returning 1)
      select count(*) as n from gone`),
  );
  if (cases === batchRows) return { cases, runs: 0 };
  // The runs have no case left: what hangs off their cases, and the mark (one statement, one short transaction).
  const cleared = await count(
    deps.db.execute(sql`
      with suites as (delete from ${testSuites} where test_run_id = any(${ids})),
        verdicts as (delete from ${runVerdicts} where test_run_id = any(${ids})),
        fixed as (delete from ${runFixedTests} where test_run_id = any(${ids})),
        marked as (update ${testRuns} set cases_deleted_at = ${now.toISOString()}::timestamptz where id = any(${ids}) and cases_deleted_at is null returning 1)
      select count(*) as n from marked`),
  );
  return { cases, runs: cleared };
}

/** Runs still pending whose payload is past their project's retention: failed (their payloads deleted with them). */
async function failRunsPastRetention(deps: RetentionSweepDeps, now: Date, limit: number): Promise<number> {
  const runs = await rowsOf<{ id: number | string; days: number }>(
    deps.db.execute(sql`
      select distinct r.id, coalesce(p.retention_days, ${deps.retention.days})::int as days
      from ${uploadPayloads} u join ${testRuns} r on r.id = u.test_run_id join ${projects} p on p.id = r.project_id
      where r.status = 'pending' and u.created_at < ${casesKeptFromSql(now, deps.retention)}
      limit ${Math.min(limit, PENDING_RUNS_PER_SWEEP)}`),
  );
  let failed = 0;
  for (const run of runs) {
    const reason = `The report waited longer than the project's retention (${run.days} days) without being processed; upload it again.`;
    try {
      if (await failTestRun(deps, Number(run.id), reason)) failed++;
    } catch (error) {
      deps.logger.error("could not fail a run past retention", { testRunId: Number(run.id), error: describeError(error) });
    }
  }
  return failed;
}

/**
 * One batch of runs past SUMMARY_RETENTION_DAYS that no alert event refers to, oldest first per
 * project (test_runs_project_keyset_idx, read backwards); their cascades find their rows by index.
 */
async function deleteRunsPastSummaryRetention(db: Database, now: Date, retention: Retention, limit: number): Promise<number> {
  const keptFrom = keptFromSql(now, retention.summaryDays);
  return count(
    db.execute(sql`
      with gone as (
        delete from ${testRuns} where id in (
          select r.id from ${projects} p cross join lateral (
            select r.id from ${testRuns} r
            where r.project_id = p.id and r.created_at < ${keptFrom}
              and not exists (select 1 from ${alertEvents} e where e.test_run_id = r.id)
            order by r.created_at limit ${limit}) r
          limit ${limit})
        returning 1)
      select count(*) as n from gone`),
  );
}

const keptFromSql = (now: Date, days: number) => sql`${keptFrom(now, days).toISOString()}::timestamptz`;

/**
 * One batch of the daily rollups (the project's, the tests' costs, the tests' packed periods)
 * wholly before SUMMARY_RETENTION_DAYS: the first two by project (their (project, day) indexes),
 * the periods by test_rollups_period_idx.
 */
async function deleteRollupsPastSummaryRetention(db: Database, now: Date, retention: Retention, limit: number): Promise<number> {
  const from = keptFrom(now, retention.summaryDays);
  const day = sql`${utcDay(from)}::date`;
  // A period is deleted once its last day is past: its days before are kept with it until then.
  const period = periodOf(from).period;
  const byProject = (table: SQL, key: SQL) => sql`
    select ${key} from ${projects} p cross join lateral (select ${key} from ${table} x where x.project_id = p.id and x.day < ${day} limit ${limit}) x
    limit ${limit}`;
  return count(
    db.execute(sql`
      with projects_days as (
        delete from ${projectDailyRollups} where (project_id, day) in (${byProject(sql`${projectDailyRollups}`, sql`x.project_id, x.day`)})
        returning 1),
      costs as (
        delete from ${testDailyCosts} where (test_id, day) in (${byProject(sql`${testDailyCosts}`, sql`x.test_id, x.day`)})
        returning 1),
      periods as (
        delete from ${testRollups} where (test_id, period) in (select test_id, period from ${testRollups} where period < ${period} limit ${limit})
        returning 1)
      select (select count(*) from projects_days) + (select count(*) from costs) + (select count(*) from periods) as n`),
  );
}
