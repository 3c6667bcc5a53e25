/**
 * Rolling-window rate limiting: at most `limit` accepted requests in any `windowMs`.
 *
 * The state is the list of accepted timestamps inside the window (at most `limit` numbers).
 * A request is accepted when fewer than `limit` are in the window; rejected requests are not
 * recorded, so they consume nothing. This one pure function is used by the in-memory limiter
 * and by the Durable Object, so both count exactly the same way.
 */
export type RateLimitPolicy = { limit: number; windowMs: number };
export const DEFAULT_RATE_LIMIT: RateLimitPolicy = { limit: 600, windowMs: 60_000 };

export type RateLimitDecision = {
  allowed: boolean;
  limit: number;
  windowSeconds: number;
  /** Requests left in the window after this one. */
  remaining: number;
  /** Seconds until the oldest counted request leaves the window (quota grows again); 0 when nothing is counted. */
  resetSeconds: number;
  /** On rejection: whole seconds to wait before a retry can succeed (≥ 1). */
  retryAfterSeconds?: number;
};

/**
 * Decides one request and updates `window` (ascending accepted timestamps) in place:
 * expired entries are dropped from the front, an accepted request is appended. O(1) amortized.
 */
export function consumeRollingWindow(window: number[], nowMs: number, policy: RateLimitPolicy): RateLimitDecision {
  const windowStart = nowMs - policy.windowMs;
  let expired = 0;
  while (expired < window.length && window[expired]! <= windowStart) expired++;
  if (expired > 0) window.splice(0, expired);

  const allowed = window.length < policy.limit;
  if (allowed) window.push(nowMs);
  const oldest = window[0];
  const msUntilOldestExpires = oldest === undefined ? 0 : oldest + policy.windowMs - nowMs;
  const decision: RateLimitDecision = {
    allowed,
    limit: policy.limit,
    windowSeconds: Math.ceil(policy.windowMs / 1000),
    remaining: Math.max(0, policy.limit - window.length),
    resetSeconds: Math.max(0, Math.ceil(msUntilOldestExpires / 1000)),
  };
  if (!allowed) decision.retryAfterSeconds = secondsUntil(msUntilOldestExpires, 0);
  return decision;
}

/** Whole seconds until `endMs` (at least 1): a Retry-After that never says "now" while still refusing. */
export const secondsUntil = (endMs: number, nowMs: number) => Math.max(1, Math.ceil((endMs - nowMs) / 1000));

/** IETF draft-ietf-httpapi-ratelimit-headers fields, as docs/api-decisions.md records them (the app's and the edge Worker's). */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    "RateLimit-Policy": `"default";q=${decision.limit};w=${decision.windowSeconds}`,
    RateLimit: `"default";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}
