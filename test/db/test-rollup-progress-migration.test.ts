/**
 * The migration that moves the tests' daily figures to the retention sweep
 * (drizzle/0048_test_rollup_progress.sql) keeps what run processing wrote: a database migrated up to
 * the one before, with rows in test_rollup_days (a day 40 days ago, yesterday, today), then migrated
 * to the end, has every day in test_rollups with the same figures,
 * and each project's progress at today. An embedded database of its own (memory://).
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rowsOf } from "../../src/db/rows";
import { bytesOf, decodePeriod } from "../../src/services/shared/test-rollups";
import { bucketValue, durationBucket } from "../../src/services/shared/daily-rollups";
import { type DatabaseBefore, databaseBefore, organizationBefore } from "../support/migration-before";

let before: DatabaseBefore;
beforeAll(async () => {
  before = await databaseBefore("0048_test_rollup_progress");
});
afterAll(async () => before?.close());

const DAY = 86_400_000;

it("packs every day's rows into test_rollups and starts each project's progress today", async () => {
  const { database } = before;
  const { db } = database;
  await before.migrateBefore();
  const {
    projectIds: [project, quiet],
  } = await organizationBefore(db, "p", "q");
  const [today] = await rowsOf<{ day: string }>(db.execute(sql`select ((now() at time zone 'UTC')::date)::text as day`));
  const day = (ago: number) => new Date(Date.parse(`${today!.day}T00:00:00Z`) - ago * DAY).toISOString().slice(0, 10);
  const test = "00000000-0000-4000-8000-000000000001";
  const row = (on: string, executions: number, failures: number, buckets: number[]) =>
    db.execute(sql`insert into test_rollup_days (test_id, day, project_id, executions, failures, passed_on_retry, failed_attempts_ms, duration_buckets)
      values (${test}::uuid, ${on}::date, ${project!}::uuid, ${executions}, ${failures}, 0, ${failures * 100}, ${`{${buckets.join(",")}}`}::smallint[])`);
  const b = (ms: number) => durationBucket(ms);
  await row(day(40), 2, 1, [b(100), b(120)]);
  await row(day(1), 3, 0, [b(10), b(10), b(12)]);
  await row(day(0), 1, 1, [b(500)]);

  await database.migrate();
  const days = (
    await rowsOf<{ period: number; days: unknown }>(db.execute(sql`select period, days from test_rollups where test_id = ${test}::uuid`))
  ).flatMap((r) => decodePeriod(Number(r.period), bytesOf(r.days)));
  expect(days.sort((x, y) => x.day.localeCompare(y.day))).toEqual([
    { day: day(40), executions: 2, failures: 1, passedOnRetry: 0, failedAttemptsMs: 100, durationP50Ms: bucketValue(b(100)) },
    { day: day(1), executions: 3, failures: 0, passedOnRetry: 0, failedAttemptsMs: 0, durationP50Ms: bucketValue(b(10)) },
    { day: day(0), executions: 1, failures: 1, passedOnRetry: 0, failedAttemptsMs: 100, durationP50Ms: bucketValue(b(500)) },
  ]);
  const progress = await rowsOf<{ project_id: string; day: string; cases_deleted_before: string }>(
    db.execute(sql`select project_id, day::text as day, cases_deleted_before::text as cases_deleted_before from test_rollup_progress`),
  );
  expect(progress.map((p) => [p.project_id, p.day, p.cases_deleted_before]).sort()).toEqual(
    [
      [project!, today!.day, today!.day],
      [quiet!, today!.day, today!.day],
    ].sort(),
  );
  expect(await rowsOf(db.execute(sql`select to_regclass('test_rollup_days') as t`))).toEqual([{ t: null }]);
});
