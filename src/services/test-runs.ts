import { and, eq, gt, sql } from "drizzle-orm";
import { type CaseAttempt, projects, testCases, testRuns, testSuites } from "../db/schema";
import type { ServiceDeps } from "./context";

export type CaseStatus = "passed" | "failed" | "errored" | "skipped";
export type RunResult = "tests_passed" | "tests_failed" | "tests_errored";

export type RunMetadata = {
  branch?: string | null;
  commitSha?: string | null;
  buildId?: string | null;
  buildUrl?: string | null;
  tags?: string[];
  startedAt?: Date | null;
};

export type ReportCase = {
  name: string;
  classname?: string | null;
  file?: string | null;
  status: CaseStatus;
  durationMs?: number | null;
  failureType?: string | null;
  failureMessage?: string | null;
  attempts?: CaseAttempt[];
};

export type ReportSuite = { name: string; durationMs?: number | null; cases: ReportCase[]; suites?: ReportSuite[] };
export type Report = { suites: ReportSuite[]; durationMs?: number | null };

type Counts = { testsCount: number; passedCount: number; failedCount: number; erroredCount: number; skippedCount: number };

const zeroCounts = (): Counts => ({ testsCount: 0, passedCount: 0, failedCount: 0, erroredCount: 0, skippedCount: 0 });

function addCase(counts: Counts, status: CaseStatus): void {
  counts.testsCount++;
  if (status === "passed") counts.passedCount++;
  else if (status === "failed") counts.failedCount++;
  else if (status === "errored") counts.erroredCount++;
  else counts.skippedCount++;
}

/** TestNod's rule: errored if any case errored, else failed if any failed, else passed (also for zero cases). */
export function runResult(counts: Pick<Counts, "failedCount" | "erroredCount">): RunResult {
  if (counts.erroredCount > 0) return "tests_errored";
  if (counts.failedCount > 0) return "tests_failed";
  return "tests_passed";
}

/**
 * Records a run the moment it arrives: the project's counter allocates its number atomically
 * (the UPDATE's row lock serializes concurrent arrivals), and the run counts in
 * `test_runs_count` and `last_test_run_at` before it is processed.
 */
export async function recordTestRunArrival(deps: Pick<ServiceDeps, "db" | "clock">, projectId: string, meta: RunMetadata = {}) {
  const now = deps.clock.now();
  return deps.db.transaction(async (tx) => {
    const [counter] = await tx
      .update(projects)
      .set({ testRunsCount: sql`${projects.testRunsCount} + 1`, lastTestRunAt: now })
      .where(eq(projects.id, projectId))
      .returning({ number: projects.testRunsCount });
    if (!counter) throw new Error(`Project ${projectId} does not exist.`);
    const [run] = await tx
      .insert(testRuns)
      .values({
        projectId,
        number: counter.number,
        branch: meta.branch ?? null,
        commitSha: meta.commitSha ?? null,
        buildId: meta.buildId ?? null,
        buildUrl: meta.buildUrl ?? null,
        tags: meta.tags ?? [],
        startedAt: meta.startedAt ?? null,
        createdAt: now,
      })
      .returning();
    return run!;
  });
}

/**
 * Stores a parsed report for a pending run and marks it processed, all in one transaction:
 * either every suite and case is stored with the run's counts, or nothing is.
 */
export async function completeTestRun(deps: Pick<ServiceDeps, "db" | "clock">, runId: number, report: Report) {
  const now = deps.clock.now();
  return deps.db.transaction(async (tx) => {
    const [run] = await tx.select().from(testRuns).where(eq(testRuns.id, runId)).for("update");
    if (!run) throw new Error(`Test run ${runId} does not exist.`);
    if (run.status !== "pending") throw new Error(`Test run ${runId} was already ${run.status}.`);

    const runCounts = zeroCounts();
    const suiteRows: (typeof testSuites.$inferInsert)[] = [];
    const caseRows: (typeof testCases.$inferInsert)[] = [];
    let nextNumber = run.suitesCount;

    const walk = (suite: ReportSuite, parentNumber: number | null): Counts => {
      const number = ++nextNumber;
      const counts = zeroCounts();
      const row: typeof testSuites.$inferInsert = { testRunId: runId, number, parentNumber, name: suite.name, durationMs: suite.durationMs ?? null };
      suiteRows.push(row);
      for (const testCase of suite.cases) {
        addCase(counts, testCase.status);
        caseRows.push({
          testRunId: runId,
          suiteNumber: number,
          name: testCase.name,
          classname: testCase.classname ?? null,
          file: testCase.file ?? null,
          status: testCase.status,
          durationMs: testCase.durationMs ?? null,
          failureType: testCase.failureType ?? null,
          failureMessage: testCase.failureMessage ?? null,
          attempts: testCase.attempts ?? [],
        });
      }
      for (const child of suite.suites ?? []) {
        const childCounts = walk(child, number);
        for (const key of Object.keys(counts) as (keyof Counts)[]) counts[key] += childCounts[key];
      }
      Object.assign(row, counts);
      return counts;
    };

    let topLevelDuration = 0;
    for (const suite of report.suites) {
      const counts = walk(suite, null);
      for (const key of Object.keys(runCounts) as (keyof Counts)[]) runCounts[key] += counts[key];
      topLevelDuration += suite.durationMs ?? 0;
    }

    // Chunked inserts keep each statement under Postgres' 65,535-parameter limit.
    for (let i = 0; i < suiteRows.length; i += 1000) await tx.insert(testSuites).values(suiteRows.slice(i, i + 1000));
    for (let i = 0; i < caseRows.length; i += 2000) await tx.insert(testCases).values(caseRows.slice(i, i + 2000));

    const result = runResult(runCounts);
    const [processed] = await tx
      .update(testRuns)
      .set({
        ...runCounts,
        status: "processed",
        result,
        processedAt: now,
        durationMs: report.durationMs ?? Math.round(topLevelDuration),
        suitesCount: nextNumber,
      })
      .where(eq(testRuns.id, runId))
      .returning();

    // latest_result follows the most recent processed run: a late-finishing older run does not overwrite a newer one.
    await tx
      .update(projects)
      .set({ latestResult: result })
      .where(
        and(
          eq(projects.id, run.projectId),
          sql`not exists (select 1 from ${testRuns} where ${testRuns.projectId} = ${run.projectId} and ${testRuns.status} = 'processed' and ${gt(testRuns.number, run.number)})`,
        ),
      );
    return processed!;
  });
}

/** Marks a pending run as failed with a reason; nothing of its report is kept. */
export async function failTestRun(deps: Pick<ServiceDeps, "db" | "clock">, runId: number, reason: string) {
  const [row] = await deps.db
    .update(testRuns)
    .set({ status: "failed", failureReason: reason.slice(0, 1000), processedAt: deps.clock.now() })
    .where(and(eq(testRuns.id, runId), eq(testRuns.status, "pending")))
    .returning();
  return row ?? null;
}
