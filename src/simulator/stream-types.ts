/**
 * The shapes of a simulated stream: its runs with their tests and ground-truth labels, the
 * injected anomalies, and the knobs a seed draws.
 */
import type { CaseStatus } from "../checks/types";

export type AnomalyType =
  "flaky_test" | "duration_shift" | "duration_drift" | "test_duration_shift" | "failure_spike" | "infra_outage" | "skip_step" | "skip_ramp";

/** Which check each anomaly type belongs to. */
export const ANOMALY_FAMILY: Record<AnomalyType, Family> = {
  flaky_test: "flaky",
  duration_shift: "regression",
  duration_drift: "regression",
  test_duration_shift: "regression",
  failure_spike: "spike",
  infra_outage: "spike",
  skip_step: "skip",
  skip_ramp: "skip",
};

export type Family = "flaky" | "regression" | "spike" | "skip";

/** One injected anomaly. Run numbers are the stream's (1-based); `end` null = lasts to the end. */
export type Anomaly = {
  id: string;
  type: AnomalyType;
  /** A test key (flaky_test, test_duration_shift), "run_duration", "run" (spikes, outages) or "skipped_tests". */
  subject: string;
  /** First affected run (always a default-branch run that is not a retry). */
  start: number;
  /** Last run of the anomaly's active phase (point anomalies: = start; a fixed flaky test: the last flaky run; a ramp/drift: its last step); null while it lasts. */
  end: number | null;
  /** p (flaky), relative duration change (+0.25 = 25 % slower), failing share of executed tests (spike/outage), tests newly skipped (skip). */
  magnitude: number;
  /** Size class used for recall targets (see the `size` rules in classifySizes). */
  size: "large" | "small";
  details: Record<string, unknown>;
};

/**
 * A ground-truth label on a run: an anomaly active at that run. Flaky tests are labelled on the
 * runs that contain them from onset until fixed; lasting changes (duration steps and drifts, skip
 * steps and ramps, per-test duration steps) from onset to the end of the stream, since the new level
 * stays; spikes and outages on their run only.
 */
type GroundTruthLabel = { id: string; type: AnomalyType; subject: string; start: number };

/** Things that happened at a run that are NOT anomalies (for explaining false events). */
export type RunNote =
  | { kind: "retry_of"; run: number }
  | { kind: "breakage_start"; test: string; length: number | null }
  | { kind: "breakage_fixed"; test: string; disabled: boolean }
  | { kind: "branch_breakage"; tests: number }
  | { kind: "suite_skipped"; suite: string; tests: number }
  | { kind: "skips_removed"; tests: number }
  | { kind: "duration_improvement"; rel: number }
  | { kind: "tests_added"; count: number }
  | { kind: "tests_removed"; count: number };

/**
 * Why a test failed (or failed an attempt) in a run, the first reason in run generation's order:
 * a failure the run forced on it (a suite's outage, a spike, its co-failing group), an
 * environment-dependent test ("env_half"), a breakage on the default branch (every branch has it
 * from the run it started on), a breakage of the run's feature branch, the test's own flakiness,
 * or the fragile pool's background failures. Ground truth for the verdicts (src/simulator/verdict-truth.ts).
 */
export type FailureCause = "outage" | "spike" | "co_failing_group" | "always_failing" | "breakage" | "branch_breakage" | "flaky" | "pool";

/** Run number → test key → why it failed there; only runs with a failure (or a failed attempt) are present. */
export type FailureCauses = Map<number, Map<string, FailureCause>>;

export type SimAttempt = { status: CaseStatus; durationMs: number };

export type SimTest = {
  /** legacyTestKey(suite, classname, name): unique per test (names are unique), so one key per test identity. */
  key: string;
  suite: string;
  classname: string;
  name: string;
  status: CaseStatus;
  /** Earlier attempts in this run (in-run retries), oldest first. */
  attempts: SimAttempt[];
  /** Duration of the final attempt, already quantised to the stream's JUnit time step. */
  durationMs: number;
  /** Why it failed/errored (message); null when it passed or was skipped. */
  message: string | null;
};

type ReportFormat = "surefire" | "gradle";

export type SimRun = {
  number: number;
  branch: string;
  commit_sha: string;
  /** RFC 3339 (UTC). Sent as `started_at`. */
  created_at: string;
  /** The run's duration as the service stores it: the reported wall clock, else the sum of the suites. */
  duration: number;
  /** The `<testsuites time>` written into the XML (ms), or null when the format reports none. */
  wall_clock_ms: number | null;
  format: ReportFormat;
  /** Decimals of the `time` attributes (3 → 1 ms steps, 2 → 10 ms steps). */
  time_decimals: 2 | 3;
  retry_of: number | null;
  /** A feature-branch run's base: the default-branch commit it started from (sent as `base_commit_sha`); absent in the checks' streams. */
  base_commit_sha?: string;
  tests: SimTest[];
  labels: GroundTruthLabel[];
  notes: RunNote[];
};

export type TestProfile = {
  key: string;
  /** Median duration (ms) before runner, project and test-level factors; CV of its lognormal noise. */
  medianMs: number;
  cv: number;
  /** First run it is part of; the run from which it is gone (null: never removed). */
  addedAt: number;
  removedAt: number | null;
  /** Part of the fragile pool (background failures). */
  pool: boolean;
  /** Fails (or errors) in every run and never passes: an environment-dependent test (scenario "env_half"); absent otherwise. Not an anomaly: not flaky. */
  alwaysFailing?: true;
};

export type StreamKnobs = {
  runs: number;
  tests: number;
  families: Record<Family, boolean>;
  /** Independent flaky tests' failure probabilities (one test each). */
  flakyRates: number[];
  /** Share of the independent flaky tests that become flaky at a later run (the rest from the start). */
  lateFlakyShare: number;
  /** Fragile pool (share of tests) and mean background failure share μ of executed tests; 0 disables. */
  poolShare: number;
  backgroundRate: number;
  /** Beta-binomial intra-run correlation of background failures. */
  rho: number;
  /** Probability that a failed (non-retry) run is rerun on the same commit. */
  retryProbability: number;
  /** In-run retries of failing tests (Surefire rerunFailingTestsCount / Gradle retry). */
  inRunRetries: 0 | 1 | 2;
  format: ReportFormat;
  reportsWallClock: boolean;
  timeDecimals: 2 | 3;
  slowRunnerShare: number;
  slowRunnerFactor: number;
  outlierProbability: number;
  featureBranchShare: number;
  /** Multiplies every test's median duration. */
  durationScale: number;
  /** Share of tests skipped (disabled) from the start. */
  baselineSkipShare: number;
  /** Probability per default-branch run that a test is added (removal is mean-reverting to `tests`). */
  churn: number;
  /** Breakage episodes per 100 runs. */
  breakagesPer100: number;
  /** Mean gap between default-branch runs, minutes. */
  minutesBetweenRuns: number;
  startAt: string;
  /**
   * Scenario "env_half": the share of the initially executed tests that fail (or error) in every
   * run and never pass (environment-dependent tests), and the share of those that error. Absent
   * in the other scenarios.
   */
  alwaysFailingShare?: number;
  alwaysFailingErroredShare?: number;
  /**
   * Scenario "co_failing_group": `size` tests that fail together in a share `rate` of the runs
   * (every run draws once, same-commit retries included) and pass together otherwise; from run
   * `from` (main index). Each test is a flaky_test anomaly (details.group). Absent otherwise.
   */
  coFailingGroup?: { size: number; rate: number };
  /**
   * Scenarios "co_failing_subsets" and "env_block_flaky" (real rerun data: one commit, about 100
   * re-runs): the default-branch runs come in batches of `rerunBatch` re-runs of one commit (a new
   * commit every `rerunBatch` default-branch runs that are not retries). Absent otherwise.
   */
  rerunBatch?: number;
  /**
   * Scenario "co_failing_subsets": a group of `size` tests of one suite; in a share `rate` of the runs
   * (one draw per run, any branch, re-runs included) a different subset of `subsetMin`–`subsetMax` of
   * them fails together. Each member is a flaky_test anomaly (details.group, details.subsets).
   */
  coFailingSubsets?: { size: number; rate: number; subsetMin: number; subsetMax: number };
  /**
   * Scenario "env_block_flaky": in one suite (a module), a share `blockShare` of its tests errors in
   * every run and never passes (environment-dependent, not flaky), while up to `flaky` others of it flake:
   * in a share `rate` of the runs a different subset of `subsetMin`–`subsetMax` of them errors
   * together. Each flaky one is a flaky_test anomaly (details.group, details.env_block).
   */
  envBlock?: { blockShare: number; flaky: number; rate: number; subsetMin: number; subsetMax: number };
};

/**
 * "mixed": every anomaly family on; "quiet": none; a family name: only that family. The detection
 * patterns (every family on, as in "mixed", plus): "env_half", about half the tests fail in every
 * run and never pass (environment-dependent; not flaky); "co_failing_group", a group of 5–20
 * tests that fail together in some runs and pass together in others, same-commit re-runs included
 * (flaky). The rerun patterns (real rerun data: one commit, ~100 re-runs per batch; every family
 * on as in "mixed", default-branch runs in batches of 100 re-runs of one commit, no feature
 * branches, no breakage episodes): "co_failing_subsets", a group of 14–18 tests of one suite of
 * which each failing run fails a different few (5–8) together (flaky); "env_block_flaky", about
 * half of one suite's tests error in every run (not flaky) while the others of it (up to 16) error
 * in varying subsets of 5–8 in some runs (flaky).
 */
export type Scenario = "mixed" | "quiet" | Family | "env_half" | "co_failing_group" | "co_failing_subsets" | "env_block_flaky";
export const SCENARIOS: readonly Scenario[] = [
  "mixed",
  "quiet",
  "flaky",
  "regression",
  "spike",
  "skip",
  "env_half",
  "co_failing_group",
  "co_failing_subsets",
  "env_block_flaky",
];

export type StreamOptions = {
  seed: number;
  /** Default "mixed" (every anomaly family on); "quiet" = none; a family name = only that family; see Scenario. */
  scenario?: Scenario;
  runs?: number;
  tests?: number;
  /** Overrides applied after the seed drew the knobs. */
  knobs?: Partial<StreamKnobs>;
};

export type SimStream = {
  seed: number;
  scenario: Scenario;
  knobs: StreamKnobs;
  runs: SimRun[];
  anomalies: Anomaly[];
  /** Every test the project ever had: its duration profile (before any shift) and when it was part of the runs. */
  tests: TestProfile[];
  /** Measured on the generated runs: log-σ of the default-branch run duration before the first duration anomaly, mean failing share of clean default-branch runs. */
  stats: { durationLogSigma: number; baselineFailureShare: number; defaultBranchRuns: number; medianTestsPerRun: number };
};
