/**
 * `npm run bench:export`: GET /api/v1/projects/:id/exports/test_cases of 1,000,000 cases (100
 * runs of 10,000) beside the export of 10,000 cases (one run), each from a fresh server process
 * (bench/export-server.ts: the app on Node over Postgres), read to the end over HTTP by the
 * parent. Reported: lines per second, and the server process's peak memory during the export
 * (VmHWM, reset to the current RSS after a warm-up through /proc/<pid>/clear_refs, so the
 * start's own peak does not hide the export's), with its RSS sampled every 20 ms.
 * The target: the peak with 1,000,000 cases at most 1.2 times the peak with 10,000 (memory stays
 * flat: the export holds one batch at a time).
 *
 * Seeded with COPY (src/db/bulk-copy.ts), runs and cases directly, as processing leaves them.
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres): a server where the
 * benchmark may create and drop its own database; BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file>
 * (bench/report.ts: by default the report is recorded in BENCHMARKS.md and bench/history/export.md).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { encodeCopyRow, openCopy } from "../src/db/bulk-copy";
import type { Database } from "../src/db/types";
import { systemClock } from "../src/lib/clock";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { withBenchDatabase } from "./common";
import { recordBenchmark, currentCommit } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const CASES_PER_RUN = 10_000;
const LARGE_RUNS = 100;
const MEMORY_TARGET = 1.2;
const log = (message: string) => console.error(`[export-bench] ${message}`);
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** A project with `runs` processed runs of CASES_PER_RUN cases each, an hour apart, in the window [start, start + runs hours). */
async function seedProject(db: Database, organizationId: string, name: string, runs: number, start: Date): Promise<string> {
  const deps = { db, clock: systemClock, webAppUrl: "https://app.example.com" };
  const { project } = await createProject(deps, organizationId, { name });
  const statuses = ["passed", "passed", "passed", "passed", "passed", "passed", "failed", "skipped", "errored", "passed"];
  for (let r = 0; r < runs; r++) {
    const createdAt = new Date(start.getTime() + r * 3_600_000).toISOString();
    const result = await db.execute(sql`
      insert into test_runs (project_id, number, status, result, branch, commit_sha, created_at, processed_at, tests_count, passed_count, failed_count, errored_count, skipped_count, suites_count)
      values (${project.id}::uuid, ${r + 1}, 'processed', 'tests_errored', 'main', ${`${r}`.padStart(40, "0")}, ${createdAt}::timestamptz, ${createdAt}::timestamptz,
              ${CASES_PER_RUN}, ${CASES_PER_RUN * 0.7}, ${CASES_PER_RUN * 0.1}, ${CASES_PER_RUN * 0.1}, ${CASES_PER_RUN * 0.1}, 1)
      returning id`);
    const runId = Number((result as unknown as { rows: { id: number | string }[] }).rows[0]!.id);
    await db.transaction(async (tx) => {
      const copy = openCopy(
        db,
        tx,
        "copy test_cases (test_run_id, project_id, suite_number, name, classname, file, status, duration_ms) from stdin",
      );
      if (!copy) throw new Error("the benchmark needs COPY (a Postgres server through node-postgres)");
      let text = "";
      for (let c = 0; c < CASES_PER_RUN; c++) {
        text += encodeCopyRow([
          runId,
          project.id,
          1,
          `handles case ${c} of the checkout flow`,
          `com.example.checkout.Suite${c % 50}`,
          `src/checkout/suite-${c % 50}.test.ts`,
          statuses[c % 10]!,
          (c * 7) % 2_000,
        ]);
      }
      copy.write(text);
      await copy.end();
    });
  }
  await db.execute(sql`analyze test_runs`);
  await db.execute(sql`analyze test_cases`);
  return project.id;
}

type ServerChild = { child: ChildProcess; port: number };

async function startServer(dbUrl: string): Promise<ServerChild> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/export-server.ts")], {
    cwd: ROOT,
    env: { ...process.env, BENCH_DB_URL: dbUrl },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (message: { type: string; port: number }) => resolve(message.port));
    child.once("exit", (code) => reject(new Error(`the export server exited with ${code}`)));
  });
  return { child, port };
}

async function stopServer(server: ServerChild): Promise<void> {
  const exited = new Promise((resolve) => server.child.once("exit", resolve));
  server.child.kill("SIGTERM");
  await exited;
}

/** VmRSS and VmHWM (peak) of a process, in bytes (Linux). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)![1]) * 1024;
  return { rss: kib("VmRSS"), peak: kib("VmHWM") };
}

type Measure = {
  lines: number;
  bytes: number;
  seconds: number;
  linesPerSecond: number;
  peak: number;
  maxSampledRss: number;
  idleRss: number;
};

/** One export read to the end, from a fresh server process; its lines are counted and the last one checked. */
async function measureExport(dbUrl: string, key: string, projectId: string, since: Date, until: Date): Promise<Measure> {
  const server = await startServer(dbUrl);
  try {
    const pid = server.child.pid!;
    const url = `http://127.0.0.1:${server.port}/api/v1/projects/${projectId}/exports/test_cases?since=${since.toISOString()}&until=${until.toISOString()}`;
    const headers = { authorization: `Bearer ${key}` };
    // Warm-up: the routes, the pool and the JIT, on a window of one run.
    const warm = await fetch(url.replace(until.toISOString(), new Date(since.getTime() + 1).toISOString()), { headers });
    await warm.text();
    // The peak so far is the start's (loading and compiling the sources): reset it to the current RSS, so VmHWM is the export's peak.
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    const idleRss = memoryOf(pid).rss;
    let maxSampledRss = idleRss;
    const sampler = setInterval(() => {
      maxSampledRss = Math.max(maxSampledRss, memoryOf(pid).rss);
    }, 20);
    const started = performance.now();
    const response = await fetch(url, { headers });
    if (response.status !== 200) throw new Error(`export answered ${response.status}: ${await response.text()}`);
    const reader = response.body!.getReader();
    let lines = 0;
    let bytes = 0;
    let tail = "";
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++;
      tail = (tail + decoder.decode(value.subarray(Math.max(0, value.length - 4096)))).slice(-4096);
    }
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const lastLine = tail.trimEnd().split("\n").at(-1)!;
    if (lastLine.startsWith('{"error"')) throw new Error(`the export ended with an error: ${lastLine}`);
    return { lines, bytes, seconds, linesPerSecond: lines / seconds, peak: memoryOf(pid).peak, maxSampledRss, idleRss };
  } finally {
    await stopServer(server);
  }
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(1);
  await withBenchDatabase(SERVER_URL, "cia_export_bench", async (database, postgres) => {
    const dbUrl = new URL(SERVER_URL);
    const current = (await database.db.execute(sql`select current_database() as name`)) as unknown as { rows: { name: string }[] };
    dbUrl.pathname = `/${current.rows[0]!.name}`;
    const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com" };
    const org = await createOrganization(deps, { name: "Export bench" });
    const key = org.api_key.secret;
    const start = new Date(Date.UTC(2026, 10, 1));
    const seedStarted = performance.now();
    log(`seeding ${LARGE_RUNS} runs of ${CASES_PER_RUN} cases and one more run…`);
    const large = await seedProject(database.db, org.organization.id, "million", LARGE_RUNS, start);
    const small = await seedProject(database.db, org.organization.id, "ten-thousand", 1, start);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    log(`seeded in ${seedSeconds.toFixed(1)} s`);
    const until = new Date(start.getTime() + 31 * 86_400_000);

    const tenThousand = await measureExport(dbUrl.toString(), key, small, start, until);
    log(`10,000: ${tenThousand.lines} lines in ${tenThousand.seconds.toFixed(2)} s, peak ${mib(tenThousand.peak)}`);
    const million = await measureExport(dbUrl.toString(), key, large, start, until);
    log(`1,000,000: ${million.lines} lines in ${million.seconds.toFixed(2)} s, peak ${mib(million.peak)}`);
    if (tenThousand.lines !== CASES_PER_RUN || million.lines !== CASES_PER_RUN * LARGE_RUNS) throw new Error("an export lost lines");

    const ratio = million.peak / tenThousand.peak;
    const verdict = ratio <= MEMORY_TARGET ? "PASS" : "FAIL";
    const commit = currentCommit();
    const cpu = os.cpus()[0]?.model ?? "unknown CPU";
    const row = (name: string, m: Measure) =>
      `| ${name} | ${m.lines.toLocaleString("en-US")} | ${mib(m.bytes)} | ${m.seconds.toFixed(2)} s | ${Math.round(m.linesPerSecond).toLocaleString("en-US")} | ${mib(m.idleRss)} | ${mib(m.maxSampledRss)} | ${mib(m.peak)} |`;
    const body = `## Bulk export (\`npm run bench:export\`)

\`${new Date().toISOString().slice(0, 10)}\`, commit \`${commit}\`, ${os.cpus().length} × ${cpu}, load ${load}, ${postgres}, Node ${process.version}.

GET /api/v1/projects/:id/exports/test_cases read to the end over HTTP, each export from a fresh server process (the app on Node over Postgres through node-postgres; batches of 2,000 rows per statement; a warm-up export of one run first, then the peak RSS reset through \`/proc/<pid>/clear_refs\`). Seeded with COPY in ${seedSeconds.toFixed(0)} s: 100 runs of 10,000 cases, and a project with one run of 10,000 cases.

| Export | Lines | Bytes | Time | Lines/s | RSS before | RSS max sampled (20 ms) | Peak RSS during the export (VmHWM) |
|---|---|---|---|---|---|---|---|
${row("10,000 cases", tenThousand)}
${row("1,000,000 cases", million)}

Peak memory of the server process, 1,000,000 cases vs 10,000: **${ratio.toFixed(2)}×** (target ≤ ${MEMORY_TARGET}×): **${verdict}**.`;
    console.log(body);
    recordBenchmark({
      name: "export",
      command: "npm run bench:export",
      measures: "Bulk export's peak memory, 1,000,000 cases vs 10,000",
      figure: `peak RSS ${ratio.toFixed(2)}× ${verdict} (${million.lines.toLocaleString("en-US")} cases in ${million.seconds.toFixed(2)} s)`,
      target: `≤ ${MEMORY_TARGET}×`,
      report: body,
    });
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
