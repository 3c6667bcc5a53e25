/**
 * /api/v1: the contract of docs/analytics-api-v1.md. Routes are declared schema-first
 * (createRoute) so the same Zod schemas validate requests and produce /api/v1/openapi.json.
 * Handlers stay thin: read validated input, call a service, return its result.
 */
import { OpenAPIHono, createRoute } from "@hono/zod-openapi";
import type { AppConfig, AppEnv } from "../../app-env";
import type { KeyIdCache } from "../../auth/key-gate";
import { ApiError } from "../../lib/errors";
import { pageBody, readListRequest } from "../../lib/lists";
import type { CursorCodec } from "../../lib/pagination";
import { authenticateApiKey } from "../../middleware/auth";
import { jsonBodyOn } from "../../middleware/json-body";
import { alertEventList, listAlertEvents } from "../../services/alerts/alert-events";
import { alertList, disableAlert, enableAlert, getAlert, listAlerts, snoozeAlert, unsnoozeAlert } from "../../services/alerts/alerts";
import { getOrganization } from "../../services/tenancy/organizations";
import { getProject, listProjects, projectList, updateProject } from "../../services/tenancy/projects";
import { validationHook } from "../validation";
import { COMMON_ERRORS, errorResponses, jsonOk, rateLimitHeaders } from "../responses";
import { conditionalGets, declareConditionalGets } from "../conditional-gets";
import {
  AlertEventSchema,
  AlertSchema,
  AlertsQuerySchema,
  IdParamSchema,
  OrganizationSchema,
  PageQuerySchema,
  ProjectPatchSchema,
  ProjectSchema,
  SnoozeBodySchema,
  listDescription,
  listOf,
} from "../../contract/schemas";
import { addMethodNotAllowed } from "../method-not-allowed";
import { documentConfig, documentResponse, servedOnce } from "../openapi-document";
import { registerTestResultRoutes } from "./test-results";
import { registerFailureGroupRoutes } from "./failure-groups";
import { registerRunComparisonRoutes } from "./run-comparisons";
import { registerTestRoutes } from "./tests";
import { registerExportRoutes } from "./exports";
import { registerFlakinessCostRoutes } from "./flakiness-cost";
import { resolveQuotas } from "../../lib/quotas";
import type { UploadsDocumentPart } from "../uploads";

const security = [{ bearerAuth: [] }];
const ProjectIdParam = IdParamSchema("id", "Project identifier (UUID).");
const AlertIdParam = IdParamSchema("id", "Alert identifier (UUID).");
const AlertEventsParam = IdParamSchema("alert_id", "Alert identifier (UUID).");

const getOrganizationRoute = createRoute({
  method: "get",
  path: "/organization",
  operationId: "getOrganization",
  tags: ["Organization"],
  summary: "Get the organization the API key belongs to",
  description: "Confirms that a key works and shows which organization it opens.",
  security,
  responses: { 200: jsonOk(OrganizationSchema, "The organization."), ...errorResponses(...COMMON_ERRORS) },
});

const listProjectsRoute = createRoute({
  method: "get",
  path: "/projects",
  operationId: "listProjects",
  tags: ["Projects"],
  summary: "List projects, newest first",
  description: listDescription(),
  security,
  request: { query: PageQuerySchema },
  responses: { 200: jsonOk(listOf(ProjectSchema, "ProjectList"), "A page of projects."), ...errorResponses(400, ...COMMON_ERRORS) },
});

const getProjectRoute = createRoute({
  method: "get",
  path: "/projects/{id}",
  operationId: "getProject",
  tags: ["Projects"],
  summary: "Get a project",
  security,
  request: { params: ProjectIdParam },
  responses: { 200: jsonOk(ProjectSchema, "The project."), ...errorResponses(404, ...COMMON_ERRORS) },
});

const updateProjectRoute = createRoute({
  method: "patch",
  path: "/projects/{id}",
  operationId: "updateProject",
  tags: ["Projects"],
  summary: "Update a project's name or description",
  description:
    "Only `name` and `description` change. Unknown fields are ignored. A body with neither is a 400 `invalid_request`; a blank name is a 422 `validation_failed`.",
  security,
  request: { params: ProjectIdParam, body: { required: true, content: { "application/json": { schema: ProjectPatchSchema } } } },
  responses: { 200: jsonOk(ProjectSchema, "The updated project."), ...errorResponses(400, 404, 413, 422, ...COMMON_ERRORS) },
});

const listAlertsRoute = createRoute({
  method: "get",
  path: "/alerts",
  operationId: "listAlerts",
  tags: ["Alerts"],
  summary: "List alerts across the organization's projects, newest first",
  description: listDescription("Filters combine; a cursor is valid only with the filters that issued it."),
  security,
  request: { query: AlertsQuerySchema },
  responses: { 200: jsonOk(listOf(AlertSchema, "AlertList"), "A page of alerts."), ...errorResponses(400, 404, ...COMMON_ERRORS) },
});

const getAlertRoute = createRoute({
  method: "get",
  path: "/alerts/{id}",
  operationId: "getAlert",
  tags: ["Alerts"],
  summary: "Get an alert",
  security,
  request: { params: AlertIdParam },
  responses: { 200: jsonOk(AlertSchema, "The alert."), ...errorResponses(404, ...COMMON_ERRORS) },
});

const listAlertEventsRoute = createRoute({
  method: "get",
  path: "/alerts/{alert_id}/events",
  operationId: "listAlertEvents",
  tags: ["Alerts"],
  summary: "List an alert's events, newest first",
  description: listDescription("Each event embeds the full test run that tripped the check."),
  security,
  request: { params: AlertEventsParam, query: PageQuerySchema },
  responses: {
    200: jsonOk(listOf(AlertEventSchema, "AlertEventList"), "A page of events."),
    ...errorResponses(400, 404, ...COMMON_ERRORS),
  },
});

const alertActionRoute = (action: "unsnooze" | "enable" | "disable", summary: string, description: string) =>
  createRoute({
    method: "post",
    path: `/alerts/{id}/${action}`,
    operationId: `${action}Alert`,
    tags: ["Alerts"],
    summary,
    description: `${description} Takes no body. Applying it to an alert already in that state succeeds and returns the alert unchanged.`,
    security,
    request: { params: AlertIdParam },
    responses: { 200: jsonOk(AlertSchema, "The updated alert."), ...errorResponses(400, 404, 413, ...COMMON_ERRORS) },
  });

const snoozeRoute = createRoute({
  method: "post",
  path: "/alerts/{id}/snooze",
  operationId: "snoozeAlert",
  tags: ["Alerts"],
  summary: "Snooze an alert",
  description:
    "Suppresses notifications for `duration` (1h, 4h, 24h or 1w; no default, no indefinite snooze); checks and event recording continue. Snoozing a snoozed alert restarts the period from now.",
  security,
  request: { params: AlertIdParam, body: { required: true, content: { "application/json": { schema: SnoozeBodySchema } } } },
  responses: { 200: jsonOk(AlertSchema, "The updated alert."), ...errorResponses(400, 404, 413, 422, ...COMMON_ERRORS) },
});
const unsnoozeRoute = alertActionRoute("unsnooze", "Unsnooze an alert", "Resumes notifications immediately.");
const enableRoute = alertActionRoute("enable", "Enable an alert", "Resumes checking from the next test run.");
const disableRoute = alertActionRoute("disable", "Disable an alert", "Stops checking new test runs; event history is kept.");

function v1DocumentConfig(publicBaseUrl: string) {
  return documentConfig({
    title: "CI test analytics API",
    description:
      "Projects, test runs and alerts about flaky tests, slow runs, creeping skips and failure spikes. Every failure uses the error envelope. Rate limit: 600 requests in any rolling 60 seconds per API key. Conditional GETs: every GET answers with an `ETag` and `Cache-Control: private, no-cache`; `If-None-Match` naming the current tag gets a 304 with no body, which counts toward the rate limit like any request. This document too has an `ETag` (a hash of its bytes, `Cache-Control: no-cache`) and answers 304 to `If-None-Match`. Test results come in through the upload operations (`/uploads/v1/…`, tag Uploads), authenticated with a project's upload token rather than an API key.",
    serverUrl: `${publicBaseUrl}/api/v1`,
    tags: [
      { name: "Organization", description: "The organization of the API key." },
      { name: "Projects", description: "Projects and their latest results." },
      { name: "Alerts", description: "One alert per project and type, with its events." },
      { name: "Test runs", description: "Uploaded test results: runs, their suites and cases." },
      { name: "Tests", description: "The same test across runs: health (healthy, flaky, broken), history and health transitions." },
      { name: "Exports", description: "A project's runs or cases of a window of up to 31 days, streamed as NDJSON for warehouses." },
    ],
  });
}

export type V1ApiParts = {
  /** Signs and reads the cursors of every list. */
  codec: CursorCodec;
  /** Key hash → key id, for the process's or isolate's life. */
  keyIdCache: KeyIdCache;
  /** The upload operations' part of the document (see uploadsDocumentPart). */
  uploadsDocument?: () => UploadsDocumentPart;
};

export function createV1Api(config: AppConfig, parts: V1ApiParts) {
  const { codec } = parts;
  const options = parts;
  const api = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

  api.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "The organization's API key: `Authorization: Bearer cta_…`.",
  });
  // The document is public and registered before authentication, so its handler answers first;
  // built at its first request, then served from memory with its ETag (servedOnce).
  // It also lists the upload operations (outside /api/v1, each with its own server), so one
  // document describes everything an integrator calls.
  const served = servedOnce(() => {
    const document = api.getOpenAPI31Document(v1DocumentConfig(config.publicBaseUrl));
    declareConditionalGets(document.paths as Record<string, Record<string, unknown>>, rateLimitHeaders);
    const uploads = options.uploadsDocument?.();
    if (uploads) {
      document.paths = { ...document.paths, ...uploads.paths };
      const components = (document.components ??= {});
      // Shared schemas (TestRun, Error…) come from the same Zod schemas; /api/v1's are kept.
      components.schemas = { ...uploads.schemas, ...components.schemas };
      components.securitySchemes = { ...components.securitySchemes, ...uploads.securitySchemes };
      document.tags = [...(document.tags ?? []), uploads.tag];
    }
    return document;
  });
  // Readable from any origin (hosted viewers, code generators in a browser): this document only.
  api.get("/openapi.json", (c) => documentResponse(c, served(), { "Access-Control-Allow-Origin": "*" }));

  // Authentication first, then the rate limit, then validation (docs/api-decisions.md).
  api.use("*", authenticateApiKey({ webAppUrl: config.webAppUrl, retention: config.retention, keyIdCache: parts.keyIdCache }));
  // Every GET answers with an ETag and honours If-None-Match (src/routes/conditional-gets.ts).
  api.use("*", conditionalGets(config.cursorSecret));
  // Only the three operations that take a body read one (jsonBodyOn says why).
  api.use("/projects/:id", jsonBodyOn("PATCH"));
  api.use("/alerts/:id/snooze", jsonBodyOn("POST"));
  api.use("/tests/:id/quarantine", jsonBodyOn("POST"));

  api.openapi(getOrganizationRoute, async (c) => c.json(await getOrganization(c.get("scope"), c.get("auth")), 200));

  api.openapi(listProjectsRoute, async (c) => {
    const scope = c.get("scope");
    const request = readListRequest(codec, projectList, { organizationId: scope.organizationId, filters: {} }, c.req.valid("query"));
    return c.json(pageBody(codec, projectList, request, await listProjects(scope, request)), 200);
  });

  api.openapi(getProjectRoute, async (c) => c.json(await getProject(c.get("scope"), c.req.valid("param").id), 200));

  api.openapi(updateProjectRoute, async (c) => {
    const body = c.req.valid("json");
    if (body.name === undefined && body.description === undefined) {
      throw new ApiError("invalid_request", "The body has no recognized field: send name and/or description.");
    }
    return c.json(await updateProject(c.get("scope"), c.req.valid("param").id, body), 200);
  });

  api.openapi(listAlertsRoute, async (c) => {
    const scope = c.get("scope");
    const query = c.req.valid("query");
    const filters = { status: query.status ?? "active", project_id: query.project_id ?? null, alert_type: query.alert_type ?? null };
    const request = readListRequest(codec, alertList, { organizationId: scope.organizationId, filters }, query);
    return c.json(pageBody(codec, alertList, request, await listAlerts(scope, request)), 200);
  });

  api.openapi(getAlertRoute, async (c) => c.json(await getAlert(c.get("scope"), c.req.valid("param").id), 200));

  api.openapi(listAlertEventsRoute, async (c) => {
    const scope = c.get("scope");
    const filters = { alert_id: c.req.valid("param").alert_id };
    const request = readListRequest(codec, alertEventList, { organizationId: scope.organizationId, filters }, c.req.valid("query"));
    return c.json(pageBody(codec, alertEventList, request, await listAlertEvents(scope, request)), 200);
  });

  api.openapi(snoozeRoute, async (c) => {
    const { duration } = c.req.valid("json");
    return c.json(await snoozeAlert(c.get("scope"), c.req.valid("param").id, duration), 200);
  });
  api.openapi(unsnoozeRoute, async (c) => c.json(await unsnoozeAlert(c.get("scope"), c.req.valid("param").id), 200));
  api.openapi(enableRoute, async (c) => c.json(await enableAlert(c.get("scope"), c.req.valid("param").id), 200));
  api.openapi(disableRoute, async (c) => c.json(await disableAlert(c.get("scope"), c.req.valid("param").id), 200));

  registerTestResultRoutes(api, codec);
  registerTestRoutes(api, codec);
  registerFailureGroupRoutes(api, codec);
  registerRunComparisonRoutes(api, codec);
  registerFlakinessCostRoutes(api);
  registerExportRoutes(api, { batchRows: config.exportBatchRows }, resolveQuotas(config.quotas));

  addMethodNotAllowed(api);
  return api;
}
