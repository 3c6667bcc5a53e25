/**
 * /api/v1 routes for test results: runs, suites, cases. Same conventions as the spec's lists
 * (newest first, signed cursors bound to the listing and its filters, 404 for anything of
 * another organization), declared schema-first like the rest of /api/v1.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../app-env";
import { pageBody, readListRequest } from "../../lib/lists";
import type { CursorCodec } from "../../lib/pagination";
import {
  getTestCase,
  getTestRun,
  listTestCases,
  listTestRuns,
  listTestSuites,
  testCaseList,
  testRunList,
  testSuiteList,
} from "../../services/runs/test-results";
import { COMMON_ERRORS, errorResponses, jsonOk } from "../responses";
import { listRunParts, runPartList } from "../../services/runs/run-parts";
import {
  PageQuerySchema,
  RunPartSchema,
  TestCaseSchema,
  TestCasesQuerySchema,
  TestRunSchema,
  TestRunsQuerySchema,
  TestSuiteSchema,
  listDescription,
  listOf,
} from "../../contract/schemas";

const security = [{ bearerAuth: [] }];
const pathParam = (name: string, description: string) => z.string().openapi({ param: { name, in: "path" }, description });
const projectId = pathParam("id", "Project identifier (UUID).");
const runNumber = pathParam("number", "The run's number in its project (1, 2, …).");
const RunParams = z.object({ id: projectId, number: runNumber });
const SuiteParams = z.object({
  id: projectId,
  number: runNumber,
  suite_number: pathParam("suite_number", "The suite's number in its run."),
});

const listTestRunsRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs",
  operationId: "listTestRuns",
  tags: ["Test runs"],
  summary: "List a project's test runs, newest first",
  description: listDescription(
    "Newest first by arrival. Filters combine (`branch`, `commit_sha`, `result`, `status`); a cursor is valid only with the filters that issued it.",
  ),
  security,
  request: { params: z.object({ id: projectId }), query: TestRunsQuerySchema },
  responses: { 200: jsonOk(listOf(TestRunSchema, "TestRunList"), "A page of test runs."), ...errorResponses(400, 404, ...COMMON_ERRORS) },
});

const getTestRunRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs/{number}",
  operationId: "getTestRun",
  tags: ["Test runs"],
  summary: "Get a test run",
  security,
  request: { params: RunParams },
  responses: { 200: jsonOk(TestRunSchema, "The test run."), ...errorResponses(404, ...COMMON_ERRORS) },
});

const listTestSuitesRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs/{number}/test_suites",
  operationId: "listTestSuites",
  tags: ["Test runs"],
  summary: "List every suite of a run (nested ones included), newest first",
  description: listDescription(
    "Flat: nested suites are listed too, with `parent_number`. Newest first means descending `number` (suites of a run arrive together and are numbered in document order).",
  ),
  security,
  request: { params: RunParams, query: PageQuerySchema },
  responses: {
    200: jsonOk(listOf(TestSuiteSchema, "TestSuiteList"), "A page of test suites."),
    ...errorResponses(400, 404, 410, ...COMMON_ERRORS),
  },
});

const listRunPartsRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs/{number}/parts",
  operationId: "listTestRunParts",
  tags: ["Test runs"],
  summary: "List the parts of a run uploaded in parts (run_key), the latest first",
  description: listDescription(
    'Each upload that joined the run with its `run_key` (docs/uploads.md, "Runs in parts"): when it arrived, its shard, its counts once read, or why it could not be read. A run of one upload has none.',
  ),
  security,
  request: { params: RunParams, query: PageQuerySchema },
  responses: {
    200: jsonOk(listOf(RunPartSchema, "TestRunPartList"), "A page of parts."),
    ...errorResponses(400, 404, ...COMMON_ERRORS),
  },
});

const listTestCasesRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs/{number}/test_suites/{suite_number}/test_cases",
  operationId: "listTestCases",
  tags: ["Test runs"],
  summary: "List the cases of one suite, newest first",
  description: listDescription("The suite's own cases (not those of its nested suites), by descending `id`."),
  security,
  request: { params: SuiteParams, query: TestCasesQuerySchema },
  responses: {
    200: jsonOk(listOf(TestCaseSchema, "TestCaseList"), "A page of test cases."),
    ...errorResponses(400, 404, 410, ...COMMON_ERRORS),
  },
});

const getTestCaseRoute = createRoute({
  method: "get",
  path: "/test_cases/{id}",
  operationId: "getTestCase",
  tags: ["Test runs"],
  summary: "Get a test case",
  security,
  request: { params: z.object({ id: pathParam("id", "Test case identifier (integer).") }) },
  responses: { 200: jsonOk(TestCaseSchema, "The test case."), ...errorResponses(404, 410, ...COMMON_ERRORS) },
});

export function registerTestResultRoutes(api: OpenAPIHono<AppEnv>, codec: CursorCodec): void {
  api.openapi(listTestRunsRoute, async (c) => {
    const scope = c.get("scope");
    const query = c.req.valid("query");
    const filters = {
      project_id: c.req.valid("param").id,
      branch: query.branch ?? null,
      commit_sha: query.commit_sha?.toLowerCase() ?? null,
      result: query.result ?? null,
      status: query.status ?? null,
    };
    const request = readListRequest(codec, testRunList, { organizationId: scope.organizationId, filters }, query);
    return c.json(pageBody(codec, testRunList, request, await listTestRuns(scope, request)), 200);
  });

  api.openapi(getTestRunRoute, async (c) => {
    const { id, number } = c.req.valid("param");
    return c.json(await getTestRun(c.get("scope"), id, number), 200);
  });

  api.openapi(listRunPartsRoute, async (c) => {
    const scope = c.get("scope");
    const { id, number } = c.req.valid("param");
    const filters = { project_id: id, run: number };
    const request = readListRequest(codec, runPartList, { organizationId: scope.organizationId, filters }, c.req.valid("query"));
    return c.json(pageBody(codec, runPartList, request, await listRunParts(scope, request)), 200);
  });

  api.openapi(listTestSuitesRoute, async (c) => {
    const scope = c.get("scope");
    const { id, number } = c.req.valid("param");
    const request = readListRequest(
      codec,
      testSuiteList,
      { organizationId: scope.organizationId, filters: { project_id: id, run: number } },
      c.req.valid("query"),
    );
    return c.json(pageBody(codec, testSuiteList, request, await listTestSuites(scope, request)), 200);
  });

  api.openapi(listTestCasesRoute, async (c) => {
    const scope = c.get("scope");
    const { id, number, suite_number } = c.req.valid("param");
    const query = c.req.valid("query");
    const filters = { project_id: id, run: number, suite: suite_number, status: query.status ?? null };
    const request = readListRequest(codec, testCaseList, { organizationId: scope.organizationId, filters }, query);
    return c.json(pageBody(codec, testCaseList, request, await listTestCases(scope, request)), 200);
  });

  api.openapi(getTestCaseRoute, async (c) => c.json(await getTestCase(c.get("scope"), c.req.valid("param").id), 200));
}
