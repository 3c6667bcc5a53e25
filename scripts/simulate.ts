/**
 * `npm run simulate -- --url http://localhost:8787 --token ctu_… [--seed 42] [--runs 120] [--scenario mixed]`
 *
 * Generates a seeded project history with injected anomalies (src/simulator/streams.ts) and
 * replays it through the upload API, one run at a time (each is processed before the next is
 * sent), so the project's alert checks see it in order. Prints what was uploaded and which
 * anomalies were injected at which run numbers (simulated numbers; the service's numbers are
 * offset when the project already had runs).
 *
 * Options: --tests N (default 200), --dry-run (generate and print, upload nothing),
 * --scenario mixed|quiet|flaky|regression|spike|skip|env_half|co_failing_group (SCENARIOS in src/simulator/streams.ts).
 */
import { parseArgs } from "node:util";
import { replayThroughUploads } from "../src/simulator/replay";
import { type Scenario, SCENARIOS, describeStream, generateStream } from "../src/simulator/streams";

function fail(message: string): never {
  process.stderr.write(`simulate: ${message}\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    seed: { type: "string", default: "42" },
    runs: { type: "string", default: "120" },
    tests: { type: "string", default: "200" },
    scenario: { type: "string", default: "mixed" },
    "dry-run": { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
  strict: true,
});

if (values.help) {
  process.stdout.write(
    `Usage: npm run simulate -- --url http://localhost:8787 --token ctu_… [--seed 42] [--runs 120] [--tests 200] [--scenario ${SCENARIOS.join("|")}] [--dry-run]\n`,
  );
  process.exit(0);
}

const seed = Number(values.seed);
const runs = Number(values.runs);
const tests = Number(values.tests);
if (!Number.isInteger(seed)) fail("--seed must be an integer");
if (!Number.isInteger(runs) || runs < 1 || runs > 100_000) fail("--runs must be an integer from 1 to 100000");
if (!Number.isInteger(tests) || tests < 10 || tests > 100_000) fail("--tests must be an integer from 10 to 100000");
if (!SCENARIOS.includes(values.scenario as Scenario)) fail(`--scenario must be one of ${SCENARIOS.join(", ")}`);
const dryRun = values["dry-run"];
if (!dryRun && (!values.url || !values.token)) fail("--url and --token are required (or pass --dry-run)");

const stream = generateStream({ seed, runs, tests, scenario: values.scenario as Scenario });
const described = describeStream(stream);

const lines: string[] = [];
lines.push(
  `Stream: seed ${seed}, scenario ${stream.scenario}, ${described.runs} runs (${described.defaultBranchRuns} on main, ${described.featureBranchRuns} on feature branches, ${described.retries} same-commit retries), ~${stream.stats.medianTestsPerRun} tests per run`,
);
lines.push(
  `Knobs: format ${stream.knobs.format}${stream.knobs.reportsWallClock ? " (wall clock reported)" : ""}, in-run retries ${stream.knobs.inRunRetries}, retry probability ${stream.knobs.retryProbability}, rho ${stream.knobs.rho}, slow-runner share ${stream.knobs.slowRunnerShare}; measured run-duration log-sigma ${stream.stats.durationLogSigma.toFixed(3)}, baseline failing share ${(100 * stream.stats.baselineFailureShare).toFixed(2)} %`,
);
lines.push(`Anomalies injected: ${stream.anomalies.length}`);
const label = (subject: string) => subject.replace(/\u001f/g, " › ");
for (const anomaly of stream.anomalies) {
  const end =
    anomaly.end !== null && anomaly.end !== anomaly.start
      ? `–${anomaly.end}`
      : anomaly.end === null && anomaly.type !== "failure_spike" && anomaly.type !== "infra_outage"
        ? "→"
        : "";
  lines.push(
    `  run ${anomaly.start}${end}  ${anomaly.type.padEnd(19)} ${anomaly.size.padEnd(5)} magnitude ${anomaly.magnitude.toFixed(3).padStart(7)}  ${label(anomaly.subject)}`,
  );
}
process.stdout.write(`${lines.join("\n")}\n`);

if (!dryRun) {
  const started = Date.now();
  const result = await replayThroughUploads({
    baseUrl: values.url!,
    uploadToken: values.token!,
    runs: stream.runs,
    onRun: (run, index, total) => {
      if ((index + 1) % 10 === 0 || index + 1 === total)
        process.stderr.write(`  uploaded ${index + 1}/${total} (service run ${run.serviceNumber}: ${run.status})\n`);
    },
  }).catch((error: unknown) => fail(error instanceof Error ? error.message : String(error)));
  const first = result.runs[0]?.serviceNumber;
  const last = result.runs.at(-1)?.serviceNumber;
  process.stdout.write(
    `Uploaded ${result.uploaded} runs in ${((Date.now() - started) / 1000).toFixed(1)} s: ${result.processed} processed, ${result.failed} failed` +
      (first !== undefined ? `; service run numbers ${first}–${last} (simulated run n is service run ${first - 1} + n)` : "") +
      "\n",
  );
  if (result.failed > 0) process.exitCode = 1;
}
