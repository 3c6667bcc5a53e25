/**
 * Per-test daily rollups (docs/retention.md): what a test's page shows for the days beyond the
 * retention of its cases. Run processing writes none of it: the retention sweep rolls each
 * finished UTC day up from that day's cases (rollTestDays), which are kept at least until then.
 *
 * - test_rollups: one row per test and period of PERIOD_DAYS UTC days, `days` a SLOT_BYTES slot
 *   per day (drizzle/0044_retention.sql has the layout and the functions that build a slot). A
 *   row per test per day would cost its tuple header, its key and an index entry every day; the
 *   packed row pays them once a period, so a test costs about one slot a day
 *   (bench/retention-bench.ts measures it).
 * - test_rollup_progress: per project, the first day not rolled yet (`day`), how far the sweep has
 *   gone in it, and the first day whose cases it has not started deleting. A day is rolled in
 *   batches of tests, each batch one short transaction that sets the batch's slots (replaces
 *   them: rolling a day again gives the same slots, so a killed or repeated sweep counts nothing
 *   twice) and moves the progress on.
 * - Cases added to or changed in a run after its day was rolled (a retry part, a run processed
 *   after midnight) move the project's `day` back to the run's day (noteRunCasesSql, in the
 *   transaction that wrote them), which is then rolled again from all its cases; the sweep deletes
 *   a day's cases only once the day is rolled.
 * - A test's history reads the days before `day` from test_rollups and the days from it on (today,
 *   a day not swept yet) from the test's cases (readTestDays).
 *
 * What a day counts:
 * - A run counts on the UTC day it arrived (`test_runs.created_at`), as project_daily_rollups, with
 *   every case it has when the day is rolled: the cases of its retry parts too (docs/retention.md).
 * - Executions: the run's cases of the test that ran (skipped ones are not executions); failures:
 *   those whose outcome failed or errored; passes on retry: those that passed after failed or
 *   errored attempts; time on failed attempts: those attempts' durations (docs/retries.md).
 * - Duration p50: the durations' log buckets (8 per doubling, DURATION_BUCKET_BOUNDS, as the project
 *   rollups). A day read from its cases keeps every bucket; a rolled day keeps four (bucket, count)
 *   entries: while the day saw at most four distinct buckets they are its histogram, and the p50
 *   is its bucket's value, within 1 ms plus 4.5 % of the exact nearest-rank p50; past four, the two
 *   nearest entries are merged at their count-weighted bucket, so the p50 can move by up to the
 *   merged entries' distance (for one test's durations on one day, usually a bucket or two).
 */
import { type SQL, sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows";
import { transactionWithRetry } from "../../db/transaction-retry";
import { testCases, testRollupProgress, testRollups, testRuns, tests } from "../../db/schema";
import type { Database } from "../../db/types";
import { type DurationHistogram, histogramPercentile, utcDay } from "./daily-rollups";

export const PERIOD_DAYS = 32;
export const SLOT_BYTES = 22;
const DAY_MS = 86_400_000;
/** The newest cases of a test its history reads for the days not rolled up yet (a day or two of them, normally). */
const UNROLLED_CASES_READ = 20_000;

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

/** Per test of `cases` (test_id, status, duration_ms, attempts) and `day`: its figures, every timed execution's bucket. */
const figuresSql = (cases: SQL, group: SQL, key: SQL) => sql`
  select ${key}, count(*) filter (where c.status <> 'skipped') as executions,
    count(*) filter (where c.status in ('failed', 'errored')) as failures,
    count(*) filter (where ${retriedSql}) as passed_on_retry,
    coalesce(sum(${failedAttemptsMsSql}) filter (where c.status <> 'skipped'), 0) as failed_attempts_ms,
    coalesce(array_agg(duration_bucket(c.duration_ms)) filter (where c.status <> 'skipped' and c.duration_ms is not null), '{}') as duration_buckets
  from ${cases} c group by ${group}`;

/**
 * Sets one day's slot of each test of `cases` (a relation of that day's cases: test_id, status,
 * duration_ms, attempts) in test_rollups, replacing what the slot held: a test whose cases that
 * day are all skipped gets an empty slot where it has a row. Common table expressions for a
 * statement (`with …, ${testDayCtes(…)} select …`).
 */
function testDayCtes(projectId: string, day: string, cases: SQL): SQL {
  const { period, slot } = periodOf(new Date(`${day}T00:00:00Z`));
  const empty = sql`decode(repeat('00', ${SLOT_BYTES}), 'hex')`;
  return sql`
    f as (${figuresSql(cases, sql`c.test_id`, sql`c.test_id`)}),
    s as (
      select f.test_id, f.executions, test_rollup_slot_add(null, least(f.executions, 65535)::int, least(f.failures, 65535)::int,
        least(f.passed_on_retry, 65535)::int, f.failed_attempts_ms::bigint, h.buckets, h.counts) as slot
      from f cross join lateral (
        select coalesce(array_agg(b order by b), '{}') as buckets, coalesce(array_agg(n order by b), '{}') as counts
        from (select b::int as b, count(*)::int as n from unnest(f.duration_buckets) b group by b) x) h),
    written as (
      insert into ${testRollups} as t (test_id, period, project_id, days)
      select s.test_id, ${period}, ${projectId}::uuid, test_rollup_put(null, ${slot}, s.slot) from s where s.executions > 0
      on conflict (test_id, period) do update set days = test_rollup_put(t.days, ${slot}, substring(excluded.days from ${slot * SLOT_BYTES + 1} for ${SLOT_BYTES}))
      returning 1),
    cleared as (
      update ${testRollups} t set days = test_rollup_put(t.days, ${slot}, ${empty})
      from s where s.executions = 0 and t.test_id = s.test_id and t.period = ${period} and length(t.days) > ${slot * SLOT_BYTES}
      returning 1)`;
}

/**
 * What a transaction that adds cases to a run, or changes them, runs before it commits (run
 * processing's last statement, a retry part's merge): the run's day is to be rolled (again) from
 * its cases. A project's first run starts its progress at the run's day. When the sweep has rolled
 * the day, or started to, the progress moves back to it, unless the sweep has begun deleting that
 * day's cases (the day's figures then stay as rolled). The row lock this takes is what orders it
 * with the sweep's batches (rollTestDays): a batch that locked the row first has moved it on, and
 * this moves it back; one that locks it after this commits sees these cases.
 */
export function noteRunCasesSql(run: { projectId: string; createdAt: Date }): SQL {
  const back = sql`((g.day > excluded.day or (g.day = excluded.day and g.after_id is not null))
    and (g.cases_deleted_before is null or excluded.day >= g.cases_deleted_before))`;
  const unless = (column: string) => sql`case when ${back} then null else g.${sql.raw(column)} end`;
  // The bound of the unrolled days' case ids is forgotten with a move back, and when this transaction began before
  // the sweep set it (now() is its start): its cases may have ids below it (nextDay).
  return sql`
    insert into ${testRollupProgress} as g (project_id, day) values (${run.projectId}::uuid, ${utcDay(run.createdAt)}::date)
    on conflict (project_id) do update set day = case when ${back} then excluded.day else g.day end,
      after_name = ${unless("after_name")}, after_id = ${unless("after_id")}, first_case = ${unless("first_case")},
      last_case = ${unless("last_case")}, unrolled_from_case = null
    where ${back} or (g.unrolled_from_case is not null and g.unrolled_from_at > now())`;
}

type Progress = {
  project_id: string;
  day: string;
  after_name: string | null;
  after_id: string | null;
  first_case: number | string | null;
  last_case: number | string | null;
};

/**
 * One batch of the sweep's rolling: the project whose first day not rolled is the oldest before
 * `today` among those with a processed run since (a project without runs is not visited: its
 * progress stays where it is until it has one), and the next `limit` of its tests (tests_project_name_idx's order), their day's slots
 * set from their cases of the day (test_cases_test_idx, within the day's case ids). One short
 * transaction; a project whose progress row a processing holds is left to the next batch. Returns
 * the tests it went through (at least 1 when it found a day to roll), 0 when no day is left.
 */
export async function rollTestDays(db: Database, today: Date, limit: number): Promise<number> {
  const todayStart = `${utcDay(today)}T00:00:00Z`;
  return transactionWithRetry(db, async (tx) => {
    const [progress] = await rowsOf<Progress>(
      tx.execute(sql`select project_id, day::text as day, after_name, after_id, first_case, last_case from ${testRollupProgress} g
        where day < ${utcDay(today)}::date and exists (select 1 from ${testRuns} r where r.project_id = g.project_id and r.cases_deleted_at is null
          and r.created_at >= (g.day::timestamp at time zone 'UTC') and r.created_at < ${todayStart}::timestamptz and r.status = 'processed')
        order by day limit 1 for update skip locked`),
    );
    if (!progress) return 0;
    const day = String(progress.day).slice(0, 10);
    const from = new Date(`${day}T00:00:00Z`);
    const to = new Date(from.getTime() + DAY_MS);
    // The day's processed runs (test_runs_cases_kept_idx), and their cases' ids, read once when the day starts (a case
    // added later moves the progress back, so the day starts again).
    const [runs] = await rowsOf<{ ids: string; first: number | string | null; last: number | string | null }>(
      tx.execute(sql`with r as (select id from ${testRuns} where project_id = ${progress.project_id}::uuid and cases_deleted_at is null
          and status = 'processed' and created_at >= ${from.toISOString()}::timestamptz and created_at < ${to.toISOString()}::timestamptz)
        select coalesce(array_agg(id), '{}')::text as ids,
          ${progress.after_id === null ? sql`(select min(c.id) from ${testCases} c where c.test_run_id in (select id from r))` : sql`null`} as first,
          ${progress.after_id === null ? sql`(select max(c.id) from ${testCases} c where c.test_run_id in (select id from r))` : sql`null`} as last
        from r`),
    );
    const range =
      progress.after_id === null
        ? { first: runs?.first ?? null, last: runs?.last ?? null }
        : { first: progress.first_case, last: progress.last_case };
    const batch =
      range.first === null ? { examined: 0, last: null } : await rollBatch(tx, progress, day, sql`${runs!.ids}::bigint[]`, range, limit);
    if (batch.last === null || batch.examined < limit) await nextDay(tx, progress.project_id, to, today);
    else
      await tx
        .update(testRollupProgress)
        .set({ afterName: batch.last.name, afterId: batch.last.id, firstCase: Number(range.first), lastCase: Number(range.last) })
        .where(sql`${testRollupProgress.projectId} = ${progress.project_id}::uuid`);
    return Math.max(batch.examined, 1);
  });
}

/** The batch's tests' slots of the day; returns how many tests it went through and the last one. */
async function rollBatch(
  tx: Database,
  progress: Progress,
  day: string,
  runIds: SQL,
  range: { first: number | string | null; last: number | string | null },
  limit: number,
): Promise<{ examined: number; last: { name: string; id: string } | null }> {
  const after = progress.after_id === null ? sql`` : sql`and (t.name, t.id) > (${progress.after_name}, ${progress.after_id}::uuid)`;
  // Each test's cases of the day by test_cases_test_idx, within the day's case ids (a few index entries a test);
  // `offset 0` keeps it a lookup per test whatever the planner guesses of the batch's size.
  const cases = sql`(select c.test_id, c.status, c.duration_ms, c.attempts from batch t cross join lateral (
    select c.test_id, c.status, c.duration_ms, c.attempts from ${testCases} c
    where c.test_id = t.id and c.id between ${range.first} and ${range.last} and c.test_run_id = any(${runIds}) offset 0) c)`;
  const [row] = await rowsOf<{ examined: number | string; last_name: string | null; last_id: string | null }>(
    tx.execute(sql`
      with batch as (
        select t.id, t.name from ${tests} t where t.project_id = ${progress.project_id}::uuid ${after} order by t.name, t.id limit ${limit}),
      ${testDayCtes(progress.project_id, day, cases)}
      select (select count(*) from batch) as examined, l.name as last_name, l.id as last_id
      from (select 1) one left join (select name, id from batch order by name desc, id desc limit 1) l on true`),
  );
  return {
    examined: Number(row?.examined ?? 0),
    last: row?.last_id ? { name: String(row.last_name), id: String(row.last_id) } : null,
  };
}

/**
 * After a project's day: its next day with a processed run (the sweep skips days without any), or
 * `today`. A run processed later on a skipped day moves the progress back (noteRunCasesSql).
 */
async function nextDay(tx: Database, projectId: string, after: Date, today: Date): Promise<void> {
  const [row] = await rowsOf<{ at: string | Date | null }>(
    tx.execute(sql`select min(created_at) as at from ${testRuns}
      where project_id = ${projectId}::uuid and created_at >= ${after.toISOString()}::timestamptz and cases_deleted_at is null
        and status = 'processed'`),
  );
  const next = utcDay(row?.at && new Date(row.at) < today ? new Date(row.at) : today);
  // The lowest case id of the days from the next on (a day or two of runs; any case stored later has a higher id),
  // read with the progress row locked: a transaction that noted cases before committed first; one that began before
  // this statement's clock_timestamp() forgets it (noteRunCasesSql), as its ids may be lower.
  await tx.execute(sql`update ${testRollupProgress} set day = ${next}::date, after_name = null, after_id = null,
    first_case = null, last_case = null, unrolled_from_at = clock_timestamp(),
    unrolled_from_case = coalesce(
      (select min(c.id) from ${testRuns} r join ${testCases} c on c.test_run_id = r.id where r.project_id = ${projectId}::uuid
        and r.status = 'processed' and r.cases_deleted_at is null and r.created_at >= ${`${next}T00:00:00Z`}::timestamptz),
      (select max(id) + 1 from ${testCases}), 0)
    where project_id = ${projectId}::uuid`);
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

/**
 * A test's days from `from` to `to` (UTC days, inclusive) with executions, oldest first: the days
 * its project's sweep has rolled up from the periods that cover the range (a primary-key range
 * read), the days from the first not rolled yet (today, a day not swept yet) from the test's
 * cases (test_cases_test_idx, read backwards from its newest case down to the progress'
 * `unrolled_from_case`: the day or two of cases not rolled up), UNROLLED_CASES_READ of them at most.
 */
export async function readTestDays(db: Database, testId: string, from: Date, to: Date): Promise<TestDay[]> {
  const fromDay = utcDay(from);
  const toDay = utcDay(to);
  const end = new Date(Date.parse(`${toDay}T00:00:00Z`) + DAY_MS).toISOString();
  const [packed, unrolled] = await Promise.all([
    rowsOf<{ period: number; days: unknown }>(
      db.execute(sql`select period, days from ${testRollups}
        where test_id = ${testId}::uuid and period between ${periodOf(from).period} and ${periodOf(to).period}`),
    ),
    rowsOf<UnrolledRow>(
      db.execute(sql`
        with g as (select g.day, g.unrolled_from_case from ${tests} t join ${testRollupProgress} g on g.project_id = t.project_id
          where t.id = ${testId}::uuid),
        c as (select test_run_id, status, duration_ms, attempts from ${testCases}
          where test_id = ${testId}::uuid and id >= coalesce((select unrolled_from_case from g), 0) order by id desc limit ${UNROLLED_CASES_READ}),
        d as (${figuresSql(
          sql`(select c.*, (r.created_at at time zone 'UTC')::date::text as day from c join ${testRuns} r on r.id = c.test_run_id
            where exists (select 1 from g) and r.status = 'processed' and r.created_at >= greatest((select day from g)::timestamp at time zone 'UTC', ${`${fromDay}T00:00:00Z`}::timestamptz)
              and r.created_at < ${end}::timestamptz)`,
          sql`c.day`,
          sql`c.day`,
        )})
        select (select day::text from g) as rolled_before, d.* from (select 1) one left join d on d.executions > 0`),
    ),
  ]);
  // Without progress the project has no processed run: nothing to read from cases.
  const rolledBefore = unrolled[0]?.rolled_before ? String(unrolled[0].rolled_before).slice(0, 10) : null;
  const byDay = new Map<string, DayFigures>();
  for (const row of packed)
    for (const figures of periodFigures(Number(row.period), bytesOf(row.days)))
      if (figures.day >= fromDay && figures.day <= toDay && (rolledBefore === null || figures.day < rolledBefore))
        byDay.set(figures.day, figures);
  for (const row of unrolled) if (row.day) byDay.set(String(row.day).slice(0, 10), unrolledFigures(row));
  return [...byDay.values()].sort((a, b) => a.day.localeCompare(b.day)).map(withP50);
}

type UnrolledRow = {
  rolled_before: string | null;
  day: string | null;
  executions: number | string;
  failures: number | string;
  passed_on_retry: number | string;
  failed_attempts_ms: number | string;
  duration_buckets: number[] | string;
};

/** A Postgres array as the drivers give it: parsed, or its text (`{1,2}`). */
const numbersOf = (value: number[] | string): number[] =>
  Array.isArray(value) ? value.map(Number) : value.replace(/[{}]/g, "").split(",").filter(Boolean).map(Number);

function unrolledFigures(row: UnrolledRow): DayFigures {
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
