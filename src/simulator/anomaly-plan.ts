/**
 * The anomalies a stream injects, one planner per family (each can be switched off, so a stream is
 * clean for that check). Planned by default-branch run index ("main index": the k-th
 * default-branch run that is not a retry); each takes effect at that run, when it is labelled.
 */
import { INFINITY, type CoFailingGroup, type SimulatedProject, type TestDef } from "./project-model";

/**
 * Independent flaky tests (each its own failure probability, from the start or from a later run,
 * sometimes fixed later) and the fragile pool whose background failures run generation draws.
 */
export function planFlakyTests(project: SimulatedProject): void {
  const { knobs, plan, expectedMain } = project;
  if (!knobs.families.flaky) return;
  const candidates = plan.sample(project.plain(), knobs.flakyRates.length + Math.round(knobs.poolShare * knobs.tests));
  knobs.flakyRates.forEach((p, i) => {
    const test = candidates[i]!;
    test.protected = true;
    const late = plan.chance(knobs.lateFlakyShare);
    const at = late ? plan.int(30, Math.max(31, Math.floor(expectedMain * 0.6))) : 1;
    const fixedAfter = plan.chance(0.2) ? plan.int(100, 200) : null;
    project.schedule(at, (run) => {
      const anomaly = project.addAnomaly("flaky_test", test.key, run, p, { p, systemic: false, late });
      test.flaky.push({ from: run, to: INFINITY, p });
      if (fixedAfter !== null) {
        project.schedule(project.mainIndex + fixedAfter, (fixRun) => {
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
    project.schedule(1, (run) => {
      for (const test of pool)
        project.addAnomaly("flaky_test", test.key, run, Math.min(1, poolRate), {
          p: Math.min(1, poolRate),
          systemic: true,
          rho: knobs.rho,
          late: false,
        });
    });
  }
}

/** Whether a planned change at `at` falls near a duration change (from `lead` runs before it to 40 after). */
export function nearDurationChange(durationChanges: readonly number[], at: number, lead = 40): boolean {
  return durationChanges.some((d) => d - at < lead && at - d < 40);
}

/**
 * Sequential persistent duration changes, at least 100 default-branch runs apart: run-duration
 * steps, slow drifts and per-test steps. Returns their planned main indices: skip changes and
 * improvements keep away from them, so a change of the test set does not blur a duration
 * anomaly's size.
 */
export function planDurationChanges(project: SimulatedProject): number[] {
  const { knobs, plan, expectedMain } = project;
  const durationChanges: number[] = [];
  if (!knobs.families.regression) return durationChanges;
  let at = plan.int(60, 110);
  while (at < expectedMain - 30) {
    durationChanges.push(at);
    const kind = plan.pick(["step", "step", "drift", "test"] as const);
    if (kind === "step") {
      const rel = plan.pick([0.1, 0.25, 0.5, 1.0]);
      project.schedule(at, (run) => {
        project.projectSteps *= 1 + rel;
        project.addAnomaly("duration_shift", "run_duration", run, rel, { rel, main_index: project.mainIndex });
      });
    } else if (kind === "drift") {
      const length = plan.int(40, 80);
      const total = plan.pick([0.2, 0.3, 0.5]);
      project.schedule(at, (run) => {
        project.drift = { startIndex: project.mainIndex, endIndex: project.mainIndex + length, rate: total / length };
        const anomaly = project.addAnomaly("duration_drift", "run_duration", run, total, {
          rel: total,
          length_runs: length,
          main_index: project.mainIndex,
        });
        project.schedule(project.mainIndex + length, (endRun) => {
          anomaly.end = endRun;
        });
      });
    } else {
      const slow = project.plain().filter((t) => t.medianMs >= 1000);
      if (slow.length > 0) {
        const test = plan.pick(slow);
        test.protected = true;
        const rel = plan.pick([0.5, 1.0, 2.0]);
        project.schedule(at, (run) => {
          test.factor *= 1 + rel;
          project.addAnomaly("test_duration_shift", test.key, run, rel, {
            rel,
            median_ms: Math.round(test.medianMs),
            cv: Math.sqrt(Math.exp(test.sigma ** 2) - 1),
            main_index: project.mainIndex,
          });
        });
      }
    }
    at += plan.int(100, 170);
  }
  return durationChanges;
}

/** Single-run failure spikes (a share of the executed tests fails) and one-suite infrastructure outages. */
export function planFailureSpikes(project: SimulatedProject): void {
  const { knobs, plan, expectedMain, suites } = project;
  if (!knobs.families.spike) return;
  let at = plan.int(40, 80);
  while (at < expectedMain) {
    const share = plan.pick([0.03, 0.1, 0.3]);
    project.schedule(at, (run) => {
      project.point.spike = { share, anomaly: project.addAnomaly("failure_spike", "run", run, share, { target_share: share }, run) };
    });
    at += plan.int(40, 120);
  }
  at = plan.int(60, 150);
  while (at < expectedMain) {
    const suite = plan.pick(suites);
    project.schedule(at, (run) => {
      project.point.outage = { suite: suite.name, anomaly: project.addAnomaly("infra_outage", "run", run, 0, { suite: suite.name }, run) };
    });
    at += plan.int(80, 200);
  }
}

/** Skip steps (+5, +20 tests) and ramps (+1 test per 5 runs for 50 runs), away from duration changes. */
export function planSkipChanges(project: SimulatedProject, durationChanges: readonly number[]): void {
  const { knobs, plan, expectedMain } = project;
  if (!knobs.families.skip) return;
  let at = plan.int(50, 110);
  while (at < expectedMain - 20) {
    const kind = plan.pick(["step5", "step20", "ramp"] as const);
    // A ramp keeps changing the test set for 50 runs.
    if (nearDurationChange(durationChanges, at, kind === "ramp" ? 90 : 40)) {
      at += 20;
      continue;
    }
    if (kind === "ramp") {
      const tests = plan.sample(project.plain(), 10);
      for (const test of tests) test.protected = true;
      project.schedule(at, (run) => {
        const anomaly = project.addAnomaly("skip_ramp", "skipped_tests", run, tests.length, {
          per_runs: 5,
          tests: tests.length,
          main_index: project.mainIndex,
        });
        tests.forEach((test, i) => {
          const skip = (r: number) => {
            test.skipped.push({ from: r, to: INFINITY });
            if (i === tests.length - 1) anomaly.end = r;
          };
          if (i === 0) skip(run);
          else project.schedule(project.mainIndex + 5 * i, skip);
        });
      });
    } else {
      const count = kind === "step5" ? 5 : 20;
      const tests = plan.sample(project.plain(), count);
      for (const test of tests) test.protected = true;
      project.schedule(at, (run) => {
        for (const test of tests) test.skipped.push({ from: run, to: INFINITY });
        project.addAnomaly("skip_step", "skipped_tests", run, tests.length, { tests: tests.length, main_index: project.mainIndex });
      });
    }
    at += plan.int(90, 160);
  }
}

/**
 * Scenario "env_half": a share of the initially executed tests fails (or errors) in every run and
 * never passes: environment-dependent tests. They are not anomalies (not flaky, never fixed);
 * chosen after every other planner, among the tests no anomaly or breakage claimed.
 */
export function planAlwaysFailing(project: SimulatedProject): void {
  const { knobs, plan, allTests } = project;
  const share = knobs.alwaysFailingShare ?? 0;
  if (share <= 0) return;
  const executed = allTests.filter((t) => t.removedAt === null && t.skipped.length === 0).length;
  const tests = plan.sample(project.plain(), Math.round(share * executed));
  const errored = knobs.alwaysFailingErroredShare ?? 0;
  for (const test of tests) {
    test.protected = true;
    test.alwaysFails = plan.chance(errored) ? "errored" : "failed";
  }
}

/**
 * Scenario "co_failing_group": `size` tests that fail together in a share `rate` of the runs and
 * pass together in the others (one draw per run, any branch, same-commit retries included, so a
 * re-run of a commit where the group failed is usually green), from the start or from a later
 * run. Each member is a flaky_test anomaly with failure probability `rate` (details.group).
 */
export function planCoFailingGroup(project: SimulatedProject): void {
  const { knobs, plan, expectedMain } = project;
  const spec = knobs.coFailingGroup;
  if (!spec) return;
  const tests = plan.sample(project.plain(), spec.size);
  for (const test of tests) test.protected = true;
  const late = plan.chance(0.5);
  const at = late ? plan.int(30, Math.max(31, Math.floor(expectedMain * 0.6))) : 1;
  const group: CoFailingGroup = { tests: new Set(tests), rate: spec.rate, from: INFINITY };
  project.groups.push(group);
  project.schedule(at, (run) => {
    group.from = run;
    for (const test of tests) {
      project.addAnomaly("flaky_test", test.key, run, spec.rate, {
        p: spec.rate,
        systemic: false,
        late,
        group: project.groups.length,
        group_size: tests.length,
      });
    }
  });
}

/** The suite (a module) with the most tests free to be claimed, and those tests. */
function largestPlainSuite(project: SimulatedProject): TestDef[] {
  const plain = project.plain();
  let best: TestDef[] = [];
  for (const suite of project.suites) {
    const tests = plain.filter((t) => t.suite === suite.name);
    if (tests.length > best.length) best = tests;
  }
  return best;
}

/** Expected failure probability of a member of a group that fails a subset of `min`–`max` of its `size` tests in a share `rate` of the runs. */
function subsetMemberRate(rate: number, min: number, max: number, size: number): number {
  const mean = (Math.min(min, size) + Math.min(max, size)) / 2;
  return Math.round(((rate * mean) / Math.max(1, size)) * 1000) / 1000;
}

/**
 * Schedules a subset group and labels each member a flaky_test anomaly. It starts after the first
 * 30 default-branch runs (as the check's burst baseline has them on real rerun data, where a group
 * that fails from a project's very first runs is seen before any burst could be).
 */
function scheduleSubsetGroup(project: SimulatedProject, group: CoFailingGroup, details: Record<string, unknown>): void {
  const { plan, expectedMain } = project;
  const spec = group.subset!;
  const members = [...group.tests];
  const p = subsetMemberRate(group.rate, spec.min, spec.max, members.length);
  const late = true;
  const at = plan.int(30, Math.max(31, Math.floor(expectedMain * 0.6)));
  project.groups.push(group);
  const groupNumber = project.groups.length;
  project.schedule(at, (run) => {
    group.from = run;
    for (const test of members) {
      project.addAnomaly("flaky_test", test.key, run, p, {
        p,
        systemic: false,
        late,
        group: groupNumber,
        group_size: members.length,
        group_rate: group.rate,
        subset: `${spec.min}-${spec.max}`,
        ...details,
      });
    }
  });
}

/**
 * Scenario "co_failing_subsets" (real rerun data: a group of about 16 tests of one module of which
 * each failing re-run fails a different few): `size` tests of one suite; in a share `rate` of the
 * runs a subset of `subsetMin`–`subsetMax` of them fails together. Each member is a flaky_test
 * anomaly with its expected failure probability (details.subsets).
 */
export function planCoFailingSubsets(project: SimulatedProject): void {
  const spec = project.knobs.coFailingSubsets;
  if (!spec) return;
  const module = largestPlainSuite(project);
  const tests = project.plan.sample(module, Math.min(spec.size, module.length));
  for (const test of tests) test.protected = true;
  const group: CoFailingGroup = {
    tests: new Set(tests),
    rate: spec.rate,
    from: INFINITY,
    subset: { min: spec.subsetMin, max: spec.subsetMax, status: "failed" },
  };
  scheduleSubsetGroup(project, group, { subsets: true });
}

/**
 * Scenario "env_block_flaky" (real rerun data: a module where a block of tests always errors while
 * others flake): in the suite with the most free tests, a share `blockShare` of them errors in every
 * run and never passes (not anomalies, like env_half's), and up to `flaky` others of it error in a
 * different subset of `subsetMin`–`subsetMax` in a share `rate` of the runs (each a flaky_test
 * anomaly, details.env_block).
 */
export function planEnvBlock(project: SimulatedProject): void {
  const spec = project.knobs.envBlock;
  if (!spec) return;
  const module = largestPlainSuite(project);
  const chosen = project.plan.sample(module, module.length);
  const blockSize = Math.round(spec.blockShare * module.length);
  const block = chosen.slice(0, blockSize);
  const flaky = chosen.slice(blockSize, blockSize + spec.flaky);
  for (const test of block) {
    test.protected = true;
    test.alwaysFails = "errored";
  }
  for (const test of flaky) test.protected = true;
  if (flaky.length === 0) return;
  const group: CoFailingGroup = {
    tests: new Set(flaky),
    rate: spec.rate,
    from: INFINITY,
    subset: { min: spec.subsetMin, max: Math.min(spec.subsetMax, flaky.length), status: "errored" },
  };
  scheduleSubsetGroup(project, group, { env_block: block.length });
}
