/**
 * `skipped_test_count_creep` (docs/alert-checks.md#skipped_test_count_creep): the number of skipped tests has grown and stayed
 * grown. Events name the tests that became skipped.
 *
 * Default-branch runs only; runs with no test cases are ignored. Infra-suspect runs count like
 * any other (the guard is about failures, not skips). Per run: s = skipped count, N = all test
 * cases including skipped (`counts.tests`, or the sum of the status counts if larger), r = s / N.
 *
 * State: a ring buffer of the last 30 (run number, s, N); a ratchet baseline B_s, B_r with the run
 * number it was set at, initialised at the 10th run to the medians of the first 10 (nothing is
 * evaluated before the 11th run: the baseline must exist before the run that is judged); the keys
 * of the tests skipped at the baseline (≤ 2,000 sorted keys, else only their count).
 *
 * Trigger, with T = max(m, ⌈0.2·B_s⌉) and L = median of the last 5 s, where m = 5, or 10 % of a
 * suite of fewer than 50 tests (median N of the last 5 runs), but never below 2:
 * - L − B_s ≥ T, and median of the last 5 r − B_r ≥ 0.01;
 * - persistence: each of the last 3 runs has s ≥ B_s + T (a one-run whole-suite skip never fires).
 * Mann–Kendall (S, one-sided p) and the Sen slope over the ring buffer only label the event:
 * `gradual` when MK p < 0.05 and no single run-to-run jump since the baseline run is ≥ 80 % of
 * L − B_s, else `step`.
 *
 * On an event the ratchet moves up: B_s ← L, B_r ← median of the last 5 r, and the baseline key
 * set becomes this run's skipped tests, so the next event needs a further T. When s stays below
 * B_s for 10 runs in a row, the ratchet moves down to the medians of those 10 runs (and the key
 * set to this run's), so regrowth alerts again.
 *
 * The initial key set is the skipped tests of the run with the fewest skips among the first 10
 * (the latest on ties): a transient skip during those runs does not hide its tests later.
 *
 * Cost per run: O(tests in the run + 30²) (the key set is a sorted array searched by binary
 * search); state bounded by 30 × 3 numbers and 2,000 keys. No clock.
 */
import { mannKendall, median, senSlope } from "./statistics";
import type { Check, CheckEvent, CheckPass, RunHeader, RunTest } from "./types";
import { cap, round } from "./metadata-format";

const SKIPPED_CREEP_DETECTOR_VERSION = "skipped_test_count_creep/2";

const BUFFER = 30;
const INIT_RUNS = 10;
const LEVEL_RUNS = 5;
const PERSIST_RUNS = 3;
const MIN_ABS_INCREASE = 5;
const MIN_ABS_INCREASE_SMALL_SUITE = 2;
const SMALL_SUITE_SHARE = 0.1;
const MIN_REL_INCREASE = 0.2;
const MIN_RATIO_INCREASE = 0.01;
const LOWER_AFTER_RUNS = 10;
const MK_ALPHA = 0.05;
const STEP_SHARE = 0.8;
const MAX_KEYS = 2000;
const NEWLY_SKIPPED_LIST = 50;
const MAX_STRING = 500;

export type SkippedCreepState = {
  /** State schema version (2: `keys` are the tests' identities; version 1 had the keys of suite, classname and name). */
  v: 2;
  /** Default-branch runs with test cases processed. */
  runs: number;
  /** Ring buffer, oldest first, ≤ 30: run numbers, skipped counts, total test cases. */
  num: number[];
  sk: number[];
  tot: number[];
  /** Ratchet baseline (null until the 10th run): skipped count, skipped ratio, run number it was set at. */
  bs: number | null;
  br: number | null;
  brun: number | null;
  /** Consecutive runs with s < B_s (lowers the ratchet at 10). */
  low: number;
  /** Sorted keys of the tests skipped at the baseline, or null when there were more than 2,000. */
  keys: string[] | null;
  /** How many tests were skipped at the baseline (the length of `keys` when they are kept). */
  kc: number;
  /** Before the baseline exists: the skipped count of the run `keys` was taken from. */
  ks: number | null;
};

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sortedHas(sorted: readonly string[], key: string): boolean {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const cmp = compareKeys(sorted[mid]!, key);
    if (cmp === 0) return true;
    if (cmp < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** Skipped tests of a chunk (one per key; a key is skipped if no case of it executed), sorted by key. */
function skippedTests(tests: readonly RunTest[]): { key: string; name: string }[] {
  const byKey = new Map<string, { key: string; name: string; skipped: boolean }>();
  for (const test of tests) {
    const existing = byKey.get(test.key);
    const skipped = test.status === "skipped";
    if (!existing) byKey.set(test.key, { key: test.key, name: test.name, skipped });
    else existing.skipped = existing.skipped && skipped;
  }
  return [...byKey.values()].filter((entry) => entry.skipped).sort((a, b) => compareKeys(a.key, b.key));
}

/**
 * What the check keeps of a run's skipped tests, chunk by chunk: their count, their keys while
 * there are at most 2,000 (the baseline's key set), and against the baseline's keys the newly
 * skipped ones (the first 50 names and the count) and how many of its keys are still skipped.
 */
type SkippedTally = { count: number; keys: string[] | null; newlyNames: string[]; newlyCount: number; stillSkipped: number };

function tallySkipped(tally: SkippedTally, tests: readonly RunTest[], baselineKeys: readonly string[] | null): void {
  for (const entry of skippedTests(tests)) {
    tally.count++;
    if (tally.keys !== null) {
      if (tally.keys.length < MAX_KEYS) tally.keys.push(entry.key);
      else tally.keys = null;
    }
    if (baselineKeys === null) continue;
    if (sortedHas(baselineKeys, entry.key)) tally.stillSkipped++;
    else {
      if (tally.newlyNames.length < NEWLY_SKIPPED_LIST) tally.newlyNames.push(cap(entry.name, MAX_STRING) as string);
      tally.newlyCount++;
    }
  }
}

function snapshot(tally: SkippedTally): { keys: string[] | null; kc: number } {
  return { keys: tally.keys, kc: tally.count };
}

function ratios(sk: number[], tot: number[]): number[] {
  return sk.map((s, i) => s / tot[i]!);
}

/** The smallest rise in skipped tests that counts: 5, or 10 % of a smaller suite (at least 2: one skip is never creep). */
function minimumIncrease(suiteSize: number): number {
  return Math.min(MIN_ABS_INCREASE, Math.max(MIN_ABS_INCREASE_SMALL_SUITE, Math.ceil(SMALL_SUITE_SHARE * suiteSize - 1e-9)));
}

function threshold(bs: number, minIncrease: number): number {
  return Math.max(minIncrease, Math.ceil(MIN_REL_INCREASE * bs - 1e-9));
}

// ---------------------------------------------------------------------------------------------
// The check

function initialState(): SkippedCreepState {
  return { v: 2, runs: 0, num: [], sk: [], tot: [], bs: null, br: null, brun: null, low: 0, keys: [], kc: 0, ks: null };
}

function isValidState(state: unknown): state is SkippedCreepState {
  return hasShape(state, 2);
}

function hasShape(state: unknown, version: 1 | 2): boolean {
  if (typeof state !== "object" || state === null) return false;
  const s = state as Partial<SkippedCreepState> & { v?: number };
  return (
    s.v === version &&
    typeof s.runs === "number" &&
    Array.isArray(s.num) &&
    Array.isArray(s.sk) &&
    Array.isArray(s.tot) &&
    s.num.length === s.sk.length &&
    s.sk.length === s.tot.length &&
    typeof s.low === "number" &&
    typeof s.kc === "number" &&
    (s.keys === null || Array.isArray(s.keys))
  );
}

/** No per-test entries: the baseline's skipped tests are a bounded list (≤ 2,000 keys). The decision needs only the first pass. */
function start(input: SkippedCreepState, run: RunHeader): CheckPass<SkippedCreepState, never> {
  const state = isValidState(input) ? input : initialState();
  const tally: SkippedTally = { count: 0, keys: [], newlyNames: [], newlyCount: 0, stillSkipped: 0 };
  let result: { state: SkippedCreepState; events: CheckEvent[] } = { state, events: [] };
  return {
    observe(tests) {
      tallySkipped(tally, tests, state.bs === null || state.br === null ? null : state.keys);
    },
    decide() {
      result = decide(state, run, tally);
    },
    write: () => new Map<string, never>(),
    finish: () => result,
  };
}

function decide(state: SkippedCreepState, run: RunHeader, tally: SkippedTally): { state: SkippedCreepState; events: CheckEvent[] } {
  if (!run.onDefaultBranch) return { state, events: [] };
  const { counts } = run;
  const total = Math.max(counts.tests, counts.passed + counts.failed + counts.errored + counts.skipped);
  if (total <= 0) return { state, events: [] };
  const s = counts.skipped;

  const runs = state.runs + 1;
  const num = [...state.num, run.number].slice(-BUFFER);
  const sk = [...state.sk, s].slice(-BUFFER);
  const tot = [...state.tot, total].slice(-BUFFER);

  let { bs, br, brun, low, keys, kc, ks } = state;
  const events: CheckEvent[] = [];

  if (bs === null || br === null) {
    // Initialisation: remember the key set of the least-skipped run so far.
    if (ks === null || s <= ks) {
      ({ keys, kc } = snapshot(tally));
      ks = s;
    }
    if (runs >= INIT_RUNS) {
      const first = sk.slice(-INIT_RUNS);
      bs = median(first);
      br = median(ratios(first, tot.slice(-INIT_RUNS)));
      brun = run.number;
      ks = null;
    }
    return { state: { v: 2, runs, num, sk, tot, bs, br, brun, low, keys, kc, ks }, events };
  }

  const minIncrease = minimumIncrease(median(tot.slice(-LEVEL_RUNS)));
  const t = threshold(bs, minIncrease);
  const lastS = sk.slice(-LEVEL_RUNS);
  const lastR = ratios(lastS, tot.slice(-LEVEL_RUNS));
  const level = median(lastS);
  const levelRatio = median(lastR);
  const persistent = sk.length >= PERSIST_RUNS && sk.slice(-PERSIST_RUNS).every((value) => value >= bs! + t);

  if (level - bs >= t && levelRatio - br >= MIN_RATIO_INCREASE && persistent) {
    const delta = level - bs;
    const mk = mannKendall(sk);
    const slope = senSlope(sk);
    let maxJump = 0;
    for (let i = 1; i < sk.length; i++) {
      if (brun !== null && num[i]! <= brun) continue;
      maxJump = Math.max(maxJump, sk[i]! - sk[i - 1]!);
    }
    const pattern = mk.pIncreasing < MK_ALPHA && maxJump < STEP_SHARE * delta ? "gradual" : "step";
    const exact = keys !== null;
    events.push({
      metadata: {
        subject: "run",
        run_number: run.number,
        skipped_count: s,
        total_tests: total,
        skipped_ratio: round(s / total, 4),
        baseline_skipped_count: bs,
        baseline_ratio: round(br, 4),
        baseline_run_number: brun,
        delta,
        rel_delta: bs > 0 ? round(delta / bs, 4) : null,
        window_runs: sk.length,
        mann_kendall_s: mk.s,
        mann_kendall_p: mk.pIncreasing,
        sen_slope_per_run: round(slope, 4),
        pattern,
        newly_skipped_tests: exact ? tally.newlyNames : [],
        newly_skipped_count: exact ? tally.newlyCount : Math.max(0, tally.count - kc),
        newly_skipped_exact: exact,
        newly_unskipped_count: exact ? keys!.length - tally.stillSkipped : null,
        statistic: "median_last_5_skipped_vs_ratchet_baseline",
        observed: level,
        threshold: bs + t,
        thresholds: {
          min_increase: minIncrease,
          min_relative_increase: MIN_REL_INCREASE,
          min_ratio_increase: MIN_RATIO_INCREASE,
          level_runs: LEVEL_RUNS,
          persistence_runs: PERSIST_RUNS,
        },
        detector_version: SKIPPED_CREEP_DETECTOR_VERSION,
      },
    });
    bs = level;
    br = levelRatio;
    brun = run.number;
    ({ keys, kc } = snapshot(tally));
    low = 0;
  } else {
    low = s < bs ? low + 1 : 0;
    if (low >= LOWER_AFTER_RUNS) {
      const window = sk.slice(-LOWER_AFTER_RUNS);
      bs = median(window);
      br = median(ratios(window, tot.slice(-LOWER_AFTER_RUNS)));
      brun = run.number;
      ({ keys, kc } = snapshot(tally));
      low = 0;
    }
  }

  return { state: { v: 2, runs, num, sk, tot, bs, br, brun, low, keys, kc, ks }, events };
}

/** Version 1: the same state with old keys; keys whose test is gone are dropped (their count stays in `kc`). */
function fromLegacy(
  legacy: unknown,
  rekey: (oldKey: string) => string | null,
): { state: SkippedCreepState; tests: Map<string, never> } | null {
  if (!hasShape(legacy, 1)) return null;
  const old = legacy as Omit<SkippedCreepState, "v">;
  const keys = old.keys === null ? null : [...new Set(old.keys.map(rekey).filter((key): key is string => key !== null))].sort(compareKeys);
  return { state: { ...old, v: 2, keys }, tests: new Map<string, never>() };
}

export const skippedCreepCheck: Check<SkippedCreepState> = {
  version: SKIPPED_CREEP_DETECTOR_VERSION,
  initialState,
  start,
  fromLegacy,
};
