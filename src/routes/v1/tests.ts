/**
 * /api/v1 routes for tests: a project's tests with their health, one test, its executions and
 * its health transitions. Same conventions as every list (newest first unless the sort says
 * otherwise, signed cursors bound to the list, its filters and its sort; 404 for anything of
 * another organization), declared schema-first.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../app-env";
import { pageBody, readListRequest } from "../../lib/lists";
import type { CursorCodec } from "../../lib/pagination";
import { getTest, healthTransitionList, listHealthTransitions, listTestExecutions, listTests, testExecutionList, testLists } from "../../services/tests";
import { COMMON_ERRORS, errorResponses, jsonOk } from "../responses";
import {
  HealthTransitionSchema,
  PageQuerySchema,
  TestExecutionSchema,
  TestExecutionsQuerySchema,
  TestSchema,
  TestsQuerySchema,
  listDescription,
  listOf,
} from "../schemas";

const security = [{ bearerAuth: [] }];
const pathParam = (name: string, description: string) => z.string().openapi({ param: { name, in: "path" }, description });
const ProjectParams = z.object({ id: pathParam("id", "Project identifier (UUID).") });
const TestParams = z.object({ id: pathParam("id", "Test identifier (UUID).") });

const listTestsRoute = createRoute({
  method: "get",
  path: "/projects/{id}/tests",
  operationId: "listTests",
  tags: ["Tests"],
  summary: "List a project's tests with their health",
  description: listDescription(
    "A test is the same test across runs: same classname and name (the file when there is no classname). By default sorted by `impact` (failing executions in the window), then as `sort` says; ties by id. A cursor is bound to the project, the filters and the sort. Pages are read by the current values: a test whose sort key changes between two pages may be skipped or listed twice in that walk (never an error); restart from the first page for a consistent ranking.",
  ),
  security,
  request: { params: ProjectParams, query: TestsQuerySchema },
  responses: { 200: jsonOk(listOf(TestSchema, "TestList"), "A page of tests."), ...errorResponses(400, 404, ...COMMON_ERRORS) },
});

const getTestRoute = createRoute({
  method: "get",
  path: "/tests/{id}",
  operationId: "getTest",
  tags: ["Tests"],
  summary: "Get a test",
  security,
  request: { params: TestParams },
  responses: { 200: jsonOk(TestSchema, "The test."), ...errorResponses(404, ...COMMON_ERRORS) },
});

const listTestExecutionsRoute = createRoute({
  method: "get",
  path: "/tests/{id}/executions",
  operationId: "listTestExecutions",
  tags: ["Tests"],
  summary: "A test's history: its cases across runs, newest first",
  description: listDescription("Each execution is the test case object with a summary of its run. Newest first by when they were stored."),
  security,
  request: { params: TestParams, query: TestExecutionsQuerySchema },
  responses: { 200: jsonOk(listOf(TestExecutionSchema, "TestExecutionList"), "A page of executions."), ...errorResponses(400, 404, ...COMMON_ERRORS) },
});

const listHealthTransitionsRoute = createRoute({
  method: "get",
  path: "/tests/{id}/health_transitions",
  operationId: "listTestHealthTransitions",
  tags: ["Tests"],
  summary: "When and why a test's health changed, newest first",
  description: listDescription(),
  security,
  request: { params: TestParams, query: PageQuerySchema },
  responses: { 200: jsonOk(listOf(HealthTransitionSchema, "TestHealthTransitionList"), "A page of transitions."), ...errorResponses(400, 404, ...COMMON_ERRORS) },
});

export function registerTestRoutes(api: OpenAPIHono<AppEnv>, codec: CursorCodec): void {
  api.openapi(listTestsRoute, async (c) => {
    const scope = c.get("scope");
    const query = c.req.valid("query");
    const filters = { project_id: c.req.valid("param").id, health: query.health ?? "all", q: query.q ?? null, sort: query.sort ?? "impact" };
    const list = testLists[filters.sort];
    const request = readListRequest(codec, list, { organizationId: scope.organizationId, filters }, query);
    return c.json(pageBody(codec, list, request, await listTests(scope, request)), 200);
  });

  api.openapi(getTestRoute, async (c) => c.json(await getTest(c.get("scope"), c.req.valid("param").id), 200));

  api.openapi(listTestExecutionsRoute, async (c) => {
    const scope = c.get("scope");
    const query = c.req.valid("query");
    const filters = { test_id: c.req.valid("param").id, status: query.status ?? null, branch: query.branch ?? null };
    const request = readListRequest(codec, testExecutionList, { organizationId: scope.organizationId, filters }, query);
    return c.json(pageBody(codec, testExecutionList, request, await listTestExecutions(scope, request)), 200);
  });

  api.openapi(listHealthTransitionsRoute, async (c) => {
    const scope = c.get("scope");
    const filters = { test_id: c.req.valid("param").id };
    const request = readListRequest(codec, healthTransitionList, { organizationId: scope.organizationId, filters }, c.req.valid("query"));
    return c.json(pageBody(codec, healthTransitionList, request, await listHealthTransitions(scope, request)), 200);
  });
}
