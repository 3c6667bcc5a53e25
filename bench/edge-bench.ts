/**
 * `npm run bench:edge`: round trips, statements and latency of the Worker path (issue 18), against
 * `npm run dev` itself (the Worker under wrangler dev, its queue, the local bridge with its network
 * emulation) on a Postgres database the bench creates and drops. Not a test: it prints a report and
 * records it (bench/report.ts: its row of BENCHMARKS.md, bench/history/edge.md).
 *
 * For each emulated RTT (0, 50, 150 ms; the bridge's /__bridge/emulation, 3 handshake RTTs per new
 * connection) and each request type of bench/edge-requests.ts: a warm-up (so the API key is warm:
 * its id cached in the isolate, its Durable Object holding its organization), then
 * BENCH_EDGE_REQUESTS (30) sequential requests, each with the round trips and statements the
 * bridge counted for the Worker's fetch sessions; then as many small uploads, each followed by its
 * processing by the queue consumer (time from the 202 until the database says processed; the
 * consumer's sessions' round trips and statements).
 *
 * Env: BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres: the server on which the
 * database is made), BENCH_EDGE_SETTINGS (0:3,50:3,150:3: RTT in ms and handshake round trips per
 * new connection), BENCH_EDGE_REQUESTS (30), BENCH_EDGE_SECTION (a name for a variant of the run, e.g.
 * edge-fold: added to the report's title, the history's heading and the table's figure),
 * BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file> (bench/report.ts).
 *
 * Then the edge cache's checks (issue 33, docs/edge-path.md "Edge-cached reads"), at RTT 0: the
 * warm cached reads' latency added at the longest RTT comes from the table above;
 * BENCH_EDGE_PAIRS (1000) write-then-read pairs through the edge, counting stale reads, over
 * BENCH_EDGE_ORGANIZATIONS (12) organizations taken in turn (each key may send 600 requests a
 * minute); the throughput of a warm GET /organization at concurrency 10, BENCH_EDGE_THROUGHPUT_REQUESTS
 * (3000) per round, through the edge against the placed Worker alone (today's path), two rounds alternated.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { BridgeCounters, BridgeReport } from "../src/node/local-neon";
import { type StalenessResult, runStalenessPairs, throughput } from "./edge-cache-checks";
import {
  EDGE_CACHED_REQUEST_TYPES,
  EDGE_REQUEST_TYPES,
  type EdgeFixture,
  PROCESSING_LABEL,
  type Sample,
  UPLOAD_LABEL,
  measureRequest,
  measureUpload,
  prepareEdgeFixture,
  seedAlertEventsSql,
} from "./edge-requests";
import { type WranglerDev, freePort, processGroupMembers, startWranglerDev } from "./limiter-wrangler";
import { recordBenchmark } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
/** rtt:handshakes pairs; 150:0 stands for pooled connections near the Worker (Hyperdrive), 2:3 for a Worker placed next to the database. */
const SETTINGS = (process.env.BENCH_EDGE_SETTINGS ?? "0:3,50:3,150:3").split(",").map((pair) => {
  const [rtt, handshakes] = pair.split(":").map(Number);
  if (!Number.isFinite(rtt) || !Number.isFinite(handshakes ?? 3)) throw new Error(`BENCH_EDGE_SETTINGS: ${pair} is not rtt:handshakes`);
  return { rtt: rtt!, handshakes: handshakes ?? 3 };
});
const REQUESTS = Number(process.env.BENCH_EDGE_REQUESTS ?? 30);
const WARMUP = 3;
const SECTION = process.env.BENCH_EDGE_SECTION || "edge-bench";
const log = (message: string) => console.log(`[bench:edge] ${message}`);

function codeVersion(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const commit = git("rev-parse", "--short", "HEAD");
    return git("status", "--porcelain", "--", "src", "drizzle") !== ""
      ? `commit ${commit} plus uncommitted changes under src/ or drizzle/`
      : `commit ${commit}`;
  } catch {
    return "unknown (not a git checkout)";
  }
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

type Row = { rtt: number; handshakes: number; label: string; samples: Sample[] };

/** "4" when every sample counted the same, else "min–max (median m)". */
function countCell(samples: Sample[], pick: (c: BridgeCounters) => number): string {
  const values = samples.map((s) => pick(s.counters)).sort((a, b) => a - b);
  const [min, max] = [values[0]!, values.at(-1)!];
  return min === max ? String(min) : `${min}–${max} (median ${percentile(values, 50)})`;
}

/**
 * The run's headline for BENCHMARKS.md: the setting of the Worker as deployed (handshakes on every
 * connection) at the longest RTT measured, else the first setting.
 */
function headline(rows: Row[]): string {
  const { rtt, handshakes } = [...SETTINGS].sort((a, b) => Number(b.handshakes > 0) - Number(a.handshakes > 0) || b.rtt - a.rtt)[0]!;
  const at = rows.filter((row) => row.rtt === rtt && row.handshakes === handshakes);
  const p50 = (row: Row) =>
    percentile(
      row.samples.map((s) => s.ms).sort((a, b) => a - b),
      50,
    );
  const trips = (row: Row) => countCell(row.samples, (c) => c.handshakeRoundTrips + c.flights);
  const perRtt = (row: Row) => (rtt > 0 ? `${(p50(row) / rtt).toFixed(2)} ×` : `${p50(row).toFixed(1)} ms`);
  const requests = at.filter((row) => row.label !== UPLOAD_LABEL && row.label !== PROCESSING_LABEL);
  const upload = at.find((row) => row.label === UPLOAD_LABEL);
  const processing = at.find((row) => row.label === PROCESSING_LABEL);
  const latencies = requests.map((row) => (rtt > 0 ? p50(row) / rtt : p50(row))).sort((a, b) => a - b);
  const digits = rtt > 0 ? 2 : 1;
  const parts = [
    `requests ${[...new Set(requests.map(trips))].join(", ")} round trips, p50 ${latencies[0]!.toFixed(digits)}–${latencies.at(-1)!.toFixed(digits)}${rtt > 0 ? " × RTT" : " ms"}`,
    ...(upload ? [`upload ${trips(upload)} round trips, ${perRtt(upload)}`] : []),
    ...(processing
      ? [`processing ${trips(processing)} round trips, p50 ${p50(processing).toFixed(1)} ms${rtt > 0 ? ` (${perRtt(processing)})` : ""}`]
      : []),
  ];
  return `RTT ${rtt} ms, ${handshakes} handshakes: ${parts.join("; ")}`;
}

function render(rows: Row[], info: { date: string; code: string; machine: string; postgres: string }): string {
  const lines: string[] = [];
  lines.push(`## The edge path: round trips per request (\`npm run bench:edge\`)${SECTION === "edge-bench" ? "" : ` — ${SECTION}`}`);
  lines.push("");
  lines.push(
    "Command: `npm run bench:edge` (script `tsx bench/edge-bench.ts`). Definitions and the choices they led to: [docs/edge-path.md](docs/edge-path.md).",
  );
  lines.push("");
  lines.push(`- Date: ${info.date}`);
  lines.push(`- Code: ${info.code}`);
  lines.push(`- Machine: ${info.machine}`);
  lines.push(
    `- Path: \`npm run dev\` (the Worker under wrangler dev, Neon driver over WebSocket, the local bridge) on ${info.postgres}, a database made for the run and dropped after it`,
  );
  lines.push(
    `- Emulated network (the bridge): RTT/2 each way between the Worker and the database, 3 handshake round trips (TCP, TLS 1.3, WebSocket upgrade) per new connection; ${REQUESTS} sequential requests per type and RTT after ${WARMUP} warm-up requests (a warm API key)`,
  );
  lines.push(
    '- Rows with 0 handshake round trips stand for pooled connections next to the Worker (Hyperdrive); rows at 2 ms for a Worker placed next to the database (`[placement] mode = "smart"`), whose client then pays one more client↔database-region RTT per request on top (docs/edge-path.md)',
  );
  lines.push(
    "- Round trips = handshake round trips + flights (a flight: a client→server burst after which the client waits for the answer); statements = Parse + Query messages. Counted on the Worker's fetch sessions for requests, on its queue sessions for processing",
  );
  lines.push("");
  lines.push(
    "| Request | RTT (ms) | Handshake RTTs per connection | Connections | Round trips | of which flights | Statements | p50 (ms) | p50 / RTT |",
  );
  lines.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const row of rows) {
    const times = row.samples.map((s) => s.ms).sort((a, b) => a - b);
    const p50 = percentile(times, 50);
    lines.push(
      `| ${row.label} | ${row.rtt} | ${row.handshakes} | ${countCell(row.samples, (c) => c.connections)} | ${countCell(row.samples, (c) => c.handshakeRoundTrips + c.flights)} | ${countCell(row.samples, (c) => c.flights)} | ${countCell(row.samples, (c) => c.statements)} | ${p50.toFixed(1)} | ${row.rtt > 0 ? (p50 / row.rtt).toFixed(2) : "–"} |`,
    );
  }
  lines.push("");
  lines.push(
    "Notes: p50 is the client's time for the whole request (workerd, the Durable Object call of the key, the queries); at RTT 0 it is the local cost alone. Processing time runs from the upload's 202 until the run is no longer pending in the database (polled directly every 5 ms), and includes wrangler dev's queue delivery.",
  );
  return lines.join("\n");
}

type CacheChecks = { staleness: StalenessResult; throughput: { edge: number[]; today: number[] }; organizations: number };

const PAIRS = Number(process.env.BENCH_EDGE_PAIRS ?? 1_000);
const THROUGHPUT_REQUESTS = Number(process.env.BENCH_EDGE_THROUGHPUT_REQUESTS ?? 3_000);
const THROUGHPUT_CONCURRENCY = 10;
/** Organizations the pairs and the throughput take in turn: each key's rate limit is 600 requests a minute. */
const ORGANIZATIONS = Number(process.env.BENCH_EDGE_ORGANIZATIONS ?? 12);

/**
 * The edge cache's checks, at RTT 0: the write-then-read pairs through the edge, then the
 * throughput of a warm GET /organization through the edge against the placed Worker alone
 * (today's path: wrangler.toml under its own wrangler dev, on the same database and bridge),
 * alternated twice.
 */
async function edgeCacheChecks(options: {
  baseUrl: string;
  adminToken: string;
  fixture: EdgeFixture;
  runStatus: (projectId: string, number: number) => Promise<string>;
  counters: () => Promise<BridgeReport>;
  todayVars: Record<string, string>;
}): Promise<CacheChecks> {
  const fixtures = [options.fixture];
  while (fixtures.length < ORGANIZATIONS) {
    const fixture = await prepareEdgeFixture(options.baseUrl, options.adminToken);
    // Tests to quarantine: one processed upload.
    await measureUpload(fixture, 0, options.counters, (n) => options.runStatus(fixture.projectId, n), 0);
    fixtures.push(fixture);
  }
  log(`staleness: ${PAIRS} write-then-read pairs over ${fixtures.length} organizations`);
  const staleness = await runStalenessPairs(fixtures, { runStatus: options.runStatus, adminToken: options.adminToken }, PAIRS);
  log(`staleness: ${staleness.stale} stale of ${staleness.pairs}`);
  const keys = fixtures.map((fixture) => fixture.apiKey);
  // Both paths under wrangler dev as the round-trip test starts it (wrangler's local trace collector off, bench/limiter-wrangler.ts), on the same database and bridge.
  const started: { dev: WranglerDev; persistTo: string }[] = [];
  const start = async (edge: boolean) => {
    const persistTo = mkdtempSync(path.join(os.tmpdir(), "cia-edge-throughput-"));
    const vars = { ...options.todayVars, PUBLIC_BASE_URL: options.baseUrl };
    const dev = await startWranglerDev({ label: edge ? "bench:edge edge path" : "bench:edge today's path", edge, persistTo, vars });
    started.push({ dev, persistTo });
    return dev;
  };
  const figures = { edge: [] as number[], today: [] as number[] };
  try {
    const [today, edge] = [await start(false), await start(true)];
    for (let round = 0; round < 2; round++) {
      figures.today.push(await throughput(today.baseUrl, "/api/v1/organization", keys, THROUGHPUT_CONCURRENCY, THROUGHPUT_REQUESTS));
      figures.edge.push(await throughput(edge.baseUrl, "/api/v1/organization", keys, THROUGHPUT_CONCURRENCY, THROUGHPUT_REQUESTS));
      log(`throughput round ${round + 1}: edge ${figures.edge.at(-1)!.toFixed(0)}/s, today ${figures.today.at(-1)!.toFixed(0)}/s`);
    }
  } finally {
    for (const { dev, persistTo } of started) {
      await dev.stop();
      rmSync(persistTo, { recursive: true, force: true });
    }
  }
  return { staleness, throughput: figures, organizations: fixtures.length };
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const CACHED_WARM_LABELS = EDGE_CACHED_REQUEST_TYPES.filter((type) => !type.key.endsWith("_cold")).map((type) => type.label);

/** Per warm cached read at the longest RTT: p50 added over its p50 at RTT 0, as a fraction of the RTT. */
function addedLatency(rows: Row[]): { label: string; rtt: number; addedMs: number; perRtt: number; roundTrips: string }[] {
  const p50 = (row: Row) =>
    percentile(
      row.samples.map((s) => s.ms).sort((a, b) => a - b),
      50,
    );
  const top = Math.max(...rows.map((row) => row.rtt));
  if (top <= 0) return [];
  return CACHED_WARM_LABELS.flatMap((label) => {
    const base = rows.find((row) => row.label === label && row.rtt === 0);
    const far = rows.find((row) => row.label === label && row.rtt === top && row.handshakes > 0);
    if (!base || !far) return [];
    const addedMs = p50(far) - p50(base);
    return [
      { label, rtt: top, addedMs, perRtt: addedMs / top, roundTrips: countCell(far.samples, (c) => c.handshakeRoundTrips + c.flights) },
    ];
  });
}

function cacheHeadline(rows: Row[], checks: CacheChecks): string {
  const added = addedLatency(rows);
  const ratio = mean(checks.throughput.edge) / mean(checks.throughput.today);
  const worst = added.length ? Math.max(...added.map((a) => a.perRtt)) : Number.NaN;
  const mark = (pass: boolean) => (pass ? "PASS" : "FAIL");
  const signed = (value: number) => `${value >= 0 ? "+" : "−"}${Math.abs(value).toFixed(3)}`;
  const zeroTrips = added.every((a) => a.roundTrips === "0");
  return [
    added.length
      ? `edge-cached warm reads ${signed(worst)} × RTT added at ${added[0]!.rtt} ms at most, ${added.map((a) => a.roundTrips).join(", ")} round trips ${mark(worst <= 0.1 && zeroTrips)}`
      : "",
    `${checks.staleness.stale} stale of ${checks.staleness.pairs} write-then-read pairs ${mark(checks.staleness.stale === 0 && checks.staleness.pairs >= 1_000)}`,
    `warm GET /organization ${ratio.toFixed(2)}× today's throughput (RTT 0, concurrency ${THROUGHPUT_CONCURRENCY}) ${mark(ratio >= 2)}`,
  ]
    .filter(Boolean)
    .join("; ");
}

function renderCacheChecks(rows: Row[], checks: CacheChecks): string {
  const lines = ['### The edge cache (issue 33; docs/edge-path.md, "Edge-cached reads")', ""];
  lines.push("| Warm cached read | RTT (ms) | p50 added over RTT 0 (ms) | added / RTT | Round trips |", "|---|---:|---:|---:|---:|");
  for (const a of addedLatency(rows))
    lines.push(`| ${a.label} | ${a.rtt} | ${a.addedMs.toFixed(1)} | ${a.perRtt.toFixed(3)} | ${a.roundTrips} |`);
  lines.push(
    "",
    `Write-then-read pairs through the edge at RTT 0, over ${checks.organizations} organizations taken in turn (each read issued right after its write's answer; an upload's read right after its run is processed; an expiry's right after the quarantine's end):`,
    "",
  );
  lines.push("| Writer → read | Pairs | Stale |", "|---|---:|---:|");
  for (const [name, counts] of Object.entries(checks.staleness.byWriter)) lines.push(`| ${name} | ${counts.pairs} | ${counts.stale} |`);
  lines.push(`| **All** | ${checks.staleness.pairs} | ${checks.staleness.stale} |`, "");
  const fmt = (values: number[]) => values.map((v) => v.toFixed(0)).join(", ");
  lines.push(
    `Throughput of a warm \`GET /api/v1/organization\` at RTT 0, concurrency ${THROUGHPUT_CONCURRENCY}, ${THROUGHPUT_REQUESTS} requests per round over ${checks.organizations} keys, two rounds alternated: through the edge Worker in front of the placed one (answered from the cache; wrangler.edge.toml and wrangler.toml under one wrangler dev) ${fmt(checks.throughput.edge)} requests/s; the placed Worker alone (today's path, wrangler.toml under its own wrangler dev; both without wrangler's local trace collector) ${fmt(checks.throughput.today)} requests/s; ratio of the means ${(mean(checks.throughput.edge) / mean(checks.throughput.today)).toFixed(2)}×.`,
  );
  return lines.join("\n");
}

let dev: ChildProcess | null = null;
const admin = new pg.Client({ connectionString: SERVER_URL });
let createdDatabase: string | null = null;
let cleaning: Promise<void> | null = null;

async function stopDev(): Promise<void> {
  const child = dev;
  dev = null;
  if (!child?.pid) return;
  const pgid = child.pid;
  const members = () => processGroupMembers(pgid);
  if (members().length === 0) return;
  try {
    process.kill(-pgid, "SIGINT");
  } catch {
    return;
  }
  const deadline = Date.now() + 15_000;
  while (members().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (members().length > 0) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
}

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await stopDev().catch((error) => console.error("[bench:edge] stopping npm run dev failed:", error));
    if (createdDatabase) {
      await admin
        .query(`drop database if exists "${createdDatabase}" with (force)`)
        .catch((error) => console.error(`[bench:edge] could not drop ${createdDatabase}:`, error));
      log(`dropped database ${createdDatabase}`);
    }
    await admin.end().catch(() => {});
  })();
  return cleaning;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`[bench:edge] ${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** Starts `npm run dev`'s script (tsx scripts/dev.ts) in its own process group; resolves once the Worker answers. */
async function startDev(env: Record<string, string>, baseUrl: string): Promise<void> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts/dev.ts")], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env, NO_COLOR: "1" },
  });
  dev = child;
  const tail: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding("utf8");
    stream?.on("data", (text: string) => {
      tail.push(...text.split(/\r?\n/).filter((line) => line.trim() !== ""));
      if (tail.length > 40) tail.splice(0, tail.length - 40);
    });
  }
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`npm run dev exited (${child.exitCode}):\n${tail.join("\n")}`);
    try {
      const response = await fetch(`${baseUrl}/api/v1/organization`);
      if (response.status === 401) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`npm run dev did not answer within 120 s:\n${tail.join("\n")}`);
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg()[0]!.toFixed(1);
  const code = codeVersion();
  await admin.connect();
  const postgres = (await admin.query<{ v: string }>("select version() as v")).rows[0]!.v.replace(/ on .*$/, "");
  const dbName = `cia_edge_${randomBytes(5).toString("hex")}`;
  await admin.query(`create database "${dbName}"`);
  createdDatabase = dbName;
  const url = new URL(SERVER_URL);
  url.pathname = `/${dbName}`;
  log(`created database ${dbName}`);

  const [port, bridgePort] = [await freePort(), await freePort()];
  const adminToken = randomBytes(24).toString("hex");
  const baseUrl = `http://127.0.0.1:${port}`;
  const secrets = {
    ADMIN_TOKEN: adminToken,
    CURSOR_SECRET: randomBytes(24).toString("hex"),
    SECRETS_KEY: randomBytes(32).toString("base64"),
  };
  await startDev(
    { PORT: String(port), BRIDGE_PORT: String(bridgePort), DATABASE_URL: url.toString(), ...secrets, SEED_DEMO: "false" },
    baseUrl,
  );
  log(`npm run dev is up on ${baseUrl}, bridge on 127.0.0.1:${bridgePort}`);
  const bridge = `http://127.0.0.1:${bridgePort}/__bridge`;
  const counters = async () => (await (await fetch(`${bridge}/counters`)).json()) as BridgeReport;

  const fixture = await prepareEdgeFixture(baseUrl, adminToken);
  const database = new pg.Client({ connectionString: url.toString() });
  await database.connect();
  const rows: Row[] = [];
  let cacheChecks: CacheChecks | undefined;
  let uploads = 0;
  const statusOf = async (number: number) =>
    (
      await database.query<{ status: string }>("select status from test_runs where project_id = $1 and number = $2", [
        fixture.projectId,
        number,
      ])
    ).rows[0]?.status ?? "missing";
  // The events page shows events (an empty page also asks whether the alert exists). One upload gives them a run.
  await measureUpload(fixture, uploads++, counters, statusOf, 250);
  await database.query(seedAlertEventsSql(fixture));
  const status = statusOf;

  try {
    for (const { rtt, handshakes } of SETTINGS) {
      const set = await fetch(`${bridge}/emulation?rtt_ms=${rtt}&handshake_rtts=${handshakes}`, { method: "PUT" });
      if (!set.ok) throw new Error(`setting the emulation failed: ${await set.text()}`);
      for (const type of EDGE_REQUEST_TYPES) {
        for (let i = 0; i < WARMUP; i++) await measureRequest(type, fixture, i, counters);
        const samples: Sample[] = [];
        for (let i = 0; i < REQUESTS; i++) samples.push(await measureRequest(type, fixture, i, counters));
        rows.push({ rtt, handshakes, label: type.label, samples });
        const last = samples.at(-1)!.counters;
        log(
          `RTT ${rtt}: ${type.label}: p50 ${percentile(
            samples.map((s) => s.ms).sort((a, b) => a - b),
            50,
          ).toFixed(1)} ms, ${last.handshakeRoundTrips + last.flights} round trips, ${last.statements} statements`,
        );
      }
      const upload: Sample[] = [];
      const processing: Sample[] = [];
      const quietMs = Math.max(250, 3 * rtt);
      await measureUpload(fixture, uploads++, counters, status, quietMs);
      for (let i = 0; i < REQUESTS; i++) {
        const measured = await measureUpload(fixture, uploads++, counters, status, quietMs);
        upload.push(measured.upload);
        processing.push(measured.processing);
      }
      rows.push(
        { rtt, handshakes, label: UPLOAD_LABEL, samples: upload },
        { rtt, handshakes, label: PROCESSING_LABEL, samples: processing },
      );
      for (const [label, samples] of [
        [UPLOAD_LABEL, upload],
        [PROCESSING_LABEL, processing],
      ] as const) {
        const last = samples.at(-1)!.counters;
        log(
          `RTT ${rtt}: ${label}: p50 ${percentile(
            samples.map((s) => s.ms).sort((a, b) => a - b),
            50,
          ).toFixed(1)} ms, ${last.handshakeRoundTrips + last.flights} round trips, ${last.statements} statements`,
        );
      }
    }
    const reset = await fetch(`${bridge}/emulation?rtt_ms=0&handshake_rtts=3`, { method: "PUT" });
    if (!reset.ok) throw new Error(`resetting the emulation failed: ${await reset.text()}`);
    const runStatus = async (projectId: string, number: number) =>
      (await database.query<{ status: string }>("select status from test_runs where project_id = $1 and number = $2", [projectId, number]))
        .rows[0]?.status ?? "missing";
    cacheChecks = await edgeCacheChecks({
      baseUrl,
      adminToken,
      fixture,
      runStatus,
      counters,
      todayVars: { ...secrets, DATABASE_URL: url.toString(), LOCAL_NEON_PROXY: `127.0.0.1:${bridgePort}` },
    });
  } finally {
    await database.end();
  }

  const cpus = os.cpus();
  const report = render(rows, {
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    code,
    machine: `${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}; load average ${loadAtStart} at start, ${os.loadavg()[0]!.toFixed(1)} at end`,
    postgres,
  });
  const fullReport = cacheChecks ? `${report}\n\n${renderCacheChecks(rows, cacheChecks)}` : report;
  console.log(`\n${fullReport}\n`);
  recordBenchmark({
    name: "edge",
    command: "npm run bench:edge",
    measures: "Worker↔database round trips and latency per request at emulated RTTs; the edge cache's warm reads, staleness and throughput",
    figure: cacheChecks ? `${headline(rows)}; ${cacheHeadline(rows, cacheChecks)}` : headline(rows),
    target:
      "≈ 1 round trip per request (issue 18); a small run processed ≤ 1 s at 150 ms; edge-cached warm reads ≤ 0.1 × RTT added at 150 ms with 0 round trips, 0 stale in 1,000 write-then-read pairs, warm GET /organization ≥ 2 × today's throughput at RTT 0 and concurrency 10 (issue 33; docs/edge-path.md)",
    report: fullReport,
    variant: SECTION === "edge-bench" ? undefined : SECTION,
  });
}

main()
  .catch((error) => {
    console.error("[bench:edge] failed:", error);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
