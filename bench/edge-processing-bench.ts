/**
 * `npm run bench:edge-processing`: run processing on both runtimes (issue 18), on one Postgres
 * database the bench makes and drops:
 * - (a) a 5-case run, processed and checked by the four alert checks (all enabled), on a project
 *   with 100,000 known tests against the same run on a new project; on Node in process
 *   (processing, then runAlertChecks, node-postgres) and on the Worker under `npm run dev` (an
 *   upload, the queue consumer, the Neon driver through the local bridge at RTT 0), from the
 *   upload's 202 until the checks' states say the run was checked (polled every 5 ms);
 * - (b) a 10,000-case run processed on the Worker (202 → processed, wrangler dev's queue delivery
 *   included) against the same stored payload processed on Node in process (processTestRun, from
 *   the stored payload to the commit).
 * Variants alternate (A B B A…); medians. The 100,000 tests are made in process before
 * (10 runs of 10,000 cases, each checked).
 *
 * Env: BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres), BENCH_EP_ROUNDS (21, for
 * (a)), BENCH_EP_BIG_ROUNDS (5, for (b)), BENCH_TESTS_KNOWN (100000), BENCH_NO_RECORD=1 /
 * BENCH_OUTPUT=<file> (bench/report.ts: by default the report is recorded in BENCHMARKS.md and
 * bench/history/edge-processing.md).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type SQL, sql } from "drizzle-orm";
import { CHECKS } from "../src/checks";
import { rowsOf } from "../src/db/rows";
import { systemClock } from "../src/lib/clock";
import { runAlertChecks } from "../src/services/alerts/alert-checks";
import { processTestRun } from "../src/services/runs/run-processing";
import { recordTestRunArrival } from "../src/services/runs/test-runs";
import { withBenchDatabase } from "./common";
import { freePort, processGroupMembers } from "./limiter-wrangler";
import { recordBenchmark, currentCommit } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const ROUNDS = Number(process.env.BENCH_EP_ROUNDS ?? 21);
const BIG_ROUNDS = Number(process.env.BENCH_EP_BIG_ROUNDS ?? 5);
const KNOWN_TESTS = Number(process.env.BENCH_TESTS_KNOWN ?? 100_000);
const log = (message: string) => console.error(`[bench:edge-processing] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${value.toFixed(1)} ms`;

/** A JSON upload of `count` cases named after `offset…`, every 7th failing on alternate rounds. */
function report(count: number, offset: number, round: number): string {
  const cases = Array.from({ length: count }, (_, i) => {
    const n = offset + i;
    const failing = (n + round) % 7 === 0;
    return {
      name: `test_${n}`,
      classname: `com.acme.Module${n % 50}Test`,
      status: failing ? "failed" : "passed",
      duration_ms: 5 + (n % 40),
      ...(failing ? { failure_message: `expected ${n} but was ${n + 1}` } : {}),
    };
  });
  return JSON.stringify({ branch: "main", commit_sha: `c${round}`.padEnd(12, "0"), suites: [{ name: "suite", cases }] });
}

let dev: ChildProcess | null = null;

async function stopDev(): Promise<void> {
  const child = dev;
  dev = null;
  if (!child?.pid) return;
  const pgid = child.pid;
  if (processGroupMembers(pgid).length === 0) return;
  try {
    process.kill(-pgid, "SIGINT");
  } catch {
    return;
  }
  const deadline = Date.now() + 15_000;
  while (processGroupMembers(pgid).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (processGroupMembers(pgid).length > 0) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
}

/** `npm run dev`'s script in its own process group; resolves once the Worker answers. */
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
      if ((await fetch(`${baseUrl}/api/v1/organization`)).status === 401) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`npm run dev did not answer within 120 s:\n${tail.join("\n")}`);
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => void stopDev().finally(() => process.exit(130)));
}

async function post(url: string, token: string, body: string): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body,
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${url}: HTTP ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg()[0]!.toFixed(1);
  const commit = currentCommit();
  await withBenchDatabase(SERVER_URL, "cia_edge_processing", async (database, postgres, url) => {
    const [port, bridgePort] = [await freePort(), await freePort()];
    const adminToken = randomBytes(24).toString("hex");
    const baseUrl = `http://127.0.0.1:${port}`;
    await startDev(
      {
        PORT: String(port),
        BRIDGE_PORT: String(bridgePort),
        DATABASE_URL: url,
        ADMIN_TOKEN: adminToken,
        CURSOR_SECRET: randomBytes(24).toString("hex"),
        SECRETS_KEY: randomBytes(32).toString("base64"),
        SEED_DEMO: "false",
        // The 10,000-case report is about 1.5 MiB: within the deployed limit, set anyway so the size never decides.
        UPLOAD_LIMIT_BYTES: String(32 * 1024 * 1024),
      },
      baseUrl,
    );
    log(`npm run dev is up on ${baseUrl}`);
    try {
      const org = (await post(`${baseUrl}/admin/v1/organizations`, adminToken, JSON.stringify({ name: "Bench" }))) as {
        organization: { id: string };
      };
      const project = async (name: string) => {
        const created = (await post(
          `${baseUrl}/admin/v1/organizations/${org.organization.id}/projects`,
          adminToken,
          JSON.stringify({ name }),
        )) as {
          project: { id: string };
          upload_token: string;
        };
        return { id: created.project.id, token: created.upload_token };
      };
      const big = await project("100k tests");
      const fresh = await project("new");
      const tenk = await project("10k cases");

      const deps = {
        db: database.db,
        clock: systemClock,
        webAppUrl: "https://app.example.com",
        logger: { info() {}, error: (m: string, f?: Record<string, unknown>) => console.error(m, f) },
      };
      const checkDeps = { ...deps, checks: CHECKS };
      let sha = 0;
      /** Node in process: arrival with its payload, then processing (the payload read back and parsed) and, with `checks`, the alert checks. */
      const onNode = async (projectId: string, content: string, checks: boolean) => {
        const { run } = await recordTestRunArrival(
          deps,
          projectId,
          { branch: "main", commitSha: `n${sha++}`.padEnd(12, "0") },
          { format: "json", content },
        );
        let processedRun: Parameters<typeof runAlertChecks>[1] | null = null;
        const start = performance.now();
        const outcome = await processTestRun({ ...deps, afterRunProcessed: async (processed) => void (processedRun = processed) }, run.id, {
          finalAttempt: false,
        });
        const processed = performance.now();
        if (outcome !== "processed" || !processedRun) throw new Error(`run ${run.id}: ${outcome}`);
        if (checks) await runAlertChecks(checkDeps, processedRun);
        return { processed: processed - start, checked: performance.now() - start };
      };
      const row = async (query: SQL) => (await rowsOf<Record<string, unknown>>(database.db.execute(query)))[0];
      /** The Worker: the upload's 202, then polling the database until processed and (with `checks`) checked by all four checks. */
      const onWorker = async (p: { id: string; token: string }, content: string, checks: boolean) => {
        const start = performance.now();
        const answer = await post(`${baseUrl}/uploads/v1/test_runs`, p.token, content);
        const accepted = performance.now();
        const number = answer.number as number;
        let processed = 0;
        for (;;) {
          if (performance.now() - accepted > 300_000) throw new Error(`run ${number} not done after 300 s`);
          if (!processed) {
            const status = (await row(sql`select status from test_runs where project_id = ${p.id} and number = ${number}`))?.status;
            if (status === "failed") throw new Error(`run ${number} failed`);
            if (status === "processed") processed = performance.now();
          }
          if (processed && !checks) break;
          if (processed) {
            const done = await row(
              sql`select count(*)::int as n from alert_check_states where project_id = ${p.id} and last_run_number >= ${number}`,
            );
            if (done?.n === 4) break;
          }
          await new Promise((r) => setTimeout(r, 5));
        }
        return { upload: accepted - start, processed: processed - accepted, checked: performance.now() - accepted };
      };
      const waitChecked = async (projectId: string) => {
        for (;;) {
          const last = await row(sql`select max(number) as n from test_runs where project_id = ${projectId}`);
          const done = await row(
            sql`select count(*)::int as n from alert_check_states where project_id = ${projectId} and last_run_number >= ${Number(last?.n ?? 0)}`,
          );
          if (done?.n === 4) return;
          await new Promise((r) => setTimeout(r, 50));
        }
      };

      // The 100,000 known tests, each with its checks' entries.
      for (let offset = 0; offset < KNOWN_TESTS; offset += 10_000)
        await onNode(big.id, report(Math.min(10_000, KNOWN_TESTS - offset), offset, 0), true);
      log(`${KNOWN_TESTS} tests known`);

      // (a) 5 cases with the checks, Node then the Worker, each alternating the two projects.
      const a: Record<string, number[]> = {
        nodeBig: [],
        nodeFresh: [],
        workerBig: [],
        workerFresh: [],
        workerBigProcessed: [],
        workerFreshProcessed: [],
      };
      for (const p of [big, fresh]) await onWorker(p, report(5, 0, 0), true); // warm-up: the upload tokens and the isolate
      for (const p of [big, fresh]) await onNode(p.id, report(5, 0, 0), true);
      for (let round = 1; round <= ROUNDS; round++) {
        for (const p of round % 2 === 0 ? [big, fresh] : [fresh, big])
          (p === big ? a.nodeBig! : a.nodeFresh!).push((await onNode(p.id, report(5, 0, round), true)).checked);
      }
      for (let round = 1; round <= ROUNDS; round++) {
        for (const p of round % 2 === 0 ? [big, fresh] : [fresh, big]) {
          const measured = await onWorker(p, report(5, 0, round), true);
          (p === big ? a.workerBig! : a.workerFresh!).push(measured.checked);
          (p === big ? a.workerBigProcessed! : a.workerFreshProcessed!).push(measured.processed);
        }
      }
      log(
        `(a) done: Node ${ms(median(a.nodeBig!))} vs ${ms(median(a.nodeFresh!))}, Worker ${ms(median(a.workerBig!))} vs ${ms(median(a.workerFresh!))}`,
      );

      // (b) 10,000 cases, processed: the Worker (202 → processed) and Node in process, alternated; each run's checks finish before the next.
      const b: Record<string, number[]> = { node: [], worker: [] };
      await onWorker(tenk, report(10_000, 0, 0), false);
      await waitChecked(tenk.id);
      for (let round = 1; round <= BIG_ROUNDS; round++) {
        const order = round % 2 === 0 ? ["node", "worker"] : ["worker", "node"];
        for (const side of order) {
          if (side === "node") b.node!.push((await onNode(tenk.id, report(10_000, 0, round), true)).processed);
          else {
            b.worker!.push((await onWorker(tenk, report(10_000, 0, round), false)).processed);
            await waitChecked(tenk.id);
          }
        }
      }
      log(`(b) done: Worker ${ms(median(b.worker!))}, Node ${ms(median(b.node!))}`);

      const ratioNode = median(a.nodeBig!) / median(a.nodeFresh!);
      const ratioWorker = median(a.workerBig!) / median(a.workerFresh!);
      const ratioBig = median(b.worker!) / median(b.node!);
      const verdict = (ratio: number, target: number) => `≤ ${target}×: ${ratio <= target ? "PASS" : "FAIL"}`;
      const cpus = os.cpus();
      const body = [
        "## Run processing on both runtimes (`npm run bench:edge-processing`)",
        "",
        `Command: \`npm run bench:edge-processing\` (script \`tsx bench/edge-processing-bench.ts\`). Run on ${new Date().toISOString().replace(/\.\d+Z$/, "Z")}, commit ${commit}, ` +
          `${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, ${postgres} on 127.0.0.1, Node ${process.version}, load average ${loadAtStart} at start, ${os.loadavg()[0]!.toFixed(1)} at end. ` +
          "One database made for the run: Node in process (node-postgres, COPY for large runs) and the Worker under `npm run dev` (workerd, its queue, the Neon driver through the local bridge, no emulated delay) use the same one. " +
          `Node: from the start of processTestRun (the stored payload read back, parsed, stored) to its commit, then to the end of the alert checks. The Worker: from the upload's 202 until the database says processed (polled every 5 ms), then until the four checks' states hold the run (wrangler dev's queue delivery included). ${ROUNDS} runs per variant for (a), ${BIG_ROUNDS} for (b), alternated; medians.`,
        "",
        "| Measure | Median | Ratio | Target |",
        "|---|---:|---:|---|",
        `| (a) Node: 5-case run processed and checked (four checks enabled), project with ${KNOWN_TESTS.toLocaleString("en-US")} known tests | ${ms(median(a.nodeBig!))} | ${ratioNode.toFixed(2)}× | ${verdict(ratioNode, 2)} |`,
        `| (a) Node: the same on a new project | ${ms(median(a.nodeFresh!))} | | |`,
        `| (a) Worker: 5-case run, 202 → processed and checked, project with ${KNOWN_TESTS.toLocaleString("en-US")} known tests | ${ms(median(a.workerBig!))} (processed: ${ms(median(a.workerBigProcessed!))}) | ${ratioWorker.toFixed(2)}× | ${verdict(ratioWorker, 2)} |`,
        `| (a) Worker: the same on a new project | ${ms(median(a.workerFresh!))} (processed: ${ms(median(a.workerFreshProcessed!))}) | | |`,
        `| (b) Worker: 10,000-case run, 202 → processed | ${ms(median(b.worker!))} | ${ratioBig.toFixed(2)}× | ${verdict(ratioBig, 3)} |`,
        `| (b) Node: the same run, processed in process | ${ms(median(b.node!))} | | |`,
      ].join("\n");
      console.log(body);
      const passes = (ratio: number, target: number) => (ratio <= target ? "PASS" : "FAIL");
      recordBenchmark({
        name: "edge-processing",
        command: "npm run bench:edge-processing",
        measures: "Run processing on Node and on the Worker: a project's known tests, and a large run",
        figure:
          `(a) ${KNOWN_TESTS.toLocaleString("en-US")} known tests: Node ${ratioNode.toFixed(2)}× ${passes(ratioNode, 2)}, Worker ${ratioWorker.toFixed(2)}× ${passes(ratioWorker, 2)}; ` +
          `(b) 10,000 cases: Worker / Node ${ratioBig.toFixed(2)}× ${passes(ratioBig, 3)}`,
        target: "(a) ≤ 2×; (b) ≤ 3×",
        report: body,
      });
    } finally {
      await stopDev();
    }
  });
}

main().catch(async (error) => {
  console.error("[bench:edge-processing] failed:", error);
  await stopDev();
  process.exitCode = 1;
});
