/**
 * The alert checks' shared vocabulary. Each check is a pure, deterministic function of its
 * stored state and one processed run: `(state, tests, run) → (state', tests', events)`. The state
 * is split in two: a small project-level part (windows, baselines, bounded lists) and one entry per
 * test, stored in the test's row, of which a run sees and writes only its own tests' entries. So
 * checking a run costs the same with 100 or 10,000 runs of history, and with 100 or 100,000 known
 * tests. A check takes the run's tests in chunks, twice (`CheckPass`), so a run of any size is
 * checked in bounded memory. Orchestration (loading/saving state, recording events, alert states,
 * notifications) lives in src/services/alerts/alert-checks.ts; nothing in src/checks touches the database.
 */

import type { AlertType, CaseStatus } from "../lib/vocabulary";

export type { CaseStatus } from "../lib/vocabulary";

/** One test of a processed run, after retries were merged into one case. */
export type RunTest = {
  /**
   * The test's identity: its id in the API (tests.id) when the run is read from storage; pure
   * callers (the simulator, unit tests) use testIdentityKey. Checks compare keys and nothing else.
   */
  key: string;
  suite: string;
  classname: string | null;
  name: string;
  /** Final outcome. */
  status: CaseStatus;
  /** Statuses of earlier attempts in this run, oldest first (a failure then a pass on retry: ["failed"] with status "passed"). */
  attempts: CaseStatus[];
  durationMs: number | null;
  /**
   * Whether the test was quarantined when the run was processed (docs/quarantine.md): the
   * failure-rate spike check leaves its failures out of the failing count. Absent: not
   * quarantined (pure callers, the simulator).
   */
  quarantined?: boolean;
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

/** A run without its tests: what a check knows of the run before it sees the tests, chunk by chunk. */
export type RunHeader = Omit<RunSummary, "tests">;

/** One trip of a check: becomes one alert event. `metadata` explains it (plain JSON data). */
export type CheckEvent = { metadata: Record<string, unknown> };

/** The stored per-test entries of a run's tests (a test without an entry is absent). */
export type TestEntries<T> = ReadonlyMap<string, T>;

/** A check's output: the project-level state, the per-test entries to store (changed ones only), the trips. */
export type CheckResult<S, T = never> = { state: S; tests: Map<string, T>; events: CheckEvent[] };

/**
 * One check's work on one run, in two passes over the run's tests, so that a run of any size is
 * checked in bounded memory (the service reads a large run's tests in chunks through a cursor):
 * 1. `observe` every chunk: the check keeps only what its project-level decision needs (counts,
 *    bounded lists), never something per test;
 * 2. `decide`: the project-level decision (the new state, whether the run trips);
 * 3. `write` every chunk again, the same chunks in the same order with the same entries: the
 *    chunk's tests' new entries (changed ones only);
 * 4. `finish`: the new project-level state and the events.
 *
 * Chunks come in ascending key order and hold every case of their keys (a key is never split
 * between chunks); within a chunk, cases may come in any order. The result is the same however
 * the run is cut into chunks (test/checks/support/feed.ts checks it for every check).
 */
export interface CheckPass<S, T> {
  observe(tests: readonly RunTest[], entries: TestEntries<T>): void;
  decide(): void;
  write(tests: readonly RunTest[], entries: TestEntries<T>): Map<string, T>;
  finish(): { state: S; events: CheckEvent[] };
}

export interface Check<S, T = never> {
  /** Stored in every event's metadata as `detector_version`, and the key of its per-test entries. */
  readonly version: string;
  initialState(): S;
  /**
   * Pure and deterministic: never mutates `state` or the entries in a way the caller can observe,
   * never reads the clock. The entries given with a chunk are the stored entries of its tests only.
   */
  start(state: S, run: RunHeader): CheckPass<S, T>;
  /**
   * A state stored before per-test entries lived in the tests' rows (one document holding every
   * test's entry under the check's old keys): the project-level state and every entry, re-keyed by
   * `rekey` (an old key → the test's key, or null when no test matches: its entry is dropped).
   * Null when `legacy` is not such a state.
   */
  fromLegacy?(legacy: unknown, rekey: (oldKey: string) => string | null): { state: S; tests: Map<string, T> } | null;
}

/** The run's header: the summary without its tests. */
function runHeader(run: RunSummary): RunHeader {
  const { tests: _tests, ...header } = run;
  return header;
}

/**
 * A check on a run whose tests are cut into `chunks` (ascending key order, a key's cases in one
 * chunk); the whole run as one chunk when none are given. `tests` holds the stored entries of the
 * run's tests.
 */
export function checkRun<S, T>(
  check: Check<S, T>,
  state: S,
  tests: TestEntries<T>,
  run: RunSummary,
  chunks: readonly (readonly RunTest[])[] = [run.tests],
): CheckResult<S, T> {
  const pass = check.start(state, runHeader(run));
  const cut = chunks.filter((chunk) => chunk.length > 0);
  for (const chunk of cut) pass.observe(chunk, tests);
  pass.decide();
  const changed = new Map<string, T>();
  for (const chunk of cut) for (const [key, entry] of pass.write(chunk, tests)) changed.set(key, entry);
  const { state: next, events } = pass.finish();
  return { state: next, tests: changed, events };
}

/** A run's tests cut into chunks of about `size` keys each (ascending key order, a key's cases together, the run's order within a key). */
function chunksOf(tests: readonly RunTest[], size: number): RunTest[][] {
  const byKey = new Map<string, RunTest[]>();
  for (const test of tests) {
    const cases = byKey.get(test.key);
    if (cases) cases.push(test);
    else byKey.set(test.key, [test]);
  }
  const keys = [...byKey.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const chunks: RunTest[][] = [];
  for (let i = 0; i < keys.length; i += Math.max(1, size))
    chunks.push(keys.slice(i, i + Math.max(1, size)).flatMap((key) => byKey.get(key)!));
  return chunks;
}

/** A check with all of its state in one value, as pure callers (the detection benchmark, tests) hold it. */
export type InMemoryState<S, T> = { project: S; tests: Record<string, T> };

export interface InMemoryCheck<S> {
  readonly version: string;
  initialState(): S;
  update(state: S, run: RunSummary): { state: S; events: CheckEvent[] };
  /** The same check with each run cut into chunks of `chunkKeys` keys (for tests that the cut changes nothing). */
  chunked?(chunkKeys: number): InMemoryCheck<S>;
}

/** How inMemoryCheck cuts each run: chunks of this many keys (the whole run as one chunk when absent). */
export type InMemoryOptions = { chunkKeys?: number };

/**
 * Runs a check with its per-test entries in a plain record (copied on write, so earlier states
 * stay valid): what the service does with the tests' rows, for the simulator, the benchmark and
 * the unit tests.
 */
export function inMemoryCheck<S, T>(check: Check<S, T>, options: InMemoryOptions = {}): InMemoryCheck<InMemoryState<S, T>> {
  return {
    version: check.version,
    chunked: (chunkKeys) => inMemoryCheck(check, { chunkKeys }),
    initialState: () => ({ project: check.initialState(), tests: Object.create(null) as Record<string, T> }),
    update(state, run) {
      const entries = new Map<string, T>();
      for (const test of run.tests) if (Object.hasOwn(state.tests, test.key)) entries.set(test.key, state.tests[test.key] as T);
      const result = checkRun(
        check,
        state.project,
        entries,
        run,
        options.chunkKeys === undefined ? [run.tests] : chunksOf(run.tests, options.chunkKeys),
      );
      if (result.state === state.project && result.tests.size === 0) return { state, events: result.events };
      let tests = state.tests;
      if (result.tests.size > 0) {
        tests = Object.assign(Object.create(null) as Record<string, T>, state.tests);
        for (const [key, entry] of result.tests) tests[key] = entry;
      }
      return { state: { project: result.state, tests }, events: result.events };
    },
  };
}

/** Below this many judged tests, "most tests newly failed" says nothing about the infrastructure. */
const INFRA_GUARD_MIN_EXECUTED = 5;

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
  const persistent = { failed: 0, errored: 0 };
  if (failedLastTime) countPersistent(persistent, run.tests, failedLastTime);
  return judgeInfraCounts(run.counts, persistent);
}

/** The failing cases of a run that also failed last time (judgeInfra), counted chunk by chunk. */
export type PersistentCount = { failed: number; errored: number };

/** Adds a chunk's persistent failures (judgeInfra) to `into`. */
export function countPersistent(into: PersistentCount, tests: readonly RunTest[], failedLastTime: FailedLastTime): void {
  for (const test of tests) {
    if (test.status === "failed" && failedLastTime(test.key)) into.failed++;
    else if (test.status === "errored" && failedLastTime(test.key)) into.errored++;
  }
}

/** judgeInfra on the run's counts and its persistent failures, as counted over its chunks (countPersistent). */
export function judgeInfraCounts(counts: RunSummary["counts"], persistentCount: PersistentCount): InfraVerdict {
  const { passed, failed, errored } = counts;
  const executed = passed + failed + errored;
  const newlyFailed = failed - Math.min(failed, persistentCount.failed);
  const newlyErrored = errored - Math.min(errored, persistentCount.errored);
  const persistent = failed + errored - newlyFailed - newlyErrored;
  const judged = executed - persistent;
  const mostFailed = judged >= INFRA_GUARD_MIN_EXECUTED && (newlyFailed + newlyErrored) / judged > 0.5;
  const errorsOutnumber = newlyErrored >= 10 && newlyErrored >= 10 * Math.max(1, newlyFailed);
  const reason =
    !mostFailed && !errorsOutnumber
      ? null
      : (newlyFailed + newlyErrored) / judged >= 0.5
        ? "at_least_half_failed"
        : "errors_outnumber_failures_tenfold";
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
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each check has its own state types; the registry only routes them.
export type CheckRegistry = Record<AlertType, Check<any, any>>;

/**
 * The key the checks used before they shared the API's test identity: whitespace-normalised
 * suite, classname and name. States stored then are re-keyed from it (Check.fromLegacy); the
 * simulator still draws its keys with it (its names are unique, so it is one key per test).
 */
export function legacyTestKey(suite: string, classname: string | null, name: string): string {
  const norm = (value: string | null) => (value ?? "").replace(/\s+/g, " ").trim();
  return `${norm(suite)}\u001f${norm(classname)}\u001f${norm(name)}`;
}
