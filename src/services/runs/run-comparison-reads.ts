/**
 * Reading a run's comparison with its base (docs/verdicts.md) through /api/v1: what run
 * processing stored (src/services/runs/run-comparison.ts), never history. Every read goes through
 * the organization's project and the run (findRunRow: one statement), then one statement. The
 * `…Of` functions are that one statement for a run the caller already found in the organization
 * (the run page finds it once, with the person's membership: findRunForMember).
 */
import { type SQL, aliasedTable, and, desc, eq } from "drizzle-orm";
import { unionAll } from "drizzle-orm/pg-core";
import { projects, runComparisons, runFixedTests, runVerdicts, testCases, testRuns } from "../../db/schema";
import { ApiError, notFound } from "../../lib/errors";
import { type ListRequest, defineList } from "../../lib/lists";
import type { Page } from "../../lib/pagination";
import { type CaseStatus, VERDICTS, type Verdict } from "../../lib/vocabulary";
import type { Database } from "../../db/types";
import type { OrgScope } from "../shared/context";
import { findRunRow } from "./test-results";

const base = (url: string) => url.replace(/\/+$/, "");

/** The run, processed: a pending or failed run has no comparison yet (409 `run_not_processed`). */
async function processedRun(scope: OrgScope, projectId: string, number: string) {
  const run = await findRunRow(scope, projectId, number);
  if (run.status !== "processed")
    throw new ApiError(
      "run_not_processed",
      run.status === "pending"
        ? `Test run #${run.number} is not processed yet; its comparison is made when it is.`
        : `Test run #${run.number} failed to process; it has no comparison.`,
    );
  return run;
}

const baseRuns = aliasedTable(testRuns, "base_run");

/** A run the caller found in the organization (findRunRow, findRunForMember). */
type FoundRun = Pick<typeof testRuns.$inferSelect, "id" | "projectId" | "number">;

/** The project of a found run, joined to hold every statement to the organization. */
const inOrganization = (scope: OrgScope, run: FoundRun) =>
  and(eq(projects.id, run.projectId), eq(projects.organizationId, scope.organizationId));

/** GET …/test_runs/:number/comparison. A run processed before comparisons were made has none: 404. */
export async function getRunComparison(scope: OrgScope, projectId: string, number: string) {
  const comparison = await comparisonOf(scope, await processedRun(scope, projectId, number));
  if (!comparison) throw notFound("Comparison");
  return comparison;
}

/** The stored comparison of a run, with its base's number, branch and commit (also run by bench/verdicts-bench.ts's bare handler). */
export const comparisonQuery = (db: Database, organizationId: string, runId: number) =>
  db
    .select({ comparison: runComparisons, base: { number: baseRuns.number, branch: baseRuns.branch, commitSha: baseRuns.commitSha } })
    .from(runComparisons)
    .innerJoin(projects, and(eq(projects.id, runComparisons.projectId), eq(projects.organizationId, organizationId)))
    .leftJoin(baseRuns, eq(baseRuns.id, runComparisons.baseRunId))
    .where(eq(runComparisons.testRunId, runId))
    .limit(1);

/** A found run's comparison as the API presents it; null when it has none (not processed, or processed before comparisons). */
export async function comparisonOf(scope: OrgScope, run: FoundRun) {
  const [row] = await comparisonQuery(scope.db, scope.organizationId, run.id);
  if (!row) return null;
  const { comparison: c } = row;
  const web = base(scope.webAppUrl);
  return {
    run_number: run.number,
    project_id: run.projectId,
    base_choice: c.baseChoice,
    base:
      row.base && row.base.number !== null
        ? {
            number: row.base.number,
            branch: row.base.branch,
            commit_sha: row.base.commitSha,
            url: `${web}/projects/${run.projectId}/runs/${row.base.number}`,
          }
        : null,
    awaited_base_commit: c.awaitedBaseCommit,
    infrastructure_reason: c.infrastructureReason,
    verdict_counts: {
      quarantined: c.quarantinedCount,
      infrastructure: c.infrastructureCount,
      failing_on_base: c.failingOnBaseCount,
      flaky: c.flakyCount,
      new: c.newCount,
    },
    fixed_count: c.fixedCount,
    compared_at: c.comparedAt.toISOString(),
  };
}

export type RunComparisonObject = NonNullable<Awaited<ReturnType<typeof comparisonOf>>>;

export type RunVerdictFilters = { project_id: string; run: string; verdict: Verdict | null };
export type RunFixedFilters = { project_id: string; run: string };

const caseColumns = {
  testId: testCases.testId,
  classname: testCases.classname,
  name: testCases.name,
  file: testCases.file,
  projectId: testCases.projectId,
};
type CaseColumns = { testId: string; classname: string | null; name: string; file: string | null; projectId: string };
const testUrl = (webAppUrl: string, row: CaseColumns) => `${base(webAppUrl)}/projects/${row.projectId}/tests/${row.testId}`;

type VerdictRow = CaseColumns & {
  testCaseId: number;
  status: CaseStatus;
  verdict: Verdict;
  reason: string;
  failureSignature: string | null;
  failureMessage: string | null;
};

/** A run's failures with their verdicts, by descending case id. */
export const runVerdictList = defineList<RunVerdictFilters, VerdictRow, ReturnType<typeof presentVerdict>, string>({
  name: "run_verdicts",
  order: { id: runVerdicts.testCaseId, idKind: "bigint" },
  positionOf: (row) => ({ id: row.testCaseId }),
  present: (row, webAppUrl) => presentVerdict(row, webAppUrl),
});

function presentVerdict(row: VerdictRow, webAppUrl: string) {
  return {
    test_id: row.testId,
    classname: row.classname,
    name: row.name,
    file: row.file,
    test_case_id: row.testCaseId,
    status: row.status,
    verdict: row.verdict,
    reason: row.reason,
    failure_signature: row.failureSignature,
    failure_message: row.failureMessage,
    url: testUrl(webAppUrl, row),
  };
}

const verdictColumns = {
  ...caseColumns,
  testCaseId: runVerdicts.testCaseId,
  status: testCases.status,
  verdict: runVerdicts.verdict,
  reason: runVerdicts.reason,
  failureSignature: testCases.failureSignature,
  failureMessage: testCases.failureMessage,
};

export type RunVerdictItem = ReturnType<typeof presentVerdict>;

export async function listRunVerdicts(scope: OrgScope, request: ListRequest<RunVerdictFilters>): Promise<Page<RunVerdictItem>> {
  return verdictPageOf(scope, await processedRun(scope, request.filters.project_id, request.filters.run), request);
}

/** A page of a found run's failures with their verdicts. */
export async function verdictPageOf(
  scope: OrgScope,
  run: FoundRun,
  request: ListRequest<RunVerdictFilters>,
): Promise<Page<RunVerdictItem>> {
  const after = runVerdictList.after(request);
  const rows = await verdictPageQuery(
    scope.db,
    scope.organizationId,
    run,
    request.filters.verdict,
    after,
    runVerdictList.fetchLimit(request),
  );
  return runVerdictList.page(rows, request, scope.webAppUrl);
}

/** One page of a found run's verdicts with their cases (also run by bench/verdicts-bench.ts's bare handler). */
export const verdictPageQuery = (
  db: Database,
  organizationId: string,
  run: FoundRun,
  verdict: Verdict | null,
  after: SQL | undefined,
  limit: number,
) =>
  db
    .select(verdictColumns)
    .from(runVerdicts)
    .innerJoin(testCases, eq(testCases.id, runVerdicts.testCaseId))
    .innerJoin(projects, and(eq(projects.id, run.projectId), eq(projects.organizationId, organizationId)))
    .where(and(eq(runVerdicts.testRunId, run.id), after, verdict === null ? undefined : eq(runVerdicts.verdict, verdict)))
    .orderBy(...runVerdictList.orderBy)
    .limit(limit);

/**
 * The first page (`limit` failures, the list's order) of each verdict a found run has failures
 * of, in one statement: one branch per verdict, each read from run_verdicts_run_verdict_idx and cut
 * at `limit` + 1 rows, so the work is bounded whatever the run's failures. Each page comes with
 * its request (`?verdict=` filter), whose cursor continues it on the list.
 */
export async function firstVerdictPages(
  scope: OrgScope,
  run: FoundRun & { verdictCounts: Record<Verdict, number> | null },
  limit: number,
): Promise<{ verdict: Verdict; request: ListRequest<RunVerdictFilters>; page: Page<RunVerdictItem> }[]> {
  const verdicts = VERDICTS.filter((verdict) => (run.verdictCounts?.[verdict] ?? 0) > 0);
  const requests = verdicts.map((verdict) => ({
    organizationId: scope.organizationId,
    filters: { project_id: run.projectId, run: String(run.number), verdict },
    limit,
    after: null,
  }));
  const branches = requests.map((request) =>
    scope.db
      .select(verdictColumns)
      .from(runVerdicts)
      .innerJoin(testCases, eq(testCases.id, runVerdicts.testCaseId))
      .innerJoin(projects, inOrganization(scope, run))
      .where(and(eq(runVerdicts.testRunId, run.id), eq(runVerdicts.verdict, request.filters.verdict)))
      .orderBy(...runVerdictList.orderBy)
      .limit(runVerdictList.fetchLimit(request)),
  );
  const [first, second, ...rest] = branches;
  if (!first) return [];
  const rows = await (second ? unionAll(first, second, ...rest) : first);
  return requests.map((request) => ({
    verdict: request.filters.verdict,
    request,
    page: runVerdictList.page(
      rows.filter((row) => row.verdict === request.filters.verdict).sort((a, b) => b.testCaseId - a.testCaseId),
      request,
      scope.webAppUrl,
    ),
  }));
}

type FixedRow = CaseColumns & { testCaseId: number; baseTestCaseId: number };

/** The tests a run fixed, by descending case id. */
export const runFixedList = defineList<RunFixedFilters, FixedRow, ReturnType<typeof presentFixed>, string>({
  name: "run_fixed_tests",
  order: { id: runFixedTests.testCaseId, idKind: "bigint" },
  positionOf: (row) => ({ id: row.testCaseId }),
  present: (row, webAppUrl) => presentFixed(row, webAppUrl),
});

function presentFixed(row: FixedRow, webAppUrl: string) {
  return {
    test_id: row.testId,
    classname: row.classname,
    name: row.name,
    file: row.file,
    test_case_id: row.testCaseId,
    base_test_case_id: row.baseTestCaseId,
    url: testUrl(webAppUrl, row),
  };
}

export type RunFixedItem = ReturnType<typeof presentFixed>;

export async function listRunFixedTests(scope: OrgScope, request: ListRequest<RunFixedFilters>): Promise<Page<RunFixedItem>> {
  return fixedPageOf(scope, await processedRun(scope, request.filters.project_id, request.filters.run), request);
}

/** A page of the tests a found run fixed. */
export async function fixedPageOf(scope: OrgScope, run: FoundRun, request: ListRequest<RunFixedFilters>): Promise<Page<RunFixedItem>> {
  const rows = await scope.db
    .select({ ...caseColumns, testCaseId: runFixedTests.testCaseId, baseTestCaseId: runFixedTests.baseTestCaseId })
    .from(runFixedTests)
    .innerJoin(testCases, eq(testCases.id, runFixedTests.testCaseId))
    .innerJoin(projects, inOrganization(scope, run))
    .where(and(eq(runFixedTests.testRunId, run.id), runFixedList.after(request)))
    .orderBy(...runFixedList.orderBy)
    .limit(runFixedList.fetchLimit(request));
  return runFixedList.page(rows, request, scope.webAppUrl);
}

/** How many of a project's latest runs latestRunPerBranch looks at: a branch with no run among them is left out. */
export const BRANCH_SCAN_RUNS = 1000;

/**
 * Each branch's latest run (by arrival, whatever its status) with its verdict counts, the most
 * recently active branches first, at most `branches` of them, among the project's latest
 * BRANCH_SCAN_RUNS runs (read from the runs' keyset index, so the work is bounded whatever the
 * history). `branch`: only that branch. Runs without a branch count as one branch (null).
 */
export async function latestRunPerBranch(scope: OrgScope, projectId: string, options: { branch: string | null; branches: number }) {
  const recent = scope.db
    .select({
      id: testRuns.id,
      number: testRuns.number,
      status: testRuns.status,
      result: testRuns.result,
      failureReason: testRuns.failureReason,
      branch: testRuns.branch,
      commitSha: testRuns.commitSha,
      createdAt: testRuns.createdAt,
      failedCount: testRuns.failedCount,
      erroredCount: testRuns.erroredCount,
      verdictCounts: testRuns.verdictCounts,
    })
    .from(testRuns)
    .innerJoin(projects, and(eq(projects.id, testRuns.projectId), eq(projects.organizationId, scope.organizationId)))
    .where(and(eq(testRuns.projectId, projectId), options.branch === null ? undefined : eq(testRuns.branch, options.branch)))
    .orderBy(desc(testRuns.createdAt), desc(testRuns.id))
    .limit(BRANCH_SCAN_RUNS)
    .as("recent");
  const latest = scope.db
    .selectDistinctOn([recent.branch], { ...recent._.selectedFields })
    .from(recent)
    .orderBy(recent.branch, desc(recent.createdAt), desc(recent.id))
    .as("latest");
  return scope.db
    .select({ ...latest._.selectedFields })
    .from(latest)
    .orderBy(desc(latest.createdAt), desc(latest.id))
    .limit(options.branches);
}
