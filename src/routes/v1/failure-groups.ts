/**
 * /api/v1 routes for failures grouped by cause: a project's groups, a test's groups, and a run's
 * failures grouped (what a person reads first on a red run). Same list conventions as every list.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../app-env";
import { pageBody, readListRequest } from "../../lib/lists";
import type { CursorCodec } from "../../lib/pagination";
import {
  listProjectFailureGroups,
  listRunFailureGroups,
  listTestFailureGroups,
  projectFailureGroupList,
  runFailureGroupList,
  testFailureGroupList,
} from "../../services/runs/failure-groups";
import { COMMON_ERRORS, errorResponses, jsonOk } from "../responses";
import { FailureGroupSchema, PageQuerySchema, RunFailureGroupSchema, listDescription, listOf } from "../../contract/schemas";

const security = [{ bearerAuth: [] }];
const pathParam = (name: string, description: string) => z.string().openapi({ param: { name, in: "path" }, description });
const projectId = pathParam("id", "Project identifier (UUID).");

const listProjectFailureGroupsRoute = createRoute({
  method: "get",
  path: "/projects/{id}/failure_groups",
  operationId: "listProjectFailureGroups",
  tags: ["Tests"],
  summary: "A project's failures grouped by cause, most recently seen first",
  description: listDescription(
    "Every failed or errored case of a run stored since grouping began belongs to one group (docs/failure-groups.md).",
  ),
  security,
  request: { params: z.object({ id: projectId }), query: PageQuerySchema },
  responses: {
    200: jsonOk(listOf(FailureGroupSchema, "FailureGroupList"), "A page of groups."),
    ...errorResponses(400, 404, ...COMMON_ERRORS),
  },
});

const listTestFailureGroupsRoute = createRoute({
  method: "get",
  path: "/tests/{id}/failure_groups",
  operationId: "listTestFailureGroups",
  tags: ["Tests"],
  summary: "A test's failures grouped by cause, most recently seen first",
  description: listDescription(),
  security,
  request: { params: z.object({ id: pathParam("id", "Test identifier (UUID).") }), query: PageQuerySchema },
  responses: {
    200: jsonOk(listOf(FailureGroupSchema, "TestFailureGroupList"), "A page of groups."),
    ...errorResponses(400, 404, ...COMMON_ERRORS),
  },
});

const listRunFailureGroupsRoute = createRoute({
  method: "get",
  path: "/projects/{id}/test_runs/{number}/failure_groups",
  operationId: "listTestRunFailureGroups",
  tags: ["Test runs"],
  summary: "A run's failures grouped by cause, the largest group first",
  description: listDescription(
    "Groups by the number of this run's cases in them (ties by group), with the cases' ids; the group's other figures are the project's.",
  ),
  security,
  request: {
    params: z.object({ id: projectId, number: pathParam("number", "The run's number in its project (1, 2, …).") }),
    query: PageQuerySchema,
  },
  responses: {
    200: jsonOk(listOf(RunFailureGroupSchema, "RunFailureGroupList"), "A page of groups."),
    ...errorResponses(400, 404, ...COMMON_ERRORS),
  },
});

export function registerFailureGroupRoutes(api: OpenAPIHono<AppEnv>, codec: CursorCodec): void {
  api.openapi(listProjectFailureGroupsRoute, async (c) => {
    const scope = c.get("scope");
    const filters = { project_id: c.req.valid("param").id };
    const request = readListRequest(
      codec,
      projectFailureGroupList,
      { organizationId: scope.organizationId, filters },
      c.req.valid("query"),
    );
    return c.json(pageBody(codec, projectFailureGroupList, request, await listProjectFailureGroups(scope, request)), 200);
  });

  api.openapi(listTestFailureGroupsRoute, async (c) => {
    const scope = c.get("scope");
    const filters = { test_id: c.req.valid("param").id };
    const request = readListRequest(codec, testFailureGroupList, { organizationId: scope.organizationId, filters }, c.req.valid("query"));
    return c.json(pageBody(codec, testFailureGroupList, request, await listTestFailureGroups(scope, request)), 200);
  });

  api.openapi(listRunFailureGroupsRoute, async (c) => {
    const scope = c.get("scope");
    const { id, number } = c.req.valid("param");
    const request = readListRequest(
      codec,
      runFailureGroupList,
      { organizationId: scope.organizationId, filters: { project_id: id, run: number } },
      c.req.valid("query"),
    );
    return c.json(pageBody(codec, runFailureGroupList, request, await listRunFailureGroups(scope, request)), 200);
  });
}
