/**
 * The upload interface's services: upload-token authentication, accepting a report (record the
 * run and its payload, then queue it), and reading an uploaded run back with the same token.
 */
import { type SQL, and, asc, eq, inArray, sql } from "drizzle-orm";
import type { Logger } from "../../lib/logger";
import { projects, testCases, testRuns, uploadWindows } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import { isDatabaseUnavailable } from "../../db/errors";
import type { Database } from "../../db/types";
import { ApiError, notFound, describeError, validationFailed } from "../../lib/errors";
import { parsePathNumber } from "../../lib/ids";
import { hashToken, isWellFormedToken } from "../../lib/keys";
import type { ServiceDeps } from "../shared/context";
import { presentRunFailedTest, presentTestRun } from "../../contract/presenters";
import type { QueueMessage, RunQueue, UploadPayload } from "../../ingest/run-queue";
import { type PayloadObject, type PayloadStore, discardPayloadObject } from "../../ingest/payload-store";
import type { RunMetadata } from "../../ingest/upload-request";
import { failTestRun, recordTestRunArrival } from "./test-runs";
import { UPLOAD_WINDOW_MS, storedCasesExceeded, uploadsPerHourExceeded } from "../tenancy/quotas";
import type { Quotas } from "../../lib/quotas";

export type UploadingProject = { projectId: string; organizationId: string };

/**
 * The project an upload token opens, or null (malformed tokens are rejected before any lookup).
 * Looked up on every upload: the database holds only the current token's hash, so a
 * regenerated token stops working at once.
 */
export async function findProjectByUploadToken(db: Database, token: string): Promise<UploadingProject | null> {
  if (!isWellFormedToken("uploadToken", token)) return null;
  const [row] = await db
    .select({ projectId: projects.id, organizationId: projects.organizationId })
    .from(projects)
    .where(eq(projects.uploadTokenHash, await hashToken(token)))
    .limit(1);
  return row ?? null;
}

/**
 * findProjectByUploadToken for a report's upload, with the organization's quotas checked in the same
 * statement, so that on the Worker they cost no round trip of their own (docs/quotas.md):
 * - stored cases (QUOTA_STORED_CASES): the sum of the counters on the organization's projects (at
 *   most QUOTA_PROJECTS rows, read through the index on organization_id; no case is counted). An
 *   upload is accepted while the sum is below the quota, so the run that crosses it is accepted
 *   whole; at or over it, a 429 `quota_exceeded` without Retry-After, and the upload takes no slot
 *   of the hourly window;
 * - uploads per hour (QUOTA_UPLOADS_PER_HOUR, src/services/tenancy/quotas.ts): the upload is counted
 *   in its organization's hourly window; a full window is a 429 `rate_limited` with `Retry-After`,
 *   the seconds until it ends.
 * Null for an unknown token (nothing counted).
 */
export async function findProjectCountingUpload(
  deps: Pick<ServiceDeps, "db" | "clock">,
  token: string,
  quotas: Pick<Quotas, "uploadsPerHour" | "storedCases">,
): Promise<UploadingProject | null> {
  const { uploadsPerHour: perHour, storedCases: storedQuota } = quotas;
  if (perHour === null && storedQuota === null) return findProjectByUploadToken(deps.db, token);
  if (!isWellFormedToken("uploadToken", token)) return null;
  const now = deps.clock.now();
  const stored =
    storedQuota === null
      ? sql`null::bigint`
      : sql`(select coalesce(sum(o.stored_cases_count), 0) from ${projects} o where o.organization_id = p.organization_id)::bigint`;
  const found = sql`found as (
    select p.id as project_id, p.organization_id, ${stored} as stored_cases from ${projects} p
    where p.upload_token_hash = ${await hashToken(token)} limit 1)`;
  const hasRoom = storedQuota === null ? sql`true` : sql`found.stored_cases < ${storedQuota}`;
  const [row] = await rowsOf<UploadCheck>(
    deps.db.execute(
      perHour === null
        ? sql`with ${found} select found.project_id, found.organization_id, found.stored_cases, true as granted, null as window_started_at from found`
        : sql`with ${found}, ${uploadSlotSql(now, perHour, hasRoom)}
          select found.project_id, found.organization_id, found.stored_cases, exists (select 1 from slot) as granted,
            (select window_started_at from ${uploadWindows} w where w.organization_id = found.organization_id) as window_started_at
          from found`,
    ),
  );
  if (!row) return null;
  const storedCases = row.stored_cases === null ? null : Number(row.stored_cases);
  if (storedQuota !== null && storedCases !== null && storedCases >= storedQuota) throw storedCasesExceeded(storedQuota, storedCases);
  if (!row.granted) throw uploadsPerHourExceeded(perHour!, row.window_started_at === null ? now : new Date(row.window_started_at), now);
  return { projectId: row.project_id, organizationId: row.organization_id };
}

type UploadCheck = {
  project_id: string;
  organization_id: string;
  /** bigint: text from node-postgres and the Neon driver. */
  stored_cases: string | number | null;
  granted: boolean;
  window_started_at: string | Date | null;
};

/**
 * The CTE `slot`: one upload taken in the found project's organization's hourly window, when
 * `hasRoom` (the stored-cases quota) allows it and the window has a slot left (or has ended, and
 * a new one starts now). Returns a row when the upload was taken.
 */
function uploadSlotSql(now: Date, perHour: number, hasRoom: SQL): SQL {
  const nowText = now.toISOString();
  const ended = new Date(now.getTime() - UPLOAD_WINDOW_MS).toISOString();
  const w = uploadWindows;
  const expired = sql`${w}.${sql.identifier("window_started_at")} <= ${ended}::timestamptz`;
  return sql`slot as (
    insert into ${w} (organization_id, window_started_at, uploads)
    select organization_id, ${nowText}::timestamptz, 1 from found where ${hasRoom}
    on conflict (organization_id) do update set
      window_started_at = case when ${expired} then ${nowText}::timestamptz else ${w}.window_started_at end,
      uploads = case when ${expired} then 1 else ${w}.uploads + 1 end
    where ${expired} or ${w}.uploads < ${perHour}
    returning organization_id
  )`;
}

export type UploadDeps = Pick<ServiceDeps, "db" | "clock"> & {
  runQueue: RunQueue;
  logger: Logger;
  payloadStore?: PayloadStore;
  /** RUN_QUIET_PERIOD_SECONDS in ms; its default when unset. */
  quietPeriodMs?: number;
};

/** `api_url` points at the run in /api/v1 (needs an API key), under the configured public base URL; `url` at the web app. */
export function presentUploadedRun(row: typeof testRuns.$inferSelect, webAppUrl: string, publicBaseUrl: string) {
  return { ...presentTestRun(row, webAppUrl), api_url: `${publicBaseUrl}/api/v1/projects/${row.projectId}/test_runs/${row.number}` };
}

/**
 * Records the run (it counts at once) with its payload, then queues it for processing. With an
 * Idempotency-Key already used in this project, nothing is recorded and the existing run is
 * returned (`replayed`): a client that retries after a lost response does not create a twin run.
 * A payload already written to the store (`PayloadObject`) is deleted when no run takes it.
 */
export async function acceptUpload(
  deps: UploadDeps,
  project: UploadingProject,
  metadata: RunMetadata,
  payload: UploadPayload | PayloadObject,
): Promise<{ run: typeof testRuns.$inferSelect; replayed: boolean }> {
  const stored = "objectKey" in payload ? payload.objectKey : null;
  let arrival;
  try {
    arrival = await recordTestRunArrival(deps, project.projectId, metadata, payload);
  } catch (error) {
    // The database gone mid-commit may have stored the run, naming this object, without saying so: its retry
    // with the same idempotency key answers that run, which needs the object. Kept: the payload sweep deletes
    // it after its grace if no row holds it (payload-sweep.ts).
    if (!isDatabaseUnavailable(error)) await discardPayloadObject(deps.payloadStore, stored, deps.logger, { projectId: project.projectId });
    throw error;
  }
  const { run, replayed } = arrival;
  if (arrival.refusal) {
    await discardPayloadObject(deps.payloadStore, stored, deps.logger, { testRunId: run.id });
    throw partRefused(run, arrival.refusal);
  }
  const { organizationId } = project;
  const message = arrival.part > 0 ? { testRunId: run.id, part: arrival.part, organizationId } : { testRunId: run.id, organizationId };
  if (replayed) {
    await discardPayloadObject(deps.payloadStore, stored, deps.logger, { testRunId: run.id });
    await requeueReplayedArrival(deps, run, message);
    return { run, replayed };
  }
  try {
    await deps.runQueue.send(message, "content" in payload ? { payload } : {});
  } catch (error) {
    // Without a queued message the run would stay pending forever: fail it and let the client retry.
    deps.logger.error("could not queue a run", { testRunId: run.id, error: describeError(error) });
    await failTestRun(deps, run.id, "The report could not be queued for processing; upload it again.");
    throw new ApiError("service_unavailable", "The upload could not be queued for processing; retry shortly.", {
      headers: { "Retry-After": "5" },
    });
  }
  return { run, replayed: false };
}

/**
 * A retried upload of a run still pending queues its run (or part) again: the first try may have
 * stored it and then lost the connection before its answer and its queue message (a database cut
 * between the commit and its acknowledgement), and the client was told 503. Processing is idempotent
 * (a run no longer pending, or a part already read or merged, is left as it is), so a duplicate costs one
 * message; without it the run would wait for the stalled-work sweep. A queue that refuses leaves it
 * to that sweep.
 */
async function requeueReplayedArrival(deps: UploadDeps, run: typeof testRuns.$inferSelect, message: QueueMessage) {
  if (run.status !== "pending" && !("part" in message)) return;
  try {
    await deps.runQueue.send(message, {});
  } catch (error) {
    deps.logger.error("could not queue a replayed run again", { testRunId: run.id, error: describeError(error) });
  }
}

/** Why a part's upload recorded nothing: its run's completion was decided, or it has all the parts it may. */
function partRefused(run: typeof testRuns.$inferSelect, refusal: "completed" | "too_many_parts"): ApiError {
  if (refusal === "too_many_parts")
    return validationFailed([
      {
        field: "run_key",
        message: `names run #${run.number}, which has ${run.partsCount.toLocaleString("en-US")} parts, the most a run may have`,
      },
    ]);
  return new ApiError(
    "run_completed",
    `Test run #${run.number} (run_key ${JSON.stringify(run.runKey)}) is complete: its completion was decided at ${run.completedAt?.toISOString()}, so it takes no more parts. Send the part with retry=true if it re-runs failed tests, or use another run_key for a new run.`,
  );
}

export async function getUploadedRun(db: Database, project: UploadingProject, number: string) {
  const runNumber = parsePathNumber(number);
  if (runNumber === null) throw notFound("Test run");
  const [row] = await db
    .select()
    .from(testRuns)
    .where(and(eq(testRuns.projectId, project.projectId), eq(testRuns.number, runNumber)))
    .limit(1);
  if (!row) throw notFound("Test run");
  return row;
}

/** Failed and errored cases listed by `include=failed_tests`; a run with more lists its first ones. */
export const MAX_RUN_FAILED_TESTS = 1_000;

/**
 * The failed and errored cases of a processed run (in report order, at most MAX_RUN_FAILED_TESTS)
 * with their tests' pages, for the uploader's summary; null while the run is pending or when its
 * processing failed (it has no cases). One read of the run's cases, asked for only by clients
 * that want it.
 */
export async function listRunFailedTests(db: Database, run: typeof testRuns.$inferSelect, webAppUrl: string) {
  if (run.status !== "processed") return null;
  const rows = await db
    .select({
      testId: testCases.testId,
      classname: testCases.classname,
      name: testCases.name,
      file: testCases.file,
      status: testCases.status,
      quarantined: testCases.quarantined,
    })
    .from(testCases)
    .where(and(eq(testCases.testRunId, run.id), inArray(testCases.status, ["failed", "errored"])))
    .orderBy(asc(testCases.id))
    .limit(MAX_RUN_FAILED_TESTS);
  return rows.map((row) => presentRunFailedTest(row, run.projectId, webAppUrl));
}
