/**
 * `npm run bench:etags`: what a conditional GET saves. An organization with 100 projects;
 * `GET /api/v1/projects` (the first page, 25 projects) answered 200, against the same request
 * with `If-None-Match` of the current tag answered 304, under autocannon at 50 connections
 * against our app over HTTP (bench/servers.ts in a child process, real Postgres), rounds in
 * A B B A order. The statements each answer sends are counted on the connection pool in process
 * first, so "a 304 costs no list query" is measured, not assumed. Then what keeping the data
 * version costs writes: processing a 10,000-case JUnit run (bench/junit-generator.ts, as
 * `bench:upload`) with the data-version triggers enabled and disabled, alternated, medians.
 * Records its report in BENCHMARKS.md and bench/history/etags.md (bench/report.ts).
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_DURATION_SECONDS
 * (10 measured seconds per variant), BENCH_ROUNDS (2), BENCH_WARMUP_SECONDS (2), BENCH_CONNECTIONS (50),
 * BENCH_PROCESSING_ROUNDS (5), BENCH_TOGGLE_TABLES (comma-separated tables whose data-version
 * triggers are toggled; all by default: to find which one costs what), BENCH_NO_RECORD=1 /
 * BENCH_OUTPUT=<file> (bench/report.ts).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon, { type Result } from "autocannon";
import { createApp } from "../src/app";
import { InProcessRunQueue } from "../src/node/in-process-run-queue";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { processTestRun } from "../src/services/runs/run-processing";
import { recordTestRunArrival } from "../src/services/runs/test-runs";
import { sql } from "drizzle-orm";
import { generateJUnit } from "./junit-generator";
import { withBenchDatabase, benchRequestDeps } from "./common";
import { recordBenchmark } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DURATION = positive("BENCH_DURATION_SECONDS", 10);
const WARMUP = positive("BENCH_WARMUP_SECONDS", 2);
const ROUNDS = Math.round(positive("BENCH_ROUNDS", 2));
const CONNECTIONS = Math.round(positive("BENCH_CONNECTIONS", 50));
const PROJECTS = 100;
const CASES = 10_000;
const PROCESSING_ROUNDS = Math.round(positive("BENCH_PROCESSING_ROUNDS", 5));
/** The triggers of drizzle/0020_data_versions.sql, as `table: trigger names`. */
const DATA_VERSION_TRIGGERS: Record<string, string[]> = {
  organization_data_changes: ["organization_data_changes_bump"],
  ...Object.fromEntries(
    ["api_keys", "projects", "alerts", "test_runs", "tests", "alert_events"].map((table) => [
      table,
      ["insert", "update", "delete"].map((event) => `${table}_data_version_${event}`),
    ]),
  ),
};
DATA_VERSION_TRIGGERS.alerts!.push("alerts_deadlines_insert", "alerts_deadlines_update");
DATA_VERSION_TRIGGERS.tests!.push("tests_deadlines_insert", "tests_deadlines_update");
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const CURSOR_SECRET = "etags-bench-cursor-secret-0123456789";
/** A 304 must cost less than the 200 it saves: more throughput, not merely as much. */
const TARGET = 1.0;
const quietLogger: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };
const log = (message: string) => console.error(`[etags-bench] ${message}`);

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return value;
}

function commit(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const dirty = git("status", "--porcelain", "--", "src", "drizzle") !== "";
    return `${git("rev-parse", "--short", "HEAD")}${dirty ? " plus uncommitted changes under src/ or drizzle/" : ""}`;
  } catch {
    return "unknown";
  }
}

function cannon(url: string, headers: Record<string, string>, seconds: number, expectStatus: number): Promise<Result> {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections: CONNECTIONS, duration: seconds, pipelining: 1, timeout: 30, headers }, (error, result) => {
      if (error) return reject(error);
      const wrong = result.non2xx - (expectStatus === 304 ? result.requests.total - result.errors : 0);
      if (result.errors > 0 || (expectStatus === 200 && result.non2xx > 0) || wrong > 0) {
        return reject(
          new Error(`${url} (expecting ${expectStatus}): ${result.errors} errors, ${result.non2xx} non-2xx of ${result.requests.total}`),
        );
      }
      resolve(result);
    });
  });
}

function startServers(env: Record<string, string>): Promise<{ child: ChildProcess; ours: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/servers.ts")], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const timer = setTimeout(() => reject(new Error("bench servers did not start within 60 s")), 60_000);
    child.once("message", (message: { ours: number }) => {
      clearTimeout(timer);
      resolve({ child, ours: message.ours });
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`bench servers exited with ${code}`));
    });
  });
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(2);
  await withBenchDatabase(SERVER_URL, "cia_etags_bench", async (database, postgres, databaseUrl) => {
    const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com", logger: quietLogger };
    const org = await createOrganization(deps, { name: "Bench" });
    for (let i = 0; i < PROJECTS; i++)
      await createProject(deps, org.organization.id, { name: `project-${i}`, description: `Project number ${i}` });
    const apiKey = org.api_key.secret;
    const auth = { authorization: `Bearer ${apiKey}` };

    // 1. Statements per answer, counted on the pool in process.
    const app = createApp({
      cursorSecret: CURSOR_SECRET,
      publicBaseUrl: "https://api.example.com",
      webAppUrl: deps.webAppUrl,
      secrets: new SecretKeyring({ current: generateSecretsKey() }),
    });
    const requestDeps = benchRequestDeps(database.db, new InProcessRunQueue(async () => {}, { logger: quietLogger }), quietLogger);
    let statements = 0;
    const pool = (database.db as unknown as { $client?: { query: (...args: unknown[]) => unknown } }).$client;
    if (!pool) throw new Error("the benchmark needs a node-postgres pool to count statements");
    const query = pool.query.bind(pool);
    pool.query = (...args: unknown[]) => {
      statements++;
      return query(...args);
    };
    const counted = async (headers: Record<string, string>) => {
      const before = statements;
      const res = await app.fetch(new Request("http://bench/api/v1/projects", { headers: { ...auth, ...headers } }), requestDeps);
      await res.arrayBuffer();
      return { status: res.status, etag: res.headers.get("etag") ?? "", statements: statements - before };
    };
    await counted({}); // warm key: admission from the key-id cache and the in-memory counter
    const full = await counted({});
    const notModified = await counted({ "if-none-match": full.etag });
    if (full.status !== 200 || notModified.status !== 304) throw new Error(`unexpected statuses ${full.status} / ${notModified.status}`);
    log(`statements: 200 → ${full.statements}, 304 → ${notModified.statements}`);

    // 2. Throughput over HTTP at CONNECTIONS connections.
    const { child, ours } = await startServers({
      BENCH_DB_URL: databaseUrl,
      BENCH_CURSOR_SECRET: CURSOR_SECRET,
      BENCH_ORG_ID: org.organization.id,
    });
    try {
      const target = `http://127.0.0.1:${ours}/api/v1/projects`;
      const etag = (await fetch(target, { headers: auth })).headers.get("etag")!;
      const variants = [
        { label: "200 (full first page, 25 projects)", headers: auth, status: 200 },
        { label: "304 (If-None-Match of the current tag)", headers: { ...auth, "if-none-match": etag }, status: 304 },
      ];
      for (const v of variants) await cannon(target, v.headers, WARMUP, v.status);
      const totals = new Map(variants.map((v) => [v.label, { requests: 0, seconds: 0, p50: [] as number[], p99: [] as number[] }]));
      const slice = DURATION / ROUNDS;
      for (let round = 0; round < ROUNDS; round++) {
        for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
          const result = await cannon(target, v.headers, slice, v.status);
          const t = totals.get(v.label)!;
          t.requests += result.requests.total;
          t.seconds += result.duration;
          t.p50.push(result.latency.p50);
          t.p99.push(result.latency.p99);
          log(`${v.label}: ${(result.requests.total / result.duration).toFixed(0)} req/s`);
        }
      }
      const rps = (label: string) => totals.get(label)!.requests / totals.get(label)!.seconds;
      const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
      const [ok, nm] = variants.map((v) => v.label) as [string, string];
      const ratio = rps(nm) / rps(ok);

      // 3. What the triggers cost run processing: the same 10,000-case file, triggers on and off.
      const xml = generateJUnit({ cases: CASES, seed: 42 });
      const { project } = await createProject(deps, org.organization.id, { name: "processing" });
      const setTriggers = async (enabled: boolean) => {
        for (const [table, names] of Object.entries(DATA_VERSION_TRIGGERS).filter(
          ([table]) => !process.env.BENCH_TOGGLE_TABLES || process.env.BENCH_TOGGLE_TABLES.split(",").includes(table),
        )) {
          for (const name of names)
            await database.db.execute(sql.raw(`alter table ${table} ${enabled ? "enable" : "disable"} trigger ${name}`));
        }
      };
      const processOnce = async () => {
        const { run } = await recordTestRunArrival(
          deps,
          project.id,
          { branch: "main", commitSha: `c${Math.random().toString(16).slice(2)}` },
          { format: "junit_xml", content: xml },
        );
        const start = performance.now();
        const outcome = await processTestRun(deps, run.id, { finalAttempt: true, payload: { format: "junit_xml", content: xml } });
        if (outcome !== "processed") throw new Error(`processing ended ${outcome}`);
        return performance.now() - start;
      };
      await processOnce(); // the project's tests exist from now on, as in a CI project
      await processOnce();
      const withTriggers: number[] = [];
      const withoutTriggers: number[] = [];
      try {
        for (let round = 0; round < PROCESSING_ROUNDS; round++) {
          for (const enabled of round % 2 === 0 ? [true, false] : [false, true]) {
            await setTriggers(enabled);
            (enabled ? withTriggers : withoutTriggers).push(await processOnce());
          }
        }
      } finally {
        await setTriggers(true);
      }
      const on = median(withTriggers);
      const off = median(withoutTriggers);
      log(`processing ${CASES} cases: ${on.toFixed(0)} ms with the triggers, ${off.toFixed(0)} ms without`);
      const body = [
        "## Conditional GETs (`npm run bench:etags`)",
        "",
        `Run on ${new Date().toISOString().slice(0, 10)} at commit ${commit()}, ${postgres} on 127.0.0.1, Node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "unknown"}), load average at start ${load}. An organization with ${PROJECTS} projects; \`GET /api/v1/projects\` (first page, 25 projects) with a warm API key, served by bench/servers.ts over HTTP; autocannon at ${CONNECTIONS} connections, ${WARMUP} s warm-up each, then ${ROUNDS} rounds in A B B A order, ${DURATION} s measured per variant. Statements counted on the connection pool, in process.`,
        "",
        "| Answer | Requests/s | p50 latency | p99 latency | Statements |",
        "|---|---:|---:|---:|---:|",
        `| ${ok} | ${rps(ok).toFixed(0)} | ${mean(totals.get(ok)!.p50).toFixed(1)} ms | ${mean(totals.get(ok)!.p99).toFixed(1)} ms | ${full.statements} (the list, with the data version as a column) |`,
        `| ${nm} | ${rps(nm).toFixed(0)} | ${mean(totals.get(nm)!.p50).toFixed(1)} ms | ${mean(totals.get(nm)!.p99).toFixed(1)} ms | ${notModified.statements} (the data version only, no list query) |`,
        "",
        `Target "a 304 answer costs no list query": throughput ratio 304 / 200 = **${ratio.toFixed(2)}×** (> ${TARGET.toFixed(1)}×: ${ratio > TARGET ? "PASS" : "FAIL"}); statements of a 304: ${notModified.statements} (no list query: ${notModified.statements === 1 ? "PASS" : "FAIL"}).`,
        "",
        `What keeping the data version costs writes: processing a ${CASES.toLocaleString("en-US")}-case JUnit file (\`generateJUnit({ cases: ${CASES}, seed: 42 })\`, the \`bench:upload\` file; processTestRun in process, the project's tests already known) with the data-version triggers enabled and disabled, ${PROCESSING_ROUNDS} rounds of each alternated, medians: **${on.toFixed(0)} ms** with them, ${off.toFixed(0)} ms without (${(on / off).toFixed(3)}×).`,
        "",
      ].join("\n");
      console.log(body);
      const verdict = (met: boolean) => (met ? "PASS" : "FAIL");
      recordBenchmark({
        name: "etags",
        command: "npm run bench:etags",
        measures: "Conditional GETs: 304 vs 200 throughput, and what the data version costs writes",
        figure: `304 / 200 throughput ${ratio.toFixed(2)}× ${verdict(ratio > TARGET)}; ${notModified.statements} statement${notModified.statements === 1 ? "" : "s"} per 304 ${verdict(notModified.statements === 1)}; writes ${(on / off).toFixed(3)}× with the triggers`,
        target: `304 / 200 > ${TARGET.toFixed(1)}×; no list query on a 304`,
        report: body,
      });
    } finally {
      // The child ends its pool before the database is dropped.
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
