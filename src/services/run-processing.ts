/**
 * Processing of an uploaded run, behind the run queue (a Cloudflare Queue on Workers, an
 * in-process queue on Node): load the pending payload, parse it, store the report in one
 * transaction, then hand the processed run to the alert checks.
 *
 * A report that cannot be parsed fails the run at once with the parser's reason (parsing is
 * deterministic, so retrying would not help). Anything else (the database) is thrown so the
 * queue retries; on the final attempt the run is failed instead, so no run stays pending.
 */
import { describeError } from "../lib/errors";
import { eq } from "drizzle-orm";
import type { Logger } from "../app-env";
import { uploadPayloads } from "../db/schema";
import { UploadEnvelopeSchema, jsonDepth, reportFromJsonSuites } from "../ingest/json-report";
import { parseJUnit } from "../ingest/junit";
import { REPORT_LIMITS, type Report, ReportError } from "../ingest/report";
import type { ServiceDeps } from "./context";
import { type TestRunRow, type UploadPayload, completeTestRun, failTestRun } from "./test-runs";

/** What travels through the queue: only the run's id (the payload waits in the database). */
export type RunMessage = { testRunId: number };

/** The producer side of the run queue; both runtimes implement it. */
export interface RunQueue {
  send(message: RunMessage): Promise<void>;
}

/**
 * Called with every run that finished processing. The alert checks attach here
 * (../shared/DESIGN.md: the four checks run after each processed run).
 */
export type RunProcessedHook = (run: TestRunRow) => Promise<void>;

export type ProcessingDeps = Pick<ServiceDeps, "db" | "clock"> & {
  logger: Logger;
  afterRunProcessed?: RunProcessedHook;
};

/** Maximum nesting of a JSON upload: 64 levels of suites, each an object inside an array. */
export const MAX_JSON_DEPTH = 2 * 64 + 8;

export const FINAL_FAILURE_REASON = "The report could not be processed after several attempts (an internal error); upload it again.";

/** Turns a stored payload into a report; every problem with its content is a ReportError. */
export function parsePayload(payload: UploadPayload): Report {
  try {
    if (payload.format === "junit_xml") return parseJUnit(payload.content);
    let body: unknown;
    try {
      body = JSON.parse(payload.content);
    } catch {
      throw new ReportError("The JSON report is not valid JSON.");
    }
    if (jsonDepth(body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw new ReportError("The JSON report is nested too deeply.");
    const parsed = UploadEnvelopeSchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ReportError(`The JSON report is invalid: ${issue ? `${issue.path.join(".") || "body"} ${issue.message}` : "unknown problem"}.`);
    }
    const envelope = parsed.data;
    const fromXml = envelope.junit_xml !== undefined ? parseJUnit(envelope.junit_xml) : null;
    const fromJson = envelope.suites !== undefined ? reportFromJsonSuites(envelope.suites, null) : null;
    const suites = [...(fromXml?.suites ?? []), ...(fromJson?.suites ?? [])];
    const durationMs = envelope.duration_ms ?? (fromJson ? null : (fromXml?.durationMs ?? null));
    if (suites.length > 0) assertWithinLimits(suites);
    return { suites, durationMs };
  } catch (error) {
    if (error instanceof ReportError) throw error;
    // Parsers are deterministic: an unexpected exception on this input would recur on every retry.
    throw new ReportError("The report could not be parsed.");
  }
}

/** XML and JSON parts each respect the limits; together they must too. */
function assertWithinLimits(suites: Report["suites"]): void {
  let cases = 0;
  let count = 0;
  const stack = [...suites];
  for (let suite = stack.pop(); suite; suite = stack.pop()) {
    count++;
    cases += suite.cases.length;
    stack.push(...(suite.suites ?? []));
  }
  if (count > REPORT_LIMITS.maxSuites) throw new ReportError(`The report has more than ${REPORT_LIMITS.maxSuites} test suites.`);
  if (cases > REPORT_LIMITS.maxCases) throw new ReportError(`The report has more than ${REPORT_LIMITS.maxCases} test cases.`);
}

export type ProcessingOutcome = "processed" | "failed" | "already_done";

export async function processTestRun(deps: ProcessingDeps, testRunId: number, options: { finalAttempt: boolean }): Promise<ProcessingOutcome> {
  try {
    const [payload] = await deps.db.select().from(uploadPayloads).where(eq(uploadPayloads.testRunId, testRunId)).limit(1);
    // No payload: the run was already processed or failed (a redelivered message).
    if (!payload) return "already_done";

    let report: Report;
    try {
      report = parsePayload({ format: payload.format as UploadPayload["format"], content: payload.content });
    } catch (error) {
      const reason = error instanceof ReportError ? error.message : "The report could not be parsed.";
      return (await failTestRun(deps, testRunId, reason)) ? "failed" : "already_done";
    }

    const run = await completeTestRun(deps, testRunId, report);
    if (!run) return "already_done";
    if (deps.afterRunProcessed) {
      // The run is stored; a failing check must not undo it or get it processed twice.
      try {
        await deps.afterRunProcessed(run);
      } catch (error) {
        deps.logger.error("alert checks failed", { testRunId, error: describeError(error) });
      }
    }
    return "processed";
  } catch (error) {
    if (!options.finalAttempt) throw error;
    deps.logger.error("run processing failed on its final attempt", { testRunId, error: describeError(error) });
    return (await failTestRun(deps, testRunId, FINAL_FAILURE_REASON)) ? "failed" : "already_done";
  }
}
