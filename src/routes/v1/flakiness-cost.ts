/**
 * /api/v1 routes for the cost of flakiness (docs/flakiness-cost.md): a project's over a window of
 * UTC days (totals per component, every day, the most costly tests) and a test's share of it. Both
 * read what run processing kept per day: two statements whatever the window or the history.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../app-env";
import { costWindow, getProjectFlakinessCost, getTestFlakinessCost } from "../../services/runs/flakiness-cost-reads";
import { COMMON_ERRORS, errorResponses, jsonOk } from "../responses";
import { FlakinessCostQuerySchema, FlakinessCostSchema, TestFlakinessCostSchema } from "../../contract/schemas";

const security = [{ bearerAuth: [] }];
const pathParam = (name: string, description: string) => z.string().openapi({ param: { name, in: "path" }, description });
const windowRules =
  "The window is UTC days, both bounds included: by default the last 30 days (today included); `from` alone runs to today, `to` alone starts 29 days before it; at most 366 days. A bad date, `from` after `to` or a longer window is a 400 `invalid_request`.";

const getProjectFlakinessCostRoute = createRoute({
  method: "get",
  path: "/projects/{id}/flakiness_cost",
  operationId: "getProjectFlakinessCost",
  tags: ["Projects"],
  summary: "The cost of flakiness of a project over a window of days: totals per component, each day, the most costly tests",
  description: `Test time (the reports' durations) spent on failed attempts of cases that then passed on a retry, on failures of flaky and quarantined tests, and the duration of re-runs of a commit whose previous build failed only by those (docs/flakiness-cost.md). Kept per day when runs are processed: runs processed before the cost was kept count nothing. ${windowRules}`,
  security,
  request: { params: z.object({ id: pathParam("id", "Project identifier (UUID).") }), query: FlakinessCostQuerySchema },
  responses: { 200: jsonOk(FlakinessCostSchema, "The project's cost over the window."), ...errorResponses(400, 404, ...COMMON_ERRORS) },
});

const getTestFlakinessCostRoute = createRoute({
  method: "get",
  path: "/tests/{id}/flakiness_cost",
  operationId: "getTestFlakinessCost",
  tags: ["Tests"],
  summary: "A test's cost of flakiness over a window of days, and its share of its project's",
  description: `The test's retries, flaky failures and quarantined failures per day (re-runs are the project's, not a test's), and its share of the project's total over the same window (docs/flakiness-cost.md). ${windowRules}`,
  security,
  request: { params: z.object({ id: pathParam("id", "Test identifier (UUID).") }), query: FlakinessCostQuerySchema },
  responses: { 200: jsonOk(TestFlakinessCostSchema, "The test's cost over the window."), ...errorResponses(400, 404, ...COMMON_ERRORS) },
});

export function registerFlakinessCostRoutes(api: OpenAPIHono<AppEnv>): void {
  api.openapi(getProjectFlakinessCostRoute, async (c) => {
    const scope = c.get("scope");
    const window = costWindow(c.req.valid("query"), scope.clock.now());
    return c.json(await getProjectFlakinessCost(scope, c.req.valid("param").id, window), 200);
  });

  api.openapi(getTestFlakinessCostRoute, async (c) => {
    const scope = c.get("scope");
    const window = costWindow(c.req.valid("query"), scope.clock.now());
    return c.json(await getTestFlakinessCost(scope, c.req.valid("param").id, window), 200);
  });
}
