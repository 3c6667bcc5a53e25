/**
 * The life of a test run: recorded the moment its upload arrives (pending, with its payload),
 * then processed (suites and cases stored, counts and result set) or failed with a reason —
 * each step one transaction, so a run is never half-written.
 */
import { type SQL, and, eq, sql } from "drizzle-orm";
import { projects, stagedTestCases, testCases, testRunParts, testRuns, testSuites, tests, uploadPayloads } from "../../db/schema";
import { type CopySink, encodeCopyRow, openCopy } from "../../db/bulk-copy";
import { retryOnConflict, transactionWithRetry } from "../../db/transaction-retry";
import { inlined, lastStatement } from "../../db/transaction-boundaries";
import type { Database } from "../../db/types";
import { hasSingleSession } from "../../db/single-session";
import type { CaseStatus, Report, ReportCase, ReportSuite } from "../../ingest/report";
import type { UploadPayload } from "../../ingest/run-queue";
import { type PayloadObject, type PayloadStore, discardPayloadObject } from "../../ingest/payload-store";
import type { Logger } from "../../lib/logger";
import type { RunMetadata } from "../../ingest/upload-request";

import type { ServiceDeps } from "../shared/context";
import { failureSignature } from "../../ingest/failure-signature";
import { RunFailures, runFailuresSql } from "./failure-groups";
import { compareRun } from "./run-comparison";
import { MAX_RUN_PARTS } from "../../ingest/json-report";
import { DEFAULT_RUN_QUIET_PERIOD_SECONDS } from "../../lib/run-quiet-period";
import { type RunCost, rollupCost } from "./flakiness-cost";
import {
  type ProjectTestCounts,
  type StoredTests,
  type TestHealthChange,
  TestExecutions,
  advanceRunTests,
  advanceRunTestsInChunks,
  projectCountsAssignments,
  storedTestsOf,
  projectTestsLock,
  storedTestsSql,
  writeRunTests,
} from "../tests/tests-state";
import { type HealthFollowDeps, followHealthChanges } from "../tests/quarantine";
import { rowFromJson, rowsOf } from "../../db/rows";
import { testIdentityKey } from "../../lib/test-identity";
import { dailyRollupSql } from "../shared/daily-rollups";
import { noteRunCasesSql } from "../shared/test-rollups";
import { yieldToEventLoop } from "../../lib/yield-to-event-loop";
import { ownString } from "../../lib/own-string";

export type { Report, ReportCase, ReportSuite } from "../../ingest/report";
import type { RunResult } from "../../lib/vocabulary";
export type TestRunRow = typeof testRuns.$inferSelect;

type Counts = { testsCount: number; passedCount: number; failedCount: number; erroredCount: number; skippedCount: number };

const zeroCounts = (): Counts => ({ testsCount: 0, passedCount: 0, failedCount: 0, erroredCount: 0, skippedCount: 0 });
const COUNT_KEYS = ["testsCount", "passedCount", "failedCount", "erroredCount", "skippedCount"] as const;
const MAX_INT = 2_147_483_647;

function addCase(counts: Counts, status: CaseStatus): void {
  counts.testsCount++;
  if (status === "passed") counts.passedCount++;
  else if (status === "failed") counts.failedCount++;
  else if (status === "errored") counts.erroredCount++;
  else counts.skippedCount++;
}

function addCounts(into: Counts, from: Counts): void {
  for (const key of COUNT_KEYS) into[key] += from[key];
}

/** TestNod's rule: errored if any case errored, else failed if any failed, else passed (also for zero cases). */
function runResult(counts: Pick<Counts, "failedCount" | "erroredCount">): RunResult {
  if (counts.erroredCount > 0) return "tests_errored";
  if (counts.failedCount > 0) return "tests_failed";
  return "tests_passed";
}

/** Advisory locks of run arrivals (the first of the two keys of `pg_advisory_xact_lock`), apart from any other use. */
const ARRIVAL_LOCK_CLASS = 0x43544131;

/** A run recorded on arrival, or (`replayed`) the run that already had the arrival's Idempotency-Key. */
/**
 * A recorded arrival: the run, whether the upload was a replay (its Idempotency-Key seen), its
 * part number (0: a run of one upload), or why a part was refused: `completed` (the run's
 * completion was decided and the part is not a retry), `too_many_parts` (MAX_RUN_PARTS).
 */
export type Arrival = { run: TestRunRow; replayed: boolean; part: number; refusal: "completed" | "too_many_parts" | null };

/**
 * Records a run the moment it arrives: the project's counter allocates its number atomically
 * (the UPDATE's row lock serializes concurrent arrivals), and the run counts in
 * `test_runs_count` and `last_test_run_at` before it is processed. The payload waiting to be
 * processed is stored in the same transaction: one statement, the function
 * record_test_run_arrival (drizzle/0015_run_arrival_function.sql, with the payload object's key since drizzle/0021_payload_objects.sql), so that the arrival is one
 * database round trip on the Worker.
 *
 * With an Idempotency-Key, the key is taken first (a transaction-scoped advisory lock on the
 * project and key), then a run that already has it is returned as it is. Taking the key before
 * the project's row is what keeps concurrent uploads with one key from deadlocking: without it,
 * a second arrival held the project's row and waited on the key's index entry, which the
 * processing of the first run had just rewritten, while that processing waited for the project's
 * row. Now an arrival that takes the project's row has a key no run has yet.
 */
export async function recordTestRunArrival(
  deps: Pick<ServiceDeps, "db" | "clock"> & { quietPeriodMs?: number },
  projectId: string,
  meta: RunMetadata = {},
  payload?: UploadPayload | PayloadObject,
): Promise<Arrival> {
  const now = deps.clock.now();
  const key = meta.idempotencyKey ?? null;
  // One statement (one round trip on the Worker): the function of drizzle/0015_run_arrival_function.sql
  // takes the same steps and locks as the transaction it replaced; a conflict aborts it whole, so it is retried whole.
  const result = await retryOnConflict(deps.db, () =>
    deps.db.execute(sql`select replayed, run, part, refusal from record_test_run_arrival(
      ${projectId}::uuid, ${now.toISOString()}::timestamptz, ${ARRIVAL_LOCK_CLASS}::integer, ${key}::text,
      ${meta.branch ?? null}::text, ${meta.commitSha ?? null}::text, ${meta.buildId ?? null}::text, ${meta.buildUrl ?? null}::text,
      ${JSON.stringify(meta.tags ?? [])}::jsonb, ${meta.startedAt?.toISOString() ?? null}::timestamptz,
      ${payload?.format ?? null}::text, ${payload && "content" in payload ? payload.content : null}::text,
      ${payload && "objectKey" in payload ? payload.objectKey : null}::text, ${meta.baseCommitSha ?? null}::text,
      ${meta.runKey ?? null}::text, ${meta.shard?.index ?? null}::integer, ${meta.shard?.total ?? null}::integer,
      ${meta.retry === true}::boolean, ${deps.quietPeriodMs ?? DEFAULT_RUN_QUIET_PERIOD_SECONDS * 1000}::integer, ${MAX_RUN_PARTS}::integer, ${meta.variant ?? ""}::text)`),
  );
  const [row] = (result as unknown as { rows: { replayed: boolean; run: unknown; part: number | null; refusal: string | null }[] }).rows;
  return {
    run: testRunFromJson(row!.run),
    replayed: row!.replayed,
    part: row!.part ?? 0,
    refusal: (row!.refusal ?? null) as Arrival["refusal"],
  };
}

/** A test_runs row as row_to_json writes it, as Drizzle's select would return it. */
export const testRunFromJson = (value: unknown): typeof testRuns.$inferSelect => rowFromJson(testRuns, value);

/** Rows go in as one JSON parameter per chunk (json_to_recordset: plain json is read once, never converted to jsonb): one statement per 5,000 rows, no parameter limits. */
const ROWS_PER_STATEMENT = 5_000;

type SuiteRow = { number: number; parent_number: number | null; name: string; duration_ms: number | null } & Record<
  "tests_count" | "passed_count" | "failed_count" | "errored_count" | "skipped_count",
  number
>;

async function insertSuites(tx: Database, runId: number, rows: SuiteRow[]) {
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    const chunk = JSON.stringify(rows.slice(i, i + ROWS_PER_STATEMENT));
    await tx.execute(sql`
      insert into ${testSuites} (test_run_id, number, parent_number, name, duration_ms, tests_count, passed_count, failed_count, errored_count, skipped_count)
      select ${runId}, x.number, x.parent_number, x.name, x.duration_ms, x.tests_count, x.passed_count, x.failed_count, x.errored_count, x.skipped_count
      from json_to_recordset(${chunk}::json) as x(number int, parent_number int, name text, duration_ms int, tests_count int, passed_count int, failed_count int, errored_count int, skipped_count int)`);
  }
}

export const suitesInsertSql = (runId: number, rows: SuiteRow[]): SQL => sql`
  insert into ${testSuites} (test_run_id, number, parent_number, name, duration_ms, tests_count, passed_count, failed_count, errored_count, skipped_count)
  select ${runId}, x.number, x.parent_number, x.name, x.duration_ms, x.tests_count, x.passed_count, x.failed_count, x.errored_count, x.skipped_count
  from json_to_recordset(${JSON.stringify(rows)}::json) as x(number int, parent_number int, name text, duration_ms int, tests_count int, passed_count int, failed_count int, errored_count int, skipped_count int)`;

/** What every case of a run shares and its test id is derived from: the run's project and variant. */
type CaseOwner = { projectId: string; variant: string };

/** Where a run's cases are written: test_cases, or staged_test_cases while a run is stored in slices (sliced-store.ts). */
type CasesTable = typeof testCases | typeof stagedTestCases;

const casesInsertSql = (runId: number, { projectId, variant }: CaseOwner, rows: CaseRow[], into: CasesTable = testCases): SQL => sql`
  insert into ${into} (test_run_id, project_id, variant, suite_number, name, classname, file, status, duration_ms, failure_type, failure_message, failure_text, failure_signature, attempts, system_out, system_err, quarantined)
  select ${runId}, ${projectId}::uuid, ${variant}::text, x.s, x.n, x.c, x.f, x.st::case_status, x.d, x.ft, x.fm, x.fx, x.sg, coalesce(x.a, '[]'::jsonb), x.so, x.se, coalesce(x.q, false)
  from json_to_recordset(${JSON.stringify(rows)}::json) as x(s int, n text, c text, f text, st text, d int, ft text, fm text, fx text, sg text, a jsonb, so text, se text, q bool)`;

/** Starts the insert at once (Drizzle queries are lazy until awaited or `then`ed). */
function insertCases(tx: Database, runId: number, owner: CaseOwner, rows: CaseRow[], into: CasesTable): Promise<unknown> {
  return tx.execute(casesInsertSql(runId, owner, rows, into)).then((result) => result);
}

const COPY_CASES = `copy test_cases (test_run_id, project_id, variant, suite_number, name, classname, file, status, duration_ms, failure_type, failure_message, failure_text, failure_signature, attempts, system_out, system_err, quarantined) from stdin`;
const COPY_SUITES = `copy test_suites (test_run_id, number, parent_number, name, duration_ms, tests_count, passed_count, failed_count, errored_count, skipped_count) from stdin`;

/** A case row as INSERT's JSON parameter carries it: short keys keep the parameter small. */
export type CaseRow = {
  s: number;
  n: string;
  c: string | null;
  f: string | null;
  st: CaseStatus;
  d: number | null;
  ft: string | null;
  fm: string | null;
  fx: string | null;
  sg: string | null;
  a: StoredAttempt[] | null;
  so: string | null;
  se: string | null;
  /** Only when true (the column's default is false): most cases' rows stay as small as before. */
  q?: true;
};

/** Attempts keep the API's snake_case shape. */
type StoredAttempt = { status: CaseStatus; duration_ms: number | null; failure_message: string | null };

const storedAttempts = (testCase: ReportCase): StoredAttempt[] | null =>
  testCase.attempts?.length
    ? testCase.attempts.map((a) => ({ status: a.status, duration_ms: a.durationMs, failure_message: a.failureMessage }))
    : null;

/** Case rows per write: small enough that Postgres works on one chunk while the next is parsed. */
const CASES_PER_CHUNK = 1_000;
/** Inserts sent and not yet answered, at most, before parsing waits (RowWriter.drain). */
const MAX_INSERTS_IN_FLIGHT = 2;
const noop = () => {};

/**
 * Where a run's rows go while its report is parsed: COPY where the driver offers it
 * (node-postgres; one COPY for all cases, then one for the suites), else INSERT statements, one
 * per chunk of cases, started as soon as the chunk is full so Postgres stores one chunk while the
 * next is parsed, with at most MAX_INSERTS_IN_FLIGHT unanswered (drain, called between slices).
 */
export class RowWriter {
  /** Decided at the first case, once per run: null (no COPY on this driver) is a decision too, unlike undefined. */
  private copy: CopySink | null | undefined;
  /** The inserts sent, each settled into a promise that does not reject (their first error is kept). */
  private readonly inflight: Promise<void>[] = [];
  private failure: { error: unknown } | null = null;
  private pendingRows: CaseRow[] = [];
  private pendingText = "";
  private pendingCount = 0;
  private total = 0;

  constructor(
    private readonly db: Database,
    private readonly tx: Database,
    private readonly runId: number,
    private readonly owner: CaseOwner,
    private readonly largeAbove: number,
    /** staged_test_cases: each chunk its own statement outside any transaction (sliced-store.ts); never COPY. */
    private readonly into: CasesTable = testCases,
    private readonly casesPerChunk = CASES_PER_CHUNK,
  ) {
    if (into !== testCases) this.copy = null;
  }

  private flush(): void {
    if (this.pendingCount === 0) return;
    if (this.copy) this.copy.write(this.pendingText);
    else {
      const rows = this.pendingRows;
      const insert = () => insertCases(this.tx, this.runId, this.owner, rows, this.into);
      // Staged chunks are not in a transaction: on a pool they could overtake each other, and their order is the cases' order.
      const previous = this.into === testCases ? undefined : this.inflight.at(-1);
      this.inflight.push((previous ? previous.then(insert) : insert()).then(noop, (error: unknown) => void (this.failure ??= { error })));
    }
    this.pendingRows = [];
    this.pendingText = "";
    this.pendingCount = 0;
  }

  /**
   * More cases than `largeAbove` (one chunk): the run is stored and its tests advanced in chunks, and nothing
   * per case or per test stays in memory (storeTestRun).
   */
  get large(): boolean {
    return this.total > this.largeAbove;
  }

  /**
   * Waits while more than one chunk's insert is under way: the parser runs ahead of the database
   * by one chunk at most, so the rows waiting to be sent never pile up in memory. Never throws:
   * a failed insert is reported by finishCases.
   */
  async drain(): Promise<void> {
    // A connection answers its statements in order: once this one is answered, at most MAX_INSERTS_IN_FLIGHT are not.
    await this.inflight[this.inflight.length - 1 - MAX_INSERTS_IN_FLIGHT];
  }

  addCase(suiteNumber: number, c: ReportCase, signature: string | null, quarantined: boolean): void {
    if (this.copy === undefined) this.copy = openCopy(this.db, this.tx, COPY_CASES);
    if (this.copy) this.pendingText += caseCopyRow(this.runId, this.owner, suiteNumber, c, signature, quarantined);
    else this.pendingRows.push(caseInsertRow(suiteNumber, c, signature, quarantined));
    this.total++;
    if (++this.pendingCount >= this.casesPerChunk) this.flush();
  }

  /** Every case is stored when this resolves; rejects with the database's error otherwise. */
  async finishCases(): Promise<void> {
    this.flush();
    if (this.copy) await this.copy.end();
    // Every statement settles before a failure is reported: nothing may still be running on the connection.
    await Promise.all(this.inflight);
    const failed = this.failure;
    if (failed) throw failed.error;
  }

  async storeSuites(rows: SuiteRow[]): Promise<void> {
    const suiteCopy = rows.length > 0 && this.copy ? openCopy(this.db, this.tx, COPY_SUITES) : null;
    if (!suiteCopy) return insertSuites(this.tx, this.runId, rows);
    suiteCopy.write(suitesCopyText(this.runId, rows));
    await suiteCopy.end();
  }

  /**
   * Stores the rest of the run's rows: the last cases, the suites, the payload's deletion and,
   * with `readTests`, the read of the run's tests (storedTestsSql), in as few statements as the
   * driver allows. Without COPY, and with every case still in memory (a run of at most
   * CASES_PER_CHUNK cases), that is one statement: on the Worker each statement is a round trip.
   */
  async finish(suites: SuiteRow[], readTests: boolean): Promise<StoredTests | null> {
    // A run in parts keeps the payloads of its retry parts: they are merged after it is stored (run-parts.ts).
    const payloadDeletion = payloadDeletionSql(this.runId);
    if (this.copy || this.inflight.length > 0) return this.finishAfterCases(suites, readTests, payloadDeletion);
    // The cases' insert returns each case's test id (a generated column) for the read, in the same statement.
    const cases = this.pendingRows;
    this.pendingRows = [];
    this.pendingCount = 0;
    const all = sql`with cases as (${casesInsertSql(this.runId, this.owner, cases)} returning test_id, classname, file, name),
        suites as (${suitesInsertSql(this.runId, suites)}), payload as (${payloadDeletion})`;
    if (readTests)
      return storedTestsOf(await rowsOf(this.tx.execute(sql`${all}, ${storedTestsSql(this.owner.projectId, { from: sql`cases c` })}`)));
    await this.tx.execute(sql`${all} select 1`);
    return null;
  }

  /** finish with COPY (node-postgres: its own statements), or with cases already under way: they finish first. */
  private async finishAfterCases(suites: SuiteRow[], readTests: boolean, payloadDeletion: SQL): Promise<StoredTests | null> {
    const { tx, runId } = this;
    const { projectId } = this.owner;
    const storedCases = { from: sql`${testCases} c`, where: sql`c.test_run_id = ${runId}` };
    this.flush();
    await this.finishCases();
    if (this.copy) {
      await this.storeSuites(suites);
      await tx.execute(payloadDeletion);
      return readTests ? storedTestsOf(await rowsOf(tx.execute(sql`with ${storedTestsSql(projectId, storedCases)}`))) : null;
    }
    const rest = sql`with suites as (${suitesInsertSql(runId, suites)}), payload as (${payloadDeletion})`;
    if (readTests) return storedTestsOf(await rowsOf(tx.execute(sql`${rest}, ${storedTestsSql(projectId, storedCases)}`)));
    await tx.execute(sql`${rest} select 1`);
    return null;
  }

  /** Nothing may be left running on the transaction's connection when it ends. */
  async abandon(reason: unknown): Promise<void> {
    if (this.copy) await this.copy.abort(reason instanceof Error ? reason : new Error(String(reason)));
    await Promise.all(this.inflight);
  }
}

/** The deletion of a stored run's payload. A run in parts keeps the payloads of its retry parts: they are merged after it is stored (run-parts.ts). */
export const payloadDeletionSql = (runId: number): SQL => sql`delete from ${uploadPayloads} where test_run_id = ${runId}
  and part_number not in (select rp.part_number from ${testRunParts} rp where rp.test_run_id = ${runId} and rp.retry)`;

/** A case as a line of COPY's text format. */
function caseCopyRow(
  runId: number,
  { projectId, variant }: CaseOwner,
  suiteNumber: number,
  c: ReportCase,
  signature: string | null,
  quarantined: boolean,
): string {
  const attempts = storedAttempts(c);
  return encodeCopyRow([
    runId,
    projectId,
    variant,
    suiteNumber,
    c.name,
    c.classname ?? null,
    c.file ?? null,
    c.status,
    c.durationMs ?? null,
    c.failureType ?? null,
    c.failureMessage ?? null,
    c.failureText ?? null,
    signature,
    attempts ? JSON.stringify(attempts) : "[]",
    c.systemOut ?? null,
    c.systemErr ?? null,
    quarantined ? "t" : "f",
  ]);
}

/** A case as a row of INSERT's JSON parameter. */
export function caseInsertRow(suiteNumber: number, c: ReportCase, signature: string | null, quarantined: boolean): CaseRow {
  return {
    s: suiteNumber,
    n: c.name,
    c: c.classname ?? null,
    f: c.file ?? null,
    st: c.status,
    d: c.durationMs ?? null,
    ft: c.failureType ?? null,
    fm: c.failureMessage ?? null,
    fx: c.failureText ?? null,
    sg: signature,
    a: storedAttempts(c),
    so: c.systemOut ?? null,
    se: c.systemErr ?? null,
    ...(quarantined ? { q: true as const } : {}),
  };
}

/** The suites' rows in COPY's text format. */
function suitesCopyText(runId: number, rows: SuiteRow[]): string {
  let text = "";
  for (const r of rows) {
    text += encodeCopyRow([
      runId,
      r.number,
      r.parent_number,
      r.name,
      r.duration_ms,
      r.tests_count,
      r.passed_count,
      r.failed_count,
      r.errored_count,
      r.skipped_count,
    ]);
  }
  return text;
}

/**
 * Where a run's suites come from: calls `emit` with top-level suites (in order, each complete)
 * and resolves to the run's own duration if the report states one.
 */
export type SuiteSource = (emit: (suites: ReportSuite[]) => void, pause: () => Promise<void>) => Promise<number | null | undefined>;

export type StoreOptions = {
  /**
   * Keep the tests' state and the failure groups (the default). Off only in the upload
   * benchmark's baseline, which measures what they add to processing in the same run.
   */
  testsAndGroups?: boolean;
  /**
   * A run with more cases than this is large: its tests are advanced in chunks from its stored
   * cases, holding nothing per case or per test (default CASES_PER_CHUNK). Tests set it to store
   * one report both ways and compare.
   */
  largeAbove?: number;
  /**
   * Compare the run with its base (src/services/runs/run-comparison.ts); on with the tests and
   * groups unless the upload benchmark measures processing without it.
   */
  compare?: boolean;
};

/** What storing a run needs: its health changes are followed (auto-quarantine, webhooks) in its transaction. */
export type StoreDeps = Pick<ServiceDeps, "db" | "clock"> & HealthFollowDeps;

/**
 * Where the report comes from: a source, or the run's stored payload (read with the run, in the
 * transaction's first statement) turned into one.
 */
export type RunReport = SuiteSource | { fromStoredPayload: (payload: UploadPayload | PayloadObject) => SuiteSource };

type OpenedRun = { run: TestRunRow; payload: UploadPayload | PayloadObject | null; quarantined: Set<string> };

/**
 * The transaction's first statement: the run's row, locked; its stored payload when asked for;
 * and, when the run is pending and its tests are kept, the identities of the project's tests
 * quarantined now, and the project's tests lock (lockProjectTests, taken after the run's row, as
 * before, so the later reads of the tests' rows see what the lock's previous holder wrote). One
 * round trip on the Worker instead of four.
 */
export async function openRun(
  tx: Database,
  runId: number,
  now: Date,
  options: { payload: boolean; derive: boolean },
): Promise<OpenedRun | null> {
  const [row] = await rowsOf<{
    run: unknown;
    format: string | null;
    content: string | null;
    object_key: string | null;
    quarantined: unknown;
    locked: boolean | null;
  }>(
    // Inlined (no parameters): the transaction's BEGIN goes in the same message (src/db/transaction-boundaries.ts).
    tx.execute(
      inlined(sql`
      with r as (select * from ${testRuns} where id = ${runId} for update)
      select row_to_json(r) as run,
        ${options.payload ? sql`p.format, p.content, p.object_key` : sql`null::text as format, null::text as content, null::text as object_key`},
        case when r.status = 'pending' and ${options.derive} then
          (select coalesce(json_agg(json_build_array(t.classname, t.file, t.name)), '[]'::json) from ${tests} t
           where t.project_id = r.project_id and t.quarantine_expires_at > ${now.toISOString()}::timestamptz
             and (t.variant = r.variant or t.quarantine_all_variants)) end as quarantined,
        case when r.status = 'pending' and ${options.derive} then ${projectTestsLock(sql`r.project_id`)} is null end as locked
      from r ${options.payload ? sql`left join ${uploadPayloads} p on p.test_run_id = r.id and p.part_number = 0` : sql``}`),
    ),
  );
  if (!row) return null;
  const quarantinedJson = (typeof row.quarantined === "string" ? JSON.parse(row.quarantined) : (row.quarantined ?? [])) as [
    string | null,
    string | null,
    string,
  ][];
  return {
    run: testRunFromJson(row.run),
    payload: storedPayloadOf(row),
    quarantined: new Set(quarantinedJson.map(([classname, file, name]) => testIdentityKey({ classname, file, name }))),
  };
}

/** An upload_payloads row as read (its text, or its object's key), or null when there is none. */
export function storedPayloadOf(row: {
  format: string | null;
  content: string | null;
  object_key: string | null;
}): UploadPayload | PayloadObject | null {
  if (row.format === null) return null;
  const format = row.format as UploadPayload["format"];
  if (row.content !== null) return { format, content: row.content };
  return row.object_key !== null ? { format, objectKey: row.object_key } : null;
}

/**
 * Stores a pending run's report and marks it processed, all in one transaction: either every
 * suite and case is stored with the run's counts, or nothing is. Cases are written while the
 * source still produces later suites (RowWriter: COPY or INSERT per chunk), so Postgres stores
 * one chunk while the next is being parsed. Returns null when the run is no
 * longer pending (a redelivered queue message), so processing is idempotent. Errors thrown by
 * the source (a ReportError) roll everything back and are rethrown.
 */
export async function storeTestRun(
  deps: StoreDeps,
  runId: number,
  report: RunReport,
  options: StoreOptions = {},
): Promise<TestRunRow | null> {
  const derive = options.testsAndGroups ?? true;
  const fromPayload = typeof report === "function" ? null : report.fromStoredPayload;
  return transactionWithRetry(deps.db, async (tx) => {
    // The tests quarantined now (read with the run): their cases say so, and the run counts their failures apart.
    const opened = await openRun(tx, runId, deps.clock.now(), { payload: fromPayload !== null, derive });
    if (opened?.run.status !== "pending") return null;
    const { run, quarantined } = opened;
    // No payload: the run was already processed or failed (a redelivered message).
    if (fromPayload && !opened.payload) return null;
    const source = fromPayload ? fromPayload(opened.payload!) : (report as SuiteSource);

    const rows = new RowWriter(
      deps.db,
      tx,
      runId,
      { projectId: run.projectId, variant: run.variant },
      options.largeAbove ?? CASES_PER_CHUNK,
    );
    const reading = new RunReading(rows, derive, quarantined);
    const statedDuration = await readReport(rows, reading, source);
    // The rest of the cases, the suites, the payload's deletion and the read of the run's tests (under the tests lock openRun took).
    const large = derive && rows.large;
    const { executions } = reading;
    const readTests = executions !== null && !large && executions.byIdentity.size > 0;
    const stored = await abandonOnError(rows, () => rows.finish(reading.suiteRows, readTests));
    const processedAt = deps.clock.now();
    // Compared with its base before its tests are advanced: a test's health is the one it had when the run arrived.
    // The comparison's statement also keeps the run's cost of flakiness (docs/flakiness-cost.md), added to its day's rollup below.
    const cost = (options.compare ?? derive) ? await compareRun(tx, run, processedAt) : null;
    const advance = large ? "in chunks" : readTests ? { executions: executions!, stored: stored! } : null;
    const tests = await advanceTests(tx, deps, run, processedAt, advance);
    return markProcessed(tx, runId, run, processedAt, reading, tests, statedDuration, cost);
  });
}

/**
 * Reads the report from its source into `reading`, its cases to the RowWriter; returns the
 * report's stated duration. Between slices of the report the parser waits for the database when
 * it is a chunk ahead, and lets the event loop turn. `finish`: what must still be written before
 * the reading counts as done (on failure, abandoned with the rest).
 */
export function readReport(
  rows: RowWriter,
  reading: RunReading,
  source: SuiteSource,
  finish: () => Promise<void> = async () => {},
): Promise<number | null | undefined> {
  return abandonOnError(rows, async () => {
    const duration = await source(
      (suites) => reading.addSuites(suites),
      async () => {
        await rows.drain();
        await yieldToEventLoop();
      },
    );
    reading.end();
    await finish();
    return duration;
  });
}

/** Runs a step of the rows' writing; when it fails, nothing is left running on the connection before the error goes on. */
async function abandonOnError<T>(rows: RowWriter, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    await rows.abandon(error);
    throw error;
  }
}

/** A suite's row, numbered in document order (a parent before its children), its counts added as its cases are. */
type StoredSuite = { number: number; row: SuiteRow; counts: Counts };

/** A case's failed attempts: their time, and whether the case then passed. */
function countRetries(retries: RunReading["retries"], testCase: ReportCase): void {
  let failed = false;
  for (const attempt of testCase.attempts ?? []) {
    if (attempt.status !== "failed" && attempt.status !== "errored") continue;
    failed = true;
    retries.failedAttemptsMs += attempt.durationMs ?? 0;
  }
  if (failed && testCase.status === "passed") retries.passedOnRetry++;
}

/**
 * What reading a run's report gathers while its cases go to the RowWriter: the run's and each
 * suite's counts, the suites' rows, the tests' executions and the failure groups (with `derive`),
 * the quarantined tests' failures.
 */
export class RunReading {
  readonly runCounts = zeroCounts();
  readonly suiteRows: SuiteRow[] = [];
  /**
   * Each test's execution, merged in memory while the run is small. Past one chunk of cases the
   * run is large: this is dropped, and advanceRunTestsInChunks merges them from the stored cases.
   */
  executions: TestExecutions | null;
  readonly failures = new RunFailures();
  quarantinedFailures = 0;
  /** Cases that passed after failed attempts, and those attempts' time (docs/retries.md). */
  readonly retries = { passedOnRetry: 0, failedAttemptsMs: 0 };
  suiteNumber = 0;
  /** Sum of the top-level suites' stated durations; null while none states one. */
  topLevelDuration: number | null = null;
  /** A top-level suite handed out in parts (ReportSuite.continued): open until its last part. */
  private continuing: StoredSuite | null = null;

  constructor(
    private readonly rows: RowWriter,
    readonly derive: boolean,
    private readonly quarantined: Set<string>,
  ) {
    this.executions = derive ? new TestExecutions() : null;
  }

  /** Top-level suites as the source emits them, complete or (ReportSuite.continued) in parts. */
  addSuites(suites: ReportSuite[]): void {
    for (const suite of suites) {
      const continuing = this.continuing;
      // A part continues the suite opened by the part before it; a suite's first part opens it.
      if (continuing && continuing.row.name !== suite.name)
        throw new Error(`Suite "${suite.name}" arrived while the parts of "${continuing.row.name}" were open.`);
      const stored = continuing ?? this.openSuite(suite, null);
      if (!continuing && suite.durationMs !== null && suite.durationMs !== undefined)
        this.topLevelDuration = (this.topLevelDuration ?? 0) + suite.durationMs;
      if (suite.continued) {
        this.addCases(stored, suite.name, suite.cases);
        this.continuing = stored;
        continue;
      }
      this.continuing = null;
      addCounts(this.runCounts, this.closeSuite(stored, suite));
    }
  }

  /** The source is done: a suite handed out in parts must have had its last part. */
  end(): void {
    if (this.continuing) throw new Error(`The parts of suite "${this.continuing.row.name}" never ended.`);
  }

  private openSuite(suite: ReportSuite, parentNumber: number | null): StoredSuite {
    const number = ++this.suiteNumber;
    // Kept until the run is stored: its own copy, not a slice of the report's text (ownString).
    const row = { number, parent_number: parentNumber, name: ownString(suite.name), duration_ms: suite.durationMs ?? null } as SuiteRow;
    this.suiteRows.push(row);
    return { number, row, counts: zeroCounts() };
  }

  private addCases(stored: StoredSuite, suiteName: string, cases: readonly ReportCase[]): void {
    const { number, counts } = stored;
    const { derive, quarantined, rows } = this;
    for (const testCase of cases) {
      addCase(counts, testCase.status);
      const failure = derive ? failureSignature(testCase) : null;
      const test = { classname: testCase.classname ?? null, file: testCase.file ?? null, name: testCase.name };
      // Computed once per case for the quarantine, the test's execution and its failure group.
      const identity = derive ? testIdentityKey(test) : null;
      const isQuarantined = identity !== null && quarantined.size > 0 && quarantined.has(identity);
      if (isQuarantined && (testCase.status === "failed" || testCase.status === "errored")) this.quarantinedFailures++;
      if (testCase.attempts?.length) countRetries(this.retries, testCase);
      rows.addCase(number, testCase, failure?.signature ?? null, isQuarantined);
      if (identity === null) continue;
      if (this.executions && rows.large) this.executions = null;
      this.executions?.add(suiteName, testCase, identity);
      if (failure) this.failures.add(failure);
    }
  }

  /** The rest of a suite (its last cases, if handed out in parts, and its children), then its row's counts. */
  private closeSuite(stored: StoredSuite, suite: ReportSuite): Counts {
    this.addCases(stored, suite.name, suite.cases);
    for (const child of suite.suites ?? []) addCounts(stored.counts, this.closeSuite(this.openSuite(child, stored.number), child));
    const { row, counts } = stored;
    row.tests_count = counts.testsCount;
    row.passed_count = counts.passedCount;
    row.failed_count = counts.failedCount;
    row.errored_count = counts.erroredCount;
    row.skipped_count = counts.skippedCount;
    return counts;
  }
}

/** The tests' rows still to write with the run's statement, and the project's test counts to set there. */
type TestWrites = { writes: SQL[]; counts: ProjectTestCounts | null };

/**
 * Advances the run's tests: a large run's in chunks from its stored cases, a small one's from its
 * executions merged in memory (`stored`: its tests' rows, read with its last rows), or none.
 * Returns what the run's statement (markProcessed) writes with it.
 */
async function advanceTests(
  tx: Database,
  deps: StoreDeps,
  run: TestRunRow,
  processedAt: Date,
  how: "in chunks" | { executions: TestExecutions; stored: StoredTests } | null,
): Promise<TestWrites> {
  // The tests' rows, the failure groups, the run and the project's row are written by one
  // statement, unless health changes are to be followed: auto-quarantine and the webhooks read
  // the tests' rows as this run leaves them, so those are written first.
  const follow = (changes: TestHealthChange[]) =>
    followHealthChanges(tx, deps, { id: run.id, number: run.number, projectId: run.projectId, processedAt }, changes);
  // Each chunk of tests is written as it is advanced (and its health changes followed); the counts go with the project's update.
  if (how === "in chunks") return { writes: [], counts: await advanceRunTestsInChunks(tx, run, follow) };
  if (how === null) return { writes: [], counts: null };
  const advanced = await advanceRunTests(tx, run, how.executions, how.stored);
  if (advanced.changes.length === 0) return { writes: advanced.writes, counts: advanced.counts };
  await writeRunTests(tx, run.projectId, advanced.writes, advanced.counts);
  await follow(advanced.changes);
  return { writes: [], counts: null };
}

/**
 * The tests, the failure groups, the run, the project and the day's rollups in one statement, the
 * transaction's last (COMMIT goes with it: src/db/transaction-boundaries.ts). Returns the run as processed.
 * The project's `stored_cases_count` (QUOTA_STORED_CASES, docs/quotas.md) grows by the run's cases
 * here, in the transaction that stored them: a retried or killed processing counts them exactly once.
 */
export async function markProcessed(
  tx: Database,
  runId: number,
  run: TestRunRow,
  processedAt: Date,
  reading: RunReading,
  tests: TestWrites,
  statedDuration: number | null | undefined,
  cost: RunCost | null,
): Promise<TestRunRow> {
  const { runCounts, topLevelDuration } = reading;
  const ctes = tests.writes.map((write, i) => sql`tests_w${sql.raw(String(i))} as (${write})`);
  const failureCtes = runFailuresSql(run, reading.failures);
  if (failureCtes) ctes.push(failureCtes);
  // The run's tests' daily figures (docs/retention.md) are rolled up by the retention sweep from its cases once its
  // day is over; if the sweep has rolled the day already (a run processed after midnight), it rolls it again.
  ctes.push(sql`rollup_day as (${noteRunCasesSql(run)})`);

  const result = runResult(runCounts);
  const durationMs = statedDuration ?? (topLevelDuration === null ? null : Math.min(Math.round(topLevelDuration), MAX_INT));
  // The overview's figures follow every processed run: the day keeps the project's flaky count as this run leaves
  // it, which the project's update returns (its latest version, this run's changes included).
  const rollup = dailyRollupSql(
    {
      projectId: run.projectId,
      createdAt: run.createdAt,
      processedAt,
      result,
      durationMs,
      testsCount: runCounts.testsCount,
      skippedCount: runCounts.skippedCount,
      cost: rollupCost(cost, durationMs),
    },
    sql`(select flaky_tests_count from project)`,
  );
  // latest_result follows the most recent processed run: a late-finishing older run does not overwrite a newer one.
  const [processed] = await rowsOf<{ run: unknown }>(
    tx.execute(
      lastStatement(
        tx,
        sql`
        with ${ctes.length > 0 ? sql`${sql.join(ctes, sql`, `)},` : sql``} done as (
          update ${testRuns} set tests_count = ${runCounts.testsCount}, passed_count = ${runCounts.passedCount}, failed_count = ${runCounts.failedCount},
            errored_count = ${runCounts.erroredCount}, skipped_count = ${runCounts.skippedCount}, quarantined_failures_count = ${reading.quarantinedFailures},
            passed_on_retry_count = ${reading.retries.passedOnRetry}, failed_attempts_duration_ms = ${Math.round(reading.retries.failedAttemptsMs)},
            status = 'processed', result = ${result}, processed_at = ${processedAt.toISOString()}::timestamptz, duration_ms = ${durationMs},
            suites_count = ${reading.suiteNumber}
          where id = ${runId} returning *),
        project as (
          update ${projects} set
            stored_cases_count = stored_cases_count + ${runCounts.testsCount},
            latest_result = case when exists (select 1 from ${testRuns} r where r.project_id = ${run.projectId} and r.status = 'processed' and r.number > ${run.number})
              then latest_result else ${result}::run_result end
            ${tests.counts ? sql`, ${projectCountsAssignments(tests.counts)}` : sql``}
          where id = ${run.projectId} returning flaky_tests_count),
        rollup as (${rollup})
        select row_to_json(done) as run from done`,
      ),
    ),
  );
  return testRunFromJson(processed!.run);
}

/** Stores a report that is already parsed (seeds, tests, JSON uploads). */
export function completeTestRun(deps: StoreDeps, runId: number, report: Report): Promise<TestRunRow | null> {
  return storeTestRun(deps, runId, async (emit) => {
    emit(report.suites);
    return report.durationMs;
  });
}

/**
 * Marks a pending run as failed with a reason and drops its payload; nothing of its report is
 * kept. A payload in the store (`payloadStore`) is deleted once the transaction has committed.
 */
export async function failTestRun(
  deps: Pick<ServiceDeps, "db" | "clock"> & { payloadStore?: PayloadStore; logger?: Logger },
  runId: number,
  reason: string,
): Promise<TestRunRow | null> {
  const { row, objectKey } = await transactionWithRetry(deps.db, async (tx) => {
    const [failed] = await tx
      .update(testRuns)
      .set({ status: "failed", failureReason: reason.slice(0, 1000), processedAt: deps.clock.now() })
      .where(and(eq(testRuns.id, runId), eq(testRuns.status, "pending")))
      .returning();
    const [payload] = await tx
      .delete(uploadPayloads)
      .where(eq(uploadPayloads.testRunId, runId))
      .returning({ objectKey: uploadPayloads.objectKey });
    // What a processing stored in slices left, if it got that far (sliced-store.ts): only ever on a database of one session.
    if (hasSingleSession(deps.db)) await tx.delete(stagedTestCases).where(eq(stagedTestCases.testRunId, runId));
    return { row: failed ?? null, objectKey: payload?.objectKey ?? null };
  });
  await discardPayloadObject(deps.payloadStore, objectKey, deps.logger, { testRunId: runId });
  return row;
}
