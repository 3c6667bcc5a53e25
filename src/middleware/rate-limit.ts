import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env";
import { ApiError } from "../lib/errors";
import type { RateLimitDecision, RateLimiter } from "../lib/rate-limit";

/** IETF draft-ietf-httpapi-ratelimit-headers fields, as DESIGN.md chose them. */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    "RateLimit-Policy": `"default";q=${decision.limit};w=${decision.windowSeconds}`,
    RateLimit: `"default";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

/** Counts the request against the caller's key (after authentication, before validation). */
export function rateLimit(limiter: RateLimiter) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const decision = await limiter.consume(c.get("auth").apiKeyId);
    const headers = rateLimitHeaders(decision);
    if (!decision.allowed) {
      throw new ApiError("rate_limited", `Rate limit of ${decision.limit} requests per ${decision.windowSeconds} seconds exceeded; retry after ${decision.retryAfterSeconds} seconds.`, {
        headers: { ...headers, "Retry-After": String(decision.retryAfterSeconds) },
      });
    }
    await next();
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  });
}
