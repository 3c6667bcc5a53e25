/**
 * Reading a run's comparison with its base (docs/verdicts.md) through /api/v1: what run
 * processing stored (src/services/runs/run-comparison.ts), never history. Every read goes through
 * the organization's project and the run (findRunRow: two statements), then one statement.
 */
import { type SQL, and, eq } from "drizzle-orm";
import { aliasedTable } from "drizzle-orm";
import { runComparisons, runFixedTests, runVerdicts, testCases, testRuns } from "../../db/schema";
import { ApiError, notFound } from "../../lib/errors";
import { type ListRequest, defineList } from "../../lib/lists";
import type { Page } from "../../lib/pagination";
import type { CaseStatus, Verdict } from "../../lib/vocabulary";
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

/** The stored comparison of a run, with its base's number, branch and commit (also run by bench/verdicts-bench.ts's bare handler). */
export const comparisonQuery = (db: Database, runId: number) =>
  db
    .select({ comparison: runComparisons, base: { number: baseRuns.number, branch: baseRuns.branch, commitSha: baseRuns.commitSha } })
    .from(runComparisons)
    .leftJoin(baseRuns, eq(baseRuns.id, runComparisons.baseRunId))
    .where(eq(runComparisons.testRunId, runId))
    .limit(1);

/** GET …/test_runs/:number/comparison. A run processed before comparisons were made has none: 404. */
export async function getRunComparison(scope: OrgScope, projectId: string, number: string) {
  const comparison = await readRunComparison(scope, await processedRun(scope, projectId, number));
  if (!comparison) throw notFound("Comparison");
  return comparison;
}

export type RunComparisonObject = NonNullable<Awaited<ReturnType<typeof readRunComparison>>>;

/**
 * The comparison of a run already resolved in the organization (one statement): null for a run
 * with none (not processed yet, failed, or processed before comparisons were made).
 */
export async function readRunComparison(scope: OrgScope, run: typeof testRuns.$inferSelect) {
  if (run.status !== "processed") return null;
  const [row] = await comparisonQuery(scope.db, run.id);
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

export type RunVerdictObject = ReturnType<typeof presentVerdict>;

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

/** One page of a run's verdicts with their cases (also run by bench/verdicts-bench.ts's bare handler). */
export const verdictPageQuery = (db: Database, runId: number, verdict: Verdict | null, after: SQL | undefined, limit: number) =>
  db
    .select({
      ...caseColumns,
      testCaseId: runVerdicts.testCaseId,
      status: testCases.status,
      verdict: runVerdicts.verdict,
      reason: runVerdicts.reason,
      failureSignature: testCases.failureSignature,
      failureMessage: testCases.failureMessage,
    })
    .from(runVerdicts)
    .innerJoin(testCases, eq(testCases.id, runVerdicts.testCaseId))
    .where(and(eq(runVerdicts.testRunId, runId), after, verdict === null ? undefined : eq(runVerdicts.verdict, verdict)))
    .orderBy(...runVerdictList.orderBy)
    .limit(limit);

export async function listRunVerdicts(
  scope: OrgScope,
  request: ListRequest<RunVerdictFilters>,
): Promise<Page<ReturnType<typeof presentVerdict>>> {
  const { filters } = request;
  const run = await processedRun(scope, filters.project_id, filters.run);
  const rows = await verdictPageQuery(scope.db, run.id, filters.verdict, runVerdictList.after(request), runVerdictList.fetchLimit(request));
  return runVerdictList.page(rows, request, scope.webAppUrl);
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

export async function listRunFixedTests(
  scope: OrgScope,
  request: ListRequest<RunFixedFilters>,
): Promise<Page<ReturnType<typeof presentFixed>>> {
  const run = await processedRun(scope, request.filters.project_id, request.filters.run);
  const rows = await scope.db
    .select({ ...caseColumns, testCaseId: runFixedTests.testCaseId, baseTestCaseId: runFixedTests.baseTestCaseId })
    .from(runFixedTests)
    .innerJoin(testCases, eq(testCases.id, runFixedTests.testCaseId))
    .where(and(eq(runFixedTests.testRunId, run.id), runFixedList.after(request)))
    .orderBy(...runFixedList.orderBy)
    .limit(runFixedList.fetchLimit(request));
  return runFixedList.page(rows, request, scope.webAppUrl);
}
