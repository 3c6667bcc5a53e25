import { createMiddleware } from "hono/factory";
import type { AppDeps, AppEnv } from "../app-env";
import type { KeyGate } from "../auth/key-gate";
import { ApiError } from "../lib/errors";
import type { RateLimitDecision } from "../lib/rate-limit";

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;

export function unauthorized(message: string): ApiError {
  return new ApiError("unauthorized", message, { headers: { "WWW-Authenticate": 'Bearer realm="api"' } });
}

/** Reads the presented bearer token, or throws 401 for a missing or malformed header. */
export function bearerToken(header: string | undefined, credential = "API key"): string {
  if (header === undefined || header.trim() === "") {
    throw unauthorized(`Missing ${credential}: send it as 'Authorization: Bearer <${credential === "API key" ? "key" : "token"}>'.`);
  }
  const match = BEARER.exec(header);
  if (!match) throw unauthorized(`Malformed Authorization header: expected 'Bearer <${credential === "API key" ? "key" : "token"}>'.`);
  return match[1]!;
}

/** IETF draft-ietf-httpapi-ratelimit-headers fields, as DESIGN.md chose them. */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    "RateLimit-Policy": `"default";q=${decision.limit};w=${decision.windowSeconds}`,
    RateLimit: `"default";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

/**
 * Authentication, then the rate limit (validation comes after, in the routes): resolves the
 * organization's API key through the key gate, counts the request against it, and scopes every
 * later service call to the key's organization. Every authenticated response carries the
 * RateLimit headers.
 */
export function authenticateAndLimit(deps: AppDeps, gate: KeyGate) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const admission = await gate.admit(bearerToken(c.req.header("authorization")));
    if (!admission) throw unauthorized("Invalid API key: it is malformed, unknown or has been replaced.");
    const { auth, decision } = admission;
    const headers = rateLimitHeaders(decision);
    if (!decision.allowed) {
      throw new ApiError(
        "rate_limited",
        `Rate limit of ${decision.limit} requests per ${decision.windowSeconds} seconds exceeded; retry after ${decision.retryAfterSeconds} seconds.`,
        { headers: { ...headers, "Retry-After": String(decision.retryAfterSeconds) } },
      );
    }
    c.set("auth", auth);
    c.set("scope", { db: deps.db, clock: deps.clock, webAppUrl: deps.webAppUrl, organizationId: auth.organizationId });
    await next();
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  });
}
