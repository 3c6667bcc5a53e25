/**
 * A retry part of a run in parts (`retry=true`, docs/uploads.md "Runs in parts"): a re-run of the
 * run's failed tests, sent with its run key after (or while) the run completes. Its cases become
 * further attempts of the run's cases of the same tests: the earlier outcome joins their attempts
 * and the retry's is the case's outcome, so a pass on retry is counted (passed_on_retry_count).
 * A case of a test the run did not have is added in a suite of its own. The run's and its suites'
 * counts and result are counted again from its cases, and the run is compared with its base again
 * (its verdicts see the retry). Its tests' state and the alert checks do not run again (the run
 * already fed them once), except for the tests whose failure in the run passed on the retry:
 * notePassesOnRetry makes that outcome a pass on retry in their window, and them flaky.
 */
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows";
import { transactionWithRetry } from "../../db/transaction-retry";
import type { Database } from "../../db/types";
import { projects, runFixedTests, runVerdicts, testCases, testRunParts, testRuns, testSuites, uploadPayloads } from "../../db/schema";
import { failureSignature } from "../../ingest/failure-signature";
import { REPORT_LIMITS, type ReportSuite } from "../../ingest/report";
import { type HealthFollowDeps, followHealthChanges } from "../tests/quarantine";
import { notePassesOnRetry } from "../tests/tests-state";
import { noteRunCasesSql } from "../shared/test-rollups";
import { compareRun } from "./run-comparison";
import { type CaseRow, type SuiteSource, caseInsertRow } from "./test-runs";

/** Rows per statement of the merge. */
const MERGE_CHUNK = 1_000;

/** Every case of a retry part's report, as rows to merge (the run-wide case limit holds). */
export async function retryRows(source: SuiteSource): Promise<CaseRow[]> {
  const rows: CaseRow[] = [];
  const add = (suites: ReportSuite[]) => {
    for (const suite of suites) {
      for (const c of suite.cases) rows.push(caseInsertRow(0, c, failureSignature(c)?.signature ?? null, false));
      add(suite.suites ?? []);
    }
  };
  await source(add, async () => {});
  return rows;
}

/**
 * Merges a retry part into its processed run, in one transaction; false when there is nothing to
 * do (the run is not processed, or the part was merged before).
 */
export async function mergeRetryPart(
  deps: HealthFollowDeps & { db: Database },
  runId: number,
  part: number,
  rows: CaseRow[],
): Promise<boolean> {
  const now = deps.clock.now();
  return transactionWithRetry(deps.db, async (tx) => {
    const [run] = await rowsOf<{
      suites_count: number;
      base_commit_sha: string | null;
      project_id: string;
      variant: string;
      number: number;
      branch: string | null;
      commit_sha: string | null;
      created_at: string | Date;
      processed_at: string | Date | null;
    }>(
      tx.execute(sql`select r.suites_count, r.base_commit_sha, r.project_id, r.variant, r.number, r.branch, r.commit_sha, r.created_at, r.processed_at
        from ${testRuns} r
        join ${testRunParts} rp on rp.test_run_id = r.id and rp.part_number = ${part} and rp.status = 'pending'
        where r.id = ${runId} and r.status = 'processed' for update of r, rp`),
    );
    if (!run) return false;
    const suite = run.suites_count + 1;
    const passedOnRetry = new Set<string>();
    for (let i = 0; i < rows.length; i += MERGE_CHUNK)
      for (const { test_id } of await rowsOf<{ test_id: string }>(
        tx.execute(mergeSql(runId, { projectId: run.project_id, variant: run.variant }, suite, rows.slice(i, i + MERGE_CHUNK))),
      ))
        passedOnRetry.add(test_id);
    await tx.execute(sql`with added as (select count(*)::int as n from ${testCases} where test_run_id = ${runId} and suite_number = ${suite}),
      stored as (update ${projects} set stored_cases_count = stored_cases_count + (select n from added) where id = ${run.project_id}::uuid),
      suite as (insert into ${testSuites} (test_run_id, number, parent_number, name)
        select ${runId}, ${suite}, null, ${`retry (part ${part})`} from added where n > 0 returning number)
      update ${testRuns} set suites_count = suites_count + (select count(*)::int from suite) where id = ${runId}`);
    await tx.execute(recountSql(runId));
    await tx.execute(sql`with part as (
        update ${testRunParts} set status = 'ready', tests_count = ${rows.length},
          passed_count = ${rows.filter((r) => r.st === "passed").length}, failed_count = ${rows.filter((r) => r.st === "failed").length},
          errored_count = ${rows.filter((r) => r.st === "errored").length}, skipped_count = ${rows.filter((r) => r.st === "skipped").length}
        where test_run_id = ${runId} and part_number = ${part})
      delete from ${uploadPayloads} where test_run_id = ${runId} and part_number = ${part}`);
    // Compared again: its verdicts see the retry (a failure that passed on it is flaky now).
    await tx.execute(sql`with verdicts_gone as (delete from ${runVerdicts} where test_run_id = ${runId})
      delete from ${runFixedTests} where test_run_id = ${runId}`);
    await compareRun(tx, { id: runId, baseCommitSha: run.base_commit_sha }, now, { again: true });
    const target = {
      id: runId,
      projectId: run.project_id,
      number: run.number,
      createdAt: new Date(run.created_at),
      commitSha: run.commit_sha,
      branch: run.branch,
    };
    const changes = await notePassesOnRetry(tx, target, [...passedOnRetry]);
    await followHealthChanges(
      tx,
      deps,
      { id: runId, number: run.number, projectId: run.project_id, processedAt: run.processed_at ? new Date(run.processed_at) : now },
      changes,
    );
    // The run's day is rolled up (again) from its cases, these included (docs/retention.md): last, as the row lock it takes is held to the commit.
    await tx.execute(noteRunCasesSql({ projectId: run.project_id, createdAt: new Date(run.created_at) }));
    return true;
  });
}

/** The earlier outcome and attempts of a case, then the retry's attempts: the latest REPORT_LIMITS.maxAttempts. */
const mergedAttempts = sql`(select coalesce(jsonb_agg(e order by i), '[]'::jsonb) from jsonb_array_elements(
    c.attempts || jsonb_build_array(jsonb_build_object('status', c.status, 'duration_ms', c.duration_ms, 'failure_message', c.failure_message))
      || coalesce(x.a, '[]'::jsonb)) with ordinality as t(e, i)
    where i > jsonb_array_length(c.attempts) + 1 + jsonb_array_length(coalesce(x.a, '[]'::jsonb)) - ${REPORT_LIMITS.maxAttempts})`;

/**
 * One chunk: the run's cases of the same tests take the retry's outcome; the others are added in
 * the retry's suite. Returns the tests whose failed or errored case of the run passed on the retry.
 */
function mergeSql(runId: number, { projectId, variant }: { projectId: string; variant: string }, suite: number, rows: CaseRow[]) {
  const same = (c: string) =>
    sql.raw(`${c}.name = x.n and ${c}.classname is not distinct from x.c and (x.c is not null or ${c}.file is not distinct from x.f)`);
  return sql`with x as (
      select * from json_to_recordset(${JSON.stringify(rows)}::json)
        as x(s int, n text, c text, f text, st text, d int, ft text, fm text, fx text, sg text, a jsonb, so text, se text, q bool)),
    turned as (
      select distinct c.test_id from ${testCases} c join x on ${same("c")}
      where c.test_run_id = ${runId} and c.status in ('failed', 'errored') and x.st = 'passed'),
    merged as (
      update ${testCases} c set attempts = ${mergedAttempts}, status = x.st::case_status, duration_ms = x.d, failure_type = x.ft,
        failure_message = x.fm, failure_text = x.fx, failure_signature = x.sg, system_out = x.so, system_err = x.se
      from x where c.test_run_id = ${runId} and ${same("c")}
      returning c.name, c.classname, c.file),
    added as (insert into ${testCases} (test_run_id, project_id, variant, suite_number, name, classname, file, status, duration_ms, failure_type,
      failure_message, failure_text, failure_signature, attempts, system_out, system_err, quarantined)
    select ${runId}, ${projectId}::uuid, ${variant}::text, ${suite}, x.n, x.c, x.f, x.st::case_status, x.d, x.ft, x.fm, x.fx, x.sg,
      coalesce(x.a, '[]'::jsonb), x.so, x.se, false
    from x where not exists (select 1 from merged m where ${same("m")}))
    select test_id from turned`;
}

/** The run's and its suites' counts (a suite's include its nested suites'), result and retry figures, from its cases. */
function recountSql(runId: number) {
  const failedAttemptMs = sql`(select coalesce(sum((e->>'duration_ms')::bigint), 0) from jsonb_array_elements(k.attempts) e
    where e->>'status' in ('failed', 'errored'))`;
  return sql`with recursive own as (
      select suite_number, status from ${testCases} where test_run_id = ${runId}),
    tree (number, ancestor) as (
      select number, number from ${testSuites} where test_run_id = ${runId}
      union all
      select t.number, s.parent_number from tree t join ${testSuites} s on s.test_run_id = ${runId} and s.number = t.ancestor
      where s.parent_number is not null),
    suite_counts as (
      select t.ancestor as number, count(*)::int as tests, count(*) filter (where o.status = 'passed')::int as passed,
        count(*) filter (where o.status = 'failed')::int as failed, count(*) filter (where o.status = 'errored')::int as errored,
        count(*) filter (where o.status = 'skipped')::int as skipped
      from tree t join own o on o.suite_number = t.number group by t.ancestor),
    suites_written as (
      update ${testSuites} s set tests_count = sc.tests, passed_count = sc.passed, failed_count = sc.failed,
        errored_count = sc.errored, skipped_count = sc.skipped
      from suite_counts sc where s.test_run_id = ${runId} and s.number = sc.number),
    totals as (
      select count(*)::int as tests, count(*) filter (where status = 'passed')::int as passed,
        count(*) filter (where status = 'failed')::int as failed, count(*) filter (where status = 'errored')::int as errored,
        count(*) filter (where status = 'skipped')::int as skipped,
        count(*) filter (where status in ('failed', 'errored') and quarantined)::int as quarantined_failures,
        count(*) filter (where status = 'passed' and (attempts @> '[{"status":"failed"}]' or attempts @> '[{"status":"errored"}]'))::int as on_retry,
        coalesce(sum(${failedAttemptMs}), 0)::bigint as attempts_ms
      from ${testCases} k where k.test_run_id = ${runId})
    update ${testRuns} r set tests_count = t.tests, passed_count = t.passed, failed_count = t.failed, errored_count = t.errored,
      skipped_count = t.skipped, quarantined_failures_count = t.quarantined_failures, passed_on_retry_count = t.on_retry,
      failed_attempts_duration_ms = t.attempts_ms,
      result = (case when t.errored > 0 then 'tests_errored' when t.failed > 0 then 'tests_failed' else 'tests_passed' end)::run_result
    from totals t where r.id = ${runId}`;
}
