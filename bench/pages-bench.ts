/**
 * `npm run bench:pages`: the project pages' server time does not grow with the project's history.
 * A project with 20,000 runs (over the last 60 days) and 20,000 tests against one with 100 runs
 * and 100 tests, same organization, same signed-in admin: the overview (`/projects/:id`), the tests
 * table (`/projects/:id/tests`, all and flaky) and the settings page, each pair measured alternately (A B B A…) in one process on the local Postgres
 * server, one database made for the run and dropped after it. Server time is the app's own
 * (`app.fetch` in process, the body read), so the network and a browser are left out. SQL
 * statements are counted per page at the driver (every `query` of node-postgres' clients). The report
 * is recorded in BENCHMARKS.md and bench/history/pages.md (bench/report.ts; BENCH_NO_RECORD=1 for a
 * trial run).
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import pg from "pg";
import { createApp } from "../src/app";
import { members, users } from "../src/db/schema";
import { eq, sql } from "drizzle-orm";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { createNodeBackground } from "../src/node/background";
import { createProject } from "../src/services/tenancy/projects";
import { completeTestRun, recordTestRunArrival } from "../src/services/runs/test-runs";
import { withBenchDatabase, benchRequestDeps } from "./common";
import { recordBenchmark, currentCommit } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const BIG = { runs: Number(process.env.BENCH_PAGES_RUNS ?? 20_000), tests: Number(process.env.BENCH_PAGES_TESTS ?? 20_000) };
const SMALL = { runs: 100, tests: 100 };
const ROUNDS = Number(process.env.BENCH_PAGES_ROUNDS ?? 201);
const WARMUP = 20;
const WEB_APP_URL = "https://app.example.com";
const log = (message: string) => console.error(`[pages-bench] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${value.toFixed(2)} ms`;
const quietLogger: Logger = {
  info: () => {},
  error: (message, fields) => console.error(JSON.stringify({ level: "error", message, ...fields })),
};

/** Statements sent by any node-postgres client of this process while counting is on. */
let counting = false;
let statements = 0;
const originalQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  if (counting) statements++;
  return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pg.Client.prototype.query;

/** Runs over the last 60 days (newest now), results and durations varied, tests as run processing leaves them, and alert events. */
async function seedHistory(client: pg.Client, projectId: string, size: { runs: number; tests: number }) {
  await client.query(
    `insert into test_runs (project_id, number, status, result, branch, commit_sha, created_at, processed_at, duration_ms, tests_count, passed_count, failed_count, errored_count, skipped_count)
     select $1::uuid, i, 'processed',
            (case when i % 37 = 0 then 'tests_errored' when i % 10 = 0 then 'tests_failed' else 'tests_passed' end)::run_result,
            'main', md5(i::text), now() - (($2::int - i) * (interval '60 days' / $2::int)), now() - (($2::int - i) * (interval '60 days' / $2::int)),
            60000 + (i * 7919) % 240000, 4000, 3950 - (i % 10 = 0)::int - (i % 37 = 0)::int, (i % 10 = 0)::int, (i % 37 = 0)::int, 50
     from generate_series(1, $2::int) as i`,
    [projectId, size.runs],
  );
  await client.query(
    `insert into tests (id, project_id, name, classname, suite, health, executions_count, last_status, last_executed_at, first_seen_at, last_run_number, window_size, failure_rate, flip_rate, impact, duration_p50_ms, duration_p95_ms)
     select md5($1::text || i)::uuid, $1::uuid, 'test_' || i, 'com.acme.Module' || (i % 200) || 'Test', 'module-' || (i % 200),
            (case when i % 20 = 0 then 'flaky' when i % 100 = 1 then 'broken' else 'healthy' end)::test_health,
            1000, 'passed', now(), now() - interval '60 days', $3::int, 50, (i % 51) / 50.0, (i % 37) / 49.0, i % 51, 10 + i % 900, 20 + i % 1800
     from generate_series(1, $2::int) as i`,
    [projectId, size.tests, size.runs],
  );
  await client.query(
    `update projects set test_runs_count = $2::int, tests_count = $3::int, flaky_tests_count = $3::int / 20, broken_tests_count = $3::int / 100,
       latest_result = 'tests_passed', last_test_run_at = now() where id = $1::uuid`,
    [projectId, size.runs, size.tests],
  );
  // One alert event for every 20th run on two of the project's alerts: some open, a long history.
  await client.query(
    `insert into alert_events (alert_id, test_run_id, triggered_at, metadata)
     select a.id, r.id, r.created_at, '{}'::jsonb from test_runs r
     join alerts a on a.project_id = r.project_id and a.alert_type in ('test_flakiness', 'failure_rate_spike')
     where r.project_id = $1::uuid and r.number % 20 = 0`,
    [projectId],
  );
  await client.query(
    `update alerts a set events_count = (select count(*) from alert_events e where e.alert_id = a.id) where a.project_id = $1::uuid`,
    [projectId],
  );
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(1);
  await withBenchDatabase(SERVER_URL, "cia_pages_bench", async (database, postgres) => {
    const secrets = new SecretKeyring({ current: generateSecretsKey() });
    const deps = { db: database.db, clock: systemClock, webAppUrl: WEB_APP_URL, secrets, logger: quietLogger };
    const requestDeps = benchRequestDeps(
      database.db,
      createNodeBackground({ db: database.db, clock: systemClock, logger: quietLogger, webAppUrl: WEB_APP_URL, secrets }).queue,
      quietLogger,
    );
    const app = createApp({
      cursorSecret: "pages-bench-cursor-secret-0123456789",
      publicBaseUrl: "https://api.example.com",
      webAppUrl: WEB_APP_URL,
      secrets,
    });
    const fetchPage = async (path: string, cookie: string) => {
      const response = await app.fetch(new Request(`${WEB_APP_URL}${path}`, { headers: { cookie } }), requestDeps);
      const text = await response.text();
      if (response.status !== 200) throw new Error(`${path}: ${response.status} ${text.slice(0, 300)}`);
      return text;
    };

    // The admin signs up through the page (the organization with them), as a person would.
    const email = "bench-admin@example.com";
    const signUp = await app.fetch(
      new Request(`${WEB_APP_URL}/sign-up`, {
        method: "POST",
        headers: { origin: WEB_APP_URL, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ name: "Bench Admin", email, password: "bench password 123", organization: "Bench" }).toString(),
      }),
      requestDeps,
    );
    if (signUp.status !== 303) throw new Error(`sign-up: ${signUp.status}`);
    const cookie = signUp.headers
      .getSetCookie()
      .map((line) => line.split(";")[0])
      .join("; ");
    const [membership] = await database.db
      .select({ organizationId: members.organizationId })
      .from(members)
      .innerJoin(users, eq(users.id, members.userId))
      .where(eq(users.email, email));
    const organizationId = membership!.organizationId;

    const big = (await createProject(deps, organizationId, { name: "big history" })).project.id as string;
    const small = (await createProject(deps, organizationId, { name: "small history" })).project.id as string;
    log(`seeding ${BIG.runs} runs and ${BIG.tests} tests, and ${SMALL.runs} runs and ${SMALL.tests} tests`);
    const dbName = String(
      ((await database.db.execute(sql`select current_database() as name`)) as unknown as { rows: { name: string }[] }).rows[0]!.name,
    );
    const url = new URL(SERVER_URL);
    url.pathname = `/${dbName}`;
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      await seedHistory(client, big, BIG);
      await seedHistory(client, small, SMALL);
      // The rollups of the seeded runs, by the migration's own backfill (what processing keeps: test/services/shared/daily-rollups.test.ts).
      const migration = readFileSync(new URL("../drizzle/0019_project_pages.sql", import.meta.url), "utf8");
      for (const part of migration
        .split("--> statement-breakpoint")
        .filter((text) => text.includes("WITH runs AS") || text.includes('UPDATE "project_daily_rollups"'))) {
        await client.query(part);
      }
      await client.query("analyze");
    } finally {
      await client.end();
    }
    // A few runs through run processing too, so today's rows are the ones processing keeps.
    for (const projectId of [big, small]) {
      for (let i = 0; i < 3; i++) {
        const { run } = await recordTestRunArrival(deps, projectId, { branch: "main", commitSha: `live${i}` });
        await completeTestRun(deps, run.id, {
          durationMs: 90_000 + i,
          suites: [{ name: "s", cases: [{ name: `t${i}`, status: "passed", durationMs: 5 }] }],
        });
      }
    }

    const pages = [
      { name: "overview", label: "/projects/:id", path: (id: string) => `/projects/${id}` },
      { name: "tests", label: "/projects/:id/tests (by impact, the first page)", path: (id: string) => `/projects/${id}/tests` },
      { name: "flaky tests", label: "/projects/:id/tests?health=flaky", path: (id: string) => `/projects/${id}/tests?health=flaky` },
      { name: "settings", label: "/projects/:id/settings", path: (id: string) => `/projects/${id}/settings` },
    ];
    const results: {
      name: string;
      label: string;
      big: number;
      small: number;
      ratio: number;
      statementsBig: number;
      statementsSmall: number;
    }[] = [];
    for (const page of pages) {
      const count = async (id: string) => {
        statements = 0;
        counting = true;
        await fetchPage(page.path(id), cookie);
        counting = false;
        return statements;
      };
      const statementsBig = await count(big);
      const statementsSmall = await count(small);
      for (let i = 0; i < WARMUP; i++) {
        await fetchPage(page.path(big), cookie);
        await fetchPage(page.path(small), cookie);
      }
      const onBig: number[] = [];
      const onSmall: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? [big, small] : [small, big];
        for (const id of order) {
          const start = performance.now();
          await fetchPage(page.path(id), cookie);
          (id === big ? onBig : onSmall).push(performance.now() - start);
        }
      }
      const result = {
        name: page.name,
        label: page.label,
        big: median(onBig),
        small: median(onSmall),
        ratio: median(onBig) / median(onSmall),
        statementsBig,
        statementsSmall,
      };
      results.push(result);
      log(
        `${page.name}: ${ms(result.big)} vs ${ms(result.small)} (×${result.ratio.toFixed(2)}), ${statementsBig} / ${statementsSmall} statements`,
      );
    }

    const commit = currentCommit();
    const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
    const body = [
      "## Project pages (`npm run bench:pages`)",
      "",
      `Run ${new Date().toISOString().slice(0, 10)}, commit ${commit}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, load ${load}, Node ${process.version}, ${postgres}.`,
      "",
      `Server time (the app in process, \`app.fetch\` with the body read) of a signed-in admin's page for a project with ${BIG.runs.toLocaleString("en-US")} runs over 60 days, ${BIG.tests.toLocaleString("en-US")} tests and an alert event every 20 runs, against a project with ${SMALL.runs} runs and ${SMALL.tests} tests; ${ROUNDS} rounds alternating A B B A after ${WARMUP} warm-up rounds, medians. The pages read the daily rollups and the project's row kept by run processing (src/services/shared/daily-rollups.ts; seeded runs got theirs from the migration's backfill, which a test holds equal to what processing keeps). Statements are every query sent by node-postgres for one page, the session's lookup (better-auth) included.`,
      "",
      "| Page | p50, 20,000 runs | p50, 100 runs | Ratio (target ≤ 1.5) | Statements (target ≤ 5) |",
      "|---|---|---|---|---|",
      ...results.map(
        (r) =>
          `| \`${r.label}\` | ${ms(r.big)} | ${ms(r.small)} | ${r.ratio.toFixed(2)} ${verdict(r.ratio <= 1.5)} | ${r.statementsBig} (${r.statementsSmall} for the small project) ${verdict(r.statementsBig <= 5)} |`,
      ),
    ].join("\n");
    console.log(body);
    const ratios = results.map((r) => r.ratio);
    const pageStatements = results.map((r) => r.statementsBig);
    const span = (values: number[], digits: number) => {
      const [low, high] = [Math.min(...values).toFixed(digits), Math.max(...values).toFixed(digits)];
      return low === high ? low : `${low}–${high}`;
    };
    recordBenchmark({
      name: "pages",
      command: "npm run bench:pages",
      measures: "Project pages' server time, 20,000 runs vs 100, and statements per page",
      figure: `ratio ${span(ratios, 2)} ${verdict(ratios.every((r) => r <= 1.5))}; ${span(pageStatements, 0)} statements a page ${verdict(pageStatements.every((n) => n <= 5))}`,
      target: "ratio ≤ 1.5; ≤ 5 statements",
      report: body,
    });
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
