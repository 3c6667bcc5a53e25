/**
 * Seeded generator of realistic project histories with ground truth (detection.md §7.1), shared by
 * the detection benchmark, the replay CLI and the tests. The same options always give the same
 * stream (mulberry32; nothing reads Math.random or the clock).
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
 */
import { type CaseStatus, type RunSummary, type RunTest, testKey } from "../checks/types";
import { parseSeconds } from "../ingest/junit";
import { mulberry32 } from "../lib/seeded-random";

// ---------------------------------------------------------------------------------------------
// Random numbers


/** Distributions on top of mulberry32. */
export class Rng {
  private readonly source: () => number;
  private spare: number | null = null;

  constructor(seed: number) {
    this.source = mulberry32(seed);
  }

  next(): number {
    return this.source();
  }

  uniform(low = 0, high = 1): number {
    return low + (high - low) * this.source();
  }

  /** An integer in [low, high]. */
  int(low: number, high: number): number {
    return low + Math.floor(this.source() * (high - low + 1));
  }

  chance(p: number): boolean {
    return this.source() < p;
  }

  /** Standard normal (Box–Muller, the second value kept for the next call). */
  normal(): number {
    if (this.spare !== null) {
      const value = this.spare;
      this.spare = null;
      return value;
    }
    let u = 0;
    while (u <= Number.EPSILON) u = this.source();
    const v = this.source();
    const radius = Math.sqrt(-2 * Math.log(u));
    this.spare = radius * Math.sin(2 * Math.PI * v);
    return radius * Math.cos(2 * Math.PI * v);
  }

  lognormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal());
  }

  exponential(mean: number): number {
    let u = 0;
    while (u <= Number.EPSILON) u = this.source();
    return -mean * Math.log(u);
  }

  /** Gamma(shape, 1), Marsaglia–Tsang (with the shape < 1 boost). */
  gamma(shape: number): number {
    if (shape < 1) {
      let u = 0;
      while (u <= Number.EPSILON) u = this.source();
      return this.gamma(shape + 1) * Math.pow(u, 1 / shape);
    }
    const d = shape - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      let x = 0;
      let v = 0;
      do {
        x = this.normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const u = this.source();
      if (u < 1 - 0.0331 * x * x * x * x) return d * v;
      if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
    }
  }

  beta(a: number, b: number): number {
    const x = this.gamma(a);
    const y = this.gamma(b);
    return x + y > 0 ? x / (x + y) : 0;
  }

  binomial(n: number, p: number): number {
    if (p <= 0 || n <= 0) return 0;
    if (p >= 1) return n;
    let count = 0;
    for (let i = 0; i < n; i++) if (this.source() < p) count++;
    return count;
  }

  poisson(mean: number): number {
    const limit = Math.exp(-mean);
    let k = 0;
    let product = this.source();
    while (product > limit) {
      k++;
      product *= this.source();
    }
    return k;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick() from an empty list");
    return items[Math.floor(this.source() * items.length)] as T;
  }

  /** k distinct items (a partial Fisher–Yates on a copy), in draw order. */
  sample<T>(items: readonly T[], k: number): T[] {
    const copy = items.slice();
    const count = Math.min(k, copy.length);
    for (let i = 0; i < count; i++) {
      const j = i + Math.floor(this.source() * (copy.length - i));
      [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
    }
    return copy.slice(0, count);
  }

  hex(length: number): string {
    let out = "";
    while (out.length < length) out += Math.floor(this.source() * 0x100000000).toString(16).padStart(8, "0");
    return out.slice(0, length);
  }
}

// ---------------------------------------------------------------------------------------------
// Types

export type AnomalyType =
  | "flaky_test"
  | "duration_shift"
  | "duration_drift"
  | "test_duration_shift"
  | "failure_spike"
  | "infra_outage"
  | "skip_step"
  | "skip_ramp";

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
export const FAMILIES: readonly Family[] = ["flaky", "regression", "spike", "skip"];

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
export type GroundTruthLabel = { id: string; type: AnomalyType; subject: string; start: number };

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

export type SimAttempt = { status: CaseStatus; durationMs: number };

export type SimTest = {
  /** testKey(suite, classname, name): the identity the service derives. */
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

export type ReportFormat = "surefire" | "gradle";

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
};

export type Scenario = "mixed" | "quiet" | Family;
export const SCENARIOS: readonly Scenario[] = ["mixed", "quiet", "flaky", "regression", "spike", "skip"];

export type StreamOptions = {
  seed: number;
  /** Default "mixed" (every anomaly family on); "quiet" = none; a family name = only that family. */
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

// ---------------------------------------------------------------------------------------------
// Knobs

function drawKnobs(rng: Rng, options: StreamOptions): StreamKnobs {
  const scenario = options.scenario ?? "mixed";
  const families: Record<Family, boolean> = {
    flaky: scenario === "mixed" || scenario === "flaky",
    regression: scenario === "mixed" || scenario === "regression",
    spike: scenario === "mixed" || scenario === "spike",
    skip: scenario === "mixed" || scenario === "skip",
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
  return { ...knobs, ...options.knobs, families: { ...knobs.families, ...options.knobs?.families } };
}

// ---------------------------------------------------------------------------------------------
// The project model

type Interval = { from: number; to: number };

type TestDef = {
  key: string;
  suite: string;
  classname: string;
  name: string;
  /** First run the test is part of. */
  addedAt: number;
  medianMs: number;
  sigma: number;
  /** Absent from runs before `added` (main index) and from run `removedAt` (run number) on. */
  removedAt: number | null;
  /** Anomaly subjects and pool tests are never removed by churn. */
  protected: boolean;
  /** Intervals are in run numbers, `to` exclusive. */
  skipped: Interval[];
  broken: Interval[];
  flaky: (Interval & { p: number })[];
  pool: boolean;
  /** Test-level duration factor (per-test steps). */
  factor: number;
  /** Currently broken on a feature branch (branch name → true). */
  branchBroken: Set<string>;
};

type SuiteDef = { name: string; classes: string[]; tests: TestDef[] };

const SUITE_NAMES = [
  "checkout", "billing", "search", "auth", "inventory", "orders", "payments", "catalog", "shipping", "users",
  "reports", "notifications", "analytics", "admin", "gateway", "pricing", "reviews", "media", "export", "sessions",
];
const CLASS_NOUNS = ["Cart", "Invoice", "Query", "Token", "Stock", "Order", "Refund", "Product", "Label", "Profile", "Mailer", "Report", "Cache", "Router", "Coupon", "Upload"];
const VERBS = ["computes", "rejects", "accepts", "stores", "loads", "retries", "renders", "validates", "merges", "expires", "exports", "indexes"];
const OBJECTS = ["total", "empty input", "duplicate ids", "unicode names", "large payloads", "expired tokens", "partial refunds", "timeouts", "null fields", "pagination"];

const FAILURE_MESSAGES = ["expected 3 but was 2", "expected true but was false", "assertion failed: list is empty", "Timeout after 5000 ms"];
const OUTAGE_MESSAGE = "java.net.ConnectException: Connection refused (database unavailable)";

const INFINITY = Number.POSITIVE_INFINITY;

function inside(intervals: readonly Interval[], run: number): boolean {
  for (const interval of intervals) if (run >= interval.from && run < interval.to) return true;
  return false;
}

function quantise(ms: number, decimals: 2 | 3): number {
  const step = decimals === 3 ? 1 : 10;
  return Math.max(0, Math.round(ms / step) * step);
}

/** Seconds as the JUnit `time` attribute, with the stream's decimals. */
export function formatSeconds(ms: number, decimals: number): string {
  return (ms / 1000).toFixed(decimals);
}

type Pending = { at: number; apply: (run: number) => void };

type PointEffects = {
  spike: { share: number; anomaly: Anomaly } | null;
  outage: { suite: string; anomaly: Anomaly } | null;
  suiteSkip: string | null;
};

/**
 * Generates one stream. Planned anomalies are placed by default-branch run index ("main index":
 * the k-th default-branch run that is not a retry) and take effect at that run; an anomaly whose
 * planned index is beyond the generated runs is dropped (only anomalies that happened are listed).
 */
export function generateStream(options: StreamOptions): SimStream {
  const rng = new Rng((options.seed * 2654435761) ^ 0x5bd1e995);
  const scenario = options.scenario ?? "mixed";
  const knobs = drawKnobs(rng, options);
  // Separate generators for the plan and the per-run draws, so the plan does not depend on the outcomes.
  const plan = new Rng(rng.int(1, 2 ** 31));
  const draw = new Rng(rng.int(1, 2 ** 31));

  const suites: SuiteDef[] = [];
  const allTests: TestDef[] = [];
  let nameCounter = 0;
  /** The run being generated (tests created now are part of it). */
  let currentRun = 1;
  const anomalies: Anomaly[] = [];
  let anomalyCounter = 0;

  const newTest = (suite: SuiteDef, classname: string): TestDef => {
    const verb = VERBS[nameCounter % VERBS.length]!;
    const object = OBJECTS[Math.floor(nameCounter / VERBS.length) % OBJECTS.length]!;
    const name = `${verb} ${object} #${++nameCounter}`;
    const medianMs = Math.min(60_000, Math.max(2, plan.lognormal(300, 1.3))) * knobs.durationScale;
    const cv = plan.uniform(0.05, 0.4);
    const test: TestDef = {
      key: testKey(suite.name, classname, name),
      suite: suite.name,
      classname,
      name,
      addedAt: currentRun,
      medianMs,
      sigma: Math.sqrt(Math.log(1 + cv * cv)),
      removedAt: null,
      protected: false,
      skipped: [],
      broken: [],
      flaky: [],
      pool: false,
      factor: 1,
      branchBroken: new Set(),
    };
    suite.tests.push(test);
    allTests.push(test);
    return test;
  };

  // Suites of varying size, 2–5 classes each.
  const suiteCount = Math.max(2, Math.round(knobs.tests / 20));
  const weights = Array.from({ length: suiteCount }, () => plan.uniform(0.4, 1.6));
  const weightSum = weights.reduce((a, b) => a + b, 0);
  for (let s = 0; s < suiteCount; s++) {
    const base = SUITE_NAMES[s % SUITE_NAMES.length]!;
    const name = s < SUITE_NAMES.length ? base : `${base}-${Math.floor(s / SUITE_NAMES.length) + 1}`;
    const classes = plan.sample(CLASS_NOUNS, plan.int(2, 5)).map((noun) => `com.acme.${name.replace(/-/g, "")}.${noun}Test`);
    suites.push({ name, classes, tests: [] });
  }
  for (let s = 0; s < suiteCount; s++) {
    const size = Math.max(4, Math.round((knobs.tests * weights[s]!) / weightSum));
    const suite = suites[s]!;
    for (let i = 0; i < size; i++) newTest(suite, suite.classes[i % suite.classes.length]!);
  }
  const initialTests = allTests.slice();

  // Baseline skipped tests (disabled from the start).
  for (const test of plan.sample(initialTests, Math.round(knobs.baselineSkipShare * initialTests.length))) test.skipped.push({ from: 1, to: INFINITY });

  const plain = (): TestDef[] => allTests.filter((t) => !t.protected && t.removedAt === null && t.skipped.length === 0 && t.broken.length === 0 && !t.pool);

  const addAnomaly = (type: AnomalyType, subject: string, start: number, magnitude: number, details: Record<string, unknown>, end: number | null = null): Anomaly => {
    const anomaly: Anomaly = { id: `${type}#${++anomalyCounter}`, type, subject, start, end, magnitude, size: "small", details };
    anomalies.push(anomaly);
    return anomaly;
  };

  const pending: Pending[] = [];
  const schedule = (at: number, apply: (run: number) => void) => pending.push({ at, apply });
  const expectedMain = Math.floor(knobs.runs * (1 - knobs.featureBranchShare) * 0.85);

  let point: PointEffects = { spike: null, outage: null, suiteSkip: null };
  const notesNow: RunNote[] = [];
  let projectSteps = 1;
  let drift: { startIndex: number; endIndex: number; rate: number } | null = null;
  let mainIndex = 0;

  // --- Flaky family
  if (knobs.families.flaky) {
    const candidates = plan.sample(plain(), knobs.flakyRates.length + Math.round(knobs.poolShare * knobs.tests));
    knobs.flakyRates.forEach((p, i) => {
      const test = candidates[i]!;
      test.protected = true;
      const late = plan.chance(knobs.lateFlakyShare);
      const at = late ? plan.int(30, Math.max(31, Math.floor(expectedMain * 0.6))) : 1;
      const fixedAfter = plan.chance(0.2) ? plan.int(100, 200) : null;
      schedule(at, (run) => {
        const anomaly = addAnomaly("flaky_test", test.key, run, p, { p, systemic: false, late });
        test.flaky.push({ from: run, to: INFINITY, p });
        if (fixedAfter !== null) {
          schedule(mainIndex + fixedAfter, (fixRun) => {
            const interval = test.flaky.at(-1)!;
            interval.to = fixRun;
            anomaly.end = fixRun - 1;
            anomaly.details.fixed_at = fixRun;
          });
        }
      });
    });
    if (knobs.poolShare > 0 && knobs.backgroundRate > 0) {
      const pool = candidates.slice(knobs.flakyRates.length);
      for (const test of pool) {
        test.pool = true;
        test.protected = true;
      }
      const poolRate = (knobs.backgroundRate * knobs.tests) / Math.max(1, pool.length);
      schedule(1, (run) => {
        for (const test of pool) addAnomaly("flaky_test", test.key, run, Math.min(1, poolRate), { p: Math.min(1, poolRate), systemic: true, rho: knobs.rho, late: false });
      });
    }
  }

  // --- Regression family: sequential persistent changes, ≥ 100 default-branch runs apart.
  // Planned duration-change indices: skip changes and improvements keep 40 runs away from them, so
  // a change of the test set does not blur a duration anomaly's size.
  const durationChanges: number[] = [];
  const nearDurationChange = (at: number, lead = 40) => durationChanges.some((d) => d - at < lead && at - d < 40);
  if (knobs.families.regression) {
    let at = plan.int(60, 110);
    while (at < expectedMain - 30) {
      durationChanges.push(at);
      const kind = plan.pick(["step", "step", "drift", "test"] as const);
      if (kind === "step") {
        const rel = plan.pick([0.1, 0.25, 0.5, 1.0]);
        schedule(at, (run) => {
          projectSteps *= 1 + rel;
          addAnomaly("duration_shift", "run_duration", run, rel, { rel, main_index: mainIndex });
        });
      } else if (kind === "drift") {
        const length = plan.int(40, 80);
        const total = plan.pick([0.2, 0.3, 0.5]);
        schedule(at, (run) => {
          drift = { startIndex: mainIndex, endIndex: mainIndex + length, rate: total / length };
          const anomaly = addAnomaly("duration_drift", "run_duration", run, total, { rel: total, length_runs: length, main_index: mainIndex });
          schedule(mainIndex + length, (endRun) => {
            anomaly.end = endRun;
          });
        });
      } else {
        const slow = plain().filter((t) => t.medianMs >= 1000);
        if (slow.length > 0) {
          const test = plan.pick(slow);
          test.protected = true;
          const rel = plan.pick([0.5, 1.0, 2.0]);
          schedule(at, (run) => {
            test.factor *= 1 + rel;
            addAnomaly("test_duration_shift", test.key, run, rel, { rel, median_ms: Math.round(test.medianMs), cv: Math.sqrt(Math.exp(test.sigma ** 2) - 1), main_index: mainIndex });
          });
        }
      }
      at += plan.int(100, 170);
    }
  }

  // --- Spike family: single-run spikes and one-suite outages.
  if (knobs.families.spike) {
    let at = plan.int(40, 80);
    while (at < expectedMain) {
      const share = plan.pick([0.03, 0.1, 0.3]);
      schedule(at, (run) => {
        point.spike = { share, anomaly: addAnomaly("failure_spike", "run", run, share, { target_share: share }, run) };
      });
      at += plan.int(40, 120);
    }
    at = plan.int(60, 150);
    while (at < expectedMain) {
      const suite = plan.pick(suites);
      schedule(at, (run) => {
        point.outage = { suite: suite.name, anomaly: addAnomaly("infra_outage", "run", run, 0, { suite: suite.name }, run) };
      });
      at += plan.int(80, 200);
    }
  }

  // --- Skip family: steps (+5, +20) and ramps (+1 per 5 runs for 50 runs).
  if (knobs.families.skip) {
    let at = plan.int(50, 110);
    while (at < expectedMain - 20) {
      const kind = plan.pick(["step5", "step20", "ramp"] as const);
      // A ramp keeps changing the test set for 50 runs.
      if (nearDurationChange(at, kind === "ramp" ? 90 : 40)) {
        at += 20;
        continue;
      }
      if (kind === "ramp") {
        const tests = plan.sample(plain(), 10);
        for (const test of tests) test.protected = true;
        schedule(at, (run) => {
          const anomaly = addAnomaly("skip_ramp", "skipped_tests", run, tests.length, { per_runs: 5, tests: tests.length, main_index: mainIndex });
          tests.forEach((test, i) => {
            const skip = (r: number) => {
              test.skipped.push({ from: r, to: INFINITY });
              if (i === tests.length - 1) anomaly.end = r;
            };
            if (i === 0) skip(run);
            else schedule(mainIndex + 5 * i, skip);
          });
        });
      } else {
        const count = kind === "step5" ? 5 : 20;
        const tests = plan.sample(plain(), count);
        for (const test of tests) test.protected = true;
        schedule(at, (run) => {
          for (const test of tests) test.skipped.push({ from: run, to: INFINITY });
          addAnomaly("skip_step", "skipped_tests", run, tests.length, { tests: tests.length, main_index: mainIndex });
        });
      }
      at += plan.int(90, 160);
    }
  }

  // --- Noise (not anomalies)
  const breakages = plan.poisson((knobs.breakagesPer100 * knobs.runs) / 100);
  for (let b = 0; b < breakages; b++) {
    const candidates = plain();
    if (candidates.length === 0) break;
    const test = plan.pick(candidates);
    test.protected = true;
    const episodes = plan.chance(0.25) ? 2 : 1;
    let at = plan.int(20, Math.max(21, expectedMain - 5));
    for (let e = 0; e < episodes; e++) {
      const length = plan.pick([1, 3, 10, 30, INFINITY]);
      const disable = Number.isFinite(length) && plan.chance(0.3);
      schedule(at, (run) => {
        const interval = { from: run, to: INFINITY };
        test.broken.push(interval);
        notesNow.push({ kind: "breakage_start", test: test.key, length: Number.isFinite(length) ? length : null });
        if (Number.isFinite(length)) {
          schedule(mainIndex + length, (fixRun) => {
            interval.to = fixRun;
            if (disable) test.skipped.push({ from: fixRun, to: INFINITY });
            notesNow.push({ kind: "breakage_fixed", test: test.key, disabled: disable });
          });
        }
      });
      if (!Number.isFinite(length) || disable) break;
      at += length + plan.int(20, 60);
    }
  }
  if (plan.chance(0.6)) {
    const suite = plan.pick(suites);
    schedule(plan.int(30, Math.max(31, expectedMain - 5)), () => {
      point.suiteSkip = suite.name;
    });
  }
  if (plan.chance(0.3)) {
    schedule(plan.int(50, Math.max(51, expectedMain - 20)), (run) => {
      const disabled = allTests.filter((t) => t.removedAt === null && t.skipped.some((s) => s.from === 1 && s.to === INFINITY));
      const enabled = plan.sample(disabled, 3);
      for (const test of enabled) test.skipped = test.skipped.map((s) => (s.from === 1 && s.to === INFINITY ? { from: 1, to: run } : s));
      if (enabled.length > 0) notesNow.push({ kind: "skips_removed", tests: enabled.length });
    });
  }
  const improvementAt = plan.int(40, Math.max(41, expectedMain - 10));
  if (plan.chance(0.25) && !nearDurationChange(improvementAt)) {
    schedule(improvementAt, () => {
      projectSteps *= 0.8;
      notesNow.push({ kind: "duration_improvement", rel: -0.2 });
    });
  }
  if (plan.chance(0.3)) {
    schedule(plan.int(40, Math.max(41, expectedMain - 10)), () => {
      const count = plan.int(5, 10);
      const suite = plan.pick(suites);
      for (let i = 0; i < count; i++) newTest(suite, plan.pick(suite.classes));
      notesNow.push({ kind: "tests_added", count });
    });
  }

  pending.sort((a, b) => a.at - b.at);

  // ------------------------------------------------------------------------------------------
  // Runs

  const runs: SimRun[] = [];
  let time = Date.parse(knobs.startAt);
  const branches: { name: string; runsLeft: number; broken: TestDef[] }[] = [];
  let branchCounter = 0;
  const branchBreakage = new Map<string, TestDef[]>();
  let retryNext: SimRun | null = null;

  const currentFactor = () => {
    const d = drift as { startIndex: number; endIndex: number; rate: number } | null;
    const driftFactor = d ? 1 + d.rate * Math.max(0, Math.min(mainIndex, d.endIndex) - d.startIndex) : 1;
    return projectSteps * driftFactor;
  };

  const attemptFails = (test: TestDef, run: number, branch: string, poolRate: number, forced: CaseStatus | null): CaseStatus | null => {
    if (forced) return forced;
    if (inside(test.broken, run) || test.branchBroken.has(branch)) return "failed";
    for (const f of test.flaky) if (run >= f.from && run < f.to && draw.chance(f.p)) return "failed";
    if (test.pool && draw.chance(poolRate)) return draw.chance(0.3) ? "errored" : "failed";
    return null;
  };

  const makeRun = (number: number, branch: string, sha: string, retryOf: number | null, isMain: boolean): SimRun => {
    const present: TestDef[] = [];
    for (const suite of suites) for (const test of suite.tests) if (test.removedAt === null || number < test.removedAt) present.push(test);
    const slowRunner = draw.chance(knobs.slowRunnerShare);
    const runFactor = currentFactor() * (slowRunner ? knobs.slowRunnerFactor : 1);

    const suiteSkip = isMain && retryOf === null ? point.suiteSkip : null;
    const skippedNow = present.map((t) => inside(t.skipped, number) || t.suite === suiteSkip);
    const executed = present.filter((_, i) => !skippedNow[i]);

    // Background failures: X ~ BetaBin(executed, μ, ρ) over the run, drawn from the pool.
    const pool = executed.filter((t) => t.pool);
    let poolRate = 0;
    if (pool.length > 0) {
      const mu = knobs.backgroundRate;
      const pi = knobs.rho > 0 ? draw.beta((mu * (1 - knobs.rho)) / knobs.rho, ((1 - mu) * (1 - knobs.rho)) / knobs.rho) : mu;
      poolRate = Math.min(1, (pi * executed.length) / pool.length);
    }

    // Forced failures of this run: an outage (every test of one suite errors) or a spike.
    const forced = new Map<TestDef, CaseStatus>();
    const outage = isMain && retryOf === null ? point.outage : null;
    if (outage) for (const t of executed) if (t.suite === outage.suite) forced.set(t, "errored");
    const spike = isMain && retryOf === null ? point.spike : null;
    if (spike) {
      const count = Math.round(spike.share * executed.length);
      for (const t of draw.sample(executed.filter((t) => !forced.has(t)), count)) forced.set(t, draw.chance(0.8) ? "failed" : "errored");
    }

    const tests: SimTest[] = [];
    let total = 0;
    const duration = (test: TestDef, status: CaseStatus | null) => {
      let ms = test.medianMs * test.factor * runFactor * Math.exp(test.sigma * draw.normal());
      if (draw.chance(knobs.outlierProbability)) ms *= draw.uniform(1.5, 3);
      if (status === "errored") ms *= draw.uniform(0.02, 0.2);
      else if (status === "failed") ms *= draw.uniform(0.3, 1.2);
      return quantise(ms, knobs.timeDecimals);
    };
    present.forEach((test, i) => {
      if (skippedNow[i]) {
        tests.push({ key: test.key, suite: test.suite, classname: test.classname, name: test.name, status: "skipped", attempts: [], durationMs: 0, message: null });
        return;
      }
      const forcedStatus = forced.get(test) ?? null;
      const attempts: SimAttempt[] = [];
      let status = attemptFails(test, number, branch, poolRate, forcedStatus);
      for (let retry = 0; status !== null && retry < knobs.inRunRetries; retry++) {
        const ms = duration(test, status);
        attempts.push({ status, durationMs: ms });
        total += ms;
        status = attemptFails(test, number, branch, poolRate, forcedStatus);
      }
      const finalStatus: CaseStatus = status ?? "passed";
      const ms = duration(test, status);
      total += ms;
      const message =
        finalStatus === "passed" ? null : forcedStatus === "errored" && outage ? OUTAGE_MESSAGE : draw.pick(FAILURE_MESSAGES);
      tests.push({ key: test.key, suite: test.suite, classname: test.classname, name: test.name, status: finalStatus, attempts, durationMs: ms, message });
    });

    const overhead = 20_000 * Math.sqrt(knobs.durationScale) * runFactor * draw.lognormal(1, 0.05);
    const wall = knobs.reportsWallClock ? Math.round(total + overhead) : null;
    const run: SimRun = {
      number,
      branch,
      commit_sha: sha,
      created_at: new Date(time).toISOString(),
      duration: 0,
      wall_clock_ms: wall,
      format: knobs.format,
      time_decimals: knobs.timeDecimals,
      retry_of: retryOf,
      tests,
      labels: [],
      notes: [],
    };
    run.duration = storedDuration(run);
    return run;
  };

  for (let number = 1; number <= knobs.runs; number++) {
    currentRun = number;
    let run: SimRun;
    if (retryNext) {
      const original: SimRun = retryNext;
      retryNext = null;
      time += Math.round(draw.uniform(5, 20) * 60_000);
      const isMain = original.branch === "main";
      // A retry runs the same code: a branch's breakage is still there.
      const broken = branchBreakage.get(original.branch) ?? [];
      for (const t of broken) t.branchBroken.add(original.branch);
      run = makeRun(number, original.branch, original.commit_sha, original.number, isMain);
      for (const t of broken) t.branchBroken.delete(original.branch);
      run.notes.push({ kind: "retry_of", run: original.number });
    } else if (number > 1 && draw.chance(knobs.featureBranchShare)) {
      time += Math.round(draw.exponential(knobs.minutesBetweenRuns / 2) * 60_000);
      let branch = branches.find((b) => b.runsLeft > 0 && draw.chance(0.6));
      if (!branch) {
        const name = `feature/${draw.pick(SUITE_NAMES)}-${++branchCounter}`;
        const live = allTests.filter((t) => t.removedAt === null && !inside(t.skipped, number));
        let broken: TestDef[] = [];
        if (draw.chance(0.05)) broken = draw.sample(live, Math.round(live.length * 0.4));
        else if (draw.chance(0.3)) broken = draw.sample(live, draw.int(1, 3));
        branch = { name, runsLeft: draw.int(1, 5), broken };
        branches.push(branch);
        branchBreakage.set(name, broken);
        if (branches.length > 8) branches.shift();
      }
      branch.runsLeft--;
      for (const t of branch.broken) t.branchBroken.add(branch.name);
      run = makeRun(number, branch.name, draw.hex(40), null, false);
      for (const t of branch.broken) t.branchBroken.delete(branch.name);
      if (branch.broken.length > 0) run.notes.push({ kind: "branch_breakage", tests: branch.broken.length });
    } else {
      time += Math.round(draw.exponential(knobs.minutesBetweenRuns) * 60_000);
      mainIndex++;
      point = { spike: null, outage: null, suiteSkip: null };
      while (pending.length > 0 && pending[0]!.at <= mainIndex) {
        pending.shift()!.apply(number);
        pending.sort((a, b) => a.at - b.at);
      }
      // Churn: mean-reverting adds and removals, occasionally a rename.
      if (mainIndex > 1) {
        const live = allTests.filter((t) => t.removedAt === null).length;
        if (draw.chance(knobs.churn)) {
          const suite = draw.pick(suites);
          newTest(suite, draw.pick(suite.classes));
          notesNow.push({ kind: "tests_added", count: 1 });
        }
        // Removal is mean-reverting (live tests hover around `tests`); a rename is a removal plus an add.
        const remove = draw.chance((knobs.churn * live) / knobs.tests);
        const rename = draw.chance(knobs.churn / 4);
        for (const renamed of [remove ? false : null, rename ? true : null]) {
          if (renamed === null) continue;
          const candidates = plain();
          if (candidates.length === 0) break;
          const victim = draw.pick(candidates);
          victim.removedAt = number;
          notesNow.push({ kind: "tests_removed", count: 1 });
          if (renamed) {
            const suite = suites.find((s) => s.name === victim.suite)!;
            newTest(suite, victim.classname);
            notesNow.push({ kind: "tests_added", count: 1 });
          }
        }
      }
      if (point.suiteSkip) {
        const suite = suites.find((s) => s.name === point.suiteSkip)!;
        notesNow.push({ kind: "suite_skipped", suite: suite.name, tests: suite.tests.filter((t) => t.removedAt === null).length });
      }
      run = makeRun(number, "main", draw.hex(40), null, true);
      run.notes.push(...notesNow.splice(0));
    }
    if (run.retry_of === null && run.tests.some((t) => t.status === "failed" || t.status === "errored") && draw.chance(knobs.retryProbability)) retryNext = run;
    runs.push(run);
  }

  // Labels: the anomalies active at each run (per-test ones only while the test is part of the run).
  const byKey = new Map(allTests.map((t) => [t.key, t]));
  for (const run of runs) {
    for (const anomaly of anomalies) {
      if (run.number < anomaly.start) continue;
      const isPointType = anomaly.type === "failure_spike" || anomaly.type === "infra_outage";
      if (isPointType ? run.number !== anomaly.start : anomaly.end !== null && anomaly.type === "flaky_test" && run.number > anomaly.end) continue;
      if (anomaly.type === "flaky_test" || anomaly.type === "test_duration_shift") {
        const test = byKey.get(anomaly.subject);
        if (!test || run.number < test.addedAt || (test.removedAt !== null && run.number >= test.removedAt)) continue;
      }
      run.labels.push({ id: anomaly.id, type: anomaly.type, subject: anomaly.subject, start: anomaly.start });
    }
  }

  const tests: TestProfile[] = allTests.map((t) => ({
    key: t.key,
    medianMs: Math.round(t.medianMs),
    cv: Math.round(Math.sqrt(Math.exp(t.sigma ** 2) - 1) * 1000) / 1000,
    addedAt: t.addedAt,
    removedAt: t.removedAt,
    pool: t.pool,
  }));
  const stream: SimStream = { seed: options.seed, scenario, knobs, runs, anomalies, tests, stats: { durationLogSigma: 0, baselineFailureShare: 0, defaultBranchRuns: 0, medianTestsPerRun: 0 } };
  classifySizes(stream);
  return stream;
}

// ---------------------------------------------------------------------------------------------
// Derived statistics and size classes

function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function stdev(values: number[]): number {
  if (values.length < 2) return Number.NaN;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / (values.length - 1));
}

/** Failing share of executed tests in a run (final statuses). */
export function failingShare(run: SimRun): number {
  let executed = 0;
  let failing = 0;
  for (const t of run.tests) {
    if (t.status === "skipped") continue;
    executed++;
    if (t.status === "failed" || t.status === "errored") failing++;
  }
  return executed === 0 ? 0 : failing / executed;
}

/**
 * Size classes (recall targets, detection.md §7.3):
 * - flaky_test: large when p ≥ 0.1;
 * - duration_shift: large when +25 % at log-σ ≤ 0.05, +50 % at log-σ ≤ 0.15, or +100 % at log-σ ≤ 0.3
 *   (log-σ of the default-branch run duration before the first duration anomaly); drift: small;
 * - test_duration_shift: large when ≥ +100 % on a test with CV ≤ 20 % and median ≥ 1 s;
 * - failure_spike / infra_outage: large when the failing share is ≥ 10 %, ≥ 20× the baseline failing
 *   share, and ρ ≤ 0.01;
 * - skip_step: large when ≥ 20 tests; ramps: small.
 */
function classifySizes(stream: SimStream): void {
  const mainRuns = stream.runs.filter((r) => r.branch === "main");
  const firstDuration = Math.min(...stream.anomalies.filter((a) => ANOMALY_FAMILY[a.type] === "regression").map((a) => a.start), INFINITY);
  const isPoint = (run: SimRun) => run.labels.some((l) => l.type === "failure_spike" || l.type === "infra_outage") || run.notes.some((n) => n.kind === "suite_skipped");
  const clean = mainRuns.filter((r) => r.retry_of === null && !isPoint(r));
  let segment = clean.filter((r) => r.number < firstDuration && r.number > 10);
  if (segment.length < 20) segment = clean.slice(5, 60);
  const sigma = stdev(segment.map((r) => Math.log(Math.max(1, r.duration))));
  const baseline = clean.length > 0 ? clean.reduce((a, r) => a + failingShare(r), 0) / clean.length : 0;
  stream.stats = {
    durationLogSigma: sigma,
    baselineFailureShare: baseline,
    defaultBranchRuns: mainRuns.length,
    medianTestsPerRun: median(stream.runs.map((r) => r.tests.length)),
  };
  const byNumber = new Map(stream.runs.map((r) => [r.number, r]));
  for (const anomaly of stream.anomalies) {
    switch (anomaly.type) {
      case "flaky_test":
        anomaly.size = anomaly.magnitude >= 0.1 ? "large" : "small";
        break;
      case "duration_shift": {
        const rel = anomaly.magnitude;
        anomaly.size = (rel >= 0.25 && sigma <= 0.05) || (rel >= 0.5 && sigma <= 0.15) || (rel >= 1 && sigma <= 0.3) ? "large" : "small";
        anomaly.details.log_sigma = round(sigma, 4);
        break;
      }
      case "duration_drift":
        anomaly.size = "small";
        anomaly.details.log_sigma = round(sigma, 4);
        break;
      case "test_duration_shift": {
        const cv = Number(anomaly.details.cv);
        anomaly.size = anomaly.magnitude >= 1 && cv <= 0.2 && Number(anomaly.details.median_ms) >= 1000 ? "large" : "small";
        // Its share of the run total: a large enough one is also a run-duration change.
        const before = mainRuns.filter((r) => r.number < anomaly.start).slice(-20).map((r) => r.duration);
        const impact = before.length > 0 ? (Number(anomaly.details.median_ms) * anomaly.magnitude) / median(before) : 0;
        anomaly.details.run_impact = round(impact, 4);
        break;
      }
      case "failure_spike":
      case "infra_outage": {
        const run = byNumber.get(anomaly.start)!;
        const share = failingShare(run);
        anomaly.magnitude = round(share, 4)!;
        anomaly.details.baseline_share = round(baseline, 5);
        anomaly.details.rho = stream.knobs.rho;
        anomaly.size = share >= 0.1 && share >= 20 * baseline && stream.knobs.rho <= 0.01 ? "large" : "small";
        break;
      }
      case "skip_step":
        anomaly.size = anomaly.magnitude >= 20 ? "large" : "small";
        break;
      case "skip_ramp":
        anomaly.size = "small";
        break;
    }
  }
}

function round(value: number, digits: number): number | null {
  if (!Number.isFinite(value)) return null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

// ---------------------------------------------------------------------------------------------
// JUnit XML and the run summary

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

type SuiteGroup = { name: string; tests: SimTest[] };

function groupBySuite(tests: readonly SimTest[]): SuiteGroup[] {
  const groups: SuiteGroup[] = [];
  const byName = new Map<string, SuiteGroup>();
  for (const test of tests) {
    let group = byName.get(test.suite);
    if (!group) {
      group = { name: test.suite, tests: [] };
      byName.set(test.suite, group);
      groups.push(group);
    }
    group.tests.push(test);
  }
  return groups;
}

/** Time spent in a suite: every attempt and final execution (each already quantised). */
function suiteTimeMs(group: SuiteGroup): number {
  let ms = 0;
  for (const t of group.tests) {
    ms += t.durationMs;
    for (const a of t.attempts) ms += a.durationMs;
  }
  return ms;
}

/** The duration the service stores: `<testsuites time>` when written, else the sum of the top-level suites. */
function storedDuration(run: SimRun): number {
  if (run.wall_clock_ms !== null) return parseSeconds(formatSeconds(run.wall_clock_ms, 3))!;
  let sum = 0;
  for (const group of groupBySuite(run.tests)) sum += parseSeconds(formatSeconds(suiteTimeMs(group), run.time_decimals)) ?? 0;
  return Math.round(sum);
}

function outcomeElement(status: CaseStatus, message: string | null, indent: string): string {
  const text = escapeXml(message ?? "failed");
  if (status === "failed") return `${indent}<failure message="${text}" type="java.lang.AssertionError">${text}\n${indent}  at com.acme.Test.run(Test.java:42)</failure>\n`;
  if (status === "errored") return `${indent}<error message="${text}" type="java.lang.RuntimeException">${text}</error>\n`;
  if (status === "skipped") return `${indent}<skipped message="disabled"/>\n`;
  return "";
}

/**
 * The run as a JUnit XML document, as the stream's tool writes it:
 * - Surefire: one `<testcase>` per test; earlier failed attempts are `<flakyFailure>`/`<flakyError>`
 *   when the test finally passed, `<rerunFailure>`/`<rerunError>` when it failed every time.
 * - Gradle (mergeReruns off): every execution is its own `<testcase>`; retries come after the
 *   suite's first round, so the parser must merge them back to the first position.
 * `<testsuites time>` carries the wall clock when the stream reports one.
 */
export function toJUnitXml(run: SimRun): string {
  const d = run.time_decimals;
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>\n'];
  const rootTime = run.wall_clock_ms !== null ? ` time="${formatSeconds(run.wall_clock_ms, 3)}"` : "";
  out.push(`<testsuites name="${escapeXml(run.branch)}"${rootTime}>\n`);
  for (const group of groupBySuite(run.tests)) {
    const failures = group.tests.filter((t) => t.status === "failed").length;
    const errors = group.tests.filter((t) => t.status === "errored").length;
    const skipped = group.tests.filter((t) => t.status === "skipped").length;
    out.push(
      `  <testsuite name="${escapeXml(group.name)}" tests="${group.tests.length}" failures="${failures}" errors="${errors}" skipped="${skipped}" time="${formatSeconds(suiteTimeMs(group), d)}" timestamp="${run.created_at.slice(0, 19)}">\n`,
    );
    const open = (t: SimTest, ms: number) => `    <testcase name="${escapeXml(t.name)}" classname="${escapeXml(t.classname)}" time="${formatSeconds(ms, d)}"`;
    if (run.format === "surefire") {
      for (const t of group.tests) {
        if (t.attempts.length === 0 && t.status === "passed") {
          out.push(`${open(t, t.durationMs)}/>\n`);
          continue;
        }
        out.push(`${open(t, t.durationMs)}>\n`);
        out.push(outcomeElement(t.status, t.message, "      "));
        for (const a of t.attempts) {
          const tag = t.status === "passed" ? (a.status === "errored" ? "flakyError" : "flakyFailure") : a.status === "errored" ? "rerunError" : "rerunFailure";
          const msg = escapeXml(t.message ?? "failed on an earlier attempt");
          out.push(`      <${tag} message="${msg}" type="java.lang.AssertionError" time="${formatSeconds(a.durationMs, d)}">\n        <stackTrace>${msg}</stackTrace>\n      </${tag}>\n`);
        }
        out.push("    </testcase>\n");
      }
    } else {
      // Gradle: round 0 is every test's first execution; round k its k-th retry.
      const rounds = Math.max(0, ...group.tests.map((t) => t.attempts.length));
      for (let round = 0; round <= rounds; round++) {
        for (const t of group.tests) {
          if (round > t.attempts.length) continue;
          const isFinal = round === t.attempts.length;
          const status = isFinal ? t.status : t.attempts[round]!.status;
          const ms = isFinal ? t.durationMs : t.attempts[round]!.durationMs;
          const body = outcomeElement(status, isFinal ? t.message : (t.message ?? "failed on an earlier attempt"), "      ");
          out.push(body === "" ? `${open(t, ms)}/>\n` : `${open(t, ms)}>\n${body}    </testcase>\n`);
        }
      }
    }
    out.push("  </testsuite>\n");
  }
  out.push("</testsuites>\n");
  return out.join("");
}

/**
 * What the checks see of this run once the service has stored it: keys from (suite, classname,
 * name), statuses after the retry merge, attempts' statuses, case durations and the run duration
 * as parsed from toJUnitXml. `runId` defaults to the run number; `createdAt` is the simulated
 * start time (the service stamps its arrival time instead).
 */
export function toRunSummary(run: SimRun, options: { runId?: number; defaultBranch?: string } = {}): RunSummary {
  const defaultBranch = options.defaultBranch ?? "main";
  const counts = { tests: 0, passed: 0, failed: 0, errored: 0, skipped: 0 };
  const tests: RunTest[] = [];
  for (const group of groupBySuite(run.tests)) {
    for (const t of group.tests) {
      counts.tests++;
      counts[t.status]++;
      tests.push({
        key: t.key,
        suite: group.name,
        classname: t.classname,
        name: t.name,
        status: t.status,
        attempts: t.attempts.map((a) => a.status),
        durationMs: parseSeconds(formatSeconds(t.durationMs, run.time_decimals)),
      });
    }
  }
  return {
    runId: options.runId ?? run.number,
    number: run.number,
    branch: run.branch,
    commitSha: run.commit_sha,
    createdAt: new Date(run.created_at),
    durationMs: run.duration,
    onDefaultBranch: run.branch === defaultBranch,
    counts,
    tests,
  };
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

export { mulberry32 };
