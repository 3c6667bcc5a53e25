/**
 * The runs of a stream, one at a time: mostly default-branch runs (one commit each, where planned
 * changes and test churn happen), feature-branch runs (sometimes with their own breakage), and
 * same-commit retries of failed runs. Each run executes the project's tests as they are at that
 * run: outcomes, in-run retry attempts and (quantised) durations.
 */
import type { CaseStatus } from "../checks/types";
import { storedDuration } from "./junit-report";
import { type PointEffects, type SimulatedProject, type TestDef, SUITE_NAMES, inside } from "./project-model";
import type { FailureCause, SimAttempt, SimRun, SimTest } from "./stream-types";

const FAILURE_MESSAGES = [
  "expected 3 but was 2",
  "expected true but was false",
  "assertion failed: list is empty",
  "Timeout after 5000 ms",
];
const OUTAGE_MESSAGE = "java.net.ConnectException: Connection refused (database unavailable)";

/** Feature branches still open; a new run picks one of them or opens another. */
type FeatureBranch = { name: string; runsLeft: number; broken: TestDef[] };

/** JUnit time quantisation: 3 decimals are 1 ms steps, 2 decimals 10 ms steps. */
function quantise(ms: number, decimals: 2 | 3): number {
  const step = decimals === 3 ? 1 : 10;
  return Math.max(0, Math.round(ms / step) * step);
}

export function generateRuns(project: SimulatedProject): SimRun[] {
  const { knobs, draw, suites, allTests } = project;
  const runs: SimRun[] = [];
  let time = Date.parse(knobs.startAt);
  const branches: FeatureBranch[] = [];
  let branchCounter = 0;
  const branchBreakage = new Map<string, TestDef[]>();
  let retryNext: SimRun | null = null;

  for (let number = 1; number <= knobs.runs; number++) {
    project.currentRun = number;
    let run: SimRun;
    if (retryNext) {
      const original: SimRun = retryNext;
      retryNext = null;
      time += Math.round(draw.uniform(5, 20) * 60_000);
      const isMain = original.branch === "main";
      // A retry runs the same code: a branch's breakage is still there.
      const broken = branchBreakage.get(original.branch) ?? [];
      for (const t of broken) t.branchBroken.add(original.branch);
      run = makeRun(project, number, time, original.branch, original.commit_sha, original.number, isMain);
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
      run = makeRun(project, number, time, branch.name, draw.hex(40), null, false);
      for (const t of branch.broken) t.branchBroken.delete(branch.name);
      if (branch.broken.length > 0) run.notes.push({ kind: "branch_breakage", tests: branch.broken.length });
    } else {
      time += Math.round(draw.exponential(knobs.minutesBetweenRuns) * 60_000);
      project.mainIndex++;
      project.point = { spike: null, outage: null, suiteSkip: null };
      project.applyDueChanges(number);
      if (project.mainIndex > 1) applyChurn(project, number);
      if (project.point.suiteSkip) {
        const suite = suites.find((s) => s.name === project.point.suiteSkip)!;
        project.notesNow.push({ kind: "suite_skipped", suite: suite.name, tests: suite.tests.filter((t) => t.removedAt === null).length });
      }
      // Re-run batches (knob `rerunBatch`): a new commit every `rerunBatch` default-branch runs.
      const fresh = draw.hex(40);
      const batch = knobs.rerunBatch;
      if (batch !== undefined && (project.batchSha === null || (project.mainIndex - 1) % batch === 0)) project.batchSha = fresh;
      run = makeRun(project, number, time, "main", batch !== undefined ? project.batchSha! : fresh, null, true);
      run.notes.push(...project.notesNow.splice(0));
    }
    if (
      run.retry_of === null &&
      run.tests.some((t) => t.status === "failed" || t.status === "errored") &&
      draw.chance(knobs.retryProbability)
    )
      retryNext = run;
    runs.push(run);
  }
  return runs;
}

/** Test churn at a default-branch run: mean-reverting adds and removals, occasionally a rename. */
function applyChurn(project: SimulatedProject, number: number): void {
  const { knobs, draw, suites, allTests } = project;
  const notes = project.notesNow;
  const live = allTests.filter((t) => t.removedAt === null).length;
  if (draw.chance(knobs.churn)) {
    const suite = draw.pick(suites);
    project.newTest(suite, draw.pick(suite.classes));
    notes.push({ kind: "tests_added", count: 1 });
  }
  // Removal is mean-reverting (live tests hover around `tests`); a rename is a removal plus an add.
  const remove = draw.chance((knobs.churn * live) / knobs.tests);
  const rename = draw.chance(knobs.churn / 4);
  for (const renamed of [remove ? false : null, rename ? true : null]) {
    if (renamed === null) continue;
    const candidates = project.plain();
    if (candidates.length === 0) break;
    const victim = draw.pick(candidates);
    victim.removedAt = number;
    notes.push({ kind: "tests_removed", count: 1 });
    if (renamed) {
      const suite = suites.find((s) => s.name === victim.suite)!;
      project.newTest(suite, victim.classname);
      notes.push({ kind: "tests_added", count: 1 });
    }
  }
}

/** A failure forced on a test by the run (an outage, a spike, its co-failing group), and which. */
type Forced = { status: CaseStatus; cause: FailureCause };

/** Whether one execution of a test fails at this run, and how; null when it passes. */
function attemptOutcome(
  project: SimulatedProject,
  test: TestDef,
  run: number,
  branch: string,
  poolRate: number,
  forced: CaseStatus | null,
): CaseStatus | null {
  const { draw } = project;
  if (forced) return forced;
  if (test.alwaysFails) return test.alwaysFails;
  if (inside(test.broken, run) || test.branchBroken.has(branch)) return "failed";
  for (const f of test.flaky) if (run >= f.from && run < f.to && draw.chance(f.p)) return "failed";
  if (test.pool && draw.chance(poolRate)) return draw.chance(0.3) ? "errored" : "failed";
  return null;
}

/**
 * Why a test failed (or failed an attempt) at this run: the first reason in attemptOutcome's order.
 * Decided from the test's state alone, after the fact, so recording it draws nothing: a failure
 * no deterministic reason explains came from the flaky draw (a flaky interval) or the pool's.
 */
function failureCause(test: TestDef, run: number, branch: string, forced: Forced | undefined): FailureCause {
  if (forced) return forced.cause;
  if (test.alwaysFails) return "always_failing";
  if (inside(test.broken, run)) return "breakage";
  if (test.branchBroken.has(branch)) return "branch_breakage";
  if (test.flaky.some((f) => run >= f.from && run < f.to)) return "flaky";
  return "pool";
}

/**
 * Failure probability of each fragile-pool test in this run: background failures are
 * X ~ BetaBin(executed, μ, ρ) over the run, drawn from the pool.
 */
function poolFailureRate(project: SimulatedProject, executed: readonly TestDef[]): number {
  const { knobs, draw } = project;
  const pool = executed.filter((t) => t.pool);
  if (pool.length === 0) return 0;
  const mu = knobs.backgroundRate;
  const pi = knobs.rho > 0 ? draw.beta((mu * (1 - knobs.rho)) / knobs.rho, ((1 - mu) * (1 - knobs.rho)) / knobs.rho) : mu;
  return Math.min(1, (pi * executed.length) / pool.length);
}

/** Executes the tests present at run `number` and returns the run (labels are added later). */
function makeRun(
  project: SimulatedProject,
  number: number,
  startedAt: number,
  branch: string,
  sha: string,
  retryOf: number | null,
  isMain: boolean,
): SimRun {
  const { knobs, draw, suites } = project;
  const present: TestDef[] = [];
  for (const suite of suites) for (const test of suite.tests) if (test.removedAt === null || number < test.removedAt) present.push(test);
  const slowRunner = draw.chance(knobs.slowRunnerShare);
  const runFactor = project.durationFactor() * (slowRunner ? knobs.slowRunnerFactor : 1);

  // The planned one-run effects belong to the default-branch run itself, not to its retry.
  const point = isMain && retryOf === null ? project.point : null;
  const suiteSkip = point?.suiteSkip ?? null;
  const skippedNow = present.map((t) => inside(t.skipped, number) || t.suite === suiteSkip);
  const executed = present.filter((_, i) => !skippedNow[i]);

  const poolRate = poolFailureRate(project, executed);
  const forced = forcedFailures(project, number, executed, point);
  const { tests, total } = executeTests(project, {
    number,
    branch,
    present,
    skippedNow,
    poolRate,
    forced,
    runFactor,
    outage: point?.outage ?? null,
  });

  const overhead = 20_000 * Math.sqrt(knobs.durationScale) * runFactor * draw.lognormal(1, 0.05);
  const wall = knobs.reportsWallClock ? Math.round(total + overhead) : null;
  const run: SimRun = {
    number,
    branch,
    commit_sha: sha,
    created_at: new Date(startedAt).toISOString(),
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
}

/** Forced failures of a run: an outage (every test of one suite errors), a spike, and the co-failing groups that fail in it. */
function forcedFailures(
  project: SimulatedProject,
  number: number,
  executed: readonly TestDef[],
  point: PointEffects | null,
): Map<TestDef, Forced> {
  const { draw } = project;
  const forced = new Map<TestDef, Forced>();
  const outage = point?.outage ?? null;
  if (outage) for (const t of executed) if (t.suite === outage.suite) forced.set(t, { status: "errored", cause: "outage" });
  const spike = point?.spike ?? null;
  if (spike) {
    const count = Math.round(spike.share * executed.length);
    for (const t of draw.sample(
      executed.filter((t) => !forced.has(t)),
      count,
    ))
      forced.set(t, { status: draw.chance(0.8) ? "failed" : "errored", cause: "spike" });
  }
  // A co-failing group fails together (every attempt of the run) in a share of the runs, any branch:
  // all of it, or (`subset`) a different few of it each time.
  for (const group of project.groups) {
    if (number < group.from || !draw.chance(group.rate)) continue;
    const { subset } = group;
    if (subset) {
      const members = executed.filter((t) => group.tests.has(t) && !forced.has(t));
      for (const t of draw.sample(members, draw.int(subset.min, subset.max)))
        forced.set(t, { status: subset.status, cause: "co_failing_group" });
      continue;
    }
    for (const t of executed) if (group.tests.has(t) && !forced.has(t)) forced.set(t, { status: "failed", cause: "co_failing_group" });
  }
  return forced;
}

/** One attempt's duration: the test's own spread, the run's factor, an occasional outlier; failures end early. */
function attemptDuration(project: SimulatedProject, test: TestDef, status: CaseStatus | null, runFactor: number): number {
  const { knobs, draw } = project;
  let ms = test.medianMs * test.factor * runFactor * Math.exp(test.sigma * draw.normal());
  if (draw.chance(knobs.outlierProbability)) ms *= draw.uniform(1.5, 3);
  if (status === "errored") ms *= draw.uniform(0.02, 0.2);
  else if (status === "failed") ms *= draw.uniform(0.3, 1.2);
  return quantise(ms, knobs.timeDecimals);
}

/** Every present test's case in the run, in order (skipped ones too), with its attempts; `total` is the time they took. */
function executeTests(
  project: SimulatedProject,
  run: {
    number: number;
    branch: string;
    present: readonly TestDef[];
    skippedNow: readonly boolean[];
    poolRate: number;
    forced: ReadonlyMap<TestDef, Forced>;
    runFactor: number;
    outage: PointEffects["outage"];
  },
): { tests: SimTest[]; total: number } {
  const { knobs, draw } = project;
  const { number, branch, poolRate, forced, runFactor, outage } = run;
  const tests: SimTest[] = [];
  const causes = new Map<string, FailureCause>();
  let total = 0;
  run.present.forEach((test, i) => {
    if (run.skippedNow[i]) {
      tests.push({
        key: test.key,
        suite: test.suite,
        classname: test.classname,
        name: test.name,
        status: "skipped",
        attempts: [],
        durationMs: 0,
        message: null,
      });
      return;
    }
    const forcedStatus = forced.get(test)?.status ?? null;
    const attempts: SimAttempt[] = [];
    let status = attemptOutcome(project, test, number, branch, poolRate, forcedStatus);
    for (let retry = 0; status !== null && retry < knobs.inRunRetries; retry++) {
      const ms = attemptDuration(project, test, status, runFactor);
      attempts.push({ status, durationMs: ms });
      total += ms;
      status = attemptOutcome(project, test, number, branch, poolRate, forcedStatus);
    }
    const finalStatus: CaseStatus = status ?? "passed";
    if (status !== null || attempts.length > 0) causes.set(test.key, failureCause(test, number, branch, forced.get(test)));
    const ms = attemptDuration(project, test, status, runFactor);
    total += ms;
    const message = finalStatus === "passed" ? null : forcedStatus === "errored" && outage ? OUTAGE_MESSAGE : draw.pick(FAILURE_MESSAGES);
    tests.push({
      key: test.key,
      suite: test.suite,
      classname: test.classname,
      name: test.name,
      status: finalStatus,
      attempts,
      durationMs: ms,
      message,
    });
  });
  if (causes.size > 0) project.causes.set(number, causes);
  return { tests, total };
}
