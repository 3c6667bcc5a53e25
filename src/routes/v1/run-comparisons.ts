/**
 * /api/v1 routes for a run's comparison with its base (docs/verdicts.md): the comparison (the base,
 * counts per verdict, fixed count), the failures with their verdicts and the tests the run fixed.
 * Same list conventions as every list; a run not processed yet is a 409 `run_not_processed`.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../app-env";
import { pageBody, readListRequest } from "../../lib/lists";
import type { CursorCodec } from "../../lib/pagination";
import {
  getRunComparison,
  listRunFixedTests,
  listRunVerdicts,
  runFixedList,
  runVerdictList,
} from "../../services/runs/run-comparison-reads";
import { COMMON_ERRORS, errorResponses, jsonOk } from "../responses";
import {
  PageQuerySchema,
  RunComparisonSchema,
  RunFixedTestSchema,
  RunVerdictSchema,
  RunVerdictsQuerySchema,
  listDescription,
  listOf,
} from "../../contract/schemas";

const security = [{ bearerAuth: [] }];
const pathParam = (name: string, description: string) => z.string().openapi({ param: { name, in: "path" }, description });
const RunParams = z.object({
  id: pathParam("id", "Project identifier (UUID)."),
  number: pathParam("number", "The run's number in its project (1, 2, …)."),
});
const notProcessed = "A run not processed yet (or whose processing failed) is a 409 `run_not_processed`.";

const getRunComparisonRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs/{number}/comparison",
  operationId: "getTestRunComparison",
  tags: ["Test runs"],
  summary: "A run compared with its base: the base, its failures counted per verdict, the tests it fixed",
  description: `Made when the run is processed and stored (docs/verdicts.md); made again when the run's named base commit is processed later. ${notProcessed} A run processed before comparisons existed has none: 404.`,
  security,
  request: { params: RunParams },
  responses: { 200: jsonOk(RunComparisonSchema, "The comparison."), ...errorResponses(404, 409, ...COMMON_ERRORS) },
});

const listRunVerdictsRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs/{number}/comparison/failures",
  operationId: "listTestRunComparisonFailures",
  tags: ["Test runs"],
  summary: "A run's failing tests with their verdicts against its base, by descending case id",
  description: listDescription(
    `One item per failing test (its latest failing case) and per test that passed on retry, each with one verdict and a reason. ${notProcessed}`,
  ),
  security,
  request: { params: RunParams, query: RunVerdictsQuerySchema },
  responses: {
    200: jsonOk(listOf(RunVerdictSchema, "RunVerdictList"), "A page of failures."),
    ...errorResponses(400, 404, 409, ...COMMON_ERRORS),
  },
});

const listRunFixedRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs/{number}/comparison/fixed",
  operationId: "listTestRunComparisonFixed",
  tags: ["Test runs"],
  summary: "The tests that failed in the run's base and pass in it, by descending case id",
  description: listDescription(notProcessed),
  security,
  request: { params: RunParams, query: PageQuerySchema },
  responses: {
    200: jsonOk(listOf(RunFixedTestSchema, "RunFixedTestList"), "A page of fixed tests."),
    ...errorResponses(400, 404, 409, ...COMMON_ERRORS),
  },
});

export function registerRunComparisonRoutes(api: OpenAPIHono<AppEnv>, codec: CursorCodec): void {
  api.openapi(getRunComparisonRoute, async (c) => {
    const { id, number } = c.req.valid("param");
    return c.json(await getRunComparison(c.get("scope"), id, number), 200);
  });

  api.openapi(listRunVerdictsRoute, async (c) => {
    const scope = c.get("scope");
    const { id, number } = c.req.valid("param");
    const query = c.req.valid("query");
    const filters = { project_id: id, run: number, verdict: query.verdict ?? null };
    const request = readListRequest(codec, runVerdictList, { organizationId: scope.organizationId, filters }, query);
    return c.json(pageBody(codec, runVerdictList, request, await listRunVerdicts(scope, request)), 200);
  });

  api.openapi(listRunFixedRoute, async (c) => {
    const scope = c.get("scope");
    const { id, number } = c.req.valid("param");
    const filters = { project_id: id, run: number };
    const request = readListRequest(codec, runFixedList, { organizationId: scope.organizationId, filters }, c.req.valid("query"));
    return c.json(pageBody(codec, runFixedList, request, await listRunFixedTests(scope, request)), 200);
  });
}
