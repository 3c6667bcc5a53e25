/**
 * `npm run bench:retention`: the disk the per-test rollups take (issue 32: "per-test daily rollups
 * ≤ 48 bytes per test per day on disk, table plus indexes, measured on 20,000 tests × 90 days").
 *
 * A project of 20,000 tests, each run RUNS_PER_DAY times a day for 90 days (ending today): every
 * run's figures go into test_rollup_days through the expression run processing uses
 * (testRollupSql, src/services/shared/test-rollups.ts), over a relation of 20,000 synthetic cases
 * instead of stored ones (2 % failing, 1 % passing on retry after a failed attempt, durations
 * jittered ±15 % around each test's own base so a day's sketch sees several buckets); at the end of
 * each day the retention sweep's packing moves the day into test_rollups (packTestRollupDays), and
 * a VACUUM stands for autovacuum's visit (each day rewrites every test's row once, so autovacuum's
 * 20 % threshold is crossed daily). Then pg_total_relation_size of both tables (their indexes and
 * TOAST included) divided by 20,000 × 90: as left, after a last VACUUM (the dead versions' room is
 * free for later writes, the files keep their size: what the tables settle at), and after VACUUM
 * FULL (live rows only). The target is judged on the VACUUM figure. Also: the rollup write's time
 * per 20,000-test run (the median statement), what it adds to processing such a run, and the
 * packing's time per day.
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_RETENTION_TESTS
 * (20000), BENCH_RETENTION_DAYS (90), BENCH_RETENTION_RUNS_PER_DAY (2), BENCH_NO_RECORD=1 /
 * BENCH_OUTPUT=<file> (bench/report.ts).
 */
import os from "node:os";
import { sql } from "drizzle-orm";
import { rowsOf } from "../src/db/rows";
import { systemClock } from "../src/lib/clock";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { packTestRollupDays, testRollupSql } from "../src/services/shared/test-rollups";
import { withBenchDatabase } from "./common";
import { recordBenchmark } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const TESTS = Number(process.env.BENCH_RETENTION_TESTS ?? 20_000);
const DAYS = Number(process.env.BENCH_RETENTION_DAYS ?? 90);
const RUNS_PER_DAY = Number(process.env.BENCH_RETENTION_RUNS_PER_DAY ?? 2);
const TARGET_BYTES = 48;
const PACK_BATCH = 2_000;
const DAY_MS = 86_400_000;
const log = (message: string) => console.error(`[retention-bench] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A run's cases: every test once, its status and duration drawn from the run's number and the test's. */
const syntheticCases = (runNumber: number) => sql`(
  select md5('bench-test-' || i)::uuid as test_id,
    (case when (i * 31 + ${runNumber}) % 50 = 0 then 'failed' else 'passed' end)::case_status as status,
    (50 * (1 + i % 200) * (0.85 + ((i * 7919 + ${runNumber} * 104729) % 1000) / 3333.0))::int as duration_ms,
    case when (i * 17 + ${runNumber}) % 100 = 0 then '[{"status":"failed","duration_ms":120,"failure_message":"flake"}]'::jsonb
      else '[]'::jsonb end as attempts
  from generate_series(1, ${TESTS}::int) as i)`;

async function main(): Promise<void> {
  await withBenchDatabase(SERVER_URL, "retention_bench", async (database, postgres) => {
    const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com" };
    const organization = await createOrganization(deps, { name: "Retention bench" });
    const projectId = (await createProject(deps, organization.organization.id, { name: "20,000 tests" })).project.id as string;
    const today = Math.floor(Date.now() / DAY_MS);
    // What generating the synthetic cases costs alone (their relation counted, nothing written): the write's time includes it.
    const sources: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await database.db.execute(sql`select count(*), sum(duration_ms) from ${syntheticCases(i)} c`);
      sources.push(performance.now() - started);
    }
    const writes: number[] = [];
    const packs: number[] = [];
    let runNumber = 0;
    for (let day = today - DAYS + 1; day <= today; day++) {
      for (let run = 0; run < RUNS_PER_DAY; run++) {
        runNumber++;
        const createdAt = new Date(day * DAY_MS + (run + 1) * 3_600_000);
        const started = performance.now();
        await database.db.execute(testRollupSql({ projectId, createdAt }, syntheticCases(runNumber)));
        writes.push(performance.now() - started);
      }
      // The day is over: the sweep packs it (batches of PACK_BATCH rows), and autovacuum's daily visit, done by hand.
      const started = performance.now();
      while ((await packTestRollupDays(database.db, new Date((day + 1) * DAY_MS), PACK_BATCH)) > 0);
      packs.push(performance.now() - started);
      if (day < today) await database.db.execute(sql`vacuum test_rollups, test_rollup_days`);
      if ((day - today + DAYS) % 10 === 0)
        log(
          `day ${day - today + DAYS}/${DAYS}: ${median(writes).toFixed(0)} ms per run's write, ${median(packs).toFixed(0)} ms per day's packing`,
        );
    }
    // The last day is not over: its rows wait in test_rollup_days, counted too.
    const size = async () =>
      Number(
        (
          await rowsOf<{ bytes: string }>(
            database.db.execute(sql`select pg_total_relation_size('test_rollups') + pg_total_relation_size('test_rollup_days') as bytes`),
          )
        )[0]!.bytes,
      );
    const perTestDay = (bytes: number) => bytes / (TESTS * DAYS);
    const written = await size();
    await database.db.execute(sql`vacuum test_rollups, test_rollup_days`);
    const vacuumed = await size();
    await database.db.execute(sql`vacuum full test_rollups, test_rollup_days`);
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
      "| test_rollups + test_rollup_days (tables + indexes + TOAST) | Bytes | Bytes per test per day |",
      "|---|---|---|",
      ...figures,
      "",
      `Rows: ${Number(rows!.rows).toLocaleString("en")} (a row per test per 32-day period), \`days\` ${Number(rows!.avg).toFixed(0)} bytes on average (22 per day with executions).`,
      "",
      `Target ≤ ${TARGET_BYTES} bytes per test per day after VACUUM: ${met ? "PASS" : "FAIL"}.`,
      "",
      `The rollup write of one ${TESTS.toLocaleString("en")}-test run (the expression run processing adds to its last statement): median ${median(writes).toFixed(0)} ms over ${writes.length} runs, of which generating the synthetic cases alone takes ${median(sources).toFixed(0)} ms (processing reads the run's stored cases instead, which it has just written). Packing a day of ${TESTS.toLocaleString("en")} tests (batches of ${PACK_BATCH.toLocaleString("en")}): median ${median(packs).toFixed(0)} ms.`,
    ].join("\n");
    console.log(body);
    recordBenchmark({
      name: "retention",
      command: "npm run bench:retention",
      measures: "Per-test daily rollups on disk, 20,000 tests × 90 days (table + indexes + TOAST, pg_total_relation_size)",
      figure: `${perTestDay(vacuumed).toFixed(1)} bytes per test per day after VACUUM ${met ? "PASS" : "FAIL"} (${perTestDay(compact).toFixed(1)} after VACUUM FULL); write ${median(writes).toFixed(0)} ms per 20,000-test run`,
      target: `≤ ${TARGET_BYTES} bytes per test per day`,
      report: body,
    });
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
