/**
 * Unit tests of the `performance_regression` check (src/checks/performance-regression.ts,
 * docs/alert-checks.md#performance_regression): pure `(state, run) → (state', events)` on seeded synthetic runs, no database.
 */
import { describe, expect, it } from "vitest";
import { type PerformanceRegressionState, performanceRegressionCheck } from "../../src/checks/performance-regression";
import { testIdentityKey } from "../../src/lib/test-identity";
import { type CaseStatus, type CheckEvent, type InMemoryState, inMemoryCheck, type RunSummary, type RunTest } from "../../src/checks/types";
import { mulberry32 as prng } from "../../src/lib/seeded-random";
import { feedCheck } from "./support/feed";

const check = inMemoryCheck(performanceRegressionCheck);
type State = InMemoryState<PerformanceRegressionState, number>;

// ---------------------------------------------------------------------------------------------
// Seeded noise and a run builder

/** Standard normal by Box–Muller. */
function gauss(rng: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
}

const SECOND = 1000;

type TestCase = { name: string; ms: number | null; status?: CaseStatus };

function makeTest(c: TestCase): RunTest {
  return {
    key: testIdentityKey({ classname: "pkg.Class", name: c.name }),
    suite: "suite",
    classname: "pkg.Class",
    name: c.name,
    status: c.status ?? "passed",
    attempts: [],
    durationMs: c.ms,
  };
}

function buildRun(
  number: number,
  durationMs: number | null,
  cases: TestCase[] = [],
  options: { onDefault?: boolean; failed?: number } = {},
): RunSummary {
  const tests = cases.map(makeTest);
  const count = (status: CaseStatus) => tests.filter((test) => test.status === status).length;
  const failed = options.failed ?? count("failed");
  const passed = cases.length > 0 ? count("passed") : 10;
  return {
    runId: 1000 + number,
    number,
    branch: options.onDefault === false ? "feature" : "main",
    commitSha: `sha${number}`,
    createdAt: new Date(Date.UTC(2024, 0, 1) + number * 3_600_000),
    durationMs,
    onDefaultBranch: options.onDefault ?? true,
    counts: {
      tests: passed + failed + count("errored") + count("skipped"),
      passed,
      failed,
      errored: count("errored"),
      skipped: count("skipped"),
    },
    tests,
  };
}

const feed = (runs: RunSummary[], start: State = check.initialState(), roundTrip = false) => feedCheck(check, runs, start, roundTrip);

/** A run's speed factor: 1.3 on a slow runner (probability `share`), times log-normal noise σ. */
function runnerFactor(rng: () => number, share: number, sigma = 0.02): number {
  return (rng() < share ? 1.3 : 1) * Math.exp(sigma * gauss(rng));
}

/** Run durations around `levelMs` with log-normal noise σ. */
function durations(rng: () => number, count: number, levelMs: number, sigma = 0.02): number[] {
  return Array.from({ length: count }, () => levelMs * Math.exp(sigma * gauss(rng)));
}

/**
 * A project of `tests` tests: the first `slow` take 0.6 s … ~4 s, the rest 50–200 ms; log-noise
 * σ = 0.1 and 5 % slow outliers (1.5–3×), as real CI timings have. `override(runIndex, testIndex)`
 * multiplies one test's time (an injected regression). The run duration is the sum of the tests.
 */
function projectRuns(
  seed: number,
  count: number,
  options: { tests?: number; slow?: number; override?: (run: number, test: number) => number; sigma?: number; outliers?: number } = {},
): RunSummary[] {
  const rng = prng(seed);
  const total = options.tests ?? 60;
  const slow = options.slow ?? 30;
  const base = Array.from({ length: total }, (_, i) => (i < slow ? 600 + 120 * i : 50 + ((i * 37) % 150)));
  return Array.from({ length: count }, (_, r) => {
    const cases = base.map((ms, i) => {
      let value = ms * Math.exp((options.sigma ?? 0.1) * gauss(rng)) * (options.override?.(r, i) ?? 1);
      if (rng() < (options.outliers ?? 0.05)) value *= 1.5 + 1.5 * rng();
      return { name: `test_${i}`, ms: Math.round(value) };
    });
    return buildRun(r + 1, cases.reduce((sum, c) => sum + (c.ms ?? 0), 0) + 5 * SECOND, cases);
  });
}

const meta = (event: CheckEvent) => event.metadata as Record<string, any>;
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

// ---------------------------------------------------------------------------------------------

describe("performance_regression: run duration", () => {
  it("trips once on 30 runs of ~60 s followed by 10 runs of ~120 s", () => {
    const rng = prng(7);
    const values = [...durations(rng, 30, 60 * SECOND), ...durations(rng, 10, 120 * SECOND)];
    const { events, eventsByRun } = feed(values.map((ms, i) => buildRun(i + 1, ms)));
    expect(events).toHaveLength(1);
    const [runNumber] = [...eventsByRun.keys()];
    expect(runNumber).toBeGreaterThan(30);
    expect(runNumber).toBeLessThanOrEqual(40);
    const m = meta(events[0]!);
    expect(m).toMatchObject({
      subject: "run_duration",
      statistic: "mann_whitney_u",
      alpha: 1e-3,
      detector_version: "performance_regression/3",
    });
    expect(m.p_value).toBeLessThanOrEqual(1e-3);
    expect(m.rel_change).toBeGreaterThanOrEqual(0.1);
    expect(m.delta_ms).toBeGreaterThanOrEqual(10 * SECOND);
    expect(m.effect_size_mads).toBeGreaterThanOrEqual(1);
    expect(m.baseline).toMatchObject({ from_run_number: 1, n: runNumber! - 8 });
    expect(m.baseline.median_ms).toBeGreaterThan(55 * SECOND);
    expect(m.baseline.median_ms).toBeLessThan(65 * SECOND);
    expect(m.baseline.mad_ms).toBeGreaterThan(0);
    expect(m.recent).toMatchObject({ from_run_number: runNumber! - 7, to_run_number: runNumber, n: 8 });
    expect(m.recent.median_ms).toBeGreaterThan(100 * SECOND);
    expect(m.observed).toBe(m.recent.median_ms);
    expect(m.threshold).toBeGreaterThanOrEqual(m.baseline.median_ms + 10 * SECOND);
    expect(typeof m.window).toBe("string");
    expect(m.top_contributors).toEqual([]);
    expect(m.monitored_series).toBe(0);
  });

  it("needs the conditions at two points in a row: the point before the trip only marks the series", () => {
    const rng = prng(7);
    const values = [...durations(rng, 30, 60 * SECOND), ...durations(rng, 10, 120 * SECOND)];
    const runs = values.map((ms, i) => buildRun(i + 1, ms));
    const [tripRun] = [...feed(runs).eventsByRun.keys()];
    const beforeTrip = feed(runs.slice(0, tripRun! - 1));
    expect(beforeTrip.events).toEqual([]);
    expect(beforeTrip.state.project.run.c).toBe(1);
    expect(feed(runs.slice(0, tripRun! - 2)).state.project.run.c).toBeUndefined();
    // Without the mark, the same run only marks the series; the one after it trips.
    const { c: _mark, ...unmarkedRun } = beforeTrip.state.project.run;
    const unmarked = check.update({ ...beforeTrip.state, project: { ...beforeTrip.state.project, run: unmarkedRun } }, runs[tripRun! - 1]!);
    expect(unmarked.events).toEqual([]);
    expect(unmarked.state.project.run.c).toBe(1);
    expect(check.update(unmarked.state, runs[tripRun!]!).events).toHaveLength(1);
  });

  it("the long window catches a small sustained step the 8-run window cannot: +7 % on 200 s runs", () => {
    const rng = prng(11);
    const values = [...durations(rng, 30, 200 * SECOND, 0.02), ...durations(rng, 25, 214 * SECOND, 0.02)];
    const { events, eventsByRun } = feed(values.map((ms, i) => buildRun(i + 1, ms)));
    expect(events).toHaveLength(1);
    const [runNumber] = [...eventsByRun.keys()];
    expect(runNumber).toBeGreaterThan(40);
    const m = meta(events[0]!);
    expect(m).toMatchObject({ window_kind: "long", alpha: 1e-4, min_rel_change: 0.05, min_effect_size_mads: 0.5 });
    // The run series' long window: the last 24 points against up to 48 before them (≥ 20).
    expect(m.recent.n).toBe(24);
    expect(m.baseline.n).toBeGreaterThanOrEqual(20);
    expect(m.baseline.n).toBeLessThanOrEqual(48);
    expect(m.window).toContain("last 24 default-branch runs vs up to 48");
    expect(m.rel_change).toBeLessThan(0.1);
    expect(m.p_value).toBeLessThanOrEqual(1e-4);
    // The same history with a +2 % step (below the long window's 5 % minimum) stays quiet.
    const rng2 = prng(11);
    const small = [...durations(rng2, 30, 200 * SECOND, 0.005), ...durations(rng2, 25, 204 * SECOND, 0.005)];
    expect(feed(small.map((ms, i) => buildRun(i + 1, ms))).events).toEqual([]);
  });

  it("the run series' long window (24 vs up to 48) finds a +10 % step under a 20 % share of 1.3× slower runners", () => {
    // The runner mix makes the run duration bimodal (log-σ ≈ 0.1); +10 % moves each mode. 20 vs 20
    // points give U-test z ≈ 3.3 for this shift (p ≈ 5·10⁻⁴ > α = 10⁻⁴); 24 vs 48 give z ≈ 4.2.
    let detected = 0;
    for (let seed = 1; seed <= 10; seed++) {
      const rng = prng(seed);
      const values = Array.from({ length: 80 }, (_, i) => 200 * SECOND * (i >= 50 ? 1.1 : 1) * runnerFactor(rng, 0.2));
      const { eventsByRun } = feed(values.map((ms, i) => buildRun(i + 1, ms)));
      const runs = [...eventsByRun.keys()];
      expect(runs.every((runNumber) => runNumber > 50)).toBe(true);
      if (runs.length > 0 && runs[0]! <= 80) detected++;
      if (seed === 1) {
        // This seed trips on the long window (the short one never sees enough).
        expect(runs).toHaveLength(1);
        const m = meta(eventsByRun.get(runs[0]!)![0]!);
        expect(m).toMatchObject({ subject: "run_duration", window_kind: "long", alpha: 1e-4 });
        expect(m.recent).toMatchObject({ n: 24, to_run_number: runs[0] });
        expect(m.baseline.n).toBeGreaterThan(40);
        expect(m.rel_change).toBeGreaterThanOrEqual(0.05);
        expect(m.rel_change).toBeLessThan(0.1);
        expect(m.p_value).toBeLessThanOrEqual(1e-4);
      }
    }
    expect(detected).toBeGreaterThanOrEqual(8); // measured: 9 of 10 within 30 runs of the step
  });

  it("trips on a gradual drift (+20 % over 60 runs) under the same runner mix", () => {
    let longFirst = 0;
    for (let seed = 1; seed <= 10; seed++) {
      const rng = prng(100 + seed);
      const values = Array.from(
        { length: 140 },
        (_, i) => 200 * SECOND * (1 + (0.2 * Math.min(60, Math.max(0, i - 50))) / 60) * runnerFactor(rng, 0.2),
      );
      const { eventsByRun } = feed(values.map((ms, i) => buildRun(i + 1, ms)));
      const runs = [...eventsByRun.keys()];
      // The first event comes during the drift (runs 51–110) or within 30 runs of its end.
      expect(runs.length).toBeGreaterThan(0);
      expect(runs[0]).toBeGreaterThan(55);
      expect(runs[0]).toBeLessThanOrEqual(140);
      const m = meta(eventsByRun.get(runs[0]!)![0]!);
      expect(m.rel_change).toBeGreaterThan(0);
      if (m.window_kind === "long") longFirst++;
    }
    expect(longFirst).toBeGreaterThanOrEqual(8); // measured: 9 of 10 (the other by the short window)
  });

  it("resets the baseline: later slow runs do not re-alert", () => {
    const rng = prng(8);
    const values = [...durations(rng, 30, 60 * SECOND), ...durations(rng, 200, 120 * SECOND)];
    const { events, state } = feed(values.map((ms, i) => buildRun(i + 1, ms)));
    expect(events).toHaveLength(1);
    expect(state.project.run.ev).not.toBeNull();
    expect(state.project.run.ev!.level_ms).toBeGreaterThan(55 * SECOND);
  });

  it("trips again on a second, later step", () => {
    const rng = prng(9);
    const values = [...durations(rng, 30, 60 * SECOND), ...durations(rng, 60, 120 * SECOND), ...durations(rng, 20, 200 * SECOND)];
    const { eventsByRun } = feed(values.map((ms, i) => buildRun(i + 1, ms)));
    const runs = [...eventsByRun.keys()];
    expect(runs).toHaveLength(2);
    expect(runs[0]).toBeLessThanOrEqual(40);
    expect(runs[1]).toBeGreaterThan(90);
  });

  it("does not trip on a single slow outlier", () => {
    const rng = prng(10);
    const values = durations(rng, 60, 60 * SECOND);
    values[35] = 120 * SECOND;
    expect(feed(values.map((ms, i) => buildRun(i + 1, ms))).events).toEqual([]);
    // Nor when the outlier (3×) sits in the long window's 24 recent points for 24 runs in a row.
    const rng2 = prng(13);
    const long = Array.from({ length: 120 }, () => 200 * SECOND * runnerFactor(rng2, 0.2));
    long[69] = 600 * SECOND;
    expect(feed(long.map((ms, i) => buildRun(i + 1, ms))).events).toEqual([]);
  });

  it("does not trip on slow drift of 0.1 % per run (40 runs, and 400)", () => {
    for (const count of [40, 400]) {
      const rng = prng(11);
      const values = Array.from({ length: count }, (_, i) => 60 * SECOND * 1.001 ** i * Math.exp(0.01 * gauss(rng)));
      expect(feed(values.map((ms, i) => buildRun(i + 1, ms))).events).toEqual([]);
    }
  });

  it("bimodal runners (two classes 1.3× apart, randomly mixed): ≤ 1 false event per 1,000 runs", () => {
    // 10 seeds × 1,000 runs per share of slow runners; the target is ARL₀ ≥ 1,000 (BENCHMARKS.md).
    // (Measured: 4 events in total at a 50 % share, 0 at 20 %.)
    for (const share of [0.5, 0.2]) {
      let total = 0;
      for (let seed = 1; seed <= 10; seed++) {
        const rng = prng(share === 0.5 ? seed : 50 + seed);
        const values = Array.from({ length: 1000 }, () => 60 * SECOND * (rng() < share ? 1.3 : 1) * Math.exp(0.03 * gauss(rng)));
        total += feed(values.map((ms, i) => buildRun(i + 1, ms))).events.length;
      }
      expect(total).toBeLessThanOrEqual(10);
    }
  });

  it("ignores other branches, infra-suspect runs and runs without a duration", () => {
    const rng = prng(12);
    const base = durations(rng, 30, 60 * SECOND).map((ms, i) => buildRun(i + 1, ms));
    const { state } = feed(base);
    const noisy = [
      ...Array.from({ length: 12 }, (_, i) => buildRun(31 + i, 300 * SECOND, [], { onDefault: false })),
      ...Array.from({ length: 12 }, (_, i) => buildRun(43 + i, 300 * SECOND, [], { failed: 30 })), // ≥ 50 % failing: infra-suspect
      ...Array.from({ length: 12 }, (_, i) => buildRun(55 + i, null)),
    ];
    const after = feed(noisy, state);
    expect(after.events).toEqual([]);
    expect(after.state.project.run).toEqual(state.project.run);
  });
});

describe("performance_regression: the infrastructure guard judges the tests that newly fail", () => {
  /** 40 tests: 22 environment-dependent ones fail in every run (more than half), 18 pass; the run duration steps ×2 from run 41. */
  function envHalfRuns(count: number, outageAt: number[] = []): RunSummary[] {
    const rng = prng(21);
    return range(1, count + 1).map((number) => {
      const down = outageAt.includes(number);
      const cases: TestCase[] = Array.from({ length: 40 }, (_, i) => ({
        name: `test_${i}`,
        ms: 100,
        status: i < 22 || down ? "failed" : "passed",
      }));
      return buildRun(number, (number > 40 ? 120 : 60) * SECOND * Math.exp(0.02 * gauss(rng)), cases);
    });
  }

  it("a project where half the tests fail in every run has its run duration watched", () => {
    // The counts alone made every run an outage: no point was ever added, no event.
    const { events, state } = feed(envHalfRuns(60));
    expect(events.map((event) => meta(event).subject)).toEqual(["run_duration"]);
    expect(state.project.runs).toBe(59);
  });

  it("an outage there is still skipped: the tests that passed last time newly fail", () => {
    const { state } = feed(envHalfRuns(30));
    const outage = check.update(state, envHalfRuns(31, [31])[30]!);
    expect(outage.events).toEqual([]);
    expect(outage.state.project.runs).toBe(state.project.runs);
    expect(outage.state.project.run).toEqual(state.project.run);
  });
});

describe("performance_regression: per-test series", () => {
  it("flags one slow test (2.3 s → 4.6 s) with a Bonferroni α, without a run-level event", () => {
    // test_14 takes ~2.3 s; the run total (~60 s) moves by < 10 s, below the run floor.
    const runs = projectRuns(3, 120, { override: (r, i) => (r >= 60 && i === 14 ? 2 : 1) });
    const { events } = feed(runs);
    expect(events).toHaveLength(1);
    const m = meta(events[0]!);
    expect(m).toMatchObject({
      subject: "test_duration",
      name: "test_14",
      test_key: testIdentityKey({ classname: "pkg.Class", name: "test_14" }),
    });
    expect(m.monitored_series).toBeGreaterThanOrEqual(29);
    expect(m.monitored_series).toBeLessThanOrEqual(31);
    expect(m.alpha).toBeCloseTo(1e-3 / m.monitored_series, 15);
    expect(m.p_value).toBeLessThanOrEqual(m.alpha);
    expect(m.rel_change).toBeGreaterThanOrEqual(0.25);
    expect(m.recent.from_run_number).toBeGreaterThanOrEqual(55);
  });

  it("names the test behind a run-level regression in top_contributors", () => {
    // test_20 goes from ~3 s to ~33 s at run 41: the run total rises by ~30 s.
    const runs = projectRuns(4, 80, { override: (r, i) => (r >= 40 && i === 20 ? 11 : 1) });
    const { events } = feed(runs);
    const runEvents = events.filter((event) => meta(event).subject === "run_duration");
    const testEvents = events.filter((event) => meta(event).subject === "test_duration");
    expect(runEvents).toHaveLength(1);
    expect(testEvents.map((event) => meta(event).name)).toEqual(["test_20"]);
    const contributors = meta(runEvents[0]!).top_contributors as Record<string, any>[];
    expect(contributors.length).toBeGreaterThan(0);
    expect(contributors.length).toBeLessThanOrEqual(5);
    expect(contributors[0]).toMatchObject({ name: "test_20", test_key: testIdentityKey({ classname: "pkg.Class", name: "test_20" }) });
    expect(contributors[0]!.delta_ms).toBeGreaterThan(20 * SECOND);
    expect(contributors[0]!.recent_median_ms).toBeGreaterThan(contributors[0]!.baseline_median_ms);
  });

  it("a null project (30 slow tests, outliers) over 2,000 runs: ≤ 1 event per 1,000 runs (measured: 0)", () => {
    const { events } = feed(projectRuns(5, 2000));
    expect(events.length).toBeLessThanOrEqual(2);
  });

  it("monitors at most 100 tests, only those with a median ≥ 0.5 s", () => {
    const { state } = feed(projectRuns(6, 120, { tests: 260, slow: 150 }));
    expect(state.project.tests.length).toBe(100);
    expect(state.project.pool.length).toBeLessThanOrEqual(100);
    // The slowest 100 of the 150 slow tests (test_50 … test_149) are the ones monitored.
    const names = new Set(state.project.tests.map((series) => series.n));
    for (let i = 60; i < 150; i++) expect(names.has(`test_${i}`)).toBe(true);
    for (let i = 150; i < 260; i++) expect(names.has(`test_${i}`)).toBe(false);
  });

  it("admits the slowest newcomers to a full pool, ties by key, however the run is cut into chunks", () => {
    const named = (prefix: string, count: number, ms: number) => Array.from({ length: count }, (_, i) => ({ name: `${prefix}_${i}`, ms }));
    const members = named("member", 5, 2000);
    const runs = [
      buildRun(1, 60 * SECOND, members),
      // 150 tied newcomers at 0.6 s: the first 100 by key fill the pool.
      buildRun(2, 60 * SECOND, [...members, ...named("tie", 150, 600)]),
      // 150 slower ones at 0.7 s: each replaces the weakest tied entry until the pool holds only them.
      buildRun(3, 60 * SECOND, [...members, ...named("slower", 150, 700)]),
    ];
    const keysOf = (cases: TestCase[]) => cases.map((c) => makeTest(c).key).sort();
    const afterTies = feed(runs.slice(0, 2)).state.project;
    expect(afterTies.pool.map((entry) => entry.k)).toEqual(keysOf(named("tie", 150, 600)).slice(0, 100));
    const { state } = feed(runs);
    expect(state.project.tests.map((series) => series.n).sort()).toEqual(members.map((c) => c.name).sort());
    expect(state.project.pool.map((entry) => entry.k)).toEqual(keysOf(named("slower", 150, 700)).slice(0, 100));
  });

  it("reports at most 20 events per run and lists the rest on the last one", () => {
    // 100 slow tests (no outliers) all double at run 61: every one is named once (an event or a `more_regressed_tests` entry).
    const runs = projectRuns(7, 110, { tests: 100, slow: 100, sigma: 0.05, outliers: 0, override: (r) => (r >= 60 ? 2 : 1) });
    const { events, eventsByRun } = feed(runs);
    const named: string[] = [];
    for (const list of eventsByRun.values()) {
      expect(list.length).toBeLessThanOrEqual(20);
      for (const event of list) if (meta(event).subject === "test_duration") named.push(meta(event).name);
      const last = meta(list[list.length - 1]!);
      if (last.more_regressed_count !== undefined) {
        expect(list).toHaveLength(20);
        expect(last.more_regressed_tests).toHaveLength(last.more_regressed_count);
        for (const entry of last.more_regressed_tests) named.push(entry.name);
      }
    }
    expect([...eventsByRun.values()].some((list) => list.length === 20)).toBe(true);
    expect(new Set(named).size).toBe(named.length);
    expect(named).toHaveLength(100);
    expect(events.filter((event) => meta(event).subject === "run_duration")).toHaveLength(1);
  });
});

describe("performance_regression: engineering properties", () => {
  const runs = projectRuns(21, 160, { override: (r, i) => (r >= 100 && i === 25 ? 4 : 1) });

  it("is deterministic and never mutates the state it is given", () => {
    const a = feed(runs);
    const b = feed(runs);
    expect(JSON.stringify(a.events)).toBe(JSON.stringify(b.events));
    expect(JSON.stringify(a.state)).toBe(JSON.stringify(b.state));
    expect(a.events.length).toBeGreaterThan(0);

    const frozen = JSON.stringify(a.state);
    check.update(a.state, buildRun(1000, 500 * SECOND, [{ name: "test_25", ms: 60_000 }]));
    expect(JSON.stringify(a.state)).toBe(frozen);
  });

  it("gives the same events when the state goes through JSON between runs", () => {
    const direct = feed(runs);
    const stored = feed(runs, check.initialState(), true);
    expect(stored.events).toEqual(direct.events);
    expect(JSON.parse(JSON.stringify(stored.state))).toEqual(JSON.parse(JSON.stringify(direct.state)));
  });

  it("is unaffected by the order of test cases within a run", () => {
    const shuffled = runs.map((run) => ({ ...run, tests: [...run.tests].reverse() }));
    expect(feed(shuffled).events).toEqual(feed(runs).events);
  });

  it("starts afresh from an unrecognised stored state", () => {
    const result = check.update({ project: { v: 99 } as unknown as PerformanceRegressionState, tests: {} }, buildRun(1, 60 * SECOND));
    expect(result.state.project.runs).toBe(1);
    expect(result.events).toEqual([]);
  });

  it("keeps bounded state: the same JSON size after 100 and after 2,000 runs", () => {
    let state = check.initialState();
    let sizeAt100 = 0;
    const all = projectRuns(22, 2000);
    all.forEach((run, i) => {
      state = check.update(state, run).state;
      if (i + 1 === 100) sizeAt100 = JSON.stringify(state).length;
    });
    const sizeAt2000 = JSON.stringify(state).length;
    expect(state.project.run.l.length).toBeLessThanOrEqual(72);
    expect(state.project.tests.length).toBeLessThanOrEqual(100);
    expect(state.project.pool.length).toBeLessThanOrEqual(100);
    for (const series of state.project.tests) {
      expect(series.l.length).toBeLessThanOrEqual(40);
      expect(series.a.length).toBe(series.l.length);
      expect(Math.max(...series.a)).toBeLessThan(100); // ages, not absolute run numbers
    }
    for (const entry of state.project.pool) expect(entry.l.length).toBeLessThanOrEqual(5);
    expect(Math.abs(sizeAt2000 - sizeAt100) / sizeAt100).toBeLessThan(0.03);
  });
});
