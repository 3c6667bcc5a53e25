import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { ApiError } from "../lib/errors";
import { jsonTextDepth } from "../lib/json-depth";

export const API_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Deepest nesting of arrays and objects a JSON body of /api/v1 or /admin/v1 may have. Their
 * bodies are flat objects; the limit keeps a deep body (a few KB of `[`) from reaching code that
 * recurses over it (docs/api-decisions.md).
 */
export const API_JSON_MAX_DEPTH = 64;

/** 413 in the envelope, also for chunked bodies (Hono's bodyLimit counts streamed bytes). */
export const limitBody = (maxSize: number, message = `The request body exceeds ${maxSize} bytes.`) =>
  bodyLimit({
    maxSize,
    onError: () => {
      throw new ApiError("payload_too_large", message);
    },
  });

/**
 * Reads a JSON body once, leniently about framing: an empty body counts as `{}` (so a missing
 * field is reported as a validation error, not a parse error), and the body is read as UTF-8 JSON
 * whatever the Content-Type says: none, `text/plain` (e.g. `curl -d`), `application/json;;;`,
 * an unknown charset. One rule, so no Content-Type can turn a request into a 415 the operation
 * does not declare. Malformed JSON, and JSON nested deeper than API_JSON_MAX_DEPTH, are a 400
 * `invalid_request`. The normalized JSON text is handed to the route's Zod validator, with a
 * plain `application/json` Content-Type, through Hono's body cache.
 */
const readJsonBody = createMiddleware(async (c, next) => {
  if (c.req.method !== "POST" && c.req.method !== "PATCH" && c.req.method !== "PUT") return next();
  const text = await c.req.text();
  let body: unknown = {};
  if (text.trim() !== "") {
    // Before parsing: what handles the parsed value (JSON.stringify below, the validator) recurses.
    if (jsonTextDepth(text, API_JSON_MAX_DEPTH) > API_JSON_MAX_DEPTH) {
      throw new ApiError("invalid_request", `The request body nests arrays and objects deeper than ${API_JSON_MAX_DEPTH} levels.`);
    }
    try {
      body = JSON.parse(text);
    } catch {
      throw new ApiError("invalid_request", "The request body is not valid JSON.");
    }
  }
  const normalized = JSON.stringify(body);
  const headers = new Headers(c.req.raw.headers);
  headers.set("content-type", "application/json");
  headers.delete("content-length");
  c.req.raw = new Request(c.req.raw.url, { method: c.req.method, headers, body: normalized });
  // HonoRequest.json() re-parses the cached text, so the normalized text is what gets cached.
  (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(normalized);
  await next();
});

/**
 * The body reading of one operation: size-capped, then read as JSON, for requests of `method`
 * only. Mounted on the paths of the operations that take a body and nowhere else, so elsewhere a
 * body is ignored, and a malformed or oversized one cannot turn a 404 (unknown path), a 405
 * (wrong method) or an operation without a body into a 400 or a 413.
 */
export const jsonBodyOn = (method: "PATCH" | "POST") => {
  const limit = limitBody(API_BODY_LIMIT_BYTES);
  return createMiddleware(async (c, next) => {
    if (c.req.method !== method) return next();
    await limit(c, async () => {
      await readJsonBody(c, next);
    });
  });
};
