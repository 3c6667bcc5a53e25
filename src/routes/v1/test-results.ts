/**
 * /api/v1 routes for test results: runs, suites, cases. Same conventions as the spec's lists
 * (newest first, signed cursors bound to the listing and its filters, 404 for anything of
 * another organization), declared schema-first like the rest of /api/v1.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../app-env";
import type { CursorCodec, Listing } from "../../lib/pagination";
import { getTestCase, getTestRun, listTestCases, listTestRuns, listTestSuites } from "../../services/test-results";
import { pageBody, readPage } from "../paging";
import { COMMON_ERRORS, errorResponses, jsonOk } from "../responses";
import { PageQuerySchema, TestCaseSchema, TestCasesQuerySchema, TestRunSchema, TestRunsQuerySchema, TestSuiteSchema, listOf } from "../schemas";

const security = [{ bearerAuth: [] }];
const pathParam = (name: string, description: string) => z.string().openapi({ param: { name, in: "path" }, description });
const projectId = pathParam("id", "Project identifier (UUID).");
const runNumber = pathParam("number", "The run's number in its project (1, 2, …).");
const RunParams = z.object({ id: projectId, number: runNumber });
const SuiteParams = z.object({ id: projectId, number: runNumber, suite_number: pathParam("suite_number", "The suite's number in its run.") });

const listTestRunsRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs",
  operationId: "listTestRuns",
  tags: ["Test runs"],
  summary: "List a project's test runs, newest first",
  description: "Newest first by arrival. Filters combine; a cursor is valid only with the filters that issued it.",
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
  description: "Flat: nested suites are listed too, with `parent_number`. Newest first means descending `number` (suites of a run arrive together and are numbered in document order).",
  security,
  request: { params: RunParams, query: PageQuerySchema },
  responses: { 200: jsonOk(listOf(TestSuiteSchema, "TestSuiteList"), "A page of test suites."), ...errorResponses(400, 404, ...COMMON_ERRORS) },
});

const listTestCasesRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs/{number}/test_suites/{suite_number}/test_cases",
  operationId: "listTestCases",
  tags: ["Test runs"],
  summary: "List the cases of one suite, newest first",
  description: "The suite's own cases (not those of its nested suites), by descending `id`.",
  security,
  request: { params: SuiteParams, query: TestCasesQuerySchema },
  responses: { 200: jsonOk(listOf(TestCaseSchema, "TestCaseList"), "A page of test cases."), ...errorResponses(400, 404, ...COMMON_ERRORS) },
});

const getTestCaseRoute = createRoute({
  method: "get",
  path: "/test_cases/{id}",
  operationId: "getTestCase",
  tags: ["Test runs"],
  summary: "Get a test case",
  security,
  request: { params: z.object({ id: pathParam("id", "Test case identifier (integer).") }) },
  responses: { 200: jsonOk(TestCaseSchema, "The test case."), ...errorResponses(404, ...COMMON_ERRORS) },
});

type ListingOf = (organizationId: string, name: string, filters: Listing["filters"], idKind?: Listing["idKind"]) => Listing;

export function registerTestResultRoutes(api: OpenAPIHono<AppEnv>, codec: CursorCodec, listing: ListingOf): void {
  api.openapi(listTestRunsRoute, async (c) => {
    const scope = c.get("scope");
    const { id } = c.req.valid("param");
    const query = c.req.valid("query");
    const list = listing(scope.organizationId, "test_runs", { project_id: id, branch: query.branch ?? null, result: query.result ?? null, status: query.status ?? null }, "bigint");
    const page = await listTestRuns(scope, id, { branch: query.branch, result: query.result, status: query.status }, await readPage(codec, list, query));
    return c.json(await pageBody(codec, list, page), 200);
  });

  api.openapi(getTestRunRoute, async (c) => {
    const { id, number } = c.req.valid("param");
    return c.json(await getTestRun(c.get("scope"), id, number), 200);
  });

  api.openapi(listTestSuitesRoute, async (c) => {
    const scope = c.get("scope");
    const { id, number } = c.req.valid("param");
    const list = listing(scope.organizationId, "test_suites", { project_id: id, run: number }, "bigint");
    const page = await listTestSuites(scope, id, number, await readPage(codec, list, c.req.valid("query")));
    return c.json(await pageBody(codec, list, page), 200);
  });

  api.openapi(listTestCasesRoute, async (c) => {
    const scope = c.get("scope");
    const { id, number, suite_number } = c.req.valid("param");
    const query = c.req.valid("query");
    const list = listing(scope.organizationId, "test_cases", { project_id: id, run: number, suite: suite_number, status: query.status ?? null }, "bigint");
    const page = await listTestCases(scope, id, number, suite_number, { status: query.status }, await readPage(codec, list, query));
    return c.json(await pageBody(codec, list, page), 200);
  });

  api.openapi(getTestCaseRoute, async (c) => c.json(await getTestCase(c.get("scope"), c.req.valid("param").id), 200));
}
