import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { ApiError } from "../lib/errors";

export const API_BODY_LIMIT_BYTES = 64 * 1024;

/** 413 in the envelope, also for chunked bodies (Hono's bodyLimit counts streamed bytes). */
export const limitBody = (maxSize: number) =>
  bodyLimit({
    maxSize,
    onError: () => {
      throw new ApiError("payload_too_large", `The request body exceeds ${maxSize} bytes.`);
    },
  });

/**
 * Reads a JSON body once, leniently about framing: an empty body counts as `{}` (so a missing
 * field is reported as a validation error, not a parse error), and a body sent without a JSON
 * Content-Type (e.g. `curl -d`) is still read as JSON. Malformed JSON is a 400 `invalid_request`.
 * The normalized JSON text is handed to the route's Zod validator through Hono's body cache.
 */
export const readJsonBody = createMiddleware(async (c, next) => {
  if (c.req.method !== "POST" && c.req.method !== "PATCH" && c.req.method !== "PUT") return next();
  const text = await c.req.text();
  let body: unknown = {};
  if (text.trim() !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      throw new ApiError("invalid_request", "The request body is not valid JSON.");
    }
  }
  const contentType = c.req.header("content-type") ?? "";
  if (!/^application\/([\w.-]+\+)?json\s*(;|$)/i.test(contentType)) {
    const headers = new Headers(c.req.raw.headers);
    headers.set("content-type", "application/json");
    c.req.raw = new Request(c.req.raw.url, { method: c.req.method, headers, body: JSON.stringify(body) });
  }
  // HonoRequest.json() re-parses the cached text, so the normalized text is what gets cached.
  (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(JSON.stringify(body));
  await next();
});
