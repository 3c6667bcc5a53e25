/**
 * Reading tests through /api/v1: a project's tests with their health, one test, its executions
 * (its cases across runs) and its health transitions. Every query goes through the
 * organization's project, so a foreign test is the same 404 as a missing one.
 */
import { type SQL, and, arrayContains, desc, eq, gt, ilike, inArray, isNull, lte, or, sql } from "drizzle-orm";
import { projects, testCases, testHealthTransitions, testRuns, tests } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import type { Database } from "../../db/types";
import { notFound } from "../../lib/errors";
import { isUuid } from "../../lib/ids";
import { type ListRequest, type SortKey, defineList } from "../../lib/lists";
import type { Page } from "../../lib/pagination";
import type { CaseStatus, TestHealth, TestSort } from "../../lib/vocabulary";
import type { OrgScope } from "../shared/context";
import { presentHealthTransition, presentTest, presentTestCase, presentTestRunSummary } from "../../contract/presenters";
import { findProjectRow } from "../tenancy/projects";
import { TEST_WINDOW } from "./tests-state";
import { selectWithDataVersion } from "../shared/data-versions";

export type TestObject = ReturnType<typeof presentTest>;
export type TestRow = typeof tests.$inferSelect;
type WindowContext = { webAppUrl: string; window: { size: number; branch: string | null }; now: Date };

/** As in the path and query string; `health` and `sort` have their defaults (`all`, `impact`); `quarantined`, `owner` and `variant` null: not filtered. */
export type TestFilters = {
  project_id: string;
  health: TestHealth | "all";
  q: string | null;
  sort: TestSort;
  quarantined: "true" | "false" | null;
  owner: string | null;
  /** Normalized (src/lib/variant.ts); "" is the variant of runs without one. */
  variant: string | null;
};

/**
 * Each sort as a keyset: a never-null key (a missing rate, duration or failure sorts last) and
 * the id, in the same direction. A cursor carries the key of the last row of its page.
 */
const SORTS: Record<TestSort, { key: SortKey; keyOf: (row: TestRow) => string | number }> = {
  impact: { key: { expr: sql`${tests.impact}`, type: "int4", direction: "desc" }, keyOf: (row) => row.impact },
  failure_rate: {
    key: { expr: sql`coalesce(${tests.failureRate}, -1)`, type: "float8", direction: "desc" },
    keyOf: (row) => row.failureRate ?? -1,
  },
  duration: {
    key: { expr: sql`coalesce(${tests.durationP95Ms}, -1)`, type: "int4", direction: "desc" },
    keyOf: (row) => row.durationP95Ms ?? -1,
  },
  last_failed: {
    key: { expr: sql`coalesce(${tests.lastFailedAt}, '-infinity')`, type: "timestamptz", direction: "desc" },
    keyOf: (row) => row.lastFailedAt?.toISOString() ?? "-infinity",
  },
  name: { key: { expr: sql`${tests.name}`, type: "text", direction: "asc" }, keyOf: (row) => row.name },
};

/** One list definition per sort (the cursor names the sort, so a cursor of one sort is refused by another). */
export const testLists = Object.fromEntries(
  Object.entries(SORTS).map(([sort, { key, keyOf }]) => [
    sort,
    defineList<TestFilters, TestRow, TestObject, WindowContext>({
      name: `tests:${sort}`,
      order: { key, id: tests.id, idKind: "uuid" },
      positionOf: (row) => ({ id: row.id, k: keyOf(row) }),
      present: (row, { webAppUrl, window, now }) => presentTest(row, window, webAppUrl, now),
    }),
  ]),
) as Record<TestSort, ReturnType<typeof defineList<TestFilters, TestRow, TestObject, WindowContext>>>;

/** `%`, `_` and `\` match themselves in `q`. */
const likePattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export const windowOf = (project: { defaultBranch: string | null }) => ({ size: TEST_WINDOW, branch: project.defaultBranch });

/** In force at `now` (the quarantine's end is after it), or not: expired and never-quarantined tests alike. */
function quarantinedCondition(quarantined: TestFilters["quarantined"], now: Date): SQL | undefined {
  if (quarantined === null) return undefined;
  return quarantined === "true"
    ? gt(tests.quarantineExpiresAt, now)
    : or(isNull(tests.quarantineExpiresAt), lte(tests.quarantineExpiresAt, now));
}

export async function listTests(scope: OrgScope, request: ListRequest<TestFilters>): Promise<Page<TestObject>> {
  const { filters } = request;
  const project = await findProjectRow(scope, filters.project_id);
  const list = testLists[filters.sort];
  const search: SQL | undefined =
    filters.q === null
      ? undefined
      : or(
          ilike(tests.name, likePattern(filters.q)),
          ilike(tests.classname, likePattern(filters.q)),
          ilike(tests.file, likePattern(filters.q)),
        );
  const now = scope.clock.now();
  const rows = await scope.db
    .select()
    .from(tests)
    .where(
      and(
        eq(tests.projectId, project.id),
        filters.health === "all" ? undefined : eq(tests.health, filters.health),
        search,
        quarantinedCondition(filters.quarantined, now),
        // One of the test's CODEOWNERS owners, exactly (tests_owners_idx).
        filters.owner === null ? undefined : arrayContains(tests.owners, [filters.owner]),
        filters.variant === null ? undefined : eq(tests.variant, filters.variant),
        list.after(request),
      ),
    )
    .orderBy(...list.orderBy)
    .limit(list.fetchLimit(request));
  return list.page(rows, request, { webAppUrl: scope.webAppUrl, window: windowOf(project), now });
}

/** Variants listed at most (a project with more is a misuse of variants: the filter still takes any). */
const MAX_LISTED_VARIANTS = 50;

/**
 * The project's variants, in order: skips through tests_project_variant_impact_idx one variant at a time
 * (a recursive query), so the cost is the count of variants, not of tests.
 */
export async function listProjectVariants(db: Database, projectId: string): Promise<string[]> {
  const rows = await rowsOf<{ variant: string }>(
    db.execute(sql`with recursive v(variant, n) as (
        select min(variant), 1 from ${tests} where project_id = ${projectId}
        union all
        select (select min(t.variant) from ${tests} t where t.project_id = ${projectId} and t.variant > v.variant), v.n + 1
        from v where v.variant is not null and v.n < ${MAX_LISTED_VARIANTS})
      select variant from v where variant is not null`),
  );
  return rows.map((row) => row.variant);
}

/**
 * The test's siblings: the same test (classname and name, or file and name) in the project's other
 * variants (docs/tests.md, "Variants"), by variant; read through tests_project_name_idx.
 */
export type TestSibling = { id: string; variant: string; health: TestHealth; failingStreak: number };

export async function listTestSiblings(db: Database, test: TestRow): Promise<TestSibling[]> {
  return db
    .select({ id: tests.id, variant: tests.variant, health: tests.health, failingStreak: tests.failingStreak })
    .from(tests)
    .where(
      and(
        eq(tests.projectId, test.projectId),
        eq(tests.name, test.name),
        test.classname === null
          ? and(isNull(tests.classname), sql`${tests.file} is not distinct from ${test.file}`)
          : eq(tests.classname, test.classname),
        sql`${tests.id} <> ${test.id}`,
      ),
    )
    .orderBy(tests.variant)
    .limit(MAX_LISTED_VARIANTS);
}

/** The test and its project if the test belongs to the organization; one not-found for missing and foreign ids. */
export async function findTestRow(scope: OrgScope, testId: string) {
  if (!isUuid(testId)) throw notFound("Test");
  const [row] = await selectWithDataVersion(
    scope,
    (version) =>
      scope.db
        .select({ test: tests, project: { defaultBranch: projects.defaultBranch }, ...version })
        .from(tests)
        .innerJoin(projects, eq(projects.id, tests.projectId))
        .where(and(eq(tests.id, testId), eq(projects.organizationId, scope.organizationId)))
        .limit(1),
    "not_found",
  );
  if (!row) throw notFound("Test");
  return row;
}

export async function getTest(scope: OrgScope, testId: string): Promise<TestObject> {
  const { test, project } = await findTestRow(scope, testId);
  return presentTest(test, windowOf(project), scope.webAppUrl, scope.clock.now());
}

export type TestExecutionFilters = { test_id: string; status: CaseStatus | null; branch: string | null };

/** The run's columns a test view embeds (presentTestRunSummary). */
const runSummaryColumns = {
  projectId: testRuns.projectId,
  number: testRuns.number,
  branch: testRuns.branch,
  commitSha: testRuns.commitSha,
  createdAt: testRuns.createdAt,
};

type ExecutionRow = {
  testCase: typeof testCases.$inferSelect;
  run: Pick<typeof testRuns.$inferSelect, "projectId" | "number" | "branch" | "commitSha" | "createdAt">;
};

/** A test's cases across runs, newest first (by when they were stored), each with its run. */
export const testExecutionList = defineList<TestExecutionFilters, ExecutionRow, ReturnType<typeof presentExecution>, string>({
  name: "test_executions",
  order: { id: testCases.id, idKind: "bigint" },
  positionOf: (row) => ({ id: row.testCase.id }),
  present: (row, webAppUrl) => presentExecution(row, webAppUrl),
});

function presentExecution(row: ExecutionRow, webAppUrl: string) {
  return { ...presentTestCase(row.testCase, row.run, webAppUrl), test_run: presentTestRunSummary(row.run, webAppUrl) };
}

export async function listTestExecutions(scope: OrgScope, request: ListRequest<TestExecutionFilters>) {
  const { filters } = request;
  const { test } = await findTestRow(scope, filters.test_id);
  const rows = await scope.db
    .select({
      testCase: testCases,
      run: runSummaryColumns,
    })
    .from(testCases)
    .innerJoin(testRuns, eq(testRuns.id, testCases.testRunId))
    .where(
      and(
        eq(testCases.testId, test.id),
        filters.status === null ? undefined : eq(testCases.status, filters.status),
        filters.branch === null ? undefined : eq(testRuns.branch, filters.branch),
        testExecutionList.after(request),
      ),
    )
    .orderBy(...testExecutionList.orderBy)
    .limit(testExecutionList.fetchLimit(request));
  return testExecutionList.page(rows, request, scope.webAppUrl);
}

export type HealthTransitionFilters = { test_id: string };

type TransitionRow = { transition: typeof testHealthTransitions.$inferSelect; run: ExecutionRow["run"] };

/** A test's health changes, newest first. */
export const healthTransitionList = defineList<HealthTransitionFilters, TransitionRow, ReturnType<typeof presentHealthTransition>, string>({
  name: "test_health_transitions",
  order: { ts: testHealthTransitions.createdAt, id: testHealthTransitions.id, idKind: "bigint" },
  positionOf: (row) => ({ ts: row.transition.createdAt, id: row.transition.id }),
  present: (row, webAppUrl) => presentHealthTransition(row.transition, row.run, webAppUrl),
});

export async function listHealthTransitions(scope: OrgScope, request: ListRequest<HealthTransitionFilters>) {
  const { test } = await findTestRow(scope, request.filters.test_id);
  const rows = await scope.db
    .select({
      transition: testHealthTransitions,
      run: runSummaryColumns,
    })
    .from(testHealthTransitions)
    .innerJoin(testRuns, eq(testRuns.id, testHealthTransitions.testRunId))
    .where(and(eq(testHealthTransitions.testId, test.id), healthTransitionList.after(request)))
    .orderBy(...healthTransitionList.orderBy)
    .limit(healthTransitionList.fetchLimit(request));
  return healthTransitionList.page(rows, request, scope.webAppUrl);
}

/** Why a test is flaky, in its latest transition to flaky: the reason and the run it happened in. */
export type FlakyReason = { reason: string; runNumber: number; branch: string | null };

/**
 * The latest transition to flaky of each of `testIds` (tests of the organization's project
 * `projectId`; others find nothing): what the tests page shows beside a flaky label whose
 * default-branch figures show no failure, because the evidence was on another branch
 * (docs/tests.md, "What the pages and the MCP summaries say"). One statement, DISTINCT ON over
 * the transitions' (test, created_at) index.
 */
export async function latestFlakyReasons(
  scope: OrgScope,
  projectId: string,
  testIds: readonly string[],
): Promise<Map<string, FlakyReason>> {
  if (testIds.length === 0) return new Map();
  const rows = await scope.db
    .selectDistinctOn([testHealthTransitions.testId], {
      testId: testHealthTransitions.testId,
      reason: testHealthTransitions.reason,
      runNumber: testRuns.number,
      branch: testRuns.branch,
    })
    .from(testHealthTransitions)
    .innerJoin(tests, eq(tests.id, testHealthTransitions.testId))
    .innerJoin(projects, eq(projects.id, tests.projectId))
    .innerJoin(testRuns, eq(testRuns.id, testHealthTransitions.testRunId))
    .where(
      and(
        inArray(testHealthTransitions.testId, [...new Set(testIds)]),
        eq(tests.projectId, projectId),
        eq(projects.organizationId, scope.organizationId),
        eq(testHealthTransitions.toHealth, "flaky"),
      ),
    )
    .orderBy(testHealthTransitions.testId, desc(testHealthTransitions.createdAt), desc(testHealthTransitions.id));
  return new Map(rows.map((row) => [row.testId, { reason: row.reason, runNumber: row.runNumber, branch: row.branch }]));
}
