/**
 * Runs in parts (docs/uploads.md, "Runs in parts"): uploads with the same run key join one run,
 * which stays pending until it completes. Each part is read once when it arrives, for its counts
 * (the run shows them so far) or for why it cannot be read; nothing of it is stored then. The run
 * completes when its declared shards have all arrived, when the uploader says so
 * (POST /uploads/v1/test_runs/:number/complete), or after a quiet period; then every readable
 * part is stored as one report, in arrival order, by the one transaction that stores any run
 * (storeTestRun): its tests, failure groups, comparison and alert checks see the whole run, once.
 */
import { and, eq, sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows";
import { isDatabaseUnavailable } from "../../db/errors";
import { ApiError, describeError } from "../../lib/errors";
import { type ListRequest, defineList } from "../../lib/lists";
import type { OrgScope } from "../shared/context";
import type { DeliveryAttempt, RunQueue, UploadPayload } from "../../ingest/run-queue";
import { type PayloadObject, discardPayloadObject } from "../../ingest/payload-store";
import { ReportError, type ReportSuite } from "../../ingest/report";
import { testRunParts, testRuns, uploadPayloads } from "../../db/schema";
import { type ProcessingDeps, type ProcessingOutcome, limited, suiteSourceOf } from "./run-processing";
import { type SuiteSource, type TestRunRow, failTestRun, storeTestRun, storedPayloadOf, testRunFromJson } from "./test-runs";
import { mergeRetryPart, retryRows } from "./retry-parts";
import { findRunRow } from "./test-results";

type StoredPayload = { format: string; content: string | null; object_key: string | null };

type PartCounts = { tests: number; passed: number; failed: number; errored: number; skipped: number; durationMs: number | null };

/** Reads a part's report for its counts only: nothing is stored, and a bad report is the part's reason. */
async function countPart(source: SuiteSource): Promise<PartCounts | { reason: string }> {
  const counts: PartCounts = { tests: 0, passed: 0, failed: 0, errored: 0, skipped: 0, durationMs: null };
  let topLevel: number | null = null;
  const add = (suites: ReportSuite[]) => {
    for (const suite of suites) {
      for (const c of suite.cases) {
        counts.tests++;
        counts[c.status]++;
      }
      add(suite.suites ?? []);
    }
  };
  try {
    const stated = await source(
      (suites) => {
        // As for a run of one upload: the stated duration, else the sum of its top-level suites' (a part of a suite counts once).
        for (const suite of suites) if (!suite.continued && suite.durationMs != null) topLevel = (topLevel ?? 0) + suite.durationMs;
        add(suites);
      },
      async () => {},
    );
    const duration = stated ?? topLevel;
    counts.durationMs = duration === null ? null : Math.round(duration);
    return counts;
  } catch (error) {
    if (error instanceof ReportError) return { reason: error.message };
    throw error;
  }
}

/**
 * A part that arrived (queue message `{ testRunId, part }`): read for its counts, which are added
 * to the run's counts so far, then the run completes if this was the last part it waited for.
 * A part read before (a redelivered message) is not read again.
 */
export async function processRunPart(
  deps: ProcessingDeps,
  testRunId: number,
  part: number,
  options: DeliveryAttempt,
): Promise<ProcessingOutcome> {
  const [row] = await rowsOf<StoredPayload & { status: string; retry: boolean; run_status: string }>(
    deps.db.execute(sql`select rp.status, rp.retry, r.status as run_status, p.format, p.content, p.object_key from ${testRunParts} rp
      join ${testRuns} r on r.id = rp.test_run_id
      left join ${uploadPayloads} p on p.test_run_id = rp.test_run_id and p.part_number = rp.part_number
      where rp.test_run_id = ${testRunId} and rp.part_number = ${part}`),
  );
  if (!row) return "already_done";
  // A retry waits for its run to be stored, then is merged into it (storeRunParts merges those that waited).
  if (row.retry)
    return row.status === "pending" && row.run_status === "processed"
      ? mergeRetry(deps, testRunId, part, options.payload ?? storedPayloadOf(row))
      : "already_done";
  if (row.status === "pending") {
    const payload = options.payload ?? storedPayloadOf(row);
    let counted: PartCounts | { reason: string };
    try {
      counted = payload ? await countPart(suiteSourceOf(payload, deps.payloadStore)) : { reason: "The part's report is missing." };
    } catch (error) {
      if (!options.finalAttempt || isDatabaseUnavailable(error)) throw error;
      deps.logger.error("a run part could not be read on its final attempt", { testRunId, part, error: describeError(error) });
      counted = { reason: "The part could not be read after several attempts (an internal error); upload it again." };
    }
    await recordPart(deps, testRunId, part, counted);
  }
  return (await completeIfDue(deps, testRunId, "parts")) ?? "processed";
}

/** The part's counts (or reason) on its row, and added to its run's counts while the run is pending: one statement. */
async function recordPart(deps: ProcessingDeps, testRunId: number, part: number, counted: PartCounts | { reason: string }) {
  const c = "reason" in counted ? null : counted;
  await deps.db.execute(sql`with part as (
      update ${testRunParts} set status = ${c ? "ready" : "failed"}, failure_reason = ${c ? null : (counted as { reason: string }).reason},
        tests_count = ${c?.tests ?? 0}, passed_count = ${c?.passed ?? 0}, failed_count = ${c?.failed ?? 0},
        errored_count = ${c?.errored ?? 0}, skipped_count = ${c?.skipped ?? 0}, duration_ms = ${c?.durationMs ?? null}
      where test_run_id = ${testRunId} and part_number = ${part} and status = 'pending'
      returning tests_count, passed_count, failed_count, errored_count, skipped_count)
    update ${testRuns} r set tests_count = r.tests_count + p.tests_count, passed_count = r.passed_count + p.passed_count,
      failed_count = r.failed_count + p.failed_count, errored_count = r.errored_count + p.errored_count,
      skipped_count = r.skipped_count + p.skipped_count
    from part p where r.id = ${testRunId} and r.status = 'pending'`);
}

/**
 * Decides the run's completion when it is due, and stores it once no part is left to read:
 * - "parts": its declared shards have all been read (a part's processing asks);
 * - "asked": the uploader asked (POST …/complete);
 * - "quiet": its quiet period ended (the sweep).
 * Null when the run is not to be stored now (not due, a part still unread, or already stored).
 */
export async function completeIfDue(
  deps: ProcessingDeps,
  testRunId: number,
  why: "parts" | "asked" | "quiet",
): Promise<ProcessingOutcome | null> {
  const now = deps.clock.now().toISOString();
  const shardsIn = sql`(select count(distinct rp.shard_index) from ${testRunParts} rp
    where rp.test_run_id = r.id and rp.status <> 'pending' and not rp.retry and rp.shard_index between 1 and r.shard_total)`;
  const due =
    why === "asked" ? sql`true` : why === "quiet" ? sql`r.complete_after <= ${now}::timestamptz` : sql`${shardsIn} >= r.shard_total`;
  const [decided] = await rowsOf<{ completed: boolean; unread: boolean }>(
    deps.db.execute(sql`update ${testRuns} r set completed_at = coalesce(r.completed_at, case when ${due} then ${now}::timestamptz end)
      where r.id = ${testRunId} and r.status = 'pending' and r.run_key is not null
      returning r.completed_at is not null as completed,
        exists (select 1 from ${testRunParts} rp where rp.test_run_id = r.id and rp.status = 'pending' and not rp.retry) as unread`),
  );
  if (!decided?.completed || decided.unread) return null;
  return storeRunParts(deps, testRunId);
}

/**
 * Stores a completed run from its readable parts, in arrival order, as one report; its duration
 * is the longest part's (shards run side by side). A part that could not be read is left out
 * (the run lists it with its reason). The parts' payloads are read first, outside the run's
 * transaction, whose connection is busy streaming the cases.
 */
async function storeRunParts(deps: ProcessingDeps, testRunId: number): Promise<ProcessingOutcome> {
  const parts = await rowsOf<StoredPayload & { part_number: number; duration_ms: number | null }>(
    deps.db.execute(sql`select rp.part_number, rp.duration_ms, p.format, p.content, p.object_key from ${testRunParts} rp
      join ${uploadPayloads} p on p.test_run_id = rp.test_run_id and p.part_number = rp.part_number
      where rp.test_run_id = ${testRunId} and rp.status = 'ready' and not rp.retry order by rp.part_number`),
  );
  const payloads = parts.map(storedPayloadOf).filter((payload) => payload !== null);
  const durations = parts.map((part) => part.duration_ms).filter((ms) => ms !== null);
  const source: SuiteSource = async (emitToStore, pause) => {
    // The run-wide limits hold for the parts together, as for one report.
    const emit = limited(emitToStore);
    for (const payload of payloads) await suiteSourceOf(payload, deps.payloadStore)(emit, pause);
    return durations.length > 0 ? Math.max(...durations) : null;
  };
  let run;
  try {
    run = await storeTestRun(deps, testRunId, source, { testsAndGroups: deps.testsAndGroups });
  } catch (error) {
    // Each part was readable alone; together they can still break a run-wide limit: the run fails with that reason.
    if (!(error instanceof ReportError)) throw error;
    return (await failTestRun(deps, testRunId, error.message)) ? "failed" : "already_done";
  }
  if (!run) return "already_done";
  for (const payload of payloads)
    if ("objectKey" in payload) await discardPayloadObject(deps.payloadStore, payload.objectKey, deps.logger, { testRunId });
  if (deps.afterRunProcessed) {
    try {
      await deps.afterRunProcessed(run);
    } catch (error) {
      deps.logger.error("alert checks failed", { testRunId, error: describeError(error) });
    }
  }
  // Retries that arrived before the run was stored: merged now, in arrival order (the checks ran on the run as its parts had it).
  const waiting = await rowsOf<{ part_number: number }>(
    deps.db.execute(
      sql`select part_number from ${testRunParts} where test_run_id = ${testRunId} and retry and status = 'pending' order by part_number`,
    ),
  );
  for (const { part_number: part } of waiting) await mergeRetry(deps, testRunId, part, await readPartPayload(deps, testRunId, part));
  return "processed";
}

/** A part's stored payload, read on its own (a retry that waited for its run). */
async function readPartPayload(deps: ProcessingDeps, testRunId: number, part: number) {
  const [stored] = await rowsOf<StoredPayload>(
    deps.db.execute(
      sql`select format, content, object_key from ${uploadPayloads} where test_run_id = ${testRunId} and part_number = ${part}`,
    ),
  );
  return stored ? storedPayloadOf(stored) : null;
}

/** A retry part read and merged into its processed run; an unreadable one is listed with its reason and changes nothing. */
async function mergeRetry(
  deps: ProcessingDeps,
  testRunId: number,
  part: number,
  payload: UploadPayload | PayloadObject | null,
): Promise<ProcessingOutcome> {
  if (!payload) return "already_done";
  let rows;
  try {
    rows = await retryRows(suiteSourceOf(payload, deps.payloadStore));
  } catch (error) {
    if (!(error instanceof ReportError)) throw error;
    await deps.db.execute(sql`with part as (update ${testRunParts} set status = 'failed', failure_reason = ${error.message}
        where test_run_id = ${testRunId} and part_number = ${part} and status = 'pending')
      delete from ${uploadPayloads} where test_run_id = ${testRunId} and part_number = ${part}`);
    return "failed";
  }
  const merged = await mergeRetryPart(deps, testRunId, part, rows);
  if (merged && "objectKey" in payload) await discardPayloadObject(deps.payloadStore, payload.objectKey, deps.logger, { testRunId });
  return merged ? "processed" : "already_done";
}

/**
 * Queues what runs in parts wait for (the Worker's cron, Node's timer): the completion of runs
 * whose quiet period ended, and, past `stalledAfterMs`, parts never read and completions decided
 * but never stored (their messages were lost). Bounded per sweep; queuing twice is harmless.
 */
export async function queueDueCompletions(
  deps: { db: ProcessingDeps["db"]; clock: ProcessingDeps["clock"]; queue: RunQueue },
  options: { stalledAfterMs: number; limit: number },
): Promise<number> {
  const now = deps.clock.now();
  const stalled = new Date(now.getTime() - options.stalledAfterMs).toISOString();
  const due = await rowsOf<{ id: number }>(
    deps.db.execute(sql`select id from ${testRuns} where completed_at is null and complete_after is not null
      and complete_after <= ${now.toISOString()}::timestamptz and status = 'pending' order by complete_after limit ${options.limit}`),
  );
  const stuck = await rowsOf<{ id: number; part: number | null }>(
    deps.db.execute(sql`(select rp.test_run_id as id, rp.part_number as part from ${testRunParts} rp
        where rp.status = 'pending' and rp.created_at < ${stalled}::timestamptz limit ${options.limit})
      union all
      (select id, null from ${testRuns} where run_key is not null and status = 'pending' and completed_at < ${stalled}::timestamptz limit ${options.limit})`),
  );
  for (const { id } of due) await deps.queue.send({ testRunId: Number(id), complete: "quiet" });
  for (const { id, part } of stuck)
    await deps.queue.send(part === null ? { testRunId: Number(id), complete: "quiet" } : { testRunId: Number(id), part: Number(part) });
  return due.length + stuck.length;
}

export type RunPartFilters = { project_id: string; run: string };
type PartRow = typeof testRunParts.$inferSelect;

/** A run's parts, the latest first (GET …/test_runs/:number/parts). */
export const runPartList = defineList<RunPartFilters, PartRow, ReturnType<typeof presentRunPart>>({
  name: "run_parts",
  order: { id: testRunParts.partNumber, idKind: "bigint" },
  positionOf: (row) => ({ id: row.partNumber }),
  present: (row) => presentRunPart(row),
});

export function presentRunPart(row: PartRow) {
  return {
    number: row.partNumber,
    shard_index: row.shardIndex,
    retry: row.retry,
    status: row.status as "pending" | "ready" | "failed",
    failure_reason: row.failureReason,
    tests_count: row.testsCount,
    passed_count: row.passedCount,
    failed_count: row.failedCount,
    errored_count: row.erroredCount,
    skipped_count: row.skippedCount,
    duration_ms: row.durationMs,
    created_at: row.createdAt.toISOString(),
  };
}

export async function listRunParts(scope: OrgScope, request: ListRequest<RunPartFilters>) {
  return runPartsOf(scope, await findRunRow(scope, request.filters.project_id, request.filters.run), request);
}

/** A page of the parts of a run found already (the run page has it): one statement. */
export async function runPartsOf(scope: OrgScope, run: { id: number }, request: ListRequest<RunPartFilters>) {
  const rows = await scope.db
    .select()
    .from(testRunParts)
    .where(and(eq(testRunParts.testRunId, run.id), runPartList.after(request)))
    .orderBy(...runPartList.orderBy)
    .limit(runPartList.fetchLimit(request));
  return runPartList.page(rows, request);
}

/**
 * POST /uploads/v1/test_runs/:number/complete: the uploader says every part is in. The completion
 * is decided now (parts after it are refused) and queued: the run is stored once its parts are read.
 * Asking again is harmless. A run of one upload is complete as it arrived (409 `run_completed`).
 */
export async function askCompletion(deps: { db: ProcessingDeps["db"]; clock: ProcessingDeps["clock"]; queue: RunQueue }, run: TestRunRow) {
  if (run.runKey === null)
    throw new ApiError("run_completed", `Test run #${run.number} is a run of one upload (no run_key): it was complete when it arrived.`);
  const [decided] = await rowsOf<{ run: unknown }>(
    deps.db.execute(sql`update ${testRuns} set completed_at = coalesce(completed_at, ${deps.clock.now().toISOString()}::timestamptz)
      where id = ${run.id} returning row_to_json(test_runs.*) as run`),
  );
  if (run.status === "pending") await deps.queue.send({ testRunId: run.id, complete: "asked" });
  return decided ? testRunFromJson(decided.run) : run;
}
