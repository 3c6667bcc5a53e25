/**
 * The cost of flakiness, kept at processing time (docs/flakiness-cost.md): what a run cost in
 * test time, per component, added to its arrival day's rollup (project_daily_rollups) and, per
 * test, to test_daily_costs, so that reading a window never scans runs or cases.
 *
 * Computed inside the run's comparison statement (src/services/runs/run-comparison.ts): it already
 * reads the run's cases and sees the tests' health as the run found it, so the cost adds no
 * statement and no round trip to processing. Its work is bounded by the run's failing and retried
 * cases, plus one index lookup for the previous run of the same commit.
 */
import { type SQL, sql } from "drizzle-orm";
import { testCases, testDailyCosts, testRuns, tests } from "../../db/schema";
import type { RollupCost } from "../shared/daily-rollups";

/** What a run costs, in ms of test time per component; `rerun`: it re-runs a commit whose previous run failed only by flaky or quarantined tests. */
export type RunCost = { retryMs: number; flakyFailuresMs: number; quarantinedFailuresMs: number; rerun: boolean };

/** A failing final status. */
const failingStatuses = sql`('failed', 'errored')`;

/**
 * The cost's common table expressions, for the comparison statement of a run's first comparison:
 * it defines `r` (the run's row) and `mine` (the run's cases: id, test_id, failing, retried,
 * quarantined), and the tests' rows are still as the run found them. Writes the run's tests'
 * costs for its arrival day; the last expression, `run_cost`, is the run's one row (RunCost).
 */
export function runCostSql(): SQL {
  // The time a case spent on flakiness: a failing case's own duration, and every failed or errored earlier attempt's.
  const attemptsMs = sql`coalesce((select sum(round((a ->> 'duration_ms')::numeric)) from jsonb_array_elements(c.attempts) a
    where a ->> 'status' in ${failingStatuses}), 0)`;
  const sumOf = (component: string) => sql`coalesce(sum(ms) filter (where component = ${component}), 0)::bigint`;
  return sql`
    cost_candidates as (
      select m.id, m.test_id, m.failing,
        case when m.retried then 'retry' when m.quarantined then 'quarantined' else 'flaky' end as component
      from mine m left join ${tests} t on t.id = m.test_id
      where (m.retried or m.failing) and (m.retried or m.quarantined or t.health = 'flaky')),
    -- Only the cases that cost something are read again (their duration and attempts): a run's genuine failures are not.
    cost_cases as (
      select k.test_id, k.component, (case when k.failing then coalesce(c.duration_ms, 0) else 0 end) + ${attemptsMs} as ms
      from cost_candidates k join ${testCases} c on c.id = k.id),
    cost_tests as (
      select test_id, ${sumOf("retry")} as retry_ms, ${sumOf("flaky")} as flaky_ms, ${sumOf("quarantined")} as quarantined_ms
      from cost_cases group by test_id),
    cost_written as (
      insert into ${testDailyCosts} as d (test_id, day, project_id, retry_ms, flaky_failures_ms, quarantined_failures_ms)
      select k.test_id, (r.created_at at time zone 'UTC')::date, r.project_id, k.retry_ms, k.flaky_ms, k.quarantined_ms
      from cost_tests k, r where k.retry_ms + k.flaky_ms + k.quarantined_ms > 0
      on conflict (test_id, day) do update set retry_ms = d.retry_ms + excluded.retry_ms,
        flaky_failures_ms = d.flaky_failures_ms + excluded.flaky_failures_ms,
        quarantined_failures_ms = d.quarantined_failures_ms + excluded.quarantined_failures_ms),
    ${previousRunSql()},
    run_cost as (
      select (select coalesce(sum(retry_ms), 0) from cost_tests)::bigint as retry_ms,
        (select coalesce(sum(flaky_ms), 0) from cost_tests)::bigint as flaky_failures_ms,
        (select coalesce(sum(quarantined_ms), 0) from cost_tests)::bigint as quarantined_failures_ms,
        exists (select 1 from previous_run p where p.failing > 0 and p.failing = p.flaky_failing) as rerun)`;
}

/**
 * The run's failing cases of tests flaky when it arrived and not quarantined (test_runs.flaky_failures_count),
 * for the comparison statement's update of the run: with its quarantined failures, whether it failed only by
 * flakiness, which makes the commit's next run a re-run.
 */
export const flakyFailuresCountSql = (): SQL => sql`
  (select count(*)::int from mine m join ${tests} t on t.id = m.test_id where m.failing and not m.quarantined and t.health = 'flaky')`;

/**
 * The previous build of the same commit that this run may re-run, summed over its runs (its shards):
 * the build of the latest processed run numbered before this one with the same branch and tags (a
 * variant, `unit` beside `e2e`, is not a re-run) and another build id (runs of one build are its
 * shards, not re-runs of each other; a run without a build id is a build of its own).
 * test_runs_project_commit_idx finds the commit's runs.
 */
function previousRunSql(): SQL {
  const sameCommit = sql`p.project_id = r.project_id and lower(p.commit_sha) = lower(r.commit_sha) and p.number < r.number
    and p.status = 'processed' and p.branch is not distinct from r.branch and p.tags = r.tags`;
  return sql`
    previous_build as (
      select p.number, p.build_id from ${testRuns} p, r
      where r.commit_sha is not null and ${sameCommit} and (p.build_id is null or r.build_id is null or p.build_id <> r.build_id)
      order by p.number desc limit 1),
    previous_run as (
      select sum(p.failed_count + p.errored_count) as failing, sum(p.quarantined_failures_count + p.flaky_failures_count) as flaky_failing
      from ${testRuns} p, r, previous_build b
      where ${sameCommit} and (p.number = b.number or p.build_id = b.build_id))`;
}

type RunCostRow = {
  retry_ms: number | string;
  flaky_failures_ms: number | string;
  quarantined_failures_ms: number | string;
  rerun: boolean;
};

/** The `run_cost` row as the statement returns it (row_to_json: bigints may come back as text from some drivers). */
export function runCostOf(value: unknown): RunCost | null {
  if (value === null || value === undefined) return null;
  const row = (typeof value === "string" ? JSON.parse(value) : value) as RunCostRow;
  return {
    retryMs: Number(row.retry_ms),
    flakyFailuresMs: Number(row.flaky_failures_ms),
    quarantinedFailuresMs: Number(row.quarantined_failures_ms),
    rerun: row.rerun,
  };
}

/** What the run adds to its day's rollup: its components, and its own duration when it is a re-run (none: 0 ms, still one re-run). */
export function rollupCost(cost: RunCost | null, durationMs: number | null): RollupCost {
  if (!cost) return { retryMs: 0, flakyFailuresMs: 0, quarantinedFailuresMs: 0, rerunMs: 0, reruns: 0 };
  return {
    retryMs: cost.retryMs,
    flakyFailuresMs: cost.flakyFailuresMs,
    quarantinedFailuresMs: cost.quarantinedFailuresMs,
    rerunMs: cost.rerun ? (durationMs ?? 0) : 0,
    reruns: cost.rerun ? 1 : 0,
  };
}
