import { ErrorEnvelopeSchema } from "../contract/schemas";

const DESCRIPTIONS = {
  400: "invalid_request: bad limit or cursor, unknown filter value, malformed JSON.",
  401: "unauthorized: the key is missing, malformed or no longer valid.",
  404: "not_found: the resource does not exist or belongs to another organization.",
  405: "method_not_allowed: the path exists but not with this method.",
  409: "run_not_processed: the run is not processed (pending, or its processing failed), so it has no comparison yet (docs/verdicts.md); run_completed: a part for a run whose completion was decided, not a retry (docs/uploads.md); split_plan_mismatch: a split plan's key asked again with other items, shards or kind (docs/splitting.md).",
  410: "past_retention: the test cases asked for (or the export's window) are from before the project's retention: deleted, or about to be (docs/retention.md); the message says from when data is kept.",
  413: "payload_too_large: the body exceeds the size limit.",
  415: "unsupported_media_type: the body is not sent as application/json.",
  422: "validation_failed: the request was understood but its data was rejected; see details.",
  429: "rate_limited: too many requests; wait Retry-After seconds.",
  500: "internal_error: an unexpected fault; the message is generic.",
  503: "service_unavailable: a dependency is unreachable; retry later.",
} as const;

type Status = keyof typeof DESCRIPTIONS;

export const rateLimitHeaders = {
  RateLimit: { description: 'Remaining quota: `"default";r=<remaining>;t=<seconds>`.', schema: { type: "string" as const } },
  "RateLimit-Policy": {
    description: '`"default";q=600;w=60`: 600 requests in any rolling 60 seconds per API key.',
    schema: { type: "string" as const },
  },
};

/** Error responses for an operation, each described with the error envelope's schema. */
export function errorResponses(...statuses: Status[]) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: DESCRIPTIONS[status],
        content: { "application/json": { schema: ErrorEnvelopeSchema } },
        ...(status === 429
          ? {
              headers: {
                ...rateLimitHeaders,
                "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer" as const } },
              },
            }
          : status === 503
            ? { headers: { "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer" as const } } } }
            : {}),
      },
    ]),
  ) as Record<Status, { description: string; content: { "application/json": { schema: typeof ErrorEnvelopeSchema } } }>;
}

/** Every authenticated /api/v1 operation can answer these (503: the database or the rate limiter is unreachable). */
export const COMMON_ERRORS = [401, 429, 500, 503] as const;

export function jsonOk<T>(schema: T, description: string) {
  return { description, headers: rateLimitHeaders, content: { "application/json": { schema } } };
}
