/**
 * `performance_regression` (docs/alert-checks.md#performance_regression): a sustained step up in run duration, or in the
 * duration of one of the project's slowest tests.
 *
 * Series (default-branch runs only; infra-suspect runs are skipped entirely, see judgeInfra: the
 * guard judges the tests that newly fail, remembered per test in an entry stored in the test's row:
 * the eligible-run count at the test's last default-branch execution · 2 + 1 if it failed; a
 * suspect run only records tests that have none yet; at each membership recomputation (every 50
 * eligible runs) entries older than 200 eligible runs start to count as absent. So a project where
 * half the tests fail in every run has its durations watched, where the counts alone made every
 * run look like an outage):
 * - S0, the run duration (`RunSummary.durationMs`; runs without a positive duration add no point);
 * - one series per monitored test: its duration in runs where its final status is `passed`
 *   (a failing test's time measures a timeout or an early abort, not its speed); duplicate keys
 *   within a run are summed (unmerged parametrised cases of one test).
 *
 * Each series keeps a ring buffer of its last log(duration ms) values (40 per test, 72 for the run
 * series; rounded to 1e-6, i.e. one part in a million of the duration), their run numbers (stored
 * as ages relative to the newest point, so the stored digits do not grow with history), and the
 * index where its current segment starts. A series is evaluated once its segment holds ≥ 23
 * points: recent R = the last 8 points, baseline B = the up to 30 segment points before them
 * (≥ 15). It trips only when all of these hold:
 * - rel = exp(median_R − median_B) − 1 ≥ 0.10 (run) / 0.25 (test);
 * - Δ = exp(median_R) − exp(median_B) ≥ 10 s (run) / 0.1 s (test);
 * - median_R − median_B ≥ 1.0 × 1.4826·MAD_B, in log space;
 * - one-sided Mann–Whitney U p ≤ α, α = 1e-3 (run) / 1e-3 / m (test, Bonferroni over the m
 *   monitored tests). The U test is exact (the permutation distribution, conditional on ties; see
 *   statistics.ts) because the normal approximation cannot reach 1e-3/m with 15 vs 8 points.
 * The cheap conditions are checked first, so the U test runs only for candidate series.
 * A second, long window runs when the short one does not trip, with half the relative change,
 * half the floor, half a MAD and α/10 (`window_kind` in the event): for a test, the last 20 points
 * against up to 20 before them (≥ 15); for the run series, the last 24 against up to 48 before
 * them (≥ 20). It finds +10 % steps and slow drifts that 8 points cannot show (simulated corpus,
 * 20 vs 20 for both: small-anomaly recall 0.54 → 0.63, false events 0.36 → 0.46 per 1,000 clean
 * runs; the run series' 24 vs 48: small recall 0.63 → 0.78, false events 0.46 → 0.67, see
 * RUN_LONG_WINDOW). The normal approximation screens series before the exact U test (far-tail
 * safety is in the statistics tests).
 * Persistence: a series trips only when all conditions hold at two of its points in a row (the
 * mark `c` remembers the first). A chance excursion of the sliding 8-point window rarely lasts
 * two points; a real step does, so detection costs one run more. Measured on the simulated corpus
 * (`npm run bench:detection`): false events per 1,000 clean runs 1.45 → 0.36, precision
 * 0.82 → 0.94, large-anomaly recall 1.00 → 0.96, small 0.64 → 0.54.
 * On a trip the segment restarts at the first recent point (baseline reset): the series cannot
 * trip again until 23 points of the new level have accumulated, and then only on a further step
 * (the run series' long window needs 44).
 * Medians are of log values, so `median_ms` = exp(median of logs): the plain median for an odd
 * count, the geometric mean of the two middle values for an even one.
 *
 * Monitored tests (m ≤ 100): recomputed at the first eligible run and then every 50 eligible runs
 * (default-branch, not infra-suspect). Candidates are the current members seen in the last 50
 * eligible runs (scored by the median of their last ≤ 30 points, ranked with a +10 % incumbency
 * bonus so members near the cut-off do not churn and lose their history) and a challenger pool
 * of ≤ 100 other passed tests that took ≥ 0.5 s at least once since the last recomputation
 * (scored by the median of their last ≤ 5 values, all of which count once they are in; when the
 * pool is full, a slower newcomer replaces its fastest entry; ≥ 3 values needed, 1 at the very
 * first run). The top 100 by score with a median ≥ 0.5 s are monitored; newcomers start with
 * empty buffers.
 *
 * At most 20 events per run: the run series first, then tests by p-value. Tests tripped beyond
 * the cap are listed (≤ 50, with their medians) on the last event as `more_regressed_tests`, with
 * `more_regressed_count`, and reset like the reported ones.
 *
 * Event metadata: `baseline`/`recent` give run-number ranges, sizes and medians (ms);
 * `baseline.mad_ms` is the plain MAD of the baseline durations, `baseline.mad_log` the MAD the
 * trigger uses; `effect_size_mads` = (median_R − median_B) / (1.4826·MAD_log), null when the MAD
 * is 0; `observed` is the recent median and `threshold` the smallest recent median that would pass
 * the magnitude conditions (ms; significance is `p_value` vs `alpha`); `monitored_series` is m,
 * the number of monitored tests, on run and test events alike. Run events add `top_contributors`:
 * the ≤ 5 monitored tests whose median rose most between the run series' baseline and recent
 * run ranges (≥ 3 points in each).
 *
 * State: ≤ 100 test series × 40 points, the run series × 72, a pool of ≤ 100 × 5 values, and
 * per test the guard's memory (one number in the test's row, of which a run reads its own tests').
 * A run's tests are read in chunks, twice (CheckPass): the first pass keeps the guard's two counts
 * and the passed durations of at most 300 tests (the monitored ones, the pool's, and the 100
 * slowest newcomers: no other test can enter the pool, see `newcomerRoom`), the decision does the
 * rest, and the second pass writes each chunk's guard memory. O(tests in the run · log 100 +
 * 100 · 40 log 40 + 72 log 72) per run, whatever the history length. No clock: run numbers are the only positions used.
 */
import { MAD_TO_SIGMA, mad, mannWhitneyUGreater, mannWhitneyUGreaterApproximateP, median } from "./statistics";
import {
  type Check,
  type CheckEvent,
  type CheckPass,
  type PersistentCount,
  type RunHeader,
  type RunTest,
  type TestEntries,
  countPersistent,
  judgeInfraCounts,
  recordsOutcome,
} from "./types";
import { cap, round } from "./metadata-format";

const PERFORMANCE_REGRESSION_DETECTOR_VERSION = "performance_regression/3";

/** Ring length of a test series; the run series keeps RUN_BUFFER points (its long window is longer). */
const BUFFER = 40;
const RECENT_SHORT = 8;
/** The exact U test runs only when the normal approximation's p is at most max(0.02, 1000 α). */
const SCREEN_FACTOR = 1000;
const SCREEN_FLOOR = 0.02;
const LOG_DIGITS = 1e6;

type Thresholds = { rel: number; floorMs: number };

/** A comparison: the last `recent` points against up to `baselineMax` (≥ `baselineMin`) segment points before them. */
type Window = {
  name: "short" | "long";
  recent: number;
  baselineMin: number;
  baselineMax: number;
  madMultiplier: number;
  relFactor: number;
  floorFactor: number;
  alphaFactor: number;
};
const SHORT_WINDOW: Window = {
  name: "short",
  recent: RECENT_SHORT,
  baselineMin: 15,
  baselineMax: 30,
  madMultiplier: 1.0,
  relFactor: 1,
  floorFactor: 1,
  alphaFactor: 1,
};
/**
 * The long window catches smaller sustained shifts (a +10 % step within the run-to-run noise, a
 * slow drift) that 8 points cannot show: half the relative change and half a MAD, at a tenth of α.
 * Test series (≤ 100 of them, 40-point rings): 20 recent points against 15–20 before them.
 */
const LONG_WINDOW: Window = {
  name: "long",
  recent: 20,
  baselineMin: 15,
  baselineMax: 20,
  madMultiplier: 0.5,
  relFactor: 0.5,
  floorFactor: 0.5,
  alphaFactor: 0.1,
};
/**
 * The run series is one series, so it can afford more points: its long window compares the last
 * 24 points with up to 48 before them (≥ 20), same thresholds. For a shift whose U test effect is
 * A = P(recent > baseline), the normal-approximation z is (A − ½)·√(12·n₁n₂/(n₁+n₂+1)): 10.8·(A − ½)
 * for 20 vs 20, 13.8·(A − ½) for 24 vs 48. A +10 % step under a 20 % share of 1.3× slower runners
 * has A ≈ 0.8 (z 3.3 vs 4.2: p 5·10⁻⁴ vs 1·10⁻⁵ against α = 10⁻⁴), and a drift moves the two
 * window medians apart by 36 runs' worth of slope instead of 20. Twenty-four recent points leave
 * room for the persistence run within 30 runs of a step.
 */
const RUN_LONG_WINDOW: Window = {
  name: "long",
  recent: 24,
  baselineMin: 20,
  baselineMax: 48,
  madMultiplier: 0.5,
  relFactor: 0.5,
  floorFactor: 0.5,
  alphaFactor: 0.1,
};
/** The run series' ring holds the run long window's 24 + 48 points. */
const RUN_BUFFER = RUN_LONG_WINDOW.recent + RUN_LONG_WINDOW.baselineMax;
const RUN_WINDOWS: readonly Window[] = [SHORT_WINDOW, RUN_LONG_WINDOW];
const TEST_WINDOWS: readonly Window[] = [SHORT_WINDOW, LONG_WINDOW];
const RUN_THRESHOLDS: Thresholds = { rel: 0.1, floorMs: 10_000 };
const TEST_THRESHOLDS: Thresholds = { rel: 0.25, floorMs: 100 };
const RUN_ALPHA = 1e-3;
const TEST_FAMILY_ALPHA = 1e-3;

const MONITOR_MAX = 100;
const MONITOR_MIN_MEDIAN_MS = 500;
const MONITOR_MIN_LOG = Math.log(MONITOR_MIN_MEDIAN_MS);
const MEMBERSHIP_EVERY = 50;
const INCUMBENT_BONUS_LOG = Math.log(1.1);
const POOL_MAX = 100;
const POOL_POINTS = 5;
const POOL_MIN_POINTS = 3;

const MAX_EVENTS_PER_RUN = 20;
const MORE_LIST = 50;
const TOP_CONTRIBUTORS = 5;
const MIN_CONTRIBUTOR_POINTS = 3;
const MAX_STRING = 500;
const MAX_STORED_NAME = 200;

/**
 * One duration series: a ring buffer of log(ms) values (oldest first) and their run numbers,
 * stored as ages relative to the newest point so the stored digits do not grow with history.
 */
type DurationSeries = {
  /** log(duration ms), rounded to 1e-6; ≤ 40 (tests) or 72 (run series), oldest first. */
  l: number[];
  /** Run number of the newest point (0 while empty). */
  lr: number;
  /** Per point: lr − its run number. */
  a: number[];
  /** Index in `l` of the first point of the current segment (moved to the first recent point on a trip). */
  s: number;
  /** 1 when every trip condition held at the series' previous point (a trip needs two in a row); absent otherwise. */
  c?: 1;
};

type RunDurationSeries = DurationSeries & {
  /** The last trip: its run number and the baseline median before it (ms), or null. */
  ev: { run: number; level_ms: number } | null;
};

type TestDurationSeries = DurationSeries & {
  /** RunTest.key and a display name (capped). */
  k: string;
  n: string;
  /** Eligible-run count when the test last added a point (members unseen for 50 eligible runs are dropped). */
  seen: number;
};

/** A challenger for the monitored set: up to 5 recent log durations. */
type PoolEntry = { k: string; n: string; l: number[] };

/** The project-level state; each test's guard memory (a number, see the header) is stored in the test's row. */
export type PerformanceRegressionState = {
  /** State schema version (3: the guard's memory stored per test; 2 held it in `o`; a stored version-1 state starts afresh). */
  v: 3;
  /** Eligible (default-branch, not infra-suspect) runs processed. */
  runs: number;
  /** Eligible-run count at which the monitored set is next recomputed. */
  next: number;
  run: RunDurationSeries;
  /** Monitored tests, sorted by key. */
  tests: TestDurationSeries[];
  /** Challengers seen since the last recomputation, sorted by key. */
  pool: PoolEntry[];
};

/** Version 2: the same fields, plus the guard's memory of every test in `o`. */
type LegacyPerformanceState = Omit<PerformanceRegressionState, "v"> & { v: 2; o?: Record<string, number> };

// ---------------------------------------------------------------------------------------------
// Helpers

function storedLog(ms: number): number {
  return Math.round(Math.log(ms) * LOG_DIGITS) / LOG_DIGITS;
}

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Run numbers of a series' points, oldest first. */
function runNumbers(series: DurationSeries): number[] {
  return series.a.map((age) => series.lr - age);
}

/** Appends a point, dropping the oldest beyond the buffer (the segment start moves with it). */
function appendPoint<T extends DurationSeries>(series: T, logMs: number, runNumber: number, buffer: number): T {
  const shift = series.l.length === 0 ? 0 : runNumber - series.lr;
  const l = [...series.l, logMs];
  const a = [...series.a.map((age) => age + shift), 0];
  let s = series.s;
  while (l.length > buffer) {
    l.shift();
    a.shift();
    s = Math.max(0, s - 1);
  }
  return { ...series, l, a, lr: runNumber, s };
}

type Evaluation = {
  window: Window;
  madMultiplier: number;
  minRel: number;
  baseline: number[];
  recent: number[];
  baselineRuns: number[];
  recentRuns: number[];
  medianB: number;
  medianR: number;
  madB: number;
  rel: number;
  deltaMs: number;
  p: number;
  alpha: number;
  thresholdMs: number;
};

/** The trigger (docs/alert-checks.md#performance_regression) for one window; null unless every condition holds. Cheap conditions first. */
function evaluateWindow(series: DurationSeries, thresholds: Thresholds, baseAlpha: number, window: Window): Evaluation | null {
  const { l, s } = series;
  if (l.length - s < window.recent + window.baselineMin) return null;
  const recentStart = l.length - window.recent;
  const baselineStart = Math.max(s, recentStart - window.baselineMax);
  const baseline = l.slice(baselineStart, recentStart);
  const recent = l.slice(recentStart);
  const medianB = median(baseline);
  const medianR = median(recent);
  const dLog = medianR - medianB;
  if (!(dLog > 0)) return null;
  const rel = Math.expm1(dLog);
  const minRel = thresholds.rel * window.relFactor;
  if (rel < minRel) return null;
  const deltaMs = Math.exp(medianR) - Math.exp(medianB);
  const floorMs = thresholds.floorMs * window.floorFactor;
  if (deltaMs < floorMs) return null;
  const madB = mad(baseline);
  if (dLog < window.madMultiplier * MAD_TO_SIGMA * madB) return null;
  const alpha = baseAlpha * window.alphaFactor;
  // Screen with the normal approximation, so the exact test runs only for series that might pass
  // it. In the far tail the approximation overstates p (30 vs 8 fully separated: exact 2·10⁻⁸,
  // normal 9·10⁻⁶), never by anything near the screen's margin.
  if (mannWhitneyUGreaterApproximateP(baseline, recent) > Math.max(SCREEN_FLOOR, SCREEN_FACTOR * alpha)) return null;
  const { p } = mannWhitneyUGreater(baseline, recent);
  if (p > alpha) return null;
  const r = runNumbers(series);
  const baseMs = Math.exp(medianB);
  const thresholdMs = Math.max(baseMs * (1 + minRel), baseMs + floorMs, Math.exp(medianB + window.madMultiplier * MAD_TO_SIGMA * madB));
  return {
    window,
    baseline,
    recent,
    baselineRuns: r.slice(baselineStart, recentStart),
    recentRuns: r.slice(recentStart),
    medianB,
    medianR,
    madB,
    madMultiplier: window.madMultiplier,
    minRel,
    rel,
    deltaMs,
    p,
    alpha,
    thresholdMs,
  };
}

/** The short window first (the larger, quicker shifts), then the long one. */
function evaluate(series: DurationSeries, thresholds: Thresholds, alpha: number, windows: readonly Window[]): Evaluation | null {
  for (const window of windows) {
    const evaluation = evaluateWindow(series, thresholds, alpha, window);
    if (evaluation) return evaluation;
  }
  return null;
}

/** Sets or clears the "conditions held at the previous point" mark. */
function withCandidate<T extends DurationSeries>(series: T, candidate: boolean): T {
  if (candidate) return series.c === 1 ? series : { ...series, c: 1 };
  if (series.c === undefined) return series;
  const { c: _cleared, ...rest } = series;
  return rest as T;
}

/**
 * Moves the segment start to the short window's first recent point: the baseline reset after a
 * trip. After a long-window trip too, only the newest 8 points are kept: they are surely of the
 * new level, where the long window's earlier recent points may be part of the rise.
 */
function resetSegment<T extends DurationSeries>(series: T): T {
  return { ...series, s: Math.max(0, series.l.length - RECENT_SHORT) };
}

/** A test's duration in a run where it passed (its cases summed). */
type PassedDuration = { key: string; name: string; ms: number };

/**
 * Per-key duration of the passed tests of a chunk (duplicates summed, in the order given; a key's
 * cases are all in one chunk, so this is the run's per-key duration), sorted by key.
 */
function passedDurations(tests: readonly RunTest[]): PassedDuration[] {
  const byKey = new Map<string, PassedDuration & { ok: boolean }>();
  for (const test of tests) {
    const usable = test.status === "passed" && test.durationMs !== null && Number.isFinite(test.durationMs) && test.durationMs > 0;
    const existing = byKey.get(test.key);
    if (!existing) {
      byKey.set(test.key, { key: test.key, name: test.name, ms: usable ? (test.durationMs as number) : 0, ok: usable });
    } else {
      // A duplicate that did not pass (or has no time) makes the combined time unusable.
      existing.ok = existing.ok && usable;
      if (usable) existing.ms += test.durationMs as number;
    }
  }
  return [...byKey.values()]
    .filter((entry) => entry.ok)
    .sort((a, b) => compareKeys(a.key, b.key))
    .map(({ key, name, ms }) => ({ key, name, ms }));
}

function lastN<T>(values: T[], n: number): T[] {
  return values.length > n ? values.slice(values.length - n) : values;
}

/** Membership recomputation (see the header): incumbents seen in the last epoch plus the pool. */
function recomputeMembership(tests: TestDurationSeries[], pool: PoolEntry[], runs: number): TestDurationSeries[] {
  type Candidate = { key: string; score: number; rank: number; existing: TestDurationSeries | null; name: string };
  const candidates: Candidate[] = [];
  const incumbentKeys = new Set<string>();
  for (const series of tests) {
    if (runs - series.seen >= MEMBERSHIP_EVERY || series.l.length === 0) continue;
    const score = median(lastN(series.l, SHORT_WINDOW.baselineMax));
    incumbentKeys.add(series.k);
    candidates.push({ key: series.k, score, rank: score + INCUMBENT_BONUS_LOG, existing: series, name: series.n });
  }
  // A challenger needs 3 values (one slow outlier is not a slow test), except at the very first
  // recomputation, which only has the first run to go on.
  const minPoints = runs <= 1 ? 1 : POOL_MIN_POINTS;
  for (const entry of pool) {
    if (incumbentKeys.has(entry.k) || entry.l.length < minPoints) continue;
    const score = median(entry.l);
    candidates.push({ key: entry.k, score, rank: score, existing: null, name: entry.n });
  }
  const chosen = candidates
    .filter((candidate) => candidate.score >= MONITOR_MIN_LOG)
    .sort((a, b) => b.rank - a.rank || compareKeys(a.key, b.key))
    .slice(0, MONITOR_MAX);
  return chosen
    .map((candidate) => candidate.existing ?? { k: candidate.key, n: candidate.name, l: [], lr: 0, a: [], s: 0, seen: runs })
    .sort((a, b) => compareKeys(a.k, b.k));
}

/** Adds this run's slow passed tests that are not monitored to the challenger pool. */
function updatePool(pool: PoolEntry[], durations: PassedDuration[], monitored: Set<string>): PoolEntry[] {
  const byKey = new Map(pool.map((entry) => [entry.k, entry]));
  const newcomers: { key: string; name: string; log: number }[] = [];
  for (const { key, name, ms } of durations) {
    if (monitored.has(key)) continue;
    const log = storedLog(ms);
    const existing = byKey.get(key);
    // Entry needs one run of ≥ 0.5 s; after that every value counts, so the score is an honest median.
    if (existing) byKey.set(key, { ...existing, l: lastN([...existing.l, log], POOL_POINTS) });
    else if (ms >= MONITOR_MIN_MEDIAN_MS) newcomers.push({ key, name, log });
  }
  newcomers.sort((a, b) => b.log - a.log || compareKeys(a.key, b.key));
  for (const newcomer of newcomers) {
    const entry = { k: newcomer.key, n: cap(newcomer.name, MAX_STORED_NAME), l: [newcomer.log] };
    if (byKey.size < POOL_MAX) {
      byKey.set(newcomer.key, entry);
      continue;
    }
    let weakest: PoolEntry | null = null;
    let weakestScore = Number.POSITIVE_INFINITY;
    for (const candidate of byKey.values()) {
      const score = median(candidate.l);
      if (score < weakestScore || (score === weakestScore && weakest !== null && compareKeys(candidate.k, weakest.k) > 0)) {
        weakest = candidate;
        weakestScore = score;
      }
    }
    if (weakest === null || newcomer.log <= weakestScore) break; // newcomers are sorted: none of the rest is slower
    byKey.delete(weakest.k);
    byKey.set(newcomer.key, entry);
  }
  return [...byKey.values()].sort((a, b) => compareKeys(a.k, b.k));
}

/**
 * The guard's memory written by this run for a chunk's tests: every executed test unless the run
 * is suspect, then only tests not known yet (recordsOutcome). A key's cases are all in the chunk.
 */
function rememberOutcomes(
  known: (key: string) => number | null,
  tests: readonly RunTest[],
  suspect: boolean,
  stamp: number,
): Map<string, number> {
  const written = new Map<string, number>();
  const failedNow = new Map<string, boolean>();
  for (const test of tests) {
    if (test.status === "skipped") continue;
    const failing = test.status === "failed" || test.status === "errored";
    failedNow.set(test.key, (failedNow.get(test.key) ?? false) || failing);
  }
  for (const [key, failing] of failedNow) {
    if (!recordsOutcome(suspect, known(key) !== null)) continue;
    written.set(key, stamp * 2 + (failing ? 1 : 0));
  }
  return written;
}

const OUTCOME_UNSEEN_RUNS = 200;

/** A test's memory as the last membership recomputation left it: older than 200 eligible runs then, it counts as absent. */
function memoryOf(state: PerformanceRegressionState, stored: TestEntries<number>, key: string): number | null {
  const value = stored.get(key);
  if (value === undefined) return null;
  const recomputedAt = state.next - MEMBERSHIP_EVERY;
  return state.runs === 0 || recomputedAt - Math.floor(value / 2) <= OUTCOME_UNSEEN_RUNS ? value : null;
}

// ---------------------------------------------------------------------------------------------
// Events

const windowDescription = (window: Window, buffer: number) =>
  `last ${window.recent} default-branch runs vs up to ${window.baselineMax} before them (at least ${window.baselineMin}) since the last level change; infra-suspect runs excluded; ring buffer of ${buffer}`;

function commonMetadata(evaluation: Evaluation, monitored: number, buffer: number) {
  const madLog = evaluation.madB;
  const baselineMs = evaluation.baseline.map((value) => Math.exp(value));
  const sigma = MAD_TO_SIGMA * madLog;
  return {
    baseline: {
      from_run_number: evaluation.baselineRuns[0] ?? null,
      to_run_number: evaluation.baselineRuns[evaluation.baselineRuns.length - 1] ?? null,
      n: evaluation.baseline.length,
      median_ms: round(Math.exp(evaluation.medianB), 1),
      mad_ms: round(mad(baselineMs), 1),
      mad_log: round(madLog, 6),
    },
    recent: {
      from_run_number: evaluation.recentRuns[0] ?? null,
      to_run_number: evaluation.recentRuns[evaluation.recentRuns.length - 1] ?? null,
      n: evaluation.recent.length,
      median_ms: round(Math.exp(evaluation.medianR), 1),
    },
    delta_ms: round(evaluation.deltaMs, 1),
    rel_change: round(evaluation.rel, 4),
    effect_size_mads: sigma > 0 ? round((evaluation.medianR - evaluation.medianB) / sigma, 3) : null,
    p_value: evaluation.p,
    alpha: evaluation.alpha,
    monitored_series: monitored,
    statistic: "mann_whitney_u",
    observed: round(Math.exp(evaluation.medianR), 1),
    threshold: round(evaluation.thresholdMs, 1),
    window: windowDescription(evaluation.window, buffer),
    window_kind: evaluation.window.name,
    min_rel_change: round(evaluation.minRel, 4),
    min_effect_size_mads: evaluation.madMultiplier,
  };
}

/** Tests whose medians moved most between the run series' baseline and recent run ranges. */
function topContributors(evaluation: Evaluation, tests: TestDurationSeries[]) {
  const [bFrom, bTo] = [evaluation.baselineRuns[0] ?? 0, evaluation.baselineRuns[evaluation.baselineRuns.length - 1] ?? 0];
  const [rFrom, rTo] = [evaluation.recentRuns[0] ?? 0, evaluation.recentRuns[evaluation.recentRuns.length - 1] ?? 0];
  const rows: {
    test_key: string;
    name: string;
    baseline_median_ms: number | null;
    recent_median_ms: number | null;
    delta_ms: number | null;
    sort: number;
  }[] = [];
  for (const series of tests) {
    const before: number[] = [];
    const after: number[] = [];
    runNumbers(series).forEach((runNumber, i) => {
      if (runNumber >= bFrom && runNumber <= bTo) before.push(series.l[i]!);
      else if (runNumber >= rFrom && runNumber <= rTo) after.push(series.l[i]!);
    });
    if (before.length < MIN_CONTRIBUTOR_POINTS || after.length < MIN_CONTRIBUTOR_POINTS) continue;
    const baseMs = Math.exp(median(before));
    const recentMs = Math.exp(median(after));
    const delta = recentMs - baseMs;
    if (!(delta > 0)) continue;
    rows.push({
      test_key: cap(series.k, MAX_STRING),
      name: cap(series.n, MAX_STRING),
      baseline_median_ms: round(baseMs, 1),
      recent_median_ms: round(recentMs, 1),
      delta_ms: round(delta, 1),
      sort: delta,
    });
  }
  return rows
    .sort((a, b) => b.sort - a.sort || compareKeys(a.test_key, b.test_key))
    .slice(0, TOP_CONTRIBUTORS)
    .map(({ sort: _sort, ...row }) => row);
}

// ---------------------------------------------------------------------------------------------
// The check

function initialState(): PerformanceRegressionState {
  return { v: 3, runs: 0, next: 1, run: { l: [], lr: 0, a: [], s: 0, ev: null }, tests: [], pool: [] };
}

function isValidState(state: unknown): state is PerformanceRegressionState {
  return hasShape(state, 3);
}

function hasShape(state: unknown, version: 2 | 3): boolean {
  if (typeof state !== "object" || state === null) return false;
  const s = state as Partial<PerformanceRegressionState> & { v?: number };
  return (
    s.v === version &&
    typeof s.runs === "number" &&
    typeof s.next === "number" &&
    typeof s.run === "object" &&
    s.run !== null &&
    Array.isArray(s.run.l) &&
    Array.isArray(s.run.a) &&
    Array.isArray(s.tests) &&
    Array.isArray(s.pool)
  );
}

/**
 * What the decision needs of the run's tests, gathered chunk by chunk (the first pass): the guard's
 * persistent failures, and the passed durations of the only tests that can get a point or a pool
 * value in this run. Those are the monitored tests and the pool's entries (their durations are
 * kept whatever they are), and the newcomers that updatePool can admit: passed in ≥ 0.5 s,
 * neither monitored nor in the pool, and among the slowest `newcomerRoom` of them (see
 * `newcomerRoom`). Every other test's duration changes nothing.
 */
type Tally = {
  persistent: PersistentCount;
  /** Durations of the monitored tests and the pool's entries that passed (≤ 100 + 100). */
  watched: PassedDuration[];
  /** The slowest newcomers so far, in no order; cut back to `newcomerRoom` whenever it doubles. */
  newcomers: (PassedDuration & { log: number })[];
};

/** Newcomers first by log duration (slowest first), then by key: updatePool's order of admission. */
const newcomerOrder = (a: { key: string; log: number }, b: { key: string; log: number }) => b.log - a.log || compareKeys(a.key, b.key);

/**
 * How many newcomers updatePool can admit at most, so how many pass 1 keeps. Admitted newcomers
 * are a prefix of its order (it stops at the first it turns away) and none is ever evicted again:
 * a later newcomer is no slower, and it replaces the weakest entry only when strictly slower, else
 * the loop stops. So each admission either grows the pool below POOL_MAX or evicts an entry from
 * before the run, and at most max(POOL_MAX, the pool's size) newcomers get in (a stored pool is
 * never above POOL_MAX, the larger size only keeps an odd stored state exact).
 */
function newcomerRoom(pool: readonly PoolEntry[]): number {
  return Math.max(POOL_MAX, pool.length);
}

function tallyDurations(tally: Tally, tests: readonly RunTest[], watchedKeys: ReadonlySet<string>, room: number): void {
  for (const duration of passedDurations(tests)) {
    if (watchedKeys.has(duration.key)) tally.watched.push(duration);
    else if (duration.ms >= MONITOR_MIN_MEDIAN_MS) tally.newcomers.push({ ...duration, log: storedLog(duration.ms) });
  }
  if (tally.newcomers.length > 2 * room) tally.newcomers = tally.newcomers.sort(newcomerOrder).slice(0, room);
}

/** The run's passed durations that can matter (Tally), sorted by key as passedDurations gives them. */
function durationsThatMatter(tally: Tally, room: number): PassedDuration[] {
  const newcomers = [...tally.newcomers]
    .sort(newcomerOrder)
    .slice(0, room)
    .map(({ key, name, ms }) => ({ key, name, ms }));
  return [...tally.watched, ...newcomers].sort((a, b) => compareKeys(a.key, b.key));
}

function start(input: PerformanceRegressionState, run: RunHeader): CheckPass<PerformanceRegressionState, number> {
  const state = isValidState(input) ? input : initialState();
  // Only default-branch runs are read: the others leave the state and the memory alone.
  const eligible = run.onDefaultBranch;
  const watchedKeys = new Set([...state.tests.map((series) => series.k), ...state.pool.map((entry) => entry.k)]);
  const room = newcomerRoom(state.pool);
  const tally: Tally = { persistent: { failed: 0, errored: 0 }, watched: [], newcomers: [] };
  let decision: Decision = { state, events: [], suspect: false };
  return {
    observe(tests, stored) {
      if (!eligible) return;
      countPersistent(tally.persistent, tests, (key) => (memoryOf(state, stored, key) ?? 0) % 2 === 1);
      tallyDurations(tally, tests, watchedKeys, room);
    },
    decide() {
      if (eligible) decision = decide(state, run, tally.persistent, durationsThatMatter(tally, room));
    },
    write(tests, stored) {
      if (!eligible) return new Map<string, number>();
      // A suspect run is not counted: its outcomes are stamped with the current count.
      const stamp = decision.suspect ? state.runs : state.runs + 1;
      return rememberOutcomes((key) => memoryOf(state, stored, key), tests, decision.suspect, stamp);
    },
    finish: () => ({ state: decision.state, events: decision.events }),
  };
}

type Decision = { state: PerformanceRegressionState; events: CheckEvent[]; suspect: boolean };

/** The run's decision from the guard's counts and the passed durations that can matter (Tally). */
function decide(state: PerformanceRegressionState, run: RunHeader, persistent: PersistentCount, durations: PassedDuration[]): Decision {
  const suspect = judgeInfraCounts(run.counts, persistent).suspect;
  if (suspect) return { state, events: [], suspect };

  const runs = state.runs + 1;

  // Monitored set: challengers first, then (at the first eligible run and every 50) the recomputation.
  let tests = state.tests;
  let pool = updatePool(state.pool, durations, new Set(tests.map((series) => series.k)));
  let next = state.next;
  if (runs >= next) {
    tests = recomputeMembership(tests, pool, runs);
    pool = [];
    next = runs + MEMBERSHIP_EVERY;
  }

  // Append this run's points.
  let runSeries = state.run;
  if (run.durationMs !== null && Number.isFinite(run.durationMs) && run.durationMs > 0) {
    runSeries = appendPoint(runSeries, storedLog(run.durationMs), run.number, RUN_BUFFER);
  }
  const byKey = new Map(durations.map((entry) => [entry.key, entry]));
  const updated = new Set<string>();
  tests = tests.map((series) => {
    const point = byKey.get(series.k);
    if (!point) return series;
    updated.add(series.k);
    return { ...appendPoint(series, storedLog(point.ms), run.number, BUFFER), seen: runs };
  });

  // Evaluate the series that received a point.
  const m = tests.length;
  const events: CheckEvent[] = [];
  const runPoint = runSeries !== state.run;
  const runCandidate = runPoint ? evaluate(runSeries, RUN_THRESHOLDS, RUN_ALPHA, RUN_WINDOWS) : null;
  const runEval = runCandidate && state.run.c === 1 ? runCandidate : null;
  if (runPoint) runSeries = withCandidate(runSeries, runCandidate !== null && runEval === null);
  if (runEval) {
    events.push({
      metadata: {
        subject: "run_duration",
        ...commonMetadata(runEval, m, RUN_BUFFER),
        top_contributors: topContributors(runEval, tests),
        detector_version: PERFORMANCE_REGRESSION_DETECTOR_VERSION,
      },
    });
    runSeries = { ...resetSegment(runSeries), ev: { run: run.number, level_ms: round(Math.exp(runEval.medianB), 1) ?? 0 } };
  }

  const testAlpha = m > 0 ? TEST_FAMILY_ALPHA / m : TEST_FAMILY_ALPHA;
  const tripped: { index: number; evaluation: Evaluation }[] = [];
  const previousCandidates = new Set(state.tests.filter((series) => series.c === 1).map((series) => series.k));
  tests = tests.map((series, index) => {
    if (!updated.has(series.k)) return series;
    const evaluation = evaluate(series, TEST_THRESHOLDS, testAlpha, TEST_WINDOWS);
    const trips = evaluation !== null && previousCandidates.has(series.k);
    if (trips) tripped.push({ index, evaluation });
    return withCandidate(series, evaluation !== null && !trips);
  });
  tripped.sort(
    (a, b) => a.evaluation.p - b.evaluation.p || b.evaluation.rel - a.evaluation.rel || compareKeys(tests[a.index]!.k, tests[b.index]!.k),
  );
  if (tripped.length > 0) {
    const room = Math.max(0, MAX_EVENTS_PER_RUN - events.length);
    const before = tests;
    tests = [...tests];
    tripped.forEach(({ index, evaluation }, rank) => {
      const series = before[index]!;
      if (rank < room) {
        events.push({
          metadata: {
            subject: "test_duration",
            test_key: cap(series.k, MAX_STRING),
            name: cap(series.n, MAX_STRING),
            ...commonMetadata(evaluation, m, BUFFER),
            detector_version: PERFORMANCE_REGRESSION_DETECTOR_VERSION,
          },
        });
      }
      tests[index] = resetSegment(series);
    });
    // Beyond the cap: the remaining tests are listed on the last event (and reset like the others:
    // a series' window for a significant contrast is short, so deferring would lose them).
    const rest = tripped.slice(room);
    const last = events[events.length - 1];
    if (rest.length > 0 && last) {
      last.metadata = {
        ...last.metadata,
        more_regressed_count: rest.length,
        more_regressed_tests: rest.slice(0, MORE_LIST).map(({ index, evaluation }) => ({
          test_key: cap(before[index]!.k, MAX_STRING),
          name: cap(before[index]!.n, MAX_STRING),
          baseline_median_ms: round(Math.exp(evaluation.medianB), 1),
          recent_median_ms: round(Math.exp(evaluation.medianR), 1),
          delta_ms: round(evaluation.deltaMs, 1),
          rel_change: round(evaluation.rel, 4),
          p_value: evaluation.p,
        })),
      };
    }
  }

  return { state: { v: 3, runs, next, run: runSeries, tests, pool }, events, suspect };
}

/** Version 2: the monitored series, the pool and the memory re-keyed (a series or challenger whose test is gone is dropped). */
function fromLegacy(
  legacy: unknown,
  rekey: (oldKey: string) => string | null,
): { state: PerformanceRegressionState; tests: Map<string, number> } | null {
  if (!hasShape(legacy, 2)) return null;
  const { v: _v, o, ...project } = legacy as LegacyPerformanceState;
  const tests = new Map<string, number>();
  for (const [oldKey, value] of Object.entries(o ?? {})) {
    const key = rekey(oldKey);
    if (key !== null && (tests.get(key) ?? -1) < value) tests.set(key, value);
  }
  const rekeyed = <E extends { k: string }>(entries: E[]): E[] => {
    const seen = new Set<string>();
    const kept: E[] = [];
    for (const entry of entries) {
      const key = rekey(entry.k);
      if (key === null || seen.has(key)) continue;
      seen.add(key);
      kept.push({ ...entry, k: key });
    }
    return kept.sort((a, b) => compareKeys(a.k, b.k));
  };
  return { state: { v: 3, ...project, tests: rekeyed(project.tests), pool: rekeyed(project.pool) }, tests };
}

export const performanceRegressionCheck: Check<PerformanceRegressionState, number> = {
  version: PERFORMANCE_REGRESSION_DETECTOR_VERSION,
  initialState,
  start,
  fromLegacy,
};
