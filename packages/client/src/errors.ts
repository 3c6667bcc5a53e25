import type { components } from "./schema.js";

/** The body of every error answer: `{ "error": { "code", "message", "details"? } }`. */
export type ErrorEnvelope = components["schemas"]["Error"];
/** The machine-readable codes the service answers with: branch on these, not on messages. */
export type ApiErrorCode = ErrorEnvelope["error"]["code"];
/** One rejected field of a `validation_failed` (or some `invalid_request`) error. */
export type ApiErrorDetail = NonNullable<ErrorEnvelope["error"]["details"]>[number];

/**
 * A non-2xx answer, thrown by every call of the clients. `code` is null when the body was not the
 * service's error envelope (a proxy or gateway in between answered, say).
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  /** The HTTP status (4xx, 5xx; 304 when a conditional request was answered "not modified"). */
  readonly status: number;
  readonly code: ApiErrorCode | null;
  readonly details: ApiErrorDetail[];
  /** The `Request-Id` header: quote it when reporting a problem. */
  readonly requestId: string | null;
  /** Seconds to wait before retrying, from `Retry-After` (429 and 503 answers); null without one. */
  readonly retryAfter: number | null;
  /** The answer itself (its body already read), for its other headers. */
  readonly response: Response;

  constructor(response: Response, body: unknown) {
    const envelope = isErrorEnvelope(body) ? body.error : null;
    super(
      envelope
        ? envelope.message
        : `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""} (not an API error body)`,
    );
    this.status = response.status;
    this.code = envelope?.code ?? null;
    this.details = envelope?.details ?? [];
    this.requestId = response.headers.get("request-id");
    this.retryAfter = retryAfterSeconds(response.headers.get("retry-after"));
    this.response = response;
  }
}

function isErrorEnvelope(body: unknown): body is ErrorEnvelope {
  if (typeof body !== "object" || body === null || !("error" in body)) return false;
  const error = (body as { error: unknown }).error;
  return (
    typeof error === "object" &&
    error !== null &&
    typeof (error as { code?: unknown }).code === "string" &&
    typeof (error as { message?: unknown }).message === "string"
  );
}

/** `Retry-After` in seconds: delta-seconds or an HTTP date (rounded up, never negative); null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now: number = Date.now()): number | null {
  if (value === null || value.trim() === "") return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}
