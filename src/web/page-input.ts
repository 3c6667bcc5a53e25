/** What the pages read from their query strings and what they make of the services' errors. */
import type { Context } from "hono";
import type { z } from "zod";
import { ApiError } from "../lib/errors";

/**
 * The named query parameters through the API's own query schema (the same values, defaults and
 * limits as the API). A filter form sends empty fields for "any": those count as absent. What the
 * schema refuses is a 400 page with its reasons (the pages' error handler).
 */
export function parseQuery<S extends z.ZodType>(schema: S, c: Context, names: readonly string[]): z.output<S> {
  const query: Record<string, string> = {};
  for (const name of names) {
    const value = c.req.query(name);
    if (value !== undefined && value !== "") query[name] = value;
  }
  const parsed = schema.safeParse(query);
  if (parsed.success) return parsed.data;
  const reasons = parsed.error.issues.map((issue) => `${issue.path.join(".") || "query"} ${issue.message}`).join("; ");
  throw new ApiError("invalid_request", `The page's filters are not valid: ${reasons}.`);
}
