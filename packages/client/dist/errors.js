/**
 * A non-2xx answer, thrown by every call of the clients. `code` is null when the body was not the
 * service's error envelope (a proxy or gateway in between answered, say).
 */
export class ApiError extends Error {
    name = "ApiError";
    /** The HTTP status (4xx, 5xx; 304 when a conditional request was answered "not modified"). */
    status;
    code;
    details;
    /** The `Request-Id` header: quote it when reporting a problem. */
    requestId;
    /** Seconds to wait before retrying, from `Retry-After` (429 and 503 answers); null without one. */
    retryAfter;
    /** The answer itself (its body already read), for its other headers. */
    response;
    constructor(response, body) {
        const envelope = isErrorEnvelope(body) ? body.error : null;
        super(envelope
            ? envelope.message
            : `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""} (not an API error body)`);
        this.status = response.status;
        this.code = envelope?.code ?? null;
        this.details = envelope?.details ?? [];
        this.requestId = response.headers.get("request-id");
        this.retryAfter = retryAfterSeconds(response.headers.get("retry-after"));
        this.response = response;
    }
}
function isErrorEnvelope(body) {
    if (typeof body !== "object" || body === null || !("error" in body))
        return false;
    const error = body.error;
    return (typeof error === "object" &&
        error !== null &&
        typeof error.code === "string" &&
        typeof error.message === "string");
}
/** `Retry-After` in seconds: delta-seconds or an HTTP date (rounded up, never negative); null when absent or unreadable. */
export function retryAfterSeconds(value, now = Date.now()) {
    if (value === null || value.trim() === "")
        return null;
    if (/^\s*\d+\s*$/.test(value))
        return Number(value);
    const date = Date.parse(value);
    return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}
