/**
 * The simulated project behind a stream: its suites and tests (with when each is skipped, broken
 * or flaky), the anomalies injected so far, and the changes planned for later default-branch
 * runs. The planners (anomaly-plan.ts, noise-plan.ts) fill it; run generation reads it.
 */
import { legacyTestKey } from "../checks/types";
import type { Rng } from "./rng";
import type { Anomaly, AnomalyType, FailureCauses, RunNote, StreamKnobs } from "./stream-types";

export const INFINITY = Number.POSITIVE_INFINITY;

/** Run numbers, `to` exclusive. */
export type Interval = { from: number; to: number };

export type TestDef = {
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
  /** Scenario "env_half": fails with this status in every run (never passes); absent otherwise. */
  alwaysFails?: "failed" | "errored";
};

/**
 * Scenario "co_failing_group": tests that fail together in a share `rate` of the runs from run `from`
 * on. With `subset` (scenarios "co_failing_subsets", "env_block_flaky") only a different subset of
 * `min`–`max` of them fails in each such run, with `status`.
 */
export type CoFailingGroup = {
  tests: Set<TestDef>;
  rate: number;
  from: number;
  subset?: { min: number; max: number; status: "failed" | "errored" };
};

export type SuiteDef = { name: string; classes: string[]; tests: TestDef[] };

/** A change planned for the default-branch run with main index `at`; `apply` gets that run's number. */
type Pending = { at: number; apply: (run: number) => void };

/** One-run effects of the current default-branch run, reset before each. */
export type PointEffects = {
  spike: { share: number; anomaly: Anomaly } | null;
  outage: { suite: string; anomaly: Anomaly } | null;
  suiteSkip: string | null;
};

/** A slow run-duration drift: `rate` per default-branch run from `startIndex` to `endIndex` (main indices). */
export type Drift = { startIndex: number; endIndex: number; rate: number };

export const SUITE_NAMES = [
  "checkout",
  "billing",
  "search",
  "auth",
  "inventory",
  "orders",
  "payments",
  "catalog",
  "shipping",
  "users",
  "reports",
  "notifications",
  "analytics",
  "admin",
  "gateway",
  "pricing",
  "reviews",
  "media",
  "export",
  "sessions",
];
const CLASS_NOUNS = [
  "Cart",
  "Invoice",
  "Query",
  "Token",
  "Stock",
  "Order",
  "Refund",
  "Product",
  "Label",
  "Profile",
  "Mailer",
  "Report",
  "Cache",
  "Router",
  "Coupon",
  "Upload",
];
const VERBS = [
  "computes",
  "rejects",
  "accepts",
  "stores",
  "loads",
  "retries",
  "renders",
  "validates",
  "merges",
  "expires",
  "exports",
  "indexes",
];
const OBJECTS = [
  "total",
  "empty input",
  "duplicate ids",
  "unicode names",
  "large payloads",
  "expired tokens",
  "partial refunds",
  "timeouts",
  "null fields",
  "pagination",
];

export function inside(intervals: readonly Interval[], run: number): boolean {
  for (const interval of intervals) if (run >= interval.from && run < interval.to) return true;
  return false;
}

export class SimulatedProject {
  readonly suites: SuiteDef[] = [];
  /** Every test the project ever had, in creation order. */
  readonly allTests: TestDef[] = [];
  readonly anomalies: Anomaly[] = [];
  /** Notes gathered for the next default-branch run. */
  readonly notesNow: RunNote[] = [];
  /** Default-branch runs (not retries) the plan expects: planned indices stay below it. */
  readonly expectedMain: number;
  point: PointEffects = { spike: null, outage: null, suiteSkip: null };
  /** Co-failing groups (scenario "co_failing_group"), active once `from` is set. */
  readonly groups: CoFailingGroup[] = [];
  /** Why each failure happened, run by run (run generation records it; it is not part of the stream). */
  readonly causes: FailureCauses = new Map();
  /** Product of the run-duration steps so far (regressions and improvements). */
  projectSteps = 1;
  drift: Drift | null = null;
  /** Index of the current default-branch run among those that are not retries (1-based). */
  mainIndex = 0;
  /** The commit of the current batch of re-runs (knob `rerunBatch`), null before the first. */
  batchSha: string | null = null;
  /** The run being generated (tests created now are part of it). */
  currentRun = 1;
  private readonly pending: Pending[] = [];
  private nameCounter = 0;
  private anomalyCounter = 0;

  /** `plan` draws the project and its planned changes; `draw` everything decided run by run. */
  constructor(
    readonly knobs: StreamKnobs,
    readonly plan: Rng,
    readonly draw: Rng,
  ) {
    this.expectedMain = Math.floor(knobs.runs * (1 - knobs.featureBranchShare) * 0.85);
  }

  newTest(suite: SuiteDef, classname: string): TestDef {
    const verb = VERBS[this.nameCounter % VERBS.length]!;
    const object = OBJECTS[Math.floor(this.nameCounter / VERBS.length) % OBJECTS.length]!;
    const name = `${verb} ${object} #${++this.nameCounter}`;
    const medianMs = Math.min(60_000, Math.max(2, this.plan.lognormal(300, 1.3))) * this.knobs.durationScale;
    const cv = this.plan.uniform(0.05, 0.4);
    const test: TestDef = {
      // Checks compare keys only; the simulator's names are unique, so this key is one per test
      // identity. Kept as it was when the corpus was drawn, so streams stay byte-identical.
      key: legacyTestKey(suite.name, classname, name),
      suite: suite.name,
      classname,
      name,
      addedAt: this.currentRun,
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
    this.allTests.push(test);
    return test;
  }

  /** Tests free to become an anomaly's subject or a churn victim: live, unskipped, unbroken, unclaimed. */
  plain(): TestDef[] {
    return this.allTests.filter((t) => !t.protected && t.removedAt === null && t.skipped.length === 0 && t.broken.length === 0 && !t.pool);
  }

  addAnomaly(
    type: AnomalyType,
    subject: string,
    start: number,
    magnitude: number,
    details: Record<string, unknown>,
    end: number | null = null,
  ): Anomaly {
    const anomaly: Anomaly = { id: `${type}#${++this.anomalyCounter}`, type, subject, start, end, magnitude, size: "small", details };
    this.anomalies.push(anomaly);
    return anomaly;
  }

  schedule(at: number, apply: (run: number) => void): void {
    this.pending.push({ at, apply });
  }

  /** Puts the plan in order once every planner has scheduled its changes. */
  sortPlan(): void {
    this.pending.sort((a, b) => a.at - b.at);
  }

  /** Applies every change due at the current main index, including those a change schedules for now. */
  applyDueChanges(run: number): void {
    while (this.pending.length > 0 && this.pending[0]!.at <= this.mainIndex) {
      this.pending.shift()!.apply(run);
      this.pending.sort((a, b) => a.at - b.at);
    }
  }

  /** The project's run-duration factor now: its steps times the drift reached so far. */
  durationFactor(): number {
    const d = this.drift;
    const driftFactor = d ? 1 + d.rate * Math.max(0, Math.min(this.mainIndex, d.endIndex) - d.startIndex) : 1;
    return this.projectSteps * driftFactor;
  }
}

/** Suites of varying size, 2–5 classes each, and the tests disabled from the start. */
export function buildSuites(project: SimulatedProject): void {
  const { knobs, plan, suites } = project;
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
    for (let i = 0; i < size; i++) project.newTest(suite, suite.classes[i % suite.classes.length]!);
  }
  const initialTests = project.allTests.slice();
  for (const test of plan.sample(initialTests, Math.round(knobs.baselineSkipShare * initialTests.length)))
    test.skipped.push({ from: 1, to: INFINITY });
}
