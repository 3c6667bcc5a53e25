/**
 * Reading test results through /api/v1: runs of a project, suites of a run, cases of a suite,
 * and single cases. Every query goes through the organization's project first, so a foreign
 * project, run or case is the same 404 as a missing one. Lists are newest first (runs by
 * arrival; suites and cases, which arrive together, by descending number and id).
 */
import { type SQL, and, asc, eq, getTableColumns, inArray, sql } from "drizzle-orm";
import { projects, testCases, testRuns, testSuites, tests } from "../../db/schema";
import type { Database } from "../../db/types";
import { notFound, pastRetention } from "../../lib/errors";
import { DEFAULT_RETENTION, keptFrom } from "../../lib/retention";
import { isUuid, parsePathBigintId, parsePathNumber } from "../../lib/ids";
import { type ListRequest, defineList } from "../../lib/lists";
import type { Page } from "../../lib/pagination";
import type { OrgScope } from "../shared/context";
import { presentTestCase, presentTestRun, presentTestSuite } from "../../contract/presenters";
import { findProjectRow } from "../tenancy/projects";
import { selectWithDataVersion } from "../shared/data-versions";
import type { CaseStatus, RunResult, RunStatus } from "../../lib/vocabulary";

export type TestRunObject = ReturnType<typeof presentTestRun>;
export type TestSuiteObject = ReturnType<typeof presentTestSuite>;
export type TestCaseObject = ReturnType<typeof presentTestCase>;

/** As in the path and query string; null: not filtered. */
export type TestRunFilters = {
  project_id: string;
  branch: string | null;
  /** Lower case (the query's value is case-insensitive): a full SHA (40 or 64 characters) exactly, a shorter one as a prefix. */
  commit_sha: string | null;
  result: RunResult | null;
  status: RunStatus | null;
};

/** The lengths of a full commit SHA: SHA-1 and SHA-256 object names. */
const FULL_SHA_LENGTHS = [40, 64];

/**
 * The runs of a commit (`commit_sha`, lower case and hexadecimal: validated by the query's
 * schema), read from test_runs_project_commit_idx (`lower(commit_sha) text_pattern_ops`): a full
 * SHA by equality (in keyset order, no sort), a shorter one as a prefix range (LIKE on the pattern
 * operator class; the few runs of the matching commits are then sorted).
 */
function commitShaCondition(commitSha: string): SQL {
  return FULL_SHA_LENGTHS.includes(commitSha.length)
    ? sql`lower(${testRuns.commitSha}) = ${commitSha}`
    : sql`lower(${testRuns.commitSha}) like ${`${commitSha}%`}`;
}
export type TestSuiteFilters = { project_id: string; run: string };
export type TestCaseFilters = { project_id: string; run: string; suite: string; status: CaseStatus | null };

/** A path number (run or suite): anything but 1 to 2^31-1 is the same 404 as a missing one. */
function parseNumber(raw: string, resource: string): number {
  const number = parsePathNumber(raw);
  if (number === null) throw notFound(resource);
  return number;
}

/** A project's runs, newest first by arrival. */
export const testRunList = defineList<TestRunFilters, typeof testRuns.$inferSelect, TestRunObject, string>({
  name: "test_runs",
  order: { ts: testRuns.createdAt, id: testRuns.id, idKind: "bigint" },
  positionOf: (row) => ({ ts: row.createdAt, id: row.id }),
  present: (row, webAppUrl) => presentTestRun(row, webAppUrl),
});

/** Every suite of a run, by descending number (a run's suites arrive together). */
export const testSuiteList = defineList<TestSuiteFilters, typeof testSuites.$inferSelect, TestSuiteObject>({
  name: "test_suites",
  order: { id: testSuites.number, idKind: "bigint" },
  positionOf: (row) => ({ id: row.number }),
  present: (row) => presentTestSuite(row),
});

/** A suite's own cases, by descending id. */
export const testCaseList = defineList<
  TestCaseFilters,
  typeof testCases.$inferSelect,
  TestCaseObject,
  { run: Pick<typeof testRuns.$inferSelect, "projectId" | "number">; webAppUrl: string }
>({
  name: "test_cases",
  order: { id: testCases.id, idKind: "bigint" },
  positionOf: (row) => ({ id: row.id }),
  present: (row, { run, webAppUrl }) => presentTestCase(row, run, webAppUrl),
});

export async function listTestRuns(scope: OrgScope, request: ListRequest<TestRunFilters>): Promise<Page<TestRunObject>> {
  return testRunsOf(scope, await findProjectRow(scope, request.filters.project_id), request);
}

/** A page of listTestRuns for a project the caller already found (the runs page finds it once): one statement. */
export async function testRunsOf(
  scope: OrgScope,
  project: { id: string },
  request: ListRequest<TestRunFilters>,
): Promise<Page<TestRunObject>> {
  const { filters } = request;
  const rows = await scope.db
    .select(getTableColumns(testRuns))
    .from(testRuns)
    .innerJoin(projects, and(eq(projects.id, testRuns.projectId), eq(projects.organizationId, scope.organizationId)))
    .where(
      and(
        eq(testRuns.projectId, project.id),
        filters.branch !== null ? eq(testRuns.branch, filters.branch) : undefined,
        filters.commit_sha !== null ? commitShaCondition(filters.commit_sha) : undefined,
        filters.result !== null ? eq(testRuns.result, filters.result) : undefined,
        filters.status !== null ? eq(testRuns.status, filters.status) : undefined,
        testRunList.after(request),
      ),
    )
    .orderBy(...testRunList.orderBy)
    .limit(testRunList.fetchLimit(request));
  return testRunList.page(rows, request, scope.webAppUrl);
}

/**
 * The run of the organization's project, in one statement: the project left-joined to its run (no
 * row: no such project in the organization; a row without a run: no such run). Also run by
 * bench/bare-app.ts's bare handlers.
 */
export const runInProjectQuery = (
  db: Database,
  organizationId: string,
  projectId: string,
  runNumber: number | null,
  version: { dataVersion?: SQL<string | null> } = {},
) =>
  db
    .select({ found: projects.id, retentionDays: projects.retentionDays, run: testRuns, ...version })
    .from(projects)
    .leftJoin(testRuns, and(eq(testRuns.projectId, projects.id), eq(testRuns.number, runNumber ?? -1)))
    .where(and(eq(projects.id, projectId), eq(projects.organizationId, organizationId)))
    .limit(1);

/**
 * The run of the organization's project in one round trip (runInProjectQuery): a missing or
 * foreign project is "Project not found" whatever the number, then a malformed or missing number
 * is "Test run not found", as two lookups would answer.
 */
export async function findRunRow(scope: OrgScope, projectId: string, number: string) {
  return (await findRunInProject(scope, projectId, number)).run;
}

/**
 * A 410 `past_retention` when a run's cases are past its project's retention (docs/retention.md):
 * deleted by the retention sweep, or from before the first kept instant and about to be.
 */
function assertCasesKept(
  scope: OrgScope,
  run: { createdAt: Date; casesDeletedAt: Date | null },
  projectRetentionDays: number | null,
): void {
  const days = projectRetentionDays ?? (scope.retention ?? DEFAULT_RETENTION).days;
  const from = keptFrom(scope.clock.now(), days);
  if (run.casesDeletedAt === null && run.createdAt >= from) return;
  throw pastRetention("Test cases of runs", from, days, "The run's summary is kept, and its tests' daily figures.");
}

/** The run with its project's own retention (null: the deployment's). */
async function findRunInProject(scope: OrgScope, projectId: string, number: string) {
  if (!isUuid(projectId)) throw notFound("Project");
  const runNumber = parsePathNumber(number);
  const [row] = await selectWithDataVersion(
    scope,
    (version) => runInProjectQuery(scope.db, scope.organizationId, projectId, runNumber, version),
    "not_found",
  );
  if (!row) throw notFound("Project");
  if (!row.run) throw notFound("Test run");
  return { run: row.run, retentionDays: row.retentionDays };
}

export async function getTestRun(scope: OrgScope, projectId: string, number: string): Promise<TestRunObject> {
  return presentTestRun(await findRunRow(scope, projectId, number), scope.webAppUrl);
}

export async function listTestSuites(scope: OrgScope, request: ListRequest<TestSuiteFilters>): Promise<Page<TestSuiteObject>> {
  const { run, retentionDays } = await findRunInProject(scope, request.filters.project_id, request.filters.run);
  assertCasesKept(scope, run, retentionDays);
  return testSuitesOf(scope, run, request);
}

/** A page of listTestSuites for a run the caller already found (a run page finds it once): one statement. */
export async function testSuitesOf(
  scope: OrgScope,
  run: Pick<typeof testRuns.$inferSelect, "id" | "projectId">,
  request: ListRequest<TestSuiteFilters>,
): Promise<Page<TestSuiteObject>> {
  const rows = await scope.db
    .select(getTableColumns(testSuites))
    .from(testSuites)
    .innerJoin(projects, and(eq(projects.id, run.projectId), eq(projects.organizationId, scope.organizationId)))
    .where(and(eq(testSuites.testRunId, run.id), testSuiteList.after(request)))
    .orderBy(...testSuiteList.orderBy)
    .limit(testSuiteList.fetchLimit(request));
  return testSuiteList.page(rows, request);
}

export async function listTestCases(scope: OrgScope, request: ListRequest<TestCaseFilters>): Promise<Page<TestCaseObject>> {
  const { filters } = request;
  const { run, retentionDays } = await findRunInProject(scope, filters.project_id, filters.run);
  assertCasesKept(scope, run, retentionDays);
  const number = parseNumber(filters.suite, "Test suite");
  const [suite] = await scope.db
    .select({ number: testSuites.number })
    .from(testSuites)
    .where(and(eq(testSuites.testRunId, run.id), eq(testSuites.number, number)))
    .limit(1);
  if (!suite) throw notFound("Test suite");
  const rows = await scope.db
    .select()
    .from(testCases)
    .where(
      and(
        eq(testCases.testRunId, run.id),
        eq(testCases.suiteNumber, number),
        filters.status !== null ? eq(testCases.status, filters.status) : undefined,
        testCaseList.after(request),
      ),
    )
    .orderBy(...testCaseList.orderBy)
    .limit(testCaseList.fetchLimit(request));
  return testCaseList.page(rows, request, { run, webAppUrl: scope.webAppUrl });
}

export async function getTestCase(scope: OrgScope, caseId: string): Promise<TestCaseObject> {
  const id = parsePathBigintId(caseId);
  if (id === null) throw notFound("Test case");
  const [row] = await selectWithDataVersion(
    scope,
    (version) =>
      scope.db
        .select({
          testCase: testCases,
          run: {
            projectId: testRuns.projectId,
            number: testRuns.number,
            createdAt: testRuns.createdAt,
            casesDeletedAt: testRuns.casesDeletedAt,
          },
          retentionDays: projects.retentionDays,
          ...version,
        })
        .from(testCases)
        .innerJoin(testRuns, eq(testRuns.id, testCases.testRunId))
        .innerJoin(projects, eq(projects.id, testRuns.projectId))
        .where(and(eq(testCases.id, id), eq(projects.organizationId, scope.organizationId)))
        .limit(1),
    "not_found",
  );
  if (!row) throw notFound("Test case");
  // Past retention but not deleted yet (the sweep goes in batches): answered as if it were gone.
  assertCasesKept(scope, row.run, row.retentionDays);
  return presentTestCase(row.testCase, row.run, scope.webAppUrl);
}

/** Failed and errored cases a run page shows at most (a run failing more says how many it left out). */
export const MAX_RUN_PAGE_FAILURES = 500;

/**
 * A run's failed and errored cases for its page, each with what its test is now (health, and its
 * quarantine's end): grouped by the page under their signatures, in the order of
 * `listRunFailureGroups`. At most MAX_RUN_PAGE_FAILURES, by id.
 */
export async function listRunFailures(scope: OrgScope, run: Pick<typeof testRuns.$inferSelect, "id" | "projectId">) {
  return scope.db
    .select({
      id: testCases.id,
      testId: testCases.testId,
      name: testCases.name,
      classname: testCases.classname,
      file: testCases.file,
      status: testCases.status,
      durationMs: testCases.durationMs,
      failureType: testCases.failureType,
      failureMessage: testCases.failureMessage,
      failureText: testCases.failureText,
      signature: testCases.failureSignature,
      quarantined: testCases.quarantined,
      health: tests.health,
      quarantineExpiresAt: tests.quarantineExpiresAt,
    })
    .from(testCases)
    .innerJoin(projects, eq(projects.id, run.projectId))
    .leftJoin(tests, eq(tests.id, testCases.testId))
    .where(
      and(
        eq(testCases.testRunId, run.id),
        eq(projects.organizationId, scope.organizationId),
        inArray(testCases.status, ["failed", "errored"]),
      ),
    )
    .orderBy(asc(testCases.id))
    .limit(MAX_RUN_PAGE_FAILURES);
}
