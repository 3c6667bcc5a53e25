/**
 * Timings (docs/splitting.md): how long each test file (or class) takes, from the default
 * branch's recent processed runs of one variant, for splitting a suite across shards by measured
 * time. Per key and run, the sum of its cases' durations, or its suite's own time where the report
 * gives one and the suite holds only that key (a suite's time includes its setup); per key, the
 * median over the runs that had it. Plain functions over the database, scoped by project.
 */
import { sql } from "drizzle-orm";
import { projects, testCases, testRuns, testSuites } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import type { Database } from "../../db/types";
import { type SplitBy, median } from "../../lib/split";
import { defaultBranchSql } from "../tests/default-branch";

/** The recent runs a key's median is taken over: enough to ride out one slow run, few enough to follow a change within a day. */
export const TIMING_RUNS = 5;
/** Keys answered at most (by key): bounded work per request; far above any suite's files. */
export const MAX_TIMING_KEYS = 50_000;

export type TimingsInput = { projectId: string; by: SplitBy; variant: string };
type Timing = { key: string; expected_ms: number; samples: number };
export type Timings = { by: SplitBy; variant: string; runs_count: number; default_ms: number; data: Timing[] };

/** The recent default-branch runs the timings come from, newest first: their ids name the timings (the ETag). */
export async function timingRuns(db: Database, input: TimingsInput): Promise<number[]> {
  const rows = await rowsOf<{ id: number | string }>(
    db.execute(sql`select r.id from ${testRuns} r join ${projects} p on p.id = r.project_id
      where r.project_id = ${input.projectId} and r.variant = ${input.variant} and r.status = 'processed'
        and ${defaultBranchSql(sql`r.branch`, sql`p.default_branch`)}
      order by r.id desc limit ${TIMING_RUNS}`),
  );
  return rows.map((row) => Number(row.id));
}

/** The timings' ETag: the project, the key kind, the variant and the runs they come from. */
export function timingsTag(input: TimingsInput, runIds: number[]): string {
  const variant = input.variant === "" ? "" : `-${encodeURIComponent(input.variant)}`;
  return `"t-${input.projectId}-${input.by}-${runIds.map((id) => id.toString(36)).join(".") || "none"}${variant}"`;
}

/**
 * Each key's expected duration over `runIds` (timingRuns), and the project's median for keys never
 * seen (the median of the keys' own; 0 without history). Medians are taken by Postgres, so one
 * row per key comes back, not one per key and run.
 */
export async function readTimings(db: Database, input: TimingsInput, runIds: number[]): Promise<Timings> {
  const data = await keyMedians(db, input.by, runIds);
  return {
    by: input.by,
    variant: input.variant,
    runs_count: runIds.length,
    default_ms: median(data.map((t) => t.expected_ms)),
    data,
  };
}

/** Per key, the median of its durations in the runs that had it, and their count; by key, at most MAX_TIMING_KEYS. */
async function keyMedians(db: Database, by: SplitBy, runIds: number[]): Promise<Timing[]> {
  if (runIds.length === 0) return [];
  const key = by === "file" ? sql`c.file` : sql`c.classname`;
  const ids = sql.join(
    runIds.map((id) => sql`${id}`),
    sql`, `,
  );
  const rows = await rowsOf<{ key: string; expected_ms: number | string; samples: number | string }>(
    db.execute(sql`with per_suite as (
        select c.test_run_id, c.suite_number, ${key} as key, sum(coalesce(c.duration_ms, 0)) as ms
        from ${testCases} c where c.test_run_id in (${ids}) and ${key} is not null
        group by 1, 2, 3
      ), own_time as (
        -- A suite that holds one key only: its own time, which includes its setup, when it says one.
        select s.test_run_id, s.number, s.duration_ms from ${testSuites} s
        join per_suite ps on ps.test_run_id = s.test_run_id and ps.suite_number = s.number
        where s.test_run_id in (${ids}) and s.duration_ms is not null
        group by s.test_run_id, s.number, s.duration_ms having count(*) = 1
      ), per_run as (
        select ps.key, ps.test_run_id, sum(greatest(ps.ms, coalesce(o.duration_ms, 0))) as ms
        from per_suite ps left join own_time o on o.test_run_id = ps.test_run_id and o.number = ps.suite_number
        group by ps.key, ps.test_run_id
      )
      select key, round(percentile_cont(0.5) within group (order by ms)) as expected_ms, count(*) as samples
      from per_run group by key order by key collate "C" limit ${MAX_TIMING_KEYS}`),
  );
  return rows.map((row) => ({ key: row.key, expected_ms: Number(row.expected_ms), samples: Number(row.samples) }));
}
