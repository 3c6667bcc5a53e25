/**
 * `npm run bench:checks-memory`: the alert checks' live memory on a large run, on Node
 * (node-postgres, the statements the Worker sends). A run of BENCH_CHECKS_CASES cases (115,000 ≈ a
 * 31 MiB JUnit report) is stored, then checked by the four checks while a timer forces a full
 * collection and samples the heap and the ArrayBuffers every 20 ms: the peak above the baseline
 * taken just before is what checking the run holds live (garbage excluded). Two rounds, the second
 * on a project whose tests have entries already. workerd's inspector stops answering forced
 * collections during the checks (docs/edge-path.md#memory), so live memory is measured here; the
 * Worker's own figures (a capped heap) are bench:edge-memory's.
 *
 * Needs `node --expose-gc` (the npm script passes it). Env: BENCH_DATABASE_URL
 * (postgres://postgres@127.0.0.1:5432/postgres; a database is created and dropped),
 * BENCH_CHECKS_CASES (115000), BENCH_CHECKS_SUITES (the generator's default: one per 25 cases),
 * BENCH_WRITE=false or BENCH_NO_RECORD=1 (the report printed only), BENCH_OUTPUT=<file>
 * (bench/report.ts: by default the report is recorded in BENCHMARKS.md and
 * bench/history/checks-memory.md).
 */
import os from "node:os";
import { CHECKS } from "../src/checks";
import { systemClock } from "../src/lib/clock";
import { runAlertChecks } from "../src/services/alerts/alert-checks";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { processTestRun } from "../src/services/runs/run-processing";
import { recordTestRunArrival } from "../src/services/runs/test-runs";
import { withBenchDatabase } from "./common";
import { generateJUnit } from "./junit-generator";
import { recordBenchmark, currentCommit } from "./report";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const CASES = Number(process.env.BENCH_CHECKS_CASES ?? 115_000);
const SUITES = process.env.BENCH_CHECKS_SUITES ? Number(process.env.BENCH_CHECKS_SUITES) : undefined;
const SAMPLE_MS = 20;
const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
const log = (message: string) => console.error(`[bench:checks-memory] ${message}`);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc (npm run bench:checks-memory)");
const collect = gc;

type Round = { round: number; seconds: number; heap: number; buffers: number; baseline: number; samples: number };

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(1);
  const rounds: Round[] = [];
  const postgres = await withBenchDatabase(SERVER_URL, "bench_checks_memory", async (database, version) => {
    const deps = {
      db: database.db,
      clock: systemClock,
      webAppUrl: "https://app.example.com",
      logger: { info() {}, error: (m: string, f?: Record<string, unknown>) => console.error(m, f) },
    };
    const { organization } = await createOrganization(deps, { name: "Bench" });
    const { project } = (await createProject(deps, organization.id, { name: "large runs" })) as { project: { id: string } };
    for (let round = 1; round <= 2; round++) {
      // The report's text is not kept: only the stored run's checks are measured.
      const content = () => generateJUnit({ cases: CASES, seed: CASES + round, ...(SUITES ? { suites: SUITES } : {}) });
      const { run } = await recordTestRunArrival(
        deps,
        project.id,
        { branch: "main", commitSha: `c${round}`.padEnd(12, "0") },
        { format: "junit_xml", content: content() },
      );
      let processed: Parameters<typeof runAlertChecks>[1] | null = null;
      const outcome = await processTestRun({ ...deps, afterRunProcessed: async (stored) => void (processed = stored) }, run.id, {
        finalAttempt: false,
      });
      if (outcome !== "processed" || !processed) throw new Error(`run ${run.id}: ${outcome}`);
      collect();
      const base = process.memoryUsage();
      let heap = 0;
      let buffers = 0;
      let samples = 0;
      const timer = setInterval(() => {
        collect();
        const now = process.memoryUsage();
        heap = Math.max(heap, now.heapUsed - base.heapUsed);
        buffers = Math.max(buffers, now.arrayBuffers - base.arrayBuffers);
        samples++;
      }, SAMPLE_MS);
      const started = performance.now();
      await runAlertChecks({ ...deps, checks: CHECKS }, processed);
      clearInterval(timer);
      const result = { round, seconds: (performance.now() - started) / 1000, heap, buffers, baseline: base.heapUsed, samples };
      log(
        `round ${round}: checks ${result.seconds.toFixed(1)} s, live heap +${mib(heap)}, ArrayBuffers +${mib(buffers)} (${samples} samples)`,
      );
      rounds.push(result);
    }
    return version;
  });
  const commit = currentCommit();
  const body = [
    "## The alert checks' live memory on a large run (`npm run bench:checks-memory`)",
    "",
    `Command: \`npm run bench:checks-memory\` (script \`node --expose-gc --import tsx bench/checks-memory.ts\`). What it measures: its header, and docs/edge-path.md#memory.`,
    "",
    `- Date: ${new Date().toISOString().replace(/\.\d+Z$/, "Z")}; code: commit ${commit}`,
    `- Machine: ${os.cpus().length} × ${os.cpus()[0]?.model.split(" ").slice(0, 2).join(" ") ?? "CPU"}, Node ${process.version}; load average ${load} at start, ${os.loadavg()[0]!.toFixed(1)} at end`,
    `- Run: ${CASES.toLocaleString("en-US")} cases of the JUnit generator${SUITES ? ` in ${SUITES} suites` : ""}, stored on ${postgres}, then checked by the four checks (runAlertChecks); a full collection forced every ${SAMPLE_MS} ms while they run`,
    "",
    "| Round | Checks took | Live heap above the baseline, peak | ArrayBuffers above the baseline, peak | Samples |",
    "|---:|---:|---:|---:|---:|",
    ...rounds.map((r) => `| ${r.round} | ${r.seconds.toFixed(1)} s | ${mib(r.heap)} | ${mib(r.buffers)} | ${r.samples} |`),
  ].join("\n");
  console.log(body);
  const took = [
    ...new Set([Math.min(...rounds.map((r) => r.seconds)), Math.max(...rounds.map((r) => r.seconds))].map((s) => s.toFixed(1))),
  ];
  if (process.env.BENCH_WRITE !== "false")
    recordBenchmark({
      name: "checks-memory",
      command: "npm run bench:checks-memory",
      measures: "The alert checks' live memory on a large run, on Node",
      figure: `${CASES.toLocaleString("en-US")} cases: live heap +${mib(Math.max(...rounds.map((r) => r.heap)))}, ArrayBuffers +${mib(Math.max(...rounds.map((r) => r.buffers)))} at peak (checks ${took.join("–")} s)`,
      target: "—",
      report: body,
    });
}

await main();
