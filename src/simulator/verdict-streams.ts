/**
 * The verdict scenario family: seeded streams of default-branch runs and feature-branch runs that
 * name their base commit (`base_commit_sha`), in which every failure's cause is known, so each
 * stored verdict (docs/verdicts.md) can be checked against what truly happened (verdict-truth.ts).
 *
 * A stream is a project of ~100 tests (suites, names and durations as in streams.ts):
 * - a warm-up of default-branch runs in which a few flaky tests fail at their rate (0.15–0.35)
 *   and nothing else happens, so that the service can know them as flaky before the scenarios;
 *   its runs are not scored (a flaky test failing before it is known is what the checks' streams
 *   measure);
 * - then, per default-branch commit: sometimes a breakage on the default branch (a test fails from
 *   that commit for 1, 3 or 8 commits, or to the end), then the commit's run, then 1–3
 *   feature-branch runs. A new branch starts from the latest commit or, one time in five, from
 *   one up to three commits before it; it sometimes breaks 1–3 tests of its own (truly new) and
 *   sometimes fixes a test broken in its base (fixed); a branch's next runs keep its base and its
 *   changes. Every run may be a mass failure (60–95 % of the executed tests error with one
 *   message); flaky tests fail at their rate everywhere. A branch run is sometimes uploaded before
 *   the run of its base commit (the service compares it again when that run arrives).
 * - quarantines: the first flaky test when the scenarios start, and a test broken for 8 commits or
 *   more two commits after its breakage started (`quarantines`, applied before the run named).
 * Each run's truth (verdict-truth.ts) is against its true base: the run of its base commit (a
 * default-branch run's: the previous one), passing over a mass failure as the service does.
 */
import { drawKnobs } from "./knobs";
import { SimulatedProject, type TestDef, buildSuites } from "./project-model";
import { Rng } from "./rng";
import { storedDuration } from "./junit-report";
import type { SimAttempt, SimRun, SimTest, StreamKnobs } from "./stream-types";
import { type FailureTruth, type RunTruth, expectedVerdict, failingKeys, fixedKeys, hasVerdict } from "./verdict-truth";

/** How often each scenario happens (per default-branch commit, new branch, or run); a test sets them to 0 or 1. */
export type VerdictRates = {
  /** A default-branch commit breaks a test. */
  mainBreakage: number;
  /** A new branch breaks 1–3 tests of its own. */
  branchBreaks: number;
  /** A new branch whose base has a broken test fixes one. */
  branchFixes: number;
  /** A new branch starts from an older commit than the latest. */
  olderBase: number;
  /** A branch run continues an open branch rather than starting one. */
  continueBranch: number;
  /** A default-branch run, a feature-branch run, is a mass failure. */
  massFailureMain: number;
  massFailureBranch: number;
  /** The first new branch of a commit is uploaded before the commit's own run. */
  baseArrivesLate: number;
};

export const DEFAULT_VERDICT_RATES: VerdictRates = {
  mainBreakage: 0.15,
  branchBreaks: 0.35,
  branchFixes: 0.6,
  olderBase: 0.2,
  continueBranch: 0.4,
  massFailureMain: 0.04,
  massFailureBranch: 0.08,
  baseArrivesLate: 0.1,
};

export type VerdictStreamOptions = {
  seed: number;
  tests?: number;
  /** Default-branch runs before the scenarios (not scored). */
  warmupRuns?: number;
  /** Default-branch commits of the scenarios, each followed by 1–3 feature-branch runs. */
  scenarioCommits?: number;
  flakyRates?: readonly number[];
  /** Retries of a failing test inside a run (Surefire rerunFailingTestsCount); default the seed's. */
  inRunRetries?: 0 | 1 | 2;
  rates?: Partial<VerdictRates>;
};

/** A quarantine put on a test before run `beforeRun` is uploaded (30 days: it lasts to the stream's end). */
export type PlannedQuarantine = { beforeRun: number; test: string; reason: string };

export type VerdictStream = {
  seed: number;
  /** In upload order, numbered 1…n. */
  runs: SimRun[];
  /** Index = run number − 1; `scored` false for the warm-up. */
  truth: (RunTruth & { scored: boolean; massFailure: boolean })[];
  quarantines: PlannedQuarantine[];
};

const MASS_FAILURE_MESSAGE = "java.net.ConnectException: Connection refused (database unavailable at 10.0.0.5:5432)";
const REGRESSION_MESSAGES = [
  "expected 3 but was 2",
  "expected true but was false",
  "assertion failed: list is empty",
  "NullPointerException",
];
const FLAKY_MESSAGES = ["Timeout after 5000 ms", "socket hang up", "expected element to be visible"];

/** A breakage on the default branch: the test fails from commit `from` to `to` (exclusive). */
type Breakage = { test: TestDef; from: number; to: number; message: string };
type Branch = { name: string; base: number; breaks: Map<TestDef, string>; fixes: Set<TestDef>; runsLeft: number };
/** What generated a run: the code it ran (which tests are broken), whether the environment failed it. */
type RunPlan = { branch: Branch | null; commit: number; broken: Map<TestDef, string>; massFailure: boolean; scored: boolean };

class VerdictGenerator {
  readonly runs: SimRun[] = [];
  readonly plans: RunPlan[] = [];
  readonly quarantines: PlannedQuarantine[] = [];
  readonly breakages: Breakage[] = [];
  readonly mainShas: string[] = [];
  readonly branches: Branch[] = [];
  private time: number;
  private branchCounter = 0;
  firstScenarioCommit = 0;

  constructor(
    readonly draw: Rng,
    readonly knobs: StreamKnobs,
    readonly tests: TestDef[],
    readonly flaky: Map<TestDef, number>,
    readonly rates: VerdictRates,
  ) {
    this.time = Date.parse(knobs.startAt);
  }

  /** The default-branch code at commit `i`: its broken tests and their messages. */
  brokenAt(commit: number): Map<TestDef, string> {
    const broken = new Map<TestDef, string>();
    for (const b of this.breakages) if (commit >= b.from && commit < b.to) broken.set(b.test, b.message);
    return broken;
  }

  /** Tests a new breakage may pick: executed, not flaky, not quarantined, passing at commit `i`. */
  healthyAt(commit: number): TestDef[] {
    const broken = this.brokenAt(commit);
    const quarantined = new Set(this.quarantines.map((q) => q.test));
    return this.tests.filter((t) => t.skipped.length === 0 && !this.flaky.has(t) && !broken.has(t) && !quarantined.has(t.key));
  }

  run(plan: RunPlan, branch: string, sha: string, baseSha?: string): void {
    this.time += Math.round(this.draw.uniform(5, 40) * 60_000);
    const number = this.runs.length + 1;
    const tests = executeTests(this.draw, this.knobs, this.tests, this.flaky, plan);
    const run: SimRun = {
      number,
      branch,
      commit_sha: sha,
      created_at: new Date(this.time).toISOString(),
      duration: 0,
      wall_clock_ms: null,
      format: this.knobs.format,
      time_decimals: this.knobs.timeDecimals,
      retry_of: null,
      ...(baseSha !== undefined ? { base_commit_sha: baseSha } : {}),
      tests,
      labels: [],
      notes: [],
    };
    run.duration = storedDuration(run);
    this.runs.push(run);
    this.plans.push(plan);
  }

  mainRun(commit: number, scored: boolean): void {
    const massFailure = scored && this.draw.chance(this.rates.massFailureMain);
    this.run({ branch: null, commit, broken: this.brokenAt(commit), massFailure, scored }, "main", this.mainShas[commit]!);
  }

  /** Starts a default-branch breakage at `commit` (a test healthy there, for 1, 3, 8 commits or to the end). */
  maybeBreakMain(commit: number): void {
    const candidates = this.healthyAt(commit);
    if (candidates.length === 0 || !this.draw.chance(this.rates.mainBreakage)) return;
    const test = this.draw.pick(candidates);
    const length = this.draw.pick([1, 3, 8, Number.POSITIVE_INFINITY]);
    this.breakages.push({ test, from: commit, to: commit + length, message: this.draw.pick(REGRESSION_MESSAGES) });
    // Someone takes a long breakage on: quarantined from two commits later.
    if (length >= 8) this.pendingQuarantine.push({ commit: commit + 2, test });
  }

  readonly pendingQuarantine: { commit: number; test: TestDef }[] = [];

  quarantine(test: TestDef, reason: string): void {
    this.quarantines.push({ beforeRun: this.runs.length + 1, test: test.key, reason });
  }

  newBranch(latest: number, fromLatest = false): Branch {
    const older = !fromLatest && this.draw.chance(this.rates.olderBase);
    const base = older ? Math.max(this.firstScenarioCommit, latest - this.draw.int(1, 3)) : latest;
    const breaks = new Map<TestDef, string>();
    if (this.draw.chance(this.rates.branchBreaks))
      for (const t of this.draw.sample(this.healthyAt(base), this.draw.int(1, 3))) breaks.set(t, this.draw.pick(REGRESSION_MESSAGES));
    const fixes = new Set<TestDef>();
    const brokenInBase = [...this.brokenAt(base).keys()];
    if (brokenInBase.length > 0 && this.draw.chance(this.rates.branchFixes)) fixes.add(this.draw.pick(brokenInBase));
    const name = `feature/${this.draw.pick(this.tests).suite}-${++this.branchCounter}`;
    const branch: Branch = { name, base, breaks, fixes, runsLeft: this.draw.int(1, 4) };
    this.branches.push(branch);
    return branch;
  }

  branchRun(branch: Branch): void {
    branch.runsLeft--;
    const broken = this.brokenAt(branch.base);
    for (const t of branch.fixes) broken.delete(t);
    for (const [t, message] of branch.breaks) broken.set(t, message);
    const massFailure = this.draw.chance(this.rates.massFailureBranch);
    this.run(
      { branch, commit: branch.base, broken, massFailure, scored: true },
      branch.name,
      this.draw.hex(40),
      this.mainShas[branch.base],
    );
  }
}

/** Every test of the run, in suite order: skipped, errored by the environment, failing by its breakage, or flaky at its rate. */
function executeTests(draw: Rng, knobs: StreamKnobs, tests: readonly TestDef[], flaky: Map<TestDef, number>, plan: RunPlan): SimTest[] {
  const executed = tests.filter((t) => t.skipped.length === 0);
  const down = new Set(plan.massFailure ? draw.sample(executed, Math.round(draw.uniform(0.6, 0.95) * executed.length)) : []);
  return tests.map((t): SimTest => {
    const ms = () => Math.max(1, Math.round(t.medianMs * Math.exp(t.sigma * draw.normal())));
    const base = { key: t.key, suite: t.suite, classname: t.classname, name: t.name };
    if (t.skipped.length > 0) return { ...base, status: "skipped", attempts: [], durationMs: 0, message: null };
    const fails = (): { status: "failed" | "errored"; message: string } | null => {
      if (down.has(t)) return { status: "errored", message: MASS_FAILURE_MESSAGE };
      const broken = plan.broken.get(t);
      if (broken !== undefined) return { status: "failed", message: broken };
      const p = flaky.get(t);
      return p !== undefined && draw.chance(p) ? { status: "failed", message: draw.pick(FLAKY_MESSAGES) } : null;
    };
    const attempts: SimAttempt[] = [];
    let outcome = fails();
    for (let retry = 0; outcome !== null && retry < knobs.inRunRetries; retry++) {
      attempts.push({ status: outcome.status, durationMs: ms() });
      outcome = fails();
    }
    return { ...base, status: outcome?.status ?? "passed", attempts, durationMs: ms(), message: outcome?.message ?? null };
  });
}

/** Generates one stream of the family (the same options always give the same stream). */
export function generateVerdictStream(options: VerdictStreamOptions): VerdictStream {
  const rng = new Rng((options.seed * 2654435761) ^ 0x2545f491);
  const knobs = drawKnobs(rng, { seed: options.seed, runs: 0, tests: options.tests ?? 100, scenario: "quiet" });
  if (options.inRunRetries !== undefined) knobs.inRunRetries = options.inRunRetries;
  const plan = new Rng(rng.int(1, 2 ** 31));
  const draw = new Rng(rng.int(1, 2 ** 31));
  const project = new SimulatedProject(knobs, plan, draw);
  buildSuites(project);
  const rates = { ...DEFAULT_VERDICT_RATES, ...options.rates };
  const flakyRates = options.flakyRates ?? [0.15, 0.25, 0.35, plan.pick([0.15, 0.25, 0.35])];
  const executed = project.allTests.filter((t) => t.skipped.length === 0);
  const flaky = new Map(plan.sample(executed, flakyRates.length).map((t, i) => [t, flakyRates[i]!]));
  const gen = new VerdictGenerator(draw, knobs, project.allTests, flaky, rates);

  const warmup = options.warmupRuns ?? 50;
  const commits = warmup + (options.scenarioCommits ?? 40);
  for (let c = 0; c < commits; c++) gen.mainShas.push(draw.hex(40));
  for (let c = 0; c < warmup; c++) gen.mainRun(c, false);
  gen.firstScenarioCommit = warmup;
  const [firstFlaky] = flaky.keys();
  if (firstFlaky) gen.quarantine(firstFlaky, "known flake: retried in CI until fixed");
  for (let c = warmup; c < commits; c++) scenarioCommit(gen, c);
  return { seed: options.seed, runs: gen.runs, truth: truthOf(gen), quarantines: gen.quarantines };
}

/** One default-branch commit of the scenarios: its breakage, due quarantines, its run, and 1–3 feature-branch runs. */
function scenarioCommit(gen: VerdictGenerator, commit: number): void {
  const { draw, rates } = gen;
  gen.maybeBreakMain(commit);
  for (const due of gen.pendingQuarantine.filter((q) => q.commit === commit))
    gen.quarantine(due.test, "broken on main: the owner is on it");
  let branchRuns = draw.int(1, 3);
  if (draw.chance(rates.baseArrivesLate)) {
    gen.branchRun(gen.newBranch(commit, true));
    branchRuns--;
  }
  gen.mainRun(commit, true);
  for (let i = 0; i < branchRuns; i++) {
    const open = gen.branches.filter((b) => b.runsLeft > 0);
    gen.branchRun(open.length > 0 && draw.chance(rates.continueBranch) ? draw.pick(open) : gen.newBranch(commit));
  }
}

/**
 * Each run's truth, against its true base: the latest default-branch run that shows the base's
 * code, i.e. is not a mass failure. A default-branch run's is the latest such run uploaded before
 * it; a feature-branch run's is the run of its base commit (uploaded later when its base arrived
 * late: the service compares it again then, and that comparison is the one kept), or, when that
 * run is a mass failure, the latest such run uploaded before it.
 */
function truthOf(gen: VerdictGenerator): VerdictStream["truth"] {
  const byKey = new Map(gen.tests.map((t) => [t.key, t]));
  const usableBefore = (number: number) => {
    for (let i = number - 2; i >= 0; i--) if (gen.plans[i]!.branch === null && !gen.plans[i]!.massFailure) return i;
    return null;
  };
  const baseIndexOf = (i: number): number | null => {
    const plan = gen.plans[i]!;
    if (plan.branch === null) return usableBefore(i + 1);
    const own = gen.plans.findIndex((p) => p.branch === null && p.commit === plan.commit);
    return gen.plans[own]!.massFailure ? usableBefore(own + 1) : own;
  };
  return gen.runs.map((run, i) => {
    const plan = gen.plans[i]!;
    const baseIndex = baseIndexOf(i);
    const base = baseIndex === null ? null : gen.runs[baseIndex]!;
    const brokenInBase = baseIndex === null ? new Map<TestDef, string>() : gen.plans[baseIndex]!.broken;
    const failedInBase = failingKeys(base);
    const quarantined = new Set(gen.quarantines.filter((q) => q.beforeRun <= run.number).map((q) => q.test));
    const failures = run.tests.filter(hasVerdict).map((test): FailureTruth => {
      const def = byKey.get(test.key)!;
      const environment = test.message === MASS_FAILURE_MESSAGE;
      const regression = !environment && plan.broken.has(def);
      const trulyNew = regression && !brokenInBase.has(def);
      const inBase = failedInBase.has(test.key) || brokenInBase.has(def);
      const facts = { quarantined: quarantined.has(test.key), massFailure: plan.massFailure, trulyNew, inBase, environment };
      const cause = environment
        ? "mass failure"
        : !regression
          ? "flaky"
          : plan.branch?.breaks.has(def)
            ? "branch breakage"
            : "main breakage";
      return { key: test.key, expected: expectedVerdict(facts), trulyNew, cause };
    });
    const fixed = fixedKeys(run, base);
    return { number: run.number, baseNumber: base?.number ?? null, failures, fixed, scored: plan.scored, massFailure: plan.massFailure };
  });
}
