/**
 * Reading test results through /api/v1: runs of a project, suites of a run, cases of a suite,
 * and single cases. Every query goes through the organization's project first, so a foreign
 * project, run or case is the same 404 as a missing one. Lists are newest first (runs by
 * arrival; suites and cases, which arrive together, by descending number and id).
 */
import { and, desc, eq } from "drizzle-orm";
import { projects, testCases, testRuns, testSuites } from "../db/schema";
import { notFound } from "../lib/errors";
import { NO_TIMESTAMP, type Page, type PageRequest, idBefore, keysetBefore, toPage } from "../lib/pagination";
import type { OrgScope } from "./context";
import { presentTestCase, presentTestRun, presentTestSuite } from "./presenters";
import { findProjectRow } from "./projects";
import type { CaseStatus, RunResult } from "./test-runs";

export const RUN_STATUSES = ["pending", "processed", "failed"] as const;
export const RUN_RESULTS = ["tests_passed", "tests_failed", "tests_errored"] as const;
export const CASE_STATUSES = ["passed", "failed", "errored", "skipped"] as const;

export type TestRunObject = ReturnType<typeof presentTestRun>;
export type TestSuiteObject = ReturnType<typeof presentTestSuite>;
export type TestCaseObject = ReturnType<typeof presentTestCase>;

export type TestRunFilters = { branch?: string; result?: RunResult; status?: (typeof RUN_STATUSES)[number] };

const MAX_INT = 2_147_483_647;

/** A path number (run or suite): digits only, 1 to 2^31-1; anything else is the same 404 as a missing one. */
function parseNumber(raw: string, resource: string): number {
  if (!/^[1-9][0-9]{0,9}$/.test(raw) || Number(raw) > MAX_INT) throw notFound(resource);
  return Number(raw);
}

export async function listTestRuns(scope: OrgScope, projectId: string, filters: TestRunFilters, page: PageRequest): Promise<Page<TestRunObject>> {
  const project = await findProjectRow(scope, projectId);
  const rows = await scope.db
    .select()
    .from(testRuns)
    .where(
      and(
        eq(testRuns.projectId, project.id),
        filters.branch !== undefined ? eq(testRuns.branch, filters.branch) : undefined,
        filters.result !== undefined ? eq(testRuns.result, filters.result) : undefined,
        filters.status !== undefined ? eq(testRuns.status, filters.status) : undefined,
        page.after ? keysetBefore(testRuns.createdAt, testRuns.id, page.after, "bigint") : undefined,
      ),
    )
    .orderBy(desc(testRuns.createdAt), desc(testRuns.id))
    .limit(page.limit + 1);
  return toPage(rows, page.limit, (r) => ({ ts: r.createdAt, id: r.id }), (r) => presentTestRun(r, scope.webAppUrl));
}

async function findRunRow(scope: OrgScope, projectId: string, number: string) {
  const project = await findProjectRow(scope, projectId);
  const [run] = await scope.db
    .select()
    .from(testRuns)
    .where(and(eq(testRuns.projectId, project.id), eq(testRuns.number, parseNumber(number, "Test run"))))
    .limit(1);
  if (!run) throw notFound("Test run");
  return run;
}

export async function getTestRun(scope: OrgScope, projectId: string, number: string): Promise<TestRunObject> {
  return presentTestRun(await findRunRow(scope, projectId, number), scope.webAppUrl);
}

export async function listTestSuites(scope: OrgScope, projectId: string, runNumber: string, page: PageRequest): Promise<Page<TestSuiteObject>> {
  const run = await findRunRow(scope, projectId, runNumber);
  const rows = await scope.db
    .select()
    .from(testSuites)
    .where(and(eq(testSuites.testRunId, run.id), page.after ? idBefore(testSuites.number, page.after) : undefined))
    .orderBy(desc(testSuites.number))
    .limit(page.limit + 1);
  return toPage(rows, page.limit, (r) => ({ ts: NO_TIMESTAMP, id: r.number }), presentTestSuite);
}

export async function listTestCases(
  scope: OrgScope,
  projectId: string,
  runNumber: string,
  suiteNumber: string,
  filters: { status?: CaseStatus },
  page: PageRequest,
): Promise<Page<TestCaseObject>> {
  const run = await findRunRow(scope, projectId, runNumber);
  const number = parseNumber(suiteNumber, "Test suite");
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
        filters.status !== undefined ? eq(testCases.status, filters.status) : undefined,
        page.after ? idBefore(testCases.id, page.after) : undefined,
      ),
    )
    .orderBy(desc(testCases.id))
    .limit(page.limit + 1);
  return toPage(rows, page.limit, (r) => ({ ts: NO_TIMESTAMP, id: r.id }), (r) => presentTestCase(r, run, scope.webAppUrl));
}

export async function getTestCase(scope: OrgScope, caseId: string): Promise<TestCaseObject> {
  if (!/^[1-9][0-9]{0,15}$/.test(caseId) || !Number.isSafeInteger(Number(caseId))) throw notFound("Test case");
  const [row] = await scope.db
    .select({ testCase: testCases, run: { projectId: testRuns.projectId, number: testRuns.number } })
    .from(testCases)
    .innerJoin(testRuns, eq(testRuns.id, testCases.testRunId))
    .innerJoin(projects, eq(projects.id, testRuns.projectId))
    .where(and(eq(testCases.id, Number(caseId)), eq(projects.organizationId, scope.organizationId)))
    .limit(1);
  if (!row) throw notFound("Test case");
  return presentTestCase(row.testCase, row.run, scope.webAppUrl);
}
