/**
 * Seeded generator of realistic project histories with ground truth, shared by the detection
 * benchmark, the replay CLI and the tests. The same options always give the same stream
 * (mulberry32; nothing reads Math.random or the clock).
 *
 * A stream is a sequence of runs of one project: mostly default-branch ("main") runs, one commit
 * each, plus feature-branch runs and same-commit retries of failed runs. Each run lists its tests
 * with final status, in-run retry attempts and (quantised) durations, and the ground-truth labels
 * of the anomalies active at that run. `toJUnitXml` writes the run as a real JUnit report (Surefire
 * with `<flakyFailure>`/`<rerunFailure>`, or Gradle-style repeated `<testcase>` entries) and
 * `toRunSummary` gives exactly what the service derives from that report (same keys, statuses
 * after the retry merge, case order, durations, run duration).
 *
 * Noise that is NOT an anomaly (checks should stay quiet): lognormal per-test durations (CV
 * 5–40 %), 5 % slow outliers (1.5–3×), a bimodal runner mix (1.3×), JUnit time quantisation,
 * overhead jitter; correlated background failures of a fragile test pool are labelled (they are
 * flaky tests); breakage episodes (a test broken for 1, 3, 10 or 30 runs, or until the end, then
 * fixed or disabled; sometimes twice); feature-branch breakages; one-run whole-suite skips;
 * skip removal; duration improvements; test churn (added, removed, renamed, small bulk adds).
 *
 * Anomaly families (each can be switched off, so a stream is "clean" for that type):
 * - flaky: independent flaky tests (p ∈ {0.02, 0.05, 0.1, 0.3}, from the start or "since run k",
 *   sometimes fixed later) and a fragile pool whose failures follow beta-binomial run-level shocks
 *   (ρ ∈ {0, 0.01, 0.05}): X ~ BetaBin(executed, μ, ρ) failures per run, drawn from the pool.
 * - regression: run-level duration steps (+10/25/50/100 %), slow drift, per-test duration steps.
 * - spike: single-run failure spikes (x % of executed tests failing) and infrastructure outages
 *   (every test of one suite errors in one run).
 * - skip: skip steps (+5, +20 tests) and ramps (+1 test per 5 runs).
 *
 * Detection patterns (scenarios, every family on unless the knobs say otherwise):
 * - "env_half": 52–62 % of the tests fail (or error) in every run and never pass (environment-
 *   dependent tests: noise, not flaky), beside the flaky family's genuinely flaky tests;
 * - "co_failing_group": 5–20 tests fail together in 3, 5 or 10 % of the runs (one draw per run,
 *   same-commit retries included) and pass together otherwise: each is a flaky_test anomaly.
 * The rerun patterns (real rerun data: one commit re-run about 100 times per batch), every family
 * on, the default-branch runs in batches of 100 re-runs of one commit, no feature branches and no
 * breakage episodes:
 * - "co_failing_subsets": a group of 14–18 tests of one suite; in 6 or 10 % of the runs a different
 *   subset of 5–8 of them fails together: each member is a flaky_test anomaly;
 * - "env_block_flaky": about half of one suite's tests error in every run and never pass (not
 *   flaky), while the others of it (up to 16) error in a different subset of 5–8 in 6 or 10 % of the runs
 *   (each a flaky_test anomaly).
 *
 * The parts: rng.ts (distributions), knobs.ts (what a seed draws), project-model.ts (suites, tests
 * and the plan), anomaly-plan.ts and noise-plan.ts (what happens when), run-generation.ts (the
 * runs), ground-truth.ts (labels and size classes), junit-report.ts (the XML and the summary).
 */
import {
  planAlwaysFailing,
  planCoFailingGroup,
  planCoFailingSubsets,
  planDurationChanges,
  planEnvBlock,
  planFailureSpikes,
  planFlakyTests,
  planSkipChanges,
} from "./anomaly-plan";
import { classifySizes, labelRuns } from "./ground-truth";
import { drawKnobs } from "./knobs";
import { planNoise } from "./noise-plan";
import { SimulatedProject, buildSuites } from "./project-model";
import { Rng } from "./rng";
import { generateRuns } from "./run-generation";
import type { FailureCauses, SimStream, StreamOptions, TestProfile } from "./stream-types";

export { mulberry32 } from "../lib/seeded-random";
export { breakageEpisodes, failingShare } from "./ground-truth";
export { toJUnitXml, toRunSummary } from "./junit-report";
export { Rng } from "./rng";
export * from "./stream-types";

/**
 * Generates one stream. Planned anomalies are placed by default-branch run index ("main index":
 * the k-th default-branch run that is not a retry) and take effect at that run; an anomaly whose
 * planned index is beyond the generated runs is dropped (only anomalies that happened are listed).
 */
export function generateStream(options: StreamOptions): SimStream {
  return generateStreamWithCauses(options).stream;
}

/**
 * generateStream, with why each failure happened (the verdicts' ground truth). The causes are kept
 * apart from the stream, so a stream stays byte-identical to what generateStream always gave.
 */
export function generateStreamWithCauses(options: StreamOptions): { stream: SimStream; causes: FailureCauses } {
  const rng = new Rng((options.seed * 2654435761) ^ 0x5bd1e995);
  const scenario = options.scenario ?? "mixed";
  const knobs = drawKnobs(rng, options);
  // Separate generators for the plan and the per-run draws, so the plan does not depend on the outcomes.
  const plan = new Rng(rng.int(1, 2 ** 31));
  const draw = new Rng(rng.int(1, 2 ** 31));
  const project = new SimulatedProject(knobs, plan, draw);

  // The planners draw from `plan` in this order; changing it changes every seeded stream.
  buildSuites(project);
  planFlakyTests(project);
  const durationChanges = planDurationChanges(project);
  planFailureSpikes(project);
  planSkipChanges(project, durationChanges);
  planNoise(project, durationChanges);
  // The detection patterns plan last (they draw nothing unless their scenario is on).
  planAlwaysFailing(project);
  planCoFailingGroup(project);
  planCoFailingSubsets(project);
  planEnvBlock(project);
  project.sortPlan();

  const runs = generateRuns(project);
  labelRuns(runs, project.anomalies, project.allTests);

  const tests: TestProfile[] = project.allTests.map((t) => ({
    key: t.key,
    medianMs: Math.round(t.medianMs),
    cv: Math.round(Math.sqrt(Math.exp(t.sigma ** 2) - 1) * 1000) / 1000,
    addedAt: t.addedAt,
    removedAt: t.removedAt,
    pool: t.pool,
    ...(t.alwaysFails ? { alwaysFailing: true as const } : {}),
  }));
  const stream: SimStream = {
    seed: options.seed,
    scenario,
    knobs,
    runs,
    anomalies: project.anomalies,
    tests,
    stats: { durationLogSigma: 0, baselineFailureShare: 0, defaultBranchRuns: 0, medianTestsPerRun: 0 },
  };
  classifySizes(stream);
  return { stream, causes: project.causes };
}

/** Counts for printing: anomalies by type and size, runs by kind. */
export function describeStream(stream: SimStream): {
  runs: number;
  defaultBranchRuns: number;
  retries: number;
  featureBranchRuns: number;
  anomalies: Record<string, { large: number; small: number }>;
} {
  const anomalies: Record<string, { large: number; small: number }> = {};
  for (const a of stream.anomalies) {
    const entry = (anomalies[a.type] ??= { large: 0, small: 0 });
    entry[a.size]++;
  }
  return {
    runs: stream.runs.length,
    defaultBranchRuns: stream.runs.filter((r) => r.branch === "main").length,
    retries: stream.runs.filter((r) => r.retry_of !== null).length,
    featureBranchRuns: stream.runs.filter((r) => r.branch !== "main").length,
    anomalies,
  };
}
