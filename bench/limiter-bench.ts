/**
 * `npm run bench:limiter`: what the per-key Durable Object limiter adds to a request in local
 * workerd, beside the same Worker with an in-memory counter, and the Worker bundle size gzipped.
 * Not a test: it prints a report and records it (bench/report.ts: its row of BENCHMARKS.md,
 * bench/history/limiter.md), and exits 0 unless something broke (or BENCH_STRICT=1 and a target
 * was missed).
 *
 * 1. `npm run build` (wrangler deploy --dry-run --minify): the "Total Upload … / gzip: …" line.
 * 2. One local database (src/node/local-neon: in-memory PGlite served over the wire protocol, or a
 *    fresh database on BENCH_DATABASE_URL's Postgres server, dropped at the end) and the WebSocket
 *    bridge the Neon driver in workerd connects through; organizations created through the real
 *    service, one API key each.
 * 3. Two `wrangler dev` processes with the bindings scripts/dev.ts passes: the Worker as deployed
 *    (DO counter) and bench/worker-in-memory-counter.ts (in-memory counter).
 * 4. Every key warmed on both; then sequential requests, DO and in-memory interleaved A B B A, to
 *    GET /api/v1/projects?limit=0 (key gate + rate limit, then a 400 from validation, no database)
 *    and GET /api/v1/organization (a 200 with one query); a short concurrent run for context.
 * 5. Both wrangler process groups stopped (workerd included) and checked gone; database closed.
 *
 * Env: BENCH_DATABASE_URL (default memory://; a postgres:// URL names a server on which a fresh
 *      database is created and dropped), BENCH_LIMITER_REQUESTS (2000 per variant per endpoint),
 *      BENCH_LIMITER_WARMUP (200 unmeasured pairs per endpoint), BENCH_LIMITER_CONCURRENCY (10),
 *      BENCH_LIMITER_CONCURRENT_REQUESTS (1000 per variant; 0 skips), BENCH_LIMITER_KEYS (at least 20),
 *      BENCH_LIMITER_PERSIST_DIR (os.tmpdir(); parent of the throwaway local DO storage directories),
 *      BENCH_LIMITER_DO_ENTRY (diagnostics: another entry for the DO variant, e.g.
 *      bench/limiter-do-without-storage.ts; nothing is then recorded, and the report is written only
 *      to BENCH_OUTPUT if it is set), BENCH_OUTPUT=<file> (the report written there instead of
 *      recorded), BENCH_NO_RECORD=1 (nothing written), BENCH_STRICT=1 to exit 1 when a target is missed,
 *      X_LOCAL_OBSERVABILITY / X_LOCAL_EXPLORER (default false here: wrangler's local trace
 *      collector and explorer, dev tooling that is not part of the Worker; see limiter-wrangler.ts).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { systemClock } from "../src/lib/clock";
import { type LocalDatabase, startLocalDatabase } from "../src/node/local-neon";
import { createOrganization } from "../src/services/tenancy/organizations";
import {
  type ConcurrencyResult,
  type EndpointResult,
  type FirstRequests,
  type Report,
  headlineFigure,
  percentile,
  renderReport,
  stats,
  targetResults,
} from "./limiter-report";
import { generateSecretsKey } from "../src/lib/secret-box";
import { DEV_TOOLING, type WranglerDev, liveWranglers, processGroupCpuMs, startWranglerDev } from "./limiter-wrangler";
import { recordBenchmark } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DATABASE_URL = process.env.BENCH_DATABASE_URL || "memory://";
const REQUESTS = Math.round(positive("BENCH_LIMITER_REQUESTS", 2000));
const WARMUP = Math.round(positive("BENCH_LIMITER_WARMUP", 200, true));
const CONCURRENCY = Math.round(positive("BENCH_LIMITER_CONCURRENCY", 10));
const CONCURRENT_REQUESTS = Math.round(positive("BENCH_LIMITER_CONCURRENT_REQUESTS", 1000, true) / 2) * 2;
/** Diagnostics only: another entry for the DO variant (default: wrangler.toml `main`, the Worker as deployed). */
const DO_ENTRY = process.env.BENCH_LIMITER_DO_ENTRY || undefined;
/** Where the two throwaway `--persist-to` directories (local DO storage) are created. */
const PERSIST_PARENT = process.env.BENCH_LIMITER_PERSIST_DIR || os.tmpdir();
const TARGET_BUNDLE_GZIP_KIB = 350;
const TARGET_ADDED_P50_MS = 1;
/** The production quota is 600 per rolling 60 s; plan for at most this many requests per key and variant. */
const PER_KEY_PLAN = 400;
/** Hard stop: a key past this in one variant could meet the limit (a 429 would spoil the run). */
const PER_KEY_MAX = 550;
/** Unmeasured requests per key, endpoint and variant after the key's first request. */
const WARM_PER_KEY = 2;

function positive(name: string, fallback: number, allowZero = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !allowZero))
    throw new Error(`${name} must be a ${allowZero ? "non-negative" : "positive"} number, got ${raw}`);
  return value;
}

const log = (message: string) => console.log(`[limiter-bench] ${message}`);

function codeVersion(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const commit = git("rev-parse", "--short", "HEAD");
    const dirty = git("status", "--porcelain", "--", "src", "drizzle", "wrangler.toml", "package.json") !== "";
    return dirty ? `commit ${commit} plus uncommitted changes under src/, drizzle/, wrangler.toml or package.json` : `commit ${commit}`;
  } catch {
    return "unknown (not a git checkout)";
  }
}

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(path.join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "?";
  }
}

/** Pids and commands of every workerd process on the machine (to show which are left, ours or not). */
function workerdProcesses(): { pid: number; command: string }[] {
  const found: { pid: number; command: string }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ").trim();
      if (/(^|\/)workerd\s/.test(command)) found.push({ pid: Number(entry), command });
    } catch {
      // Gone.
    }
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// Bundle size

function measureBundle(): { raw: number; gzip: number } | { error: string } {
  log("npm run build …");
  const result = spawnSync("npm", ["run", "build"], {
    cwd: ROOT,
    encoding: "utf8",
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: "false",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      WRANGLER_HIDE_BANNER: "true",
      NO_COLOR: "1",
    },
    timeout: 180_000,
  });
  const output = `${result.stdout ?? ""}\n${result.stderr ?? ""}`.replace(/\u001b\[[0-9;]*[A-Za-z]/g, "");
  const match = /Total Upload:\s*([\d.]+)\s*KiB\s*\/\s*gzip:\s*([\d.]+)\s*KiB/.exec(output);
  if (result.status !== 0 || !match) {
    console.error(output.split("\n").slice(-30).join("\n"));
    return { error: result.error ? result.error.message : `npm run build exited ${result.status}` };
  }
  return { raw: Number(match[1]), gzip: Number(match[2]) };
}

// ---------------------------------------------------------------------------------------------
// Database

type BenchDatabase = { local: LocalDatabase; description: string; drop: () => Promise<void> };

async function openBenchDatabase(): Promise<BenchDatabase> {
  if (!/^postgres(ql)?:\/\//.test(DATABASE_URL)) {
    const local = await startLocalDatabase({ databaseUrl: DATABASE_URL });
    return { local, description: local.database.description, drop: async () => {} };
  }
  // A server URL, as for `npm run bench`: a fresh database on it, dropped at the end.
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  const name = `cia_limiter_${randomBytes(6).toString("hex")}`;
  const version = (await admin.query<{ v: string }>("select version() as v")).rows[0]!.v.replace(/ on .*$/, "");
  await admin.query(`create database "${name}"`);
  const url = new URL(DATABASE_URL);
  url.pathname = `/${name}`;
  const drop = async () => {
    try {
      await admin.query(`drop database if exists "${name}" with (force)`);
      log(`dropped database ${name}`);
    } finally {
      await admin.end().catch(() => {});
    }
  };
  try {
    const local = await startLocalDatabase({ databaseUrl: url.toString() });
    return { local, description: `${version}, fresh database ${name}`, drop };
  } catch (error) {
    await drop().catch(() => {});
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Requests

type Variant = { label: string; dev: WranglerDev; used: Map<string, number> };

class Keys {
  #next = 0;
  constructor(readonly all: string[]) {}
  next(): string {
    return this.all[this.#next++ % this.all.length]!;
  }
}

/** One request; `key` null sends none. Returns the client-side latency in ms, throws on an unexpected status. */
async function timed(variant: Variant, pathAndQuery: string, key: string | null, expected: number): Promise<number> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (key !== null) {
    const count = (variant.used.get(key) ?? 0) + 1;
    if (count > PER_KEY_MAX)
      throw new Error(`${variant.label}: key used ${count} times; the run would meet the rate limit (raise BENCH_LIMITER_KEYS)`);
    variant.used.set(key, count);
    headers.authorization = `Bearer ${key}`;
  }
  const start = performance.now();
  const response = await fetch(variant.dev.baseUrl + pathAndQuery, { headers });
  const body = await response.arrayBuffer();
  const elapsed = performance.now() - start;
  if (response.status !== expected) {
    const hint = response.status === 429 ? " (429: a key was over-used; raise BENCH_LIMITER_KEYS)" : "";
    throw new Error(
      `${variant.label} ${pathAndQuery}: HTTP ${response.status}, expected ${expected}${hint}: ${new TextDecoder().decode(body).slice(0, 300)}`,
    );
  }
  return elapsed;
}

type Endpoint = { endpoint: string; suffix?: string; path: string; status: number; auth: boolean; share: number };

/** Measured in this order; `share` = pairs as a fraction of BENCH_LIMITER_REQUESTS. The first one carries the target. */
const ENDPOINTS: readonly Endpoint[] = [
  { endpoint: "GET /api/v1/projects?limit=0", path: "/api/v1/projects?limit=0", status: 400, auth: true, share: 1 },
  { endpoint: "GET /api/v1/organization", path: "/api/v1/organization", status: 200, auth: true, share: 1 },
  { endpoint: "GET /api/v1/projects", suffix: " without an API key", path: "/api/v1/projects", status: 401, auth: false, share: 0.5 },
];
const AUTH_ENDPOINTS = ENDPOINTS.filter((e) => e.auth);
const TARGET_ENDPOINT = ENDPOINTS[0]!;

/** Sequential pairs, A B B A: pair i runs DO first when i is even, in-memory first when odd. */
async function sequentialPairs(durable: Variant, memory: Variant, endpoint: Endpoint, keys: Keys, pairs: number) {
  const d: number[] = [];
  const m: number[] = [];
  for (let i = 0; i < pairs; i++) {
    const key = endpoint.auth ? keys.next() : null;
    if (i % 2 === 0) {
      d.push(await timed(durable, endpoint.path, key, endpoint.status));
      m.push(await timed(memory, endpoint.path, key, endpoint.status));
    } else {
      m.push(await timed(memory, endpoint.path, key, endpoint.status));
      d.push(await timed(durable, endpoint.path, key, endpoint.status));
    }
  }
  return { d, m };
}

async function concurrent(variant: Variant, keys: Keys, total: number): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  let issued = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (issued < total) {
        issued++;
        latencies.push(await timed(variant, TARGET_ENDPOINT.path, keys.next(), TARGET_ENDPOINT.status));
      }
    }),
  );
  return { latencies, seconds: (performance.now() - start) / 1000 };
}

// ---------------------------------------------------------------------------------------------
// Lifecycle

let database: BenchDatabase | null = null;
const persistDirs: string[] = [];
let cleanedUp: Promise<void> | null = null;

function cleanup(): Promise<void> {
  cleanedUp ??= (async () => {
    const devs = [...liveWranglers];
    const left = (await Promise.all(devs.map((dev) => dev.stop().then((rest) => rest.map((p) => ({ ...p, label: dev.label })))))).flat();
    if (devs.length > 0) {
      if (left.length === 0)
        log(`stopped ${devs.map((d) => `${d.label} (process group ${d.pgid})`).join(" and ")}; none of their processes is left`);
      else
        console.error(
          `[limiter-bench] processes left after stopping wrangler: ${left.map((p) => `${p.label} ${p.pid} ${p.command}`).join("; ")}`,
        );
      const others = workerdProcesses();
      if (others.length > 0) log(`workerd processes on the machine that this run did not start: ${others.map((p) => p.pid).join(", ")}`);
    }
    if (database) {
      await database.local.close().catch((error: unknown) => console.error("[limiter-bench] closing the database failed:", error));
      await database.drop().catch((error: unknown) => console.error("[limiter-bench] dropping the database failed:", error));
      database = null;
    }
    for (const dir of persistDirs) rmSync(dir, { recursive: true, force: true });
  })();
  return cleanedUp;
}

// `on`, not `once`: Ctrl-C reaches this process twice (from the terminal, and relayed by tsx), and a
// second signal without a handler would kill it before wrangler is stopped.
let signalled = false;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (signalled) return;
    signalled = true;
    console.error(`[limiter-bench] ${signal}: cleaning up`);
    cleanup().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const startedAt = performance.now();
  const loadAtStart = os.loadavg()[0]!.toFixed(1);
  const code = codeVersion();

  const built = measureBundle();
  if ("error" in built) log(`bundle size not measured: ${built.error}`);
  else log(`bundle: ${built.raw} KiB minified, ${built.gzip} KiB gzipped`);

  // Key budget: every measured, warm-up and check request of one variant, spread over the keys.
  const perVariantBulk = AUTH_ENDPOINTS.reduce((n, e) => n + WARMUP + Math.round(REQUESTS * e.share), 0) + CONCURRENT_REQUESTS + 2;
  const warmPerKey = 1 + WARM_PER_KEY * AUTH_ENDPOINTS.length;
  const keyCount = Math.max(Math.round(positive("BENCH_LIMITER_KEYS", 20)), Math.ceil(perVariantBulk / (PER_KEY_PLAN - warmPerKey)));

  log(`database ${DATABASE_URL} …`);
  database = await openBenchDatabase();
  const db = database.local.database.db;
  const deps = { db, clock: systemClock, webAppUrl: "https://app.example.com" };
  const secrets: string[] = [];
  for (let i = 0; i < keyCount; i++) secrets.push((await createOrganization(deps, { name: `Limiter bench ${i + 1}` })).api_key.secret);
  const keys = new Keys(secrets);
  log(`${database.description}; ${keyCount} organizations with one API key each`);

  const vars: Record<string, string> = {
    DATABASE_URL: database.local.workerDatabaseUrl,
    CURSOR_SECRET: randomBytes(24).toString("hex"),
    // Required by the Worker since webhook secrets are sealed (docs/secrets.md); a throwaway key.
    SECRETS_KEY: generateSecretsKey(),
    WEB_APP_URL: "https://app.example.com",
  };
  if (database.local.localNeonProxy) vars.LOCAL_NEON_PROXY = database.local.localNeonProxy;
  const persist = (label: string) => {
    const dir = mkdtempSync(path.join(PERSIST_PARENT, `limiter-bench-${label}-`));
    persistDirs.push(dir);
    return dir;
  };
  const tStart = performance.now();
  const [durableDev, memoryDev] = await Promise.all([
    startWranglerDev({ label: "DO", script: DO_ENTRY, vars, persistTo: persist("do") }),
    startWranglerDev({ label: "in-memory", script: "bench/worker-in-memory-counter.ts", vars, persistTo: persist("mem") }),
  ]);
  log(
    `wrangler dev ready in ${((performance.now() - tStart) / 1000).toFixed(1)} s: DO ${durableDev.baseUrl}, in-memory ${memoryDev.baseUrl}`,
  );
  const durable: Variant = { label: "DO", dev: durableDev, used: new Map() };
  const memory: Variant = { label: "in-memory", dev: memoryDev, used: new Map() };

  // First request of every key (cache miss → database → counter told the organization), alternating which variant goes first.
  const first = { d: [] as number[], m: [] as number[] };
  for (const [i, key] of keys.all.entries()) {
    const order: [Variant, number[]][] =
      i % 2 === 0
        ? [
            [durable, first.d],
            [memory, first.m],
          ]
        : [
            [memory, first.m],
            [durable, first.d],
          ];
    for (const [variant, list] of order) list.push(await timed(variant, TARGET_ENDPOINT.path, key, TARGET_ENDPOINT.status));
  }
  for (const key of keys.all) {
    for (const endpoint of AUTH_ENDPOINTS) {
      for (let j = 0; j < WARM_PER_KEY; j++) {
        await timed(durable, endpoint.path, key, endpoint.status);
        await timed(memory, endpoint.path, key, endpoint.status);
      }
    }
  }
  const firstRequests: FirstRequests[] = [
    { variant: "DO", firstInProcess: first.d[0]!, perKey: stats(first.d) },
    { variant: "in-memory", firstInProcess: first.m[0]!, perKey: stats(first.m) },
  ];
  log(
    `first requests: DO ${first.d[0]!.toFixed(1)} ms, then p50 ${firstRequests[0]!.perKey.p50.toFixed(2)} ms; in-memory ${first.m[0]!.toFixed(1)} ms, then p50 ${firstRequests[1]!.perKey.p50.toFixed(2)} ms`,
  );

  // Sanity: the 400 comes after the key gate and the rate limit.
  for (const variant of [durable, memory]) {
    const key = keys.next();
    variant.used.set(key, (variant.used.get(key) ?? 0) + 1);
    const response = await fetch(variant.dev.baseUrl + TARGET_ENDPOINT.path, { headers: { authorization: `Bearer ${key}` } });
    const body = (await response.json()) as { error?: { code?: string } };
    if (response.status !== 400 || body.error?.code !== "invalid_request")
      throw new Error(`${variant.label}: ?limit=0 answered ${response.status} ${JSON.stringify(body)}`);
    if (!response.headers.get("ratelimit"))
      throw new Error(`${variant.label}: the 400 has no RateLimit header, so the limiter did not run before validation`);
  }

  /** Restarts of workerd by wrangler (its file watcher) while measuring; each one spoils the figures around it. */
  const reloads: string[] = [];
  const processSets = { d: processGroupCpuMs(durable.dev.pgid).pids, m: processGroupCpuMs(memory.dev.pgid).pids };
  const endpoints: EndpointResult[] = [];
  for (const endpoint of ENDPOINTS) {
    const count = Math.max(4, Math.round(REQUESTS * endpoint.share));
    if (WARMUP > 0) await sequentialPairs(durable, memory, endpoint, keys, WARMUP);
    const t = performance.now();
    const cpuBefore = { d: processGroupCpuMs(durable.dev.pgid), m: processGroupCpuMs(memory.dev.pgid) };
    const { d, m } = await sequentialPairs(durable, memory, endpoint, keys, count);
    const cpuAfter = { d: processGroupCpuMs(durable.dev.pgid), m: processGroupCpuMs(memory.dev.pgid) };
    const perRequest = (label: string, before: ReturnType<typeof processGroupCpuMs>, after: ReturnType<typeof processGroupCpuMs>) => {
      if (before.pids !== after.pids) {
        reloads.push(`${label} during ${endpoint.endpoint}${endpoint.suffix ?? ""}`);
        log(
          `WARNING: ${label}: wrangler restarted workerd during ${endpoint.endpoint}${endpoint.suffix ?? ""} (a source file changed?); its figures include a cold Worker`,
        );
        return { workerd: Number.NaN, wrangler: Number.NaN };
      }
      return { workerd: (after.workerd - before.workerd) / count, wrangler: (after.wrangler - before.wrangler) / count };
    };
    const pairs = d.map((v, i) => v - m[i]!).sort((a, b) => a - b);
    const quarter = Math.max(1, Math.floor(count / 4));
    const deltaP50 = (from: number, to: number) => stats(d.slice(from, to)).p50 - stats(m.slice(from, to)).p50;
    const result: EndpointResult = {
      endpoint: endpoint.endpoint,
      suffix: endpoint.suffix ?? "",
      expectedStatus: endpoint.status,
      requests: count,
      durableObject: stats(d),
      inMemory: stats(m),
      pairedMedian: percentile(pairs, 50),
      firstQuarterDeltaP50: deltaP50(0, quarter),
      lastQuarterDeltaP50: deltaP50(count - quarter, count),
      cpuPerRequest: {
        durableObject: perRequest("DO", cpuBefore.d, cpuAfter.d),
        inMemory: perRequest("in-memory", cpuBefore.m, cpuAfter.m),
      },
      target: endpoint === TARGET_ENDPOINT,
    };
    endpoints.push(result);
    log(
      `${endpoint.endpoint}${endpoint.suffix ?? ""}: DO p50 ${result.durableObject.p50.toFixed(2)} p99 ${result.durableObject.p99.toFixed(2)} mean ${result.durableObject.mean.toFixed(2)} | ` +
        `in-memory p50 ${result.inMemory.p50.toFixed(2)} p99 ${result.inMemory.p99.toFixed(2)} mean ${result.inMemory.mean.toFixed(2)} | ` +
        `Δ p50 ${(result.durableObject.p50 - result.inMemory.p50).toFixed(2)} ms, Δ p99 ${(result.durableObject.p99 - result.inMemory.p99).toFixed(2)} ms ` +
        `(${count} pairs in ${((performance.now() - t) / 1000).toFixed(1)} s); ` +
        `workerd CPU per request DO ${result.cpuPerRequest.durableObject.workerd.toFixed(2)} ms, in-memory ${result.cpuPerRequest.inMemory.workerd.toFixed(2)} ms`,
    );
  }

  const concurrency: ConcurrencyResult[] = [];
  if (CONCURRENT_REQUESTS > 0) {
    const half = CONCURRENT_REQUESTS / 2;
    const runs = new Map<Variant, { latencies: number[]; seconds: number }[]>([
      [durable, []],
      [memory, []],
    ]);
    for (const variant of [durable, memory, memory, durable]) runs.get(variant)!.push(await concurrent(variant, keys, half));
    for (const [variant, list] of runs) {
      const latencies = list.flatMap((r) => r.latencies);
      concurrency.push({
        variant: variant.label,
        requests: latencies.length,
        seconds: list.reduce((s, r) => s + r.seconds, 0),
        latency: stats(latencies),
      });
    }
    for (const c of concurrency)
      log(
        `${CONCURRENCY} in flight, ${c.variant}: ${(c.requests / c.seconds).toFixed(0)} req/s, p50 ${c.latency.p50.toFixed(2)} ms, p99 ${c.latency.p99.toFixed(2)} ms`,
      );
  }

  if (processGroupCpuMs(durable.dev.pgid).pids !== processSets.d || processGroupCpuMs(memory.dev.pgid).pids !== processSets.m) {
    if (reloads.length === 0) reloads.push("during the concurrent run or between phases");
  }
  const maxPerKey = Math.max(...[durable, memory].flatMap((v) => [...v.used.values()]));
  log(`most requests on one key in one variant: ${maxPerKey}`);

  const cpus = os.cpus();
  const report: Report = {
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    code,
    machine: `${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}, Node ${process.version}; load average ${loadAtStart} at start, ${os.loadavg()[0]!.toFixed(1)} at end`,
    runtime:
      `wrangler ${packageVersion("wrangler")} (\`wrangler dev\`, local mode), workerd ${packageVersion("@cloudflare/workerd-linux-64")}, miniflare ${packageVersion("miniflare")}; ` +
      `local Durable Object storage in ${PERSIST_PARENT}; wrangler dev tooling ${Object.entries(DEV_TOOLING)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ")}` +
      (DO_ENTRY ? `; **DO variant entry overridden: ${DO_ENTRY}** (diagnostic run, not the Worker as deployed)` : ""),
    database: `${database.description}, reached by the Worker through the local Neon WebSocket bridge`,
    keys: keyCount,
    maxRequestsPerKey: maxPerKey,
    requestsPerEndpoint: REQUESTS,
    warmupPairs: WARMUP,
    wallSeconds: (performance.now() - startedAt) / 1000,
    bundle: "error" in built ? null : built,
    bundleError: "error" in built ? built.error : undefined,
    endpoints,
    concurrency,
    concurrencyLevel: CONCURRENCY,
    firstRequests,
    reloads,
    targets: { bundleGzipKiB: TARGET_BUNDLE_GZIP_KIB, addedP50Ms: TARGET_ADDED_P50_MS },
  };
  const text = renderReport(report);
  console.log(`\n${text}\n`);
  if (DO_ENTRY && !process.env.BENCH_OUTPUT) {
    log("BENCH_LIMITER_DO_ENTRY is set: a diagnostic run; nothing recorded (set BENCH_OUTPUT to write the report somewhere)");
  } else {
    recordBenchmark({
      name: "limiter",
      command: "npm run bench:limiter",
      measures: "The Durable Object limiter's added latency in local workerd; the Worker bundle gzipped",
      figure: headlineFigure(report),
      target: `added p50 ≤ ${TARGET_ADDED_P50_MS} ms; bundle ≤ ${TARGET_BUNDLE_GZIP_KIB} KiB`,
      report: text,
    });
  }

  const results = targetResults(report);
  if (results.latency !== true || results.bundle !== true) {
    log("some targets were missed or not measured (see the table)");
    if (process.env.BENCH_STRICT === "1") process.exitCode = 1;
  }
}

main()
  .catch((error) => {
    if (signalled) return; // Requests fail once the servers are being stopped; that is the interruption, not an error.
    console.error("[limiter-bench] failed:", error);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
