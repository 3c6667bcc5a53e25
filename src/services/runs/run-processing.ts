/**
 * Processing of an uploaded run, behind the run queue (a Cloudflare Queue on Workers, an
 * in-process queue on Node): load the pending payload, parse it, store the report in one
 * transaction (on PGlite a large one in slices: sliced-store.ts), then hand the processed run to the alert checks.
 *
 * A report that cannot be parsed fails the run at once with the parser's reason (parsing is
 * deterministic, so retrying would not help). Anything else (the database) is thrown so the
 * queue retries; on the final attempt the run is failed instead, so no run stays pending, unless
 * the database is unavailable: both queues then retry for as long as the outage lasts.
 */
import { describeError } from "../../lib/errors";
import { isDatabaseUnavailable } from "../../db/errors";
import type { Logger } from "../../lib/logger";
import type { DeliveryAttempt, UploadPayload } from "../../ingest/run-queue";
import { type UploadEnvelope, reportFromJsonSuites } from "../../ingest/json-report";
import { readJUnitTextOnce, scanRepeatedCases, skipEmitted, streamJUnit, streamJUnitText } from "../../ingest/junit";
import { type PayloadObject, PayloadReadError, type PayloadStore, discardPayloadObject } from "../../ingest/payload-store";
import { streamJsonEnvelope } from "../../ingest/json-upload-stream";
import { readStoredBytes, readStoredText } from "../../ingest/streamed-upload";
import { REPORT_LIMITS, ReportError, type ReportSuite } from "../../ingest/report";
import type { ServiceDeps } from "../shared/context";
import { type SuiteSource, type TestRunRow, failTestRun, storeTestRun } from "./test-runs";
import { SLICED_ABOVE_CHARS, storeTestRunInSlices } from "./sliced-store";
import { hasSingleSession } from "../../db/single-session";

/**
 * Called with every run that finished processing. The alert checks attach here
 * (the four checks run after each processed run).
 */
type RunProcessedHook = (run: TestRunRow) => Promise<void>;

export type ProcessingDeps = Pick<ServiceDeps, "db" | "clock" | "webAppUrl"> & {
  logger: Logger;
  /** See StoreOptions.testsAndGroups: on unless the upload benchmark measures its baseline. */
  testsAndGroups?: boolean;
  afterRunProcessed?: RunProcessedHook;
  /** Where payloads stored as objects are read (the Worker's R2 bucket); a runtime without one stores none. */
  payloadStore?: PayloadStore;
};

const FINAL_FAILURE_REASON = "The report could not be processed after several attempts (an internal error); upload it again.";

/**
 * A stored XML object larger than this, or stored gzip-compressed, is read twice
 * (scanRepeatedCases): under it, a suite held whole while it is parsed is small, and a second read
 * would only add a subrequest.
 */
const SCAN_ABOVE_BYTES = 512 * 1024;

/** Counts what a source emits and stops it at the run-wide limits (XML and JSON parts together). */
export function limited(emit: (suites: ReportSuite[]) => void): (suites: ReportSuite[]) => void {
  let suites = 0;
  let cases = 0;
  return (emitted) => {
    const stack = [...emitted];
    for (let suite = stack.pop(); suite; suite = stack.pop()) {
      // A part of a suite (ReportSuite.continued) is counted with the suite's last emission.
      if (!suite.continued) suites++;
      cases += suite.cases.length;
      if (suite.suites) stack.push(...suite.suites);
    }
    if (suites > REPORT_LIMITS.maxSuites) throw new ReportError(`The report has more than ${REPORT_LIMITS.maxSuites} test suites.`);
    if (cases > REPORT_LIMITS.maxCases) throw new ReportError(`The report has more than ${REPORT_LIMITS.maxCases} test cases.`);
    emit(emitted);
  };
}

/**
 * A stored JSON payload: the envelope as the upload route validated it
 * (src/ingest/upload-request.ts), so it is read, not validated again.
 */
function storedEnvelope(content: string): UploadEnvelope {
  try {
    return JSON.parse(content) as UploadEnvelope;
  } catch {
    throw new ReportError("The JSON report is not valid JSON.");
  }
}

/**
 * The suites of a stored payload, as a source the store consumes while parsing continues. Every
 * problem with the content is a ReportError, including unexpected parser exceptions: parsers are
 * deterministic, so such an input would fail the same way on every retry.
 */
export function suiteSourceOf(payload: UploadPayload | PayloadObject, store?: PayloadStore): SuiteSource {
  return async (emitToStore, pause) => {
    const emit = limited(emitToStore);
    if ("objectKey" in payload) {
      // A body stored as an object (src/ingest/streamed-upload.ts) is parsed as it is read.
      // Without the store or the object, the payload cannot be read: an internal error, retried.
      if (!store) throw new Error("This run's payload is in a payload store, and this runtime has none.");
      const missing = () => new PayloadReadError(`The payload object of this run is missing (${payload.objectKey}).`);
      if (payload.format === "json") {
        // Read twice (json-upload-stream.ts): failing to open the object is an internal error on either read.
        const open = async () => {
          const bytes = await readStoredBytes(store, payload.objectKey).catch((error: unknown) => {
            throw new PayloadReadError(`The payload object of this run could not be read (${payload.objectKey}).`, { cause: error });
          });
          if (!bytes) throw missing();
          return bytes;
        };
        try {
          return await streamJsonEnvelope(open, emit, (documents) => streamJUnit(documents, emit, pause), pause);
        } catch (error) {
          if (error instanceof ReportError || error instanceof PayloadReadError) throw error;
          throw new ReportError("The report could not be parsed.");
        }
      }
      const first = await readStoredText(store, payload.objectKey);
      if (!first) throw missing();
      // The store failing to open it again is retried, as on the first read.
      const again = async () => {
        const text = await readStoredText(store, payload.objectKey).catch((error: unknown) => {
          throw new PayloadReadError(`The payload object of this run could not be read (${payload.objectKey}).`, { cause: error });
        });
        if (!text) throw missing();
        return text;
      };
      try {
        if (!first.gzip && (first.storedBytes ?? Number.POSITIVE_INFINITY) <= SCAN_ABOVE_BYTES)
          return await streamJUnitText(first, emit, pause);
        // A compressed size says little of the text's: a gzip object, or a large one, may hold a
        // suite too large to hold whole. It is read once while none is (readJUnitTextOnce), else
        // twice more from there: a first pass finds the cases that a later entry retries, so that
        // the second stores a large suite in parts while it is read.
        const once = await readJUnitTextOnce(first, emit, pause).catch((error: unknown) => scanFailure(error, again, pause));
        if ("duration" in once) return once.duration;
        const repeats = await scanRepeatedCases(await again(), pause);
        return await streamJUnitText(await again(), skipEmitted(emit, once.emitted), pause, repeats);
      } catch (error) {
        // The store failing halfway is retried; the content failing fails the run.
        if (error instanceof ReportError || error instanceof PayloadReadError) throw error;
        throw new ReportError("The report could not be parsed.");
      }
    }
    try {
      if (payload.format === "junit_xml") return await streamJUnit(payload.content, emit, pause);
      const envelope = storedEnvelope(payload.content);
      const xmlDuration = envelope.junit_xml !== undefined ? await streamJUnit(envelope.junit_xml, emit, pause) : null;
      if (envelope.suites !== undefined) emit(reportFromJsonSuites(envelope.suites, null).suites);
      return envelope.duration_ms ?? (envelope.suites !== undefined ? null : xmlDuration);
    } catch (error) {
      if (error instanceof ReportError) throw error;
      throw new ReportError("The report could not be parsed.");
    }
  };
}

/**
 * A report that fails when read without a first pass fails as it did read with one: a first pass
 * (scanRepeatedCases) reads the whole document and fails first on what it checks (all but the case
 * limit), so the run fails with its error when there is one, else with the read's own.
 */
async function scanFailure(error: unknown, again: () => Promise<AsyncIterable<string>>, pause: () => Promise<void>): Promise<never> {
  if (!(error instanceof ReportError)) throw error;
  // Whatever the first pass throws is what the run met first (the store failing included).
  await scanRepeatedCases(await again(), pause);
  throw error;
}

export type ProcessingOutcome = "processed" | "failed" | "already_done";

export async function processTestRun(deps: ProcessingDeps, testRunId: number, options: DeliveryAttempt): Promise<ProcessingOutcome> {
  try {
    // A handed-over payload is the stored one (same upload); otherwise the stored payload is read
    // with the run, under its lock. A run no longer pending, or without a payload (a redelivered
    // message), is left as it is.
    let run: TestRunRow | null;
    /** The stored object this processing read, deleted once the run is stored (its row went in the same transaction). */
    let objectKey: string | null = null;
    try {
      const fromStoredPayload = (payload: UploadPayload | PayloadObject) => {
        objectKey = "objectKey" in payload ? payload.objectKey : null;
        return suiteSourceOf(payload, deps.payloadStore);
      };
      const report = options.payload ? suiteSourceOf(options.payload) : { fromStoredPayload };
      // On a database of one session (PGlite) a large run is stored in slices, so requests are not held behind it.
      const inSlices = hasSingleSession(deps.db) && (!options.payload || options.payload.content.length >= SLICED_ABOVE_CHARS);
      run = await (inSlices ? storeTestRunInSlices : storeTestRun)(deps, testRunId, report, { testsAndGroups: deps.testsAndGroups });
    } catch (error) {
      // The report's content is at fault (the transaction was rolled back): fail the run now.
      if (!(error instanceof ReportError)) throw error;
      return (await failTestRun(deps, testRunId, error.message)) ? "failed" : "already_done";
    }
    if (!run) return "already_done";
    await discardPayloadObject(deps.payloadStore, objectKey, deps.logger, { testRunId });
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
    // An unavailable database says nothing about the run: the queue tries again after the outage
    // (without using up an attempt) rather than failing a run it could not even read.
    if (!options.finalAttempt || isDatabaseUnavailable(error)) throw error;
    deps.logger.error("run processing failed on its final attempt", { testRunId, error: describeError(error) });
    return (await failTestRun(deps, testRunId, FINAL_FAILURE_REASON)) ? "failed" : "already_done";
  }
}
