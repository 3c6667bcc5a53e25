/**
 * HTTP requests with retries: 429, 500, 502, 503, 504 and network errors are retried with
 * exponential backoff and full jitter, honouring Retry-After; other statuses are final, and so is
 * a 429 `quota_exceeded` (a quota of the organization is used up: waiting does not help).
 */
import { nonEmpty } from "./format";

/** Statuses worth another attempt; other 4xx are final. */
export const RETRYABLE_STATUSES = new Set([429, 500, 502, 503, 504]);
export const DEFAULT_RETRIES = 4; // 5 attempts in all
export const DEFAULT_BASE_DELAY_MS = 1_000;
export const DEFAULT_MAX_DELAY_MS = 30_000;
export const MAX_RETRY_AFTER_MS = 120_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;

export type Sleep = (ms: number) => Promise<unknown>;

export type RetryOptions = {
  fetch?: typeof fetch;
  /** Retries after the first attempt (default 4). */
  retries?: number;
  /** Backoff base (default 1000). */
  baseDelayMs?: number;
  /** Backoff cap (default 30000). */
  maxDelayMs?: number;
  /** Cap on Retry-After (default 120000). */
  maxRetryAfterMs?: number;
  /** Per attempt (default 120000). */
  timeoutMs?: number;
  sleep?: Sleep;
  random?: () => number;
  now?: () => number;
  onRetry?: (info: RetryInfo) => void;
};

type RetryInfo = {
  /** The attempt that failed (1-based). */
  attempt: number;
  /** Attempts allowed in all. */
  attempts: number;
  /** Wait before the next attempt. */
  delayMs: number;
  status?: number;
  reason: string;
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the service's JSON, checked field by field where it is read.
export type HttpResponse = { kind: "response"; status: number; headers: Headers; text: string; json: any; attempts: number };
type HttpNetworkError = { kind: "network-error"; error: unknown; message: string; attempts: number };
export type HttpResult = HttpResponse | HttpNetworkError;

/**
 * Retry-After as milliseconds: delta-seconds or an HTTP-date; null when absent or unreadable.
 * Capped at `maxMs` (120 s by default); a date in the past gives 0.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs = Date.now(), maxMs = MAX_RETRY_AFTER_MS): number | null {
  const text = nonEmpty(value ?? undefined);
  if (text === undefined) return null;
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return null;
    ms = Math.max(0, at - nowMs);
  }
  return Math.min(ms, maxMs);
}

/**
 * Exponential backoff with full jitter: a random delay in [0, min(cap, base · 2^(retry-1))).
 * @param retry 1 for the first retry
 */
export function backoffDelay(retry: number, options: { baseMs?: number; capMs?: number; random?: () => number } = {}): number {
  const { baseMs = DEFAULT_BASE_DELAY_MS, capMs = DEFAULT_MAX_DELAY_MS, random = Math.random } = options;
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

export function realSleep(ms: number): Promise<void> {
  return new Promise((resolvePromise) => setTimeout(resolvePromise, ms));
}

/**
 * What went wrong with a fetch that threw, in a few words (no URLs with secrets: we never put
 * the token in a URL).
 */
export function describeNetworkError(error: unknown): string {
  const err = error as
    { name?: unknown; code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } } | null | undefined;
  if (err?.name === "TimeoutError") return "request timed out";
  const cause = err?.cause;
  const code = cause?.code ?? err?.code;
  const message = cause?.message ?? err?.message ?? String(error);
  return code && !String(message).includes(String(code)) ? `${code}: ${message}` : String(message);
}

/**
 * One HTTP request with retries on 429/500/502/503/504 and network errors. Returns the last
 * response (whatever its status) or the last network error once attempts run out.
 */
export async function requestWithRetry(url: string, init: RequestInit, options: RetryOptions = {}): Promise<HttpResult> {
  const {
    fetch: fetchFn = globalThis.fetch,
    retries = DEFAULT_RETRIES,
    baseDelayMs = DEFAULT_BASE_DELAY_MS,
    maxDelayMs = DEFAULT_MAX_DELAY_MS,
    maxRetryAfterMs = MAX_RETRY_AFTER_MS,
    timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS,
    sleep = realSleep,
    random = Math.random,
    now = Date.now,
    onRetry,
  } = options;
  const attempts = retries + 1;
  for (let attempt = 1; ; attempt++) {
    let result: HttpResult;
    try {
      const response = await fetchFn(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
      const text = await response.text();
      let json = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = null;
      }
      result = { kind: "response", status: response.status, headers: response.headers, text, json, attempts: attempt };
    } catch (error) {
      result = { kind: "network-error", error, message: describeNetworkError(error), attempts: attempt };
    }
    const retryable = result.kind === "network-error" || (RETRYABLE_STATUSES.has(result.status) && !isQuotaExceeded(result));
    if (!retryable || attempt >= attempts) return result;

    let delayMs = backoffDelay(attempt, { baseMs: baseDelayMs, capMs: maxDelayMs, random });
    if (result.kind === "response") {
      const retryAfter = parseRetryAfter(result.headers.get("retry-after"), now(), maxRetryAfterMs);
      if (retryAfter !== null) delayMs = retryAfter;
    }
    onRetry?.({
      attempt,
      attempts,
      delayMs,
      status: result.kind === "response" ? result.status : undefined,
      reason: result.kind === "response" ? describeHttpError(result) : result.message,
    });
    await sleep(delayMs);
  }
}

/**
 * A 429 whose code is `quota_exceeded`: the organization holds as much as its quota allows
 * (docs/quotas.md). Unlike `rate_limited`, waiting makes no room, so it is never retried.
 */
export function isQuotaExceeded(response: HttpResponse): boolean {
  return response.status === 429 && response.json?.error?.code === "quota_exceeded";
}

/** "422 validation_failed: message" from the service's error envelope (or the start of the body). */
export function describeHttpError(response: HttpResponse): string {
  const error = response.json?.error;
  if (error && typeof error === "object") {
    const code = typeof error.code === "string" ? ` ${error.code}` : "";
    const message = typeof error.message === "string" ? `: ${error.message}` : "";
    return `${response.status}${code}${message}`;
  }
  const snippet = response.text.replace(/\s+/g, " ").trim().slice(0, 200);
  return snippet ? `${response.status}: ${snippet}` : `HTTP ${response.status}`;
}

/** The `details` of the service's error envelope, one line each. */
export function errorDetails(response: HttpResponse): string[] {
  const details = response.json?.error?.details;
  if (!Array.isArray(details)) return [];
  return details.map((d) => (typeof d === "object" && d ? `${d.field ?? "?"}: ${d.message ?? ""}` : String(d)));
}
