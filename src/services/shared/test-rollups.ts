/**
 * Per-test daily rollups (docs/retention.md): what a test's page shows for the days beyond the
 * retention of its cases, kept in two steps so that run processing's part stays cheap:
 *
 * - Run processing adds the run's figures to its tests' rows of the run's day in test_rollup_days,
 *   in the run's transaction, as one more expression of the run's last statement (no statement of
 *   its own): integer sums and the buckets of the durations appended to an array.
 * - The retention sweep packs a day's rows into test_rollups once the day is over (packTestRollupDays):
 *   one row per test and period of PERIOD_DAYS UTC days, `days` a SLOT_BYTES slot per day
 *   (drizzle/0044_retention.sql has the layout and the functions that add to it). A row per test
 *   per day would cost its tuple header, its key and an index entry every day; the packed row pays
 *   them once a period, so a test costs about one slot a day (bench/retention-bench.ts measures it).
 *   A run processed after its day was packed lands in test_rollup_days again and is packed into
 *   the same slot by the next sweep (slots add up).
 *
 * What a day counts:
 * - A run counts on the UTC day it arrived (`test_runs.created_at`), as project_daily_rollups.
 * - Executions: the run's cases of the test that ran (skipped ones are not executions); failures:
 *   those whose outcome failed or errored; passes on retry: those that passed after failed or
 *   errored attempts; time on failed attempts: those attempts' durations (docs/retries.md).
 * - Duration p50: the durations' log buckets (8 per doubling, DURATION_BUCKET_BOUNDS, as the project
 *   rollups). Until the day is packed every bucket is kept; a packed day keeps four (bucket, count)
 *   entries: while the day saw at most four distinct buckets they are its histogram, and the p50
 *   is its bucket's value, within 1 ms plus 4.5 % of the exact nearest-rank p50; past four, the two
 *   nearest entries are merged at their count-weighted bucket, so the p50 can move by up to the
 *   merged entries' distance (for one test's durations on one day, usually a bucket or two).
 */
import { type SQL, sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows";
import { testCases, testRollupDays, testRollups } from "../../db/schema";
import type { Database } from "../../db/types";
import { type DurationHistogram, histogramPercentile, mergeHistograms, utcDay } from "./daily-rollups";

export const PERIOD_DAYS = 32;
export const SLOT_BYTES = 22;
const DAY_MS = 86_400_000;

/** The period of a UTC day and the day's slot in it. */
export function periodOf(at: Date): { period: number; slot: number } {
  const day = Math.floor(at.getTime() / DAY_MS);
  return { period: Math.floor(day / PERIOD_DAYS), slot: day % PERIOD_DAYS };
}

/** A failed or errored attempt's duration, summed over a case's attempts (0 without any). */
const failedAttemptsMsSql = sql`case when c.attempts = '[]'::jsonb then 0 else coalesce((select sum(round((a ->> 'duration_ms')::numeric))
  from jsonb_array_elements(c.attempts) a where a ->> 'status' in ('failed', 'errored')), 0) end`;
const retriedSql = sql`(c.status = 'passed' and c.attempts <> '[]'::jsonb and exists (select 1 from jsonb_array_elements(c.attempts) a
  where a ->> 'status' in ('failed', 'errored')))`;

/**
 * The insert of a run's figures into its tests' rows of its day, for a statement's common table
 * expression. `cases`: a relation of the run's cases (test_id, status, duration_ms, attempts), its
 * stored cases unless a benchmark gives its own.
 */
export function testRollupSql(run: { projectId: string; createdAt: Date }, cases: SQL): SQL {
  return sql`
    insert into ${testRollupDays} as t (test_id, day, project_id, executions, failures, passed_on_retry, failed_attempts_ms, duration_buckets)
    select c.test_id, ${utcDay(run.createdAt)}::date, ${run.projectId}::uuid, count(*), count(*) filter (where c.status in ('failed', 'errored')),
      count(*) filter (where ${retriedSql}), coalesce(sum(${failedAttemptsMsSql}), 0),
      coalesce(array_agg(duration_bucket(c.duration_ms)) filter (where c.duration_ms is not null), '{}')
    from ${cases} c where c.status <> 'skipped'
    group by c.test_id
    on conflict (test_id, day) do update set executions = t.executions + excluded.executions, failures = t.failures + excluded.failures,
      passed_on_retry = t.passed_on_retry + excluded.passed_on_retry, failed_attempts_ms = t.failed_attempts_ms + excluded.failed_attempts_ms,
      duration_buckets = t.duration_buckets || excluded.duration_buckets`;
}

/** The stored cases of a run, as testRollupSql reads them. */
export const runCasesSql = (runId: number): SQL =>
  sql`(select test_id, status, duration_ms, attempts from ${testCases} where test_run_id = ${runId})`;

/**
 * Packs up to `limit` rows of the oldest day before `today` into test_rollups and deletes them,
 * in one statement (its own short transaction). Returns how many rows it packed: 0 when no day
 * before today is left.
 */
export async function packTestRollupDays(db: Database, today: Date, limit: number): Promise<number> {
  const dayNumber = sql`(m.day - date '1970-01-01')`;
  const [row] = await rowsOf<{ packed: number | string }>(
    db.execute(sql`
      with oldest as (select min(day) as day from ${testRollupDays} where day < ${utcDay(today)}::date),
      moved as (
        delete from ${testRollupDays} r where (r.test_id, r.day) in (
          select d.test_id, d.day from ${testRollupDays} d, oldest where d.day = oldest.day limit ${limit})
        returning r.*),
      packed as (
        insert into ${testRollups} as t (test_id, period, project_id, days)
        select m.test_id, ${dayNumber} / ${PERIOD_DAYS}, m.project_id,
          decode(repeat('00', (${dayNumber} % ${PERIOD_DAYS}) * ${SLOT_BYTES}), 'hex')
            || test_rollup_slot_add(null, least(m.executions, 65535), least(m.failures, 65535), least(m.passed_on_retry, 65535),
              m.failed_attempts_ms, h.buckets, h.counts)
        from moved m cross join lateral (
          select coalesce(array_agg(b order by b), '{}') as buckets, coalesce(array_agg(n order by b), '{}') as counts
          from (select b::int as b, count(*)::int as n from unnest(m.duration_buckets) b group by b) x) h
        on conflict (test_id, period) do update set days = test_rollup_merge(t.days, excluded.days)
        returning 1)
      select count(*) as packed from packed`),
  );
  return Number(row?.packed ?? 0);
}

/** A test's figures on one UTC day. */
export type TestDay = {
  day: string;
  executions: number;
  failures: number;
  passedOnRetry: number;
  failedAttemptsMs: number;
  /** Null when none of the day's executions had a duration. */
  durationP50Ms: number | null;
};

/** A day's figures with its durations' histogram (buckets to counts), before the p50 is read from it. */
type DayFigures = Omit<TestDay, "durationP50Ms"> & { histogram: DurationHistogram };

const u16 = (bytes: Uint8Array, at: number) => (bytes[at]! << 8) | bytes[at + 1]!;
const u32 = (bytes: Uint8Array, at: number) => u16(bytes, at) * 65536 + u16(bytes, at + 2);

function periodFigures(period: number, days: Uint8Array): DayFigures[] {
  const result: DayFigures[] = [];
  for (let slot = 0; (slot + 1) * SLOT_BYTES <= days.length; slot++) {
    const at = slot * SLOT_BYTES;
    const executions = u16(days, at);
    if (executions === 0) continue;
    const histogram: DurationHistogram = {};
    for (let entry = 0; entry < 4; entry++) {
      const count = u16(days, at + 11 + 3 * entry);
      if (count > 0) histogram[String(days[at + 10 + 3 * entry])] = count;
    }
    result.push({
      day: new Date((period * PERIOD_DAYS + slot) * DAY_MS).toISOString().slice(0, 10),
      executions,
      failures: u16(days, at + 2),
      passedOnRetry: u16(days, at + 4),
      failedAttemptsMs: u32(days, at + 6),
      histogram,
    });
  }
  return result;
}

const withP50 = ({ histogram, ...figures }: DayFigures): TestDay => ({ ...figures, durationP50Ms: histogramPercentile(histogram, 0.5) });

/** The days of a period's packed slots that had executions. */
export const decodePeriod = (period: number, days: Uint8Array): TestDay[] => periodFigures(period, days).map(withP50);

/** bytea as the drivers give it: a Buffer or Uint8Array (node-postgres, PGlite, Neon), or `\x…` hex text. */
export function bytesOf(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  const text = String(value);
  const hex = text.startsWith("\\x") ? text.slice(2) : text;
  const bytes = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

type UnpackedRow = {
  day: string;
  executions: number;
  failures: number;
  passed_on_retry: number;
  failed_attempts_ms: number | string;
  duration_buckets: number[] | string;
};

/** A Postgres array as the drivers give it: parsed, or its text (`{1,2}`). */
const numbersOf = (value: number[] | string): number[] =>
  Array.isArray(value) ? value.map(Number) : value.replace(/[{}]/g, "").split(",").filter(Boolean).map(Number);

function unpackedFigures(row: UnpackedRow): DayFigures {
  const histogram: DurationHistogram = {};
  for (const bucket of numbersOf(row.duration_buckets)) histogram[String(bucket)] = (histogram[String(bucket)] ?? 0) + 1;
  return {
    day: String(row.day).slice(0, 10),
    executions: Number(row.executions),
    failures: Number(row.failures),
    passedOnRetry: Number(row.passed_on_retry),
    failedAttemptsMs: Number(row.failed_attempts_ms),
    histogram,
  };
}

/** One day's figures from its packed slot and its rows not packed yet (a late run's). */
function addFigures(a: DayFigures, b: DayFigures): DayFigures {
  return {
    day: a.day,
    executions: a.executions + b.executions,
    failures: a.failures + b.failures,
    passedOnRetry: a.passedOnRetry + b.passedOnRetry,
    failedAttemptsMs: a.failedAttemptsMs + b.failedAttemptsMs,
    histogram: mergeHistograms([a.histogram, b.histogram]),
  };
}

/**
 * A test's days from `from` to `to` (UTC days, inclusive) with executions, oldest first: the few
 * periods that cover the range and the days not packed yet (two primary-key range reads).
 */
export async function readTestDays(db: Database, testId: string, from: Date, to: Date): Promise<TestDay[]> {
  const fromDay = utcDay(from);
  const toDay = utcDay(to);
  const [packed, unpacked] = await Promise.all([
    rowsOf<{ period: number; days: unknown }>(
      db.execute(sql`select period, days from ${testRollups}
        where test_id = ${testId}::uuid and period between ${periodOf(from).period} and ${periodOf(to).period}`),
    ),
    rowsOf<UnpackedRow>(
      db.execute(sql`select day::text as day, executions, failures, passed_on_retry, failed_attempts_ms, duration_buckets
        from ${testRollupDays} where test_id = ${testId}::uuid and day between ${fromDay}::date and ${toDay}::date`),
    ),
  ]);
  const byDay = new Map<string, DayFigures>();
  const add = (figures: DayFigures) => {
    if (figures.day < fromDay || figures.day > toDay) return;
    const known = byDay.get(figures.day);
    byDay.set(figures.day, known ? addFigures(known, figures) : figures);
  };
  for (const row of packed) for (const figures of periodFigures(Number(row.period), bytesOf(row.days))) add(figures);
  for (const row of unpacked) add(unpackedFigures(row));
  return [...byDay.values()].sort((a, b) => a.day.localeCompare(b.day)).map(withP50);
}
