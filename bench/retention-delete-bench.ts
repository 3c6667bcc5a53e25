/**
 * `npm run bench:retention-delete`: what the retention sweep costs the uploads while it deletes
 * (issue 32: "deleting 90 days of a 20,000-run project's cases does not raise the upload's 202 p99
 * by more than 20 % while it runs").
 *
 * A project of 20,000 processed runs that arrived 91 to 180 days ago, CASES_PER_RUN cases each
 * (seeded by SQL, their days rolled up), all past the 90-day retention. Uploads of a small JUnit report to the same
 * project (its row is the one the cases' quota trigger updates) go over HTTP to the Node server's
 * app, UPLOAD_CONNECTIONS at a time; the queue takes the run and does nothing (only the 202 is
 * measured). Phases alternate (A B B A …): without the sweep, and with the sweep deleting in a loop
 * (sweepRetention as the timer runs it: batches of 500 rows, each followed by a pause of five
 * times its duration), PHASE_UPLOADS uploads per phase after a
 * warm-up; the p99 of each condition's 202s over all its phases, and their ratio. Also the cases
 * the sweep deleted per second while it ran.
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_DELETE_CASES_PER_RUN
 * (50), BENCH_DELETE_PHASES (12), BENCH_DELETE_PHASE_UPLOADS (200), BENCH_NO_RECORD=1 /
 * BENCH_OUTPUT=<file> (bench/report.ts).
 */
import os from "node:os";
import { serve } from "@hono/node-server";
import { sql } from "drizzle-orm";
import { createApp } from "../src/app";
import { rowsOf } from "../src/db/rows";
import type { Database } from "../src/db/types";
import type { RunQueue } from "../src/ingest/run-queue";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { sweepRetention } from "../src/services/runs/retention-sweep";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { withBenchDatabase, benchRequestDeps } from "./common";
import { recordBenchmark } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const RUNS = 20_000;
const CASES_PER_RUN = Number(process.env.BENCH_DELETE_CASES_PER_RUN ?? 50);
const PHASES = Number(process.env.BENCH_DELETE_PHASES ?? 12);
const PHASE_UPLOADS = Number(process.env.BENCH_DELETE_PHASE_UPLOADS ?? 200);
const UPLOAD_CONNECTIONS = 2;
const TARGET_RATIO = 1.2;
const quietLogger: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };
const log = (message: string) => console.error(`[retention-delete-bench] ${message}`);
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

const REPORT = `<testsuite name="upload" tests="20">${Array.from({ length: 20 }, (_, i) => `<testcase classname="Upload" name="case ${i}" time="0.01"/>`).join("")}</testsuite>`;

/** 20,000 processed runs from 180 to 91 days ago, each with its suite and CASES_PER_RUN cases. */
async function seedOldRuns(db: Database, projectId: string): Promise<void> {
  await db.execute(sql`
    insert into test_runs (project_id, number, status, result, branch, created_at, processed_at, duration_ms, tests_count, passed_count, suites_count)
    select ${projectId}::uuid, i, 'processed', 'tests_passed', 'main', now() - interval '180 days' + (i * interval '89 days' / ${RUNS}::int),
      now() - interval '180 days' + (i * interval '89 days' / ${RUNS}::int), 1000, ${CASES_PER_RUN}::int, ${CASES_PER_RUN}::int, 1
    from generate_series(1, ${RUNS}::int) i`);
  await db.execute(sql`
    insert into test_suites (test_run_id, number, name, tests_count, passed_count)
    select id, 1, 'suite', ${CASES_PER_RUN}::int, ${CASES_PER_RUN}::int from test_runs where project_id = ${projectId}::uuid`);
  await db.execute(sql`
    insert into test_cases (test_run_id, project_id, suite_number, name, classname, status, duration_ms)
    select r.id, r.project_id, 1, 'case ' || c, 'Old', 'passed', 10
    from test_runs r, generate_series(1, ${CASES_PER_RUN}::int) c where r.project_id = ${projectId}::uuid`);
  await db.execute(sql`
    update projects set test_runs_count = ${RUNS}::int, stored_cases_count = ${RUNS * CASES_PER_RUN}::bigint where id = ${projectId}::uuid`);
  // Their days rolled up already (docs/retention.md): the sweep only deletes, noting it in the project's progress row.
  await db.execute(sql`insert into test_rollup_progress (project_id, day) values (${projectId}::uuid, (now() at time zone 'UTC')::date)`);
  await db.execute(sql`analyze`);
}

async function main(): Promise<void> {
  await withBenchDatabase(SERVER_URL, "retention_delete_bench", async (database, postgres) => {
    const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com" };
    const org = await createOrganization(deps, { name: "Delete bench" });
    const { project, upload_token: token } = await createProject(deps, org.organization.id, { name: "20,000 old runs" });
    log(`seeding ${RUNS} runs × ${CASES_PER_RUN} cases`);
    await seedOldRuns(database.db, project.id as string);
    const queue: RunQueue = { send: async () => {} };
    const app = createApp({
      cursorSecret: "retention-delete-bench-cursor",
      publicBaseUrl: "https://api.example.com",
      webAppUrl: deps.webAppUrl,
      secrets: new SecretKeyring({ current: generateSecretsKey() }),
    });
    const requestDeps = benchRequestDeps(database.db, queue, quietLogger);
    let server: ReturnType<typeof serve> | undefined;
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: (request) => app.fetch(request, requestDeps), port: 0, hostname: "127.0.0.1" }, (info) => resolve(info.port));
    });
    try {
      const upload = async () => {
        const start = performance.now();
        const res = await fetch(`http://127.0.0.1:${port}/uploads/v1/test_runs?branch=main`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/xml" },
          body: REPORT,
        });
        await res.arrayBuffer();
        if (res.status !== 202) throw new Error(`upload answered ${res.status}`);
        return performance.now() - start;
      };
      const uploads = async (count: number) => {
        const times: number[] = [];
        let left = count;
        await Promise.all(
          Array.from({ length: UPLOAD_CONNECTIONS }, async () => {
            while (left-- > 0) times.push(await upload());
          }),
        );
        return times;
      };
      await uploads(100);

      // The sweep, in a loop while `sweeping`: each call its default batches (a few thousand rows each).
      let sweeping = false;
      let deleted = 0;
      let sweepMs = 0;
      const sweepDeps = { db: database.db, clock: systemClock, logger: quietLogger, retention: { days: 90, summaryDays: 400 } };
      const sweepWhile = async () => {
        while (sweeping) {
          const start = performance.now();
          const counts = await sweepRetention(sweepDeps, { maxBatches: 5 });
          sweepMs += performance.now() - start;
          deleted += counts.cases;
          if (counts.cases === 0 && counts.runsCleared === 0) throw new Error("the sweep ran out of cases to delete: seed more");
        }
      };
      const withoutSweep: number[] = [];
      const withSweep: number[] = [];
      const order = Array.from({ length: PHASES }, (_, i) => (i % 4 === 0 || i % 4 === 3 ? "A" : "B"));
      for (const [i, phase] of order.entries()) {
        if (phase === "A") withoutSweep.push(...(await uploads(PHASE_UPLOADS)));
        else {
          sweeping = true;
          const loop = sweepWhile();
          withSweep.push(...(await uploads(PHASE_UPLOADS)));
          sweeping = false;
          await loop;
        }
        log(`phase ${i + 1}/${PHASES} (${phase}): ${deleted} cases deleted so far`);
      }
      const [left] = await rowsOf<{ n: string }>(database.db.execute(sql`select count(*) as n from test_cases`));
      const p99Without = percentile(withoutSweep, 99);
      const p99With = percentile(withSweep, 99);
      const ratio = p99With / p99Without;
      const met = ratio <= TARGET_RATIO;
      const rate = deleted / (sweepMs / 1000);
      const body = [
        `# Uploads while the retention sweep deletes (${RUNS.toLocaleString("en")} runs × ${CASES_PER_RUN} cases past retention)`,
        "",
        `${postgres}; ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "unknown"}), shared; load ${os.loadavg()[0]!.toFixed(1)}.`,
        "",
        `| Condition | Uploads | 202 p50 (ms) | 202 p99 (ms) |`,
        `|---|---|---|---|`,
        `| Without the sweep | ${withoutSweep.length} | ${percentile(withoutSweep, 50).toFixed(1)} | ${p99Without.toFixed(1)} |`,
        `| While the sweep deletes | ${withSweep.length} | ${percentile(withSweep, 50).toFixed(1)} | ${p99With.toFixed(1)} |`,
        "",
        `p99 with / without: **${ratio.toFixed(2)}×**, target ≤ ${TARGET_RATIO}: ${met ? "PASS" : "FAIL"}.`,
        "",
        `Phases alternated A B B A (${PHASES} of ${PHASE_UPLOADS} uploads, ${UPLOAD_CONNECTIONS} at a time, after 100 to warm up). The sweep deleted ${deleted.toLocaleString("en")} cases while it ran (${Math.round(rate).toLocaleString("en")} a second with its pauses, batches of 500); ${Number(left!.n).toLocaleString("en")} cases left in the database.`,
      ].join("\n");
      console.log(body);
      recordBenchmark({
        name: "retention-delete",
        command: "npm run bench:retention-delete",
        measures:
          "The upload's 202 p99 while the retention sweep deletes the cases of a 20,000-run project past retention, against without it",
        figure: `p99 ${p99With.toFixed(1)} ms while deleting, ${p99Without.toFixed(1)} ms without: ${ratio.toFixed(2)}× ${met ? "PASS" : "FAIL"}; ${Math.round(rate).toLocaleString("en")} cases deleted a second`,
        target: `p99 while deleting ≤ ${TARGET_RATIO}× without`,
        report: body,
      });
    } finally {
      server?.close();
    }
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
