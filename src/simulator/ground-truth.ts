/**
 * Ground truth of a generated stream: which anomalies are active at each run, and how large each
 * anomaly is compared with the noise the stream actually has (its size class).
 */
import { ANOMALY_FAMILY, type Anomaly, type SimRun, type SimStream } from "./stream-types";

/** When a test was part of the runs: from `addedAt` until `removedAt` (exclusive; null = never removed). */
type TestLifetime = { key: string; addedAt: number; removedAt: number | null };

/**
 * Labels every run with the anomalies active at it: per-test ones only while the test is part of
 * the run, point anomalies (spikes, outages) on their run only, a fixed flaky test until its fix.
 */
export function labelRuns(runs: readonly SimRun[], anomalies: readonly Anomaly[], tests: readonly TestLifetime[]): void {
  const byKey = new Map(tests.map((t) => [t.key, t]));
  for (const run of runs) {
    for (const anomaly of anomalies) {
      if (run.number < anomaly.start) continue;
      const isPointType = anomaly.type === "failure_spike" || anomaly.type === "infra_outage";
      if (isPointType ? run.number !== anomaly.start : anomaly.end !== null && anomaly.type === "flaky_test" && run.number > anomaly.end)
        continue;
      if (anomaly.type === "flaky_test" || anomaly.type === "test_duration_shift") {
        const test = byKey.get(anomaly.subject);
        if (!test || run.number < test.addedAt || (test.removedAt !== null && run.number >= test.removedAt)) continue;
      }
      run.labels.push({ id: anomaly.id, type: anomaly.type, subject: anomaly.subject, start: anomaly.start });
    }
  }
}

function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function stdev(values: number[]): number {
  if (values.length < 2) return Number.NaN;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / (values.length - 1));
}

/** Failing share of executed tests in a run (final statuses). */
export function failingShare(run: SimRun): number {
  let executed = 0;
  let failing = 0;
  for (const t of run.tests) {
    if (t.status === "skipped") continue;
    executed++;
    if (t.status === "failed" || t.status === "errored") failing++;
  }
  return executed === 0 ? 0 : failing / executed;
}

/**
 * Size classes (the recall targets of the detection benchmark):
 * - flaky_test: large when p ≥ 0.1;
 * - duration_shift: large when +25 % at log-σ ≤ 0.05, +50 % at log-σ ≤ 0.15, or +100 % at log-σ ≤ 0.3
 *   (log-σ of the default-branch run duration before the first duration anomaly); drift: small;
 * - test_duration_shift: large when ≥ +100 % on a test with CV ≤ 20 % and median ≥ 1 s;
 * - failure_spike / infra_outage: large when the failing share is ≥ 10 %, ≥ 20× the baseline failing
 *   share, and ρ ≤ 0.01;
 * - skip_step: large when ≥ 20 tests; ramps: small.
 */
export function classifySizes(stream: SimStream): void {
  const mainRuns = stream.runs.filter((r) => r.branch === "main");
  const firstDuration = Math.min(
    ...stream.anomalies.filter((a) => ANOMALY_FAMILY[a.type] === "regression").map((a) => a.start),
    Number.POSITIVE_INFINITY,
  );
  const isPoint = (run: SimRun) =>
    run.labels.some((l) => l.type === "failure_spike" || l.type === "infra_outage") || run.notes.some((n) => n.kind === "suite_skipped");
  const clean = mainRuns.filter((r) => r.retry_of === null && !isPoint(r));
  let segment = clean.filter((r) => r.number < firstDuration && r.number > 10);
  if (segment.length < 20) segment = clean.slice(5, 60);
  const sigma = stdev(segment.map((r) => Math.log(Math.max(1, r.duration))));
  const baseline = clean.length > 0 ? clean.reduce((a, r) => a + failingShare(r), 0) / clean.length : 0;
  stream.stats = {
    durationLogSigma: sigma,
    baselineFailureShare: baseline,
    defaultBranchRuns: mainRuns.length,
    medianTestsPerRun: median(stream.runs.map((r) => r.tests.length)),
  };
  const byNumber = new Map(stream.runs.map((r) => [r.number, r]));
  for (const anomaly of stream.anomalies) {
    switch (anomaly.type) {
      case "flaky_test":
        anomaly.size = anomaly.magnitude >= 0.1 ? "large" : "small";
        break;
      case "duration_shift": {
        const rel = anomaly.magnitude;
        anomaly.size = (rel >= 0.25 && sigma <= 0.05) || (rel >= 0.5 && sigma <= 0.15) || (rel >= 1 && sigma <= 0.3) ? "large" : "small";
        anomaly.details.log_sigma = round(sigma, 4);
        break;
      }
      case "duration_drift":
        anomaly.size = "small";
        anomaly.details.log_sigma = round(sigma, 4);
        break;
      case "test_duration_shift": {
        const cv = Number(anomaly.details.cv);
        anomaly.size = anomaly.magnitude >= 1 && cv <= 0.2 && Number(anomaly.details.median_ms) >= 1000 ? "large" : "small";
        // Its share of the run total: a large enough one is also a run-duration change.
        const before = mainRuns
          .filter((r) => r.number < anomaly.start)
          .slice(-20)
          .map((r) => r.duration);
        const impact = before.length > 0 ? (Number(anomaly.details.median_ms) * anomaly.magnitude) / median(before) : 0;
        anomaly.details.run_impact = round(impact, 4);
        break;
      }
      case "failure_spike":
      case "infra_outage": {
        const run = byNumber.get(anomaly.start)!;
        const share = failingShare(run);
        anomaly.magnitude = round(share, 4)!;
        anomaly.details.baseline_share = round(baseline, 5);
        anomaly.details.rho = stream.knobs.rho;
        anomaly.size = share >= 0.1 && share >= 20 * baseline && stream.knobs.rho <= 0.01 ? "large" : "small";
        break;
      }
      case "skip_step":
        anomaly.size = anomaly.magnitude >= 20 ? "large" : "small";
        break;
      case "skip_ramp":
        anomaly.size = "small";
        break;
    }
  }
}

function round(value: number, digits: number): number | null {
  if (!Number.isFinite(value)) return null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * A test broken on purpose (the noise plan's breakage episodes): it fails in every run, on every
 * branch, from `start` until its fix at `fixedAt` (exclusive; null: still broken at the end of the
 * stream). `length` is the planned length in default-branch runs that are not retries (1, 3, 10, 30;
 * null: never fixed); `disabled`: skipped from the fix on instead of passing again.
 */
export type BreakageEpisode = { test: string; start: number; fixedAt: number | null; length: number | null; disabled: boolean };

/**
 * The breakage episodes of a stream, read from its runs' notes (`breakage_start`, `breakage_fixed`):
 * ground truth for a test's `broken` health, beside the always-failing tests of scenario
 * "env_half". Deriving them draws nothing, so the streams stay as they are.
 */
export function breakageEpisodes(stream: Pick<SimStream, "runs">): BreakageEpisode[] {
  const episodes: BreakageEpisode[] = [];
  const open = new Map<string, BreakageEpisode>();
  for (const run of stream.runs) {
    for (const note of run.notes) {
      if (note.kind === "breakage_start") {
        const episode: BreakageEpisode = { test: note.test, start: run.number, fixedAt: null, length: note.length, disabled: false };
        episodes.push(episode);
        open.set(note.test, episode);
      } else if (note.kind === "breakage_fixed") {
        const episode = open.get(note.test);
        if (!episode) continue;
        episode.fixedAt = run.number;
        episode.disabled = note.disabled;
        open.delete(note.test);
      }
    }
  }
  return episodes;
}
