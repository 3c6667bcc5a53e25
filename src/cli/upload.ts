/**
 * One run's upload: read its files, POST them (with retries), and with --wait poll the run until
 * it is processed. Failures become exit codes, with their message printed.
 */
import { randomUUID } from "node:crypto";
import { EXIT_OK, EXIT_REJECTED, EXIT_RUN_FAILED, EXIT_UPLOAD_FAILED, EXIT_USAGE, UsageError } from "./exit-codes";
import { displayPath, formatBytes } from "./format";
import { type HttpResponse, type HttpResult, type RetryOptions, type Sleep, describeHttpError, errorDetails, requestWithRetry } from "./http-retry";
import type { Output } from "./output";
import { type RunMetadata, buildUpload } from "./reports";

export const POLL_BASE_MS = 250;
export const POLL_MAX_MS = 2_000;

export type UploadContext = {
  out: Output;
  cwd: string;
  headers: Record<string, string>;
  retryOptions: RetryOptions;
  endpoint: URL;
  metadata: RunMetadata;
  wait: boolean;
  /** --timeout, for all the runs of this invocation together. */
  waitTimeoutMs: number;
  /** Set when the first wait starts. */
  waitDeadline: number;
  sleep: Sleep;
  now: () => number;
  pollBaseMs: number;
};

/**
 * Read, send and (with --wait) follow one run. `stop` says why the other runs should not be
 * tried (the token was rejected, or the service stayed unreachable).
 */
export async function uploadGroup(
  files: string[],
  context: UploadContext,
  options: { showReadProgress: boolean },
): Promise<{ code: number; stop: string | null }> {
  const { out, cwd } = context;
  const label = files.length === 1 ? displayPath(files[0]!, cwd) : `${files.length} files`;
  let upload: Awaited<ReturnType<typeof buildUpload>>;
  try {
    const readProgress = options.showReadProgress ? out.progress("Reading reports", files.length) : null;
    upload = await buildUpload(files, context.metadata, { cwd, onFileRead: () => readProgress?.tick() });
  } catch (error) {
    if (error instanceof UsageError) {
      out.error(error.message);
      return { code: EXIT_USAGE, stop: null };
    }
    throw error;
  }
  out.debug(`POST ${context.endpoint.href} (${formatBytes(upload.bytes)}, ${label})`);
  const result = await requestWithRetry(
    context.endpoint.href,
    {
      method: "POST",
      headers: { ...context.headers, "content-type": "application/json", "idempotency-key": randomUUID() },
      body: upload.body,
    },
    context.retryOptions,
  );
  const failure = reportFailure(result, `upload of ${label}`, out);
  if (failure !== null) {
    const authRejected = result.kind === "response" && (result.status === 401 || result.status === 403);
    const stop = authRejected
      ? "the token was rejected"
      : failure === EXIT_UPLOAD_FAILED
        ? "the service is unreachable or failing"
        : null;
    return { code: failure, stop };
  }
  const response = result as HttpResponse;
  const runInfo = response.json ?? {};
  const number = runInfo.number;
  const status = runInfo.status ?? "pending";
  const link = runInfo.url ?? runInfo.api_url ?? "";
  const fileWord = files.length === 1 ? "1 file" : `${files.length} files`;
  out.result(`Uploaded ${fileWord} as test run #${number ?? "?"} (${status})${link ? `: ${link}` : ""}`);
  if (!context.wait) return { code: EXIT_OK, stop: null };
  if (typeof number !== "number" && typeof number !== "string") {
    out.error("the service did not return a run number; cannot --wait");
    return { code: EXIT_UPLOAD_FAILED, stop: null };
  }
  if (context.waitDeadline === 0) context.waitDeadline = context.now() + context.waitTimeoutMs;
  return { code: await waitForRun(String(number), link, context), stop: null };
}

/** Exit code for a result that is not a success (null for a 2xx), with the message printed. */
function reportFailure(result: HttpResult, what: string, out: Output): number | null {
  if (result.kind === "network-error") {
    out.error(`${what} failed after ${result.attempts} attempt(s): ${result.message}`);
    return EXIT_UPLOAD_FAILED;
  }
  if (result.status >= 200 && result.status < 300) return null;
  const description = describeHttpError(result);
  if (result.status >= 400 && result.status < 500 && result.status !== 429) {
    const hint =
      result.status === 401
        ? " (check --token / CTA_UPLOAD_TOKEN: it must be the project's upload token)"
        : result.status === 413
          ? " (the request is too large; try --run-per-file or fewer files)"
          : "";
    out.error(`${what} rejected by the service: ${description}${hint}`);
    for (const detail of errorDetails(result)) out.error(`  ${detail}`);
    return EXIT_REJECTED;
  }
  out.error(`${what} failed after ${result.attempts} attempt(s): ${description}`);
  return EXIT_UPLOAD_FAILED;
}

const IN_PROGRESS = new Set(["pending", "processing", "queued", "running"]);

/** Poll the run until it leaves "pending" (or the --timeout deadline passes). */
async function waitForRun(number: string, link: string, context: UploadContext): Promise<number> {
  const { out, now, sleep } = context;
  const url = new URL(encodeURIComponent(number), `${context.endpoint.href}/`).href;
  let delay = context.pollBaseMs;
  for (;;) {
    const result = await requestWithRetry(url, { method: "GET", headers: context.headers }, context.retryOptions);
    const failure = reportFailure(result, `checking test run #${number}`, out);
    if (failure !== null) return failure;
    const runInfo = (result as HttpResponse).json ?? {};
    const status = String(runInfo.status ?? "unknown");
    out.debug(`test run #${number}: ${status}`);
    if (status === "processed") {
      out.result(`Test run #${number} processed${link ? `: ${link}` : ""}`);
      return EXIT_OK;
    }
    if (status === "failed") {
      out.error(`test run #${number} failed processing: ${runInfo.failure_reason ?? "no reason given"}${link ? ` (${link})` : ""}`);
      return EXIT_RUN_FAILED;
    }
    if (!IN_PROGRESS.has(status)) {
      out.error(`test run #${number} has an unexpected status "${status}"`);
      return EXIT_UPLOAD_FAILED;
    }
    const left = context.waitDeadline - now();
    if (left <= 0) {
      out.error(`timed out waiting for test run #${number} (still ${status})${link ? `: ${link}` : ""}`);
      return EXIT_UPLOAD_FAILED;
    }
    await sleep(Math.min(delay, left));
    delay = Math.min(delay * 2, POLL_MAX_MS);
  }
}
