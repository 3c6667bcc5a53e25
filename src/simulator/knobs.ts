/** The knobs of a stream: what the seed draws for the project, overridable by the caller. */
import type { Rng } from "./rng";
import type { Family, StreamKnobs, StreamOptions } from "./stream-types";

export function drawKnobs(rng: Rng, options: StreamOptions): StreamKnobs {
  const scenario = options.scenario ?? "mixed";
  const all =
    scenario === "mixed" ||
    scenario === "env_half" ||
    scenario === "co_failing_group" ||
    scenario === "co_failing_subsets" ||
    scenario === "env_block_flaky";
  const families: Record<Family, boolean> = {
    flaky: all || scenario === "flaky",
    regression: all || scenario === "regression",
    spike: all || scenario === "spike",
    skip: all || scenario === "skip",
  };
  const knobs: StreamKnobs = {
    runs: options.runs ?? 300,
    tests: options.tests ?? 200,
    families,
    flakyRates: [0.02, 0.05, 0.1, 0.3, ...(rng.chance(0.5) ? [rng.pick([0.02, 0.05])] : [])],
    lateFlakyShare: 0.5,
    poolShare: 0.08,
    backgroundRate: rng.uniform(0.001, 0.004),
    rho: rng.pick([0, 0.01, 0.05]),
    retryProbability: rng.pick([0, 0.2, 0.5]),
    inRunRetries: rng.pick([0, 0, 1, 2] as const),
    format: rng.chance(0.7) ? "surefire" : "gradle",
    reportsWallClock: rng.chance(0.6),
    timeDecimals: rng.chance(0.6) ? 3 : 2,
    slowRunnerShare: rng.pick([0, 0.2, 0.5]),
    slowRunnerFactor: 1.3,
    outlierProbability: 0.05,
    featureBranchShare: rng.uniform(0.1, 0.3),
    durationScale: Math.exp(rng.uniform(Math.log(0.5), Math.log(2))),
    baselineSkipShare: rng.uniform(0.01, 0.12),
    churn: 0.04,
    breakagesPer100: 1,
    minutesBetweenRuns: 60,
    startAt: "2026-01-05T08:00:00.000Z",
  };
  // The detection patterns draw after everything else, so the other scenarios draw exactly as before.
  if (scenario === "env_half") {
    knobs.alwaysFailingShare = rng.uniform(0.52, 0.62);
    knobs.alwaysFailingErroredShare = rng.pick([0, 0.3, 1]);
  } else if (scenario === "co_failing_group") {
    knobs.coFailingGroup = { size: rng.int(5, 20), rate: rng.pick([0.03, 0.05, 0.1]) };
    // The pattern includes same-commit re-runs where the group passes.
    if (knobs.retryProbability === 0) knobs.retryProbability = 0.2;
  } else if (scenario === "co_failing_subsets" || scenario === "env_block_flaky") {
    // Real rerun data: one commit re-run about 100 times per batch, on the default branch; code
    // does not change within a batch, so no feature branches and no breakage episodes.
    knobs.rerunBatch = 100;
    knobs.featureBranchShare = 0;
    knobs.breakagesPer100 = 0;
    // Each failing run fails a different few of the group: 5–8, so that every one of them is a
    // co-failure burst to the check, as on the real data (a smaller one is plain same-commit evidence).
    if (scenario === "co_failing_subsets")
      knobs.coFailingSubsets = { size: rng.int(14, 18), rate: rng.pick([0.06, 0.1]), subsetMin: 5, subsetMax: 8 };
    else knobs.envBlock = { blockShare: rng.uniform(0.45, 0.55), flaky: 16, rate: rng.pick([0.06, 0.1]), subsetMin: 5, subsetMax: 8 };
  }
  return { ...knobs, ...options.knobs, families: { ...knobs.families, ...options.knobs?.families } };
}
