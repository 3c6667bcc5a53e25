import { createMiddleware } from "hono/factory";
import type { AppDeps, AppEnv } from "../app-env";
import { ApiError } from "../lib/errors";
import { authenticateApiKey } from "../services/organizations";

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;

export function unauthorized(message: string): ApiError {
  return new ApiError("unauthorized", message, { headers: { "WWW-Authenticate": 'Bearer realm="api"' } });
}

/** Reads the presented bearer token, or throws 401 for a missing or malformed header. */
export function bearerToken(header: string | undefined): string {
  if (header === undefined || header.trim() === "") {
    throw unauthorized("Missing API key: send it as 'Authorization: Bearer <key>'.");
  }
  const match = BEARER.exec(header);
  if (!match) throw unauthorized("Malformed Authorization header: expected 'Bearer <key>'.");
  return match[1]!;
}

/** Authenticates the organization's API key and scopes every later service call to its organization. */
export function apiKeyAuth(deps: AppDeps) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const token = bearerToken(c.req.header("authorization"));
    const auth = await authenticateApiKey(deps, token);
    if (!auth) throw unauthorized("Invalid API key: it is malformed, unknown or has been replaced.");
    c.set("auth", auth);
    c.set("scope", { db: deps.db, clock: deps.clock, webAppUrl: deps.webAppUrl, organizationId: auth.organizationId });
    await next();
  });
}
