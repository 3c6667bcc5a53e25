/**
 * /api/v1 routes for tests: a project's tests with their health, one test, its executions and
 * its health transitions, and its quarantine. Same conventions as every list (newest first unless the sort says
 * otherwise, signed cursors bound to the list, its filters and its sort; 404 for anything of
 * another organization), declared schema-first.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../app-env";
import { pageBody, readListRequest } from "../../lib/lists";
import type { CursorCodec } from "../../lib/pagination";
import { quarantineInputOf, quarantineTest, unquarantineTest } from "../../services/tests/quarantine";
import {
  getTest,
  healthTransitionList,
  listHealthTransitions,
  listTestExecutions,
  listTests,
  testExecutionList,
  testLists,
} from "../../services/tests/tests";
import { COMMON_ERRORS, errorResponses, jsonOk } from "../responses";
import {
  HealthTransitionSchema,
  PageQuerySchema,
  QuarantineBodySchema,
  TestExecutionSchema,
  TestExecutionsQuerySchema,
  TestSchema,
  TestsQuerySchema,
  listDescription,
  listOf,
} from "../../contract/schemas";

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
    'A test is the same test across runs: same classname and name (the file when there is no classname). Filters: `health`, `quarantined`, `q`, `owner` (one of the test\'s CODEOWNERS owners, exactly) and `variant` (the configuration the test runs in, part of its identity: docs/tests.md, "Variants"). By default sorted by `impact` (failing executions in the window), then as `sort` says; ties by id. A cursor is bound to the project, the filters and the sort. Pages are read by the current values: a test whose sort key changes between two pages may be skipped or listed twice in that walk (never an error); restart from the first page for a consistent ranking.',
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

const quarantineTestRoute = createRoute({
  method: "post",
  path: "/tests/{id}/quarantine",
  operationId: "quarantineTest",
  tags: ["Tests"],
  summary: "Quarantine a test",
  description: [
    "Marks the test's failures as known for a while, so that CI can ignore them (`GET /uploads/v1/quarantined_tests`). Its runs still record them: they count in the test's history and health and in the run's result; a run counts them apart in `quarantined_failures_count`, the flakiness alert records no events for the test while it is quarantined and the failure-rate spike check leaves them out of the failing count (docs/quarantine.md).",
    "Body: `reason` (non-blank) and exactly one of `expires_at` (in the future, at most 90 days ahead) and `duration` (`1d`, `7d`, `14d`, `30d`, `90d`); optionally `owner` (an e-mail address or a `@org/team` handle) and `issue_url` (http or https). `null` counts as absent. Invalid input is a 422 `validation_failed` with one detail per field; neither or both of `expires_at` and `duration` is a detail on `duration`.",
    "Quarantining a quarantined test replaces its quarantine whole. The quarantine ends by itself at `expires_at`. A project holds at most 10,000 quarantines in force (the CI list is not paginated): one more is a 422 (detail on `id`).",
  ].join("\n\n"),
  security,
  request: { params: TestParams, body: { required: true, content: { "application/json": { schema: QuarantineBodySchema } } } },
  responses: { 200: jsonOk(TestSchema, "The quarantined test."), ...errorResponses(400, 404, 413, 422, ...COMMON_ERRORS) },
});

const unquarantineTestRoute = createRoute({
  method: "post",
  path: "/tests/{id}/unquarantine",
  operationId: "unquarantineTest",
  tags: ["Tests"],
  summary: "End a test's quarantine now",
  description: "Takes no body. A test that is not quarantined (never, or its quarantine expired) is returned unchanged.",
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
  responses: {
    200: jsonOk(listOf(TestExecutionSchema, "TestExecutionList"), "A page of executions."),
    ...errorResponses(400, 404, ...COMMON_ERRORS),
  },
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
  responses: {
    200: jsonOk(listOf(HealthTransitionSchema, "TestHealthTransitionList"), "A page of transitions."),
    ...errorResponses(400, 404, ...COMMON_ERRORS),
  },
});

/** A quarantine's scope with the queue its webhook deliveries go through. */
const quarantineDeps = (c: Context<AppEnv>) => ({ ...c.get("scope"), queue: c.env.runQueue, logger: c.env.logger });

export function registerTestRoutes(api: OpenAPIHono<AppEnv>, codec: CursorCodec): void {
  api.openapi(listTestsRoute, async (c) => {
    const scope = c.get("scope");
    const query = c.req.valid("query");
    const filters = {
      project_id: c.req.valid("param").id,
      health: query.health ?? "all",
      q: query.q ?? null,
      sort: query.sort ?? "impact",
      quarantined: query.quarantined ?? null,
      owner: query.owner ?? null,
      variant: query.variant ?? null,
    };
    const list = testLists[filters.sort];
    const request = readListRequest(codec, list, { organizationId: scope.organizationId, filters }, query);
    return c.json(pageBody(codec, list, request, await listTests(scope, request)), 200);
  });

  api.openapi(getTestRoute, async (c) => c.json(await getTest(c.get("scope"), c.req.valid("param").id), 200));

  api.openapi(quarantineTestRoute, async (c) => {
    const input = quarantineInputOf(c.req.valid("json"));
    const actor = { via: "api" as const, apiKeyId: c.get("auth").apiKeyId };
    return c.json(await quarantineTest(quarantineDeps(c), c.req.valid("param").id, input, actor), 200);
  });

  api.openapi(unquarantineTestRoute, async (c) => c.json(await unquarantineTest(quarantineDeps(c), c.req.valid("param").id), 200));

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
