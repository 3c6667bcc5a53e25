/**
 * Signed-in pages: `signedIn` finds the request's session (better-auth, per request) or sends the
 * browser to `/sign-in?next=<this page>`; `safeNextPath` is the only way a `next` value is
 * followed, so sign-in can only lead back to a page of this origin.
 */
import type { Context, MiddlewareHandler } from "hono";
import { currentPerson } from "../auth/people";
import { listMemberships } from "../services/tenancy/memberships";
import type { WebConfig, WebEnv, WebPaths } from "./env";

/** Paths `next` never leads to: they would bring the person back to signing in or out. */
const NOT_NEXT = new Set(["/sign-in", "/sign-up", "/sign-up/sent", "/sign-out", "/reset-password", "/reset-password/sent"]);

/**
 * Whether a path stays on the origin that serves it: one leading `/`. A browser reads a Location
 * of `//host/…` (or `/\host/…`, backslash being a slash in http URLs) as another site.
 */
const isOriginRelative = (path: string) => path.startsWith("/") && path[1] !== "/" && path[1] !== "\\";

/**
 * A `next` value as a path of this app: relative to the origin (`/…`, not `//host` or `/\host`),
 * no control characters or backslashes, at most 2,000 characters; anything else is `/`. The rule
 * is checked on the raw value and again on the path URL parsing makes of it: dot segments
 * (`/.//host`, `/..//host`, `/%2e//host`) are removed by parsing and can leave a `//host` behind.
 */
export function safeNextPath(raw: unknown): string {
  if (typeof raw !== "string" || raw.length > 2000 || !isOriginRelative(raw)) return "/";
  if (/[\u0000-\u001f\u007f\\]/.test(raw)) return "/";
  const base = "http://next.invalid";
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    return "/";
  }
  if (url.origin !== base || !isOriginRelative(url.pathname) || NOT_NEXT.has(url.pathname)) return "/";
  return `${url.pathname}${url.search}`;
}

/** Where a signed-out visit to `path` is sent. */
function signInLocation(paths: WebPaths, path: string): string {
  const next = safeNextPath(path);
  return next === "/" ? paths.to("/sign-in") : paths.to(`/sign-in?next=${encodeURIComponent(next)}`);
}

/** The path and query of the request, as the app routes it. */
const requestPath = (c: Context) => {
  const url = new URL(c.req.url);
  return `${url.pathname}${url.search}`;
};

export const peopleDeps = (c: Context<WebEnv>, config: WebConfig) => ({
  db: c.env.db,
  secrets: config.secrets,
  webAppUrl: config.webAppUrl,
  webAppLoopbackAliases: config.webAppLoopbackAliases,
});

/**
 * Before a form of the pages writes (the Worker only): brackets every organization the person is a
 * member of, since a page's write can only reach those (docs/edge-path.md, "Edge-cached reads").
 * Coarse, and one statement more for a form post, but it needs no page to name its organization.
 */
async function bracketPersonsOrganizations(c: Context<WebEnv>, userId: string): Promise<void> {
  const edgeCache = c.env.edgeCache;
  if (!edgeCache?.writes) return;
  for (const membership of await listMemberships(c.env, userId)) await edgeCache.beforeWrite(membership.organizationId);
}

/** Lets the request through with `c.var.person` set, or redirects a signed-out visitor to sign-in (302). */
export function signedIn(config: WebConfig, paths: WebPaths): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    const found = await currentPerson(peopleDeps(c, config), c.req.raw.headers);
    if (!found) return c.redirect(signInLocation(paths, requestPath(c)), 302);
    c.set("person", found.person);
    await bracketPersonsOrganizations(c, found.person.userId);
    await next();
    // better-auth extends a session now and then; the browser gets the renewed cookie.
    for (const cookie of found.cookies) c.res.headers.append("set-cookie", cookie);
  };
}

/** Appends better-auth's Set-Cookie values to a response. */
export function withCookies(response: Response, cookies: readonly string[]): Response {
  for (const cookie of cookies) response.headers.append("set-cookie", cookie);
  return response;
}
