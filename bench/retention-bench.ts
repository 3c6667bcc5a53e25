/**
 * `npm run bench:retention`: the disk the per-test rollups take (issue 32: "per-test daily rollups
 * ≤ 48 bytes per test per day on disk, table plus indexes, measured on 20,000 tests × 90 days").
 *
 * A project of 20,000 tests, each run RUNS_PER_DAY times a day for 90 days (ending today): every
 * run's 20,000 cases are stored (synthetic: 2 % failing, 1 % passing on retry after a failed
 * attempt, durations jittered ±15 % around each test's own base so a day's sketch sees several
 * buckets) and noted as processing notes them (noteRunCasesSql); once the day is over the
 * retention sweep's rolling (rollTestDays, its batches of 500 tests) sets every test's slot of the
 * day in test_rollups from the day's cases, the day's cases are then deleted (as a retention of one
 * day would, so the database stays small), and a VACUUM stands for autovacuum's visit (each day
 * rewrites every test's row once, so autovacuum's 20 % threshold is crossed daily). Then
 * pg_total_relation_size of test_rollups and test_rollup_progress (their indexes and TOAST
 * included) divided by 20,000 × 90: as left, after a last VACUUM (the dead versions' room is free
 * for later writes, the files keep their size: what the tables settle at), and after VACUUM FULL
 * (live rows only). The target is judged on the VACUUM figure. Also: the rolling's time per day.
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_RETENTION_TESTS
 * (20000), BENCH_RETENTION_DAYS (90), BENCH_RETENTION_RUNS_PER_DAY (2), BENCH_NO_RECORD=1 /
 * BENCH_OUTPUT=<file> (bench/report.ts).
 */
import os from "node:os";
import { sql } from "drizzle-orm";
import { rowsOf } from "../src/db/rows";
import { testIdentitySql } from "../src/db/schema";
import type { Database } from "../src/db/types";
import { systemClock } from "../src/lib/clock";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { noteRunCasesSql, rollTestDays } from "../src/services/shared/test-rollups";
import { withBenchDatabase } from "./common";
import { recordBenchmark } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const TESTS = Number(process.env.BENCH_RETENTION_TESTS ?? 20_000);
const DAYS = Number(process.env.BENCH_RETENTION_DAYS ?? 90);
const RUNS_PER_DAY = Number(process.env.BENCH_RETENTION_RUNS_PER_DAY ?? 2);
const TARGET_BYTES = 48;
/** The sweep's batch (retention-sweep.ts, BATCH_ROWS). */
const ROLL_BATCH = 500;
const DAY_MS = 86_400_000;
const log = (message: string) => console.error(`[retention-bench] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A run's cases, stored: every test once, its status and duration drawn from the run's number and the test's. */
async function storeRun(db: Database, projectId: string, runNumber: number, createdAt: Date): Promise<void> {
  const [run] = await rowsOf<{ id: number | string }>(
    db.execute(sql`insert into test_runs (project_id, number, status, created_at, processed_at)
      values (${projectId}::uuid, ${runNumber}, 'processed', ${createdAt.toISOString()}::timestamptz, ${createdAt.toISOString()}::timestamptz)
      returning id`),
  );
  await db.execute(sql`insert into test_cases (test_run_id, project_id, suite_number, name, classname, status, duration_ms, attempts)
    select ${run!.id}, ${projectId}::uuid, 1, 'test ' || i, 'Bench',
      (case when (i * 31 + ${runNumber}) % 50 = 0 then 'failed' else 'passed' end)::case_status,
      (50 * (1 + i % 200) * (0.85 + ((i * 7919 + ${runNumber} * 104729) % 1000) / 3333.0))::int,
      case when (i * 17 + ${runNumber}) % 100 = 0 then '[{"status":"failed","duration_ms":120,"failure_message":"flake"}]'::jsonb
        else '[]'::jsonb end
    from generate_series(1, ${TESTS}::int) as i`);
  await db.execute(noteRunCasesSql({ projectId, createdAt }));
}

async function main(): Promise<void> {
  await withBenchDatabase(SERVER_URL, "retention_bench", async (database, postgres) => {
    const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com" };
    const organization = await createOrganization(deps, { name: "Retention bench" });
    const projectId = (await createProject(deps, organization.organization.id, { name: "20,000 tests" })).project.id as string;
    const today = Math.floor(Date.now() / DAY_MS);
    // The project's tests, as run processing stores them (their id is their cases' test_id).
    await database.db.execute(sql`insert into tests (id, project_id, name, classname, first_seen_at)
      select ${testIdentitySql(sql`${projectId}::uuid`, sql`'Bench'`, sql`null::text`, sql`'test ' || i`, sql`''`)}, ${projectId}::uuid,
        'test ' || i, 'Bench', now()
      from generate_series(1, ${TESTS}::int) as i`);
    const rolls: number[] = [];
    let runNumber = 0;
    for (let day = today - DAYS + 1; day <= today; day++) {
      for (let run = 0; run < RUNS_PER_DAY; run++) {
        runNumber++;
        await storeRun(database.db, projectId, runNumber, new Date(day * DAY_MS + (run + 1) * 3_600_000));
      }
      if (day === today) break;
      // The day is over: the sweep rolls it up (batches of ROLL_BATCH tests), its cases go, and autovacuum's daily visit, done by hand.
      const started = performance.now();
      while ((await rollTestDays(database.db, new Date((day + 1) * DAY_MS), ROLL_BATCH)) > 0);
      rolls.push(performance.now() - started);
      await database.db.execute(sql`delete from test_cases where project_id = ${projectId}::uuid`);
      await database.db.execute(sql`vacuum test_rollups, test_rollup_progress, test_cases`);
      if ((day - today + DAYS) % 10 === 0) log(`day ${day - today + DAYS}/${DAYS}: ${median(rolls).toFixed(0)} ms per day's rolling`);
    }
    // The last day is not over: its figures are read from its cases, and take nothing in test_rollups yet.
    const size = async () =>
      Number(
        (
          await rowsOf<{ bytes: string }>(
            database.db.execute(
              sql`select pg_total_relation_size('test_rollups') + pg_total_relation_size('test_rollup_progress') as bytes`,
            ),
          )
        )[0]!.bytes,
      );
    const perTestDay = (bytes: number) => bytes / (TESTS * DAYS);
    const written = await size();
    await database.db.execute(sql`vacuum test_rollups, test_rollup_progress`);
    const vacuumed = await size();
    await database.db.execute(sql`vacuum full test_rollups, test_rollup_progress`);
    const compact = await size();
    const [rows] = await rowsOf<{ rows: string; avg: string }>(
      database.db.execute(sql`select count(*) as rows, avg(length(days)) as avg from test_rollups`),
    );
    const met = perTestDay(vacuumed) <= TARGET_BYTES;
    const figures = [
      `| As left (the last day's dead row versions included) | ${written.toLocaleString("en")} | ${perTestDay(written).toFixed(1)} |`,
      `| After VACUUM (what autovacuum settles at) | ${vacuumed.toLocaleString("en")} | **${perTestDay(vacuumed).toFixed(1)}** |`,
      `| After VACUUM FULL (live rows only) | ${compact.toLocaleString("en")} | ${perTestDay(compact).toFixed(1)} |`,
    ];
    const body = [
      `# Per-test rollups on disk (${TESTS.toLocaleString("en")} tests × ${DAYS} days, ${RUNS_PER_DAY} runs a day)`,
      "",
      `${postgres}; ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "unknown"}), shared.`,
      "",
      "| test_rollups + test_rollup_progress (tables + indexes + TOAST) | Bytes | Bytes per test per day |",
      "|---|---|---|",
      ...figures,
      "",
      `Rows: ${Number(rows!.rows).toLocaleString("en")} (a row per test per 32-day period), \`days\` ${Number(rows!.avg).toFixed(0)} bytes on average (22 per day with executions).`,
      "",
      `Target ≤ ${TARGET_BYTES} bytes per test per day after VACUUM: ${met ? "PASS" : "FAIL"}.`,
      "",
      `Run processing writes no rollup (it notes the run's day: one upsert of its project's progress row). Rolling up a day of ${TESTS.toLocaleString("en")} tests × ${RUNS_PER_DAY} runs from its stored cases (the sweep's batches of ${ROLL_BATCH} tests, unpaced): median ${median(rolls).toFixed(0)} ms over ${rolls.length} days.`,
    ].join("\n");
    console.log(body);
    recordBenchmark({
      name: "retention",
      command: "npm run bench:retention",
      measures: "Per-test daily rollups on disk, 20,000 tests × 90 days (table + indexes + TOAST, pg_total_relation_size)",
      figure: `${perTestDay(vacuumed).toFixed(1)} bytes per test per day after VACUUM ${met ? "PASS" : "FAIL"} (${perTestDay(compact).toFixed(1)} after VACUUM FULL); rolled up by the sweep, ${median(rolls).toFixed(0)} ms per day of 20,000 tests`,
      target: `≤ ${TARGET_BYTES} bytes per test per day`,
      report: body,
    });
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
