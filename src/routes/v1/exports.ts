/**
 * /api/v1 bulk exports: a project's test runs or test cases of a window of run arrival, streamed
 * as NDJSON (docs/exports.md). Schema-first like the rest of /api/v1; the window's rules (both
 * bounds, since before until, at most 31 days) are in the query's schema, so they are in the
 * OpenAPI document and a broken rule is a 400 before anything is read.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../app-env";
import { isDatabaseUnavailable } from "../../db/errors";
import { ApiError, describeError } from "../../lib/errors";
import { NDJSON_CONTENT_TYPE, ndjsonStream } from "../../lib/ndjson";
import { type ExportOptions, exportTestCases, exportTestRuns } from "../../services/runs/exports";
import { type ExportLease, takeExportLease } from "../../services/tenancy/quotas";
import type { OrgScope } from "../../services/shared/context";
import { COMMON_ERRORS, errorResponses } from "../responses";
import { CASE_STATUSES } from "../../lib/vocabulary";
import { TestRunSchema } from "../../contract/schemas";
import { isoDateTimeWithZone } from "../../lib/date-time";

const security = [{ bearerAuth: [] }];
/** The widest window one request may ask for. */
const MAX_EXPORT_WINDOW_DAYS = 31;
const MAX_WINDOW_MS = MAX_EXPORT_WINDOW_DAYS * 86_400_000;

const dateTime = (description: string) =>
  isoDateTimeWithZone("must be an ISO 8601 date-time with a time zone, e.g. 2026-11-01T00:00:00Z").openapi({
    description,
    example: "2026-11-01T00:00:00Z",
  });

const ExportWindowQuerySchema = z
  .object({
    since: dateTime("Start of the window of run arrival (`created_at`), included. Required."),
    until: dateTime(`End of the window, excluded. Required; after \`since\` and at most ${MAX_EXPORT_WINDOW_DAYS} days after it.`),
  })
  .check(
    z.refine((query: { since: string; until: string }) => Date.parse(query.since) < Date.parse(query.until), {
      path: ["until"],
      message: "must be after since",
      when: (payload) => payload.issues.length === 0,
    }),
    z.refine((query: { since: string; until: string }) => Date.parse(query.until) - Date.parse(query.since) <= MAX_WINDOW_MS, {
      path: ["until"],
      message: `must be at most ${MAX_EXPORT_WINDOW_DAYS} days after since`,
      when: (payload) => payload.issues.length === 0,
    }),
  );

const TestCaseExportLineSchema = z
  .object({
    test_case_id: z.number().int().openapi({ description: "The case's id (GET /test_cases/{id})." }),
    test_id: z.string().uuid().openapi({
      description:
        "The test this case is an execution of (GET /tests/{id}): the same test across runs, derived from the project, classname, file and name, so equal for every execution of one test.",
    }),
    name: z.string(),
    classname: z.string().nullable(),
    file: z.string().nullable(),
    status: z.enum(CASE_STATUSES).openapi({ description: "The final outcome (after retries)." }),
    duration_ms: z.number().int().nullable(),
    failure_type: z.string().nullable().openapi({
      description:
        "A failed or errored case's failure type (the JUnit `type` attribute, e.g. `AssertionError`), as `GET /test_cases/{id}` gives it; null when the report gave none, and for passed and skipped cases.",
    }),
    failure_message: z.string().nullable().openapi({
      description:
        "A failed or errored case's failure message, as `GET /test_cases/{id}` gives it (the `message` attribute of the `<failure>` or `<error>`, else its text; at most 4,096 characters); null for passed and skipped cases (a skip's reason is not a failure). Uploaded test output: escape it before rendering.",
    }),
    run_number: z.number().int().openapi({ description: "The number of the case's run in its project." }),
    branch: z.string().nullable().openapi({ description: "The run's branch." }),
    commit_sha: z.string().nullable().openapi({ description: "The run's commit." }),
    run_created_at: z
      .string()
      .openapi({ format: "date-time", description: "When the run arrived (ISO 8601 UTC): the time the window filters on." }),
  })
  .openapi("TestCaseExportLine", { description: "One line of the test_cases export." });

const projectParams = z.object({
  id: z.string().openapi({ param: { name: "id", in: "path" }, description: "Project identifier (UUID)." }),
});

const streamDescription = `Streamed as NDJSON (\`${NDJSON_CONTENT_TYPE}\`): one JSON object per line, each line ending with \`\\n\`, ordered by the run's arrival (\`created_at\`; runs of the same millisecond by run number), then by case id. An empty window is a 200 with an empty body. The window filters on the run's arrival: \`created_at\` in [since, until), at most ${MAX_EXPORT_WINDOW_DAYS} days. A failure after the first byte ends the stream with a last line \`{"error": {"code", "message"}}\` (the error envelope): a stream whose last line is not data is incomplete. Read from the database in batches, so an export of any size holds little memory; not a snapshot (docs/exports.md). A window that starts before what is kept is a 410 \`past_retention\` (docs/retention.md): the test_cases export's before the project's retention of cases, the test_runs export's before SUMMARY_RETENTION_DAYS. Counts as one request of the rate limit; not cached (no ETag). An organization runs at most QUOTA_CONCURRENT_EXPORTS exports at once (default 2, docs/quotas.md): one more is a 429 \`rate_limited\` with \`Retry-After\`.`;

const ndjsonOk = <T>(schema: T, description: string) => ({
  description,
  content: { [NDJSON_CONTENT_TYPE]: { schema } },
});

const exportTestRunsRoute = createRoute({
  method: "get",
  path: "/projects/{id}/exports/test_runs",
  operationId: "exportTestRuns",
  tags: ["Exports"],
  summary: "Export a project's test runs of a window as NDJSON",
  description: `${streamDescription}\n\nEach line is a test run object exactly as \`GET /projects/{id}/test_runs/{number}\` returns it. Every run that arrived in the window is in it, whatever its \`status\` (pending, processed, failed), as it stands when it is read.`,
  security,
  request: { params: projectParams, query: ExportWindowQuerySchema },
  responses: {
    200: ndjsonOk(TestRunSchema, "The window's runs, one test run object per line."),
    ...errorResponses(400, 404, 410, ...COMMON_ERRORS),
  },
});

const exportTestCasesRoute = createRoute({
  method: "get",
  path: "/projects/{id}/exports/test_cases",
  operationId: "exportTestCases",
  tags: ["Exports"],
  summary: "Export the test cases of a project's runs of a window as NDJSON",
  description: `${streamDescription}\n\nEach line is one case with its failure (\`failure_type\`, \`failure_message\`: null unless the case failed or errored) and its run's number, branch, commit and arrival. The cases of the window's processed runs are in it; a pending run has no cases yet and a failed one never will (export \`test_runs\` to see them). A run's cases are stored together, so a run is in the export whole or not at all.`,
  security,
  request: { params: projectParams, query: ExportWindowQuerySchema },
  responses: {
    200: ndjsonOk(TestCaseExportLineSchema, "The window's cases, one per line."),
    ...errorResponses(400, 404, 410, ...COMMON_ERRORS),
  },
});

/** The last line of a stream that failed after its first byte: the envelope the same failure gets before it. */
function streamErrorLine(c: Context<AppEnv>) {
  return (error: unknown) => {
    const unavailable = isDatabaseUnavailable(error);
    c.env.logger.error(unavailable ? "database unavailable during an export" : "export failed after its first byte", {
      requestId: c.get("requestId"),
      path: new URL(c.req.url).pathname,
      error: describeError(error),
    });
    return (
      unavailable
        ? new ApiError("service_unavailable", "The database became unavailable during the export; export the rest of the window again.")
        : new ApiError("internal_error", "The export failed before its end. Quote the Request-Id header when reporting it.")
    ).toBody();
  };
}

/**
 * The 200 as the route declares it: the route's types expect one object of the line's schema
 * as the body, where the stream carries many, which they cannot express.
 */
async function ndjsonResponse(c: Context<AppEnv>, batches: AsyncIterator<readonly unknown[]>): Promise<never> {
  return c.body(await ndjsonStream(batches, streamErrorLine(c)), 200, { "Content-Type": NDJSON_CONTENT_TYPE }) as never;
}

/** How often a running export renews its lease (src/services/tenancy/quotas.ts): well within the lease's life. */
const LEASE_RENEWAL_MS = 60_000;

/** The batches, holding the export's lease: renewed as they are read, released when they end, fail or are cancelled. */
async function* leased<T>(scope: OrgScope, lease: ExportLease, batches: AsyncGenerator<T>): AsyncGenerator<T> {
  let renewedAt = scope.clock.now().getTime();
  try {
    for await (const batch of batches) {
      yield batch;
      if (scope.clock.now().getTime() - renewedAt >= LEASE_RENEWAL_MS) {
        await lease.renew();
        renewedAt = scope.clock.now().getTime();
      }
    }
  } finally {
    await lease.release();
  }
}

/** Takes one of the organization's export places (429 when none is free), then opens the export; the place is given back when the stream ends. */
async function leasedExport<T>(
  scope: OrgScope,
  concurrentExports: number | null,
  open: () => Promise<AsyncGenerator<T>>,
): Promise<AsyncGenerator<T>> {
  const lease = await takeExportLease(scope, scope.organizationId, concurrentExports);
  try {
    return leased(scope, lease, await open());
  } catch (error) {
    await lease.release();
    throw error;
  }
}

export function registerExportRoutes(
  api: OpenAPIHono<AppEnv>,
  options: ExportOptions = {},
  quotas: { concurrentExports: number | null } = { concurrentExports: null },
): void {
  api.openapi(exportTestRunsRoute, async (c) => {
    const { since, until } = c.req.valid("query");
    const scope = c.get("scope");
    const batches = await leasedExport(scope, quotas.concurrentExports, () =>
      exportTestRuns(scope, { projectId: c.req.valid("param").id, since, until }, options),
    );
    return ndjsonResponse(c, batches);
  });

  api.openapi(exportTestCasesRoute, async (c) => {
    const { since, until } = c.req.valid("query");
    const scope = c.get("scope");
    const batches = await leasedExport(scope, quotas.concurrentExports, () =>
      exportTestCases(scope, { projectId: c.req.valid("param").id, since, until }, options),
    );
    return ndjsonResponse(c, batches);
  });
}
