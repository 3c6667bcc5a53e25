/**
 * Scoring of stored verdicts (docs/verdicts.md) against a simulated stream's truth
 * (src/simulator/verdict-truth.ts), for `npm run bench:detection`'s verdict section and its test.
 *
 * Unit: one failure of a run (a test that failed or errored, or passed after a failed attempt),
 * which the service gives exactly one verdict.
 * - Precision of `new`: of the failures called `new`, the share truly new.
 * - Recall of `new`: of the truly new failures, the share called `new`.
 * - Per verdict: the verdict the rules call for (`expected`) against the stored one, and the true
 *   cause against the stored verdict.
 * - Fixed: the stored fixed list against the tests that failed in the true base run and pass.
 * - Base: the stored base run against the true one.
 */
import type { SimRun } from "../src/simulator/stream-types";
import type { RunTruth } from "../src/simulator/verdict-truth";
import type { StoredComparison } from "../src/simulator/verdict-replay";

type Table = Map<string, Map<string, number>>;

export type VerdictScore = {
  streams: number;
  runs: number;
  failures: number;
  /** Failures called `new`, truly new failures, and both (the numerator of precision and recall). */
  newVerdicts: number;
  trulyNew: number;
  newAndTrulyNew: number;
  /** expected → stored verdict → failures. */
  byExpected: Table;
  /** true cause → stored verdict → failures. */
  byCause: Table;
  /** Failures with no stored verdict, and stored verdicts of no failure (both should be 0). */
  unmatched: { missing: number; extra: number };
  /** `afterMassFailure`: true fixed entries whose base run was a mass failure (its error, not a broken test). */
  fixed: { truth: number; stored: number; agree: number; afterMassFailure: number };
  base: { runs: number; agree: number };
  /** Truly new failures not called `new`, by the stored verdict and the kind of its reason. */
  missedNew: Map<string, number>;
  /** `new` verdicts of failures not truly new, by true cause. */
  falseNew: Map<string, number>;
  /**
   * What a rule "failed on the default branch within its last 50 default-branch runs, passed in the
   * base → flaky" would do (not a rule of the service): false `new` verdicts it would turn, truly
   * new failures called `new` it would lose.
   */
  recentlyFailed: { falseNew: number; trueNew: number };
  /** A few misses of `new` (either way), SAMPLES_PER_KIND of each kind (cause → verdict), for the report's analysis. */
  samples: string[];
  sampledKinds: Map<string, number>;
};

const SAMPLES_PER_KIND = 3;

export const newVerdictScore = (): VerdictScore => ({
  streams: 0,
  runs: 0,
  failures: 0,
  newVerdicts: 0,
  trulyNew: 0,
  newAndTrulyNew: 0,
  byExpected: new Map(),
  byCause: new Map(),
  unmatched: { missing: 0, extra: 0 },
  fixed: { truth: 0, stored: 0, agree: 0, afterMassFailure: 0 },
  base: { runs: 0, agree: 0 },
  missedNew: new Map(),
  falseNew: new Map(),
  recentlyFailed: { falseNew: 0, trueNew: 0 },
  samples: [],
  sampledKinds: new Map(),
});

/** The kind of a stored reason (docs/verdicts.md's reasons), for the table of missed `new` verdicts. */
function reasonKind(verdict: string, reason: string | undefined): string {
  if (reason === undefined) return verdict;
  if (reason.startsWith("mass failure") || reason.startsWith("one cause")) return `${verdict}: inside a mass failure`;
  if (reason.startsWith("also failed on")) return `${verdict}: failed in the base run too`;
  if (reason.startsWith("broken on")) return `${verdict}: broken on the default branch`;
  if (reason.startsWith("flaky since")) return `${verdict}: known as flaky`;
  if (reason.startsWith("failed, then passed")) return `${verdict}: passed on retry`;
  return `${verdict}: ${reason.replace(/[:(].*$/, "").trim()}`;
}

/**
 * Run number → keys of the tests that failed on the default branch within their last `window`
 * default-branch executions before that run (what the tests' `window_outcomes` hold when it arrives).
 */
export function failedOnMainBefore(runs: readonly SimRun[], window = 50): Map<number, Set<string>> {
  const outcomes = new Map<string, boolean[]>();
  const result = new Map<number, Set<string>>();
  for (const run of runs) {
    const failed = new Set<string>();
    for (const test of run.tests) if (outcomes.get(test.key)?.includes(true)) failed.add(test.key);
    result.set(run.number, failed);
    if (run.branch !== "main") continue;
    for (const test of run.tests) {
      if (test.status === "skipped") continue;
      const list = outcomes.get(test.key) ?? [];
      list.push(test.status !== "passed");
      if (list.length > window) list.shift();
      outcomes.set(test.key, list);
    }
  }
  return result;
}

function add(counts: Map<string, number>, key: string, n = 1): void {
  counts.set(key, (counts.get(key) ?? 0) + n);
}

function count(table: Table, row: string, column: string, n = 1): void {
  const cells = table.get(row) ?? new Map<string, number>();
  cells.set(column, (cells.get(column) ?? 0) + n);
  table.set(row, cells);
}

/** Adds one stream's runs (those `scored` keeps) to `score`. `label` names the stream in samples. */
export function scoreVerdicts(
  score: VerdictScore,
  truth: readonly (RunTruth & { scored?: boolean })[],
  stored: readonly StoredComparison[],
  label: string,
  recentFailures?: Map<number, Set<string>>,
): void {
  const storedByNumber = new Map(stored.map((s) => [s.number, s]));
  const massFailures = new Set(truth.filter((t) => t.massFailure).map((t) => t.number));
  const sampled = score.sampledKinds;
  score.streams++;
  for (const run of truth) {
    if (run.scored === false) continue;
    const comparison = storedByNumber.get(run.number);
    score.runs++;
    score.base.runs++;
    if (comparison && comparison.baseNumber === run.baseNumber) score.base.agree++;
    const verdicts = comparison?.verdicts ?? new Map();
    for (const failure of run.failures) {
      const verdict = verdicts.get(failure.key)?.verdict ?? "(none)";
      if (verdict === "(none)") score.unmatched.missing++;
      score.failures++;
      count(score.byExpected, failure.expected, verdict);
      count(score.byCause, failure.cause, verdict);
      if (verdict === "new") score.newVerdicts++;
      if (failure.trulyNew) score.trulyNew++;
      if (verdict === "new" && failure.trulyNew) score.newAndTrulyNew++;
      if (failure.trulyNew && verdict !== "new") add(score.missedNew, reasonKind(verdict, verdicts.get(failure.key)?.reason));
      if (!failure.trulyNew && verdict === "new") add(score.falseNew, failure.cause);
      if (verdict === "new" && recentFailures?.get(run.number)?.has(failure.key)) {
        if (failure.trulyNew) score.recentlyFailed.trueNew++;
        else score.recentlyFailed.falseNew++;
      }
      const pair = `${failure.trulyNew ? "truly new" : failure.cause} → ${verdict}`;
      if ((verdict === "new") !== failure.trulyNew && (sampled.get(pair) ?? 0) < SAMPLES_PER_KIND) {
        sampled.set(pair, (sampled.get(pair) ?? 0) + 1);
        const why = verdicts.get(failure.key)?.reason ?? "no verdict";
        score.samples.push(`${label} run ${run.number} ${failure.key.replace(/\u001f/g, " › ")}: ${failure.cause}, ${pair} (${why})`);
      }
    }
    const keys = new Set(run.failures.map((f) => f.key));
    for (const key of verdicts.keys()) if (!keys.has(key)) score.unmatched.extra++;
    const fixed = comparison?.fixed ?? new Set<string>();
    score.fixed.truth += run.fixed.length;
    score.fixed.stored += fixed.size;
    score.fixed.agree += run.fixed.filter((key) => fixed.has(key)).length;
    if (run.baseNumber !== null && massFailures.has(run.baseNumber)) score.fixed.afterMassFailure += run.fixed.length;
  }
}

/** `n of d` with the share, e.g. "412 of 420 (0.981)". */
export function shareText(n: number, d: number): string {
  return d === 0 ? "n/a (0 of 0)" : `${(n / d).toFixed(3)} (${n.toLocaleString("en-US")} of ${d.toLocaleString("en-US")})`;
}

export const precisionOfNew = (s: VerdictScore) => (s.newVerdicts === 0 ? Number.NaN : s.newAndTrulyNew / s.newVerdicts);
export const recallOfNew = (s: VerdictScore) => (s.trulyNew === 0 ? Number.NaN : s.newAndTrulyNew / s.trulyNew);

/** Sums scores (the overall figures). */
export function mergeScores(scores: readonly VerdictScore[]): VerdictScore {
  const total = newVerdictScore();
  for (const s of scores) {
    for (const key of ["streams", "runs", "failures", "newVerdicts", "trulyNew", "newAndTrulyNew"] as const) total[key] += s[key];
    for (const [table, from] of [
      [total.byExpected, s.byExpected],
      [total.byCause, s.byCause],
    ] as const)
      for (const [row, cells] of from) for (const [column, n] of cells) count(table, row, column, n);
    for (const [kind, n] of s.missedNew) add(total.missedNew, kind, n);
    for (const [cause, n] of s.falseNew) add(total.falseNew, cause, n);
    total.recentlyFailed.falseNew += s.recentlyFailed.falseNew;
    total.recentlyFailed.trueNew += s.recentlyFailed.trueNew;
    total.unmatched.missing += s.unmatched.missing;
    total.unmatched.extra += s.unmatched.extra;
    total.fixed.truth += s.fixed.truth;
    total.fixed.stored += s.fixed.stored;
    total.fixed.agree += s.fixed.agree;
    total.fixed.afterMassFailure += s.fixed.afterMassFailure;
    total.base.runs += s.base.runs;
    total.base.agree += s.base.agree;
  }
  return total;
}
