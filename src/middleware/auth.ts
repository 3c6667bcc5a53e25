/**
 * Admission of a bearer credential, the same for API keys (/api/v1) and upload tokens
 * (/uploads/v1): authentication, then the rate limit (validation comes after, in the routes).
 * Every admitted response carries the RateLimit headers; a refused one carries them with
 * Retry-After.
 */
import type { Context, Env } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppConfig, AppEnv } from "../app-env";
import { type KeyIdCache, admitApiKey } from "../auth/key-gate";
import { ApiError } from "../lib/errors";
import { type RateLimitDecision, rateLimitHeaders } from "../lib/rate-limit";
import { tellEdgeCache } from "./edge-admission";

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

/** One kind of bearer credential, as the admission middleware needs to know it. */
export type BearerCredential<E extends Env> = {
  /** How messages name it: "API key", "upload token". */
  name: string;
  /** The 401 message for a malformed, unknown or replaced credential. */
  invalidMessage: string;
  /** The 429 message. */
  limitMessage: (decision: RateLimitDecision) => string;
  /**
   * Resolves the token and counts the request; sets what later handlers read on the context.
   * Null: not a live credential.
   */
  admit: (c: Context<E>, token: string) => Promise<RateLimitDecision | null>;
};

export function admitBearer<E extends Env>(credential: BearerCredential<E>) {
  return createMiddleware<E>(async (c, next) => {
    const decision = await credential.admit(c, bearerToken(c.req.header("authorization"), credential.name));
    if (!decision) throw unauthorized(credential.invalidMessage);
    const headers = rateLimitHeaders(decision);
    if (!decision.allowed) {
      throw new ApiError("rate_limited", credential.limitMessage(decision), {
        headers: { ...headers, "Retry-After": String(decision.retryAfterSeconds) },
      });
    }
    await next();
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  });
}

/**
 * /api/v1's gate: resolves the organization's API key (src/auth/key-gate.ts), counts the request
 * against it, and scopes every later service call to the key's organization.
 */
export function authenticateApiKey(config: Pick<AppConfig, "webAppUrl" | "retention"> & { keyIdCache: KeyIdCache }) {
  return admitBearer<AppEnv>({
    name: "API key",
    invalidMessage: "Invalid API key: it is malformed, unknown or has been replaced.",
    limitMessage: (d) =>
      `Rate limit of ${d.limit} requests per ${d.windowSeconds} seconds exceeded; retry after ${d.retryAfterSeconds} seconds.`,
    admit: async (c, token) => {
      const { db, clock, keyCounter } = c.env;
      const admission = await admitApiKey({ db, keyCounter, keyIdCache: config.keyIdCache }, token);
      if (!admission) return null;
      const { organizationId, apiKeyId } = admission.auth;
      c.set("auth", admission.auth);
      c.set("scope", { db, clock, webAppUrl: config.webAppUrl, organizationId, retention: config.retention });
      await tellEdgeCache(c.env.edgeCache, { organizationId, counter: "key", counterId: apiKeyId }, admission.decision.allowed);
      return admission.decision;
    },
  });
}
