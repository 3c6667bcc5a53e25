/**
 * A processed run compared with its base (docs/verdicts.md): the base chosen, one verdict per
 * failing test, the tests it fixed. Computed by run processing in the run's transaction, after its
 * cases are stored and before its tests are advanced (a test's health is the one it had when the
 * run arrived), in one set-based statement over the run's cases and the base's, joined by test id:
 * no per-test round trip. Reads never scan history: they read what this stored.
 */
import { type SQL, sql } from "drizzle-orm";
import { projects, runComparisons, runFixedTests, runVerdicts, testCases, testRuns, tests } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import type { Database } from "../../db/types";
import { defaultBranchSql } from "../tests/default-branch";
import { type RunCost, flakyFailuresCountSql, runCostOf, runCostSql } from "./flakiness-cost";

/**
 * A mass failure (every failure's verdict `infrastructure`): at least INFRA_MIN_FAILING failing
 * tests and at least INFRA_SHARE of the run's cases failing while the median share of the project's
 * last INFRA_HISTORY_RUNS processed default-branch runs (among its INFRA_HISTORY_SCAN runs before
 * this one) is below INFRA_NORMAL_BELOW; or one failure group (signature) covering at least
 * INFRA_MIN_FAILING failing tests and INFRA_GROUP_SHARE of them; or, on the default branch only, a
 * burst: at least burstMin failing tests, burstShare of the cases and burstOverUsual times the usual
 * share (at least 1 %). Reasons: docs/verdicts.md.
 */
const INFRA_THRESHOLDS = {
  minFailing: 20,
  share: 0.5,
  normalBelow: 0.1,
  groupShare: 0.8,
  historyRuns: 20,
  historyScan: 200,
  burstMin: 10,
  burstShare: 0.08,
  burstOverUsual: 8,
} as const;

/** A fallback base is looked for among the project's runs numbered at most this far before the run. */
const FALLBACK_SCAN_RUNS = 1_000;
/** A run compared with a fallback is compared again when its named base commit's run is processed within this long of its arrival. */
const RECOMPARE_WITHIN_MS = 7 * 86_400_000;
/** At most this many runs are compared again per processed default-branch run (the newest first). */
const RECOMPARE_MAX_RUNS = 10;

const failingStatus = (status: SQL) => sql`${status} in ('failed', 'errored')`;

/**
 * A default-branch run that was itself a mass failure is never a base: its failures are the
 * environment's and say nothing of which tests fail on the default branch (compared with it, a
 * regression of the next commit is `failing_on_base`, and every test its error failed is `fixed`).
 */
const notMassFailure = (alias: string) =>
  sql`not exists (select 1 from ${runComparisons} x where x.test_run_id = ${sql.raw(alias)}.id and x.infrastructure_reason is not null)`;

/**
 * The base, always a run of the same variant (docs/tests.md, "Variants"): the named commit's latest
 * default-branch run that is not a mass failure (or, compared
 * again, the run that was awaited), else a fallback: the latest such run numbered before this run,
 * or before the named commit's first run when the commit has runs but all are mass failures.
 */
function baseSql(runId: number, forcedBaseId: number | null, namedSha: string | null): SQL {
  const onDefault = (alias: string) => defaultBranchSql(sql.raw(`${alias}.branch`), sql`p.default_branch`);
  const namedRuns =
    forcedBaseId !== null
      ? sql`select b.id, b.number, b.commit_sha, b.branch, b.created_at, true as usable from ${testRuns} b where b.id = ${forcedBaseId}`
      : namedSha === null
        ? sql`select b.id, b.number, b.commit_sha, b.branch, b.created_at, true as usable from ${testRuns} b where false`
        : // The prefix as a parameter (hexadecimal: no LIKE wildcards), so that test_runs_project_commit_idx serves it.
          sql`select b.id, b.number, b.commit_sha, b.branch, b.created_at, ${notMassFailure("b")} as usable from ${testRuns} b, me, p
          where not me.is_default and b.project_id = me.project_id and b.variant = me.variant and b.id <> ${runId}
            and lower(b.commit_sha) like ${`${namedSha}%`} and b.status = 'processed' and ${onDefault("b")}`;
  return sql`
    named_runs as (${namedRuns}),
    named as (select id, number, commit_sha, branch from named_runs where usable order by created_at desc, id desc limit 1),
    fallback as (
      select b.id, b.number, b.commit_sha, b.branch from ${testRuns} b, me, p
      where b.project_id = me.project_id and b.variant = me.variant and b.number < coalesce((select min(number) from named_runs), me.number)
        and b.number >= me.number - ${FALLBACK_SCAN_RUNS} and b.status = 'processed' and ${onDefault("b")} and ${notMassFailure("b")}
      order by b.number desc limit 1),
    base as (
      select id, number, commit_sha, branch, 'base_commit'::base_choice as how from named
      union all
      select f.id, f.number, f.commit_sha, f.branch,
        (case when me.is_default then 'previous_default' else 'latest_default_before' end)::base_choice
      from fallback f, me where not exists (select 1 from named))`;
}

/** Whether the run is a mass failure, and why in words (INFRA_THRESHOLDS). */
function infrastructureSql(): SQL {
  const t = INFRA_THRESHOLDS;
  return sql`
    recent as (
      select (h.failed_count + h.errored_count)::float8 / h.tests_count as share
      from ${testRuns} h, me, p
      where h.project_id = me.project_id and h.variant = me.variant and h.number < me.number and h.number >= me.number - ${t.historyScan}
        and h.status = 'processed' and h.tests_count > 0 and ${defaultBranchSql(sql`h.branch`, sql`p.default_branch`)}
      order by h.number desc limit ${t.historyRuns}),
    normal as (select percentile_cont(0.5) within group (order by share) as median from recent),
    stats as (select (select count(*) from mine)::int as cases, (select count(*) from failures where failing)::int as failing),
    top_group as (
      select failure_signature as s, count(*)::int as n, max(failure_message) as message from failures
      where failing and failure_signature is not null group by failure_signature order by n desc limit 1),
    infra as (
      select case
        when st.failing >= ${t.minFailing}::int and st.failing >= ${t.share}::float8 * st.cases and coalesce(nm.median, 0) < ${t.normalBelow}::float8
          then format('mass failure: %s of the run''s %s tests failed (usually %s%%)', st.failing, st.cases, round(coalesce(nm.median, 0) * 100))
        when g.n >= ${t.minFailing}::int and g.n >= ${t.groupShare}::float8 * st.failing
          then format('one cause across %s of the run''s %s failing tests: %s', g.n, st.failing, left(coalesce(g.message, ''), 200))
        when me.is_default and st.failing >= ${t.burstMin}::int and st.failing >= ${t.burstShare}::float8 * st.cases
            and st.failing >= ${t.burstOverUsual}::float8 * greatest(coalesce(nm.median, 0), 0.01) * st.cases
          then format('burst on the default branch: %s of the run''s %s tests failed at once (usually %s%%)', st.failing, st.cases, round(coalesce(nm.median, 0) * 100))
        end as reason
      from stats st cross join normal nm cross join me left join top_group g on true)`;
}

/** Each failure's verdict and reason, the first that applies in VERDICTS' order. */
const verdictsSql = (): SQL => sql`
  v as (
    select f.id, f.test_id,
      (case
        when f.quarantined then 'quarantined'
        when i.reason is not null then 'infrastructure'
        when bc.failed or t.health = 'broken' then 'failing_on_base'
        when t.health = 'flaky' or not f.failing then 'flaky'
        else 'new' end)::verdict as verdict,
      case
        when f.quarantined then 'quarantined when the run arrived' || coalesce(': ' || t.quarantine_reason, '')
        when i.reason is not null then i.reason
        when bc.failed then format('also failed on %s in run #%s%s', coalesce(nullif(b.branch, ''), 'the default branch'), b.number, coalesce(' (' || left(b.commit_sha, 7) || ')', ''))
        when t.health = 'broken' then format('broken on the default branch since %s', coalesce(to_char(t.health_changed_at at time zone 'UTC', 'FMDD Mon'), 'its first runs'))
        when t.health = 'flaky' then format('flaky since %s: %s of its last %s runs failed',
          coalesce(to_char(t.health_changed_at at time zone 'UTC', 'FMDD Mon'), 'its first runs'),
          length(t.window_outcomes) - length(replace(replace(t.window_outcomes, 'f', ''), 'e', '')), length(t.window_outcomes))
        when not f.failing then 'failed, then passed on retry in this run'
        when b.id is null then 'no base run to compare with'
        when bc.test_id is null then format('not in the base, run #%s', b.number)
        else format('passed on %s in run #%s%s', coalesce(nullif(b.branch, ''), 'the default branch'), b.number, coalesce(' (' || left(b.commit_sha, 7) || ')', ''))
      end as reason
    from failures f cross join infra i left join base b on true
      left join base_cases bc on bc.test_id = f.test_id
      left join ${tests} t on t.id = f.test_id)`;

/**
 * The statement that compares a run and stores the comparison (run_comparisons, run_verdicts,
 * run_fixed_tests, test_runs.verdict_counts). Returns the runs awaiting this one as their named
 * base (RECOMPARE_*) when it is a default-branch run with a commit. `forcedBaseId`: compared again
 * with the run that was awaited (processed in this transaction, so not yet `processed`). The first
 * comparison also keeps the run's cost of flakiness (flakiness-cost.ts) and returns it: the same
 * cases, the tests' health as the run found it, no statement of its own.
 */
function compareSql(runId: number, now: Date, forcedBaseId: number | null, named: string | null, withCost = forcedBaseId === null): SQL {
  const at = sql`${now.toISOString()}::timestamptz`;
  const counted = (verdict: string) => sql`count(*) filter (where verdict = ${verdict})::int`;
  return sql`
    with r as (select * from ${testRuns} where id = ${runId}),
    p as (select pr.default_branch from ${projects} pr, r where pr.id = r.project_id),
    me as (
      select r.project_id, r.variant, r.number, r.created_at, lower(r.commit_sha) as commit, lower(r.base_commit_sha) as named,
        ${defaultBranchSql(sql`r.branch`, sql`p.default_branch`)} as is_default
      from r, p),
    ${baseSql(runId, forcedBaseId, named)},
    mine as (
      select c.id, c.test_id, c.status, c.failure_signature, c.failure_message, c.quarantined,
        ${failingStatus(sql`c.status`)} as failing,
        (c.status = 'passed' and (c.attempts @> '[{"status":"failed"}]'::jsonb or c.attempts @> '[{"status":"errored"}]'::jsonb)) as retried
      from ${testCases} c where c.test_run_id = ${runId}),
    failures as (
      select distinct on (test_id) * from mine where failing or retried order by test_id, failing desc, id desc),
    -- Only what the verdicts and the fixed tests ask of the base: its failing cases, and this run's failures' tests.
    base_cases as (
      select c.test_id, bool_or(${failingStatus(sql`c.status`)}) as failed,
        max(c.id) filter (where ${failingStatus(sql`c.status`)}) as failed_case
      from ${testCases} c join base b on c.test_run_id = b.id
      where ${failingStatus(sql`c.status`)} or c.test_id in (select test_id from failures)
      group by c.test_id),
    ${infrastructureSql()},
    ${verdictsSql()},
    -- Only the tests that failed on the base can be fixed: the run's other tests (nearly all of a large run's) are not aggregated.
    mine_tests as (
      select test_id, bool_or(failing or retried) as failed, max(id) filter (where status = 'passed') as passed_case
      from mine where test_id in (select test_id from base_cases where failed) group by test_id),
    -- Per test, then one join: an anti-join on the failures would be a nested loop (1,000 × 1,000 for a run with 1,000 failures).
    fixed as (
      select mt.passed_case as id, mt.test_id, bc.failed_case
      from mine_tests mt join base_cases bc on bc.test_id = mt.test_id and bc.failed
      where not mt.failed and mt.passed_case is not null),
    verdicts_written as (
      insert into ${runVerdicts} (test_run_id, test_case_id, test_id, verdict, reason) select ${runId}, id, test_id, verdict, reason from v),
    fixed_written as (
      insert into ${runFixedTests} (test_run_id, test_case_id, test_id, base_test_case_id) select ${runId}, id, test_id, failed_case from fixed),
    counts as (
      select ${counted("quarantined")} as quarantined, ${counted("infrastructure")} as infrastructure,
        ${counted("failing_on_base")} as failing_on_base, ${counted("flaky")} as flaky, ${counted("new")} as new from v),
    comparison_written as (
      insert into ${runComparisons} (test_run_id, project_id, base_run_id, base_choice, awaited_base_commit, infrastructure_reason,
        quarantined_count, infrastructure_count, failing_on_base_count, flaky_count, new_count, fixed_count, compared_at)
      select ${runId}, me.project_id, b.id, coalesce(b.how, 'none'),
        case when me.named is not null and not me.is_default and b.how is distinct from 'base_commit' then me.named end,
        i.reason, k.quarantined, k.infrastructure, k.failing_on_base, k.flaky, k.new, (select count(*) from fixed)::int, ${at}
      from me cross join counts k cross join infra i left join base b on true
      on conflict (test_run_id) do update set base_run_id = excluded.base_run_id, base_choice = excluded.base_choice,
        awaited_base_commit = excluded.awaited_base_commit, infrastructure_reason = excluded.infrastructure_reason,
        quarantined_count = excluded.quarantined_count, infrastructure_count = excluded.infrastructure_count,
        failing_on_base_count = excluded.failing_on_base_count, flaky_count = excluded.flaky_count, new_count = excluded.new_count,
        fixed_count = excluded.fixed_count, compared_at = excluded.compared_at),
    run_written as (
      update ${testRuns} set verdict_counts = (select to_jsonb(k) from counts k)
        ${withCost ? sql`, flaky_failures_count = ${flakyFailuresCountSql()}` : sql``}
      where id = ${runId}),
    awaiting as (
      select w.test_run_id from ${runComparisons} w join ${testRuns} a on a.id = w.test_run_id, me
      where ${forcedBaseId === null} and me.is_default and me.commit is not null and w.project_id = me.project_id and a.variant = me.variant
        and (select reason from infra) is null
        and w.awaited_base_commit is not null and left(me.commit, length(w.awaited_base_commit)) = w.awaited_base_commit
        and a.created_at > ${at} - ${`${RECOMPARE_WITHIN_MS} milliseconds`}::interval and a.id <> ${runId}
      order by a.created_at desc limit ${RECOMPARE_MAX_RUNS})
    ${withCost ? sql`, ${runCostSql()}` : sql``}
    select coalesce((select json_agg(test_run_id) from awaiting), '[]'::json) as awaiting,
      ${withCost ? sql`(select row_to_json(run_cost) from run_cost)` : sql`null::json`} as cost`;
}

/**
 * Compares a run being processed with its base and stores the comparison; then compares again the
 * runs that awaited it as their named base (at most RECOMPARE_MAX_RUNS, arrived within
 * RECOMPARE_WITHIN_MS): one statement, plus two per run compared again. Returns the run's cost of
 * flakiness, kept by the same statement.
 */
export async function compareRun(
  tx: Database,
  run: { id: number; baseCommitSha: string | null },
  now: Date,
  options: { again?: boolean } = {},
): Promise<RunCost | null> {
  const named = run.baseCommitSha?.toLowerCase() ?? null;
  // Compared again (a retry part merged into it): its cost was kept when it was stored, and is not counted twice.
  const [row] = await rowsOf<{ awaiting: unknown; cost: unknown }>(tx.execute(compareSql(run.id, now, null, named, !options.again)));
  const awaiting = (typeof row?.awaiting === "string" ? JSON.parse(row.awaiting) : (row?.awaiting ?? [])) as number[];
  for (const awaitingId of awaiting) {
    await tx.execute(sql`with verdicts_gone as (delete from ${runVerdicts} where test_run_id = ${awaitingId})
      delete from ${runFixedTests} where test_run_id = ${awaitingId}`);
    await tx.execute(compareSql(awaitingId, now, run.id, null));
  }
  return runCostOf(row?.cost);
}
