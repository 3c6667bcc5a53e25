/**
 * Replays a simulated stream through the real upload path: each run's JUnit XML is posted to
 * `POST {baseUrl}/uploads/v1/test_runs` with its branch, commit and start time, then followed with
 * `GET {baseUrl}/uploads/v1/test_runs/{number}` until it is no longer pending, before the next run
 * is sent. The checks consume runs in number order and skip a run processed after a newer one, so
 * uploads must not overlap.
 *
 * Each upload carries an Idempotency-Key (`{idempotencyPrefix}-{simulated run number}`), so a POST
 * retried after a network error or a 5xx cannot record the run twice. 429 answers are waited out
 * (Retry-After). Nothing here reads Math.random; the default prefix comes from crypto.randomUUID.
 */
import type { RunStatus } from "../lib/vocabulary";
import { type SimRun, toJUnitXml } from "./streams";

export type ReplayOptions = {
  /** e.g. "http://localhost:3000" (no trailing /uploads/v1). */
  baseUrl: string;
  uploadToken: string;
  runs: readonly SimRun[];
  fetch?: typeof fetch;
  /** Prefix of each upload's Idempotency-Key; default a fresh UUID per replay. */
  idempotencyPrefix?: string;
  /** How long to wait for one run to be processed (ms). Default 60 s. */
  processingTimeoutMs?: number;
  /** Poll interval while a run is pending (ms). Default 50 ms, doubling to 1 s. */
  pollIntervalMs?: number;
  /** Transient failures (network, 5xx) retried per request. Default 5. */
  maxRetries?: number;
  /** Called after each run is processed (or failed). */
  onRun?: (progress: ReplayedRun, index: number, total: number) => void;
  /** Test seam for waiting (default setTimeout). */
  sleep?: (ms: number) => Promise<void>;
};

type ReplayedRun = {
  /** The simulated run's number, and the number the service gave it (they differ if the project had runs). */
  simulatedNumber: number;
  serviceNumber: number;
  status: "processed" | "failed";
  failureReason: string | null;
  counts: { tests: number; passed: number; failed: number; errored: number; skipped: number } | null;
  durationMs: number | null;
};

export type ReplayResult = { uploaded: number; processed: number; failed: number; runs: ReplayedRun[] };

class ReplayError extends Error {
  override name = "ReplayError";
  constructor(
    message: string,
    readonly status?: number,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

type UploadedRunBody = {
  number: number;
  status: RunStatus;
  failure_reason: string | null;
  duration_ms: number | null;
  tests_count: number;
  passed_count: number;
  failed_count: number;
  errored_count: number;
  skipped_count: number;
};

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function uploadUrl(baseUrl: string, run: SimRun): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, "")}/uploads/v1/test_runs`);
  url.searchParams.set("branch", run.branch);
  url.searchParams.set("commit_sha", run.commit_sha);
  url.searchParams.set("started_at", run.created_at);
  if (run.base_commit_sha !== undefined) url.searchParams.set("base_commit_sha", run.base_commit_sha);
  return url.toString();
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function retryAfterMs(response: Response, fallback: number): number {
  const header = Number(response.headers.get("retry-after"));
  return Number.isFinite(header) && header >= 0 ? header * 1000 : fallback;
}

/** One request with retries on network errors, 5xx and 429; other statuses are returned. */
async function send(
  doFetch: typeof fetch,
  url: string,
  init: RequestInit,
  maxRetries: number,
  sleep: (ms: number) => Promise<void>,
): Promise<Response> {
  let attempt = 0;
  for (;;) {
    let response: Response | null = null;
    let error: unknown = null;
    try {
      response = await doFetch(url, init);
    } catch (caught) {
      error = caught;
    }
    const transient = response === null || response.status >= 500 || response.status === 429;
    if (!transient) return response!;
    if (response?.status === 429) {
      // Rate limited: wait as told; this does not use up a retry.
      await response.body?.cancel();
      await sleep(retryAfterMs(response, 1000));
      continue;
    }
    if (attempt >= maxRetries) {
      if (response) return response;
      throw new ReplayError(`Request to ${url} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    await response?.body?.cancel();
    await sleep(Math.min(5000, 200 * 2 ** attempt));
    attempt++;
  }
}

export async function replayThroughUploads(options: ReplayOptions): Promise<ReplayResult> {
  const doFetch = options.fetch ?? fetch;
  const sleep = options.sleep ?? defaultSleep;
  const prefix = options.idempotencyPrefix ?? `sim-${crypto.randomUUID()}`;
  const timeoutMs = options.processingTimeoutMs ?? 60_000;
  const firstPoll = options.pollIntervalMs ?? 50;
  const maxRetries = options.maxRetries ?? 5;
  const authorization = `Bearer ${options.uploadToken}`;
  const base = options.baseUrl.replace(/\/+$/, "");
  const result: ReplayResult = { uploaded: 0, processed: 0, failed: 0, runs: [] };

  for (const [index, run] of options.runs.entries()) {
    const posted = await send(
      doFetch,
      uploadUrl(base, run),
      {
        method: "POST",
        headers: { Authorization: authorization, "Content-Type": "application/xml", "Idempotency-Key": `${prefix}-${run.number}` },
        body: toJUnitXml(run),
      },
      maxRetries,
      sleep,
    );
    const postedBody = await readBody(posted);
    if (posted.status !== 202) {
      throw new ReplayError(
        `Upload of simulated run ${run.number} answered ${posted.status}: ${JSON.stringify(postedBody).slice(0, 500)}`,
        posted.status,
        postedBody,
      );
    }
    result.uploaded++;
    let current = postedBody as UploadedRunBody;
    const serviceNumber = current.number;

    // Wait until it leaves "pending": the next run must not be processed before this one.
    const deadline = Date.now() + timeoutMs;
    let interval = firstPoll;
    while (current.status === "pending") {
      if (Date.now() > deadline)
        throw new ReplayError(`Run ${serviceNumber} (simulated ${run.number}) is still pending after ${timeoutMs} ms.`);
      await sleep(interval);
      interval = Math.min(1000, interval * 2);
      const polled = await send(
        doFetch,
        `${base}/uploads/v1/test_runs/${serviceNumber}`,
        { headers: { Authorization: authorization } },
        maxRetries,
        sleep,
      );
      const body = await readBody(polled);
      if (polled.status !== 200)
        throw new ReplayError(
          `Polling run ${serviceNumber} answered ${polled.status}: ${JSON.stringify(body).slice(0, 500)}`,
          polled.status,
          body,
        );
      current = body as UploadedRunBody;
    }

    const replayed: ReplayedRun = {
      simulatedNumber: run.number,
      serviceNumber,
      status: current.status,
      failureReason: current.failure_reason ?? null,
      counts:
        current.status === "processed"
          ? {
              tests: current.tests_count,
              passed: current.passed_count,
              failed: current.failed_count,
              errored: current.errored_count,
              skipped: current.skipped_count,
            }
          : null,
      durationMs: current.duration_ms ?? null,
    };
    if (replayed.status === "processed") result.processed++;
    else result.failed++;
    result.runs.push(replayed);
    options.onRun?.(replayed, index, options.runs.length);
  }
  return result;
}
