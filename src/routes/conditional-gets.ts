/**
 * Conditional GETs for /api/v1 (docs/conditional-requests.md). Every GET after authentication
 * answers 200 with an `ETag`, and `If-None-Match` naming the current tag gets a 304 with no body.
 *
 * The tag is an HMAC of the organization, its data version (src/services/shared/data-versions.ts) and the
 * request's path and query: it changes whenever anything the organization's GETs show changes,
 * it is never shared by two organizations or two URLs, and it cannot be forged to probe another
 * organization. A conditional GET reads the version in one small statement and answers 304
 * without running the route's query; an unconditional one reads it as a column of its first
 * statement, so a 200 costs no statement more than before.
 */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env";
import { base64UrlEncode, hmacSha256, utf8 } from "../lib/crypto";
import { namesTag, parseIfNoneMatch } from "../lib/entity-tags";
import { type DataVersionSink, readDataVersion } from "../services/shared/data-versions";

/**
 * Part of every tag: change it when a release changes what an unchanged resource looks like (a
 * new field, a new format), so that clients holding older tags get the new representation.
 */
const REPRESENTATION = "1";

/** Revalidate before every use; only the client (never a shared cache) may keep a copy, per key. */
const CONDITIONAL_CACHE_HEADERS = { "Cache-Control": "private, no-cache", Vary: "Authorization" } as const;

/**
 * GETs whose answer depends on today's date as well as on stored rows: the cost of flakiness
 * defaults its window to the last 30 days. Their tag names the UTC day of the request's start too,
 * so that yesterday's tag does not revalidate today's window (docs/conditional-requests.md).
 */
function dependsOnToday(path: string): boolean {
  return /\/flakiness_cost$/.test(path);
}

/** The streamed exports carry no ETag (they are read once, whole). */
function isConditionalPath(path: string): boolean {
  return !/\/exports(?:\/|$)/.test(path);
}

function entityTag(secret: string, organizationId: string, version: string, pathAndQuery: string): string {
  const mac = hmacSha256(secret, utf8(`etag\u0000${REPRESENTATION}\u0000${organizationId}\u0000${version}\u0000${pathAndQuery}`));
  return `"${base64UrlEncode(mac.slice(0, 18))}"`;
}

/** Registered after authentication, so a 304 carries the RateLimit headers and counts as a request. */
export function conditionalGets(secret: string) {
  return createMiddleware<AppEnv>(async (c, next) => {
    if ((c.req.method !== "GET" && c.req.method !== "HEAD") || !isConditionalPath(c.req.path)) return next();
    const scope = c.get("scope");
    const sink: DataVersionSink = { asOf: c.env.clock.now() };
    c.set("scope", { ...scope, dataVersion: sink });
    const url = new URL(c.req.url);
    const today = dependsOnToday(url.pathname) ? `\u0000${sink.asOf.toISOString().slice(0, 10)}` : "";
    const tagOf = (version: string) => entityTag(secret, scope.organizationId, version, url.pathname + url.search + today);
    const condition = parseIfNoneMatch(c.req.header("if-none-match"));

    if (condition && !condition.any) {
      // Read before the route's statements, so the 200 that may follow is tagged with it too.
      sink.value = await readDataVersion(scope.db, scope.organizationId, sink.asOf);
      if (sink.value !== null && namesTag(condition, tagOf(sink.value))) {
        return c.body(null, 304, { ETag: tagOf(sink.value), ...CONDITIONAL_CACHE_HEADERS });
      }
    }

    await next();
    if (c.res.status !== 200 || sink.value === undefined || sink.value === null) return;
    const etag = tagOf(sink.value);
    // `*` matches any current representation: there is one, since the route answered 200.
    if (condition?.any) {
      c.res = new Response(null, { status: 304, headers: { ETag: etag, ...CONDITIONAL_CACHE_HEADERS } });
      return;
    }
    c.res.headers.set("ETag", etag);
    for (const [name, value] of Object.entries(CONDITIONAL_CACHE_HEADERS)) c.res.headers.set(name, value);
  });
}

type Operation = { parameters?: unknown[]; responses?: Record<string, { description?: string; headers?: Record<string, unknown> }> };

/**
 * Declares the conditional GETs in the OpenAPI document: on every GET the middleware serves (so a
 * new GET cannot be left out), the `If-None-Match` parameter, the `ETag` of the 200 and the 304.
 */
export function declareConditionalGets(paths: Record<string, Record<string, unknown>>, rateLimitHeaders: Record<string, unknown>): void {
  const etagHeader = {
    description: "Names this representation; send it back in `If-None-Match` to revalidate (docs/conditional-requests.md).",
    schema: { type: "string" },
  };
  const cacheControl = {
    description: "`private, no-cache`: a client may keep the answer, and revalidates it before each use.",
    schema: { type: "string" },
  };
  for (const [path, item] of Object.entries(paths)) {
    const get = item.get as Operation | undefined;
    if (!get || !isConditionalPath(path)) continue;
    get.parameters = [
      ...(get.parameters ?? []),
      {
        name: "If-None-Match",
        in: "header",
        required: false,
        description:
          "ETags of representations you hold (a list, weak or strong, or `*`). When one is current the answer is a 304 with no body. A 304 counts toward the rate limit like any request.",
        schema: { type: "string" },
      },
    ];
    const ok = get.responses?.["200"];
    if (ok) ok.headers = { ...ok.headers, ETag: etagHeader, "Cache-Control": cacheControl };
    get.responses = {
      ...get.responses,
      "304": {
        description:
          "Not modified: `If-None-Match` names the current representation. No body; carries the `ETag` and the RateLimit headers.",
        headers: { ETag: etagHeader, "Cache-Control": cacheControl, ...rateLimitHeaders },
      },
    };
  }
}
