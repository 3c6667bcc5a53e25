/**
 * A run stored in slices, on a database of one session (PGlite: src/db/single-session.ts). There
 * a transaction holds every other query, each request's included, until it ends: storeTestRun's
 * one transaction over a 20,000-case run held the whole server for seconds. Here the long parts
 * run as short statements with the event loop free between them, and one final short
 * transaction makes the run visible (docs/uploads.md, "On the embedded database"):
 *
 * 1. the run opened (pending, its payload, the quarantined tests) and what an earlier, killed
 *    processing left of it cleared;
 * 2. the report parsed, its cases written to staged_test_cases a chunk at a time (no reader looks
 *    there), the run's counts, suites, failure groups and tests' executions gathered in memory;
 * 3. the rows of the run's tests read a slice at a time, the run's burst decided over them all,
 *    then each slice advanced (advanceRunTests) and its writes run, in a short transaction,
 *    against copies of its tests' rows in the schema run_staging (search_path), not the tests;
 * 4. one transaction: the run locked again (still pending), the staged cases moved into
 *    test_cases, the suites, the payload's deletion, the tests' rows checked unchanged since step
 *    3, the comparison with its base, the staged tests' rows and transitions moved into place
 *    (two set-based statements: about a third of the time of the advance's own writes on PGlite),
 *    the health changes followed, and the run marked processed (markProcessed), as storeTestRun ends.
 *
 * A reader sees the run pending with nothing of it, or processed with all of it. A process killed
 * at any step leaves at most staged rows, which step 1 of the next processing deletes. If the
 * tests' rows changed between steps 3 and 4 (another writer of the project's tests: a run
 * processed elsewhere, an alert check that flags tests flaky), step 4 is rolled back and the run is stored the usual
 * way, in one transaction.
 */
import { type SQL, sql } from "drizzle-orm";
import { stagedTestCases, testCases, testIdentitySql, tests } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import { transactionWithRetry } from "../../db/transaction-retry";
import type { Database } from "../../db/types";
import { yieldToEventLoop } from "../../lib/yield-to-event-loop";
import {
  type ProjectTestCounts,
  SAME_COMMIT_BURST,
  type StoredRow,
  type TestExecution,
  type TestHealthChange,
  TestExecutions,
  advanceRunTests,
  sameCommitContradictions,
} from "../tests/tests-state";
import { followHealthChanges } from "../tests/quarantine";
import { compareRun } from "./run-comparison";
import {
  type RunReport,
  type StoreDeps,
  type StoreOptions,
  type SuiteSource,
  type TestRunRow,
  RowWriter,
  RunReading,
  readReport,
  markProcessed,
  openRun,
  payloadDeletionSql,
  storeTestRun,
  suitesInsertSql,
} from "./test-runs";

/**
 * A payload shorter than this (about 250 cases of a typical JUnit report) is stored the usual way,
 * in one transaction: it holds other queries for a few milliseconds, less than the slices would add.
 */
export const SLICED_ABOVE_CHARS = 64 * 1024;

/** Tests read, and advanced, per slice: a few tens of milliseconds of PGlite (or of JavaScript) each. */
const TESTS_PER_SLICE = 500;
/** Cases per staged insert: each its own statement, the parser yielding between them. */
const CASES_PER_SLICE = 500;

/** The tests' rows changed between their read and the final transaction: that transaction is rolled back. */
class TestsChanged extends Error {}

/** What the run did to its tests, staged in slices and moved into place by the final transaction. */
type AdvancedTests = {
  changes: TestHealthChange[];
  counts: ProjectTestCounts | null;
  /** The tests' rows as read: how many existed, and the sum of their fingerprints (fingerprintSql). */
  found: number;
  fingerprint: number;
};

/**
 * A test's row version: any writer's change to it (an advance, a quarantine, the flakiness check's
 * flag) writes a new version, with the writing transaction's id as its xmin. Cheaper than hashing
 * the whole row.
 */
const fingerprintSql = (t: string) => sql.raw(`hashtext(${t}.xmin::text)`);

/**
 * storeTestRun in slices (see above). Returns the run as processed, or null when it is no longer
 * pending; a ReportError from the source is thrown after the staged rows are deleted.
 */
export async function storeTestRunInSlices(
  deps: StoreDeps,
  runId: number,
  report: RunReport,
  options: StoreOptions = {},
): Promise<TestRunRow | null> {
  const derive = options.testsAndGroups ?? true;
  const fromPayload = typeof report === "function" ? null : report.fromStoredPayload;
  await stagingColumns(deps.db);
  const opened = await transactionWithRetry(deps.db, async (tx) => {
    const found = await openRun(tx, runId, deps.clock.now(), { payload: fromPayload !== null, derive });
    if (found?.run.status === "pending") await clearStaged(tx, found.run);
    return found;
  });
  if (opened?.run.status !== "pending") return null;
  if (fromPayload && !opened.payload) return null;
  if (opened.payload && "content" in opened.payload && opened.payload.content.length < SLICED_ABOVE_CHARS)
    return storeTestRun(deps, runId, report, options);
  const source = fromPayload ? fromPayload(opened.payload!) : (report as SuiteSource);
  const { run } = opened;
  try {
    const staged = await stageCases(deps.db, run, source, derive, opened.quarantined);
    const advanced = staged.reading.executions ? await advanceInSlices(deps.db, run, staged.reading.executions) : null;
    return await publish(deps, run, staged, advanced, options);
  } catch (error) {
    // Nothing of the run is visible; its staged rows go (the next processing deletes them too, so a
    // failure to delete them here must not hide the error that decides what happens to the run).
    await clearStaged(deps.db, run).catch(() => {});
    if (!(error instanceof TestsChanged)) throw error;
    return storeTestRun(deps, runId, report, options);
  }
}

/** What a processing of the run that did not finish left staged: its cases, its tests' rows and transitions. */
const clearStaged = (db: Database, run: TestRunRow) =>
  db.execute(sql`with cases as (delete from ${stagedTestCases} where test_run_id = ${run.id}),
    transitions as (delete from run_staging.test_health_transitions where test_run_id = ${run.id})
    delete from run_staging.tests where staged_run_id = ${run.id}`);

type Staged = { reading: RunReading; statedDuration: number | null | undefined };

/** Step 2: the report parsed, its cases staged a chunk at a time, everything else gathered in memory. */
async function stageCases(db: Database, run: TestRunRow, source: SuiteSource, derive: boolean, quarantined: Set<string>): Promise<Staged> {
  // Never "large": the executions stay in memory (Node only), to be advanced in slices.
  const rows = new RowWriter(
    db,
    db,
    run.id,
    { projectId: run.projectId, variant: run.variant },
    Number.POSITIVE_INFINITY,
    stagedTestCases,
    CASES_PER_SLICE,
  );
  const reading = new RunReading(rows, derive, quarantined);
  const statedDuration = await readReport(rows, reading, source, () => rows.finishCases());
  return { reading, statedDuration };
}

/** A slice of the run's tests: each execution with its test's row (found or not), and the rows' fingerprints. */
async function readSlice(db: Database, run: TestRunRow, slice: [string, TestExecution][]) {
  const identities = slice.map(([, e], k) => ({ k, cl: e.classname, f: e.file, n: e.name }));
  const id = testIdentitySql(sql`${run.projectId}::uuid`, sql`x.cl`, sql`x.f`, sql`x.n`, sql`${run.variant}::text`);
  const rows = await rowsOf<StoredRow & { k: number; fp: number | null }>(
    db.execute(sql`
      select x.k, ${id} as id, x.cl as classname, x.f as file, x.n as name, t.id is not null as found,
        t.health, t.health_changed_at, t.executions_count, t.last_status, t.last_executed_at, t.last_failed_at, t.last_run_number,
        t.window_outcomes, t.duration_log_mean, t.duration_log_var, t.duration_samples, t.recent_commits, t.failing_streak, t.passing_streak,
        ${fingerprintSql("t")} as fp
      from json_to_recordset(${JSON.stringify(identities)}::json) as x(k int, cl text, f text, n text)
      left join ${tests} t on t.id = ${id}`),
  );
  rows.sort((a, b) => a.k - b.k);
  return rows.map((row) => ({ row, execution: slice[row.k]![1], fp: row.fp === null ? 0 : Number(row.fp) }));
}

/** Step 3: the tests' rows read a slice at a time, the burst decided over them all, then each slice advanced in memory. */
async function advanceInSlices(db: Database, run: TestRunRow, executions: TestExecutions): Promise<AdvancedTests | null> {
  if (executions.byIdentity.size === 0) return null;
  const entries = [...executions.byIdentity];
  const [project] = await rowsOf<{ default_branch: string | null }>(
    db.execute(sql`select default_branch from projects where id = ${run.projectId}`),
  );
  const defaultBranch = project?.default_branch ?? null;
  const slices: { rows: StoredRow[]; executions: TestExecutions }[] = [];
  let contradicting = 0;
  let found = 0;
  let fingerprint = 0;
  for (let at = 0; at < entries.length; at += TESTS_PER_SLICE) {
    const slice = entries.slice(at, at + TESTS_PER_SLICE);
    const read = await readSlice(db, run, slice);
    contradicting += sameCommitContradictions(read, run.commitSha);
    for (const { row, fp } of read) {
      if (!row.found) continue;
      found++;
      fingerprint += fp;
    }
    const sliceExecutions = new TestExecutions();
    for (const [identity, execution] of slice) sliceExecutions.byIdentity.set(identity, execution);
    slices.push({ rows: read.map(({ row }) => row), executions: sliceExecutions });
    await yieldToEventLoop();
  }
  const burst = contradicting >= SAME_COMMIT_BURST;
  const advanced: AdvancedTests = { changes: [], counts: null, found, fingerprint };
  const counts: ProjectTestCounts = { added: 0, flaky: 0, broken: 0 };
  const columns = await stagingColumns(db);
  for (const slice of slices) {
    const result = await advanceRunTests(db, run, slice.executions, { defaultBranch, rows: slice.rows }, burst);
    await stageWrites(db, run.id, slice.rows, result.writes, columns);
    advanced.changes.push(...result.changes);
    if (result.counts) {
      counts.added += result.counts.added;
      counts.flaky += result.counts.flaky;
      counts.broken += result.counts.broken;
    }
    await yieldToEventLoop();
  }
  if (counts.added !== 0 || counts.flaky !== 0 || counts.broken !== 0) advanced.counts = counts;
  return advanced;
}

/** Step 4: the one transaction that makes the run visible, whole. */
async function publish(
  deps: StoreDeps,
  run: TestRunRow,
  { reading, statedDuration }: Staged,
  advanced: AdvancedTests | null,
  options: StoreOptions,
): Promise<TestRunRow | null> {
  const derive = reading.derive;
  return transactionWithRetry(deps.db, async (tx) => {
    // The run's row locked again, and the project's tests lock: still pending, or another processing finished it.
    const opened = await openRun(tx, run.id, deps.clock.now(), { payload: false, derive });
    if (opened?.run.status !== "pending") return null;
    await tx.execute(sql`
      with moved as (
        insert into ${testCases} (test_run_id, project_id, variant, suite_number, name, classname, file, status, duration_ms, failure_type,
          failure_message, failure_text, failure_signature, attempts, system_out, system_err, quarantined)
        select test_run_id, project_id, variant, suite_number, name, classname, file, status, duration_ms, failure_type,
          failure_message, failure_text, failure_signature, attempts, system_out, system_err, quarantined
        from ${stagedTestCases} where test_run_id = ${run.id} order by seq),
      cleared as (delete from ${stagedTestCases} where test_run_id = ${run.id}),
      suites as (${suitesInsertSql(run.id, reading.suiteRows)}),
      payload as (${payloadDeletionSql(run.id)})
      select 1`);
    if (advanced) await checkTestsUnchanged(tx, run.id, advanced);
    const processedAt = deps.clock.now();
    const cost = (options.compare ?? derive) ? await compareRun(tx, run, processedAt) : null;
    if (advanced) await moveStagedTests(tx, run, await stagingColumns(deps.db));
    if (advanced && advanced.changes.length > 0)
      await followHealthChanges(tx, deps, { id: run.id, number: run.number, projectId: run.projectId, processedAt }, advanced.changes);
    const testWrites = { writes: [], counts: advanced?.counts ?? null };
    return markProcessed(tx, run.id, run, processedAt, reading, testWrites, statedDuration, cost);
  });
}

/** The rows of the run's tests are as step 3 read them (their number and fingerprints), under the project's tests lock. */
async function checkTestsUnchanged(tx: Database, runId: number, advanced: AdvancedTests): Promise<void> {
  const [now] = await rowsOf<{ found: number; fingerprint: string | number | null }>(
    tx.execute(sql`select count(*)::int as found, sum(${fingerprintSql("t")}) as fingerprint from ${tests} t
      where t.id in (select c.test_id from ${testCases} c where c.test_run_id = ${runId})`),
  );
  if (now!.found !== advanced.found || Number(now!.fingerprint ?? 0) !== advanced.fingerprint) throw new TestsChanged();
}

/**
 * The schema run_staging: tables shaped like tests and test_health_transitions (without their
 * keys), made again on a process's first run stored in slices so that they always have the
 * tests' current columns (what they held belonged to runs whose processing is redone anyway).
 * Returns the tests' columns (generated ones excepted), for moving the staged rows into place.
 */
const stagingReady = new WeakMap<Database, Promise<string[]>>();

function stagingColumns(db: Database): Promise<string[]> {
  let ready = stagingReady.get(db);
  if (!ready) {
    ready = makeStaging(db);
    ready.catch(() => stagingReady.delete(db));
    stagingReady.set(db, ready);
  }
  return ready;
}

async function makeStaging(db: Database): Promise<string[]> {
  await transactionWithRetry(db, async (tx) => {
    await tx.execute(sql`create schema if not exists run_staging`);
    await tx.execute(sql`drop table if exists run_staging.tests, run_staging.test_health_transitions`);
    await tx.execute(sql`create table run_staging.tests (like public.tests including defaults)`);
    // Whose staged row it is: the run set for the slice's transaction (stageWrites), whatever the advance's writes list.
    await tx.execute(
      sql`alter table run_staging.tests add column staged_run_id bigint not null default current_setting('run_staging.run_id', true)::bigint`,
    );
    await tx.execute(sql`create index on run_staging.tests (staged_run_id, id)`);
    await tx.execute(
      sql`create table run_staging.test_health_transitions (like public.test_health_transitions including defaults including identity)`,
    );
  });
  const columns = await rowsOf<{ column_name: string }>(
    db.execute(sql`select column_name from information_schema.columns
      where table_schema = 'public' and table_name = 'tests' and is_generated = 'NEVER' order by ordinal_position`),
  );
  return columns.map((c) => c.column_name);
}

/** A slice's writes (advanceRunTests), run in a short transaction against copies of its tests' rows in run_staging. */
async function stageWrites(db: Database, runId: number, rows: StoredRow[], writes: SQL[], columns: string[]): Promise<void> {
  if (writes.length === 0) return;
  const known = rows.filter((row) => row.found).map((row) => row.id);
  const list = sql.raw(columns.map((c) => `"${c}"`).join(", "));
  await transactionWithRetry(db, async (tx) => {
    // The writes name tests and test_health_transitions unqualified: for this transaction, run_staging's, the rows marked as this run's.
    await tx.execute(
      sql`select set_config('search_path', 'run_staging, public', true), set_config('run_staging.run_id', ${String(runId)}, true)`,
    );
    if (known.length > 0)
      await tx.execute(sql`insert into run_staging.tests (${list}) select ${list} from public.tests
        where id in (select value::uuid from json_array_elements_text(${JSON.stringify(known)}::json))`);
    for (const write of writes) await tx.execute(write);
  });
}

/** Step 4's move of the run's tests: rows updated from their staged copies, new tests inserted, transitions added; the staging emptied. */
async function moveStagedTests(tx: Database, run: TestRunRow, columns: string[]): Promise<void> {
  const updated = columns.filter((c) => c !== "id");
  const quoted = (prefix: string, names: string[]) => sql.raw(names.map((c) => `${prefix}"${c}"`).join(", "));
  await tx.execute(sql`update public.tests t set (${quoted("", updated)}) = (${quoted("s.", updated)})
    from run_staging.tests s where s.staged_run_id = ${run.id} and t.id = s.id`);
  await tx.execute(sql`insert into public.tests (${quoted("", columns)}) select ${quoted("s.", columns)} from run_staging.tests s
    where s.staged_run_id = ${run.id} and not exists (select 1 from public.tests t where t.id = s.id)`);
  await tx.execute(sql`
    with moved as (
      insert into public.test_health_transitions (test_id, from_health, to_health, reason, test_run_id, created_at)
      select test_id, from_health, to_health, reason, test_run_id, created_at from run_staging.test_health_transitions where test_run_id = ${run.id} order by id),
    cleared as (delete from run_staging.test_health_transitions where test_run_id = ${run.id})
    delete from run_staging.tests where staged_run_id = ${run.id}`);
}
