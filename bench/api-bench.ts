/**
 * `npm run bench:api` (also run by `npm run bench`): throughput and latency of our API against a bare
 * Hono baseline on real Postgres, and first page vs a page 50,000 rows deep. Not a test: it prints a
 * report and records it (bench/report.ts: its row of BENCHMARKS.md, bench/history/api.md), and
 * exits 0 unless something broke.
 *
 * 1. Creates a fresh database `cia_bench_<random>` on BENCH_DATABASE_URL's server, migrates it,
 *    seeds it (bench/dataset.ts) and ANALYZEs it; drops it at the end, also on failure or Ctrl-C.
 * 2. Spawns bench/servers.ts (same Node, tsx loader): our app and the bare app in one process,
 *    sharing one pg pool (PG_POOL_MAX, default 20).
 * 3. Drives load from this process with autocannon, 50 connections: for each endpoint, ours and
 *    bare back to back (a warm-up of each, then rounds in A B B A order, same time for both).
 * 4. Walks GET /alerts/:id/events 500 pages of 100 to get the cursor 50,000 rows deep, then
 *    measures first vs deep page the same way (and sequentially, one request at a time), and
 *    EXPLAINs the list queries so the report shows whether they read their keyset index in order.
 *
 * Env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres),
 *      BENCH_DURATION_SECONDS (10, measured seconds per variant), BENCH_ROUNDS (2),
 *      BENCH_WARMUP_SECONDS (2), BENCH_CONNECTIONS (50),
 *      BENCH_SEQUENTIAL_REQUESTS (300), PG_POOL_MAX (20), BENCH_STRICT=1 to exit 1 when a target is
 *      missed; BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file> (bench/report.ts).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon, { type Result } from "autocannon";
import pg from "pg";
import { systemClock } from "../src/lib/clock";
import { openDatabase } from "../src/node/database";
import { createOrganization } from "../src/services/tenancy/organizations";
import { BENCH_RATE_LIMIT } from "./common";
import { DATASET, TESTS_DATASET, countDataset, seedDataset, seedTestsProject } from "./dataset";
import { type PlanSummary, explainListQueries, keysetIndexDefinitions } from "./plans";
import { recordBenchmark } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DURATION = positive("BENCH_DURATION_SECONDS", 10);
const WARMUP = positive("BENCH_WARMUP_SECONDS", 2);
const CONNECTIONS = positive("BENCH_CONNECTIONS", 50);
const ROUNDS = Math.round(positive("BENCH_ROUNDS", 2));
const SEQUENTIAL = positive("BENCH_SEQUENTIAL_REQUESTS", 300);
const POOL_MAX = positive("PG_POOL_MAX", 20);
const DEEP_ROWS = 50_000;
const TESTS_DEEP_ROWS = 10_000;
const WALK_PAGE = 100;
const THROUGHPUT_TARGET = 0.6;
/** The tests list has its own, stricter target. */
const targetOf = (endpoint: string) => (endpoint.includes("/tests") ? 0.8 : THROUGHPUT_TARGET);
const DEEP_TARGET = 1.2;

/** The commit measured, and whether src/ or the migrations differed from it. */
function codeVersion(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const commit = git("rev-parse", "--short", "HEAD");
    const dirty = git("status", "--porcelain", "--", "src", "drizzle") !== "";
    return dirty ? `commit ${commit} plus uncommitted changes under src/ or drizzle/` : `commit ${commit}`;
  } catch {
    return "unknown (not a git checkout)";
  }
}

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return value;
}

const log = (message: string) => console.log(`[bench] ${message}`);

// ---------------------------------------------------------------------------------------------
// Measurements

type Measurement = { label: string; rps: number; p50: number; p99: number; requests: number };

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/**
 * Waits until the benchmark database has no running query. When autocannon stops, requests in
 * flight are abandoned by the client but the server still finishes them; with slow endpoints that
 * backlog would otherwise be billed to whichever variant runs next.
 */
let settleDatabase: string | null = null;
async function settle(): Promise<void> {
  if (!settleDatabase) return;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const { rows } = await admin.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where datname = $1 and state <> 'idle' and pid <> pg_backend_pid()",
      [settleDatabase],
    );
    if (rows[0]!.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the database did not become idle within 120 s after a load run");
}

/** One autocannon run; latencies are collected from the `response` events (sub-millisecond resolution). */
function cannon(url: string, headers: Record<string, string>, seconds: number): Promise<{ result: Result; latencies: number[] }> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = [];
    const instance = autocannon(
      { url, connections: CONNECTIONS, duration: seconds, pipelining: 1, timeout: 30, headers },
      (error, result) => {
        if (error) return reject(error);
        settle().then(() => resolve({ result, latencies }), reject);
      },
    );
    instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
}

type Sample = { completed: number; seconds: number; latencies: number[] };

async function sample(label: string, url: string, headers: Record<string, string>, seconds: number): Promise<Sample> {
  const { result, latencies } = await cannon(url, headers, seconds);
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0) {
    throw new Error(`${label}: ${result.errors} errors, ${result.timeouts} timeouts, non-2xx ${JSON.stringify(result.statusCodeStats)}`);
  }
  return { completed: result["2xx"], seconds: result.duration, latencies };
}

function summarize(label: string, samples: Sample[]): Measurement {
  const latencies = samples.flatMap((s) => s.latencies).sort((a, b) => a - b);
  const completed = samples.reduce((n, s) => n + s.completed, 0);
  const seconds = samples.reduce((n, s) => n + s.seconds, 0);
  const m = { label, rps: completed / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), requests: completed };
  log(
    `${label.padEnd(34)} ${m.rps.toFixed(0).padStart(6)} req/s  p50 ${m.p50.toFixed(1)} ms  p99 ${m.p99.toFixed(1)} ms  (${m.requests} requests)`,
  );
  return m;
}

/**
 * Measures two variants against each other: a warm-up of each, then ROUNDS rounds of
 * DURATION / ROUNDS seconds per variant, the order flipping every round (A B B A …), so slow
 * drifts of the shared machine's background load hit both variants alike.
 */
async function measurePair(
  a: { label: string; url: string },
  b: { label: string; url: string },
  headers: Record<string, string>,
  aFirst: boolean,
): Promise<[Measurement, Measurement]> {
  const [x, y] = aFirst ? [a, b] : [b, a];
  await cannon(x.url, headers, WARMUP);
  await cannon(y.url, headers, WARMUP);
  const samples = new Map<string, Sample[]>([
    [a.label, []],
    [b.label, []],
  ]);
  const slice = DURATION / ROUNDS;
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of round % 2 === 0 ? [x, y] : [y, x]) samples.get(v.label)!.push(await sample(v.label, v.url, headers, slice));
  }
  return [summarize(a.label, samples.get(a.label)!), summarize(b.label, samples.get(b.label)!)];
}

/** One request at a time, alternating the URLs, to see the per-request cost without queueing. */
async function sequential(urls: Record<string, string>, headers: Record<string, string>, n: number) {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(urls).map((k) => [k, []]));
  const entries = Object.entries(urls);
  for (let i = 0; i < 20; i++) for (const [, url] of entries) await (await fetch(url, { headers })).arrayBuffer();
  for (let i = 0; i < n; i++) {
    for (const [key, url] of i % 2 === 0 ? entries : [...entries].reverse()) {
      const start = performance.now();
      const response = await fetch(url, { headers });
      await response.arrayBuffer();
      const elapsed = performance.now() - start;
      if (response.status !== 200) throw new Error(`${key}: HTTP ${response.status}`);
      times[key]!.push(elapsed);
    }
  }
  return Object.fromEntries(
    Object.entries(times).map(([key, list]) => {
      list.sort((a, b) => a - b);
      return [key, { p50: percentile(list, 50), p99: percentile(list, 99) }];
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Lifecycle: database, server process, cleanup

const admin = new pg.Client({ connectionString: SERVER_URL });
let adminConnected = false;
let createdDatabase: string | null = null;
let servers: ChildProcess | null = null;
let cleanedUp: Promise<void> | null = null;

function databaseUrl(name: string): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function stopServers(): Promise<void> {
  const child = servers;
  servers = null;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

function cleanup(): Promise<void> {
  cleanedUp ??= (async () => {
    await stopServers().catch((error) => console.error("[bench] stopping the servers failed:", error));
    if (createdDatabase && adminConnected) {
      try {
        await admin.query(`drop database if exists "${createdDatabase}" with (force)`);
        log(`dropped database ${createdDatabase}`);
      } catch (error) {
        console.error(`[bench] could not drop database ${createdDatabase}:`, error);
      }
    }
    if (adminConnected) await admin.end().catch(() => {});
  })();
  return cleanedUp;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`[bench] ${signal}: cleaning up`);
    cleanup().finally(() => process.exit(130));
  });
}

function startServers(env: Record<string, string>): Promise<{ ours: number; bare: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/servers.ts")], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    servers = child;
    const timer = setTimeout(() => reject(new Error("bench servers did not start within 60 s")), 60_000);
    child.once("message", (message: { type: string; ours: number; bare: number }) => {
      clearTimeout(timer);
      if (message.type === "ready") resolve({ ours: message.ours, bare: message.bare });
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`bench servers exited early (code ${code}, signal ${signal})`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Report

type Row = { endpoint: string; ours: Measurement; bare: Measurement };
type Deep = { first: Measurement; deep: Measurement; seq: Record<string, { p50: number; p99: number }> };

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");

function renderReport(info: {
  date: string;
  code: string;
  machine: string;
  postgres: string;
  counts: Record<string, number>;
  rows: Row[];
  deep: Deep;
  testsDeep: Deep;
  plans: PlanSummary[];
  indexes: string[];
}): string {
  const { rows, deep, counts } = info;
  const lines: string[] = [];
  lines.push("## API throughput vs bare Hono, and deep pagination (`npm run bench:api`)");
  lines.push("");
  lines.push(
    "Command: `npm run bench:api` (script `tsx bench/api-bench.ts`; also run by `npm run bench`; `BENCH_DURATION_SECONDS=3 npm run bench:api` for a quick run).",
  );
  lines.push("");
  lines.push(`- Date: ${info.date}`);
  lines.push(`- Code: ${info.code}`);
  lines.push(`- Machine: ${info.machine}`);
  lines.push(`- Database: ${info.postgres}, fresh database per run, pg pool max ${POOL_MAX} shared by both apps`);
  lines.push(
    `- Dataset: ${counts.organizations} organization, ${counts.projects} projects, ${counts.alerts} alerts (${counts.active_alerts} active), ` +
      `${counts.test_runs} test runs, ${counts.alert_events} alert events (${counts.hot_alert_events} on one alert; ` +
      `${counts.hot_tied_timestamps} of its timestamps are shared by several events)`,
  );
  lines.push(
    `- Load: autocannon, ${CONNECTIONS} connections, pipelining 1. Per pair (ours/bare, first/deep): a ${WARMUP} s warm-up of each, then ${ROUNDS} rounds of ${fmt(DURATION / ROUNDS)} s per variant with the order flipping every round (A B B A…), ${DURATION} s measured per variant in all; ` +
      "after every run the driver waits until the database has no running query. Both servers run in one child process (one pg pool), the load generator in the parent process",
  );
  lines.push("");
  lines.push(
    "| Endpoint | Ours req/s | Ours p50 (ms) | Ours p99 (ms) | Bare req/s | Bare p50 (ms) | Bare p99 (ms) | Ours / bare | Target |",
  );
  lines.push("|---|---:|---:|---:|---:|---:|---:|---:|---|");
  for (const r of rows) {
    const ratio = r.ours.rps / r.bare.rps;
    const target = targetOf(r.endpoint);
    lines.push(
      `| ${r.endpoint} | ${fmt(r.ours.rps, 0)} | ${fmt(r.ours.p50)} | ${fmt(r.ours.p99)} | ${fmt(r.bare.rps, 0)} | ${fmt(r.bare.p50)} | ${fmt(r.bare.p99)} | ${fmt(ratio, 2)} | ≥ ${target}: ${verdict(ratio >= target)} |`,
    );
  }
  lines.push("");
  const p50Ratio = deep.deep.p50 / deep.first.p50;
  const p99Ratio = deep.deep.p99 / deep.first.p99;
  const seqFirst = deep.seq.first!;
  const seqDeep = deep.seq.deep!;
  lines.push(
    `GET /alerts/:id/events on our API, first page vs the page after ${DEEP_ROWS.toLocaleString("en-US")} rows (cursor reached by walking ${DEEP_ROWS / WALK_PAGE} pages of ${WALK_PAGE}; both pages limit 25):`,
  );
  lines.push("");
  lines.push(
    "| Measurement | First page p50 (ms) | First page p99 (ms) | Deep page p50 (ms) | Deep page p99 (ms) | Deep / first p50 | Deep / first p99 | Target ≤ 1.2 |",
  );
  lines.push("|---|---:|---:|---:|---:|---:|---:|---|");
  lines.push(
    `| ${CONNECTIONS} connections (first ${fmt(deep.first.rps, 0)} req/s, deep ${fmt(deep.deep.rps, 0)} req/s) | ${fmt(deep.first.p50)} | ${fmt(deep.first.p99)} | ${fmt(deep.deep.p50)} | ${fmt(deep.deep.p99)} | ${fmt(p50Ratio, 2)} | ${fmt(p99Ratio, 2)} | ${verdict(p50Ratio <= DEEP_TARGET && p99Ratio <= DEEP_TARGET)} |`,
  );
  const sp50 = seqDeep.p50 / seqFirst.p50;
  const sp99 = seqDeep.p99 / seqFirst.p99;
  lines.push(
    `| sequential, 1 request at a time (${SEQUENTIAL} each, interleaved) | ${fmt(seqFirst.p50, 2)} | ${fmt(seqFirst.p99, 2)} | ${fmt(seqDeep.p50, 2)} | ${fmt(seqDeep.p99, 2)} | ${fmt(sp50, 2)} | ${fmt(sp99, 2)} | diagnostic |`,
  );
  lines.push("");
  const tDeep = info.testsDeep;
  const tp50 = tDeep.deep.p50 / tDeep.first.p50;
  const tp99 = tDeep.deep.p99 / tDeep.first.p99;
  lines.push(
    `GET /projects/:id/tests?sort=impact on a project with ${TESTS_DATASET.tests.toLocaleString("en-US")} tests and ${TESTS_DATASET.testRuns.toLocaleString("en-US")} runs, first page vs the page after ${TESTS_DEEP_ROWS.toLocaleString("en-US")} tests (target: p50 ratio ≤ 1.2):`,
  );
  lines.push("");
  lines.push(
    "| Measurement | First page p50 (ms) | First page p99 (ms) | Deep page p50 (ms) | Deep page p99 (ms) | Deep / first p50 | Deep / first p99 | Target ≤ 1.2 (p50) |",
  );
  lines.push("|---|---:|---:|---:|---:|---:|---:|---|");
  lines.push(
    `| ${CONNECTIONS} connections (first ${fmt(tDeep.first.rps, 0)} req/s, deep ${fmt(tDeep.deep.rps, 0)} req/s) | ${fmt(tDeep.first.p50)} | ${fmt(tDeep.first.p99)} | ${fmt(tDeep.deep.p50)} | ${fmt(tDeep.deep.p99)} | ${fmt(tp50, 2)} | ${fmt(tp99, 2)} | ${verdict(tp50 <= DEEP_TARGET)} |`,
  );
  lines.push(
    `| sequential, 1 request at a time (${SEQUENTIAL} each, interleaved) | ${fmt(tDeep.seq.first!.p50, 2)} | ${fmt(tDeep.seq.first!.p99, 2)} | ${fmt(tDeep.seq.deep!.p50, 2)} | ${fmt(tDeep.seq.deep!.p99, 2)} | ${fmt(tDeep.seq.deep!.p50 / tDeep.seq.first!.p50, 2)} | ${fmt(tDeep.seq.deep!.p99 / tDeep.seq.first!.p99, 2)} | diagnostic |`,
  );
  lines.push("");
  lines.push("Query plans (`EXPLAIN ANALYZE` of the SQL the handlers run, as Drizzle builds it; third of three runs):");
  lines.push("");
  lines.push("| Query | Plan | Sorts all matching rows? | Execution (ms) |");
  lines.push("|---|---|---|---:|");
  for (const plan of info.plans)
    lines.push(`| ${plan.query} | ${plan.plan} | ${plan.sorts ? "yes" : "no (index order)"} | ${fmt(plan.executionMs, 2)} |`);
  lines.push("");
  lines.push("Keyset indexes in the benchmark database (the services order by `… DESC, id DESC`, which Postgres reads as `NULLS FIRST`):");
  lines.push("");
  for (const index of info.indexes) lines.push(`- \`${index}\``);
  lines.push("");
  lines.push("Notes:");
  lines.push("");
  lines.push(
    "- Figures come from one run on a shared, noisy 2-core machine where the load generator, the Node server and Postgres compete for the same cores. Read the ratios, not the absolute numbers; re-run before drawing conclusions from a difference of a few percent.",
  );
  lines.push(
    `- Our app is the real \`createApp(config)\` with request deps built as \`npm start\` builds them (src/node/server.ts), including the in-memory per-key counter that resolves API keys and enforces the rate limit, but with a raised quota (${BENCH_RATE_LIMIT.limit.toLocaleString("en-US")} requests per ${BENCH_RATE_LIMIT.windowMs / 1000} s instead of 600 per 60 s) so the limiter's cost is measured without the benchmark being throttled. Every request carries a valid API key. With the raised quota the key's window holds every request of the last 60 s (tens of thousands of timestamps at these rates), so each \`consume\` costs more than under the production quota, where the window never exceeds 600 entries.`,
  );
  lines.push(
    "- Bare = a plain `new Hono()` with no middleware whose handlers run the same Drizzle query-builder calls as the services (same filters, ordering, `limit 26`; the events handler keeps the service's alert lookup) and return `c.json(rows)`: no API-key lookup, rate limit, validation, cursor signing or presenters (bench/bare-app.ts).",
  );
  lines.push(
    "- p50/p99 are per-request latencies of 2xx responses as seen by the client. Throughput = 2xx responses / measured seconds; any error or non-2xx response aborts the run.",
  );
  lines.push(
    `- Deep-page target: judged on both p50 and p99 ratios of the ${CONNECTIONS}-connection row. The sequential row is a diagnostic of the per-request cost without queueing: its p50 is the meaningful figure, its p99 rests on the few slowest of ${SEQUENTIAL} requests of a few milliseconds each and swings with background load.` +
      " The deep page uses the real cursor reached by walking, so it runs the keyset condition `(triggered_at, id) < (…)`; whether Postgres serves the order from the index or sorts is in the plans table. A deep page that is *faster* than the first page means the first page sorts more rows, not that deep pages are cheap.",
  );
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const loadAtStart = os.loadavg()[0]!.toFixed(1);
  const code = codeVersion();
  await admin.connect();
  adminConnected = true;
  const postgres = (await admin.query<{ v: string }>("select version() as v")).rows[0]!.v.replace(/ on .*$/, "");
  const dbName = `cia_bench_${randomBytes(6).toString("hex")}`;
  await admin.query(`create database "${dbName}"`);
  createdDatabase = dbName;
  const url = databaseUrl(dbName);
  log(`created database ${dbName} on ${new URL(SERVER_URL).host}`);

  // Schema through the real migrations, the org and key through the real service.
  const t0 = performance.now();
  const database = await openDatabase(url);
  let orgId: string;
  let apiKey: string;
  try {
    await database.migrate();
    const created = await createOrganization(
      { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com" },
      { name: "Bench Org" },
    );
    orgId = created.organization.id;
    apiKey = created.api_key.secret;
  } finally {
    await database.close();
  }
  const seeder = new pg.Client({ connectionString: url });
  await seeder.connect();
  let hotAlertId: string;
  let counts: Record<string, number>;
  try {
    ({ hotAlertId } = await seedDataset(seeder, orgId));
    counts = await countDataset(seeder, hotAlertId);
  } finally {
    await seeder.end();
  }
  log(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify(counts)}`);
  if (counts.projects !== DATASET.projects || counts.test_runs !== DATASET.testRuns || counts.alert_events !== DATASET.alertEvents) {
    throw new Error("the dataset does not have the intended size");
  }

  // The tests project comes after the count check above, which is about the v1 dataset.
  const testsSeeder = new pg.Client({ connectionString: url });
  await testsSeeder.connect();
  let testsProjectId: string;
  try {
    testsProjectId = await seedTestsProject(testsSeeder, orgId);
  } finally {
    await testsSeeder.end();
  }
  log(`tests project seeded: ${TESTS_DATASET.tests} tests, ${TESTS_DATASET.testRuns} runs`);

  const cursorSecret = randomBytes(24).toString("hex");
  settleDatabase = dbName;
  const ports = await startServers({
    BENCH_DB_URL: url,
    BENCH_CURSOR_SECRET: cursorSecret,
    BENCH_ORG_ID: orgId,
    PG_POOL_MAX: String(POOL_MAX),
  });
  const ours = `http://127.0.0.1:${ports.ours}/api/v1`;
  const bare = `http://127.0.0.1:${ports.bare}`;
  const headers = { authorization: `Bearer ${apiKey}`, accept: "application/json" };
  log(`servers up: ours :${ports.ours}, bare :${ports.bare}`);

  const endpoints = [
    { endpoint: "GET /projects", ours: `${ours}/projects`, bare: `${bare}/projects` },
    { endpoint: "GET /alerts", ours: `${ours}/alerts`, bare: `${bare}/alerts` },
    { endpoint: "GET /alerts/:id/events", ours: `${ours}/alerts/${hotAlertId}/events`, bare: `${bare}/alerts/${hotAlertId}/events` },
    {
      endpoint: "GET /projects/:id/tests?sort=impact",
      ours: `${ours}/projects/${testsProjectId}/tests?sort=impact`,
      bare: `${bare}/projects/${testsProjectId}/tests`,
    },
    {
      endpoint: "GET /projects/:id/tests?health=flaky",
      ours: `${ours}/projects/${testsProjectId}/tests?health=flaky`,
      bare: `${bare}/projects/${testsProjectId}/tests?health=flaky`,
    },
  ];

  // Sanity: both variants answer 200 with a full page.
  for (const e of endpoints) {
    const a = await fetch(e.ours, { headers });
    const body = (await a.json()) as { data?: unknown[] };
    const b = await fetch(e.bare, { headers });
    const rows = (await b.json()) as unknown[];
    if (a.status !== 200 || body.data?.length !== 25 || b.status !== 200 || rows.length !== 26) {
      throw new Error(
        `${e.endpoint}: unexpected sanity responses (ours ${a.status}/${body.data?.length}, bare ${b.status}/${rows.length})`,
      );
    }
  }

  const rows: Row[] = [];
  for (const [i, e] of endpoints.entries()) {
    const oursFirst = i % 2 === 0;
    const [o, b] = await measurePair(
      { label: `${e.endpoint} ours`, url: e.ours },
      { label: `${e.endpoint} bare`, url: e.bare },
      headers,
      oursFirst,
    );
    rows.push({ endpoint: e.endpoint, ours: o, bare: b });
  }

  // Deep page: walk the real cursors.
  const tWalk = performance.now();
  let cursor: string | null = null;
  let seen = 0;
  let previous: { ts: string; id: number } | null = null;
  for (let page = 0; page < DEEP_ROWS / WALK_PAGE; page++) {
    const pageUrl = `${ours}/alerts/${hotAlertId}/events?limit=${WALK_PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const response = await fetch(pageUrl, { headers });
    if (response.status !== 200) throw new Error(`walk page ${page}: HTTP ${response.status} ${await response.text()}`);
    const body = (await response.json()) as { data: { id: number; triggered_at: string }[]; pagination: { next_cursor: string | null } };
    for (const item of body.data) {
      if (previous && !(item.triggered_at < previous.ts || (item.triggered_at === previous.ts && item.id < previous.id))) {
        throw new Error(`walk: rows out of order or repeated at ${seen}`);
      }
      previous = { ts: item.triggered_at, id: item.id };
      seen++;
    }
    cursor = body.pagination.next_cursor;
    if (!cursor) throw new Error(`walk ended after ${seen} rows`);
  }
  log(`walked ${seen} rows in ${((performance.now() - tWalk) / 1000).toFixed(1)} s`);
  const firstUrl = `${ours}/alerts/${hotAlertId}/events`;
  const deepUrl = `${firstUrl}?cursor=${encodeURIComponent(cursor!)}`;
  const deepCheck = (await (await fetch(deepUrl, { headers })).json()) as { data: { id: number; triggered_at: string }[] };
  if (deepCheck.data.length !== 25 || !previous || !(deepCheck.data[0]!.triggered_at <= previous.ts))
    throw new Error("deep page is not the continuation of the walk");

  const [first, deepPage] = await measurePair(
    { label: "events first page", url: firstUrl },
    { label: `events page ${DEEP_ROWS} rows deep`, url: deepUrl },
    headers,
    true,
  );
  // The tests list: first page vs the page after 10,000 tests (sort=impact), cursor reached by walking.
  let testsCursor: string | null = null;
  for (let page = 0; page < TESTS_DEEP_ROWS / WALK_PAGE; page++) {
    const pageUrl = `${ours}/projects/${testsProjectId}/tests?sort=impact&limit=${WALK_PAGE}${testsCursor ? `&cursor=${encodeURIComponent(testsCursor)}` : ""}`;
    const response = await fetch(pageUrl, { headers });
    if (response.status !== 200) throw new Error(`tests walk page ${page}: HTTP ${response.status} ${await response.text()}`);
    const body = (await response.json()) as { pagination: { next_cursor: string | null } };
    testsCursor = body.pagination.next_cursor;
    if (!testsCursor) throw new Error(`tests walk ended at page ${page}`);
  }
  const testsFirstUrl = `${ours}/projects/${testsProjectId}/tests?sort=impact`;
  const testsDeepUrl = `${testsFirstUrl}&cursor=${encodeURIComponent(testsCursor!)}`;
  const [testsFirst, testsDeep] = await measurePair(
    { label: "tests first page", url: testsFirstUrl },
    { label: `tests page ${TESTS_DEEP_ROWS} rows deep`, url: testsDeepUrl },
    headers,
    true,
  );
  const testsSeq = await sequential({ first: testsFirstUrl, deep: testsDeepUrl }, headers, SEQUENTIAL);

  // Query plans of the SQL behind the measured pages.
  const planDb = await openDatabase(url);
  const planClient = new pg.Client({ connectionString: url });
  await planClient.connect();
  let plans: PlanSummary[];
  let indexes: string[];
  try {
    indexes = await keysetIndexDefinitions(planClient);
    plans = await explainListQueries(planClient, planDb.db, {
      organizationId: orgId,
      alertId: hotAlertId,
      deepPosition: { ts: new Date(previous.ts), id: previous.id },
      deepRows: DEEP_ROWS,
    });
  } finally {
    await planClient.end();
    await planDb.close();
  }
  for (const plan of plans) log(`plan ${plan.query}: ${plan.plan} (${plan.executionMs.toFixed(2)} ms)`);

  const seq = await sequential({ first: firstUrl, deep: deepUrl }, headers, SEQUENTIAL);
  log(
    `sequential: first p50 ${seq.first!.p50.toFixed(2)} ms p99 ${seq.first!.p99.toFixed(2)} ms; deep p50 ${seq.deep!.p50.toFixed(2)} ms p99 ${seq.deep!.p99.toFixed(2)} ms`,
  );

  const cpus = os.cpus();
  const report = renderReport({
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    code,
    machine: `${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}, Node ${process.version}; load average ${loadAtStart} at start, ${os.loadavg()[0]!.toFixed(1)} at end`,
    postgres,
    counts,
    rows,
    deep: { first, deep: deepPage, seq },
    testsDeep: { first: testsFirst, deep: testsDeep, seq: testsSeq },
    plans,
    indexes,
  });
  console.log(`\n${report}\n`);

  const ratios = rows.map((r) => r.ours.rps / r.bare.rps);
  const throughputMet = rows.every((r) => r.ours.rps / r.bare.rps >= targetOf(r.endpoint));
  const deepMet =
    deepPage.p50 / first.p50 <= DEEP_TARGET && testsDeep.p50 / testsFirst.p50 <= DEEP_TARGET && deepPage.p99 / first.p99 <= DEEP_TARGET;
  const verdict = (met: boolean) => (met ? "PASS" : "FAIL");
  recordBenchmark({
    name: "api",
    command: "npm run bench:api",
    measures: "API list endpoints against bare Hono on the same SQL (req/s); first page vs a deep page",
    figure:
      `ours/bare ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} ${verdict(throughputMet)}; ` +
      `deep/first page p50 ${(deepPage.p50 / first.p50).toFixed(2)} (events, p99 ${(deepPage.p99 / first.p99).toFixed(2)}), ${(testsDeep.p50 / testsFirst.p50).toFixed(2)} (tests) ${verdict(deepMet)}`,
    target: `ours/bare ≥ ${THROUGHPUT_TARGET} (tests lists ≥ 0.8); deep/first ≤ ${DEEP_TARGET}`,
    report,
  });

  if (!throughputMet || !deepMet) {
    log("some targets were missed (see the table)");
    if (process.env.BENCH_STRICT === "1") process.exitCode = 1;
  }
}

main()
  .catch((error) => {
    console.error("[bench] failed:", error);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
