/**
 * Tests' health on a simulated stream, in memory: what the service leaves in its `tests` rows when
 * the stream is uploaded run by run, computed with the service's own pure rules and no database.
 * For each run, in number order (as the service's queue and checks take them):
 * - run processing: the run's cases are merged per test identity by `TestExecutions` and the run's
 *   tests are advanced by `advanceRun` (`advanceTest` on each: the same-commit, broken and
 *   healthy-again rules of docs/tests.md), with the same per-test row (`TestProgress`) the service
 *   keeps;
 * - then the flakiness check: its pure `update` on the run's summary (`toRunSummary`, what the
 *   service derives from the upload), and every test one of its events names becomes flaky at the
 *   run by `flagTestFlaky`, the rule of `markTestsFlaky`. As in src/services/alerts/alert-checks.ts
 *   (`withTestId`), an event names its test by `test_key`, mapped to a test of the run; keys listed
 *   in `more_flagged_test_keys` (a run that flags more than 50 tests) name no test there, so they
 *   are not applied either: `unnamedFlags` counts them.
 * The check runs whether or not its alert is enabled (it feeds health either way), so there is no
 * alert switch here. test/simulator/health-replay.test.ts checks the replay against the service.
 */
import { type FlakinessTestState, flaggedInRun, flakinessCheck } from "../checks/flakiness";
import { type RunSummary, inMemoryCheck } from "../checks/types";
import { parseSeconds } from "../ingest/junit";
import type { ReportCase } from "../ingest/report";
import type { TestHealth } from "../lib/vocabulary";
import { isDefaultBranch } from "../services/tests/default-branch";
import { testIdentityKey } from "../lib/test-identity";
import { type RunContext, type TestProgress, TestExecutions, advanceRun, flagTestFlaky } from "../services/tests/tests-state";
import { formatSeconds, toRunSummary } from "./junit-report";
import type { SimRun, SimTest } from "./stream-types";

/** A change of one test's health: at which run, why, and which step made it. */
export type ReplayedTransition = {
  /** The simulator's test key (suite, classname, name: the checks' key and the ground truth's subject). */
  test: string;
  run: number;
  from: TestHealth;
  to: TestHealth;
  reason: string;
  /** `run`: advanceTest (run processing); `flakiness_check`: the check's flag. */
  by: "run" | "flakiness_check";
};

export type HealthReplay = {
  /** Index = run number − 1: the health of each test of that run (skipped ones included) once the run is processed and checked. */
  healthAfter: Map<string, TestHealth>[];
  transitions: ReplayedTransition[];
  /** Final rows, by the simulator's test key. */
  rows: Map<string, TestProgress>;
  /** Flags the service cannot apply: keys in `more_flagged_test_keys`, or a `test_key` not among the run's tests. */
  unnamedFlags: number;
};

/** A simulated test as the parser reports it (statuses, attempts and durations as toRunSummary gives them). */
function reportCase(test: SimTest, decimals: number): ReportCase {
  const ms = (value: number) => parseSeconds(formatSeconds(value, decimals));
  return {
    name: test.name,
    classname: test.classname,
    file: null,
    status: test.status,
    durationMs: ms(test.durationMs),
    attempts: test.attempts.map((attempt) => ({ status: attempt.status, durationMs: ms(attempt.durationMs), failureMessage: null })),
  };
}

/**
 * Replays a stream's runs through the health rules. `summaries` (toRunSummary of each run, in
 * order) may be passed when the caller has them; `defaultBranch` is the project's configured one
 * (null: main, master and runs without a branch).
 */
export function replayHealth(
  runs: readonly SimRun[],
  options: { summaries?: readonly RunSummary[]; defaultBranch?: string | null } = {},
): HealthReplay {
  const byIdentity = new Map<string, TestProgress>();
  const keyOf = new Map<string, string>();
  const healthAfter: Map<string, TestHealth>[] = [];
  const transitions: ReplayedTransition[] = [];
  let unnamedFlags = 0;
  const flakiness = inMemoryCheck(flakinessCheck);
  let checkState = flakiness.initialState();

  runs.forEach((run, i) => {
    const summary = options.summaries?.[i] ?? toRunSummary(run, options.defaultBranch ? { defaultBranch: options.defaultBranch } : {});
    const context: RunContext = {
      runId: run.number,
      number: run.number,
      createdAt: new Date(run.created_at),
      commitSha: run.commit_sha,
      onDefaultBranch: isDefaultBranch(run.branch, options.defaultBranch ?? null),
    };

    // Run processing: every test of the run, advanced once.
    const executions = new TestExecutions();
    const identities = new Map<string, string>();
    for (const test of run.tests) {
      executions.add(test.suite, reportCase(test, run.time_decimals));
      const identity = testIdentityKey({ classname: test.classname, file: null, name: test.name });
      identities.set(test.key, identity);
      keyOf.set(identity, test.key);
    }
    const advancing = [...executions.byIdentity].map(([identity, execution]) => ({
      identity,
      execution,
      previous: byIdentity.get(identity) ?? null,
    }));
    advanceRun(advancing, context).forEach(({ progress, change }, index) => {
      const { identity } = advancing[index]!;
      byIdentity.set(identity, progress);
      if (change) transitions.push({ test: keyOf.get(identity)!, run: run.number, ...change, by: "run" });
    });

    // The flakiness check, then its flags: every test it flagged at this run (alert-checks.ts).
    const { state } = flakiness.update(checkState, summary);
    const written = new Map<string, FlakinessTestState>();
    for (const test of summary.tests)
      if (state.tests[test.key] !== checkState.tests[test.key] && state.tests[test.key]) written.set(test.key, state.tests[test.key]!);
    checkState = state;
    for (const { key, rule } of flaggedInRun(written, run.number)) {
      const identity = identities.get(key);
      const row = identity === undefined ? undefined : byIdentity.get(identity);
      if (identity === undefined || row === undefined) {
        unnamedFlags++;
        continue;
      }
      const { progress, change } = flagTestFlaky(row, context, `the flakiness check flagged it (${rule})`);
      byIdentity.set(identity, progress);
      if (change) transitions.push({ test: keyOf.get(identity)!, run: run.number, ...change, by: "flakiness_check" });
    }

    const after = new Map<string, TestHealth>();
    for (const [key, identity] of identities) after.set(key, byIdentity.get(identity)!.health);
    healthAfter.push(after);
  });

  const rows = new Map<string, TestProgress>();
  for (const [identity, progress] of byIdentity) rows.set(keyOf.get(identity)!, progress);
  return { healthAfter, transitions, rows, unnamedFlags };
}
