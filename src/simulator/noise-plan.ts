/**
 * Changes that are NOT anomalies, which the checks should stay quiet about. Planned after the
 * anomalies, in this order (the plan's random draws depend on it).
 */
import { nearDurationChange } from "./anomaly-plan";
import { INFINITY, type SimulatedProject } from "./project-model";

export function planNoise(project: SimulatedProject, durationChanges: readonly number[]): void {
  planBreakages(project);
  planSuiteSkip(project);
  planSkipRemoval(project);
  planDurationImprovement(project, durationChanges);
  planBulkAdd(project);
}

/** Tests broken for 1, 3, 10 or 30 runs (or until the end), then fixed or sometimes disabled; some twice. */
function planBreakages(project: SimulatedProject): void {
  const { knobs, plan, expectedMain } = project;
  const breakages = plan.poisson((knobs.breakagesPer100 * knobs.runs) / 100);
  for (let b = 0; b < breakages; b++) {
    const candidates = project.plain();
    if (candidates.length === 0) break;
    const test = plan.pick(candidates);
    test.protected = true;
    const episodes = plan.chance(0.25) ? 2 : 1;
    let at = plan.int(20, Math.max(21, expectedMain - 5));
    for (let e = 0; e < episodes; e++) {
      const length = plan.pick([1, 3, 10, 30, INFINITY]);
      const disable = Number.isFinite(length) && plan.chance(0.3);
      project.schedule(at, (run) => {
        const interval = { from: run, to: INFINITY };
        test.broken.push(interval);
        project.notesNow.push({ kind: "breakage_start", test: test.key, length: Number.isFinite(length) ? length : null });
        if (Number.isFinite(length)) {
          project.schedule(project.mainIndex + length, (fixRun) => {
            interval.to = fixRun;
            if (disable) test.skipped.push({ from: fixRun, to: INFINITY });
            project.notesNow.push({ kind: "breakage_fixed", test: test.key, disabled: disable });
          });
        }
      });
      if (!Number.isFinite(length) || disable) break;
      at += length + plan.int(20, 60);
    }
  }
}

/** Sometimes one whole suite is skipped in one default-branch run. */
function planSuiteSkip(project: SimulatedProject): void {
  const { plan, expectedMain, suites } = project;
  if (!plan.chance(0.6)) return;
  const suite = plan.pick(suites);
  project.schedule(plan.int(30, Math.max(31, expectedMain - 5)), () => {
    project.point.suiteSkip = suite.name;
  });
}

/** Sometimes three tests disabled from the start are enabled again. */
function planSkipRemoval(project: SimulatedProject): void {
  const { plan, expectedMain, allTests } = project;
  if (!plan.chance(0.3)) return;
  project.schedule(plan.int(50, Math.max(51, expectedMain - 20)), (run) => {
    const disabled = allTests.filter((t) => t.removedAt === null && t.skipped.some((s) => s.from === 1 && s.to === INFINITY));
    const enabled = plan.sample(disabled, 3);
    for (const test of enabled) test.skipped = test.skipped.map((s) => (s.from === 1 && s.to === INFINITY ? { from: 1, to: run } : s));
    if (enabled.length > 0) project.notesNow.push({ kind: "skips_removed", tests: enabled.length });
  });
}

/** Sometimes the run gets 20 % faster (away from duration anomalies). */
function planDurationImprovement(project: SimulatedProject, durationChanges: readonly number[]): void {
  const { plan, expectedMain } = project;
  const improvementAt = plan.int(40, Math.max(41, expectedMain - 10));
  if (!plan.chance(0.25) || nearDurationChange(durationChanges, improvementAt)) return;
  project.schedule(improvementAt, () => {
    project.projectSteps *= 0.8;
    project.notesNow.push({ kind: "duration_improvement", rel: -0.2 });
  });
}

/** Sometimes 5–10 tests are added at once to one suite. */
function planBulkAdd(project: SimulatedProject): void {
  const { plan, expectedMain, suites } = project;
  if (!plan.chance(0.3)) return;
  project.schedule(plan.int(40, Math.max(41, expectedMain - 10)), () => {
    const count = plan.int(5, 10);
    const suite = plan.pick(suites);
    for (let i = 0; i < count; i++) project.newTest(suite, plan.pick(suite.classes));
    project.notesNow.push({ kind: "tests_added", count });
  });
}
