/**
 * Unit tests of the `failure_rate_spike` check (src/checks/failure-rate-spike.ts,
 * docs/alert-checks.md): pure `(state, run) → (state', events)` on seeded synthetic runs, no database.
 */
import { describe, expect, it } from "vitest";
import { type FailureRateSpikeState, type SpikeTestEntry, baselineOf, failureRateSpikeCheck } from "../../src/checks/failure-rate-spike";
import { testIdentityKey } from "../../src/lib/test-identity";
import { type CaseStatus, type CheckEvent, type InMemoryState, inMemoryCheck, type RunSummary, type RunTest } from "../../src/checks/types";
import { mulberry32 as prng } from "../../src/lib/seeded-random";
import { feedCheck } from "./support/feed";

const check = inMemoryCheck(failureRateSpikeCheck);
type State = InMemoryState<FailureRateSpikeState, SpikeTestEntry>;

// ---------------------------------------------------------------------------------------------
// Seeded noise and a run builder

function gauss(rng: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
}

/** Gamma(k, 1) by Marsaglia & Tsang (2000), with the k < 1 boost. */
function gamma(rng: () => number, k: number): number {
  if (k < 1) return gamma(rng, k + 1) * rng() ** (1 / k);
  const d = k - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = gauss(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = rng();
    if (u < 1 - 0.0331 * x ** 4 || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

/** A run's failure probability drawn from Beta(mean μ, intra-run correlation ρ): beta-binomial noise. */
function betaDraw(rng: () => number, mu: number, rho: number): number {
  const x = gamma(rng, (mu * (1 - rho)) / rho);
  return x / (x + gamma(rng, ((1 - mu) * (1 - rho)) / rho));
}

function makeTest(name: string, status: CaseStatus): RunTest {
  return {
    key: testIdentityKey({ classname: "pkg.Class", name: name }),
    suite: "suite",
    classname: "pkg.Class",
    name,
    status,
    attempts: [],
    durationMs: 10,
  };
}

function runOf(number: number, statuses: CaseStatus[], options: { onDefault?: boolean } = {}): RunSummary {
  const tests = statuses.map((status, i) => makeTest(`test_${i}`, status));
  const count = (status: CaseStatus) => statuses.filter((s) => s === status).length;
  return {
    runId: 1000 + number,
    number,
    branch: options.onDefault === false ? "feature" : "main",
    commitSha: `sha${number}`,
    createdAt: new Date(Date.UTC(2024, 0, 1) + number * 3_600_000),
    durationMs: 60_000,
    onDefaultBranch: options.onDefault ?? true,
    counts: {
      tests: statuses.length,
      passed: count("passed"),
      failed: count("failed"),
      errored: count("errored"),
      skipped: count("skipped"),
    },
    tests,
  };
}

/** Counts only (no per-test rows): for the long seeded runs. */
function countsRun(number: number, executed: number, failed: number, errored = 0): RunSummary {
  return {
    ...runOf(number, []),
    counts: { tests: executed, passed: executed - failed - errored, failed, errored, skipped: 0 },
  };
}

/** `n` statuses with the given test indexes failing. */
function statuses(n: number, failing: Iterable<number>, failStatus: CaseStatus = "failed"): CaseStatus[] {
  const out: CaseStatus[] = new Array<CaseStatus>(n).fill("passed");
  for (const i of failing) out[i] = failStatus;
  return out;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

const feed = (runs: RunSummary[], start: State = check.initialState(), roundTrip = false) => feedCheck(check, runs, start, roundTrip);

const meta = (event: CheckEvent) => event.metadata as Record<string, any>;

/** 30 quiet runs of 50 tests (0 or 1 failing, seeded), numbered 1..30. */
function quietRuns(seed = 1, count = 30): RunSummary[] {
  const rng = prng(seed);
  return range(1, count + 1).map((number) => runOf(number, statuses(50, rng() < 0.5 ? [Math.floor(rng() * 50)] : [])));
}

/** A stable project: n tests, mean failure rate μ, beta-binomial noise ρ, plus a 5-test suite failing together in 3 % of runs. */
function stableProject(seed: number, runs: number, n: number, mu: number, rho: number): RunSummary[] {
  const rng = prng(seed);
  return range(1, runs + 1).map((number) => {
    const p = betaDraw(rng, mu, rho);
    let failed = 0;
    let errored = 0;
    for (let i = 0; i < n; i++) {
      if (rng() < p) {
        if (rng() < 0.2) errored++;
        else failed++;
      }
    }
    if (rng() < 0.03) failed = Math.min(n - errored, failed + 5);
    return countsRun(number, n, failed, errored);
  });
}

// ---------------------------------------------------------------------------------------------

describe("failure_rate_spike", () => {
  it("trips once on a run with 40 % failing after 30 quiet runs of 50 tests", () => {
    const spike = runOf(31, statuses(50, range(0, 20)));
    const { events, eventsByRun } = feed([...quietRuns(), spike]);
    expect(events).toHaveLength(1);
    expect([...eventsByRun.keys()]).toEqual([31]);
    const m = meta(events[0]!);
    expect(m).toMatchObject({
      subject: "run",
      executed: 50,
      failed: 20,
      errored: 0,
      failure_rate: 0.4,
      statistic: "beta_binomial_tail",
      alpha: 1e-3,
      infra_suspect: false,
      infra_suspect_reason: null,
      detector_version: "failure_rate_spike/2",
    });
    expect(m.p_value).toBeLessThanOrEqual(1e-3);
    expect(m.baseline_failure_rate).toBeGreaterThanOrEqual(0.01); // floored at 0.5 / 50
    expect(m.baseline_failure_rate).toBeLessThan(0.02);
    expect(m.baseline_effective_runs).toBeGreaterThan(25);
    expect(m.overdispersion_rho).toBeGreaterThanOrEqual(0.01);
    expect(m.overdispersion_rho).toBeLessThanOrEqual(0.5);
    expect(m.ratio_to_baseline).toBeGreaterThan(20);
    expect(m.delta_pp).toBeGreaterThan(38);
    expect(m.observed).toBe(0.4);
    expect(m.threshold).toBeGreaterThan(m.baseline_failure_rate);
    expect(m.threshold).toBeLessThanOrEqual(0.4);
    expect(m.thresholds).toMatchObject({ min_runs_seen: 20, min_executed: 20, min_failures: 5, min_ratio_to_baseline: 2, min_delta_pp: 2 });
    expect(typeof m.window).toBe("string");
    expect(m.failure_rate_wilson_95.low).toBeLessThan(0.4);
    expect(m.failure_rate_wilson_95.high).toBeGreaterThan(0.4);
  });

  it("names the newly failing tests (passed at their previous appearance), capped at 20 with a count", () => {
    // Tests 0..24 fail in the spike. test_3 also failed in run 30 (not newly failing); test_60 is
    // new (no previous appearance); test_4 was skipped in run 30 but passed before (newly failing).
    const before = quietRuns(2, 29).map((run) => ({
      ...run,
      tests: run.tests.filter((t) => t.name !== "test_3" && t.name !== "test_4"),
      counts: { ...run.counts },
    }));
    const run30 = runOf(30, statuses(50, [3]));
    run30.tests[4] = makeTest("test_4", "skipped");
    const spikeStatuses = statuses(61, range(0, 25));
    spikeStatuses[60] = "errored";
    const spike = runOf(31, spikeStatuses);
    const withEarlierPasses = [runOf(0, statuses(50, [])), ...before, run30, spike];
    const { events } = feed(withEarlierPasses);
    expect(events).toHaveLength(1);
    const m = meta(events[0]!);
    // 0..24 except test_3 (failed last time) → 24 newly failing; test_60 has no history.
    expect(m.newly_failing_count).toBe(24);
    expect(m.newly_failing_tests).toHaveLength(20);
    expect(m.newly_failing_tests).not.toContain("test_3");
    expect(m.newly_failing_tests).not.toContain("test_60");
    expect(m.newly_failing_tests).toContain("test_4");
    expect(m.errored).toBe(1);
  });

  it("does not fold a tripping run into the baseline, so a repeat spike trips again", () => {
    const quiet = feed(quietRuns());
    const spike = check.update(quiet.state, runOf(31, statuses(50, range(0, 20))));
    expect(spike.events).toHaveLength(1);
    const { w, sn, sf, sx, sxx, seen } = spike.state.project;
    expect({ w, sn, sf, sx, sxx, seen }).toEqual({
      w: quiet.state.project.w,
      sn: quiet.state.project.sn,
      sf: quiet.state.project.sf,
      sx: quiet.state.project.sx,
      sxx: quiet.state.project.sxx,
      seen: quiet.state.project.seen,
    });
    const again = check.update(spike.state, runOf(32, statuses(50, range(10, 30))));
    expect(again.events).toHaveLength(1);
  });

  describe("recurrent failers", () => {
    /** 40 runs of 100 tests; tests 0–9 are intermittent: each fails once, in turn, every 4th run. */
    function intermittentHistory(): RunSummary[] {
      return range(1, 41).map((number) => runOf(number, statuses(100, number % 4 === 0 ? [(number / 4) % 10] : [])));
    }

    it("a cluster of known intermittent tests failing together is not a spike", () => {
      const { state } = feed(intermittentHistory());
      const cluster = check.update(state, runOf(41, statuses(100, range(0, 10))));
      expect(cluster.events).toEqual([]);
    });

    it("the same number of normally stable tests failing together is", () => {
      const { state } = feed(intermittentHistory());
      const spike = check.update(state, runOf(41, statuses(100, range(50, 60))));
      expect(spike.events).toHaveLength(1);
      expect(meta(spike.events[0]!)).toMatchObject({ recurrent_failing_count: 0, fresh_failing_count: 10 });
    });

    it("fresh failures must trip on their own: 10 recurrent + 3 fresh does not, 10 recurrent + 10 fresh does", () => {
      const { state } = feed(intermittentHistory());
      expect(check.update(state, runOf(41, statuses(100, [...range(0, 10), ...range(50, 53)]))).events).toEqual([]);
      const mixed = check.update(state, runOf(41, statuses(100, [...range(0, 10), ...range(50, 60)])));
      expect(mixed.events).toHaveLength(1);
      expect(meta(mixed.events[0]!)).toMatchObject({ recurrent_failing_count: 10, fresh_failing_count: 10, failed: 20 });
    });

    it("a tripping run's failures are not recurrent for a different spike: one that shares a few of its tests trips again", () => {
      const { state } = feed(intermittentHistory());
      const first = check.update(state, runOf(41, statuses(100, range(50, 60))));
      const quiet = feed(
        range(42, 50).map((number) => runOf(number, statuses(100, []))),
        first.state,
      );
      // 4 of the 10 failing tests failed in the spike at run 41: fewer than half, judged on all 10.
      const other = check.update(quiet.state, runOf(50, statuses(100, [...range(56, 60), ...range(70, 76)])));
      expect(other.events).toHaveLength(1);
      expect(meta(other.events[0]!)).toMatchObject({ recurrent_failing_count: 0, fresh_failing_count: 10 });
    });

    it("the same tests tripping again within 50 runs are a recurring co-failing group, not a new spike", () => {
      const { state } = feed(intermittentHistory());
      const first = check.update(state, runOf(41, statuses(100, range(50, 60))));
      expect(first.events).toHaveLength(1);
      const quiet = feed(
        range(42, 50).map((number) => runOf(number, statuses(100, []))),
        first.state,
      );
      // The old rule tripped here again (a tripping run's failures were never recurrent).
      expect(check.update(quiet.state, runOf(50, statuses(100, range(50, 60)))).events).toEqual([]);
      // With 8 of the 10 and 2 others it is still the group (at least half repeat; the 2 fresh ones do not trip).
      expect(check.update(quiet.state, runOf(50, statuses(100, [...range(50, 58), 80, 81]))).events).toEqual([]);
      // More than 50 runs later it is a spike again.
      const later = feed(
        range(50, 93).map((number) => runOf(number, statuses(100, []))),
        quiet.state,
      );
      expect(check.update(later.state, runOf(93, statuses(100, range(50, 60)))).events).toHaveLength(1);
    });

    it("forgets a failure after 50 runs", () => {
      const { state } = feed(intermittentHistory());
      const quiet = feed(
        range(41, 101).map((number) => runOf(number, statuses(100, []))),
        state,
      );
      // Its entry still holds the failure's run; older than 50 runs, it no longer counts.
      expect(Object.values(quiet.state.tests).every((entry) => entry.f === undefined || quiet.state.project.seq - entry.f > 50)).toBe(true);
      expect(check.update(quiet.state, runOf(101, statuses(100, range(0, 10)))).events).toHaveLength(1);
    });

    it("reads a version-1 state (every test's entry in three maps of one document), with or without the recurrent-failer map", () => {
      const { state } = feed(intermittentHistory());
      const column = (field: keyof SpikeTestEntry) =>
        Object.fromEntries(
          Object.entries(state.tests).flatMap(([key, entry]) => (entry[field] === undefined ? [] : [[`suite\u001f${key}`, entry[field]]])),
        );
      const legacy = { ...state.project, v: 1, last: column("l"), lf: column("f"), tf: column("t") };
      expect(failureRateSpikeCheck.fromLegacy?.(state.project, (key) => key)).toBeNull();
      const rekey = (oldKey: string) => oldKey.slice("suite\u001f".length);
      const converted = failureRateSpikeCheck.fromLegacy!(legacy, rekey)!;
      const restored: State = { project: converted.state, tests: Object.fromEntries(converted.tests) };
      expect(restored).toEqual(JSON.parse(JSON.stringify(state)));
      const next = runOf(41, statuses(100, range(0, 10)));
      expect(check.update(restored, next).events).toEqual(check.update(state, next).events);
      const { lf: _dropped, ...older } = legacy;
      expect(check.update({ project: failureRateSpikeCheck.fromLegacy!(older, rekey)!.state, tests: {} }, next).events).toHaveLength(1);
    });
  });

  it("infra-suspect runs feed the check: they may trip, and are not folded into the baseline", () => {
    const quiet = feed(quietRuns(3));
    const outage = check.update(quiet.state, runOf(31, statuses(50, range(0, 40), "errored")));
    expect(outage.events).toHaveLength(1);
    expect(meta(outage.events[0]!)).toMatchObject({ infra_suspect: true, infra_suspect_reason: "at_least_half_failed", errored: 40 });
    // An outage during warm-up (cannot trip yet) does not poison the baseline either.
    const early = feed(quietRuns(3, 10));
    const warmOutage = check.update(early.state, runOf(11, statuses(50, range(0, 50))));
    expect(warmOutage.events).toEqual([]);
    expect(warmOutage.state.project.sf).toBe(early.state.project.sf);
    expect(warmOutage.state.project.seen).toBe(early.state.project.seen);
  });

  describe("the infrastructure guard judges the tests that newly fail", () => {
    it("30 of 50 tests failing in every run is not an outage: its runs build the baseline", () => {
      const { state } = feed(range(1, 31).map((number) => runOf(number, statuses(50, range(0, 30)))));
      // Only the first run (every test unknown) looked like an outage; the counts alone made all 30 one.
      expect(state.project.seen).toBe(29);
      expect(baselineOf(state.project)?.mu).toBeCloseTo(0.6, 5);
      // An outage there (the 20 tests that passed last time fail too) is still one: not folded in.
      const outage = check.update(state, runOf(31, statuses(50, range(0, 50))));
      expect(outage.state.project.seen).toBe(29);
    });

    it("a broken test's failures do not hide an outage: 12 errors next to 1 broken and 1 fresh failure", () => {
      // Test 49 is broken (fails in every run) from the start.
      const quiet = feed(range(1, 31).map((number) => runOf(number, statuses(50, number % 7 === 0 ? [3, 49] : [49]))));
      const run = runOf(31, statuses(50, [...range(0, 12)], "errored"));
      run.tests[49] = { ...run.tests[49]!, status: "failed" };
      run.tests[20] = { ...run.tests[20]!, status: "failed" };
      run.counts = { ...run.counts, passed: 36, failed: 2 };
      const result = check.update(quiet.state, run);
      // The counts alone: 12 errors < 10 × 2 failures. Judged: 12 ≥ 10 × 1 newly failed.
      expect(result.events).toHaveLength(1);
      expect(meta(result.events[0]!)).toMatchObject({
        infra_suspect: true,
        infra_suspect_reason: "errors_outnumber_failures_tenfold",
        persistent_failing_count: 1,
      });
      expect(result.state.project.seen).toBe(quiet.state.project.seen);
    });
  });

  it("respects the guards: runs_seen ≥ 20, n ≥ 20, f ≥ 5, ×2 and +2 pp", () => {
    // Only 19 baseline runs.
    expect(feed([...quietRuns(4, 19), runOf(20, statuses(50, range(0, 20)))]).events).toEqual([]);
    const { state } = feed(quietRuns(4));
    // 19 executed tests, 15 failing.
    expect(check.update(state, runOf(31, statuses(19, range(0, 15)))).events).toEqual([]);
    // 4 failures out of 20 (20 %): fewer than 5.
    expect(check.update(state, runOf(31, statuses(20, range(0, 4)))).events).toEqual([]);
    // Skipped tests are not executed: 15 passed + 10 skipped + 5 failed is n = 20, f = 5 → trips.
    const mixed = statuses(30, range(0, 5));
    for (const i of range(20, 30)) mixed[i] = "skipped";
    const result = check.update(state, runOf(31, mixed));
    expect(result.events).toHaveLength(1);
    expect(meta(result.events[0]!).executed).toBe(20);
  });

  it("uses default-branch runs only", () => {
    const { state } = feed(quietRuns(5));
    const branch = check.update(state, runOf(31, statuses(50, range(0, 30)), { onDefault: false }));
    expect(branch.events).toEqual([]);
    expect(branch.state).toBe(state);
  });

  it("a stable project (~2 % failing, beta-binomial ρ = 0.01, clustered suite failures): ≤ 1 event per 1,000 runs", () => {
    // 5 seeds × 1,000 runs of 200 tests. (Measured: 3 events in total.)
    let total = 0;
    for (let seed = 1; seed <= 5; seed++) {
      const { events } = feed(stableProject(seed, 1000, 200, 0.02, 0.01));
      expect(events.length).toBeLessThanOrEqual(1);
      total += events.length;
    }
    expect(total).toBeLessThanOrEqual(5);
  });

  it("a heavily overdispersed project (ρ = 0.05): ≤ 2 events per 1,000 runs", () => {
    // Documents the limit: α = 1e-3 itself allows ~1 per 1,000; the ρ estimate adds a little. (Measured: 5 in 5,000 runs.)
    let total = 0;
    for (let seed = 11; seed <= 15; seed++) total += feed(stableProject(seed, 1000, 200, 0.02, 0.05)).events.length;
    expect(total).toBeLessThanOrEqual(10);
  });

  it("estimates μ and ρ from the decayed sums", () => {
    const { state } = feed(stableProject(21, 600, 500, 0.02, 0.02));
    const baseline = baselineOf(state.project)!;
    expect(baseline.mu).toBeGreaterThan(0.015);
    expect(baseline.mu).toBeLessThan(0.03);
    expect(baseline.rho).toBeGreaterThan(0.01);
    expect(baseline.rho).toBeLessThan(0.05);
    expect(baseline.rho).toBeGreaterThanOrEqual(baseline.rhoPoint);
    expect(state.project.w).toBeCloseTo(100, 0); // Σ 0.99^a over 600 runs ≈ 1/(1 − 0.99)
  });
});

describe("failure_rate_spike: engineering properties", () => {
  const runs = [
    ...quietRuns(31, 60),
    runOf(61, statuses(50, range(0, 20))),
    ...quietRuns(32, 20).map((run, i) => ({ ...run, number: 62 + i })),
  ];

  it("is deterministic and never mutates the state it is given", () => {
    const a = feed(runs);
    const b = feed(runs);
    expect(JSON.stringify(a.events)).toBe(JSON.stringify(b.events));
    expect(JSON.stringify(a.state)).toBe(JSON.stringify(b.state));
    expect(a.events).toHaveLength(1);
    const frozen = JSON.stringify(a.state);
    check.update(a.state, runOf(200, statuses(50, range(0, 30))));
    expect(JSON.stringify(a.state)).toBe(frozen);
  });

  it("gives the same events when the state goes through JSON between runs", () => {
    const direct = feed(runs);
    const stored = feed(runs, check.initialState(), true);
    expect(stored.events).toEqual(direct.events);
    expect(stored.state).toEqual(JSON.parse(JSON.stringify(direct.state)));
  });

  it("is unaffected by the order of test cases within a run", () => {
    const reversed = runs.map((run) => ({ ...run, tests: [...run.tests].reverse() }));
    expect(feed(reversed).events).toEqual(feed(runs).events);
  });

  it("forgets a test's last status once it has not been seen for 200 runs (swept every 50)", () => {
    // Tests come and go: run k has tests k..k+49 (a sliding population).
    let state = check.initialState();
    const runWith = (number: number, tests: RunTest[]) => ({
      ...runOf(number, []),
      tests,
      counts: { tests: tests.length, passed: tests.length, failed: 0, errored: 0, skipped: 0 },
    });
    for (let number = 1; number <= 1000; number++)
      state = check.update(
        state,
        runWith(
          number,
          range(number, number + 50).map((i) => makeTest(`t${i}`, "passed")),
        ),
      ).state;
    // The project-level part holds no per-test data.
    expect(JSON.stringify(state.project).length).toBeLessThan(500);
    // Skipped now, a test keeps its last executed status: t900 passed 100 runs ago; t1 was last
    // seen 1,000 runs ago and is unknown again ("none yet").
    const tests = [makeTest("t1", "skipped"), makeTest("t900", "skipped"), makeTest("t950", "passed")];
    const returning = check.update(state, { ...runWith(1001, tests), counts: { tests: 3, passed: 1, failed: 0, errored: 0, skipped: 2 } });
    const codeOf = (name: string) => (returning.state.tests[makeTest(name, "passed").key]?.l ?? -1) % 4;
    expect([codeOf("t1"), codeOf("t900"), codeOf("t950")]).toEqual([3, 0, 0]);
  });

  it("keeps bounded state: the same JSON size after 100 and after 2,000 runs", () => {
    const rng = prng(41);
    let state = check.initialState();
    let sizeAt100 = 0;
    for (let number = 1; number <= 2000; number++) {
      state = check.update(state, runOf(number, statuses(50, rng() < 0.3 ? [Math.floor(rng() * 50)] : []))).state;
      if (number === 100) sizeAt100 = JSON.stringify(state.project).length;
    }
    const sizeAt2000 = JSON.stringify(state.project).length;
    expect(Object.keys(state.tests)).toHaveLength(50);
    // The project part: only the run counter's digits grow; the shape does not.
    expect(Math.abs(sizeAt2000 - sizeAt100) / sizeAt100).toBeLessThan(0.05);
    // A test's entry: at most three run stamps.
    for (const entry of Object.values(state.tests))
      expect(JSON.stringify(entry).length).toBeLessThanOrEqual('{"l":99999,"f":99999,"t":99999}'.length);
  });

  it("starts afresh from an unrecognised stored state", () => {
    const result = check.update({ project: { v: 0 } as unknown as FailureRateSpikeState, tests: {} }, runOf(1, statuses(50, [])));
    expect(result.state.project.seen).toBe(1);
  });
});
