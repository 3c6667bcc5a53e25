/**
 * Domain errors and the one error envelope. Services throw ApiError (no HTTP imports);
 * the app's error handler turns every failure into `{error: {code, message, details?}}`.
 */
import { ERROR_STATUS, type ErrorCode } from "./vocabulary";

export type { ErrorCode } from "./vocabulary";
export type ErrorDetail = { field: string; message: string };

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];
  /** Extra response headers, e.g. Retry-After on 429 or Allow on 405. */
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.details = options.details;
    this.headers = options.headers;
  }

  get status(): (typeof ERROR_STATUS)[ErrorCode] {
    return ERROR_STATUS[this.code];
  }

  toBody(): ErrorEnvelope {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

export type ErrorEnvelope = { error: { code: ErrorCode; message: string; details?: ErrorDetail[] } };

/** One "not found" for missing and foreign resources, so the two cannot be told apart. */
/** A 429 `rate_limited` that says when to come back (Retry-After, in seconds). */
export function rateLimited(message: string, retryAfterSeconds: number): ApiError {
  return new ApiError("rate_limited", message, { headers: { "Retry-After": String(retryAfterSeconds) } });
}

export function notFound(resource: string): ApiError {
  return new ApiError("not_found", `${resource} not found.`);
}

/**
 * 410 `past_retention` (docs/retention.md): `what` is from before `keptFrom`, the first instant of
 * data kept `days` days; the message says both, and what is kept instead.
 */
export function pastRetention(what: string, keptFrom: Date, days: number, instead: string): ApiError {
  return new ApiError(
    "past_retention",
    `${what} from before ${keptFrom.toISOString()}, past the ${days}-day retention, ${days === 1 ? "is" : "are"} not kept. ${instead}`,
  );
}

export function validationFailed(details: ErrorDetail[]): ApiError {
  return new ApiError("validation_failed", "The request was understood but its data was rejected.", { details });
}

/**
 * What the log keeps of an unexpected error. Drizzle wraps database errors in a message that
 * quotes the SQL and its parameters (request data); the log keeps the database's own message and
 * code instead, so request values do not end up in logs.
 */
export function describeError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const cause = error.cause as { message?: string; code?: string } | undefined;
  const fromQuery = error.message.startsWith("Failed query");
  return {
    name: error.name,
    message: fromQuery ? `database error: ${cause?.message ?? "unknown"}` : error.message,
    ...(cause?.code ? { code: cause.code } : {}),
    stack: fromQuery ? undefined : error.stack,
  };
}
