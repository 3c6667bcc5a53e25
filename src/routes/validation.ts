import type { Hook } from "@hono/zod-openapi";
import { ApiError, validationFailed } from "../lib/errors";

type Issue = { path: PropertyKey[]; message: string };

/**
 * Maps Zod failures to the envelope: a body whose fields are rejected is 422 `validation_failed`
 * with one detail per field; a body that is not an object at all, and bad query or path
 * values (unknown filter values), are 400 `invalid_request`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the hook is shared by routes of every shape.
export const validationHook: Hook<any, any, any, any> = (result) => {
  if (result.success) return;
  const issues = (result.error as { issues: Issue[] }).issues;
  const details = issues.map((issue) => ({ field: issue.path.map(String).join(".") || "body", message: issue.message }));
  if (result.target === "json") {
    if (issues.some((issue) => issue.path.length === 0)) throw new ApiError("invalid_request", "The request body must be a JSON object.");
    throw validationFailed(details);
  }
  throw new ApiError(
    "invalid_request",
    `Invalid ${result.target} parameter: ${details.map((d) => `${d.field} ${d.message}`).join("; ")}.`,
    { details },
  );
};
