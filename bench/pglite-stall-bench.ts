/**
 * `npm run bench:pglite-stall`: whether the embedded default (PGlite) keeps answering while it
 * processes a large run (issue 32). The real Node server (`src/node/server.ts`, as `npm start`
 * runs it) on a throwaway in-memory PGlite; an organization and a project made through the admin
 * API; a 20,000-case JUnit report (bench/junit-generator.ts, gzip-compressed) uploaded; from the
 * upload's 202 until the run is `processed`, `GET /api/v1/projects` is sent again and again, one
 * at a time, each timed. Its p50, p99 and longest wait are set beside the same GET on the idle
 * server, measured just before. Target: p99 ≤ 100 ms while the run is processed. The GETs go on
 * for BENCH_STALL_AFTER_MS more (15 s) once the run is processed, while its alert checks run (in
 * slices on PGlite: docs/alert-checks.md), reported as a window of their own: nothing over HTTP
 * says when the checks are done, so the window is a time, long enough for a 20,000-case run's;
 * one GET every 30 ms at most, with a second organization's key (one key's 600 a minute).
 * With about 100 requests while the run is processed, the p99 is the second-longest wait: the
 * report gives the longest too.
 *
 * Env: BENCH_STALL_CASES (20000), BENCH_STALL_AFTER_MS (15000), BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file> (bench/report.ts).
 */
import os from "node:os";
import { gzipSync } from "node:zlib";
import { type ServerProcess, startServerProcess } from "../test/support/server-process";
import { generateJUnit } from "./junit-generator";
import { currentCommit, recordBenchmark } from "./report";

const CASES = Number(process.env.BENCH_STALL_CASES ?? 20_000);
const AFTER_MS = Number(process.env.BENCH_STALL_AFTER_MS ?? 15_000);
const AFTER_INTERVAL_MS = 30;
const IDLE_REQUESTS = 300;
const TARGET_P99_MS = 100;
const ADMIN_TOKEN = "pglite-stall-bench-admin-token";
const log = (message: string) => console.error(`[pglite-stall] ${message}`);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function timedGet(url: string, apiKey: string): Promise<number> {
  const start = performance.now();
  const response = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` } });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${url}: HTTP ${response.status}`);
  return performance.now() - start;
}

/** An organization with one project: the API key and the upload token. */
async function organization(server: ServerProcess): Promise<{ apiKey: string; uploadToken: string }> {
  const json = { "content-type": "application/json" };
  const org = await server.call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Stall" }), json);
  if (org.status !== 201) throw new Error(`organization: ${org.status} ${JSON.stringify(org.body)}`);
  const project = await server.call(
    "POST",
    `/admin/v1/organizations/${org.body.organization.id}/projects`,
    ADMIN_TOKEN,
    JSON.stringify({ name: "stall" }),
    json,
  );
  if (project.status !== 201) throw new Error(`project: ${project.status} ${JSON.stringify(project.body)}`);
  return { apiKey: org.body.api_key.secret, uploadToken: project.body.upload_token };
}

async function upload(server: ServerProcess, uploadToken: string, report: Buffer, sha: string): Promise<number> {
  const res = await server.call("POST", `/uploads/v1/test_runs?branch=main&commit_sha=${sha}`, uploadToken, report as unknown as string, {
    "content-type": "application/xml",
    "content-encoding": "gzip",
  });
  if (res.status !== 202) throw new Error(`upload: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.number as number;
}

/** GET /api/v1/projects one after another until the run is processed; every 10th turn also asks the run's status (untimed). */
async function latenciesWhileProcessing(server: ServerProcess, keys: { apiKey: string; uploadToken: string }, run: number) {
  const times: number[] = [];
  const start = performance.now();
  for (let turn = 0; ; turn++) {
    times.push(await timedGet(`${server.base}/api/v1/projects`, keys.apiKey));
    if (turn % 10 !== 9) continue;
    const status = await server.call("GET", `/uploads/v1/test_runs/${run}`, keys.uploadToken);
    if (status.body.status === "processed") break;
    if (status.body.status === "failed") throw new Error(`the run failed: ${JSON.stringify(status.body)}`);
    if (performance.now() - start > 600_000) throw new Error("the run was not processed within 10 minutes");
  }
  return { times, processingMs: performance.now() - start };
}

/**
 * GET /api/v1/projects for `ms`, one every AFTER_INTERVAL_MS at most: the window after the run is
 * processed, while its alert checks run. With another organization's key (the same server, the same
 * PGlite session), so that its requests stay under one key's 600 a minute with those before.
 */
async function latenciesFor(server: ServerProcess, apiKey: string, ms: number): Promise<number[]> {
  const times: number[] = [];
  const start = performance.now();
  while (performance.now() - start < ms) {
    const sent = performance.now();
    times.push(await timedGet(`${server.base}/api/v1/projects`, apiKey));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, AFTER_INTERVAL_MS - (performance.now() - sent))));
  }
  return times;
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(2);
  const server = await startServerProcess({ DATABASE_URL: "memory://", ADMIN_TOKEN, LOG_LEVEL: "error" });
  try {
    const keys = await organization(server);
    const afterKeys = await organization(server);
    const report = gzipSync(generateJUnit({ cases: CASES, seed: 20261207 }));
    log(`report: ${CASES} cases, ${(report.length / 1024 / 1024).toFixed(1)} MiB gzip-compressed`);
    // Warm-up: one small run processed, then the GET itself.
    const small = gzipSync(generateJUnit({ cases: 200, seed: 1 }));
    const warm = await upload(server, keys.uploadToken, small, "a".repeat(40));
    await latenciesWhileProcessing(server, keys, warm);
    const idle: number[] = [];
    for (let i = 0; i < IDLE_REQUESTS; i++) idle.push(await timedGet(`${server.base}/api/v1/projects`, keys.apiKey));

    const run = await upload(server, keys.uploadToken, report, "b".repeat(40));
    const busy = await latenciesWhileProcessing(server, keys, run);
    const after = await latenciesFor(server, afterKeys.apiKey, AFTER_MS);
    const p99 = percentile(busy.times, 99);
    const met = p99 <= TARGET_P99_MS;
    log(
      `idle p99 ${percentile(idle, 99).toFixed(1)} ms; while processing p99 ${p99.toFixed(1)} ms, max ${Math.max(...busy.times).toFixed(0)} ms; ` +
        `then ${AFTER_MS / 1000} s (alert checks) p99 ${percentile(after, 99).toFixed(1)} ms, max ${Math.max(...after).toFixed(0)} ms`,
    );
    const body = [
      "## The embedded default while it processes a large run (`npm run bench:pglite-stall`)",
      "",
      `Run on ${new Date().toISOString().slice(0, 10)} at commit ${currentCommit()}, Node ${process.version}, ${os.cpus().length} cores, load average at start ${load}. The Node server as \`npm start\` runs it, on \`DATABASE_URL=memory://\` (PGlite); a ${CASES.toLocaleString("en-US")}-case JUnit report (bench/junit-generator.ts, seed 20261207, ${(report.length / 1024 / 1024).toFixed(1)} MiB gzip-compressed) uploaded; \`GET /api/v1/projects\` sent one at a time from the upload's 202 until the run is processed (every 10th turn also reads the run's status, untimed), then for ${AFTER_MS / 1000} s more while the run's alert checks run.`,
      "",
      "| Measure | Idle server | While the run is processed | The next " + AFTER_MS / 1000 + " s (its alert checks) |",
      "|---|---:|---:|---:|",
      `| Requests | ${idle.length} | ${busy.times.length} | ${after.length} |`,
      `| p50 | ${percentile(idle, 50).toFixed(1)} ms | ${percentile(busy.times, 50).toFixed(1)} ms | ${percentile(after, 50).toFixed(1)} ms |`,
      `| p99 | ${percentile(idle, 99).toFixed(1)} ms | **${p99.toFixed(1)} ms** (target ≤ ${TARGET_P99_MS} ms: ${met ? "PASS" : "FAIL"}) | ${percentile(after, 99).toFixed(1)} ms |`,
      `| Longest | ${Math.max(...idle).toFixed(1)} ms | ${Math.max(...busy.times).toFixed(0)} ms | ${Math.max(...after).toFixed(0)} ms |`,
      "",
      `From the 202 to \`processed\`: ${(busy.processingMs / 1000).toFixed(1)} s.`,
    ].join("\n");
    console.log(body);
    recordBenchmark({
      name: "pglite-stall",
      command: "npm run bench:pglite-stall",
      measures: `GET /api/v1/projects on the embedded default (PGlite) while a ${CASES.toLocaleString("en-US")}-case run is processed`,
      figure:
        `p99 ${p99.toFixed(1)} ms ${met ? "PASS" : "FAIL"} (idle ${percentile(idle, 99).toFixed(1)} ms; longest ${Math.max(...busy.times).toFixed(0)} ms); ` +
        `the ${AFTER_MS / 1000} s after, its alert checks: p99 ${percentile(after, 99).toFixed(1)} ms, longest ${Math.max(...after).toFixed(0)} ms`,
      target: `p99 ≤ ${TARGET_P99_MS} ms`,
      report: body,
    });
  } finally {
    await server.stop();
  }
}

await main();
