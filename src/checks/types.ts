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

/** Below this many executed tests, "most tests failed" says nothing about the infrastructure. */
export const INFRA_GUARD_MIN_EXECUTED = 5;

/**
 * The infrastructure guard (docs/alert-checks.md#shared-rules: "runs where most tests failed"):
 * a run of at least 5 executed tests where more than half failed, or where errors
 * outnumber failures tenfold (at least 10 errors), looks like broken infrastructure. Such a run
 * does not update per-test flakiness or duration state; it does feed the failure-rate check.
 * A suite of one to four tests is never suspected: its one flaky test failing is not an outage.
 */
export function isInfraSuspect(run: RunSummary): boolean {
  const executed = run.counts.passed + run.counts.failed + run.counts.errored;
  if (executed === 0) return false;
  const failing = run.counts.failed + run.counts.errored;
  const mostFailed = executed >= INFRA_GUARD_MIN_EXECUTED && failing / executed > 0.5;
  return mostFailed || (run.counts.errored >= 10 && run.counts.errored >= 10 * Math.max(1, run.counts.failed));
}

/** One check per alert type. */
export type CheckRegistry = Record<AlertType, Check<unknown>>;
