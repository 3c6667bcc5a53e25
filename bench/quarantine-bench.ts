/**
 * `npm run bench:quarantine`: what CI's quarantine list costs the server. A project with 1,000
 * quarantined tests (among 2,000); `GET /uploads/v1/quarantined_tests` with the upload token,
 * in process (`app.fetch`, so the time is the server's: token admission, the ETag query and the
 * list), the full list and the 304 of an unchanged list alternated, medians. The statements each
 * answer sends are counted on the connection pool (node-postgres), so "a 304 costs one small
 * indexed query, not the list" is measured, not assumed. Local Postgres; records its report in
 * BENCHMARKS.md and bench/history/quarantine.md (bench/report.ts; BENCH_NO_RECORD=1 for a trial run).
 */
import os from "node:os";
import { sql } from "drizzle-orm";
import { createApp } from "../src/app";
import { InProcessRunQueue } from "../src/node/in-process-run-queue";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { type Report, completeTestRun, recordTestRunArrival } from "../src/services/runs/test-runs";
import { withBenchDatabase, benchRequestDeps } from "./common";
import { recordBenchmark } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const TESTS = 2_000;
const QUARANTINED = 1_000;
const ROUNDS = 301;
const quietLogger: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };
const log = (message: string) => console.error(`[quarantine-bench] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function report(): Report {
  return {
    suites: [
      {
        name: "suite",
        cases: Array.from({ length: TESTS }, (_, i) => ({
          name: `test_${i}`,
          classname: `com.acme.Module${i % 40}Test`,
          status: "passed" as const,
          durationMs: 5,
        })),
      },
    ],
  };
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(1);
  await withBenchDatabase(SERVER_URL, "cia_quarantine_bench", async (database, postgres) => {
    const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com", logger: quietLogger };
    const org = await createOrganization(deps, { name: "Bench" });
    const { project, upload_token: token } = await createProject(deps, org.organization.id, { name: "Bench" });
    const { run } = await recordTestRunArrival(deps, project.id, { branch: "main" });
    await completeTestRun(deps, run.id, report());
    // Half the tests quarantined for 30 days, as the API would leave them (one version bump).
    await database.db.execute(sql`
      update tests set quarantine_reason = 'flaky on CI', quarantine_owner = '@acme/team', quarantine_source = 'manual',
        quarantine_created_at = now(), quarantine_expires_at = now() + interval '30 days'
      where project_id = ${project.id} and id in (select id from tests where project_id = ${project.id} order by id limit ${QUARANTINED})`);
    await database.db.execute(sql`update projects set quarantine_version = quarantine_version + 1 where id = ${project.id}`);
    await database.db.execute(sql`analyze tests`);

    const app = createApp({
      cursorSecret: "quarantine-bench-cursor-secret",
      publicBaseUrl: "https://api.example.com",
      webAppUrl: deps.webAppUrl,
      secrets: new SecretKeyring({ current: generateSecretsKey() }),
    });
    const requestDeps = benchRequestDeps(database.db, new InProcessRunQueue(async () => {}, { logger: quietLogger }), quietLogger);
    // Statements sent through the pool while one request is answered.
    let statements = 0;
    // Drizzle's node-postgres database sends statements outside transactions through its pool's query.
    const pool = (database.db as unknown as { $client?: { query: (...args: unknown[]) => unknown } }).$client;
    if (pool) {
      const query = pool.query.bind(pool);
      pool.query = (...args: unknown[]) => {
        statements++;
        return query(...args);
      };
    }
    const request = async (etag?: string) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (etag) headers["if-none-match"] = etag;
      const before = statements;
      const start = performance.now();
      const res = await app.fetch(new Request("http://bench/uploads/v1/quarantined_tests", { headers }), requestDeps);
      const body = await res.text();
      return {
        ms: performance.now() - start,
        status: res.status,
        etag: res.headers.get("etag") ?? "",
        items: body ? (JSON.parse(body).data as unknown[]).length : 0,
        statements: statements - before,
      };
    };

    const first = await request();
    if (first.status !== 200 || first.items !== QUARANTINED) throw new Error(`unexpected list: ${first.status}, ${first.items} items`);
    for (let i = 0; i < 20; i++) await request(i % 2 ? first.etag : undefined);
    const full: number[] = [];
    const notModified: number[] = [];
    let fullStatements = 0;
    let notModifiedStatements = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const a = await request();
      const b = await request(first.etag);
      if (a.status !== 200 || b.status !== 304) throw new Error(`unexpected statuses ${a.status} / ${b.status}`);
      full.push(a.ms);
      notModified.push(b.ms);
      fullStatements = a.statements;
      notModifiedStatements = b.statements;
    }
    const fullP50 = median(full);
    const notModifiedP50 = median(notModified);
    log(
      `full list p50 ${fullP50.toFixed(2)} ms (${fullStatements} statements), 304 p50 ${notModifiedP50.toFixed(2)} ms (${notModifiedStatements} statements)`,
    );

    const counted = pool ? "" : " (statements not counted: the database has no pool)";
    const body = [
      "## The CI quarantine list (`npm run bench:quarantine`)",
      "",
      `Run on ${new Date().toISOString().slice(0, 10)}, ${postgres} on 127.0.0.1, Node ${process.version}, load average at start ${load}. A project with ${TESTS.toLocaleString("en-US")} tests, ${QUARANTINED.toLocaleString("en-US")} of them quarantined; \`GET /uploads/v1/quarantined_tests\` with the upload token through \`app.fetch\` in process (server time: token admission, the ETag query, the list and its JSON), ${ROUNDS} rounds of the full list then the 304 of the same tag, after 20 warm-ups; medians. Statements counted on the connection pool${counted}.`,
      "",
      "| Measure | Value | Target |",
      "|---|---:|---|",
      `| Full list (${QUARANTINED.toLocaleString("en-US")} items), server time p50 | ${fullP50.toFixed(2)} ms | ≤ 20 ms: ${fullP50 <= 20 ? "PASS" : "FAIL"} |`,
      `| 304 (\`If-None-Match\` of the current tag), server time p50 | ${notModifiedP50.toFixed(2)} ms | |`,
      `| Statements per full list / per 304 | ${fullStatements} / ${notModifiedStatements} | 304: one small indexed query besides admission |`,
      "",
    ].join("\n");
    console.log(body);
    recordBenchmark({
      name: "quarantine",
      command: "npm run bench:quarantine",
      measures: "The CI quarantine list (1,000 quarantined of 2,000 tests): full list and 304, server time",
      figure: `full list p50 ${fullP50.toFixed(2)} ms ${fullP50 <= 20 ? "PASS" : "FAIL"}; 304 p50 ${notModifiedP50.toFixed(2)} ms; statements ${fullStatements} / ${notModifiedStatements}`,
      target: "full list ≤ 20 ms",
      report: body,
    });
  });
}

void main();
