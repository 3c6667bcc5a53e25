/** Statistics, the report and the headline figure of the limiter benchmark (bench/limiter-bench.ts). */

export type Stats = { n: number; p50: number; p90: number; p99: number; mean: number; max: number };

/** Nearest-rank percentile of an ascending list (as bench/api-bench.ts computes it). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function stats(values: number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = sorted.reduce((s, v) => s + v, 0) / (sorted.length || 1);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    mean,
    max: sorted.at(-1) ?? Number.NaN,
  };
}

export type CpuPerRequest = { workerd: number; wrangler: number };

export type EndpointResult = {
  endpoint: string;
  /** Plain text after the request, e.g. " without an API key". */
  suffix: string;
  expectedStatus: number;
  /** Measured pairs (requests per variant). */
  requests: number;
  /** The endpoint the latency target is judged on. */
  target: boolean;
  /** CPU time (ms) per measured request of each variant's processes, from /proc. */
  cpuPerRequest: { durableObject: CpuPerRequest; inMemory: CpuPerRequest };
  durableObject: Stats;
  inMemory: Stats;
  /** Median of (DO − in-memory) over the N adjacent pairs. */
  pairedMedian: number;
  /** p50 difference in the first and the last quarter of the run (drift as the keys' windows fill). */
  firstQuarterDeltaP50: number;
  lastQuarterDeltaP50: number;
};

export type ConcurrencyResult = { variant: string; requests: number; seconds: number; latency: Stats };

export type FirstRequests = { variant: string; firstInProcess: number; perKey: Stats };

export type Report = {
  date: string;
  code: string;
  machine: string;
  runtime: string;
  database: string;
  keys: number;
  maxRequestsPerKey: number;
  requestsPerEndpoint: number;
  warmupPairs: number;
  wallSeconds: number;
  bundle: { raw: number; gzip: number } | null;
  bundleError?: string;
  endpoints: EndpointResult[];
  concurrency: ConcurrencyResult[];
  concurrencyLevel: number;
  firstRequests: FirstRequests[];
  /** Where wrangler restarted workerd mid-run (source files changed); empty in a clean run. */
  reloads: string[];
  targets: { bundleGzipKiB: number; addedP50Ms: number };
};

const ms = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const signed = (n: number, digits = 2) => (Number.isFinite(n) ? `${n >= 0 ? "+" : "−"}${Math.abs(n).toFixed(digits)}` : "n/a");
const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");

/** Whether each target was met (null = not measured). */
export function targetResults(report: Report): { latency: boolean | null; bundle: boolean | null } {
  const auth = report.endpoints.find((e) => e.target);
  return {
    latency: auth ? auth.durableObject.p50 - auth.inMemory.p50 <= report.targets.addedP50Ms : null,
    bundle: report.bundle ? report.bundle.gzip <= report.targets.bundleGzipKiB : null,
  };
}

/** The run's headline for BENCHMARKS.md's table (bench/report.ts). */
export function headlineFigure(report: Report): string {
  const auth = report.endpoints.find((e) => e.target);
  const results = targetResults(report);
  const latency = auth
    ? `added p50 ${ms(auth.durableObject.p50 - auth.inMemory.p50)} ms ${verdict(results.latency === true)} (p99 ${ms(auth.durableObject.p99 - auth.inMemory.p99)} ms)`
    : "added latency not measured";
  const bundle = report.bundle
    ? `bundle ${report.bundle.gzip.toFixed(2)} KiB ${verdict(results.bundle === true)}`
    : "bundle not measured FAIL";
  return `${latency}; ${bundle}${report.reloads.length > 0 ? " (workerd restarted mid-run)" : ""}`;
}

export function renderReport(report: Report): string {
  const lines: string[] = [];
  const auth = report.endpoints.find((e) => e.target)!;
  const results = targetResults(report);
  const n = report.requestsPerEndpoint.toLocaleString("en-US");

  lines.push("## Durable Object limiter: added latency in local workerd, and the Worker bundle size (`npm run bench:limiter`)");
  lines.push("");
  lines.push(
    "Command: `npm run bench:limiter` (script `tsx bench/limiter-bench.ts`; also run by `npm run bench`; `BENCH_LIMITER_REQUESTS=500 npm run bench:limiter` for a quick run).",
  );
  lines.push("");
  lines.push(`- Date: ${report.date}`);
  lines.push(`- Code: ${report.code}`);
  lines.push(`- Machine: ${report.machine}`);
  lines.push(`- Runtime: ${report.runtime}`);
  lines.push(`- Database: ${report.database}`);
  lines.push(
    `- Method: two \`wrangler dev\` processes on loopback ports, identical except for the key counter: **DO** = the Worker as deployed (\`src/worker/index.ts\`, one Durable Object per API key, state written to DO storage on every admitted request); **in-memory** = \`bench/worker-in-memory-counter.ts\` (the same \`createWorkerHandler\` with one isolate-scope \`InMemoryKeyCounter\`). ` +
      `${report.keys} organizations (one API key each), used in rotation so no key passes ${report.maxRequestsPerKey} requests per variant (limit 600 per rolling minute). ` +
      `Every key is warmed on both variants first (its key id is cached, its counter knows its organization), so measured requests do no key lookup in the database. ` +
      `Then ${n} requests per variant per endpoint (fewer where the table says), one at a time from one client, alternating DO / in-memory in A B B A order (after ${report.warmupPairs} unmeasured pairs per endpoint); every response's status is checked. Latency = client-side time to the full response body.`,
  );
  lines.push(`- Run time: ${report.wallSeconds.toFixed(0)} s in all`);
  if (report.reloads.length > 0) {
    lines.push(
      `- **Warning: wrangler restarted workerd mid-run (a source file changed while measuring): ${report.reloads.join("; ")}. Those figures include a cold Worker and lost counters; re-run without editing files.**`,
    );
  }
  lines.push("");
  lines.push("| Target | Measured | Target | Result |");
  lines.push("|---|---:|---:|---|");
  lines.push(
    `| Limiter added latency, p50 (DO − in-memory, \`GET /api/v1/projects?limit=0\`) | ${ms(auth.durableObject.p50 - auth.inMemory.p50)} ms | ≤ ${report.targets.addedP50Ms} ms | ${verdict(results.latency === true)} |`,
  );
  lines.push(`| Limiter added latency, p99 (same requests) | ${ms(auth.durableObject.p99 - auth.inMemory.p99)} ms | none | reported |`);
  if (report.bundle) {
    lines.push(
      `| Worker bundle, gzipped (\`npm run build\`: ${report.bundle.raw.toFixed(2)} KiB minified) | ${report.bundle.gzip.toFixed(2)} KiB | ≤ ${report.targets.bundleGzipKiB} KiB | ${verdict(results.bundle === true)} |`,
    );
  } else {
    lines.push(
      `| Worker bundle, gzipped (\`npm run build\`) | not measured (${report.bundleError ?? "build failed"}) | ≤ ${report.targets.bundleGzipKiB} KiB | FAIL |`,
    );
  }
  lines.push("");
  lines.push("Sequential latency per request, client side (ms); Δ = DO − in-memory:");
  lines.push("");
  lines.push(
    "| Endpoint (status every time) | Requests per variant | DO p50 | DO p99 | DO mean | In-memory p50 | In-memory p99 | In-memory mean | Δ p50 | Δ p99 | Δ mean | Δ median of pairs |",
  );
  lines.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const e of report.endpoints) {
    const d = e.durableObject;
    const m = e.inMemory;
    lines.push(
      `| \`${e.endpoint}\`${e.suffix} (${e.expectedStatus})${e.target ? " **target**" : ""} | ${e.requests} | ${ms(d.p50)} | ${ms(d.p99)} | ${ms(d.mean)} | ${ms(m.p50)} | ${ms(m.p99)} | ${ms(m.mean)} | ${signed(d.p50 - m.p50)} | ${signed(d.p99 - m.p99)} | ${signed(d.mean - m.mean)} | ${signed(e.pairedMedian)} |`,
    );
  }
  lines.push("");
  lines.push(
    "CPU time per measured request (ms, user + system from /proc, over the sequential run of each endpoint): workerd = the Worker (and, for DO, its Durable Objects); wrangler = wrangler's Node processes (the local HTTP front):",
  );
  lines.push("");
  lines.push("| Endpoint | DO workerd | In-memory workerd | Δ workerd | DO wrangler | In-memory wrangler |");
  lines.push("|---|---:|---:|---:|---:|---:|");
  for (const e of report.endpoints) {
    const d = e.cpuPerRequest.durableObject;
    const m = e.cpuPerRequest.inMemory;
    lines.push(
      `| \`${e.endpoint}\`${e.suffix} | ${ms(d.workerd, 3)} | ${ms(m.workerd, 3)} | ${signed(d.workerd - m.workerd, 3)} | ${ms(d.wrangler, 3)} | ${ms(m.wrangler, 3)} |`,
    );
  }
  lines.push("");
  if (report.concurrency.length > 0) {
    lines.push(
      `Context: ${report.concurrencyLevel} requests in flight (\`GET /api/v1/projects?limit=0\`, each variant measured in two halves, order DO, in-memory, in-memory, DO):`,
    );
    lines.push("");
    lines.push("| Variant | Requests | req/s | p50 (ms) | p99 (ms) | mean (ms) |");
    lines.push("|---|---:|---:|---:|---:|---:|");
    for (const c of report.concurrency) {
      lines.push(
        `| ${c.variant} | ${c.requests} | ${(c.requests / c.seconds).toFixed(0)} | ${ms(c.latency.p50)} | ${ms(c.latency.p99)} | ${ms(c.latency.mean)} |`,
      );
    }
    lines.push("");
  }
  lines.push(
    "First requests (not in the tables above): a key's first request misses the key-id cache, reads the key from the database, and on DO creates the key's object (storage read in the constructor, then a write):",
  );
  lines.push("");
  lines.push("| Variant | First key request in the process (ms) | Each key's first request: p50 (ms) | max (ms) |");
  lines.push("|---|---:|---:|---:|");
  for (const f of report.firstRequests)
    lines.push(`| ${f.variant} | ${ms(f.firstInProcess, 1)} | ${ms(f.perKey.p50)} | ${ms(f.perKey.max)} |`);
  lines.push("");
  lines.push("Notes:");
  lines.push("");
  lines.push(
    "- Figures come from one run on a shared, noisy 2-core machine: the client, two wrangler (Node) processes, their workerd processes and the database share the cores. The figures that matter are the differences measured within the run, A B B A-interleaved so background drift hits both variants alike; re-run before reading much into a difference of a few tenths of a millisecond.",
  );
  lines.push(
    `- \`GET /api/v1/projects?limit=0\` is the request whose cost is authentication plus the limiter: the key gate and the rate limit run (the response carries the RateLimit headers), then query validation answers 400 \`invalid_request\` without touching the database. \`GET /api/v1/organization\` (a 200 with one query through the local Neon bridge) is context for the share of the limiter in a real request. \`GET /api/v1/projects\` without an API key (a 401 before the key gate) is the floor: what every request costs in this Worker without the key gate or a counter.`,
  );
  lines.push(
    "- Local workerd runs the Durable Object in the same process as the Worker, so the DO figures are an RPC hop within one process plus the object's SQLite storage write; in production the first call for a key also goes over the network to the colo where the key's object lives, which this benchmark cannot show. The DO writes one row per admitted request (and deletes the rows that left the window), and workerd answers the RPC only once that write is committed: locally a SQLite WAL commit with an fsync on the disk holding the DO storage, which on a busy shared disk can be most of the DO's Δ (`BENCH_LIMITER_PERSIST_DIR=/dev/shm` shows the figures without the fsync; production commits to Cloudflare's replicated storage instead). The first-quarter / last-quarter drift of Δ p50 below shows whether a fuller window costs more.",
  );
  lines.push(
    `- Δ p50 in the first and last quarter of the sequential run: ${report.endpoints.map((e) => `\`${e.endpoint}\`${e.suffix} ${signed(e.firstQuarterDeltaP50)} → ${signed(e.lastQuarterDeltaP50)} ms`).join("; ")}.`,
  );
  const floor = report.endpoints.find((e) => e.expectedStatus === 401);
  if (floor) {
    lines.push(
      `- The floor (\`${floor.endpoint}\`${floor.suffix}, p50 ${ms(floor.durableObject.p50)} / ${ms(floor.inMemory.p50)} ms, workerd CPU ${ms(floor.cpuPerRequest.durableObject.workerd)} / ${ms(floor.cpuPerRequest.inMemory.workerd)} ms per request, DO / in-memory) is what every request costs here before any key handling: mostly wrangler's local HTTP front and workerd's request handling, plus the Worker's per-request Neon pool and Drizzle instance (the app itself is built once per isolate, src/worker/index.ts). The limiter's Δ is judged on its own.`,
    );
  }
  lines.push(
    "- To split the DO's Δ into the RPC hop to the object and the object's storage write, run `BENCH_LIMITER_DO_ENTRY=bench/limiter-do-without-storage.ts BENCH_OUTPUT=/tmp/limiter.md npm run bench:limiter` (the same Worker with a DO that never writes storage) and compare.",
  );
  lines.push(
    "- wrangler's local trace collector and explorer are off unless the runtime line says otherwise (`X_LOCAL_OBSERVABILITY=false`, `X_LOCAL_EXPLORER=false`): the collector streams every invocation, the Worker's and each Durable Object call's, to a SQLite-backed object on disk (an fsync per batch) inside the same workerd, development tooling that the deployed Worker does not have and that weighs twice on the DO variant.",
  );
  lines.push(
    "- wrangler dev runs with `--log-level warn`: at the default level every request also makes a loopback call back to wrangler's Node process to print its log line, which is local-development overhead, not the Worker's.",
  );
  lines.push(
    "- Bundle: the `Total Upload … / gzip: …` line of `npm run build` (`wrangler deploy --dry-run --minify`) for the Worker as deployed (the DO variant).",
  );
  return lines.join("\n");
}
