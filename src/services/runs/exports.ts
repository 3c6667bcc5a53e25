/**
 * Bulk export of a project's test runs and test cases over a window of run arrival
 * (`created_at` in [since, until)), for warehouses: batches read from the database one statement
 * at a time, by keyset (never OFFSET), so that whoever streams them holds one batch at a time
 * whatever the window's size (docs/exports.md).
 *
 * Order: runs by arrival (`created_at`, then the run's id: runs of one millisecond in the order
 * their numbers were given), a run's cases by id. Which rows are in:
 * - test_runs: every run that arrived in the window, whatever its status (pending, processed,
 *   failed), as GET /projects/{id}/test_runs/{number} shows it at the moment it is read.
 * - test_cases: the cases of the processed runs among them (a pending run has no cases yet, a
 *   failed one never will). A run's cases are stored in one transaction, so a run is exported
 *   whole or not at all.
 *
 * The batches are separate statements, not one snapshot: a run processed while the export runs
 * is in it if the export had not yet passed its place. Export a window that ended a few minutes
 * ago to read settled data.
 */
import { pastRetention } from "../../lib/errors";
import { DEFAULT_RETENTION, keptFrom } from "../../lib/retention";
import { type SQL, and, asc, eq, inArray, sql } from "drizzle-orm";
import { testCases, testRuns } from "../../db/schema";
import type { OrgScope } from "../shared/context";
import { presentTestRun } from "../../contract/presenters";
import { findProjectRow } from "../tenancy/projects";
import type { TestRunObject } from "./test-results";

/** The window of run arrival, as the query string gave it (ISO 8601 date-times with a zone; checked by the route's schema). */
export type ExportRequest = { projectId: string; since: string; until: string };

export type ExportOptions = {
  /** Rows per statement (and per chunk of the stream). */
  batchRows?: number;
};

/** Large enough to keep round trips few (one per batch on the Worker), small enough to keep a batch to a few megabytes. */
const DEFAULT_EXPORT_BATCH_ROWS = 2_000;

/** A line of the test_cases export: the case, its test, and the run it ran in. */
export type TestCaseExportLine = {
  test_case_id: number;
  test_id: string;
  name: string;
  classname: string | null;
  file: string | null;
  status: string;
  duration_ms: number | null;
  /** The failure of a failed or errored case, as GET /test_cases/{id} names it; null for passed and skipped cases. */
  failure_type: string | null;
  failure_message: string | null;
  run_number: number;
  branch: string | null;
  commit_sha: string | null;
  run_created_at: string;
};

type RunPosition = { createdAt: Date; id: number };

/**
 * A 410 `past_retention` for a window that starts before what is kept (docs/retention.md): its
 * runs' cases (the project's retention), or its runs themselves (SUMMARY_RETENTION_DAYS).
 */
function assertWindowKept(scope: OrgScope, request: ExportRequest, what: "cases" | "runs", projectRetentionDays: number | null): void {
  const retention = scope.retention ?? DEFAULT_RETENTION;
  const days = what === "cases" ? (projectRetentionDays ?? retention.days) : retention.summaryDays;
  const from = keptFrom(scope.clock.now(), days);
  if (Date.parse(request.since) >= from.getTime()) return;
  throw what === "cases"
    ? pastRetention(
        "Test cases of runs",
        from,
        days,
        `Ask for a window from ${from.toISOString()} on; the runs' summaries are in the test_runs export.`,
      )
    : pastRetention("Test runs", from, days, `Ask for a window from ${from.toISOString()} on.`);
}

/** The runs of the window after `after`, by arrival: the keyset both exports walk. */
function runsInWindow(projectId: string, request: ExportRequest, after: RunPosition | null, extra?: SQL): SQL | undefined {
  return and(
    eq(testRuns.projectId, projectId),
    sql`${testRuns.createdAt} >= ${request.since}::timestamptz`,
    sql`${testRuns.createdAt} < ${request.until}::timestamptz`,
    after ? sql`(${testRuns.createdAt}, ${testRuns.id}) > (${after.createdAt.toISOString()}::timestamptz, ${after.id}::bigint)` : undefined,
    extra,
  );
}

/**
 * The runs of the window as batches of API objects. Throws `not_found` (the same for a missing
 * and a foreign project) before anything is read; the batches are read as they are asked for.
 */
export async function exportTestRuns(
  scope: OrgScope,
  request: ExportRequest,
  options: ExportOptions = {},
): Promise<AsyncGenerator<TestRunObject[]>> {
  const project = await findProjectRow(scope, request.projectId);
  assertWindowKept(scope, request, "runs", project.retentionDays);
  const batchRows = options.batchRows ?? DEFAULT_EXPORT_BATCH_ROWS;
  return (async function* () {
    let after: RunPosition | null = null;
    for (;;) {
      const rows = await scope.db
        .select()
        .from(testRuns)
        .where(runsInWindow(project.id, request, after))
        .orderBy(asc(testRuns.createdAt), asc(testRuns.id))
        .limit(batchRows);
      if (rows.length > 0) yield rows.map((row) => presentTestRun(row, scope.webAppUrl));
      if (rows.length < batchRows) return;
      after = rows[rows.length - 1]!;
    }
  })();
}

type ExportRun = { id: number; number: number; branch: string | null; commitSha: string | null; createdAt: Date; testsCount: number };

const caseColumns = {
  id: testCases.id,
  testRunId: testCases.testRunId,
  suiteNumber: testCases.suiteNumber,
  testId: testCases.testId,
  name: testCases.name,
  classname: testCases.classname,
  file: testCases.file,
  status: testCases.status,
  durationMs: testCases.durationMs,
  failureType: testCases.failureType,
  failureMessage: testCases.failureMessage,
};
type CaseRow = { [K in keyof typeof caseColumns]: (typeof testCases.$inferSelect)[K] };

/**
 * A run's cases in id order, read as (suite number, id) from test_cases_run_suite_idx: the same
 * order, because a run's cases are written in one stream in suite-number order (a suite's own
 * cases, then its nested suites', which are numbered after it: storeTestRun in
 * src/services/runs/test-runs.ts), each taking the next id. Another index in id order would cost
 * every upload a write, and invite the suite listing's queries away from their own index.
 */
const RUN_CASE_ORDER = [asc(testCases.suiteNumber), asc(testCases.id)];

function caseLine(row: CaseRow, run: ExportRun): TestCaseExportLine {
  // A passed case may carry a message (a JSON report's), a skipped one its reason: neither is a failure.
  const failed = row.status === "failed" || row.status === "errored";
  return {
    test_case_id: row.id,
    test_id: row.testId,
    name: row.name,
    classname: row.classname,
    file: row.file,
    status: row.status,
    duration_ms: row.durationMs,
    failure_type: failed ? row.failureType : null,
    failure_message: failed ? row.failureMessage : null,
    run_number: run.number,
    branch: run.branch,
    commit_sha: run.commitSha,
    run_created_at: run.createdAt.toISOString(),
  };
}

/**
 * The cases of the window's processed runs as batches of lines. Runs are read by keyset, then
 * their cases: consecutive runs whose cases fit in one batch (a processed run's `tests_count` is
 * its number of cases, final) in one statement, a larger run alone, by keyset (RUN_CASE_ORDER).
 */
export async function exportTestCases(
  scope: OrgScope,
  request: ExportRequest,
  options: ExportOptions = {},
): Promise<AsyncGenerator<TestCaseExportLine[]>> {
  const project = await findProjectRow(scope, request.projectId);
  assertWindowKept(scope, request, "cases", project.retentionDays);
  const batchRows = options.batchRows ?? DEFAULT_EXPORT_BATCH_ROWS;
  const { db } = scope;

  async function* casesOfLargeRun(run: ExportRun): AsyncGenerator<TestCaseExportLine[]> {
    let after: { suiteNumber: number; id: number } | null = null;
    for (;;) {
      const rows: CaseRow[] = await db
        .select(caseColumns)
        .from(testCases)
        .where(
          and(
            eq(testCases.testRunId, run.id),
            after ? sql`(${testCases.suiteNumber}, ${testCases.id}) > (${after.suiteNumber}, ${after.id}::bigint)` : undefined,
          ),
        )
        .orderBy(...RUN_CASE_ORDER)
        .limit(batchRows);
      if (rows.length > 0) yield rows.map((row) => caseLine(row, run));
      if (rows.length < batchRows) return;
      after = rows[rows.length - 1]!;
    }
  }

  async function* casesOfRuns(runs: ExportRun[]): AsyncGenerator<TestCaseExportLine[]> {
    const withCases = runs.filter((run) => run.testsCount > 0);
    if (withCases.length === 0) return;
    if (withCases.length === 1 && withCases[0]!.testsCount > batchRows) {
      yield* casesOfLargeRun(withCases[0]!);
      return;
    }
    const rows = await db
      .select(caseColumns)
      .from(testCases)
      .where(
        inArray(
          testCases.testRunId,
          withCases.map((run) => run.id),
        ),
      )
      .orderBy(asc(testCases.testRunId), ...RUN_CASE_ORDER);
    const byRun = new Map<number, CaseRow[]>();
    for (const row of rows) {
      const list = byRun.get(row.testRunId);
      if (list) list.push(row);
      else byRun.set(row.testRunId, [row]);
    }
    const lines: TestCaseExportLine[] = [];
    for (const run of withCases) for (const row of byRun.get(run.id) ?? []) lines.push(caseLine(row, run));
    if (lines.length > 0) yield lines;
  }

  return (async function* () {
    let after: RunPosition | null = null;
    for (;;) {
      const runs: ExportRun[] = await db
        .select({
          id: testRuns.id,
          number: testRuns.number,
          branch: testRuns.branch,
          commitSha: testRuns.commitSha,
          createdAt: testRuns.createdAt,
          testsCount: testRuns.testsCount,
        })
        .from(testRuns)
        .where(runsInWindow(project.id, request, after, eq(testRuns.status, "processed")))
        .orderBy(asc(testRuns.createdAt), asc(testRuns.id))
        .limit(batchRows);
      let group: ExportRun[] = [];
      let groupCases = 0;
      for (const run of runs) {
        if (group.length > 0 && groupCases + run.testsCount > batchRows) {
          yield* casesOfRuns(group);
          group = [];
          groupCases = 0;
        }
        group.push(run);
        groupCases += run.testsCount;
      }
      yield* casesOfRuns(group);
      if (runs.length < batchRows) return;
      after = runs[runs.length - 1]!;
    }
  })();
}
