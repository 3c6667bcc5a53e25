/**
 * The MCP tools: each answers one question the REST API answers, through the same services,
 * presenters and list definitions, so its structured result is the JSON /api/v1 returns for the
 * same question. Arguments carry the REST parameters' names and Zod schemas (path and query
 * parameters, and the body of the two write operations that take one); the few that a JSON
 * client sends typed (`limit`, `number`) are integers here and then read by the same rules.
 */
import { z } from "@hono/zod-openapi";
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { RunQueue } from "../ingest/run-queue";
import { ApiError, type ErrorDetail, validationFailed } from "../lib/errors";
import { type ListDefinition, type ListFilters, type ListRequest, pageBody, readListRequest } from "../lib/lists";
import type { Logger } from "../lib/logger";
import type { CursorCodec, Page } from "../lib/pagination";
import {
  AlertEventSchema,
  AlertSchema,
  AlertsQuerySchema,
  FailureGroupSchema,
  FlakinessCostQuerySchema,
  FlakinessCostSchema,
  IdParamSchema,
  PageQuerySchema,
  PaginationSchema,
  ProjectSchema,
  QuarantineBodySchema,
  RunComparisonSchema,
  RunFailureGroupSchema,
  RunVerdictSchema,
  RunVerdictsQuerySchema,
  SnoozeBodySchema,
  TestExecutionSchema,
  TestRunSchema,
  TestRunsQuerySchema,
  TestSchema,
  TestsQuerySchema,
} from "../contract/schemas";
import { alertEventList, listAlertEvents } from "../services/alerts/alert-events";
import { alertList, listAlerts, snoozeAlert } from "../services/alerts/alerts";
import type { OrgScope } from "../services/shared/context";
import { runFailureGroupsOf, listTestFailureGroups, runFailureGroupList, testFailureGroupList } from "../services/runs/failure-groups";
import { listRunVerdicts, comparisonOf, runVerdictList } from "../services/runs/run-comparison-reads";
import { costWindow, getProjectFlakinessCost } from "../services/runs/flakiness-cost-reads";
import { listProjects, projectList } from "../services/tenancy/projects";
import { quarantineInputOf, quarantineTest, unquarantineTest } from "../services/tests/quarantine";
import { presentTestRun } from "../contract/presenters";
import { findRunRow, listTestRuns, testRunList } from "../services/runs/test-results";
import { getTest, listTestExecutions, listTests, testExecutionList, testLists } from "../services/tests/tests";
import * as summaries from "./summaries";
import { EMBEDDED_FAILURE_GROUPS } from "./summaries";

/** What a tool call runs with: the key's organization, the cursor codec, and what a quarantine's webhooks go through. */
/** `apiKeyId`: the key of the request, named as who quarantined a test (docs/quarantine.md). */
export type ToolContext = { scope: OrgScope; codec: CursorCodec; queue: RunQueue; logger: Logger; apiKeyId: string };

/** How many executions `get_test` embeds: its newest. */
const RECENT_EXECUTIONS = 20;

/** `limit` and `cursor` of every list, `limit` as a JSON integer (read by the same rules as the query string's). */
const pageArgs = {
  limit: z.number({ error: "must be an integer" }).int({ error: "must be an integer" }).optional().meta({
    description: "Page size: default 25, maximum 100 (larger values are capped); below 1 → invalid_request.",
    default: 25,
    minimum: 1,
  }),
  cursor: PageQuerySchema.shape.cursor,
};
const pageQuery = (args: { limit?: number; cursor?: string }) => ({
  limit: args.limit === undefined ? undefined : String(args.limit),
  cursor: args.cursor,
});

const projectId = IdParamSchema("project_id", "Project identifier (UUID).").shape.project_id;
const testId = IdParamSchema("test_id", "Test identifier (UUID).").shape.test_id;
const alertId = IdParamSchema("alert_id", "Alert identifier (UUID).").shape.alert_id;
const runNumber = z
  .number({ error: "must be an integer" })
  .int({ error: "must be an integer" })
  .meta({ description: "The run's number in its project (1, 2, …)." });

const listOutput = <T extends z.ZodTypeAny>(item: T) => z.object({ data: z.array(item), pagination: PaginationSchema });

/** One page of one list, as the REST route answers it (`{data, pagination}`). */
async function page<F extends ListFilters, Item>(
  context: ToolContext,
  list: Pick<ListDefinition<F, unknown, unknown, never>, "listing">,
  filters: F,
  args: { limit?: number; cursor?: string },
  read: (scope: OrgScope, request: ListRequest<F>) => Promise<Page<Item>>,
) {
  const { scope, codec } = context;
  const request = readListRequest(codec, list, { organizationId: scope.organizationId, filters }, pageQuery(args));
  return pageBody(codec, list, request, await read(scope, request));
}

type ZodShapeObject = z.ZodObject<z.ZodRawShape>;

export type Tool<
  A extends ZodShapeObject = ZodShapeObject,
  B extends ZodShapeObject | undefined = ZodShapeObject | undefined,
  R = unknown,
> = {
  name: string;
  title: string;
  description: string;
  annotations: ToolAnnotations;
  /** Path and query parameters of the REST operation: a bad value is `invalid_request`, as there. */
  args: A;
  /** The REST operation's body, when it takes one: bad fields are `validation_failed` with one detail each, as there. */
  body?: B;
  output: z.ZodType;
  run: (context: ToolContext, args: z.infer<A>, body: B extends z.ZodType ? z.infer<B> : undefined) => Promise<R>;
  summarize: (result: R, args: z.infer<A>) => string;
};

const defineTool = <A extends ZodShapeObject, B extends ZodShapeObject | undefined, R>(tool: Tool<A, B, R>) => tool as unknown as Tool;

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };

export const TOOLS: Tool[] = [
  defineTool({
    name: "list_projects",
    title: "List projects",
    description:
      "The organization's projects, newest first, with their latest result, test counts (flaky, broken) and last run. Same as GET /api/v1/projects.",
    annotations: READ_ONLY,
    args: z.object(pageArgs),
    output: listOutput(ProjectSchema),
    run: (context, args) => page(context, projectList, {}, args, listProjects),
    summarize: summaries.projects,
  }),
  defineTool({
    name: "list_tests",
    title: "List a project's tests",
    description:
      "A project's tests (the same test across runs) with their health (healthy, flaky, broken), failure and flip rates over the last 50 default-branch executions, impact, owners and quarantine; the most failing first (impact). Filters: health, quarantined, owner (exact, from CODEOWNERS), q (substring of name, classname or file), variant (the configuration, e.g. os=windows,node=22; a matrix cell's tests are tests of their own). Same as GET /api/v1/projects/{project_id}/tests.",
    annotations: READ_ONLY,
    args: z.object({
      project_id: projectId,
      health: TestsQuerySchema.shape.health,
      owner: TestsQuerySchema.shape.owner,
      // The query string's "true"/"false"; a JSON boolean says the same.
      quarantined: z
        .union([z.boolean().transform((value) => (value ? "true" : "false")), TestsQuerySchema.shape.quarantined.unwrap()])
        .optional()
        .meta({
          description:
            '`true`: only tests quarantined now; `false`: only tests that are not (expired quarantines included). Absent: every test. The query string\'s "true"/"false" or a JSON boolean.',
        }),
      q: TestsQuerySchema.shape.q,
      variant: TestsQuerySchema.shape.variant,
      ...pageArgs,
    }),
    output: listOutput(TestSchema),
    run: (context, args) => {
      const filters = {
        project_id: args.project_id,
        health: args.health ?? "all",
        q: args.q ?? null,
        sort: "impact" as const,
        quarantined: (args.quarantined ?? null) as "true" | "false" | null,
        owner: args.owner ?? null,
        variant: args.variant ?? null,
      };
      return page(context, testLists.impact, filters, args, listTests);
    },
    summarize: summaries.tests,
  }),
  defineTool({
    name: "get_test",
    title: "Get a test with its recent history",
    description: `One test (GET /api/v1/tests/{test_id}) with \`recent_executions\`: its last ${RECENT_EXECUTIONS} executions, newest first (GET /api/v1/tests/{test_id}/executions), and \`failure_groups\`: its failures grouped by cause, most recently seen first (the first ${EMBEDDED_FAILURE_GROUPS}, GET /api/v1/tests/{test_id}/failure_groups).`,
    annotations: READ_ONLY,
    args: z.object({ test_id: testId }),
    output: TestSchema.extend({ recent_executions: z.array(TestExecutionSchema), failure_groups: z.array(FailureGroupSchema) }),
    run: async (context, args) => {
      const test = await getTest(context.scope, args.test_id);
      const executions = await page(
        context,
        testExecutionList,
        { test_id: test.id, status: null, branch: null },
        { limit: RECENT_EXECUTIONS },
        listTestExecutions,
      );
      const groups = await page(
        context,
        testFailureGroupList,
        { test_id: test.id },
        { limit: EMBEDDED_FAILURE_GROUPS },
        listTestFailureGroups,
      );
      return { ...test, recent_executions: executions.data, failure_groups: groups.data };
    },
    summarize: summaries.test,
  }),
  defineTool({
    name: "list_test_runs",
    title: "List a project's test runs",
    description:
      "A project's runs, newest first by arrival, with their branch, commit, status (pending, processed, failed), result and counts. Filters combine: branch (exact), commit_sha (a full SHA exactly, or a prefix of at least 7 hexadecimal characters; case-insensitive), result (tests_passed, tests_failed, tests_errored), status. The latest build on a branch: branch and limit 1; then get_test_run for its failures grouped by cause. Same as GET /api/v1/projects/{project_id}/test_runs.",
    annotations: READ_ONLY,
    args: z.object({
      project_id: projectId,
      branch: TestRunsQuerySchema.shape.branch,
      commit_sha: TestRunsQuerySchema.shape.commit_sha,
      result: TestRunsQuerySchema.shape.result,
      status: TestRunsQuerySchema.shape.status,
      ...pageArgs,
    }),
    output: listOutput(TestRunSchema),
    run: (context, args) => {
      // The same filters as the REST route's (src/routes/v1/test-results.ts), so the cursors are the same too.
      const filters = {
        project_id: args.project_id,
        branch: args.branch ?? null,
        commit_sha: args.commit_sha?.toLowerCase() ?? null,
        result: args.result ?? null,
        status: args.status ?? null,
      };
      return page(context, testRunList, filters, args, listTestRuns);
    },
    summarize: summaries.testRuns,
  }),
  defineTool({
    name: "get_test_run",
    title: "Get a test run with its comparison and failures grouped",
    description: `One run of a project by its number (GET /api/v1/projects/{project_id}/test_runs/{number}) with \`comparison\`: the run compared with its base, its failures counted per verdict (new, failing_on_base, flaky, quarantined, infrastructure) and the tests it fixed (GET …/test_runs/{number}/comparison; null while the run is not processed, or for a run processed before comparisons existed), and \`failure_groups\`: its failed and errored cases grouped by cause, the largest group first (the first ${EMBEDDED_FAILURE_GROUPS}, GET …/test_runs/{number}/failure_groups). Each failure with its verdict and reason: list_run_failures.`,
    annotations: READ_ONLY,
    args: z.object({ project_id: projectId, number: runNumber }),
    output: TestRunSchema.extend({
      comparison: RunComparisonSchema.nullable(),
      failure_groups: z.array(RunFailureGroupSchema),
    }),
    run: async (context, args) => {
      // The run is resolved once; the comparison and the groups read from it (one statement each).
      const row = await findRunRow(context.scope, args.project_id, String(args.number));
      const comparison = await comparisonOf(context.scope, row);
      const groups = await page(
        context,
        runFailureGroupList,
        { project_id: args.project_id, run: String(row.number) },
        { limit: EMBEDDED_FAILURE_GROUPS },
        (scope, request) => runFailureGroupsOf(scope, row, request),
      );
      return { ...presentTestRun(row, context.scope.webAppUrl), comparison, failure_groups: groups.data };
    },
    summarize: summaries.testRun,
  }),
  defineTool({
    name: "list_run_failures",
    title: "List a run's failures with their verdicts",
    description:
      "Is this failure mine? A run's failing tests (its latest failing case each, and tests that passed on retry), each with the test's names, its verdict against the run's base and a one-line reason, its failure message and failure group signature, and its test page; by descending case id. Verdicts: new (passed or absent in the base: probably this change), failing_on_base (already failing on the default branch), flaky, quarantined, infrastructure (the run is a mass failure). Filter: verdict. The latest build on a branch: list_test_runs with branch and limit 1, then this tool with its number. A run not processed yet is run_not_processed. Same as GET /api/v1/projects/{project_id}/test_runs/{number}/comparison/failures.",
    annotations: READ_ONLY,
    args: z.object({ project_id: projectId, number: runNumber, verdict: RunVerdictsQuerySchema.shape.verdict, ...pageArgs }),
    output: listOutput(RunVerdictSchema),
    run: (context, args) => {
      const filters = { project_id: args.project_id, run: String(args.number), verdict: args.verdict ?? null };
      return page(context, runVerdictList, filters, args, listRunVerdicts);
    },
    summarize: summaries.runFailures,
  }),
  defineTool({
    name: "get_flakiness_cost",
    title: "Get a project's cost of flakiness",
    description:
      "What flakiness costs a project in test time (ms, the reports' durations) over a window of UTC days: failed attempts of cases that then passed on a retry, failures of flaky and of quarantined tests, and re-runs of a commit whose previous build failed only by those; totals per component, every day, and the 10 most costly tests with their share (then get_test for one of them). `from` and `to` are dates (YYYY-MM-DD, both included); by default the last 30 days; at most 366 days. Same as GET /api/v1/projects/{project_id}/flakiness_cost.",
    annotations: READ_ONLY,
    args: z.object({ project_id: projectId, from: FlakinessCostQuerySchema.shape.from, to: FlakinessCostQuerySchema.shape.to }),
    output: FlakinessCostSchema,
    run: (context, args) => getProjectFlakinessCost(context.scope, args.project_id, costWindow(args, context.scope.clock.now())),
    summarize: summaries.flakinessCost,
  }),
  defineTool({
    name: "list_alerts",
    title: "List alerts",
    description:
      "Alerts across the organization's projects (one per project and type: test_flakiness, performance_regression, failure_rate_spike, skipped_test_count_creep), newest first. `status` defaults to active (active and not snoozed). Same as GET /api/v1/alerts.",
    annotations: READ_ONLY,
    args: z.object({
      status: AlertsQuerySchema.shape.status,
      project_id: AlertsQuerySchema.shape.project_id,
      alert_type: AlertsQuerySchema.shape.alert_type,
      ...pageArgs,
    }),
    output: listOutput(AlertSchema),
    run: (context, args) => {
      const filters = { status: args.status ?? "active", project_id: args.project_id ?? null, alert_type: args.alert_type ?? null };
      return page(context, alertList, filters, args, listAlerts);
    },
    summarize: summaries.alerts,
  }),
  defineTool({
    name: "list_alert_events",
    title: "List an alert's events",
    description:
      "An alert's events, newest first: why the check tripped (metadata) and the run that tripped it. Same as GET /api/v1/alerts/{alert_id}/events.",
    annotations: READ_ONLY,
    args: z.object({ alert_id: alertId, ...pageArgs }),
    output: listOutput(AlertEventSchema),
    run: (context, args) => page(context, alertEventList, { alert_id: args.alert_id }, args, listAlertEvents),
    summarize: summaries.alertEvents,
  }),
  defineTool({
    name: "snooze_alert",
    title: "Snooze an alert",
    description:
      "Suppresses the alert's notifications for `duration` (1h, 4h, 24h or 1w); checks and event recording continue. Snoozing a snoozed alert restarts the period from now. Same as POST /api/v1/alerts/{alert_id}/snooze.",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    args: z.object({ alert_id: alertId }),
    body: SnoozeBodySchema,
    output: AlertSchema,
    run: (context, args, body) => snoozeAlert(context.scope, args.alert_id, body.duration),
    summarize: summaries.snoozedAlert,
  }),
  defineTool({
    name: "quarantine_test",
    title: "Quarantine a test",
    description:
      "Marks a test's failures as known until it expires, so CI can ignore them; its runs still record them. `reason` and exactly one of `duration` (1d, 7d, 14d, 30d, 90d) and `expires_at` (ISO 8601, in the future, at most 90 days ahead); optionally `owner` (an e-mail address or @org/team), `issue_url` and `all_variants` (true: every variant of the test, new ones too). Replaces a quarantine in force. Same as POST /api/v1/tests/{test_id}/quarantine.",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    args: z.object({ test_id: testId }),
    body: QuarantineBodySchema,
    output: TestSchema,
    run: (context, args, body) =>
      quarantineTest(quarantineDeps(context), args.test_id, quarantineInputOf(body), { via: "mcp", apiKeyId: context.apiKeyId }),
    summarize: summaries.quarantinedTest,
  }),
  defineTool({
    name: "unquarantine_test",
    title: "End a test's quarantine",
    description:
      "Ends the test's quarantine now; a test that is not quarantined is returned unchanged. Same as POST /api/v1/tests/{test_id}/unquarantine.",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    args: z.object({ test_id: testId }),
    output: TestSchema,
    run: (context, args) => unquarantineTest(quarantineDeps(context), args.test_id),
    summarize: summaries.unquarantinedTest,
  }),
];

const quarantineDeps = (context: ToolContext) => ({ ...context.scope, queue: context.queue, logger: context.logger });

type Issue = { path: PropertyKey[]; message: string };
const detailsOf = (issues: Issue[]): ErrorDetail[] =>
  issues.map((issue) => ({ field: issue.path.map(String).join(".") || "arguments", message: issue.message }));

/**
 * The call's arguments, read as the REST operation reads its request: path and query values
 * first (`invalid_request`), then the body's fields (`validation_failed`, one detail per field).
 * Unlike a query string, an argument the tool does not take is refused: the client read the
 * tool's schema in this very session, so a misspelled name is a mistake to report, not a
 * version difference to tolerate.
 */
export function readArguments(tool: Tool, raw: unknown): { args: Record<string, unknown>; body: object | undefined } {
  const given = (raw ?? {}) as Record<string, unknown>;
  const argNames = Object.keys(tool.args.shape);
  const bodyNames = Object.keys(tool.body?.shape ?? {});
  const unknown = Object.keys(given).filter((name) => !argNames.includes(name) && !bodyNames.includes(name));
  if (unknown.length > 0) {
    const known = [...argNames, ...bodyNames];
    throw new ApiError(
      "invalid_request",
      `Unknown argument${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}. ${tool.name} takes ${known.length > 0 ? known.join(", ") : "no arguments"}.`,
      {
        details: unknown.map((field) => ({ field, message: "is not an argument of this tool" })),
      },
    );
  }
  const pick = (names: string[]) => Object.fromEntries(Object.entries(given).filter(([name]) => names.includes(name)));

  const args = tool.args.safeParse(pick(argNames));
  if (!args.success) {
    const details = detailsOf(args.error.issues);
    throw new ApiError("invalid_request", `Invalid argument: ${details.map((d) => `${d.field} ${d.message}`).join("; ")}.`, { details });
  }
  if (!tool.body) return { args: args.data, body: undefined };
  const body = tool.body.safeParse(pick(bodyNames));
  if (!body.success) throw validationFailed(detailsOf(body.error.issues));
  return { args: args.data, body: body.data };
}
