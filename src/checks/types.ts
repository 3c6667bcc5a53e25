/**
 * The alert checks' shared vocabulary. Each check is a pure, deterministic function of its
 * stored state and one processed run: `(state, run) → (state', events)`. The state is bounded
 * (ring buffers, decayed sums, bit windows), so checking a run costs the same with 100 or
 * 10,000 runs of history. Orchestration (loading/saving state, recording events, alert states,
 * notifications) lives in src/services/alert-checks.ts; nothing in src/checks touches the database.
 */

import type { AlertType, CaseStatus } from "../lib/vocabulary";

export type { CaseStatus } from "../lib/vocabulary";

/** One test of a processed run, after retries were merged into one case. */
export type RunTest = {
  /** Stable identity across runs: suite name, classname and name (see testKey). */
  key: string;
  suite: string;
  classname: string | null;
  name: string;
  /** Final outcome. */
  status: CaseStatus;
  /** Statuses of earlier attempts in this run, oldest first (a failure then a pass on retry: ["failed"] with status "passed"). */
  attempts: CaseStatus[];
  durationMs: number | null;
  /** The test's id in the API (tests.id), when the run is read from storage; the checks do not use it. */
  testId?: string;
};

/** What the checks see of a processed run. */
export type RunSummary = {
  /** test_runs.id (global) and the per-project number (increasing with arrival). */
  runId: number;
  number: number;
  branch: string | null;
  commitSha: string | null;
  createdAt: Date;
  /** The run's duration as stored (reported wall clock, or the sum of its top-level suites). */
  durationMs: number | null;
  /** Whether the run is on the project's default branch (statistical checks use only these). */
  onDefaultBranch: boolean;
  counts: { tests: number; passed: number; failed: number; errored: number; skipped: number };
  tests: RunTest[];
};

/** One trip of a check: becomes one alert event. `metadata` explains it (plain JSON data). */
export type CheckEvent = { metadata: Record<string, unknown> };

export type CheckResult<S> = { state: S; events: CheckEvent[] };

export interface Check<S> {
  /** Stored in every event's metadata as `detector_version`. */
  readonly version: string;
  initialState(): S;
  /** Pure and deterministic: never mutates `state` in place in a way the caller can observe, never reads the clock. */
  update(state: S, run: RunSummary): CheckResult<S>;
}

/** Stable test identity: whitespace-normalised suite, classname and name. */
export function testKey(suite: string, classname: string | null, name: string): string {
  const norm = (value: string | null) => (value ?? "").replace(/\s+/g, " ").trim();
  return `${norm(suite)}\u001f${norm(classname)}\u001f${norm(name)}`;
}

/** Below this many judged tests, "most tests newly failed" says nothing about the infrastructure. */
export const INFRA_GUARD_MIN_EXECUTED = 5;

/**
 * What a check remembers of a test's previous outcome: true when it failed (or errored) last
 * time, false when it passed last time or is unknown. Each check answers from its own state.
 */
export type FailedLastTime = (key: string) => boolean;

/** The infrastructure guard's verdict on one run (see `judgeInfra`). */
export type InfraVerdict = {
  suspect: boolean;
  /** Why the run is suspect, or null. */
  reason: "at_least_half_failed" | "errors_outnumber_failures_tenfold" | null;
  /** passed + failed + errored of the run. */
  executed: number;
  /** Failing now and failing last time too (the check's memory): not judged. */
  persistent: number;
  /** executed − persistent. */
  judged: number;
  /** Failing now but not last time (passed, or unknown to the check). */
  newlyFailed: number;
  newlyErrored: number;
};

/**
 * The infrastructure guard (docs/alert-checks.md#shared-rules): it judges the tests that *newly*
 * fail, not the tests that always fail. A test failing now that also failed at its previous
 * outcome in the check's memory (`failedLastTime`) is *persistent* and left out of the judgement;
 * of the other executed tests (the judged ones), the run looks like broken infrastructure when at
 * least 5 are judged and more than half of them newly fail, or when newly errored tests
 * outnumber newly failed ones tenfold (at least 10 of them). So a project where half the tests
 * fail in every run (environment-dependent tests that never pass) is not one long outage, while
 * an outage still is one: its tests passed last time. A suite of one to four judged tests is
 * never suspected: its one flaky test failing is not an outage.
 *
 * Without a lookup (or when the check knows no test) every failure is new: the rule on the run's
 * counts alone. Counts come from `run.counts`; persistent tests are counted per case of
 * `run.tests`, capped at the counts.
 *
 * Each check keeps its own memory and updates it the same way (`recordsOutcome`): a run that is
 * not suspect records the outcome of every executed test; a suspect run records only the tests
 * the memory does not know yet. That way a project whose first run already fails half its tests
 * learns them (its second run is judged on the tests that newly fail), while a second outage run
 * in a row is still judged against the outcomes from before the first one.
 */
export function judgeInfra(run: RunSummary, failedLastTime?: FailedLastTime): InfraVerdict {
  const { passed, failed, errored } = run.counts;
  const executed = passed + failed + errored;
  let persistentFailed = 0;
  let persistentErrored = 0;
  if (failedLastTime && failed + errored > 0) {
    for (const test of run.tests) {
      if (test.status === "failed" && failedLastTime(test.key)) persistentFailed++;
      else if (test.status === "errored" && failedLastTime(test.key)) persistentErrored++;
    }
  }
  const newlyFailed = failed - Math.min(failed, persistentFailed);
  const newlyErrored = errored - Math.min(errored, persistentErrored);
  const persistent = failed + errored - newlyFailed - newlyErrored;
  const judged = executed - persistent;
  const mostFailed = judged >= INFRA_GUARD_MIN_EXECUTED && (newlyFailed + newlyErrored) / judged > 0.5;
  const errorsOutnumber = newlyErrored >= 10 && newlyErrored >= 10 * Math.max(1, newlyFailed);
  const reason = !mostFailed && !errorsOutnumber ? null : (newlyFailed + newlyErrored) / judged >= 0.5 ? "at_least_half_failed" : "errors_outnumber_failures_tenfold";
  return { suspect: reason !== null, reason, executed, persistent, judged, newlyFailed, newlyErrored };
}

/** Whether the run looks like broken infrastructure (`judgeInfra`); without a lookup, on its counts alone. */
export function isInfraSuspect(run: RunSummary, failedLastTime?: FailedLastTime): boolean {
  return judgeInfra(run, failedLastTime).suspect;
}

/**
 * The guard's memory rule: whether a run records a test's outcome in the check's memory. A run
 * that is not suspect records every executed test; a suspect run only tests the memory does not
 * know yet (`known` false).
 */
export function recordsOutcome(suspect: boolean, known: boolean): boolean {
  return !suspect || !known;
}

/** One check per alert type. */
export type CheckRegistry = Record<AlertType, Check<unknown>>;
