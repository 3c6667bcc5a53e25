/**
 * Unit tests of the `test_flakiness` check (src/checks/flakiness.ts, docs/alert-checks.md#test_flakiness): pure
 * `(state, run) → (state', events)` on synthetic runs, no database.
 */
import { describe, expect, it } from "vitest";
import { type FlakinessState, type FlakinessTestState, flaggedTestKeys, flakinessCheck } from "../../src/checks/flakiness";
import { runsTestZ, wilson95 } from "../../src/checks/statistics";
import { testIdentityKey } from "../../src/lib/test-identity";
import { type CaseStatus, type CheckEvent, type InMemoryState, inMemoryCheck, type RunSummary, type RunTest } from "../../src/checks/types";
import { mulberry32 as prng } from "../../src/lib/seeded-random";
import { feedCheck } from "./support/feed";

const check = inMemoryCheck(flakinessCheck);
type State = InMemoryState<FlakinessState, FlakinessTestState>;

// ---------------------------------------------------------------------------------------------
// A tiny run builder

const T0 = Date.UTC(2024, 0, 1);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

type Case = { name: string; status: CaseStatus; attempts?: CaseStatus[]; suite?: string };
type RunOptions = { number: number; branch?: string; onDefault?: boolean; sha?: string | null; at?: number; fillers?: number };

const P = (name: string): Case => ({ name, status: "passed" });
const F = (name: string): Case => ({ name, status: "failed" });

function makeTest(c: Case): RunTest {
  const suite = c.suite ?? "unit";
  const classname = "pkg.Class";
  return {
    key: testIdentityKey({ classname: classname, name: c.name }),
    suite,
    classname,
    name: c.name,
    status: c.status,
    attempts: c.attempts ?? [],
    durationMs: 10,
  };
}

/** A run with the given cases plus `fillers` always-passing tests (so one failure is not an infra-suspect run). */
function buildRun(cases: Case[], options: RunOptions): RunSummary {
  const fillers = options.fillers ?? 10;
  const all = [...cases, ...Array.from({ length: fillers }, (_, i) => P(`filler_${i}`))];
  const tests = all.map(makeTest);
  const count = (status: CaseStatus) => tests.filter((test) => test.status === status).length;
  const branch = options.branch ?? "main";
  return {
    runId: 1000 + options.number,
    number: options.number,
    branch,
    commitSha: options.sha === undefined ? `sha${options.number}` : options.sha,
    createdAt: new Date(options.at ?? T0 + options.number * HOUR),
    durationMs: 1000,
    onDefaultBranch: options.onDefault ?? branch === "main",
    counts: { tests: tests.length, passed: count("passed"), failed: count("failed"), errored: count("errored"), skipped: count("skipped") },
    tests,
  };
}

const feed = (runs: RunSummary[], start: State = check.initialState(), roundTrip = false) => feedCheck(check, runs, start, roundTrip);

const meta = (event: CheckEvent | undefined) => (event?.metadata ?? {}) as Record<string, any>;
const keyOf = (name: string) => testIdentityKey({ classname: "pkg.Class", name });

/** Default-branch runs from a pattern string: 'P' = pass, 'F' = fail, 'S' = skipped, '-' = absent. */
function patternRuns(pattern: string, name = "flaky", startNumber = 1, stepMs = HOUR, startAt = T0): RunSummary[] {
  return [...pattern].map((ch, i) => {
    const cases: Case[] = ch === "P" ? [P(name)] : ch === "F" ? [F(name)] : ch === "S" ? [{ name, status: "skipped" }] : [];
    return buildRun(cases, { number: startNumber + i, at: startAt + i * stepMs });
  });
}

// ---------------------------------------------------------------------------------------------

describe("statistics", () => {
  it("runs-test z follows the Wald–Wolfowitz formulas", () => {
    // n = 40, f = 10, R = 5: E = 16, Var = 2·300·560/(1600·39).
    const expected = (5 - 16) / Math.sqrt((2 * 300 * (600 - 40)) / (1600 * 39));
    expect(runsTestZ(40, 10, 4)).toBeCloseTo(expected, 10);
    expect(runsTestZ(40, 0, 0)).toBeNull();
    expect(runsTestZ(40, 40, 0)).toBeNull();
    expect(runsTestZ(1, 1, 0)).toBeNull();
  });

  it("Wilson interval", () => {
    const ci = wilson95(5, 50);
    expect(ci?.low).toBeCloseTo(0.0435, 3);
    expect(ci?.high).toBeCloseTo(0.2136, 3);
    expect(wilson95(0, 0)).toBeNull();
  });
});

describe("history rule (B)", () => {
  it("flags a test alternating pass/fail over 30 default-branch runs exactly once, naming the test", () => {
    const { events, eventsByRun, state } = feed(patternRuns("PF".repeat(15)));
    expect(events).toHaveLength(1);
    // Eligible as soon as the window holds 20 outcomes.
    expect([...eventsByRun.keys()]).toEqual([20]);
    const m = meta(events[0]);
    expect(m).toMatchObject({
      subject: "test",
      test_key: keyOf("flaky"),
      suite: "unit",
      classname: "pkg.Class",
      name: "flaky",
      rule: "history_flips",
      window_runs: 20,
      failures: 10,
      passes: 10,
      flips: 19,
      statistic: "runs_test_z",
      threshold: -2,
      detector_version: flakinessCheck.version,
      thresholds: { min_runs: 20, min_failures: 3, min_passes: 3, min_flips: 4, z_min: -2, min_evidence: 1 },
      first_failure_run_number: 2,
      last_failure_run_number: 20,
    });
    expect(m.failure_rate).toBe(0.5);
    expect(m.failure_rate_ci95_low).toBeLessThan(0.5);
    expect(m.failure_rate_ci95_high).toBeGreaterThan(0.5);
    expect(m.flip_rate).toBe(1);
    expect(m.runs_test_z).toBeGreaterThan(4);
    expect(m.observed).toBe(m.runs_test_z);
    expect(typeof m.baseline).toBe("string");
    expect(m.evidence).toEqual([]);
    expect(flaggedTestKeys(state)).toEqual([keyOf("flaky")]);
  });

  it("never flags a test that breaks and stays broken (20 passes then 20 failures)", () => {
    const { events } = feed(patternRuns("P".repeat(20) + "F".repeat(20)));
    expect(events).toEqual([]);
  });

  it("does not flag a test broken for 5 runs then fixed, twice: flips = 4 but z < −2", () => {
    const pattern = `${"P".repeat(10)}FFFFF${"P".repeat(10)}FFFFF${"P".repeat(10)}`;
    // The window at the end: n = 35, f = 10, flips = 4 (R = 5), z well below −2.
    expect(runsTestZ(35, 10, 4)).toBeLessThan(-2);
    expect(runsTestZ(40, 10, 4)).toBeLessThan(-2);
    expect(feed(patternRuns(pattern)).events).toEqual([]);
  });

  it("flags three isolated single-run failures in the window (z ≥ −2), as the rule intends", () => {
    const pattern = `${"P".repeat(8)}F${"P".repeat(8)}F${"P".repeat(8)}F${"P".repeat(4)}`;
    // At the third failure (run 27): n = 27, f = 3, flips = 5.
    expect(runsTestZ(27, 3, 5)).toBeGreaterThanOrEqual(-2);
    const { events, eventsByRun } = feed(patternRuns(pattern));
    expect(events).toHaveLength(1);
    expect([...eventsByRun.keys()]).toEqual([27]);
    expect(meta(events[0])).toMatchObject({ rule: "history_flips", window_runs: 27, failures: 3, flips: 5 });
  });

  it("needs n ≥ 20: an alternating test with only 19 outcomes is not flagged", () => {
    expect(feed(patternRuns(`${"PF".repeat(9)}P`)).events).toEqual([]);
  });

  it("does not count skipped outcomes or absent runs", () => {
    // 19 countable outcomes interleaved with skips and absences: still below the minimum sample.
    const pattern = `${"PSF-".repeat(9)}P`;
    const { events, state } = feed(patternRuns(pattern));
    expect(events).toEqual([]);
    expect(state.tests[keyOf("flaky")]?.n).toBe(19);
  });

  it("keeps at most 50 outcomes in the window", () => {
    const { state } = feed(patternRuns("P".repeat(120)));
    expect(state.tests[keyOf("flaky")]?.n).toBe(50);
  });

  it("counts only default-branch runs: alternating results on a feature branch flag nothing", () => {
    const runs = Array.from({ length: 40 }, (_, i) => buildRun([i % 2 ? F("flaky") : P("flaky")], { number: i + 1, branch: "feature/x" }));
    const { events, state } = feed(runs);
    expect(events).toEqual([]);
    expect(state.tests[keyOf("flaky")]?.n).toBe(0);
  });

  it("counts runs on the default branch whatever its name (onDefaultBranch decides)", () => {
    const runs = Array.from({ length: 30 }, (_, i) =>
      buildRun([i % 2 ? F("flaky") : P("flaky")], { number: i + 1, branch: "trunk", onDefault: true }),
    );
    expect(feed(runs).events).toHaveLength(1);
  });
});

describe("evidence rule (A)", () => {
  it("flags the same commit passing then failing in two runs, on the second run", () => {
    const runs = [buildRun([P("t")], { number: 1, sha: "abc123" }), buildRun([F("t")], { number: 2, sha: "abc123" })];
    const { eventsByRun } = feed(runs);
    expect([...eventsByRun.keys()]).toEqual([2]);
    const m = meta(eventsByRun.get(2)?.[0]);
    expect(m).toMatchObject({ rule: "same_commit", name: "t", statistic: "evidence_count", observed: 1, threshold: 1 });
    expect(m.evidence).toEqual([
      {
        kind: "same_commit",
        commit_sha: "abc123",
        branch: "main",
        run_number: 2,
        created_at: new Date(T0 + 2 * HOUR).toISOString(),
        on_default_branch: true,
        passed: 1,
        failed: 1,
      },
    ]);
  });

  it("does not treat different commits as same-commit evidence", () => {
    const runs = [
      buildRun([P("t")], { number: 1, sha: "a" }),
      buildRun([F("t")], { number: 2, sha: "b" }),
      buildRun([P("t")], { number: 3, sha: "c" }),
    ];
    expect(feed(runs).events).toEqual([]);
  });

  it("flags a pass on retry in one run", () => {
    const { events } = feed([buildRun([{ name: "t", status: "passed", attempts: ["failed"] }], { number: 1 })]);
    expect(events).toHaveLength(1);
    expect(meta(events[0])).toMatchObject({ rule: "passed_on_retry", name: "t" });
    expect(meta(events[0]).evidence[0]).toMatchObject({ kind: "passed_on_retry", commit_sha: "sha1", run_number: 1, passed: 1, failed: 1 });
  });

  it("treats a test whose attempts all failed as a plain failure", () => {
    const { events } = feed([buildRun([{ name: "t", status: "failed", attempts: ["failed", "errored"] }], { number: 1 })]);
    expect(events).toEqual([]);
  });

  it("needs two distinct evidence commits off the default branch", () => {
    const por = (number: number, sha: string) =>
      buildRun([{ name: "t", status: "passed", attempts: ["failed"] }], { number, sha, branch: "feature/y" });
    const first = feed([por(1, "c1")]);
    expect(first.events).toEqual([]);
    // A second pass on retry on the same commit is not a second commit.
    const same = feed([por(2, "c1")], first.state);
    expect(same.events).toEqual([]);
    const second = feed([por(3, "c2")], same.state);
    expect(second.events).toHaveLength(1);
    expect(meta(second.events[0])).toMatchObject({ rule: "passed_on_retry", observed: 2, threshold: 2, branch_scope: "any branch" });
  });

  it("lets evidence expire after 14 days", () => {
    const por = (number: number, sha: string, at: number) =>
      buildRun([{ name: "t", status: "passed", attempts: ["failed"] }], { number, sha, branch: "feature/y", at });
    const { events } = feed([por(1, "c1", T0), por(2, "c2", T0 + 15 * DAY)]);
    expect(events).toEqual([]);
  });
});

describe("infrastructure guard", () => {
  it("runs where most tests fail do not flag anything and leave per-test state untouched", () => {
    const names = Array.from({ length: 20 }, (_, i) => `t${i}`);
    const runs: RunSummary[] = [];
    for (let i = 1; i <= 60; i++) {
      const broken = i % 2 === 0;
      runs.push(
        buildRun(
          names.map((name) => (broken ? F(name) : P(name))),
          { number: i, sha: `s${Math.ceil(i / 2)}`, fillers: 0 },
        ),
      );
    }
    const { events, state } = feed(runs);
    expect(events).toEqual([]);
    for (const name of names) {
      const entry = state.tests[keyOf(name)];
      expect(entry?.n).toBe(30);
      expect([entry?.wh, entry?.wl]).toEqual([0, 0]);
    }
    // Every other default-branch run was infra-suspect, the newest one included (bit 0).
    expect(state.project.infra).toEqual({ wh: 0xaaaaaa, wl: 0x1555555, n: 50 });
  });

  it("records infra-suspect runs excluded from the window in event metadata", () => {
    const names = Array.from({ length: 5 }, (_, i) => `t${i}`);
    const runs = [buildRun(names.map(F), { number: 1, fillers: 0 }), ...patternRuns("PF".repeat(15), "flaky", 2)];
    const m = meta(feed(runs).events[0]);
    expect(m.infra_excluded_runs_in_window).toBe(1);
  });
});

describe("infrastructure guard: it judges tests that newly fail", () => {
  // A project where 12 environment-dependent tests fail in every run and never pass, next to 10
  // fillers that pass and one flaky test: 12 of 23 executed tests fail in every run.
  const envTests = Array.from({ length: 12 }, (_, i) => `env_${i}`);
  const E = (name: string): Case => ({ name, status: "errored" });
  function envRun(number: number, flaky: Case, options: Partial<RunOptions> = {}, env: (name: string) => Case = F): RunSummary {
    return buildRun([...envTests.map(env), flaky], { number, fillers: 10, ...options });
  }

  it("a project where half the tests always fail still has its flaky test flagged, and never the always-failing ones", () => {
    const runs: RunSummary[] = [];
    for (let i = 1; i <= 30; i++) runs.push(envRun(i, P("flaky")));
    // Run 31 fails the flaky test; its re-run on the same commit passes it.
    runs.push(envRun(31, F("flaky"), { sha: "flip" }), envRun(32, P("flaky"), { sha: "flip" }));
    for (let i = 33; i <= 60; i++) runs.push(envRun(i, P("flaky")));
    const { events, state } = feed(runs);
    // The counts alone made every run an outage, so nothing was ever flagged.
    expect(events.map((event) => meta(event).name)).toEqual(["flaky"]);
    expect(meta(events[0])).toMatchObject({ rule: "same_commit", run_number: 32 });
    // Only the project's first run (everything unknown) looked like an outage.
    expect(meta(events[0]).infra_excluded_runs_in_window).toBe(1);
    expect(state.tests[keyOf("env_0")]?.n).toBe(50);
    expect(flaggedTestKeys(state)).toEqual([keyOf("flaky")]);
  });

  it("the same with environment-dependent tests that error (errors outnumber failures tenfold)", () => {
    const runs: RunSummary[] = [];
    for (let i = 1; i <= 30; i++) runs.push(envRun(i, P("flaky"), {}, E));
    runs.push(envRun(31, F("flaky"), { sha: "flip" }, E), envRun(32, P("flaky"), { sha: "flip" }, E));
    expect(feed(runs).events.map((event) => meta(event).name)).toEqual(["flaky"]);
  });

  it("learns the always-failing tests from a first run that looked like an outage", () => {
    const { state } = feed([envRun(1, P("flaky")), envRun(2, P("flaky"))]);
    // Run 1 was suspect (all unknown) but remembered its failing tests; run 2 was judged on the tests that newly fail.
    expect(state.project.infra.wl).toBe(0b10);
    expect(state.tests[keyOf("env_0")]).toMatchObject({ n: 1, wl: 1 });
  });

  it("an outage in such a project is still one: the tests that passed last time newly fail", () => {
    const runs: RunSummary[] = [];
    for (let i = 1; i <= 30; i++) runs.push(envRun(i, P("flaky")));
    // Two outage runs in a row (everything fails), then a green re-run of the second one's commit.
    const outage = (number: number, sha: string) =>
      buildRun([...envTests.map(F), F("flaky"), ...Array.from({ length: 10 }, (_, i) => F(`filler_${i}`))], { number, sha, fillers: 0 });
    runs.push(outage(31, "down1"), outage(32, "down2"), envRun(33, P("flaky"), { sha: "down2" }));
    const { events, state } = feed(runs);
    expect(events).toEqual([]);
    expect(state.project.infra.wl & 0b110).toBe(0b110);
    expect(state.tests[keyOf("filler_0")]?.e).toBeUndefined();
  });
});

describe("recurring co-failure bursts", () => {
  const stable = Array.from({ length: 100 }, (_, i) => `stable_${i}`);
  const group = (from: number, to: number) => (name: string, i: number) => (i >= from && i < to ? F(name) : P(name));
  /** Default-branch runs 1..last of 100 tests: `failing(number)` names the failing range, else all pass. */
  function history(
    last: number,
    failing: (number: number) => [number, number] | null,
    sha: (number: number) => string = (n) => `sha${n}`,
  ): RunSummary[] {
    return Array.from({ length: last }, (_, i) => {
      const number = i + 1;
      const range = failing(number);
      return buildRun(stable.map(range ? group(range[0], range[1]) : P), { number, sha: sha(number), fillers: 0 });
    });
  }

  it("the same group of tests bursting again within 50 runs is flakiness evidence for each of them", () => {
    const { eventsByRun } = feed(history(60, (n) => (n === 31 || n === 45 ? [0, 8] : null)));
    // Run 31 is a one-off burst; run 45 repeats it: each of the 8 tests is flagged (the old code flagged nothing).
    expect([...eventsByRun.keys()]).toEqual([45]);
    const events = eventsByRun.get(45)!;
    expect(events.map((event) => meta(event).name).sort()).toEqual(stable.slice(0, 8).sort());
    expect(meta(events[0])).toMatchObject({ rule: "burst_recurred", burst_runs_in_window: 2 });
    expect(meta(events[0]).evidence[0]).toMatchObject({
      kind: "burst_recurred",
      run_number: 45,
      on_default_branch: true,
      passed: 13,
      failed: 2,
    });
  });

  it("a group that fails on a commit, passes on its re-run and fails on the next re-run is flagged at the second burst", () => {
    const runs = history(
      40,
      (n) => (n === 31 || n === 33 ? [0, 6] : null),
      (n) => (n >= 31 && n <= 33 ? "same" : `sha${n}`),
    );
    const { eventsByRun, state } = feed(runs);
    expect([...eventsByRun.keys()]).toEqual([33]);
    expect(eventsByRun.get(33)).toHaveLength(6);
    // The green re-run in between was weak evidence; the repeat made it strong.
    expect(state.tests[keyOf("stable_0")]?.e?.map((item) => item.k)).toEqual(["burst_same_commit", "burst_recurred"]);
  });

  it("a one-off burst stays excluded, even with a green re-run of its commit", () => {
    const { events } = feed(
      history(
        80,
        (n) => (n === 31 ? [0, 8] : null),
        (n) => (n === 32 ? "sha31" : `sha${n}`),
      ),
    );
    expect(events).toEqual([]);
  });

  it("two bursts of different tests are two one-offs, also when they share a few tests", () => {
    expect(feed(history(80, (n) => (n === 31 ? [0, 10] : n === 45 ? [20, 30] : null))).events).toEqual([]);
    // 4 shared tests: fewer than 5, and fewer than half of either burst.
    expect(feed(history(80, (n) => (n === 31 ? [0, 10] : n === 45 ? [6, 16] : null))).events).toEqual([]);
  });

  it("a repeat more than 50 default-branch runs later is not a recurrence", () => {
    expect(feed(history(100, (n) => (n === 31 || n === 85 ? [0, 8] : null))).events).toEqual([]);
  });

  it("a group broken for most of the time in between is a breakage that came back, not a flaky group", () => {
    // Tests 0–7 fail in runs 31–45, pass in 46–49 and fail again from run 50.
    const { events } = feed(history(60, (n) => ((n >= 31 && n <= 45) || n >= 50 ? [0, 8] : null)));
    expect(events).toEqual([]);
  });

  it("weak evidence (a burst's green re-run) completes evidence from another branch", () => {
    const runs = history(
      33,
      (n) => (n === 31 ? [0, 8] : null),
      (n) => (n === 32 ? "sha31" : `sha${n}`),
    );
    // stable_0 also fails and passes on one commit of a feature branch: one piece there needs a second one.
    runs.push(
      buildRun([F("stable_0")], { number: 34, branch: "feature", sha: "f1", fillers: 0 }),
      buildRun([P("stable_0")], { number: 35, branch: "feature", sha: "f1", fillers: 0 }),
    );
    const { events } = feed(runs);
    expect(events.map((event) => meta(event).name)).toEqual(["stable_0"]);
    expect(meta(events[0])).toMatchObject({ rule: "same_commit", observed: 2, threshold: 2 });
    // Without the burst's re-run, the feature-branch evidence alone does not flag.
    const alone = history(33, (n) => (n === 31 ? [0, 8] : null));
    alone.push(runs[33]!, runs[34]!);
    expect(feed(alone).events).toEqual([]);
  });

  it("known flaky tests are left out of the burst count, so a flaky group does not teach the guard that bursts are normal", () => {
    // 10 tests flagged early (a pass on retry each), which then fail together in every 4th run.
    const flaky = stable.slice(0, 10);
    const runs: RunSummary[] = [
      buildRun([...flaky.map((name) => ({ name, status: "passed" as const, attempts: ["failed" as const] })), ...stable.slice(10).map(P)], {
        number: 1,
        fillers: 0,
      }),
    ];
    for (let n = 2; n <= 40; n++) runs.push(buildRun(stable.map(n % 4 === 0 ? group(0, 10) : P), { number: n, fillers: 0 }));
    // A spike of 20 other tests, and its green re-run on the same commit.
    runs.push(
      buildRun(stable.map(group(50, 70)), { number: 41, sha: "spike", fillers: 0 }),
      buildRun(stable.map(P), { number: 42, sha: "spike", fillers: 0 }),
    );
    const { eventsByRun } = feed(runs);
    expect([...eventsByRun.keys()]).toEqual([1]);
  });
});

describe("re-runs of one commit (issue 29: real rerun data, one commit re-run 100 times)", () => {
  const stable = Array.from({ length: 100 }, (_, i) => `stable_${i}`);
  /** Default-branch runs 1..last of 100 tests, all on commit "c": in run n the tests `failing(n)` (indices) fail, the others pass. */
  function reruns(last: number, failing: (number: number) => number[], status: CaseStatus = "failed"): RunSummary[] {
    return Array.from({ length: last }, (_, i) => {
      const number = i + 1;
      const set = new Set(failing(number));
      return buildRun(
        stable.map((name, j) => (set.has(j) ? { name, status } : P(name))),
        { number, sha: "c", fillers: 0 },
      );
    });
  }

  it("a test that fails in 3 bursts of one commit and passes in its other runs is flaky, whatever failed beside it", () => {
    // Bursts of 5 on one commit, 30 runs apart: every one is a burst, none shares a test with the
    // co-failures of the 50 runs before it (no recurrence of either kind), and the flip history
    // never holds 3 failures; stable_0 is in every other one.
    const bursts = new Map<number, number[]>([
      [31, [0, 1, 2, 3, 4]],
      [61, [5, 6, 7, 8, 9]],
      [91, [0, 10, 11, 12, 13]],
      [121, [14, 15, 16, 17, 18]],
      [151, [0, 19, 20, 21, 22]],
    ]);
    const { eventsByRun, state } = feed(reruns(160, (n) => bursts.get(n) ?? []));
    expect(state.project.burst?.n).toBe(50);
    // stable_0 failed in runs 31, 91 and 151 and passed in every other run of the commit.
    expect([...eventsByRun.keys()]).toEqual([151]);
    const events = eventsByRun.get(151)!;
    expect(events.map((event) => meta(event).name)).toEqual(["stable_0"]);
    expect(meta(events[0])).toMatchObject({ rule: "same_commit_bursts", observed: 1, threshold: 1 });
    expect(meta(events[0]).evidence[0]).toMatchObject({
      kind: "same_commit_bursts",
      commit_sha: "c",
      run_number: 151,
      on_default_branch: true,
      passed: 148,
      failed: 3,
    });
    // One burst of the commit is still weak evidence only.
    for (const name of ["stable_1", "stable_5", "stable_14", "stable_19"]) {
      expect(state.tests[keyOf(name)]?.fl).toBeUndefined();
      expect(state.tests[keyOf(name)]?.e?.map((item) => item.k)).toEqual(["burst_same_commit"]);
    }
  });

  it("the commit must also pass the test: 3 bursts of a commit that never passes it are no evidence", () => {
    const runs = reruns(100, (n) => (n === 31 || n === 61 || n === 91 ? [0, 1 + (n % 7), 2 + (n % 11), 20 + (n % 5), 40 + (n % 3)] : []));
    // stable_0 fails in the three bursts, each a run of commit "x" that no other run has.
    for (const run of runs) if (run.number === 31 || run.number === 61 || run.number === 91) run.commitSha = "x";
    const { state } = feed(runs);
    expect(state.tests[keyOf("stable_0")]?.fl).toBeUndefined();
    expect(state.tests[keyOf("stable_0")]?.e).toBeUndefined();
    // The same bursts on the commit of every other run: flagged at the third.
    const same = feed(
      reruns(100, (n) => (n === 31 || n === 61 || n === 91 ? [0, 1 + (n % 7), 2 + (n % 11), 20 + (n % 5), 40 + (n % 3)] : [])),
    );
    expect(same.state.tests[keyOf("stable_0")]).toMatchObject({ fr: "same_commit_bursts" });
  });

  it("a burst of one commit whose tests took part in its earlier bursts is a recurring group, even when each burst's tests differ", () => {
    // A group of 12 on commit "c", each burst a different 5 of it: run 51 shares 3 tests (0, 1, 5)
    // with the commit's bursts of runs 31 and 41, more than half of it; no earlier burst shares 5.
    const bursts = new Map<number, number[]>([
      [31, [0, 1, 2, 3, 4]],
      [41, [5, 6, 7, 8, 9]],
      [51, [10, 11, 0, 5, 1]],
    ]);
    const { eventsByRun } = feed(reruns(60, (n) => bursts.get(n) ?? []));
    expect([...eventsByRun.keys()]).toEqual([51]);
    const events = eventsByRun.get(51)!;
    // All five are flagged, those failing for the first time too: they passed on the commit before.
    expect(events.map((event) => meta(event).name).sort()).toEqual(["stable_0", "stable_1", "stable_10", "stable_11", "stable_5"]);
    expect(events.map((event) => meta(event).rule)).toEqual(Array.from({ length: 5 }, () => "same_commit_bursts"));
    expect(meta(events.find((event) => meta(event).name === "stable_10")).evidence[0]).toMatchObject({
      kind: "same_commit_bursts",
      commit_sha: "c",
      passed: 50,
      failed: 1,
    });
    // On different commits the same bursts are three one-offs.
    const commits = reruns(60, (n) => bursts.get(n) ?? []);
    for (const run of commits) run.commitSha = `sha${run.number}`;
    expect(feed(commits).events).toEqual([]);
  });

  it("bursts of one commit that share fewer than 3 tests, or less than half of the later one, stay one-offs", () => {
    // Run 41 shares 2 tests with run 31; run 51 shares 3 of its 10 with them: less than half.
    const bursts = new Map<number, number[]>([
      [31, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]],
      [41, [8, 9, 20, 21, 22, 23, 24, 25, 26, 27]],
      [51, [0, 1, 20, 40, 41, 42, 43, 44, 45, 46]],
    ]);
    expect(feed(reruns(60, (n) => bursts.get(n) ?? [])).events).toEqual([]);
  });

  it("a commit's burst failures are counted in its same-commit entry (the flags above bit 4)", () => {
    const { state } = feed(reruns(70, (n) => (n === 31 ? [0, 1, 2, 3, 4] : n === 61 ? [0, 5, 6, 7, 8] : [])));
    const lru = state.tests[keyOf("stable_0")]?.c ?? [];
    // [hash, passes, failures outside bursts, flags]: 68 passes, no plain failure, 2 burst failures, seen on the default branch, burst, weak evidence.
    expect(lru.slice(1)).toEqual([68, 0, (2 << 4) | 8 | 4 | 1]);
  });

  it("an always-failing block does not make a burst of the flaky tests beside it", () => {
    // 30 green runs; then a module arrives whose 10 tests error in every run (never passing), while 3
    // tests beside it fail in that run and pass on its re-run.
    const block = Array.from({ length: 10 }, (_, i) => `block_${i}`);
    const runs: RunSummary[] = [];
    for (let n = 1; n <= 30; n++) runs.push(buildRun(stable.map(P), { number: n, fillers: 0 }));
    const withBlock = (number: number, failing: number) =>
      buildRun(
        [...block.map((name): Case => ({ name, status: "errored" })), ...stable.map((name, j) => (j < failing ? F(name) : P(name)))],
        { number, sha: "m", fillers: 0 },
      );
    runs.push(withBlock(31, 3), withBlock(32, 0));
    for (let n = 33; n <= 40; n++) runs.push(withBlock(n, 0));
    const { eventsByRun, state } = feed(runs);
    // 3 newly failing tests: no burst (the block has never passed), so the re-run is same-commit evidence.
    expect(state.project.burst?.wl ?? 0).toBe(0);
    expect(state.project.nf?.slice(-10)).toEqual([3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect([...eventsByRun.keys()]).toEqual([32]);
    expect(eventsByRun.get(32)!.map((event) => meta(event).name)).toEqual(["stable_0", "stable_1", "stable_2"]);
    expect(eventsByRun.get(32)!.map((event) => meta(event).rule)).toEqual(["same_commit", "same_commit", "same_commit"]);
    // The block itself is never flaky.
    for (const name of block) expect(state.tests[keyOf(name)]?.fl).toBeUndefined();
  });

  it("tests the guard has only seen failing (a suspect first run) are not newly failing either", () => {
    // Run 1: 60 of 100 tests error (never seen): an outage by the counts; they are remembered as failing (sx).
    const runs: RunSummary[] = [];
    for (let n = 1; n <= 12; n++)
      runs.push(
        buildRun(
          stable.map((name, j): Case => (j < 60 ? { name, status: "errored" } : P(name))),
          { number: n, fillers: 0 },
        ),
      );
    const { state } = feed(runs);
    expect(state.project.infra.wl & (1 << 11)).toBe(1 << 11);
    // Run 2 on: none of the block newly fails (the old rule counted 60 in run 2).
    expect(state.project.nf).toEqual(Array.from({ length: 11 }, () => 0));
  });
});

describe("co-failure burst guard", () => {
  const stable = Array.from({ length: 100 }, (_, i) => `stable_${i}`);
  /** 30 green default-branch runs of 100 tests, then run 31 where `failing` of them fail, then its re-run on the same commit, then 10 green runs. */
  function spikeThenRetry(failing: number, retryPasses = true): RunSummary[] {
    const runs: RunSummary[] = [];
    for (let i = 1; i <= 30; i++) runs.push(buildRun(stable.map(P), { number: i, fillers: 0 }));
    runs.push(
      buildRun(
        stable.map((name, i) => (i < failing ? F(name) : P(name))),
        { number: 31, sha: "spiky", fillers: 0 },
      ),
    );
    runs.push(
      buildRun(
        stable.map((name, i) => (i < failing && !retryPasses ? F(name) : P(name))),
        { number: 32, sha: "spiky", fillers: 0 },
      ),
    );
    for (let i = 33; i <= 42; i++) runs.push(buildRun(stable.map(P), { number: i, fillers: 0 }));
    return runs;
  }

  it("a one-off spike of 20 % newly failing tests that passes on a same-commit re-run flags nothing", () => {
    const { events, state } = feed(spikeThenRetry(20));
    expect(events).toEqual([]);
    // The burst is counted; its failures are in the tests' windows (a real breakage would be seen).
    expect(state.project.burst?.wl).toBe(1 << 11);
    expect(state.tests[keyOf("stable_0")]?.wl).toBe(1 << 11);
    // The green re-run is weak evidence: one piece, which does not flag on its own.
    expect(state.tests[keyOf("stable_0")]?.e).toMatchObject([{ k: "burst_same_commit", c: "spiky", d: 1, r: 32, p: 1, f: 1 }]);
    expect(state.tests[keyOf("stable_20")]?.e).toBeUndefined();
  });

  it("a pass on retry inside a burst run is not evidence either", () => {
    const runs = spikeThenRetry(0);
    runs[30] = buildRun(
      stable.map((name, i) => (i < 20 ? { name, status: "passed" as const, attempts: ["failed" as const] } : P(name))),
      { number: 31, fillers: 0 },
    );
    // Passes on retry are not failures, so this run is no burst: each is evidence (Trunk/Buildkite's rule).
    expect(feed(runs).events).toHaveLength(20);
    // The same passes on retry in a run that also has 20 newly failing tests give none.
    runs[30] = buildRun(
      stable.map((name, i) => (i < 20 ? { name, status: "passed" as const, attempts: ["failed" as const] } : i < 40 ? F(name) : P(name))),
      { number: 31, fillers: 0 },
    );
    expect(feed(runs).events).toEqual([]);
  });

  it("below the burst size, a same-commit pass and fail is evidence as before", () => {
    const { events } = feed(spikeThenRetry(4));
    expect(events.map((event) => meta(event).name).sort()).toEqual(["stable_0", "stable_1", "stable_2", "stable_3"]);
    expect(meta(events[0])).toMatchObject({ rule: "same_commit", burst_runs_in_window: 0 });
  });

  it("needs 10 baseline runs: a project's first runs are never bursts", () => {
    const runs = [
      buildRun(
        stable.map((name, i) => (i < 20 ? F(name) : P(name))),
        { number: 1, sha: "first", fillers: 0 },
      ),
      buildRun(stable.map(P), { number: 2, sha: "first", fillers: 0 }),
    ];
    expect(feed(runs).events).toHaveLength(20);
  });

  it("a lasting breakage that starts as a burst is a burst only once", () => {
    const runs: RunSummary[] = [];
    for (let i = 1; i <= 30; i++) runs.push(buildRun(stable.map(P), { number: i, fillers: 0 }));
    for (let i = 31; i <= 40; i++)
      runs.push(
        buildRun(
          stable.map((name, j) => (j < 20 ? F(name) : P(name))),
          { number: i, fillers: 0 },
        ),
      );
    const { events, state } = feed(runs);
    expect(events).toEqual([]);
    expect(state.project.burst?.wl).toBe(1 << 9);
    expect(state.project.nf?.slice(-10)).toEqual([20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  });

  it("the baseline adapts: a project whose runs always have many newly failing tests has no bursts", () => {
    const random = prng(5);
    const runs: RunSummary[] = [];
    for (let i = 1; i <= 60; i++)
      runs.push(
        buildRun(
          stable.map((name) => (random() < 0.08 ? F(name) : P(name))),
          { number: i, fillers: 0 },
        ),
      );
    const { state } = feed(runs);
    expect(state.project.burst?.wh ?? 0).toBe(0);
    expect(state.project.burst?.wl ?? 0).toBe(0);
  });

  it("drops evidence once it is older than 14 days", () => {
    const retry = buildRun([{ name: "t", status: "passed", attempts: ["failed"] }], { number: 1, branch: "feature", at: T0 });
    const later = buildRun([P("t")], { number: 2, branch: "feature", at: T0 + 15 * DAY });
    const first = feed([retry]).state;
    expect(first.tests[keyOf("t")]?.e).toHaveLength(1);
    expect(feed([later], first).state.tests[keyOf("t")]?.e).toBeUndefined();
  });

  it("reads a version-1 state written before the guard existed (every entry in one document)", () => {
    const runs = spikeThenRetry(20);
    const { state } = feed(runs.slice(0, 30));
    const legacy = { v: 1, tests: { ...state.tests }, infra: state.project.infra, pr: state.project.pr };
    expect(flakinessCheck.fromLegacy?.(state.project, (key) => key)).toBeNull();
    const converted = flakinessCheck.fromLegacy!(legacy, (key) => key)!;
    expect(converted.tests.size).toBe(Object.keys(state.tests).length);
    const { events } = feed(runs.slice(30), { project: converted.state, tests: Object.fromEntries(converted.tests) });
    // No baseline yet in the old state: the guard starts learning, so this spike still counts (as it did before).
    expect(events).toHaveLength(20);
  });
});

describe("flag lifecycle", () => {
  it("stays flagged without new events until 50 clean runs and 14 days, then re-flags with a new event", () => {
    // Runs every 8 hours: 30 flaky runs, 60 clean runs (≥ 20 days), 10 flaky runs.
    const pattern = "PF".repeat(15) + "P".repeat(60) + "PF".repeat(5);
    const runs = patternRuns(pattern, "flaky", 1, 8 * HOUR);
    const { eventsByRun } = feed(runs);
    expect([...eventsByRun.keys()]).toEqual([20, 96]);
    expect(meta(eventsByRun.get(96)?.[0])).toMatchObject({ rule: "history_flips", name: "flaky" });
  });

  it("does not un-flag before 14 days even after 50 clean runs", () => {
    // Hourly runs: the 60 clean runs take 2.5 days, so the second flaky burst is the same episode.
    const pattern = "PF".repeat(15) + "P".repeat(60) + "PF".repeat(5);
    const { eventsByRun, state } = feed(patternRuns(pattern));
    expect([...eventsByRun.keys()]).toEqual([20]);
    expect(flaggedTestKeys(state)).toEqual([keyOf("flaky")]);
  });

  it("does not un-flag after 14 days without 50 clean runs in a row", () => {
    // Daily runs, a failure every 30 runs after the flag: flagged once, never released.
    const pattern = "PF".repeat(15) + `${"P".repeat(29)}F`.repeat(4);
    const { eventsByRun, state } = feed(patternRuns(pattern, "flaky", 1, DAY));
    expect([...eventsByRun.keys()]).toEqual([20]);
    expect(flaggedTestKeys(state)).toEqual([keyOf("flaky")]);
  });

  it("forgets a test's entry once it has not been seen for 200 runs: it comes back as a new test", () => {
    const runs = [...patternRuns("P".repeat(10), "gone"), ...patternRuns("-".repeat(260), "gone", 11)];
    const { state } = feed(runs);
    expect(state.tests[keyOf("gone")]?.n).toBe(10);
    expect(feed(patternRuns("P", "gone", 271), state).state.tests[keyOf("gone")]?.n).toBe(1);
    // Seen within 200 runs: its window goes on.
    const recent = feed([...patternRuns("P".repeat(10), "back"), ...patternRuns("-".repeat(150), "back", 11)]).state;
    expect(feed(patternRuns("P", "back", 161), recent).state.tests[keyOf("back")]?.n).toBe(11);
  });
});

describe("events per run", () => {
  it("emits one event per newly flagged test, in key order, capped at 50 with more_flagged_count on the last", () => {
    const cases: Case[] = Array.from({ length: 60 }, (_, i) => ({
      name: `t${String(i).padStart(2, "0")}`,
      status: "passed",
      attempts: ["failed"],
    }));
    const { events, state } = feed([buildRun([...cases].reverse(), { number: 1 })]);
    expect(events).toHaveLength(50);
    expect(events.map((e) => meta(e).name)).toEqual(cases.slice(0, 50).map((c) => c.name));
    expect(meta(events[49]).more_flagged_count).toBe(10);
    expect(meta(events[49]).more_flagged_test_keys).toEqual(cases.slice(50).map((c) => keyOf(c.name)));
    expect(meta(events[48]).more_flagged_count).toBeUndefined();
    expect(flaggedTestKeys(state)).toHaveLength(60);
  });

  it("caps strings in metadata at 500 characters", () => {
    const long = "x".repeat(2000);
    const { events } = feed([
      buildRun([{ name: long, status: "passed", attempts: ["failed"], suite: long }], { number: 1, branch: long, onDefault: true }),
    ]);
    const m = meta(events[0]);
    for (const value of [m.name, m.suite, m.test_key, m.branch, m.evidence[0].branch]) expect(value.length).toBeLessThanOrEqual(500);
    expect(JSON.stringify(m).length).toBeLessThan(16 * 1024);
  });
});

// ---------------------------------------------------------------------------------------------
// Engineering properties

/** A churning project: `tests` tests, a few renamed every 10 runs, ~2 % flaky tests, some retries and re-runs. */
function churnRuns(count: number, tests: number, seed: number): RunSummary[] {
  const random = prng(seed);
  let names = Array.from({ length: tests }, (_, i) => `t${i}`);
  let nextName = tests;
  const runs: RunSummary[] = [];
  for (let i = 1; i <= count; i++) {
    if (i % 10 === 0) {
      names = names.map((name) => (random() < 0.05 ? `t${nextName++}` : name));
    }
    const cases: Case[] = names.map((name, index) => {
      const flaky = index % 50 === 7;
      if (flaky && random() < 0.2) return random() < 0.5 ? F(name) : { name, status: "passed", attempts: ["failed"] };
      return random() < 0.02 ? { name, status: "skipped" } : P(name);
    });
    const sha = random() < 0.1 && i > 1 ? `sha${i - 1}` : `sha${i}`;
    const branch = random() < 0.3 ? `feature/${Math.floor(random() * 20)}` : "main";
    runs.push(buildRun(cases, { number: i, sha, branch, fillers: 0 }));
  }
  return runs;
}

describe("engineering properties", () => {
  it("keeps state bounded: after 1,000 runs of 100 tests with churn, the project part stays small and each entry capped", () => {
    const { state } = feed(churnRuns(1000, 100, 42));
    // The project-level part (read and written by every run) holds no per-test data.
    expect(JSON.stringify(state.project).length).toBeLessThan(2_000);
    // Per test O(1): every LRU and evidence list is capped.
    for (const entry of Object.values(state.tests)) {
      expect(entry.n).toBeLessThanOrEqual(50);
      expect(entry.c?.length ?? 0).toBeLessThanOrEqual(4 * 8);
      expect(entry.e?.length ?? 0).toBeLessThanOrEqual(8);
    }
  });

  it("state size does not grow with history length: the project part, and each entry", () => {
    const short = feed(churnRuns(500, 100, 7)).state;
    const long = feed(churnRuns(2000, 100, 7)).state;
    expect(JSON.stringify(long.project).length / JSON.stringify(short.project).length).toBeLessThan(1.5);
    const largest = (state: State) => Math.max(...Object.values(state.tests).map((entry) => JSON.stringify(entry).length));
    expect(largest(long) / largest(short)).toBeLessThan(1.5);
    // 2,500 runs, each also checked in chunks (support/feed.ts): about 10 s alone, more on a loaded machine.
  }, 180_000);

  it("is deterministic: the same inputs give byte-identical outputs", () => {
    const a = feed(churnRuns(300, 50, 3));
    const b = feed(churnRuns(300, 50, 3));
    expect(b.state).toStrictEqual(a.state);
    expect(JSON.stringify(b.events)).toBe(JSON.stringify(a.events));
    expect(JSON.stringify(b.state)).toBe(JSON.stringify(a.state));
    expect(a.events.length).toBeGreaterThan(0);
  });

  it("takes its state back after a JSON round trip each run, with the same results", () => {
    const runs = churnRuns(300, 50, 5);
    const direct = feed(runs);
    const roundTripped = feed(runs, check.initialState(), true);
    expect(JSON.stringify(roundTripped.events)).toBe(JSON.stringify(direct.events));
    expect(roundTripped.state).toEqual(JSON.parse(JSON.stringify(direct.state)));
  });

  it("does not mutate the input state", () => {
    const runs = churnRuns(100, 20, 9);
    const { state } = feed(runs.slice(0, 99));
    const before = JSON.stringify(state);
    check.update(state, runs[99] as RunSummary);
    expect(JSON.stringify(state)).toBe(before);
  });

  it("does not depend on the order of cases within a run", () => {
    const runs = churnRuns(200, 30, 11);
    const reversed = runs.map((run) => ({ ...run, tests: [...run.tests].reverse() }));
    const a = feed(runs);
    const b = feed(reversed);
    expect(JSON.stringify(b.events)).toBe(JSON.stringify(a.events));
    expect(JSON.stringify(b.state)).toBe(JSON.stringify(a.state));
  });

  it("starts over from a state that is not its own", () => {
    const result = check.update({ project: {} as FlakinessState, tests: {} }, buildRun([P("t")], { number: 1 }));
    expect(result.state.tests[keyOf("t")]?.n).toBe(1);
  });
});

describe("Monte-Carlo (seeded)", () => {
  /**
   * 200 stable tests over 300 default-branch runs. Occasional real breakages: with probability
   * 0.02 per run a random test breaks for 3–10 consecutive runs and is then fixed. Optionally 10
   * extra tests fail independently with probability 0.1 on every run.
   */
  function simulate(seed: number, flakyCount: number) {
    const random = prng(seed);
    const stable = Array.from({ length: 200 }, (_, i) => `stable_${i}`);
    const flaky = Array.from({ length: flakyCount }, (_, i) => `flaky_${i}`);
    const brokenUntil = new Map<string, number>();
    const runs: RunSummary[] = [];
    for (let i = 1; i <= 300; i++) {
      if (random() < 0.02) {
        const name = stable[Math.floor(random() * stable.length)] as string;
        brokenUntil.set(name, i + 3 + Math.floor(random() * 8));
      }
      const cases: Case[] = [
        ...stable.map((name) => ((brokenUntil.get(name) ?? 0) > i ? F(name) : P(name))),
        ...flaky.map((name) => (random() < 0.1 ? F(name) : P(name))),
      ];
      runs.push(buildRun(cases, { number: i, fillers: 0 }));
    }
    return feed(runs);
  }

  it("clean tests with occasional real breakages: zero events", () => {
    for (const seed of [1, 2, 3]) expect(simulate(seed, 0).events).toEqual([]);
  });

  it("10 tests with p = 0.1 flakiness: all flagged within 300 runs, and nothing else", () => {
    const { events } = simulate(1234, 10);
    const names = events.map((event) => meta(event).name).sort();
    expect(names).toEqual(Array.from({ length: 10 }, (_, i) => `flaky_${i}`).sort());
    for (const event of events) expect(meta(event).rule).toBe("history_flips");
  });
});
