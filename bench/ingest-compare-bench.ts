/**
 * `npm run bench:ingest-compare`: the same 10,000-case report, POST → `processed`, on today's
 * checkout and on d201550 (2026-11-22, before tests as resources), side by side on Postgres
 * (issue 32, "Speed and scale").
 *
 * The older commit is checked out as a git worktree in a temporary directory (kept and reused);
 * its dependencies are this checkout's node_modules when every package its lock file names is
 * there at the same version, `npm ci` otherwise. Both servers are the real Node entry
 * (`src/node/server.ts`, test/support/server-process.ts), each on a fresh database of its own on
 * the same Postgres. In each, an organization and one project per report shape are made through
 * the admin API. Then, per round and shape, the same report is uploaded to one checkout and then
 * the other (the order swapped every round), each upload a new commit on `main`, after two
 * warm-up uploads each (the project then knows the report's tests, as a CI project does). Timed
 * from the POST: until the run is `processed`, and until the run's alert checks are done — each
 * of the project's four alerts has taken the run (`alert_check_states.last_run_number` reaches the
 * run's number; neither checkout shows that over HTTP, so the benchmark reads both databases,
 * polling every 5 ms, the run's status included so both measures poll alike).
 *
 * Shapes: lean (100 suites, 4 % failures with two-line traces, 3 % skipped, no
 * captured output) and `bench:upload`'s Surefire-like file (bench/upload-bench.ts).
 *
 * Env: BENCH_BASE_COMMIT (d201550: another commit to compare with, e.g. before a change; such a
 * run prints its report and records nothing), BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/postgres), BENCH_ROUNDS (7),
 * BENCH_DB_PREFIX (cia_ingest_compare), BENCH_PORT (0: any; else this and the next one),
 * BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file> (bench/report.ts).
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, realpathSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { type ServerProcess, startServerProcess } from "../test/support/server-process";
import { generateJUnit } from "./junit-generator";
import { currentCommit, recordBenchmark } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The commit of issue 32's figure; BENCH_BASE_COMMIT compares with another (a trial: not recorded). */
const RECORDED_BASE = "d201550";
const OLD_COMMIT = process.env.BENCH_BASE_COMMIT ?? RECORDED_BASE;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const WARM_UPS = 2;
const CASES = 10_000;
const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DB_PREFIX = process.env.BENCH_DB_PREFIX ?? "cia_ingest_compare";
const PORT = Number(process.env.BENCH_PORT ?? 0);
const ADMIN_TOKEN = "ingest-compare-bench-admin-token";
const TARGET_PROCESSED = 2.0;
const TARGET_CHECKED = 1.3;
const log = (message: string) => console.error(`[ingest-compare] ${message}`);

type Shape = { name: string; description: string; xml: string };
type Side = { name: string; server: ServerProcess; client: pg.Client; projects: Map<string, { id: string; token: string }> };
type Timing = { processed: number; checked: number };

const SHAPES: Shape[] = [
  {
    name: "lean",
    description: "100 suites, 4 % failures with two-line traces, 3 % skipped, no captured output (seed 20261207)",
    xml: generateJUnit({
      cases: CASES,
      suites: 100,
      failureRate: 0.04,
      skipRate: 0.03,
      errorRate: 0,
      flakyRate: 0,
      systemOutBytes: 0,
      traceLines: 2,
      seed: 20261207,
    }),
  },
  {
    name: "surefire",
    description: "bench:upload's file (`generateJUnit({ cases: 10000, seed: 20261121 })`)",
    xml: generateJUnit({ cases: CASES, seed: 20261121 }),
  },
];

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const ms = (value: number) => `${value.toFixed(0)} ms`;
const mib = (text: string) => `${(Buffer.byteLength(text) / 1024 / 1024).toFixed(2)} MiB`;

/** Whether every package the older lock file names is in this checkout's lock file at the same version. */
function locksMatch(oldLock: string, newLock: string): boolean {
  const older = (JSON.parse(oldLock) as { packages: Record<string, { version?: string }> }).packages;
  const newer = (JSON.parse(newLock) as { packages: Record<string, { version?: string }> }).packages;
  return Object.entries(older).every(([name, entry]) => name === "" || newer[name]?.version === entry.version);
}

/** The older commit's checkout, made once in the temporary directory and reused. */
function olderCheckout(): string {
  const dir = path.join(os.tmpdir(), `cia-ingest-compare-${OLD_COMMIT}`);
  if (!existsSync(path.join(dir, "package.json"))) {
    execFileSync("git", ["worktree", "prune"], { cwd: ROOT });
    execFileSync("git", ["worktree", "add", "--detach", dir, OLD_COMMIT], { cwd: ROOT, stdio: "ignore" });
  }
  if (!existsSync(path.join(dir, "node_modules"))) {
    if (locksMatch(readFileSync(path.join(dir, "package-lock.json"), "utf8"), readFileSync(path.join(ROOT, "package-lock.json"), "utf8"))) {
      symlinkSync(realpathSync(path.join(ROOT, "node_modules")), path.join(dir, "node_modules"));
      log(`${dir}: this checkout's node_modules (every locked package at the same version)`);
    } else {
      log(`${dir}: npm ci`);
      execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "inherit" });
    }
  }
  return dir;
}

async function call(server: ServerProcess, pathname: string, body: unknown) {
  const res = await server.call("POST", pathname, ADMIN_TOKEN, JSON.stringify(body), { "content-type": "application/json" });
  if (res.status !== 201) throw new Error(`${pathname}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function startSide(name: string, cwd: string | undefined, databaseUrl: string, port: number): Promise<Side> {
  const server = await startServerProcess(
    { DATABASE_URL: databaseUrl, ADMIN_TOKEN, LOG_LEVEL: "error", PORT: String(port) },
    { cwd, startTimeoutMs: 120_000 },
  );
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const org = await call(server, "/admin/v1/organizations", { name: `Compare ${name}` });
  const projects = new Map<string, { id: string; token: string }>();
  for (const shape of SHAPES) {
    const made = await call(server, `/admin/v1/organizations/${org.organization.id}/projects`, { name: shape.name });
    projects.set(shape.name, { id: made.project.id, token: made.upload_token });
  }
  return { name, server, client, projects };
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 5));

/** One upload: time from the POST to `processed`, and to the end of its alert checks (all four alerts took the run). */
async function measure(side: Side, shape: Shape, sha: string): Promise<Timing> {
  const project = side.projects.get(shape.name)!;
  const start = performance.now();
  const res = await fetch(`${side.server.base}/uploads/v1/test_runs?branch=main&commit_sha=${sha}`, {
    method: "POST",
    headers: { authorization: `Bearer ${project.token}`, "content-type": "application/xml" },
    body: shape.xml,
  });
  const body = (await res.json()) as { number: number };
  if (res.status !== 202) throw new Error(`${side.name} upload: ${res.status} ${JSON.stringify(body)}`);
  for (;;) {
    const { rows } = await side.client.query<{ status: string }>("select status from test_runs where project_id = $1 and number = $2", [
      project.id,
      body.number,
    ]);
    if (rows[0]?.status === "processed") break;
    if (rows[0]?.status === "failed") throw new Error(`${side.name}: run ${body.number} failed`);
    await pause();
  }
  const processed = performance.now() - start;
  for (;;) {
    const { rows } = await side.client.query<{ done: number }>(
      "select count(*)::int as done from alert_check_states where project_id = $1 and last_run_number >= $2",
      [project.id, body.number],
    );
    if (rows[0]!.done >= 4) break;
    if (performance.now() - start > 120_000) throw new Error(`${side.name}: the alert checks of run ${body.number} did not end`);
    await pause();
  }
  return { processed, checked: performance.now() - start };
}

/** The run's case count as its checkout reports it (a wrong count would make the comparison meaningless). */
async function checkCount(side: Side, shape: Shape): Promise<void> {
  const project = side.projects.get(shape.name)!;
  const { rows } = await side.client.query<{ number: number }>("select max(number)::int as number from test_runs where project_id = $1", [
    project.id,
  ]);
  const run = await side.server.call("GET", `/uploads/v1/test_runs/${rows[0]!.number}`, project.token);
  if (run.body.tests_count !== CASES) throw new Error(`${side.name} ${shape.name}: ${run.body.tests_count} cases, expected ${CASES}`);
}

const shaOf = (text: string) => createHash("sha1").update(text).digest("hex");

async function compare(main: Side, old: Side) {
  const timings = new Map<string, { main: Timing[]; old: Timing[] }>(SHAPES.map((shape) => [shape.name, { main: [], old: [] }]));
  let uploads = 0;
  for (const shape of SHAPES) {
    for (let i = 0; i < WARM_UPS; i++) for (const side of [main, old]) await measure(side, shape, shaOf(`warm ${uploads++}`));
    for (const side of [main, old]) await checkCount(side, shape);
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const shape of SHAPES) {
      const order = round % 2 === 0 ? [main, old] : [old, main];
      for (const side of order) {
        const timing = await measure(side, shape, shaOf(`round ${uploads++}`));
        timings.get(shape.name)![side === main ? "main" : "old"].push(timing);
      }
      const { main: m, old: o } = timings.get(shape.name)!;
      log(
        `round ${round + 1} ${shape.name}: main ${ms(m.at(-1)!.processed)} / checks ${ms(m.at(-1)!.checked)}; ${OLD_COMMIT} ${ms(o.at(-1)!.processed)} / checks ${ms(o.at(-1)!.checked)}; load ${os.loadavg()[0]!.toFixed(1)}`,
      );
    }
  }
  return timings;
}

function report(timings: Map<string, { main: Timing[]; old: Timing[] }>, loads: { start: string; end: string }, postgres: string) {
  // The targets are against d201550; a trial against another commit only shows the ratios.
  const verdict = (ratio: number, target: number) =>
    OLD_COMMIT === RECORDED_BASE ? `≤ ${target.toFixed(1)}×: ${ratio <= target ? "PASS" : "FAIL"}` : "— (trial)";
  const rows: string[] = [];
  const figures: string[] = [];
  for (const shape of SHAPES) {
    const { main, old } = timings.get(shape.name)!;
    const processed = [median(main.map((t) => t.processed)), median(old.map((t) => t.processed))] as const;
    const checked = [median(main.map((t) => t.checked)), median(old.map((t) => t.checked))] as const;
    const ratios = [processed[0] / processed[1], checked[0] / checked[1]] as const;
    rows.push(
      `| ${shape.name}: POST → \`processed\` | ${ms(processed[0])} | ${ms(processed[1])} | **${ratios[0].toFixed(2)}×** | ${verdict(ratios[0], TARGET_PROCESSED)} |`,
      `| ${shape.name}: POST → alert checks done | ${ms(checked[0])} | ${ms(checked[1])} | **${ratios[1].toFixed(2)}×** | ${verdict(ratios[1], TARGET_CHECKED)} |`,
    );
    figures.push(
      `${shape.name} ${ratios[0].toFixed(2)}× (${ms(processed[0])} vs ${ms(processed[1])}) ${ratios[0] <= TARGET_PROCESSED ? "PASS" : "FAIL"}, checks ${ratios[1].toFixed(2)}× ${ratios[1] <= TARGET_CHECKED ? "PASS" : "FAIL"}`,
    );
  }
  const perRound = SHAPES.map((shape) => {
    const { main, old } = timings.get(shape.name)!;
    const pairs = main.map(
      (t, i) => `${t.processed.toFixed(0)}/${t.checked.toFixed(0)} vs ${old[i]!.processed.toFixed(0)}/${old[i]!.checked.toFixed(0)}`,
    );
    return `- ${shape.name}: ${pairs.join(", ")}`;
  });
  const body = [
    `## The same 10,000-case report on today's checkout and on ${OLD_COMMIT} (\`npm run bench:ingest-compare\`)`,
    "",
    `Run on ${new Date().toISOString().slice(0, 10)} at commit ${currentCommit()} against ${OLD_COMMIT}${OLD_COMMIT === RECORDED_BASE ? " (2026-11-22, before tests as resources)" : ""}, ${postgres} on 127.0.0.1, Node ${process.version}, ${os.cpus().length} cores, load average ${loads.start} at start and ${loads.end} at the end. ` +
      `Both checkouts' Node servers (\`src/node/server.ts\`) started by the benchmark, each on a fresh database of its own; per shape a project made through the admin API; ${WARM_UPS} warm-up uploads each, then ${ROUNDS} rounds, each uploading the same report to one checkout then the other (order swapped every round), every upload a new commit on \`main\`; medians. ` +
      "Timed from the POST until the run is `processed`, and until its alert checks are done (all four alerts' `alert_check_states.last_run_number` reach the run), both read from the checkout's database every 5 ms.",
    "",
    ...SHAPES.map((shape) => `- ${shape.name}: ${mib(shape.xml)}, ${shape.description}`),
    "",
    `| Measure | Today | ${OLD_COMMIT} | Today / ${OLD_COMMIT} | Target |`,
    "|---|---:|---:|---:|---|",
    ...rows,
    "",
    "Per round (ms, processed/checks done, today vs the older checkout):",
    "",
    ...perRound,
  ].join("\n");
  return { body, figure: figures.join("; ") };
}

async function main(): Promise<void> {
  const loadStart = os.loadavg()[0]!.toFixed(1);
  const olderDir = olderCheckout();
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  const suffix = randomBytes(4).toString("hex");
  const names = { main: `${DB_PREFIX}_main_${suffix}`, old: `${DB_PREFIX}_old_${suffix}` };
  const urlOf = (name: string) => Object.assign(new URL(SERVER_URL), { pathname: `/${name}` }).toString();
  const sides: Side[] = [];
  try {
    for (const name of Object.values(names)) await admin.query(`create database "${name}"`);
    const postgres = (await admin.query<{ v: string }>("select version() as v")).rows[0]!.v.replace(/ on .*$/, "");
    sides.push(await startSide("main", undefined, urlOf(names.main), PORT));
    sides.push(await startSide(OLD_COMMIT, olderDir, urlOf(names.old), PORT === 0 ? 0 : PORT + 1));
    for (const shape of SHAPES) log(`${shape.name}: ${mib(shape.xml)}`);
    const timings = await compare(sides[0]!, sides[1]!);
    const { body, figure } = report(timings, { start: loadStart, end: os.loadavg()[0]!.toFixed(1) }, postgres);
    console.log(body);
    if (OLD_COMMIT !== RECORDED_BASE) return log(`compared with ${OLD_COMMIT}, not ${RECORDED_BASE}: not recorded`);
    recordBenchmark({
      name: "ingest-compare",
      command: "npm run bench:ingest-compare",
      measures: `The same 10,000-case report, POST → processed and → alert checks done, today against ${OLD_COMMIT}, side by side on Postgres`,
      figure,
      target: `≤ ${TARGET_PROCESSED.toFixed(1)}× to processed for each shape; ≤ ${TARGET_CHECKED.toFixed(1)}× to the end of the alert checks`,
      report: body,
    });
  } finally {
    for (const side of sides) {
      await side.client.end().catch(() => {});
      await side.server.stop();
    }
    for (const name of Object.values(names)) await admin.query(`drop database if exists "${name}" with (force)`);
    await admin.end();
  }
}

await main();
