/**
 * Unit tests of the `skipped_test_count_creep` check (src/checks/skipped-creep.ts,
 * docs/alert-checks.md): pure `(state, run) → (state', events)` on synthetic runs, no database.
 */
import { describe, expect, it } from "vitest";
import { type SkippedCreepState, skippedCreepCheck } from "../../src/checks/skipped-creep";
import { testIdentityKey } from "../../src/lib/test-identity";
import { type CaseStatus, type CheckEvent, type InMemoryState, inMemoryCheck, type RunSummary, type RunTest } from "../../src/checks/types";
import { mulberry32 as prng } from "../../src/lib/seeded-random";
import { feedCheck } from "./support/feed";

const check = inMemoryCheck(skippedCreepCheck);
type State = InMemoryState<SkippedCreepState, never>;

// ---------------------------------------------------------------------------------------------
// Seeded noise and a run builder

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

/** A run of `total` tests named test_0…; those for which `skipped(i)` holds are skipped. */
function runOf(
  number: number,
  total: number,
  skipped: (i: number) => boolean,
  options: { onDefault?: boolean; failed?: number } = {},
): RunSummary {
  const tests = Array.from({ length: total }, (_, i) =>
    makeTest(`test_${i}`, skipped(i) ? "skipped" : i < (options.failed ?? 0) ? "failed" : "passed"),
  );
  const count = (status: CaseStatus) => tests.filter((test) => test.status === status).length;
  return {
    runId: 1000 + number,
    number,
    branch: options.onDefault === false ? "feature" : "main",
    commitSha: `sha${number}`,
    createdAt: new Date(Date.UTC(2024, 0, 1) + number * 3_600_000),
    durationMs: 60_000,
    onDefaultBranch: options.onDefault ?? true,
    counts: { tests: total, passed: count("passed"), failed: count("failed"), errored: count("errored"), skipped: count("skipped") },
    tests,
  };
}

/** Runs numbered from `from`, one per entry of `plan` (the predicate of skipped test indexes). */
function runs(from: number, total: number, plan: ((i: number) => boolean)[]): RunSummary[] {
  return plan.map((skipped, j) => runOf(from + j, total, skipped));
}

const none = () => false;
const repeat = <T>(count: number, value: T): T[] => Array.from({ length: count }, () => value);

const feed = (runs: RunSummary[], start: State = check.initialState(), roundTrip = false) => feedCheck(check, runs, start, roundTrip);

const meta = (event: CheckEvent) => event.metadata as Record<string, any>;
const names = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `test_${from + i}`);

// ---------------------------------------------------------------------------------------------

describe("skipped_test_count_creep", () => {
  it("trips exactly once when 20 of 100 tests start being skipped, naming them", () => {
    const list = runs(1, 100, [...repeat(20, none), ...repeat(5, (i: number) => i >= 80)]);
    const { events, eventsByRun } = feed(list);
    expect(events).toHaveLength(1);
    const [runNumber] = [...eventsByRun.keys()];
    expect(runNumber).toBeGreaterThan(20);
    expect(runNumber).toBeLessThanOrEqual(25);
    const m = meta(events[0]!);
    expect(m).toMatchObject({
      subject: "run",
      skipped_count: 20,
      total_tests: 100,
      skipped_ratio: 0.2,
      baseline_skipped_count: 0,
      baseline_ratio: 0,
      baseline_run_number: 10,
      delta: 20,
      rel_delta: null,
      pattern: "step",
      newly_skipped_count: 20,
      newly_skipped_exact: true,
      newly_unskipped_count: 0,
      statistic: "median_last_5_skipped_vs_ratchet_baseline",
      observed: 20,
      threshold: 5,
      detector_version: "skipped_test_count_creep/2",
    });
    expect([...m.newly_skipped_tests].sort()).toEqual(names(80, 100).sort());
    expect(m.window_runs).toBe(runNumber);
    expect(m.mann_kendall_s).toBeGreaterThan(0);
    expect(m.mann_kendall_p).toBeLessThan(0.05);
    expect(typeof m.sen_slope_per_run).toBe("number");
  });

  it("does not trip when one skipped test appears", () => {
    expect(feed(runs(1, 100, [...repeat(20, none), ...repeat(40, (i: number) => i === 7)])).events).toEqual([]);
  });

  it("does not trip on a one-run whole-suite skip (transient)", () => {
    expect(feed(runs(1, 100, [...repeat(20, none), () => true, ...repeat(30, none)])).events).toEqual([]);
    // …nor on two such runs in a row (persistence needs the last 3).
    expect(feed(runs(1, 100, [...repeat(20, none), () => true, () => true, ...repeat(30, none)])).events).toEqual([]);
  });

  it("sets no baseline and raises no event before 10 runs", () => {
    // Skips jump at run 3: the baseline is the median of the first 10 runs (20), so nothing fires.
    const list = runs(1, 100, [none, none, ...repeat(30, (i: number) => i < 20)]);
    let state = check.initialState();
    list.forEach((run, j) => {
      const result = check.update(state, run);
      state = result.state;
      expect(result.events).toEqual([]);
      if (j < 9) expect(state.project.bs).toBeNull();
    });
    expect(state.project.bs).toBe(20);
    expect(state.project.brun).toBe(10);
  });

  it("ratchets: staying at the new level is quiet; a further rise trips and names only the new skips", () => {
    const list = runs(1, 100, [...repeat(20, none), ...repeat(30, (i: number) => i >= 80), ...repeat(10, (i: number) => i >= 75)]);
    const { events, eventsByRun, state } = feed(list);
    expect(events).toHaveLength(2);
    const [first, second] = [...eventsByRun.keys()];
    expect(first).toBeLessThanOrEqual(25);
    expect(second).toBeGreaterThan(50);
    const m = meta(events[1]!);
    expect(m).toMatchObject({
      baseline_skipped_count: 20,
      skipped_count: 25,
      delta: 5,
      rel_delta: 0.25,
      threshold: 25,
      newly_skipped_count: 5,
    });
    expect([...m.newly_skipped_tests].sort()).toEqual(names(75, 80).sort());
    expect(state.project.bs).toBe(25);
  });

  it("lowers the ratchet after 10 lower runs, so regrowth alerts again", () => {
    const skip20 = (i: number) => i >= 80;
    const list = runs(1, 100, [...repeat(20, none), ...repeat(20, skip20), ...repeat(15, none), ...repeat(10, skip20)]);
    const { eventsByRun } = feed(list);
    const at = [...eventsByRun.keys()];
    expect(at).toHaveLength(2);
    expect(at[1]).toBeGreaterThan(55);
    // Without the lowering, 20 skipped would be at (not above) the ratchet and stay quiet.
    const noLowering = runs(1, 100, [...repeat(20, none), ...repeat(20, skip20), ...repeat(5, none), ...repeat(10, skip20)]);
    expect(feed(noLowering).events).toHaveLength(1);
  });

  it("labels a ramp of one more skipped test every two runs as gradual", () => {
    const list = runs(
      1,
      100,
      Array.from({ length: 60 }, (_, j) => (i: number) => i < Math.max(0, Math.floor((j - 15) / 2))),
    );
    const { events } = feed(list);
    expect(events.length).toBeGreaterThanOrEqual(1);
    const m = meta(events[0]!);
    expect(m.pattern).toBe("gradual");
    expect(m.sen_slope_per_run).toBeGreaterThan(0);
    expect(m.mann_kendall_p).toBeLessThan(0.05);
  });

  it("ignores non-default branches and counts infra-suspect runs", () => {
    const { state } = feed(runs(1, 100, repeat(20, none)));
    const branch = check.update(
      state,
      runOf(21, 100, () => true, { onDefault: false }),
    );
    expect(branch.state).toBe(state);
    // 20 skipped, and 60 of the 80 executed failing (infra-suspect): still counted.
    const list = [21, 22, 23].map((number) => runOf(number, 100, (i) => i >= 80, { failed: 60 }));
    expect(feed(list, state).events).toHaveLength(1);
  });

  it("keeps only a count when more than 2,000 tests are skipped at the baseline", () => {
    const total = 3000;
    const list = runs(1, total, [...repeat(15, (i: number) => i < 2100), ...repeat(5, (i: number) => i < 2600)]);
    const { state, events } = feed(list);
    expect(state.project.keys).toBeNull();
    expect(state.project.kc).toBe(2600);
    expect(events).toHaveLength(1);
    const m = meta(events[0]!);
    expect(m).toMatchObject({ newly_skipped_exact: false, newly_skipped_count: 500, newly_skipped_tests: [], newly_unskipped_count: null });
  });

  it("lists at most 50 newly skipped tests, with the full count", () => {
    const list = runs(1, 200, [...repeat(20, none), ...repeat(5, (i: number) => i < 120)]);
    const m = meta(feed(list).events[0]!);
    expect(m.newly_skipped_tests).toHaveLength(50);
    expect(m.newly_skipped_count).toBe(120);
  });
});

describe("skipped_test_count_creep: engineering properties", () => {
  const rng = prng(5);
  const noisy = Array.from({ length: 120 }, (_, j) => {
    const level = j < 60 ? 10 : 30;
    const extra = Math.floor(rng() * 3);
    return (i: number) => i < level + extra;
  });
  const list = runs(1, 150, noisy);

  it("is deterministic and never mutates the state it is given", () => {
    const a = feed(list);
    const b = feed(list);
    expect(JSON.stringify(a.events)).toBe(JSON.stringify(b.events));
    expect(JSON.stringify(a.state)).toBe(JSON.stringify(b.state));
    expect(a.events).toHaveLength(1);
    const frozen = JSON.stringify(a.state);
    check.update(
      a.state,
      runOf(500, 150, () => true),
    );
    expect(JSON.stringify(a.state)).toBe(frozen);
  });

  it("gives the same events when the state goes through JSON between runs", () => {
    const direct = feed(list);
    const stored = feed(list, check.initialState(), true);
    expect(stored.events).toEqual(direct.events);
    expect(stored.state).toEqual(JSON.parse(JSON.stringify(direct.state)));
  });

  it("is unaffected by the order of test cases within a run", () => {
    const reversed = list.map((run) => ({ ...run, tests: [...run.tests].reverse() }));
    expect(feed(reversed).events).toEqual(feed(list).events);
  });

  it("keeps bounded state: the same JSON size after 100 and after 2,000 runs", () => {
    const seeded = prng(9);
    let state = check.initialState();
    let sizeAt100 = 0;
    for (let number = 1; number <= 2000; number++) {
      const skipped = 10 + Math.floor(seeded() * 3);
      state = check.update(
        state,
        runOf(number, 150, (i) => i < skipped),
      ).state;
      if (number === 100) sizeAt100 = JSON.stringify(state).length;
    }
    const sizeAt2000 = JSON.stringify(state).length;
    expect(state.project.num).toHaveLength(30);
    expect(state.project.sk).toHaveLength(30);
    expect(state.project.tot).toHaveLength(30);
    // Only the run numbers' digits grow (3 → 4 digits); the shape does not.
    expect(Math.abs(sizeAt2000 - sizeAt100) / sizeAt100).toBeLessThan(0.1);
  });

  it("starts afresh from an unrecognised stored state", () => {
    const result = check.update({ project: { v: 1 } as unknown as SkippedCreepState, tests: {} }, runOf(1, 10, none));
    expect(result.state.project.runs).toBe(1);
  });
});
