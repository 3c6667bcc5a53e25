/**
 * `npm run bench:verdicts`: what comparing each run with its base costs (docs/verdicts.md).
 * 1. Processing: a feature-branch run of 10,000 cases with 1,000 failures, whose named base
 *    commit's default-branch run (after 5 alike: 10 % failing is the project's usual share, not a
 *    burst) has 10,000 cases and 1,000 other failures (so the comparison
 *    finds new failures and fixed tests both), stored with the comparison and without it
 *    (StoreOptions.compare), alternated A B B A, medians.
 * 2. Reads: GET …/test_runs/:number/comparison and the first page of …/comparison/failures, the
 *    statements each sends (counted on the connection pool, in process, with a warm API key),
 *    then their latency over HTTP against a bare Hono handler running the same queries
 *    (bench/bare-app.ts: the project with its run in one statement, then the service's own query builder), both served
 *    by bench/servers.ts in one child process; sequential requests on a kept-alive connection,
 *    rounds in A B B A order, p50 over every request.
 * Records its report in BENCHMARKS.md and bench/history/verdicts.md (bench/report.ts).
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_PROCESSING_ROUNDS
 * (7 of each), BENCH_READ_ROUNDS (6), BENCH_READS_PER_ROUND (200 per variant), BENCH_NO_RECORD=1 /
 * BENCH_OUTPUT=<file> (bench/report.ts).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import type { OpenedDatabase } from "../src/node/database";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { type Report, recordTestRunArrival, storeTestRun } from "../src/services/runs/test-runs";
import { statementCountingApp, withBenchDatabase } from "./common";
import { recordBenchmark } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const CASES = 10_000;
const FAILURES = 1_000;
const PROCESSING_ROUNDS = positive("BENCH_PROCESSING_ROUNDS", 7);
const READ_ROUNDS = positive("BENCH_READ_ROUNDS", 6);
const READS_PER_ROUND = positive("BENCH_READS_PER_ROUND", 200);
const PROCESSING_TARGET = 1.15;
const STATEMENTS_TARGET = 3;
const LATENCY_TARGET = 1.2;
const BASE_SHA = "28335f0a1b2c3d4e5f60718293a4b5c6d7e8f901";
/** Default-branch runs before the base, each failing 10 % of the tests like it. */
const HISTORY_RUNS = 5;
const CURSOR_SECRET = "verdicts-bench-cursor-secret-0123456789";
const quietLogger: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };
const log = (message: string) => console.error(`[verdicts-bench] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const verdict = (met: boolean) => (met ? "PASS" : "FAIL");

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`);
  return value;
}

function commit(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const dirty = git("status", "--porcelain", "--", "src", "drizzle", "bench") !== "";
    return `${git("rev-parse", "--short", "HEAD")}${dirty ? " plus uncommitted changes" : ""}`;
  } catch {
    return "unknown";
  }
}

/** 10,000 cases in 100 suites; every tenth fails, which tenth depending on `shift`, with a message per module. */
function report(shift: number): Report {
  return {
    suites: Array.from({ length: 100 }, (_, s) => ({
      name: `com.acme.Module${s}Test`,
      cases: Array.from({ length: CASES / 100 }, (_, i) => {
        const n = s * (CASES / 100) + i;
        const failing = (n + shift) % (CASES / FAILURES) === 0;
        return {
          name: `test_${n}`,
          classname: `com.acme.Module${s}Test`,
          status: failing ? ("failed" as const) : ("passed" as const),
          durationMs: 5 + (n % 40),
          failureType: failing ? "java.lang.AssertionError" : null,
          failureMessage: failing ? `expected ${s} but was ${s + 1}` : null,
          failureText: failing
            ? `java.lang.AssertionError: expected ${s} but was ${s + 1}\n\tat com.acme.Module${s}Test.test_${n}(Module${s}Test.java:${n % 300})`
            : null,
        };
      }),
    })),
  };
}

type Deps = { db: OpenedDatabase["db"]; clock: typeof systemClock; webAppUrl: string; logger: Logger };

/** Processing with and without the comparison, alternated; medians in ms. */
async function measureProcessing(deps: Deps, projectId: string) {
  // A history of default-branch runs failing as many tests: the base's 10 % is then the project's
  // usual share, not a burst on the default branch (which is never a base, docs/verdicts.md).
  for (let i = 0; i < HISTORY_RUNS; i++) {
    const earlier = await recordTestRunArrival(deps, projectId, { branch: "main", commitSha: `e${String(i).padStart(39, "0")}` });
    await storeTestRun(deps, earlier.run.id, async (emit) => void emit(report(i + 5).suites));
  }
  const base = await recordTestRunArrival(deps, projectId, { branch: "main", commitSha: BASE_SHA });
  await storeTestRun(deps, base.run.id, async (emit) => void emit(report(0).suites));
  const feature = report(3);
  let sha = 0;
  const processOnce = async (compare: boolean) => {
    const { run } = await recordTestRunArrival(deps, projectId, {
      branch: "feature/checkout",
      commitSha: `f${String(sha++).padStart(39, "0")}`,
      baseCommitSha: BASE_SHA,
    });
    const start = performance.now();
    await storeTestRun(deps, run.id, async (emit) => void emit(feature.suites), { compare });
    return { ms: performance.now() - start, number: run.number };
  };
  await processOnce(true); // warm-up: the project's tests exist from now on, as in a CI project
  await processOnce(false);
  const withComparison: number[] = [];
  const without: number[] = [];
  let comparedRun = 0;
  for (let round = 0; round < PROCESSING_ROUNDS; round++) {
    for (const compare of round % 2 === 0 ? [true, false] : [false, true]) {
      const { ms, number } = await processOnce(compare);
      (compare ? withComparison : without).push(ms);
      if (compare) comparedRun = number;
    }
  }
  return { with: median(withComparison), without: median(without), comparedRun };
}

function startServers(env: Record<string, string>): Promise<{ child: ChildProcess; ours: number; bare: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/servers.ts")], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const timer = setTimeout(() => reject(new Error("bench servers did not start within 60 s")), 60_000);
    child.once("message", (message: { ours: number; bare: number }) => {
      clearTimeout(timer);
      resolve({ child, ours: message.ours, bare: message.bare });
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`bench servers exited with ${code}`));
    });
  });
}

/** Sequential requests to `url`, each timed; the body read whole. */
async function timeRequests(url: string, headers: Record<string, string>, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
    times.push(performance.now() - start);
  }
  return times;
}

/** p50 of ours and of the bare handler, measured in A B B A rounds. */
async function measureLatency(ours: string, bare: string, apiKey: string) {
  const headers = { authorization: `Bearer ${apiKey}` };
  await timeRequests(ours, headers, 50);
  await timeRequests(bare, {}, 50);
  const samples = { ours: [] as number[], bare: [] as number[] };
  for (let round = 0; round < READ_ROUNDS; round++) {
    for (const variant of round % 2 === 0 ? (["ours", "bare"] as const) : (["bare", "ours"] as const)) {
      samples[variant].push(...(await timeRequests(variant === "ours" ? ours : bare, variant === "ours" ? headers : {}, READS_PER_ROUND)));
    }
  }
  return { ours: median(samples.ours), bare: median(samples.bare) };
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(2);
  await withBenchDatabase(SERVER_URL, "cia_verdicts_bench", async (database, postgres, databaseUrl) => {
    const deps: Deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com", logger: quietLogger };
    const org = await createOrganization(deps, { name: "Bench" });
    const { project } = await createProject(deps, org.organization.id, { name: "verdicts" });
    const apiKey = org.api_key.secret;

    const processing = await measureProcessing(deps, project.id);
    const processingRatio = processing.with / processing.without;
    log(`processing: ${processing.with.toFixed(0)} ms with the comparison, ${processing.without.toFixed(0)} ms without`);

    const runPath = `/api/v1/projects/${project.id}/test_runs/${processing.comparedRun}`;
    const reads = [
      { label: "GET …/test_runs/:number/comparison", path: `${runPath}/comparison` },
      { label: "GET …/comparison/failures (first page, 25)", path: `${runPath}/comparison/failures` },
    ];
    const request = statementCountingApp(database, CURSOR_SECRET);
    await request(reads[0]!.path, apiKey); // warm key: admission from the key-id cache and the in-memory counter
    const counted: Array<{ statements: number; body: Record<string, unknown> }> = [];
    for (const read of reads) counted.push(await request(read.path, apiKey));
    const comparison = counted[0]!.body as { verdict_counts: Record<string, number>; fixed_count: number };
    log(`statements: ${counted.map((c) => c.statements).join(", ")}; comparison ${JSON.stringify(comparison.verdict_counts)}`);
    // The scenario is a run with new failures and fixed tests both; a base lost (e.g. judged a burst) would measure less.
    if (comparison.fixed_count !== FAILURES || comparison.verdict_counts.new !== FAILURES)
      throw new Error(`the compared run should fix ${FAILURES} tests and fail ${FAILURES} new ones: ${JSON.stringify(comparison)}`);

    const { child, ours, bare } = await startServers({
      BENCH_DB_URL: databaseUrl,
      BENCH_CURSOR_SECRET: CURSOR_SECRET,
      BENCH_ORG_ID: org.organization.id,
    });
    const latencies: Array<{ ours: number; bare: number }> = [];
    try {
      for (const read of reads) {
        const bareUrl = `http://127.0.0.1:${bare}${read.path.replace("/api/v1", "")}`;
        latencies.push(await measureLatency(`http://127.0.0.1:${ours}${read.path}`, bareUrl, apiKey));
        log(`${read.label}: p50 ${latencies.at(-1)!.ours.toFixed(2)} ms, bare ${latencies.at(-1)!.bare.toFixed(2)} ms`);
      }
    } finally {
      // The child ends its pool before the database is dropped.
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }

    const statementsMet = counted.every((c) => c.statements <= STATEMENTS_TARGET);
    const ratios = latencies.map((l) => l.ours / l.bare);
    const latencyMet = ratios.every((r) => r <= LATENCY_TARGET);
    const processingMet = processingRatio <= PROCESSING_TARGET;
    const body = [
      "## Verdicts: what comparing each run with its base costs (`npm run bench:verdicts`)",
      "",
      `Run on ${new Date().toISOString().slice(0, 10)} at commit ${commit()}, ${postgres} on 127.0.0.1, Node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "unknown"}), load average at start ${load}.`,
      "",
      `**Processing** a feature-branch run of ${CASES.toLocaleString("en-US")} cases with ${FAILURES.toLocaleString("en-US")} failures, whose named base commit's default-branch run has ${CASES.toLocaleString("en-US")} cases and ${FAILURES.toLocaleString("en-US")} other failures (storeTestRun in process, the project's tests already known), with the comparison and without it (StoreOptions.compare), ${PROCESSING_ROUNDS} rounds of each alternated, medians: **${processing.with.toFixed(0)} ms** with it, ${processing.without.toFixed(0)} ms without: **${processingRatio.toFixed(3)}×** (target ≤ ${PROCESSING_TARGET}×: ${verdict(processingMet)}). The compared run's verdicts: ${JSON.stringify(comparison.verdict_counts)}, ${comparison.fixed_count} fixed.`,
      "",
      `**Reads** of that run, statements counted on the pool in process (warm API key); p50 of ${READ_ROUNDS * READS_PER_ROUND} sequential requests per variant over HTTP on a kept-alive connection (bench/servers.ts: ours and the bare handler in one child process, ${READ_ROUNDS} rounds of ${READS_PER_ROUND} in A B B A order). The bare handler (bench/bare-app.ts) runs the same two queries (the project with its run, as findRunRow reads them, then the service's own query builder) and answers the raw rows: no key, rate limit, validation, cursor or presenter.`,
      "",
      "| Read | Statements | Ours p50 | Bare p50 | Ours / bare |",
      "|---|---:|---:|---:|---:|",
      ...reads.map(
        (read, i) =>
          `| ${read.label} | ${counted[i]!.statements} (≤ ${STATEMENTS_TARGET}: ${verdict(counted[i]!.statements <= STATEMENTS_TARGET)}) | ${latencies[i]!.ours.toFixed(2)} ms | ${latencies[i]!.bare.toFixed(2)} ms | ${ratios[i]!.toFixed(2)}× (≤ ${LATENCY_TARGET}: ${verdict(ratios[i]! <= LATENCY_TARGET)}) |`,
      ),
      "",
    ].join("\n");
    console.log(body);
    recordBenchmark({
      name: "verdicts",
      command: "npm run bench:verdicts",
      measures: "Run comparison: processing with vs without it; comparison reads' statements and p50 vs a bare handler",
      figure: `processing ${processingRatio.toFixed(3)}× ${verdict(processingMet)}; statements ${counted.map((c) => c.statements).join(", ")} ${verdict(statementsMet)}; p50 ${ratios.map((r) => `${r.toFixed(2)}×`).join(", ")} ${verdict(latencyMet)}`,
      target: `processing ≤ ${PROCESSING_TARGET}×; ≤ ${STATEMENTS_TARGET} statements and p50 ≤ ${LATENCY_TARGET}× bare per read`,
      report: body,
    });
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
