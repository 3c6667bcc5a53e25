/**
 * `npm run bench:tests`: what keeping tests as resources costs a run's processing, and that the
 * cost follows the run, not the project's history:
 * - a 5-case run on a project with 100,000 known tests vs the same run on a project that knows
 *   only those 5 tests;
 * - a 20-case run on a project with 10,000 runs of history vs one with 100.
 * Each pair is measured alternately (A B B A…) in one process on the local Postgres server, one
 * database made for the run and dropped after it; medians of the processing step (store the
 * run's report, its tests' state and failure groups, in one transaction). The report is recorded
 * in BENCHMARKS.md and bench/history/tests.md (bench/report.ts; BENCH_NO_RECORD=1 for a trial run).
 */
import os from "node:os";
import { systemClock } from "../src/lib/clock";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { type Report, completeTestRun, recordTestRunArrival } from "../src/services/runs/test-runs";
import { withBenchDatabase } from "./common";
import { recordBenchmark } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const KNOWN_TESTS = Number(process.env.BENCH_TESTS_KNOWN ?? 100_000);
const HISTORY_RUNS = Number(process.env.BENCH_TESTS_HISTORY ?? 10_000);
const ROUNDS = 31;
const log = (message: string) => console.error(`[tests-bench] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${value.toFixed(2)} ms`;

/** `count` cases named after `offset…`, a few failing on and off with a stack trace, so groups and health are exercised too. */
function report(count: number, offset: number, round: number): Report {
  return {
    suites: [
      {
        name: "suite",
        cases: Array.from({ length: count }, (_, i) => {
          const n = offset + i;
          const failing = (n + round) % 7 === 0;
          return {
            name: `test_${n}`,
            classname: `com.acme.Module${n % 50}Test`,
            status: failing ? ("failed" as const) : ("passed" as const),
            durationMs: 5 + (n % 40),
            failureType: failing ? "java.lang.AssertionError" : null,
            failureMessage: failing ? `expected ${n} but was ${n + 1}` : null,
            failureText: failing
              ? `java.lang.AssertionError: expected ${n} but was ${n + 1}\n\tat com.acme.Module${n % 50}Test.test_${n}(Module${n % 50}Test.java:${n % 300})`
              : null,
          };
        }),
      },
    ],
  };
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(1);
  await withBenchDatabase(SERVER_URL, "cia_tests_bench", async (database, postgres) => {
    const deps = {
      db: database.db,
      clock: systemClock,
      webAppUrl: "https://app.example.com",
      logger: { info() {}, error: (message: string, fields?: Record<string, unknown>) => console.error(message, fields) },
    };
    const org = await createOrganization(deps, { name: "Bench" });
    const newProject = async (name: string) => (await createProject(deps, org.organization.id, { name })).project.id as string;
    let sha = 0;
    const processRun = async (projectId: string, content: Report) => {
      const { run } = await recordTestRunArrival(deps, projectId, { branch: "main", commitSha: `c${sha++}` });
      const start = performance.now();
      await completeTestRun(deps, run.id, content);
      return performance.now() - start;
    };

    // A: 100,000 known tests vs 5.
    const big = await newProject("100k tests");
    const small = await newProject("5 tests");
    for (let offset = 0; offset < KNOWN_TESTS; offset += 10_000)
      await processRun(big, report(Math.min(10_000, KNOWN_TESTS - offset), offset, 0));
    await processRun(small, report(5, 0, 0));
    log(`A: ${KNOWN_TESTS} tests known`);
    const onBig: number[] = [];
    const onSmall: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 0 ? [big, small] : [small, big];
      for (const projectId of order) (projectId === big ? onBig : onSmall).push(await processRun(projectId, report(5, 0, round)));
    }

    // B: 10,000 runs of history vs 100, 20 cases a run.
    const long = await newProject("long history");
    const short = await newProject("short history");
    for (let i = 0; i < HISTORY_RUNS; i++) {
      await processRun(long, report(20, 0, i));
      if (i < 100) await processRun(short, report(20, 0, i));
      if ((i + 1) % 2000 === 0) log(`B: ${i + 1} runs of history`);
    }
    const onLong: number[] = [];
    const onShort: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 0 ? [long, short] : [short, long];
      for (const projectId of order)
        (projectId === long ? onLong : onShort).push(await processRun(projectId, report(20, 0, HISTORY_RUNS + round)));
    }

    const ratioKnown = median(onBig) / median(onSmall);
    const ratioHistory = median(onLong) / median(onShort);
    const body = [
      "## Tests as resources: what they cost a run's processing (`npm run bench:tests`)",
      "",
      `Run on ${new Date().toISOString().slice(0, 10)}, ${postgres} on 127.0.0.1, Node ${process.version}, load average at start ${load}. ` +
        `The processing step (store the report with COPY, update the run's tests and failure groups, one transaction), called in process; ${ROUNDS} runs per variant, alternated; medians. Every 7th case fails with a stack trace, so health and groups are updated too.`,
      "",
      "| Measure | Median | Ratio | Target |",
      "|---|---:|---:|---|",
      `| 5-case run, project with ${KNOWN_TESTS.toLocaleString("en-US")} known tests | ${ms(median(onBig))} | ${ratioKnown.toFixed(2)}× | ≤ 2×: ${ratioKnown <= 2 ? "PASS" : "FAIL"} |`,
      `| 5-case run, project that knows only those 5 tests | ${ms(median(onSmall))} | | |`,
      `| 20-case run, project with ${HISTORY_RUNS.toLocaleString("en-US")} runs of history | ${ms(median(onLong))} | ${ratioHistory.toFixed(2)}× | ≤ 1.3×: ${ratioHistory <= 1.3 ? "PASS" : "FAIL"} |`,
      "| 20-case run, project with 100 runs of history | " + ms(median(onShort)) + " | | |",
    ].join("\n");
    console.log(body);
    const verdict = (met: boolean) => (met ? "PASS" : "FAIL");
    recordBenchmark({
      name: "tests",
      command: "npm run bench:tests",
      measures: "What keeping tests as resources costs a run's processing",
      figure: `${KNOWN_TESTS.toLocaleString("en-US")} known tests ${ratioKnown.toFixed(2)}× ${verdict(ratioKnown <= 2)}; ${HISTORY_RUNS.toLocaleString("en-US")} runs of history ${ratioHistory.toFixed(2)}× ${verdict(ratioHistory <= 1.3)}`,
      target: "≤ 2× (known tests); ≤ 1.3× (history)",
      report: body,
    });
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
