/**
 * Test health (docs/tests.md) scored against the simulator's ground truth, for bench:detection.
 * The health comes from replayHealth (src/simulator/health-replay.ts): the service's own pure rules
 * (advanceRun: advanceTest on each test of a run; then the flakiness check's flags applied by
 * flagTestFlaky), run by run, no database.
 *
 * Ground truth (runs = default-branch runs, as everywhere in the benchmark):
 * - flaky: the test is the subject of a flaky_test anomaly (an independent flaky test, a test of
 *   the fragile pool, a member of a co-failing group) from its onset to its last flaky run (its
 *   fix), or for good. The 50 runs after a fix are an allowance, as in the alert's scoring: the
 *   rule needs 30 passes in a row to call a test healthy again, so health = flaky there is
 *   expected, counted apart and not as false.
 * - broken: the test is in a breakage episode (fails in every run, every branch, from its start to
 *   its fix; breakageEpisodes) or is one of env_half's always-failing tests (from its first run).
 *   No allowance: a fixed test passes at its fix run, which makes a broken test healthy at once.
 *
 * Units and figures, per health h ∈ {flaky, broken}:
 * - An *entry* is a transition of a test into h (at any run, by either step). It is true when the
 *   test is labelled h at that run (flaky: or within the allowance), false otherwise. Entry
 *   precision = true entries / entries: the unit of the alert's precision (one event per newly
 *   flagged test), so the two sit side by side.
 * - A *test-run* is a test executed (not skipped) in a default-branch run, with its health after
 *   the run. Test-run precision = test-runs with health h that are labelled h (flaky: or in the
 *   allowance) / test-runs with health h: how often a test the dashboard shows as h is h.
 *   Coverage = labelled test-runs shown as h / labelled test-runs: how much of the time a flaky
 *   (broken) test is shown as such, detection delay and relapses to healthy included.
 * - Recall: share of labelled tests (anomalies, episodes) whose health is h at some run within N
 *   runs of onset (runs to detection counted from onset, inclusive: 1 = the onset run). Flaky:
 *   N = 50 for large anomalies (p ≥ 0.1) and 200 for small ones, the alert's horizons. Broken:
 *   N = 10 (the rule's 10 failing executions), over episodes planned to last at least 10 runs
 *   (10, 30, to the end) and always-failing tests; 1- and 3-run breakages cannot be broken by the
 *   rule and are reported apart. Labels whose stream ends within N runs are left out.
 * - False entries per 1,000 runs: false entries per 1,000 default-branch runs; for flaky also over
 *   the streams where the flaky family is off (the alert's "clean runs"). Every stream has
 *   breakages (noise planned in all of them), so broken has no clean streams.
 */
import type { HealthReplay } from "../src/simulator/health-replay";
import { type Anomaly, breakageEpisodes } from "../src/simulator/streams";
import { type StreamIndex, mainCount } from "./stream-index";

/** Recall horizons (runs to detection ≤ N) and the after-fix allowance. */
export const FLAKY_HORIZON = { large: 50, small: 200 } as const;
export const FLAKY_AFTER_FIX_RUNS = 50;
export const BROKEN_HORIZON = 10;
/** Breakages planned to last at least this many runs are in broken's recall (the rule's threshold, BROKEN_AFTER_FAILURES). */
export const BROKEN_MIN_LENGTH = 10;

export type SizeStats = { detected: number; total: number; delays: number[] };
export const newSize = (): SizeStats => ({ detected: 0, total: 0, delays: [] });

export type SignalScore = {
  entries: number;
  trueEntries: number;
  falseEntries: number;
  cleanFalseEntries: number;
  units: number;
  trueUnits: number;
  /** Flaky only: test-runs within the allowance after a fix (not false, not labelled). */
  allowanceUnits: number;
  falseUnits: number;
  labelledUnits: number;
  labelledShown: number;
  /** Transitions out of the health, and those at a run where the test is still labelled so (a flaky test declared healthy while flaky). */
  exits: number;
  exitsWhileLabelled: number;
  /** Recall by size: "large" / "small" (flaky), "all" (broken). */
  sizes: Map<string, SizeStats>;
  /** Recall by kind, keyed `kind|size` (flaky: the alert tables' kinds). */
  byKind: Map<string, SizeStats>;
  causes: Map<string, { entries: number; units: number }>;
  samples: string[];
};

export type HealthScore = {
  flaky: SignalScore;
  broken: SignalScore;
  streams: number;
  runs: number;
  /** Default-branch runs of the streams where the flaky family is off. */
  cleanRuns: number;
  /** Breakages of 1 or 3 runs: how many, how many reached broken or flaky during them or within 50 runs after. */
  short: { episodes: number; broken: number; flaky: number };
  /** Breakages fixed by disabling the test (skipped from then on), and how many of those tests were still broken at the end. */
  disabled: { episodes: number; leftBroken: number };
  unnamedFlags: number;
  ms: number;
};

const newSignal = (): SignalScore => ({
  entries: 0,
  trueEntries: 0,
  falseEntries: 0,
  cleanFalseEntries: 0,
  units: 0,
  trueUnits: 0,
  allowanceUnits: 0,
  falseUnits: 0,
  labelledUnits: 0,
  labelledShown: 0,
  exits: 0,
  exitsWhileLabelled: 0,
  sizes: new Map(),
  byKind: new Map(),
  causes: new Map(),
  samples: [],
});

export const newHealthScore = (): HealthScore => ({
  flaky: newSignal(),
  broken: newSignal(),
  streams: 0,
  runs: 0,
  cleanRuns: 0,
  short: { episodes: 0, broken: 0, flaky: 0 },
  disabled: { episodes: 0, leftBroken: 0 },
  unnamedFlags: 0,
  ms: 0,
});

/** A broken label: [start, end) in run numbers, with its kind for the recall table; `planned` false for 1- and 3-run breakages. */
type BrokenLabel = { test: string; start: number; end: number; kind: string; planned: boolean; disabled: boolean };

function recordRecall(signal: SignalScore, size: string, kind: string, delay: number | null, horizon: number): void {
  const detected = delay !== null && delay <= horizon;
  const bump = (map: Map<string, SizeStats>, key: string) => {
    const stats = map.get(key) ?? newSize();
    map.set(key, stats);
    stats.total++;
    if (detected) {
      stats.detected++;
      stats.delays.push(delay);
    }
  };
  bump(signal.sizes, size);
  bump(signal.byKind, `${kind}|${size}`);
}
function countCause(signal: SignalScore, cause: string, field: "entries" | "units"): void {
  const entry = signal.causes.get(cause) ?? { entries: 0, units: 0 };
  entry[field]++;
  signal.causes.set(cause, entry);
}

/**
 * Scores one stream's replayed health into `score`. `flakyKind` labels a flaky_test anomaly as the
 * alert's recall table does, so the two tables share their rows.
 */
export function scoreHealth(index: StreamIndex, replay: HealthReplay, score: HealthScore, flakyKind: (a: Anomaly) => string): void {
  const { stream } = index;
  const clean = !stream.knobs.families.flaky;
  const mainRuns = mainCount(index, 1, index.lastRun);
  score.streams++;
  score.runs += mainRuns;
  if (clean) score.cleanRuns += mainRuns;
  score.unnamedFlags += replay.unnamedFlags;

  // Labels.
  const flakyBy = new Map<string, Anomaly[]>();
  for (const a of stream.anomalies) if (a.type === "flaky_test") flakyBy.set(a.subject, [...(flakyBy.get(a.subject) ?? []), a]);
  const brokenLabels: BrokenLabel[] = [];
  const episodes = breakageEpisodes(stream);
  const withEpisode = new Set(episodes.map((e) => e.test));
  for (const e of episodes) {
    const planned = e.length === null || e.length >= BROKEN_MIN_LENGTH;
    brokenLabels.push({
      test: e.test,
      start: e.start,
      end: e.fixedAt ?? Number.POSITIVE_INFINITY,
      kind: e.length === null ? "breakage, never fixed" : `breakage, ${e.length} run${e.length === 1 ? "" : "s"}`,
      planned,
      disabled: e.disabled,
    });
  }
  const alwaysFailing = new Set<string>();
  for (const t of stream.tests) {
    if (!t.alwaysFailing) continue;
    alwaysFailing.add(t.key);
    brokenLabels.push({
      test: t.key,
      start: t.addedAt,
      end: t.removedAt ?? Number.POSITIVE_INFINITY,
      kind: "always failing (env_half)",
      planned: true,
      disabled: false,
    });
  }
  const brokenBy = new Map<string, BrokenLabel[]>();
  for (const l of brokenLabels) brokenBy.set(l.test, [...(brokenBy.get(l.test) ?? []), l]);

  const isFlaky = (key: string, run: number) => (flakyBy.get(key) ?? []).some((a) => run >= a.start && (a.end === null || run <= a.end));
  const inAllowance = (key: string, run: number) =>
    (flakyBy.get(key) ?? []).some((a) => a.end !== null && run > a.end && mainCount(index, a.end + 1, run) <= FLAKY_AFTER_FIX_RUNS);
  const flakyEnded = (key: string, run: number) => (flakyBy.get(key) ?? []).some((a) => a.end !== null && run > a.end);
  const isBroken = (key: string, run: number) => (brokenBy.get(key) ?? []).some((l) => run >= l.start && run < l.end);
  const pointKind = (n: number) => {
    const labels = stream.runs[n - 1]!.labels;
    if (labels.some((l) => l.type === "failure_spike")) return "a spike";
    if (labels.some((l) => l.type === "infra_outage")) return "an outage";
    return null;
  };

  const flakyCause = (key: string, run: number, by: string): string => {
    const r = stream.runs[run - 1]!;
    const via = by === "run" ? "same-commit rule" : "flakiness check";
    let where: string;
    if (alwaysFailing.has(key)) where = "always-failing test";
    else if (isBroken(key, run)) where = "broken test (in its breakage episode)";
    else if (r.retry_of !== null && pointKind(r.retry_of)) where = `same-commit retry of ${pointKind(r.retry_of)} run`;
    else if (pointKind(run)) where = "in a spike/outage run";
    else if (withEpisode.has(key)) where = "test with a breakage episode";
    else if (flakyEnded(key, run)) where = `more than ${FLAKY_AFTER_FIX_RUNS} runs after its flaky label ended`;
    else if (r.branch !== "main") where = "feature-branch run";
    else where = "other";
    return `${where} (${via})`;
  };
  const brokenCause = (key: string, run: number): string => {
    const a = (flakyBy.get(key) ?? []).find((x) => run >= x.start && (x.end === null || run <= x.end));
    if (a) return `flaky test (${flakyKind(a)}) failing 10 default-branch runs in a row`;
    if (withEpisode.has(key)) return "test with a breakage episode, outside it";
    return "other";
  };

  // Entries and test-runs, run by run.
  const byRun = new Map<number, typeof replay.transitions>();
  for (const t of replay.transitions) byRun.set(t.run, [...(byRun.get(t.run) ?? []), t]);
  /** The cause of each test's current false flaky / broken state (absent: entered while labelled). */
  const flakyState = new Map<string, string | null>();
  const brokenState = new Map<string, string | null>();
  for (const run of stream.runs) {
    for (const t of byRun.get(run.number) ?? []) {
      if (t.from === "flaky") {
        score.flaky.exits++;
        if (isFlaky(t.test, run.number)) score.flaky.exitsWhileLabelled++;
      } else if (t.from === "broken") {
        score.broken.exits++;
        if (isBroken(t.test, run.number)) score.broken.exitsWhileLabelled++;
      }
      if (t.to === "flaky") {
        const truth = isFlaky(t.test, run.number) || inAllowance(t.test, run.number);
        const signal = score.flaky;
        signal.entries++;
        if (truth) {
          signal.trueEntries++;
          flakyState.set(t.test, null);
        } else {
          signal.falseEntries++;
          if (clean) signal.cleanFalseEntries++;
          const cause = flakyCause(t.test, run.number, t.by);
          countCause(signal, cause, "entries");
          flakyState.set(t.test, cause);
          if (signal.samples.length < 12)
            signal.samples.push(
              `seed ${stream.seed} run ${run.number} ${t.test.replace(/\u001f/g, " › ").slice(0, 70)}: ${cause}; ${t.reason}`,
            );
        }
      } else if (t.to === "broken") {
        const signal = score.broken;
        signal.entries++;
        if (isBroken(t.test, run.number)) {
          signal.trueEntries++;
          brokenState.set(t.test, null);
        } else {
          signal.falseEntries++;
          const cause = brokenCause(t.test, run.number);
          countCause(signal, cause, "entries");
          brokenState.set(t.test, cause);
          if (signal.samples.length < 12)
            signal.samples.push(
              `seed ${stream.seed} run ${run.number} ${t.test.replace(/\u001f/g, " › ").slice(0, 70)}: ${cause}; ${t.reason}`,
            );
        }
      }
    }
    if (run.branch !== "main") continue;
    const after = replay.healthAfter[run.number - 1]!;
    for (const test of run.tests) {
      if (test.status === "skipped") continue;
      const health = after.get(test.key);
      const flaky = isFlaky(test.key, run.number);
      if (flaky) {
        score.flaky.labelledUnits++;
        if (health === "flaky") score.flaky.labelledShown++;
      }
      if (health === "flaky") {
        score.flaky.units++;
        if (flaky) score.flaky.trueUnits++;
        else if (inAllowance(test.key, run.number)) score.flaky.allowanceUnits++;
        else {
          score.flaky.falseUnits++;
          countCause(
            score.flaky,
            flakyState.get(test.key) ?? `still flaky more than ${FLAKY_AFTER_FIX_RUNS} runs after its flaky label ended`,
            "units",
          );
        }
      }
      const broken = isBroken(test.key, run.number);
      if (broken) {
        score.broken.labelledUnits++;
        if (health === "broken") score.broken.labelledShown++;
      }
      if (health === "broken") {
        score.broken.units++;
        if (broken) score.broken.trueUnits++;
        else {
          score.broken.falseUnits++;
          countCause(score.broken, brokenState.get(test.key) ?? "still broken after its label ended", "units");
        }
      }
    }
  }

  // Recall: the first run from onset at which the test has the health.
  const firstWith = (key: string, from: number, health: string, until = index.lastRun): number | null => {
    for (let n = from; n <= until; n++) if (replay.healthAfter[n - 1]!.get(key) === health) return n;
    return null;
  };
  for (const list of flakyBy.values()) {
    for (const a of list) {
      const horizon = a.size === "large" ? FLAKY_HORIZON.large : FLAKY_HORIZON.small;
      if (mainCount(index, a.start, index.lastRun) < horizon) continue;
      const first = firstWith(a.subject, a.start, "flaky");
      recordRecall(score.flaky, a.size, flakyKind(a), first === null ? null : mainCount(index, a.start, first), horizon);
    }
  }
  for (const l of brokenLabels) {
    if (!l.planned) {
      score.short.episodes++;
      const until = Math.min(index.lastRun, l.end);
      if (firstWith(l.test, l.start, "broken", until) !== null) score.short.broken++;
      // Flaky during the breakage or within the allowance after it (the same-commit rule or the check).
      let flakyUntil = until;
      while (flakyUntil < index.lastRun && mainCount(index, l.end, flakyUntil + 1) <= FLAKY_AFTER_FIX_RUNS) flakyUntil++;
      if (firstWith(l.test, l.start, "flaky", flakyUntil) !== null) score.short.flaky++;
      continue;
    }
    if (l.disabled) {
      score.disabled.episodes++;
      if (replay.rows.get(l.test)?.health === "broken") score.disabled.leftBroken++;
    }
    if (mainCount(index, l.start, index.lastRun) < BROKEN_HORIZON) continue;
    const first = firstWith(l.test, l.start, "broken");
    recordRecall(score.broken, "all", l.kind, first === null ? null : mainCount(index, l.start, first), BROKEN_HORIZON);
  }
}
