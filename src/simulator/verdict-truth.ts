/**
 * What each failure of a simulated run truly is, against the run its verdict compares it with
 * (docs/verdicts.md): ground truth for the verdicts, shared by the verdict scenario family
 * (verdict-streams.ts) and the checks' streams (streams.ts, through their failure causes).
 *
 * A failure is *truly new* when its cause is a regression that the run's code has and its base's
 * code has not: a breakage introduced on the run's feature branch, or on the default branch
 * after the base run. Nothing else is: a flaky test's failure, a failure the environment forced on
 * the run (an outage, a spike: a same-commit re-run does not have it), a breakage already in the
 * base. The verdict a failure should get (`expected`) is the one the rules of issue 28 call for,
 * applied to what truly happened, in the documented order where two apply: quarantined, then
 * infrastructure, then new (truly new), then failing_on_base (the base run failed it too, or its
 * breakage is in the base), then flaky.
 */
import type { Verdict } from "../lib/vocabulary";
import { breakageEpisodes } from "./ground-truth";
import type { FailureCause, FailureCauses, SimRun, SimStream, SimTest } from "./stream-types";

/** One failure of a run: a test that failed or errored, or passed after a failed attempt (it gets a verdict too). */
export type FailureTruth = {
  key: string;
  expected: Verdict;
  trulyNew: boolean;
  /** Why it failed, in the generator's words (FailureCause, or the verdict family's causes). */
  cause: string;
};

export type RunTruth = {
  /** The run's number in the stream (= the service's number in a fresh project). */
  number: number;
  /** The run it should be compared with (its number), or null: none. */
  baseNumber: number | null;
  failures: FailureTruth[];
  /** Tests that failed or errored in the base run and pass in this one, no attempt failed: the fixed list. */
  fixed: string[];
  /** The environment failed the run wholesale: it is never a base (its failures say nothing of the code). */
  massFailure: boolean;
};

/** Failed or errored now, or passed after a failed attempt: a case that gets a verdict. */
export const hasVerdict = (test: SimTest) => test.status === "failed" || test.status === "errored" || test.attempts.length > 0;

/** Keys of the tests that failed or errored in a run. */
export function failingKeys(run: SimRun | null): Set<string> {
  const keys = new Set<string>();
  for (const test of run?.tests ?? []) if (test.status === "failed" || test.status === "errored") keys.add(test.key);
  return keys;
}

/** Tests that failed in the base and pass here, with no failed attempt (run_fixed_tests' rule). */
export function fixedKeys(run: SimRun, base: SimRun | null): string[] {
  const failedInBase = failingKeys(base);
  return run.tests.filter((t) => t.status === "passed" && t.attempts.length === 0 && failedInBase.has(t.key)).map((t) => t.key);
}

/**
 * The verdict the rules call for, from the truth. `massFailure`: the run is one where most tests
 * fail with one error; `inBase`: the base run failed this test too, or its breakage is in the base.
 */
export function expectedVerdict(facts: {
  quarantined: boolean;
  massFailure: boolean;
  trulyNew: boolean;
  inBase: boolean;
  environment: boolean;
}): Verdict {
  if (facts.quarantined) return "quarantined";
  if (facts.massFailure || facts.environment) return "infrastructure";
  if (facts.trulyNew) return "new";
  if (facts.inBase) return "failing_on_base";
  return "flaky";
}

const ENVIRONMENT: ReadonlySet<FailureCause> = new Set(["outage", "spike"]);

/**
 * Whether the environment failed a run wholesale, by the true causes and the numbers of the
 * service's rule (docs/verdicts.md): at least 20 of its failures the environment's, and they are
 * at least 80 % of its failures or at least half its executed tests; or, on the default branch, a
 * burst: at least 10 of them, and at least 8 % of its executed tests (the service's "8 × the usual
 * share", the usual share of these streams' default-branch runs being about 1 % at most).
 */
function environmentMassFailure(run: SimRun, causes: Map<string, FailureCause> | undefined): boolean {
  const failing = run.tests.filter((t) => t.status === "failed" || t.status === "errored");
  const environment = failing.filter((t) => ENVIRONMENT.has(causes?.get(t.key) ?? "pool")).length;
  const executed = run.tests.filter((t) => t.status !== "skipped").length;
  if (run.branch === "main" && environment >= 10 && environment >= 0.08 * executed) return true;
  return environment >= 20 && (environment >= 0.8 * failing.length || environment >= 0.5 * executed);
}

/**
 * The truth of every run of one of the checks' streams, uploaded in number order without a base
 * commit: each run's base is the latest default-branch run before it that the environment did not
 * fail wholesale (previous_default on the default branch, latest_default_before elsewhere). Truly
 * new: a feature branch's own breakage, or a default-branch breakage that started after the base
 * run. A spike's or an outage's failure is the environment's (expected `infrastructure`, whether or
 * not the run is a mass failure).
 */
export function streamVerdictTruth(stream: Pick<SimStream, "runs">, causes: FailureCauses): RunTruth[] {
  const started = new Map<string, { start: number; end: number }[]>();
  for (const episode of breakageEpisodes(stream)) {
    const list = started.get(episode.test) ?? [];
    list.push({ start: episode.start, end: episode.fixedAt ?? Number.POSITIVE_INFINITY });
    started.set(episode.test, list);
  }
  const breakageStart = (key: string, run: number) => started.get(key)?.find((e) => run >= e.start && run < e.end)?.start ?? 0;
  const truths: RunTruth[] = [];
  let base: SimRun | null = null;
  for (const run of stream.runs) {
    const failedInBase = failingKeys(base);
    const runCauses = causes.get(run.number);
    const failures: FailureTruth[] = [];
    for (const test of run.tests) {
      if (!hasVerdict(test)) continue;
      const cause = runCauses?.get(test.key);
      if (!cause) throw new Error(`run ${run.number}: no cause recorded for ${test.key}`);
      const introduced = cause === "branch_breakage" || (cause === "breakage" && breakageStart(test.key, run.number) > (base?.number ?? 0));
      const inBase = failedInBase.has(test.key) || (cause === "breakage" && !introduced) || cause === "always_failing";
      const environment = ENVIRONMENT.has(cause);
      failures.push({
        key: test.key,
        expected: expectedVerdict({ quarantined: false, massFailure: false, trulyNew: introduced, inBase, environment }),
        trulyNew: introduced,
        cause,
      });
    }
    const massFailure = environmentMassFailure(run, runCauses);
    truths.push({ number: run.number, baseNumber: base?.number ?? null, failures, fixed: fixedKeys(run, base), massFailure });
    if (run.branch === "main" && !massFailure) base = run;
  }
  return truths;
}
