/**
 * `npm run bench:edge-memory`: peak memory of the Worker's upload request and of its queue
 * consumer for JUnit XML reports, or the same reports as JSON envelopes, of several sizes, measured in workerd (`wrangler dev`, the Worker,
 * its queue, the local bridge to a Postgres database made for the run and dropped after it).
 *
 * What is measured (docs/edge-path.md#memory):
 * - The isolate: its V8 heap in use plus the ArrayBuffers' backing stores, from the inspector
 *   (Chrome DevTools protocol, `Runtime.getHeapUsage`: usedSize + backingStorageSize), sampled back
 *   to back. The inspector answers between JavaScript tasks only, so a peak inside one long
 *   synchronous step (a JSON.parse) can be missed; hence the second figure.
 * - workerd's resident memory (/proc/PID/status VmRSS), sampled every 2 ms from outside, whatever
 *   the isolate does: growth over its value when the phase starts. It includes allocator slack
 *   and everything else workerd runs (the Durable Objects, wrangler's helper Workers).
 * Garbage is collected (HeapProfiler.collectGarbage) before each upload. The request phase runs
 * from sending the upload until its answer; the consumer phase from the answer until the run is no
 * longer pending, every checked alert's state holds it, and the consumer's database sessions are
 * quiet.
 *
 * Env: BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres), BENCH_MEMORY_CASES
 * (10000,115000: cases per report; 10,000 ≈ 2.7 MiB, 115,000 ≈ 31 MiB), BENCH_MEMORY_SUITES (top-level
 * suites per report; default one per 25 cases; 1: every case in one suite, as pytest writes), BENCH_MEMORY_GZIP (false;
 * true: also send each report gzip-compressed; only: send it gzip-compressed only), BENCH_MEMORY_LIVE
 * (false: collect garbage before each sample, so that the peaks are of live memory; sampling is then
 * slower and processing too), BENCH_MEMORY_FORMATS (xml: `xml`, `json` or both, comma-separated;
 * JSON is the XML report's suites and cases as the JSON envelope's `suites`, written by the same
 * parser, so both carry the same run), BENCH_MEMORY_UPLOAD_LIMIT (the Worker's
 * UPLOAD_LIMIT_BYTES for the run; default: wrangler.toml's), BENCH_MEMORY_SECTION (a name for a
 * variant of the run, e.g. edge-memory-64mib: the history's heading and the table's figure, where
 * BENCH_MEMORY_HEADING is not set), BENCH_MEMORY_HEADING (added to the report's title, and the
 * variant's name), BENCH_MEMORY_WRITE=false or BENCH_NO_RECORD=1 (the report printed only),
 * BENCH_OUTPUT=<file> (the report written there instead of recorded in BENCHMARKS.md and
 * bench/history/edge-memory.md: bench/report.ts),
 * BENCH_MEMORY_WAIT_MS (600000: how long a run may take from its 202 until processed and checked).
 * MINIFLARE_WORKERD_V8_FLAGS (read by miniflare: V8 flags for workerd, such as
 * `--max-old-space-size=48`, to run the isolate with a capped heap as a memory-limited one is).
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import pg from "pg";
import WebSocket from "ws";
import { startLocalDatabase } from "../src/node/local-neon";
import { QUEUE_APPLICATION, countersOf, prepareEdgeFixture } from "./edge-requests";
import { generateJUnit } from "./junit-generator";
import { parseJUnit } from "../src/ingest/junit";
import type { ReportSuite } from "../src/ingest/report";
import { type WranglerDev, processGroupMembers, startWranglerDev } from "./limiter-wrangler";
import { recordBenchmark } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const CASES = (process.env.BENCH_MEMORY_CASES ?? "10000,115000").split(",").map(Number);
/** "true": each report plain, then gzip-compressed; "only": gzip-compressed only (its baseline then follows no large consumer's garbage). */
const GZIP = process.env.BENCH_MEMORY_GZIP === "true" || process.env.BENCH_MEMORY_GZIP === "only";
const PLAIN = process.env.BENCH_MEMORY_GZIP !== "only";
/** Collect garbage before each sample: the peaks are then of live memory, not of the heap in use. */
const LIVE = process.env.BENCH_MEMORY_LIVE === "true";
/** Top-level suites per report (the generator's default: one per 25 cases); 1 is one suite holding every case, as pytest writes. */
const SUITES = process.env.BENCH_MEMORY_SUITES ? Number(process.env.BENCH_MEMORY_SUITES) : null;
const FORMATS = (process.env.BENCH_MEMORY_FORMATS ?? "xml").split(",").map((format) => format.trim()) as ("xml" | "json")[];

/** The XML report's run as the JSON envelope (docs/uploads.md): the same suites, cases, texts and attempts. */
function jsonReportOf(xml: string): string {
  const suite = (s: ReportSuite): unknown => ({
    name: s.name,
    duration_ms: s.durationMs ?? null,
    cases: s.cases.map((c) => ({
      name: c.name,
      classname: c.classname ?? null,
      file: c.file ?? null,
      status: c.status,
      duration_ms: c.durationMs ?? null,
      failure_type: c.failureType ?? null,
      failure_message: c.failureMessage ?? null,
      failure_text: c.failureText ?? null,
      ...(c.attempts?.length
        ? { attempts: c.attempts.map((a) => ({ status: a.status, duration_ms: a.durationMs, failure_message: a.failureMessage })) }
        : {}),
      system_out: c.systemOut ?? null,
      system_err: c.systemErr ?? null,
    })),
    ...(s.suites?.length ? { suites: s.suites.map(suite) } : {}),
  });
  const report = parseJUnit(xml);
  return JSON.stringify({ branch: "main", duration_ms: report.durationMs ?? null, suites: report.suites.map(suite) });
}
const SECTION = process.env.BENCH_MEMORY_SECTION || "edge-memory";
/** How long a run may take from its 202 until processed and checked before it is reported as it stands. */
const WAIT_MS = Number(process.env.BENCH_MEMORY_WAIT_MS ?? 600_000);
const log = (message: string) => console.log(`[bench:edge-memory] ${message}`);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** A Chrome DevTools protocol session with the Worker's isolate. */
class Inspector {
  private nextId = 1;
  private readonly waiting = new Map<number, (result: Record<string, unknown>) => void>();
  private constructor(private readonly socket: WebSocket) {
    socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as { id?: number; result?: Record<string, unknown>; error?: unknown };
      if (message.id === undefined) return;
      this.waiting.get(message.id)?.(message.result ?? { error: message.error });
      this.waiting.delete(message.id);
    });
  }

  static async open(port: number): Promise<Inspector> {
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { title?: string; webSocketDebuggerUrl: string }[];
    // wrangler lists the Worker under its name; its helper Workers have other names.
    const target = targets.find((t) => t.title?.includes("ci-analytics-api")) ?? targets[0];
    if (!target) throw new Error("the inspector lists no Worker");
    const socket = new WebSocket(target.webSocketDebuggerUrl);
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    return new Inspector(socket);
  }

  call(method: string, params: Record<string, unknown> = {}, timeoutMs = 60_000): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`the inspector did not answer ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, (result) => {
        clearTimeout(timer);
        resolve(result);
      });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** V8 heap in use plus ArrayBuffer backing stores, in bytes. */
  async isolateBytes(): Promise<{ heap: number; buffers: number }> {
    const usage = (await this.call("Runtime.getHeapUsage")) as { usedSize?: number; backingStorageSize?: number };
    return { heap: usage.usedSize ?? 0, buffers: usage.backingStorageSize ?? 0 };
  }

  close(): void {
    this.socket.close();
  }
}

function rssBytes(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** workerd's CPU time so far (user + system, all its threads), in seconds: /proc/PID/stat in clock ticks (100 a second on Linux). */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8")
      .replace(/^.*\) /s, "")
      .split(" ");
    // After the command's closing parenthesis, utime and stime are the 12th and 13th fields.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

type Peak = { isolate: number; heap: number; buffers: number; rss: number; samples: number; lost: boolean; atMs: number; cpu: number };

/**
 * Samples until stopped: the isolate's peak (heap + buffers, and its parts at that moment) and
 * workerd's RSS peak. `split` ends one part of the phase: it returns that part's peak and starts
 * the next from zero (the consumer: storing the run, then its alert checks).
 */
function sampler(inspector: Inspector, workerdPid: number) {
  let running = true;
  const started = performance.now();
  let peak: Peak = { isolate: 0, heap: 0, buffers: 0, rss: 0, samples: 0, lost: false, atMs: 0, cpu: 0 };
  let cpuAtStart = cpuSeconds(workerdPid);
  const rssTimer = setInterval(() => {
    peak.rss = Math.max(peak.rss, rssBytes(workerdPid));
  }, 2);
  const isolateLoop = (async () => {
    while (running) {
      let sample: { heap: number; buffers: number };
      try {
        // Live memory: what is left after a full collection, which V8 would run before failing an allocation.
        if (LIVE) await inspector.call("HeapProfiler.collectGarbage");
        sample = await inspector.isolateBytes();
      } catch (error) {
        // The isolate stopped answering (a crash, workerd restarting it): the phase's figure is lost, not the run.
        log(`isolate sampling stopped: ${(error as Error).message}`);
        peak.lost = true;
        return;
      }
      const { heap, buffers } = sample;
      peak.samples++;
      if (heap + buffers > peak.isolate) Object.assign(peak, { isolate: heap + buffers, heap, buffers, atMs: performance.now() - started });
    }
  })();
  const stop = async () => {
    running = false;
    clearInterval(rssTimer);
    await isolateLoop;
    peak.rss = Math.max(peak.rss, rssBytes(workerdPid));
    peak.cpu = cpuSeconds(workerdPid) - cpuAtStart;
    return peak;
  };
  const split = (): Peak => {
    const cpuNow = cpuSeconds(workerdPid);
    const part = { ...peak, rss: Math.max(peak.rss, rssBytes(workerdPid)), cpu: cpuNow - cpuAtStart };
    peak = { isolate: 0, heap: 0, buffers: 0, rss: 0, samples: 0, lost: part.lost, atMs: 0, cpu: 0 };
    cpuAtStart = cpuNow;
    return part;
  };
  return Object.assign(stop, { split });
}

type Measured = {
  label: string;
  bodyBytes: number;
  reportBytes: number;
  status: number;
  outcome: string;
  baseline: { isolate: number; rss: number };
  request: Peak;
  /** Until the run is processed (parsing and storing it). */
  storing: Peak | null;
  /** After: the alert checks and what follows them. */
  consumer: Peak | null;
  processingMs: number | null;
};

function codeVersion(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const commit = git("rev-parse", "--short", "HEAD");
    return git("status", "--porcelain", "--", "src", "drizzle", "wrangler.toml") !== ""
      ? `commit ${commit} plus uncommitted changes`
      : `commit ${commit}`;
  } catch {
    return "unknown";
  }
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg()[0]!.toFixed(1);
  const code = codeVersion();
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  const postgres = (await admin.query<{ v: string }>("select version() as v")).rows[0]!.v.replace(/ on .*$/, "");
  const dbName = `cia_mem_${randomBytes(5).toString("hex")}`;
  await admin.query(`create database "${dbName}"`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${dbName}`;
  const persistTo = mkdtempSync(path.join(os.tmpdir(), "cia-mem-"));
  const local = await startLocalDatabase({ databaseUrl: url.toString(), log: () => {} });
  let worker: WranglerDev | null = null;
  let inspector: Inspector | null = null;
  const results: Measured[] = [];
  try {
    if (!local.bridge) throw new Error("the bench database must be on this machine");
    const adminToken = randomBytes(24).toString("hex");
    worker = await startWranglerDev({
      label: "edge memory",
      persistTo,
      vars: {
        DATABASE_URL: local.workerDatabaseUrl,
        LOCAL_NEON_PROXY: local.localNeonProxy!,
        ADMIN_TOKEN: adminToken,
        CURSOR_SECRET: randomBytes(24).toString("hex"),
        SECRETS_KEY: randomBytes(32).toString("base64"),
        ...(process.env.BENCH_MEMORY_UPLOAD_LIMIT ? { UPLOAD_LIMIT_BYTES: process.env.BENCH_MEMORY_UPLOAD_LIMIT } : {}),
      },
      readyTimeoutMs: 120_000,
    });
    log(`wrangler dev is up on ${worker.baseUrl}, inspector on ${worker.inspectorPort}`);
    const workerd = processGroupMembers(worker.pgid).find((m) => /(^|\/)workerd\s/.test(m.command));
    if (!workerd) throw new Error("no workerd process in wrangler's group");
    inspector = await Inspector.open(worker.inspectorPort);
    log(`inspector connected: ${JSON.stringify(await inspector.isolateBytes())}`);
    const fixture = await prepareEdgeFixture(worker.baseUrl, adminToken);
    const database = new pg.Client({ connectionString: url.toString() });
    await database.connect();
    const runStatus = async (number: number) =>
      (
        await database.query<{ status: string; tests_count: number }>(
          "select status, tests_count from test_runs where project_id = $1 and number = $2",
          [fixture.projectId, number],
        )
      ).rows[0] ?? { status: "missing", tests_count: 0 };

    const variants = FORMATS.flatMap((format) =>
      CASES.flatMap((cases) => [...(PLAIN ? [{ format, cases, gzip: false }] : []), ...(GZIP ? [{ format, cases, gzip: true }] : [])]),
    );
    for (const { format, cases, gzip } of variants) {
      const xml = generateJUnit({ cases, seed: cases, ...(SUITES ? { suites: SUITES } : {}) });
      const report = Buffer.from(format === "json" ? jsonReportOf(xml) : xml);
      const body = gzip ? gzipSync(report) : report;
      const label = `${cases.toLocaleString("en-US")} cases${SUITES ? ` in ${SUITES === 1 ? "one suite" : `${SUITES} suites`}` : ""}, ${mib(report.byteLength)} of ${format === "json" ? "JSON" : "JUnit XML"}${gzip ? ` (gzip: ${mib(body.byteLength)})` : ""}`;
      log(`${label}: collecting garbage`);
      await inspector.call("HeapProfiler.collectGarbage", {}, 10_000).catch((error: Error) => log(error.message));
      await new Promise((r) => setTimeout(r, 500));
      const base = await inspector.isolateBytes();
      const baseline = { isolate: base.heap + base.buffers, rss: rssBytes(workerd.pid) };
      log(`${label}: uploading (isolate ${mib(baseline.isolate)})`);
      const stopRequest = sampler(inspector, workerd.pid);
      const response = await fetch(`${worker.baseUrl}/uploads/v1/test_runs?branch=main`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${fixture.uploadToken}`,
          "content-type": format === "json" ? "application/json" : "application/xml",
          ...(gzip ? { "content-encoding": "gzip" } : {}),
        },
        body,
      });
      const answer = (await response.json()) as { number?: number; error?: { code: string } };
      const request = await stopRequest();
      let consumer: Measured["consumer"] = null;
      let storing: Measured["storing"] = null;
      let outcome = answer.error?.code ?? "accepted";
      let processingMs: number | null = null;
      if (response.status === 202) {
        const accepted = performance.now();
        const stopConsumer = sampler(inspector, workerd.pid);
        let run = await runStatus(answer.number!);
        while (run.status === "pending" && performance.now() - accepted < WAIT_MS) {
          await new Promise((r) => setTimeout(r, 20));
          run = await runStatus(answer.number!);
        }
        processingMs = performance.now() - accepted;
        storing = stopConsumer.split();
        // The consumer's checks run after the run is marked processed, for a large run for many
        // seconds: wait until every checked alert's state holds the run (a quiet second alone
        // could start the next upload before a large run's checks had ended).
        const checksDone = async () =>
          (
            await database.query<{ done: boolean }>(
              `select (select count(*) from alert_check_states where project_id = $1 and last_run_number >= $2)
                   >= (select count(*) from alerts where project_id = $1 and (active or alert_type = 'test_flakiness')) as done`,
              [fixture.projectId, answer.number!],
            )
          ).rows[0]!.done;
        while (run.status === "processed" && !(await checksDone()) && performance.now() - accepted < WAIT_MS)
          await new Promise((r) => setTimeout(r, 50));
        // Then until its sessions are quiet (the test events' read after the checks).
        let last = JSON.stringify(countersOf(await local.bridge.counters(), await local.bridge.counters(), QUEUE_APPLICATION));
        let previous = await local.bridge.counters();
        for (;;) {
          await new Promise((r) => setTimeout(r, 1_000));
          const now = await local.bridge.counters();
          const delta = JSON.stringify(countersOf(previous, now, QUEUE_APPLICATION));
          previous = now;
          if (delta === last || delta === JSON.stringify({ connections: 0, handshakeRoundTrips: 0, flights: 0, statements: 0 })) break;
          last = delta;
        }
        consumer = await stopConsumer();
        outcome = run.status === "processed" ? `processed, ${run.tests_count} cases` : run.status;
        // What workerd said (an isolate over its memory limit, a consumer's error) is the only account of a run not processed.
        if (run.status !== "processed") log(`${label}: the run is ${run.status}; wrangler dev's last lines:\n${worker.output()}`);
      }
      const measured: Measured = {
        label,
        bodyBytes: body.byteLength,
        reportBytes: report.byteLength,
        status: response.status,
        outcome,
        baseline,
        request,
        storing,
        consumer,
        processingMs,
      };
      results.push(measured);
      log(
        `${label}: HTTP ${response.status} (${outcome}); request peak ${mib(request.isolate)} isolate (+${mib(request.isolate - baseline.isolate)}), RSS +${mib(request.rss - baseline.rss)}` +
          (consumer && storing
            ? `; consumer peak until processed ${mib(storing.isolate)} isolate, RSS +${mib(storing.rss - baseline.rss)}; processed after ${((processingMs ?? 0) / 1000).toFixed(1)} s;` +
              ` then (alert checks) peak ${mib(consumer.isolate)} isolate, RSS +${mib(consumer.rss - baseline.rss)}`
            : ""),
      );
    }
    await database.end();
  } finally {
    inspector?.close();
    await worker?.stop();
    await local.close();
    rmSync(persistTo, { recursive: true, force: true });
    await admin.query(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
  }

  const cpus = os.cpus();
  const lines = [
    `## The Worker's memory: upload request and queue consumer (\`npm run bench:edge-memory\`)${process.env.BENCH_MEMORY_HEADING ? ` — ${process.env.BENCH_MEMORY_HEADING}` : ""}`,
    "",
    `Command: \`${process.env.BENCH_MEMORY_COMMAND ?? "npm run bench:edge-memory"}\` (script \`tsx bench/edge-memory.ts\`). What is sampled and why: [docs/edge-path.md](docs/edge-path.md#memory).`,
    "",
    `- Date: ${new Date().toISOString().replace(/\.\d+Z$/, "Z")}`,
    `- Code: ${code}`,
    `- Machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}; load average ${loadAtStart} at start, ${os.loadavg()[0]!.toFixed(1)} at end`,
    `- Path: the Worker under wrangler dev (workerd), its queue, the Neon driver through the local bridge, on ${postgres}`,
    ...(process.env.MINIFLARE_WORKERD_V8_FLAGS
      ? [
          `- workerd's V8 flags: \`${process.env.MINIFLARE_WORKERD_V8_FLAGS}\` (MINIFLARE_WORKERD_V8_FLAGS): the isolate's heap capped, so V8 collects garbage as a memory-limited isolate must, and a run whose live memory does not fit fails`,
        ]
      : []),
    `- Isolate = V8 heap in use + ArrayBuffer backing stores (inspector \`Runtime.getHeapUsage\`), peak of back-to-back samples${LIVE ? ", each taken right after a forced full collection (HeapProfiler.collectGarbage): live memory, garbage excluded (BENCH_MEMORY_LIVE=true)" : " (garbage not yet collected included)"}; the baseline is after a forced GC before the upload. workerd RSS: growth over the baseline, sampled every 2 ms from outside`,
    "",
    "Consumer: until processed = from the upload's answer until the run is processed (reading, parsing and storing it); alert checks = from then until the consumer's database sessions are quiet.",
    "",
    "workerd CPU: the user and system time of the whole workerd process (every thread, the local R2 and queue included) during the phase, an upper bound of the isolate's CPU time.",
    "",
    "| Report | Body sent | Answer | Isolate before | Request: isolate peak | Request: workerd RSS growth | Consumer until processed: isolate peak | Consumer, alert checks: isolate peak | Consumer: workerd RSS growth | 202 → processed | workerd CPU: request, consumer |",
    "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...results.map(
      (r) =>
        `| ${r.label} | ${mib(r.bodyBytes)} | ${r.status} ${r.outcome} | ${mib(r.baseline.isolate)} | ${mib(r.request.isolate)} (heap ${mib(r.request.heap)}, buffers ${mib(r.request.buffers)})${r.request.lost ? ", then the isolate stopped answering" : ""} | ${mib(r.request.rss - r.baseline.rss)} | ${r.storing ? `${mib(r.storing.isolate)} (heap ${mib(r.storing.heap)}, buffers ${mib(r.storing.buffers)})` : "–"} | ${r.consumer ? `${mib(r.consumer.isolate)} (heap ${mib(r.consumer.heap)}, buffers ${mib(r.consumer.buffers)})${r.consumer.lost ? ", then the isolate stopped answering" : ""}` : "–"} | ${r.consumer && r.storing ? mib(Math.max(r.consumer.rss, r.storing.rss) - r.baseline.rss) : "–"} | ${r.processingMs === null ? "–" : `${(r.processingMs / 1000).toFixed(1)} s`} | ${r.request.cpu.toFixed(1)} s, ${r.storing && r.consumer ? `${(r.storing.cpu + r.consumer.cpu).toFixed(1)} s` : "–"} |`,
    ),
  ];
  const report = lines.join("\n");
  console.log(`\n${report}\n`);
  if (process.env.BENCH_MEMORY_WRITE !== "false") {
    const flags = process.env.MINIFLARE_WORKERD_V8_FLAGS;
    const heap = flags ? `V8 flags \`${flags}\`` : LIVE ? "live memory" : "default heap, garbage included";
    const processed = results.filter((r) => r.outcome.startsWith("processed")).length;
    const consumerPeak = Math.max(0, ...results.flatMap((r) => [r.storing?.isolate ?? 0, r.consumer?.isolate ?? 0]));
    recordBenchmark({
      name: "edge-memory",
      command: "npm run bench:edge-memory",
      measures: "Peak memory of the Worker's upload request and queue consumer in workerd (isolate: V8 heap + ArrayBuffers)",
      figure:
        `${heap}, ${results.length} reports (${FORMATS.join(" and ").toUpperCase()} up to ${mib(Math.max(...results.map((r) => r.reportBytes)))}${GZIP ? (PLAIN ? ", plain and gzip" : ", gzip") : ""}): ` +
        `${processed} of ${results.length} processed, isolate peak: request ≤ ${mib(Math.max(...results.map((r) => r.request.isolate)))}, consumer ≤ ${mib(consumerPeak)}`,
      target: "isolate < 64 MiB, measured with the heap capped (docs/edge-path.md#memory)",
      report,
      variant: process.env.BENCH_MEMORY_HEADING || (SECTION === "edge-memory" ? undefined : SECTION),
    });
  }
}

main().catch((error) => {
  console.error("[bench:edge-memory] failed:", error);
  process.exitCode = 1;
});
