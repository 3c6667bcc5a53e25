/**
 * `failure_rate_spike` (docs/alert-checks.md#failure_rate_spike): one run whose share of failing tests is far above the
 * project's usual level, judged with a beta-binomial tail test so that the ordinary clustering
 * of failures (shared fixtures, one broken dependency failing many tests) is not mistaken for a spike.
 *
 * Only default-branch runs are used, for the baseline and for the check (see isInfraSuspect; feature
 * branches fail on purpose while work is in progress). Per run: n = passed + failed + errored
 * (skipped excluded), f = failed + errored, x = f / n; runs with n = 0 are ignored. Cases of
 * quarantined tests (RunTest.quarantined) count in n but not in f, nor as newly failing or
 * recurrent: their failures are known (docs/quarantine.md).
 *
 * Baseline: exponentially decayed sums with λ = 0.99 (effective window ≈ 100 runs) of 1, λ-squared
 * weights, n, f, x, x², x³ and x⁴; μ = Σf / Σn floored at 0.5 / n̄ (a project with no failures
 * yet still has a finite tail); overdispersion ρ by the method of moments from
 * Var_w(x) = μ(1−μ)/n̄ · (1 + (n̄−1)ρ), clamped to [0.01, 0.5]; the run is compared with
 * BetaBinomial(n, a, b), a = μ(1−ρ)/ρ, b = (1−μ)(1−ρ)/ρ. It trips when all hold: runs_seen ≥ 20
 * baseline runs, n ≥ 20, f ≥ 5, x ≥ 2μ, x − μ ≥ 0.02 and P(X ≥ f) ≤ 1e-3 (the tail is summed in
 * log space, see statistics.ts).
 *
 * Var_w(x) enters the method of moments as a one-standard-error upper bound,
 * Var + √((m₄ − Var²) / n_eff), with m₄ the weighted fourth central moment and n_eff = (Σw)²/Σw²
 * (Kish). Failure rates are right-skewed, so a window's sample variance is usually below the
 * true one, and because the tail is convex in ρ the point estimate gave about twice the nominal
 * false-alarm rate. Seeded simulation (2 % failures, n = 200, ρ = 0.02–0.05 plus 5-test suite
 * clusters in 3 % of runs, 10 × 1,000 runs): point estimate 1.9–2.4 false events per 1,000 runs,
 * with the bound 1.1–1.2, the same as with the true ρ plugged in (α = 1e-3 itself allows ~1);
 * recall of a jump from 0.5 % to 10 % failing (n = 500, ρ = 0.01) 100 % → 96 %.
 *
 * Baseline protection: a run that trips is not folded into the baseline, and neither is an
 * infra-suspect run (`judgeInfra`, judged on the tests that newly fail: a test whose last executed
 * status in the map below was a failure is persistent and not judged, so a project where half the
 * tests always fail is not one long outage, and its runs do build the baseline): such runs are evaluated like any other (they may trip),
 * but an outage must not raise μ and ρ and blind the check for the next hundred runs — which is
 * what folding it in during the first 20 runs, when nothing can trip yet, would do.
 *
 * Per-test entries (`SpikeTestEntry`, stored in the test's row; a run sees its own tests' only):
 *
 * Newly failing tests: `l` = default-branch run sequence number · 4 + last executed status (0
 * passed, 1 failed, 2 errored, 3 none yet — only skipped). A test failing now is "newly failing"
 * when its previous executed appearance passed. `l` is also the guard's memory. Infra-suspect runs
 * read it but write only tests that have none yet (their failures say nothing about known tests;
 * an unknown test's outcome is all there is). A sweep every 50 runs (`pr`) makes `l` of a test
 * not seen for 200 default-branch runs count as absent.
 *
 * Recurrent failers: `f` = `seq` of the test's last failure in a default-branch run
 * that neither tripped nor was infra-suspect. A failing test that also failed within the previous
 * 50 such runs is *recurrent* (an intermittent test). A run trips only if its *fresh* failures
 * (failing − recurrent) pass the same guards and tail test on their own: a cluster of known
 * intermittent tests failing together (systemic flakiness, Parry et al.) is the flakiness alert's
 * business, whereas a spike is normally stable tests failing at once. Failures of a tripping run
 * are not recorded as recurrent; they go to a third map (`tf`, key → `seq` of the last tripping
 * run it failed in). When at least 5 of a run's failing tests, and at least half of them, failed
 * in a tripping run within the previous 50 runs (and not since), the run repeats that spike's
 * tests: a recurring co-failing group (systemic flakiness, which the flakiness check now flags as
 * `burst_recurred`), and those tests count as recurrent too. Two spikes that share a few tests,
 * or two outages of different suites, are still judged on all their failures; two outages of the
 * same suite within 50 runs are a recurring group. Without per-test
 * rows every failure is fresh. Measured on the simulated corpus (`npm run bench:detection`): false
 * events 23 → 3 (they were co-failing flaky pools at ρ = 0.05), precision 0.896 → 0.984, at the
 * cost of small-anomaly recall 0.554 → 0.495 (outages of small suites that hold an intermittent
 * test, 10 % spikes at ρ = 0.05); large-anomaly recall stays 1.000. The repeat rule: on the main
 * corpus one false event fewer (a pool shock at ρ = 0.05 repeating one 45 runs earlier); on the
 * co_failing_group streams false events 252 → 28 (a group of 5–20 tests failing together in 3–10 %
 * of the runs tripped every time), large-spike recall there 0.73 → 0.61 (the group's co-failures,
 * now folded into the baseline, widen ρ).
 *
 * Cost per run: O(tests in the run), whatever the history or the number of known tests; the beta-binomial tail
 * (O(n)) only for runs that pass the cheap guards. No clock.
 */
import { betaBinomialCriticalCount, betaBinomialUpperTail, wilsonInterval } from "./statistics";
import {
  type CaseStatus,
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

const FAILURE_RATE_SPIKE_DETECTOR_VERSION = "failure_rate_spike/2";

const DECAY = 0.99;
const RHO_MIN = 0.01;
const RHO_MAX = 0.5;
const ALPHA = 1e-3;
const MIN_RUNS_SEEN = 20;
const MIN_EXECUTED = 20;
const MIN_FAILURES = 5;
const MIN_RATIO = 2;
const MIN_DELTA = 0.02;
const MU_FLOOR_NUMERATOR = 0.5;

const STATUS_UNSEEN_RUNS = 200;
const PRUNE_EVERY_RUNS = 50;
const NEWLY_FAILING_LIST = 20;
const RECURRENT_RUNS = 50;
const MAX_STRING = 500;

const CODE: Record<CaseStatus, number> = { passed: 0, failed: 1, errored: 2, skipped: 3 };
const NONE_EXECUTED = 3;

/** A test's entry (any field absent when unknown): see the header. */
export type SpikeTestEntry = { l?: number; f?: number; t?: number };

/** The project-level state; each test's entry (`SpikeTestEntry`) is stored in the test's row. */
export type FailureRateSpikeState = {
  /** State schema version (2: per-test entries stored apart; version 1 held them in `last`, `lf`, `tf`). */
  v: 2;
  /** Runs folded into the baseline (runs_seen). */
  seen: number;
  /** Decayed sums: Σλ^a, Σλ^(2a), Σλ^a·n, Σλ^a·f, Σλ^a·x, Σλ^a·x², Σλ^a·x³, Σλ^a·x⁴. */
  w: number;
  w2: number;
  sn: number;
  sf: number;
  sx: number;
  sxx: number;
  sx3: number;
  sx4: number;
  /** Consecutive evaluated runs without a trip. */
  normal: number;
  /** Default-branch runs with executed tests processed (the clock of the entries). */
  seq: number;
  /** `seq` of the last sweep (see the header). */
  pr: number;
};

/** Version 1: the same project-level fields, plus every test's entry in three maps. */
type LegacySpikeState = Omit<FailureRateSpikeState, "v"> & {
  v: 1;
  last: Record<string, number>;
  lf?: Record<string, number>;
  tf?: Record<string, number>;
};

type Baseline = { mu: number; rho: number; rhoPoint: number; nBar: number; a: number; b: number };

function isFail(status: CaseStatus): boolean {
  return status === "failed" || status === "errored";
}

function isFailCode(code: number): boolean {
  return code === CODE.failed || code === CODE.errored;
}

export function baselineOf(state: FailureRateSpikeState): Baseline | null {
  if (state.w <= 0 || state.sn <= 0) return null;
  const nBar = state.sn / state.w;
  const floor = Math.min(0.5, MU_FLOOR_NUMERATOR / nBar);
  const mu = Math.min(1 - floor, Math.max(state.sf / state.sn, floor));
  const m = state.sx / state.w;
  const e2 = state.sxx / state.w;
  const e3 = state.sx3 / state.w;
  const e4 = state.sx4 / state.w;
  const variance = Math.max(0, e2 - m * m);
  const m4 = Math.max(0, e4 - 4 * e3 * m + 6 * e2 * m * m - 3 * m ** 4);
  const nEff = state.w2 > 0 ? (state.w * state.w) / state.w2 : 1;
  const varianceBound = variance + Math.sqrt(Math.max(0, m4 - variance * variance) / nEff);
  const rhoFrom = (v: number) => {
    const raw = nBar > 1 ? ((v * nBar) / (mu * (1 - mu)) - 1) / (nBar - 1) : RHO_MAX;
    return Math.min(RHO_MAX, Math.max(RHO_MIN, Number.isFinite(raw) ? raw : RHO_MAX));
  };
  const rho = rhoFrom(varianceBound);
  return { mu, rho, rhoPoint: rhoFrom(variance), nBar, a: (mu * (1 - rho)) / rho, b: ((1 - mu) * (1 - rho)) / rho };
}

type Outcome = { key: string; name: string; status: CaseStatus; quarantined: boolean };

/** One outcome per key of a chunk (any failure wins, then any pass, else skipped), in key order. */
function outcomes(tests: readonly RunTest[]): Outcome[] {
  const byKey = new Map<string, Outcome>();
  for (const test of tests) {
    const existing = byKey.get(test.key);
    if (!existing) {
      byKey.set(test.key, { key: test.key, name: test.name, status: test.status, quarantined: test.quarantined === true });
      continue;
    }
    existing.quarantined ||= test.quarantined === true;
    if (isFail(existing.status)) continue;
    if (isFail(test.status) || test.status === "passed") existing.status = test.status;
  }
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

const WINDOW_DESCRIPTION = `default-branch runs, exponentially decayed baseline (λ = ${DECAY}, about ${Math.round(1 / (1 - DECAY))} runs); runs that tripped and infra-suspect runs are not folded in`;

// ---------------------------------------------------------------------------------------------
// The check

function initialState(): FailureRateSpikeState {
  return { v: 2, seen: 0, w: 0, w2: 0, sn: 0, sf: 0, sx: 0, sxx: 0, sx3: 0, sx4: 0, normal: 0, seq: 0, pr: 0 };
}

const hasNumbers = (s: Partial<FailureRateSpikeState>) =>
  [s.seen, s.w, s.w2, s.sn, s.sf, s.sx, s.sxx, s.sx3, s.sx4, s.normal, s.seq, s.pr].every(
    (value) => typeof value === "number" && Number.isFinite(value),
  );

function isValidState(state: unknown): state is FailureRateSpikeState {
  if (typeof state !== "object" || state === null) return false;
  const s = state as Partial<FailureRateSpikeState>;
  return s.v === 2 && hasNumbers(s);
}

function isLegacyState(state: unknown): state is LegacySpikeState {
  if (typeof state !== "object" || state === null) return false;
  const s = state as Partial<LegacySpikeState>;
  return s.v === 1 && hasNumbers(s as Partial<FailureRateSpikeState>) && typeof s.last === "object" && s.last !== null;
}

/** What the decision needs of the run's tests, counted over its chunks (the first pass). */
type Tally = {
  quarantinedFailed: number;
  quarantinedErrored: number;
  persistent: PersistentCount;
  /** The first 20 newly failing tests' names (capped), and how many there are. */
  newlyFailing: string[];
  newlyFailingCount: number;
  failing: number;
  recurrent: number;
  repeated: number;
};

function start(input: FailureRateSpikeState, run: RunHeader): CheckPass<FailureRateSpikeState, SpikeTestEntry> {
  const state = isValidState(input) ? input : initialState();
  const executed = run.counts.passed + run.counts.failed + run.counts.errored;
  // Default-branch runs with executed tests only: the others leave the state and the entries alone.
  const checked = run.onDefaultBranch && executed > 0;
  const seq = state.seq + 1;
  // `l` as the last sweep left it (see the header).
  const lastOf = (stored: TestEntries<SpikeTestEntry>, key: string): number | null => {
    const l = stored.get(key)?.l;
    return l !== undefined && state.pr - Math.floor(l / 4) <= STATUS_UNSEEN_RUNS ? l : null;
  };
  const tally: Tally = {
    quarantinedFailed: 0,
    quarantinedErrored: 0,
    persistent: { failed: 0, errored: 0 },
    newlyFailing: [],
    newlyFailingCount: 0,
    failing: 0,
    recurrent: 0,
    repeated: 0,
  };
  let decision: Decision = { state, events: [], suspect: false, tripped: false };
  return {
    observe(tests, stored) {
      if (!checked) return;
      // Failures of quarantined tests are known (docs/quarantine.md): they stay in the executed total
      // but not in the failing count, here and in the baseline.
      for (const test of tests) {
        if (!test.quarantined) continue;
        if (test.status === "failed") tally.quarantinedFailed++;
        else if (test.status === "errored") tally.quarantinedErrored++;
      }
      // The infrastructure guard judges the tests that newly fail: a test whose last executed status
      // here was a failure is persistent (see judgeInfra).
      countPersistent(tally.persistent, tests, (key) => {
        const l = lastOf(stored, key);
        return l !== null && isFailCode(l % 4);
      });
      // Newly failing tests and recurrent failers.
      for (const outcome of outcomes(tests)) {
        // A quarantined test's failure is not counted as failing (above), so not as newly failing or recurrent either.
        if (!isFail(outcome.status) || outcome.quarantined) continue;
        const entry = stored.get(outcome.key);
        const previous = lastOf(stored, outcome.key);
        if (previous !== null && previous % 4 === CODE.passed) {
          if (tally.newlyFailing.length < NEWLY_FAILING_LIST) tally.newlyFailing.push(cap(outcome.name, MAX_STRING) as string);
          tally.newlyFailingCount++;
        }
        tally.failing++;
        if (entry?.f !== undefined && seq - entry.f <= RECURRENT_RUNS) tally.recurrent++;
        else if (entry?.t !== undefined && seq - entry.t <= RECURRENT_RUNS) tally.repeated++;
      }
    },
    decide() {
      if (checked) decision = decide(state, run, tally);
    },
    write(tests, stored) {
      const changed = new Map<string, SpikeTestEntry>();
      if (!checked) return changed;
      const { suspect, tripped } = decision;
      for (const outcome of outcomes(tests)) {
        const entry = stored.get(outcome.key);
        const previous = lastOf(stored, outcome.key);
        // A suspect run records only the tests not known yet (the guard's memory rule, recordsOutcome).
        let next: SpikeTestEntry | undefined;
        if (recordsOutcome(suspect, previous !== null)) {
          const code = outcome.status === "skipped" ? (previous === null ? NONE_EXECUTED : previous % 4) : CODE[outcome.status];
          next = { ...entry, l: seq * 4 + code };
        }
        // Recurrent failers: this run's failures unless it tripped or is infra-suspect; tripped-run
        // failures when it trips (for the repeat rule).
        if (isFail(outcome.status) && !outcome.quarantined && (tripped || !suspect)) {
          next = tripped ? { ...(next ?? entry), t: seq } : { ...(next ?? entry), f: seq };
        }
        if (next) changed.set(outcome.key, next);
      }
      return changed;
    },
    finish: () => ({ state: decision.state, events: decision.events }),
  };
}

type Decision = { state: FailureRateSpikeState; events: CheckEvent[]; suspect: boolean; tripped: boolean };

function decide(state: FailureRateSpikeState, run: RunHeader, tally: Tally): Decision {
  const executed = run.counts.passed + run.counts.failed + run.counts.errored;
  const failed = run.counts.failed - Math.min(run.counts.failed, tally.quarantinedFailed);
  const errored = run.counts.errored - Math.min(run.counts.errored, tally.quarantinedErrored);
  const failing = failed + errored;
  const x = failing / executed;
  const verdict = judgeInfraCounts(run.counts, tally.persistent);
  const suspect = verdict.suspect;
  const seq = state.seq + 1;
  const pr = seq - state.pr >= PRUNE_EVERY_RUNS ? seq : state.pr;

  // A spike that repeats: when at least half of the failing tests failed together in a run that
  // tripped within the last 50 runs (and not since), they are a recurring co-failing group —
  // systemic flakiness, the flakiness alert's business — and count as recurrent too.
  const { repeated } = tally;
  let { recurrent } = tally;
  const repeat = repeated >= MIN_FAILURES && 2 * repeated >= tally.failing;
  if (repeat) recurrent += repeated;

  // The test against the baseline as it stood before this run.
  const baseline = baselineOf(state);
  const events: CheckEvent[] = [];
  let tripped = false;
  const fresh = Math.max(0, failing - recurrent);
  const passesGuards = (count: number) =>
    baseline !== null &&
    state.seen >= MIN_RUNS_SEEN &&
    executed >= MIN_EXECUTED &&
    count >= MIN_FAILURES &&
    count / executed >= MIN_RATIO * baseline.mu &&
    count / executed - baseline.mu >= MIN_DELTA;
  if (baseline && passesGuards(failing)) {
    const p = betaBinomialUpperTail(failing, executed, baseline.a, baseline.b);
    const pFresh = recurrent === 0 ? p : passesGuards(fresh) ? betaBinomialUpperTail(fresh, executed, baseline.a, baseline.b) : 1;
    if (p <= ALPHA && pFresh <= ALPHA) {
      tripped = true;
      events.push({
        metadata: spikeMetadata({ run, state, baseline, tally, verdict, executed, failed, errored, failing, recurrent, fresh, p, pFresh }),
      });
    }
  }

  // Fold the run into the baseline unless it tripped or looks like broken infrastructure.
  let { seen, w, w2, sn, sf, sx, sxx, sx3, sx4 } = state;
  if (!tripped && !suspect) {
    seen += 1;
    w = DECAY * w + 1;
    w2 = DECAY * DECAY * w2 + 1;
    sn = DECAY * sn + executed;
    sf = DECAY * sf + failing;
    sx = DECAY * sx + x;
    sxx = DECAY * sxx + x * x;
    sx3 = DECAY * sx3 + x * x * x;
    sx4 = DECAY * sx4 + x * x * x * x;
  }
  const normal = tripped ? 0 : state.normal + 1;
  return { state: { v: 2, seen, w, w2, sn, sf, sx, sxx, sx3, sx4, normal, seq, pr }, events, suspect, tripped };
}

/** What a spike's event says: the run's rate against the baseline, the test's figures and thresholds, the guards' findings. */
function spikeMetadata(input: {
  run: RunHeader;
  state: FailureRateSpikeState;
  baseline: Baseline;
  tally: Tally;
  verdict: ReturnType<typeof judgeInfraCounts>;
  executed: number;
  failed: number;
  errored: number;
  failing: number;
  recurrent: number;
  fresh: number;
  p: number;
  pFresh: number;
}): Record<string, unknown> {
  const { run, state, baseline, tally, verdict, executed, failed, errored, failing, recurrent, fresh, p, pFresh } = input;
  const x = failing / executed;
  const suspect = verdict.suspect;
  const critical = betaBinomialCriticalCount(executed, baseline.a, baseline.b, ALPHA);
  const neededFailures = Math.max(
    MIN_FAILURES,
    Math.ceil(MIN_RATIO * baseline.mu * executed - 1e-9),
    Math.ceil((baseline.mu + MIN_DELTA) * executed - 1e-9),
    critical,
  );
  const wilson = wilsonInterval(failing, executed);
  return {
    subject: "run",
    run_number: run.number,
    executed,
    failed,
    errored,
    quarantined_failing_count: run.counts.failed + run.counts.errored - failing,
    failure_rate: round(x, 4),
    failure_rate_wilson_95: { low: round(wilson.low, 4), high: round(wilson.high, 4) },
    baseline_failure_rate: round(baseline.mu, 5),
    baseline_effective_runs: round(state.w, 1),
    baseline_mean_executed: round(baseline.nBar, 1),
    overdispersion_rho: round(baseline.rho, 4),
    overdispersion_rho_point_estimate: round(baseline.rhoPoint, 4),
    ratio_to_baseline: round(x / baseline.mu, 2),
    delta_pp: round((x - baseline.mu) * 100, 2),
    p_value: p,
    alpha: ALPHA,
    statistic: "beta_binomial_tail",
    observed: round(x, 4),
    threshold: round(neededFailures / executed, 4),
    threshold_failures: neededFailures,
    thresholds: {
      min_runs_seen: MIN_RUNS_SEEN,
      min_executed: MIN_EXECUTED,
      min_failures: MIN_FAILURES,
      min_ratio_to_baseline: MIN_RATIO,
      min_delta_pp: MIN_DELTA * 100,
      alpha: ALPHA,
      rho_floor: RHO_MIN,
      rho_ceiling: RHO_MAX,
      decay: DECAY,
    },
    window: WINDOW_DESCRIPTION,
    newly_failing_tests: tally.newlyFailing,
    newly_failing_count: tally.newlyFailingCount,
    recurrent_failing_count: recurrent,
    fresh_failing_count: fresh,
    p_value_fresh: pFresh,
    infra_suspect: suspect,
    infra_suspect_reason: verdict.reason,
    persistent_failing_count: verdict.persistent,
    detector_version: FAILURE_RATE_SPIKE_DETECTOR_VERSION,
  };
}

function fromLegacy(
  legacy: unknown,
  rekey: (oldKey: string) => string | null,
): { state: FailureRateSpikeState; tests: Map<string, SpikeTestEntry> } | null {
  if (!isLegacyState(legacy)) return null;
  const { v: _v, last, lf, tf, ...project } = legacy;
  const tests = new Map<string, SpikeTestEntry>();
  // Two old keys of one test (the same test in two suites): the latest value of each field wins.
  const merge = (map: Record<string, number> | undefined, field: keyof SpikeTestEntry) => {
    for (const [oldKey, value] of Object.entries(map ?? {})) {
      const key = rekey(oldKey);
      if (key === null) continue;
      const entry = tests.get(key) ?? {};
      if ((entry[field] ?? -1) < value) tests.set(key, { ...entry, [field]: value });
    }
  };
  merge(last, "l");
  merge(lf, "f");
  merge(tf, "t");
  return { state: { v: 2, ...project }, tests };
}

export const failureRateSpikeCheck: Check<FailureRateSpikeState, SpikeTestEntry> = {
  version: FAILURE_RATE_SPIKE_DETECTOR_VERSION,
  initialState,
  start,
  fromLegacy,
};
