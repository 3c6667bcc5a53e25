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
export declare class ApiError extends Error {
    readonly name = "ApiError";
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
    constructor(response: Response, body: unknown);
}
/** `Retry-After` in seconds: delta-seconds or an HTTP date (rounded up, never negative); null when absent or unreadable. */
export declare function retryAfterSeconds(value: string | null, now?: number): number | null;
