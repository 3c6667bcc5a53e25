/**
 * One run's upload: read its files, POST them (with retries), and with --wait poll the run until
 * it is processed. Failures become exit codes, with their message printed.
 *
 * An analytics outage must not turn a build red: an upload that fails after its retries (network,
 * 5xx, 429), a rejected token (401, 403) and --wait giving up are warnings with exit 0 unless
 * --fail-on-upload-error. A request the service refuses for what it holds (400, 413, 415, 422…)
 * stays exit 3, and a run whose processing failed exit 4: those need fixing on the sending side.
 */
import { randomUUID } from "node:crypto";
import { EXIT_OK, EXIT_REJECTED, EXIT_RUN_FAILED, EXIT_UPLOAD_FAILED, EXIT_USAGE, UsageError } from "./exit-codes";
import { displayPath, formatBytes } from "./format";
import {
  type HttpResponse,
  type HttpResult,
  type RetryOptions,
  type Sleep,
  describeHttpError,
  errorDetails,
  isQuotaExceeded,
  requestWithRetry,
} from "./http-retry";
import type { Output } from "./output";
import { type ReadReport, type RunMetadata, buildUpload } from "./reports";
import type { FileResolver } from "./test-files";
import { type RunVerdicts, printVerdicts, readRunVerdicts } from "./verdicts";

export const POLL_BASE_MS = 250;
export const POLL_MAX_MS = 2_000;

export type UploadContext = {
  out: Output;
  cwd: string;
  headers: Record<string, string>;
  retryOptions: RetryOptions;
  endpoint: URL;
  metadata: RunMetadata;
  /** Gives cases named by classname only their file from the workspace; null with --no-resolve-files. */
  resolver: FileResolver | null;
  /** Absolute test file paths below it are sent relative to it (src/cli/workspace-paths.ts); null: kept as written. */
  workspaceRoot: string | null;
  wait: boolean;
  /** --timeout, for all the runs of this invocation together. */
  waitTimeoutMs: number;
  /** Set when the first wait starts. */
  waitDeadline: number;
  sleep: Sleep;
  now: () => number;
  pollBaseMs: number;
  /** --fail-on-upload-error: upload failures are errors with their exit code, not warnings. */
  failOnUploadError: boolean;
  /**
   * The run key is the CI's default one on a first attempt: a 409 run_completed (another job
   * completed a run with the same key, e.g. the legs of a matrix) sends the reports again as a
   * run of their own, with a warning.
   */
  runKeyFallback?: boolean;
  /** Ask the processed run for its failed tests' pages (for the step summary). */
  wantFailedTests: boolean;
  /** --fail-on or --pr-comment rest on the verdicts: not reading them is a warning, not a note. */
  verdictsDecide: boolean;
};

/** A failed or errored test of the processed run, with its page (`include=failed_tests`). */
type RunFailedTest = { classname: string | null; name: string; file: string | null; url: string };

export type RunInfo = {
  number: number | string | null;
  /** The run's project (the upload's answer), which names the pull request comment. */
  projectId: string | null;
  /** The run's status when last read: pending, processed, failed. */
  status: string;
  /** The run's page in the web app. */
  url: string | null;
  /** The processed run's failed tests with their pages; null when not read. */
  failedTests: RunFailedTest[] | null;
  /** Its verdicts against its base, read once it is processed within --wait; null otherwise. */
  verdicts: RunVerdicts | null;
  /** Why the verdicts are null, when the run was uploaded (not processed in time, unreadable…). */
  verdictsProblem: string | null;
};

export type GroupResult = {
  code: number;
  /** Why the other runs should not be tried (the token was rejected, the service is unreachable). */
  stop: string | null;
  /** The upload failed after its retries for the service's own reasons (network, 5xx, 429). */
  unreachable?: boolean;
  /** The run, when the service accepted it. */
  run: RunInfo | null;
  /** What went wrong with the upload or the wait, as printed (for the summary); null if nothing. */
  problem: string | null;
  /** The reports as read (null when they could not be). */
  reports: ReadReport[] | null;
};

/** Read the files of one run without sending them (the reports' results are still wanted). */
export async function readGroup(
  files: string[],
  context: Pick<UploadContext, "out" | "cwd" | "metadata" | "resolver" | "workspaceRoot">,
): Promise<{ code: number; reports: ReadReport[] | null }> {
  try {
    const { reports } = await buildUpload(files, context.metadata, {
      cwd: context.cwd,
      resolver: context.resolver,
      workspaceRoot: context.workspaceRoot,
    });
    return { code: EXIT_OK, reports };
  } catch (error) {
    if (error instanceof UsageError) {
      context.out.error(error.message);
      return { code: EXIT_USAGE, reports: null };
    }
    throw error;
  }
}

/** Read, send and (with --wait) follow one run. */
export async function uploadGroup(files: string[], context: UploadContext, options: { showReadProgress: boolean }): Promise<GroupResult> {
  const { out, cwd } = context;
  const label = files.length === 1 ? displayPath(files[0]!, cwd) : `${files.length} files`;
  let upload: Awaited<ReturnType<typeof buildUpload>>;
  try {
    const readProgress = options.showReadProgress ? out.progress("Reading reports", files.length) : null;
    upload = await buildUpload(files, context.metadata, {
      cwd,
      onFileRead: () => readProgress?.tick(),
      resolver: context.resolver,
      workspaceRoot: context.workspaceRoot,
    });
  } catch (error) {
    if (error instanceof UsageError) {
      out.error(error.message);
      return { code: EXIT_USAGE, stop: null, run: null, problem: error.message, reports: null };
    }
    throw error;
  }
  const { reports } = upload;
  if (context.resolver !== null) out.debug(`test files: ${upload.filesAdded} case(s) given their file from the workspace (${label})`);
  if (upload.filesRelativized > 0)
    out.debug(`test files: ${upload.filesRelativized} absolute path(s) sent relative to ${context.workspaceRoot} (${label})`);
  out.debug(
    `POST ${context.endpoint.href} (${formatBytes(upload.bytes)}${upload.gzip ? `, ${formatBytes(upload.gzip.byteLength)} gzip-compressed` : ""}, ${label})`,
  );
  const post = (built: { body: string; gzip: Uint8Array | null }) =>
    requestWithRetry(
      context.endpoint.href,
      {
        method: "POST",
        headers: {
          ...context.headers,
          "content-type": "application/json",
          "idempotency-key": randomUUID(),
          ...(built.gzip ? { "content-encoding": "gzip" } : {}),
        },
        body: built.gzip ?? built.body,
      },
      context.retryOptions,
    );
  let result = await post(upload);
  if (context.runKeyFallback && result.kind === "response" && result.status === 409 && result.json?.error?.code === "run_completed") {
    const { run_key: runKey, shard: _shard, retry: _retry, ...alone } = context.metadata;
    out.warn(
      `another upload already completed the run of the default run key "${runKey}" (${describeHttpError(result)}); ` +
        `uploading ${label} as a run of its own. Jobs that share the CI's run and job (the legs of a matrix) need a key each: ` +
        "set --run-key (or CTA_JOB), or --variant; --no-run-key sends none",
    );
    const again = await buildUpload(files, alone, { cwd, resolver: context.resolver, workspaceRoot: context.workspaceRoot });
    result = await post(again);
  }
  const failure = classifyFailure(result, `upload of ${label}`);
  if (failure !== null) {
    const { code, problem } = reportFailure(failure, context);
    const stop =
      failure.kind === "token" ? "the token was rejected" : failure.kind === "unavailable" ? "the service is unreachable or failing" : null;
    return { code, stop, unreachable: failure.kind === "unavailable", run: null, problem, reports };
  }
  const runInfo = (result as HttpResponse).json ?? {};
  const number = typeof runInfo.number === "number" || typeof runInfo.number === "string" ? runInfo.number : null;
  const link: string = typeof runInfo.url === "string" ? runInfo.url : typeof runInfo.api_url === "string" ? runInfo.api_url : "";
  const run: RunInfo = {
    number,
    projectId: typeof runInfo.project_id === "string" ? runInfo.project_id : null,
    status: String(runInfo.status ?? "pending"),
    url: link || null,
    failedTests: null,
    verdicts: null,
    verdictsProblem: context.wait ? null : "not waited for (--wait)",
  };
  const fileWord = files.length === 1 ? "1 file" : `${files.length} files`;
  out.result(`Uploaded ${fileWord} as test run #${number ?? "?"} (${run.status})${link ? `: ${link}` : ""}`);
  if (!context.wait) return { code: EXIT_OK, stop: null, run, problem: null, reports };
  if (number === null) {
    const { code, problem } = reportFailure(
      { kind: "unavailable", message: "the service did not return a run number; cannot --wait", details: [] },
      context,
    );
    return { code, stop: null, run, problem, reports };
  }
  if (context.waitDeadline === 0) context.waitDeadline = context.now() + context.waitTimeoutMs;
  const waited = await waitForRun(run, link, context);
  if (run.status === "processed") await addVerdicts(run, context);
  else run.verdictsProblem = waited.problem ?? `test run #${number} is ${run.status}`;
  return { ...waited, stop: null, run, reports };
}

/** The processed run's verdicts, printed; a failure to read them is said, and changes no exit code here. */
async function addVerdicts(run: RunInfo, context: UploadContext): Promise<void> {
  const number = String(run.number);
  const runUrl = new URL(encodeURIComponent(number), `${context.endpoint.href}/`).href;
  const outcome = await readRunVerdicts(runUrl, context);
  if (outcome.verdicts !== null) {
    run.verdicts = outcome.verdicts;
    printVerdicts(context.out, number, outcome.verdicts);
    return;
  }
  run.verdictsProblem = `could not read the verdicts of test run #${number}: ${outcome.problem}`;
  if (context.verdictsDecide) context.out.warn(run.verdictsProblem);
  else context.out.info(run.verdictsProblem);
}

/**
 * What kind of failure a request ended with: `unavailable` (network, 5xx, 429 after retries; the
 * service's problem), `token` (401, 403: the token, which the service owns, was refused) or
 * `rejected` (another 4xx: what was sent is wrong). Null for a 2xx.
 */
type Failure = { kind: "unavailable" | "token" | "rejected"; message: string; details: string[] };

function classifyFailure(result: HttpResult, what: string): Failure | null {
  if (result.kind === "network-error") {
    return { kind: "unavailable", message: `${what} failed after ${result.attempts} attempt(s): ${result.message}`, details: [] };
  }
  if (result.status >= 200 && result.status < 300) return null;
  const description = describeHttpError(result);
  if (result.status === 401 || result.status === 403) {
    return {
      kind: "token",
      message: `${what} rejected by the service: ${description} (check --token / CTA_UPLOAD_TOKEN: it must be the project's current upload token; nothing is recorded until it is fixed)`,
      details: errorDetails(result),
    };
  }
  if (isQuotaExceeded(result)) {
    // Not retried (src/cli/http-retry.ts): the organization's quota is used up, which no retry changes.
    return {
      kind: "unavailable",
      message: `${what} refused: the organization's quota is used up (${description}); not retried, since waiting does not help: ask the service's operator to raise it, or make room`,
      details: [],
    };
  }
  if (result.status >= 400 && result.status < 500 && result.status !== 429) {
    const hint = result.status === 413 ? " (the request is too large; try --run-per-file or fewer files)" : "";
    return { kind: "rejected", message: `${what} rejected by the service: ${description}${hint}`, details: errorDetails(result) };
  }
  return { kind: "unavailable", message: `${what} failed after ${result.attempts} attempt(s): ${description}`, details: [] };
}

const NOT_FAILING = "the build does not fail for it (--fail-on-upload-error would)";

/** Prints a failure as an error or, for the service's own failures without --fail-on-upload-error, a warning; returns its exit code. */
function reportFailure(failure: Failure, context: UploadContext): { code: number; problem: string } {
  const { out } = context;
  const title = failure.kind === "token" ? "CI test analytics: upload token rejected" : "CI test analytics: upload failed";
  if (failure.kind === "rejected" || context.failOnUploadError) {
    out.error(failure.message);
    for (const detail of failure.details) out.error(`  ${detail}`);
    out.annotate("error", title, failure.message);
    return { code: failure.kind === "unavailable" ? EXIT_UPLOAD_FAILED : EXIT_REJECTED, problem: failure.message };
  }
  out.warn(`${failure.message}; ${NOT_FAILING}`);
  for (const detail of failure.details) out.warn(`  ${detail}`);
  // A misconfigured token is not an outage that passes: make it an error annotation, which GitHub shows on the run's page.
  out.annotate(failure.kind === "token" ? "error" : "warning", title, failure.message);
  return { code: EXIT_OK, problem: failure.message };
}

const IN_PROGRESS = new Set(["pending", "processing", "queued", "running"]);

function failedTestsOf(value: unknown): RunFailedTest[] | null {
  if (!Array.isArray(value)) return null;
  return value.filter(
    (t): t is RunFailedTest =>
      typeof t === "object" &&
      t !== null &&
      typeof t.name === "string" &&
      typeof t.url === "string" &&
      (t.classname === null || typeof t.classname === "string") &&
      (t.file === null || typeof t.file === "string"),
  );
}

/** Poll the run until it leaves "pending" (or the --timeout deadline passes); updates `run`. */
async function waitForRun(run: RunInfo, link: string, context: UploadContext): Promise<{ code: number; problem: string | null }> {
  const { out, now, sleep } = context;
  const number = String(run.number);
  const url = new URL(encodeURIComponent(number), `${context.endpoint.href}/`);
  if (context.wantFailedTests) url.searchParams.set("include", "failed_tests");
  let delay = context.pollBaseMs;
  for (;;) {
    const result = await requestWithRetry(url.href, { method: "GET", headers: context.headers }, context.retryOptions);
    const failure = classifyFailure(result, `checking test run #${number}`);
    if (failure !== null) return reportFailure(failure, context);
    const runInfo = (result as HttpResponse).json ?? {};
    const status = String(runInfo.status ?? "unknown");
    run.status = status;
    out.debug(`test run #${number}: ${status}`);
    if (status === "processed") {
      run.failedTests = failedTestsOf(runInfo.failed_tests);
      out.result(`Test run #${number} processed${link ? `: ${link}` : ""}`);
      return { code: EXIT_OK, problem: null };
    }
    if (status === "failed") {
      const message = `test run #${number} failed processing: ${runInfo.failure_reason ?? "no reason given"}${link ? ` (${link})` : ""}`;
      out.error(message);
      return { code: EXIT_RUN_FAILED, problem: message };
    }
    if (!IN_PROGRESS.has(status)) {
      return reportFailure(
        { kind: "unavailable", message: `test run #${number} has an unexpected status "${status}"`, details: [] },
        context,
      );
    }
    const left = context.waitDeadline - now();
    if (left <= 0) {
      return reportFailure(
        {
          kind: "unavailable",
          message: `timed out waiting for test run #${number} (still ${status})${link ? `: ${link}` : ""}`,
          details: [],
        },
        context,
      );
    }
    await sleep(Math.min(delay, left));
    delay = Math.min(delay * 2, POLL_MAX_MS);
  }
}
