/**
 * `npm run bench:flakiness-cost`: the cost of flakiness endpoint (docs/flakiness-cost.md) reads
 * what processing kept per day, so its statements and its time do not grow with the project's
 * history (issue 29: "the cost endpoint over 90 days of a 20,000-run project ≤ 3 statements").
 * A project with 20,000 runs over the last 90 days, 20,000 tests of which 1,000 flaky, and a
 * test's daily cost row on a third of the days for each flaky test (30,000 rows), against one
 * with the same tests and cost rows but 100 runs, same organization: the read depends on the
 * window's cost rows (costly tests × days), never on the runs. The runs' daily
 * rollups come from the migration's own backfill (drizzle/0019_project_pages.sql), the cost columns
 * from the seeded test rows plus re-runs; a few runs are then processed for real, so today's rows
 * are processing's own.
 *
 * Measured in process (`app.fetch`, the body read; a warm API key): the statements each request
 * sends (every `query` of the node-postgres pool) for `GET /api/v1/projects/:id/flakiness_cost`
 * over 90 days and by default (30 days), and for a test's `GET /api/v1/tests/:id/flakiness_cost`;
 * then the server time of the 90-day request, big against small, alternated (A B B A…) after a
 * warm-up, medians. Records its report in BENCHMARKS.md and bench/history/flakiness-cost.md.
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_COST_ROUNDS (201),
 * BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file> (bench/report.ts).
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import { sql } from "drizzle-orm";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import type { OpenedDatabase } from "../src/node/database";
import { addDays } from "../src/services/runs/flakiness-cost-reads";
import { utcDay } from "../src/services/shared/daily-rollups";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { completeTestRun, recordTestRunArrival } from "../src/services/runs/test-runs";
import { statementCountingApp, withBenchDatabase } from "./common";
import { recordBenchmark } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const BIG = { runs: 20_000, tests: 20_000 };
const SMALL = { runs: 100, tests: 20_000 };
const DAYS = 90;
const ROUNDS = Number(process.env.BENCH_COST_ROUNDS ?? 201);
const WARMUP = 20;
const STATEMENTS_TARGET = 3;
const RATIO_TARGET = 1.3;
const quietLogger: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };
const log = (message: string) => console.error(`[flakiness-cost-bench] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const verdict = (met: boolean) => (met ? "PASS" : "FAIL");

/** Runs over the last 90 days, tests (every 20th flaky), each flaky test's cost on a third of the days, then the days' rollups. */
async function seedHistory(database: OpenedDatabase, projectId: string, size: { runs: number; tests: number }) {
  const run = (statement: ReturnType<typeof sql>) => database.db.execute(statement);
  await run(sql`
    insert into test_runs (project_id, number, status, result, branch, commit_sha, build_id, created_at, processed_at, duration_ms,
      tests_count, passed_count, failed_count, errored_count, skipped_count)
    select ${projectId}::uuid, i, 'processed', (case when i % 10 = 0 then 'tests_failed' else 'tests_passed' end)::run_result,
      'main', md5(i::text), i::text, now() - ((${size.runs}::int - i) * (interval '${sql.raw(String(DAYS))} days' / ${size.runs}::int)),
      now() - ((${size.runs}::int - i) * (interval '${sql.raw(String(DAYS))} days' / ${size.runs}::int)),
      60000 + (i * 7919) % 240000, 4000, 3990 - (i % 10 = 0)::int, (i % 10 = 0)::int, 0, 10
    from generate_series(1, ${size.runs}::int) as i`);
  await run(sql`
    insert into tests (id, project_id, name, classname, health, executions_count, first_seen_at, last_run_number)
    select md5(${projectId}::text || i)::uuid, ${projectId}::uuid, 'test_' || i, 'com.acme.Module' || (i % 200) || 'Test',
      (case when i % 20 = 0 then 'flaky' else 'healthy' end)::test_health, 1000, now() - interval '90 days', ${size.runs}::int
    from generate_series(1, ${size.tests}::int) as i`);
  await run(sql`
    insert into test_daily_costs (test_id, day, project_id, retry_ms, flaky_failures_ms, quarantined_failures_ms)
    select md5(${projectId}::text || i)::uuid, current_date - d, ${projectId}::uuid, (i * 7 + d) % 500, 200 + (i * 13 + d) % 4000,
      case when i % 100 = 0 then 3000 else 0 end
    from generate_series(20, ${size.tests}::int, 20) as i, generate_series(0, ${DAYS - 1}) as d where (i / 20 + d) % 3 = 0`);
  await run(sql`update projects set test_runs_count = ${size.runs}::int, tests_count = ${size.tests}::int where id = ${projectId}::uuid`);
}

/** The runs' rollups by the migration's backfill, then each day's cost: its tests' rows and a few re-runs of 10 minutes. */
async function seedRollups(database: OpenedDatabase) {
  const migration = readFileSync(new URL("../drizzle/0019_project_pages.sql", import.meta.url), "utf8");
  const backfill = migration.split("--> statement-breakpoint").find((part) => part.includes("WITH runs AS"))!;
  await database.db.execute(sql.raw(backfill));
  await database.db.execute(sql`
    update project_daily_rollups r set retry_ms = c.retry, flaky_failures_ms = c.flaky, quarantined_failures_ms = c.quarantined,
      reruns_count = 2 + extract(day from r.day)::int % 4, rerun_ms = (2 + extract(day from r.day)::int % 4) * 600000
    from (select project_id, day, sum(retry_ms) as retry, sum(flaky_failures_ms) as flaky, sum(quarantined_failures_ms) as quarantined
          from test_daily_costs group by project_id, day) c
    where c.project_id = r.project_id and c.day = r.day`);
}

/** A run of a flaky test failing and a retry, processed for real on each project: today's rows are processing's. */
async function processLiveRuns(database: OpenedDatabase, projectIds: string[]) {
  const deps = { db: database.db, clock: systemClock, logger: quietLogger, webAppUrl: "https://app.example.com" };
  for (const projectId of projectIds) {
    for (let i = 0; i < 3; i++) {
      const { run } = await recordTestRunArrival(deps, projectId, { branch: "main", commitSha: `live${i}`, buildId: `live${i}` });
      await completeTestRun(deps, run.id, {
        durationMs: 90_000,
        suites: [
          {
            name: "com.acme.Module0Test",
            cases: [
              { name: "test_20", classname: "com.acme.Module20Test", status: "failed", durationMs: 1_200, failureMessage: "flaked" },
              {
                name: "test_1",
                classname: "com.acme.Module1Test",
                status: "passed",
                durationMs: 300,
                attempts: [{ status: "failed", durationMs: 450, failureMessage: "timeout" }],
              },
            ],
          },
        ],
      });
    }
  }
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(1);
  await withBenchDatabase(SERVER_URL, "cia_cost_bench", async (database, postgres) => {
    const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com" };
    const org = await createOrganization(deps, { name: "Cost bench" });
    const apiKey = org.api_key.secret;
    const newProject = async (name: string) => (await createProject(deps, org.organization.id, { name })).project.id as string;
    const big = await newProject("20,000 runs");
    const small = await newProject("100 runs");
    log(`seeding ${BIG.runs} runs and ${SMALL.runs} runs over ${DAYS} days, ${BIG.tests} tests each`);
    await seedHistory(database, big, BIG);
    await seedHistory(database, small, SMALL);
    await seedRollups(database);
    await processLiveRuns(database, [big, small]);
    await database.db.execute(sql`analyze`);
    const rows = (await database.db.execute(
      sql`select count(*)::int as n from test_daily_costs where project_id = ${big}::uuid`,
    )) as unknown as {
      rows: { n: number }[];
    };
    const costRows = rows.rows[0]!.n;

    const fetchJson = statementCountingApp(database, "flakiness-cost-bench-cursor-secret-0123");
    const today = utcDay(new Date());
    const window90 = `from=${addDays(today, -(DAYS - 1))}&to=${today}`;
    const path90 = (id: string) => `/api/v1/projects/${id}/flakiness_cost?${window90}`;
    // The first request also warms the API key (its lookup is cached for the process).
    const costliest = ((await fetchJson(path90(big), apiKey)).body.top_tests as { test_id: string }[])[0]!.test_id;
    const testPath = `/api/v1/tests/${costliest}/flakiness_cost?${window90}`;
    const counted = [
      { label: `GET /projects/:id/flakiness_cost?from=…&to=… (${DAYS} days, 20,000 runs)`, ...(await fetchJson(path90(big), apiKey)) },
      {
        label: "GET /projects/:id/flakiness_cost (default: 30 days)",
        ...(await fetchJson(`/api/v1/projects/${big}/flakiness_cost`, apiKey)),
      },
      { label: `GET /tests/:id/flakiness_cost?from=…&to=… (${DAYS} days, the costliest test)`, ...(await fetchJson(testPath, apiKey)) },
    ];
    const totals = counted[0]!.body.totals as { total_ms: number; runs_count: number; reruns_count: number };
    log(`statements: ${counted.map((c) => c.statements).join(", ")}; ${totals.runs_count} runs, ${totals.total_ms} ms in the window`);

    for (let i = 0; i < WARMUP; i++) {
      await fetchJson(path90(big), apiKey);
      await fetchJson(path90(small), apiKey);
    }
    const onBig: number[] = [];
    const onSmall: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const id of round % 2 === 0 ? [big, small] : [small, big]) {
        const start = performance.now();
        await fetchJson(path90(id), apiKey);
        (id === big ? onBig : onSmall).push(performance.now() - start);
      }
    }
    const ratio = median(onBig) / median(onSmall);
    const statementsMet = counted.every((c) => c.statements <= STATEMENTS_TARGET);
    const body = [
      "## The cost of flakiness endpoint (`npm run bench:flakiness-cost`)",
      "",
      `Run on ${today}, ${postgres} on 127.0.0.1, Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, load average at start ${load}.`,
      "",
      `A project with ${BIG.runs.toLocaleString("en-US")} runs over the last ${DAYS} days (${totals.runs_count.toLocaleString("en-US")} in the window), ${BIG.tests.toLocaleString("en-US")} tests of which ${BIG.tests / 20} flaky, and ${costRows.toLocaleString("en-US")} rows of tests' daily cost (each flaky test on a third of the days), against one with the same tests and cost rows and ${SMALL.runs} runs; the rollups from the migration's backfill plus the seeded cost, a few runs processed for real. In process (\`app.fetch\`, body read, warm API key): statements counted on the node-postgres pool; server time of the ${DAYS}-day request, ${ROUNDS} rounds alternating A B B A after ${WARMUP} warm-up rounds, medians. The request reads ${DAYS} rollup rows and aggregates the window's cost rows for the top tests: its time follows the costly tests × days, not the runs.`,
      "",
      "| Request | Statements (target ≤ 3) |",
      "|---|---|",
      ...counted.map((c) => `| \`${c.label}\` | ${c.statements} ${verdict(c.statements <= STATEMENTS_TARGET)} |`),
      "",
      `| ${DAYS}-day window | p50 | Ratio (target ≤ ${RATIO_TARGET}) |`,
      "|---|---|---|",
      `| 20,000 runs, ${costRows.toLocaleString("en-US")} cost rows | ${median(onBig).toFixed(2)} ms | ${ratio.toFixed(2)} ${verdict(ratio <= RATIO_TARGET)} |`,
      `| ${SMALL.runs} runs, the same cost rows | ${median(onSmall).toFixed(2)} ms | |`,
    ].join("\n");
    console.log(body);
    recordBenchmark({
      name: "flakiness-cost",
      command: "npm run bench:flakiness-cost",
      measures: "The cost of flakiness endpoint over 90 days of a 20,000-run project: statements, and p50 against a 100-run project",
      figure: `statements ${counted.map((c) => c.statements).join(", ")} ${verdict(statementsMet)}; 90 days p50 ${median(onBig).toFixed(2)} ms, ${ratio.toFixed(2)}× with 100 runs ${verdict(ratio <= RATIO_TARGET)}`,
      target: `≤ ${STATEMENTS_TARGET} statements; p50 with 20,000 runs ≤ ${RATIO_TARGET}× with 100 runs (same cost rows)`,
      report: body,
    });
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
