/**
 * Daily rollups of a project's runs (project_daily_rollups, docs/project-pages.md): kept in the
 * transaction that processes a run, so the project overview reads at most 60 small rows whatever
 * the project's history.
 *
 * - A run counts on the UTC day it arrived (`test_runs.created_at`), not the organization's time
 *   zone: a day's row never has to be rebuilt when a time zone changes, and every chart of the
 *   service speaks UTC.
 * - Durations go into a histogram of log-scale buckets, eight per doubling (bounds rounded to whole
 *   milliseconds): a percentile read from merged histograms is the middle of the bucket that holds
 *   the exact nearest-rank percentile, within 1 ms plus 4.5 % of it (exact up to 13 ms, where
 *   buckets are one millisecond wide; the last bucket, from 22.8 days, is open-ended). The bucket of a duration is the number of bounds at or below it, computed
 *   the same way by JavaScript here and by Postgres' `width_bucket` in the migration's backfill.
 * - `flaky_tests_count` is the project's number of flaky tests after the day's latest change
 *   (a processed run, or the flakiness check flagging tests), on the UTC day the change was made:
 *   a run that arrived before midnight and was processed after it counts on its arrival day, and
 *   the flaky count it leaves goes to its processing day, so a late run never rewrites the count
 *   an earlier day ended with (a new arrival-day row starts with the count of now).
 * - The cost of flakiness (`retry_ms`, `flaky_failures_ms`, `quarantined_failures_ms`, `rerun_ms`,
 *   `reruns_count`: docs/flakiness-cost.md) counts on the run's arrival day, like its other figures.
 */
import { type SQL, sql } from "drizzle-orm";
import { projectDailyRollups, projects } from "../../db/schema";
import type { Database } from "../../db/types";
import type { RunResult } from "../../lib/vocabulary";

/** Lower bounds of the duration buckets after the first ([0, 1) ms): round(2^(i/8)) for i = 0…247, without repeats. */
export const DURATION_BUCKET_BOUNDS: readonly number[] = (() => {
  const bounds: number[] = [];
  for (let i = 0; i < 248; i++) {
    const bound = Math.round(2 ** (i / 8));
    if (bound !== bounds[bounds.length - 1]) bounds.push(bound);
  }
  return bounds;
})();

/** The bucket of a duration: how many bounds are at or below it (0 for 0 ms). */
export function durationBucket(ms: number): number {
  let low = 0;
  let high = DURATION_BUCKET_BOUNDS.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (DURATION_BUCKET_BOUNDS[mid]! <= ms) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The value a bucket stands for: its only value when one millisecond wide, else the geometric middle of its range. */
export function bucketValue(bucket: number): number {
  if (bucket <= 0) return 0;
  const low = DURATION_BUCKET_BOUNDS[bucket - 1]!;
  const next = DURATION_BUCKET_BOUNDS[bucket];
  if (next === undefined || next - low <= 1) return low;
  return Math.round(Math.sqrt(low * (next - 1)));
}

export type DurationHistogram = Record<string, number>;

export function mergeHistograms(histograms: readonly DurationHistogram[]): DurationHistogram {
  const merged: DurationHistogram = {};
  for (const histogram of histograms)
    for (const [bucket, count] of Object.entries(histogram)) merged[bucket] = (merged[bucket] ?? 0) + count;
  return merged;
}

/** The nearest-rank percentile (`fraction` in (0, 1]) of the durations a histogram counts, as its bucket's value; null when it is empty. */
export function histogramPercentile(histogram: DurationHistogram, fraction: number): number | null {
  const buckets = Object.entries(histogram)
    .map(([bucket, count]) => [Number(bucket), count] as const)
    .filter(([, count]) => count > 0)
    .sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((sum, [, count]) => sum + count, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(fraction * total));
  let seen = 0;
  for (const [bucket, count] of buckets) {
    seen += count;
    if (seen >= rank) return bucketValue(bucket);
  }
  return bucketValue(buckets[buckets.length - 1]![0]);
}

/** `2026-11-24` for the UTC day of an instant. */
export const utcDay = (at: Date) => at.toISOString().slice(0, 10);

const flakyNow = (projectId: string) =>
  sql`(select ${projects.flakyTestsCount} from ${projects} where ${projects.id} = ${projectId}::uuid)`;

/** What a run adds to its day's cost of flakiness, in ms of test time (src/services/runs/flakiness-cost.ts). */
export type RollupCost = { retryMs: number; flakyFailuresMs: number; quarantinedFailuresMs: number; rerunMs: number; reruns: number };

export type RollupRun = {
  projectId: string;
  createdAt: Date;
  processedAt: Date | null;
  result: RunResult | null;
  durationMs: number | null;
  testsCount: number;
  skippedCount: number;
  /** What the run cost in flakiness (flakiness-cost.ts); none when absent. */
  cost?: RollupCost;
};

/**
 * Adds a processed run to its arrival day's row and the project's flaky-test count as the run
 * leaves it (`flakyTestsCount`) to its processing day's row (one statement; one row when both
 * days are the same): run processing folds it into its last write, where the count is what that
 * write's update of the project's row returns.
 */
export function dailyRollupSql(run: RollupRun, flakyTestsCount: SQL): SQL {
  const passed = run.result === "tests_passed" ? 1 : 0;
  const failed = run.result === "tests_failed" ? 1 : 0;
  const errored = run.result === "tests_errored" ? 1 : 0;
  const timed = run.durationMs === null ? 0 : 1;
  const bucket = run.durationMs === null ? null : String(durationBucket(run.durationMs));
  const histogram = bucket === null ? {} : { [bucket]: 1 };
  const r = projectDailyRollups;
  const arrivalDay = utcDay(run.createdAt);
  const changeDay = utcDay(run.processedAt ?? run.createdAt);
  const cost = run.cost ?? { retryMs: 0, flakyFailuresMs: 0, quarantinedFailuresMs: 0, rerunMs: 0, reruns: 0 };
  // The processing day's row (when it is another day): no run of its own, only the flaky count.
  const changeRow =
    changeDay === arrivalDay
      ? sql``
      : sql`, (${run.projectId}::uuid, ${changeDay}::date, 0, 0, 0, 0, 0, 0, '{}'::jsonb, 0, 0, ${flakyTestsCount}, 0, 0, 0, 0, 0)`;
  return sql`
    insert into ${r} as r (project_id, day, runs_count, passed_runs_count, failed_runs_count, errored_runs_count,
      durations_count, duration_sum_ms, duration_histogram, cases_count, skipped_cases_count, flaky_tests_count,
      retry_ms, flaky_failures_ms, quarantined_failures_ms, rerun_ms, reruns_count)
    values (${run.projectId}::uuid, ${arrivalDay}::date, 1, ${passed}, ${failed}, ${errored},
      ${timed}, ${run.durationMs ?? 0}, ${JSON.stringify(histogram)}::jsonb, ${run.testsCount}, ${run.skippedCount}, ${flakyTestsCount},
      ${cost.retryMs}::bigint, ${cost.flakyFailuresMs}::bigint, ${cost.quarantinedFailuresMs}::bigint, ${cost.rerunMs}::bigint, ${cost.reruns}::int)${changeRow}
    on conflict (project_id, day) do update set
      retry_ms = r.retry_ms + excluded.retry_ms,
      flaky_failures_ms = r.flaky_failures_ms + excluded.flaky_failures_ms,
      quarantined_failures_ms = r.quarantined_failures_ms + excluded.quarantined_failures_ms,
      rerun_ms = r.rerun_ms + excluded.rerun_ms,
      reruns_count = r.reruns_count + excluded.reruns_count,
      runs_count = r.runs_count + excluded.runs_count,
      passed_runs_count = r.passed_runs_count + excluded.passed_runs_count,
      failed_runs_count = r.failed_runs_count + excluded.failed_runs_count,
      errored_runs_count = r.errored_runs_count + excluded.errored_runs_count,
      durations_count = r.durations_count + excluded.durations_count,
      duration_sum_ms = r.duration_sum_ms + excluded.duration_sum_ms,
      duration_histogram = ${
        bucket === null
          ? sql`r.duration_histogram`
          : sql`case when excluded.durations_count = 0 then r.duration_histogram
              else jsonb_set(r.duration_histogram, array[${bucket}::text], to_jsonb(coalesce((r.duration_histogram ->> ${bucket}::text)::int, 0) + 1)) end`
      },
      cases_count = r.cases_count + excluded.cases_count,
      skipped_cases_count = r.skipped_cases_count + excluded.skipped_cases_count,
      flaky_tests_count = case when excluded.day = ${changeDay}::date then excluded.flaky_tests_count else r.flaky_tests_count end`;
}

/** Records the project's flaky-test count on a run's day after tests were flagged flaky outside the run's processing. */
export async function noteFlakyTestsCount(tx: Database, projectId: string, at: Date): Promise<void> {
  await tx.execute(sql`
    insert into ${projectDailyRollups} as r (project_id, day, flaky_tests_count)
    values (${projectId}::uuid, ${utcDay(at)}::date, ${flakyNow(projectId)})
    on conflict (project_id, day) do update set flaky_tests_count = excluded.flaky_tests_count`);
}
