/**
 * Failures grouped by cause. Every failed or errored case gets a signature when its run is
 * stored (src/ingest/failure-signature.ts); run processing then keeps one group per project and
 * signature and one per test and signature (O(the run's failures)). A run's groups are read from
 * its own cases. Rules: docs/failure-groups.md.
 */
import { type SQL, and, eq, sql } from "drizzle-orm";
import { failureGroups, projects, testCases, testFailureGroups, testRuns } from "../../db/schema";
import { ownString } from "../../lib/own-string";
import { type ListRequest, defineList } from "../../lib/lists";
import type { Page } from "../../lib/pagination";
import type { OrgScope } from "../shared/context";
import { findProjectRow } from "../tenancy/projects";
import { findRunRow } from "./test-results";
import { findTestRow } from "../tests/tests";

/**
 * What a run's failures add to the groups that its stored cases do not say: each signature's
 * message (the first case's, as failureSignature words it). Everything else (occurrences per test
 * and signature, samples) is read from the run's cases, so memory holds one entry per distinct
 * cause, not per failing case.
 */
export class RunFailures {
  /** signature → message. */
  readonly messages = new Map<string, string>();

  add(failure: { signature: string; message: string }): void {
    // Kept until the run is stored: its own copy, not a slice of the report's text.
    if (!this.messages.has(failure.signature)) this.messages.set(ownString(failure.signature), ownString(failure.message));
  }
}

/**
 * Adds a stored run's failures to its tests' groups and the project's, as common table expressions
 * (null when the run has no failure) for a caller that adds its own writes to the same statement
 * (run processing: one round trip on the Worker); the last one is named `failure_groups_written`.
 * The run's failed cases are read once, the latest case of each (test, signature) is the test
 * group's sample and the latest of each signature the project group's, and a (test, signature)
 * pair seen for the first time counts once in the project group's `tests_count`.
 */
export function runFailuresSql(run: { id: number; projectId: string; createdAt: Date }, failures: RunFailures): SQL | null {
  if (failures.messages.size === 0) return null;
  const messages = [...failures.messages].map(([s, m]) => ({ s, m }));
  const at = sql`${run.createdAt.toISOString()}::timestamptz`;
  // Occurrences per test and signature are the run's stored cases with that signature (a case has
  // one when run processing derived it: the same cases whose messages are here).
  return sql`
    x as (
      select c.failure_signature as s, m.m, count(*)::int as o, c.test_id
      from ${testCases} c join json_to_recordset(${JSON.stringify(messages)}::json) as m(s text, m text) on m.s = c.failure_signature
      where c.test_run_id = ${run.id} and c.failure_signature is not null
      group by c.failure_signature, m.m, c.test_id
    ),
    samples as (
      select distinct on (c.test_id, c.failure_signature) c.test_id, c.failure_signature, c.id, c.failure_message, c.failure_text
      from ${testCases} c where c.test_run_id = ${run.id} and c.failure_signature is not null
      order by c.test_id, c.failure_signature, c.id desc
    ),
    per_test as (
      insert into ${testFailureGroups} (test_id, signature, message, occurrences, first_seen_at, last_seen_at, sample_test_case_id, sample_message, sample_text)
      select x.test_id, x.s, x.m, x.o, ${at}, ${at}, s.id, s.failure_message, s.failure_text
      from x join samples s on s.test_id = x.test_id and s.failure_signature = x.s
      on conflict (test_id, signature) do update set
        occurrences = ${testFailureGroups.occurrences} + excluded.occurrences,
        first_seen_at = least(${testFailureGroups.firstSeenAt}, excluded.first_seen_at),
        last_seen_at = greatest(${testFailureGroups.lastSeenAt}, excluded.last_seen_at),
        message = excluded.message,
        sample_test_case_id = excluded.sample_test_case_id, sample_message = excluded.sample_message, sample_text = excluded.sample_text
      returning signature, (xmax = 0) as inserted
    ),
    per_signature as (select x.s, max(x.m) as m, sum(x.o)::int as o from x group by x.s),
    latest as (select distinct on (failure_signature) failure_signature, id, failure_message, failure_text from samples order by failure_signature, id desc),
    new_tests as (select signature, count(*) filter (where inserted)::int as t from per_test group by signature),
    failure_groups_written as (
      insert into ${failureGroups} (project_id, signature, message, occurrences, tests_count, first_seen_at, last_seen_at, sample_test_case_id, sample_message, sample_text)
      select ${run.projectId}::uuid, g.s, g.m, g.o, coalesce(n.t, 0), ${at}, ${at}, l.id, l.failure_message, l.failure_text
      from per_signature g join latest l on l.failure_signature = g.s left join new_tests n on n.signature = g.s
      on conflict (project_id, signature) do update set
        occurrences = ${failureGroups.occurrences} + excluded.occurrences,
        tests_count = ${failureGroups.testsCount} + excluded.tests_count,
        first_seen_at = least(${failureGroups.firstSeenAt}, excluded.first_seen_at),
        last_seen_at = greatest(${failureGroups.lastSeenAt}, excluded.last_seen_at),
        message = excluded.message,
        sample_test_case_id = excluded.sample_test_case_id, sample_message = excluded.sample_message, sample_text = excluded.sample_text
      returning 1
    )`;
}

type GroupRow = Pick<
  typeof failureGroups.$inferSelect,
  "id" | "signature" | "message" | "occurrences" | "firstSeenAt" | "lastSeenAt" | "sampleTestCaseId" | "sampleMessage" | "sampleText"
> & { testsCount: number };

function presentFailureGroup(row: GroupRow) {
  return {
    signature: row.signature,
    message: row.message,
    occurrences: row.occurrences,
    tests_count: row.testsCount,
    first_seen_at: row.firstSeenAt.toISOString(),
    last_seen_at: row.lastSeenAt.toISOString(),
    sample: { test_case_id: row.sampleTestCaseId, message: row.sampleMessage, text: row.sampleText },
  };
}

export type FailureGroupObject = ReturnType<typeof presentFailureGroup>;
export type ProjectFailureGroupFilters = { project_id: string };
export type TestFailureGroupFilters = { test_id: string };
export type RunFailureGroupFilters = { project_id: string; run: string };

/** A project's groups, most recently seen first. */
export const projectFailureGroupList = defineList<ProjectFailureGroupFilters, GroupRow, FailureGroupObject>({
  name: "failure_groups",
  order: { ts: failureGroups.lastSeenAt, id: failureGroups.id, idKind: "bigint" },
  positionOf: (row) => ({ ts: row.lastSeenAt, id: row.id }),
  present: (row) => presentFailureGroup(row),
});

export async function listProjectFailureGroups(
  scope: OrgScope,
  request: ListRequest<ProjectFailureGroupFilters>,
): Promise<Page<FailureGroupObject>> {
  const project = await findProjectRow(scope, request.filters.project_id);
  const rows = await scope.db
    .select()
    .from(failureGroups)
    .where(and(eq(failureGroups.projectId, project.id), projectFailureGroupList.after(request)))
    .orderBy(...projectFailureGroupList.orderBy)
    .limit(projectFailureGroupList.fetchLimit(request));
  return projectFailureGroupList.page(rows, request);
}

/** A test's groups, most recently seen first (`tests_count` is 1: the test itself). */
export const testFailureGroupList = defineList<TestFailureGroupFilters, GroupRow, FailureGroupObject>({
  name: "test_failure_groups",
  order: { ts: testFailureGroups.lastSeenAt, id: testFailureGroups.id, idKind: "bigint" },
  positionOf: (row) => ({ ts: row.lastSeenAt, id: row.id }),
  present: (row) => presentFailureGroup(row),
});

export async function listTestFailureGroups(
  scope: OrgScope,
  request: ListRequest<TestFailureGroupFilters>,
): Promise<Page<FailureGroupObject>> {
  const { test } = await findTestRow(scope, request.filters.test_id);
  const rows = await scope.db
    .select()
    .from(testFailureGroups)
    .where(and(eq(testFailureGroups.testId, test.id), testFailureGroupList.after(request)))
    .orderBy(...testFailureGroupList.orderBy)
    .limit(testFailureGroupList.fetchLimit(request));
  return testFailureGroupList.page(
    rows.map((row) => ({ ...row, testsCount: 1 })),
    request,
  );
}

type RunGroupRow = GroupRow & { runOccurrences: number; runTests: number; testCaseIds: number[] };

export function presentRunFailureGroup(row: RunGroupRow) {
  return {
    ...presentFailureGroup(row),
    run_occurrences: row.runOccurrences,
    run_tests_count: row.runTests,
    test_case_ids: row.testCaseIds,
  };
}

/**
 * A run's failures grouped by cause, the largest group first (ties by the group's id): what a
 * person reads first on a red run. The group's figures are the project's; `run_occurrences` and
 * `test_case_ids` are this run's.
 */
export const runFailureGroupList = defineList<RunFailureGroupFilters, RunGroupRow, ReturnType<typeof presentRunFailureGroup>>({
  name: "run_failure_groups",
  order: { key: { expr: sql`in_run.run_occurrences`, type: "int4", direction: "desc" }, id: failureGroups.id, idKind: "bigint" },
  positionOf: (row) => ({ id: row.id, k: row.runOccurrences }),
  present: (row) => presentRunFailureGroup(row),
});

export async function listRunFailureGroups(scope: OrgScope, request: ListRequest<RunFailureGroupFilters>) {
  const run = await findRunRow(scope, request.filters.project_id, request.filters.run);
  return runFailureGroupsOf(scope, run, request);
}

/** A page of listRunFailureGroups for a run the caller already found (a run page finds it once): one statement. */
export async function runFailureGroupsOf(
  scope: OrgScope,
  run: Pick<typeof testRuns.$inferSelect, "id" | "projectId">,
  request: ListRequest<RunFailureGroupFilters>,
) {
  const inRun = scope.db
    .select({
      signature: testCases.failureSignature,
      runOccurrences: sql<number>`count(*)::int`.as("run_occurrences"),
      runTests: sql<number>`count(distinct ${testCases.testId})::int`.as("run_tests"),
      testCaseIds: sql<number[]>`array_agg(${testCases.id} order by ${testCases.id} desc)`.as("test_case_ids"),
    })
    .from(testCases)
    .where(and(eq(testCases.testRunId, run.id), sql`${testCases.failureSignature} is not null`))
    .groupBy(testCases.failureSignature)
    .as("in_run");
  const rows = await scope.db
    .select({
      id: failureGroups.id,
      signature: failureGroups.signature,
      message: failureGroups.message,
      occurrences: failureGroups.occurrences,
      testsCount: failureGroups.testsCount,
      firstSeenAt: failureGroups.firstSeenAt,
      lastSeenAt: failureGroups.lastSeenAt,
      sampleTestCaseId: failureGroups.sampleTestCaseId,
      sampleMessage: failureGroups.sampleMessage,
      sampleText: failureGroups.sampleText,
      runOccurrences: inRun.runOccurrences,
      runTests: inRun.runTests,
      testCaseIds: inRun.testCaseIds,
    })
    .from(inRun)
    .innerJoin(failureGroups, and(eq(failureGroups.projectId, run.projectId), eq(failureGroups.signature, inRun.signature)))
    .innerJoin(projects, and(eq(projects.id, failureGroups.projectId), eq(projects.organizationId, scope.organizationId)))
    .where(runFailureGroupList.after(request))
    .orderBy(...runFailureGroupList.orderBy)
    .limit(runFailureGroupList.fetchLimit(request));
  return runFailureGroupList.page(
    rows.map((row) => ({ ...row, testCaseIds: row.testCaseIds.map(Number) })),
    request,
  );
}
