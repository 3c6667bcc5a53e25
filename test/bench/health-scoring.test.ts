/**
 * The detection benchmark's health scoring (bench/health-scoring.ts) on a hand-made stream whose
 * answer is worked out by hand: entries and test-runs, the after-fix allowance, coverage, recall
 * delays counted in default-branch runs, short breakages, and the cause of a false entry.
 */
import { describe, expect, it } from "vitest";
import { newHealthScore, scoreHealth } from "../../bench/health-scoring";
import { indexStream } from "../../bench/stream-index";
import type { HealthReplay, ReplayedTransition } from "../../src/simulator/health-replay";
import type { Anomaly, RunNote, SimRun, SimStream } from "../../src/simulator/streams";
import type { TestHealth } from "../../src/lib/vocabulary";

const RUNS = 60;
const flaky: Anomaly = {
  id: "flaky_test#1",
  type: "flaky_test",
  subject: "A",
  start: 3,
  end: 10,
  magnitude: 0.3,
  size: "large",
  details: {},
};
const spike: Anomaly = {
  id: "failure_spike#2",
  type: "failure_spike",
  subject: "run",
  start: 11,
  end: 11,
  magnitude: 0.3,
  size: "large",
  details: {},
};

/** A flaky from 3 to its fix after 10; B broken from 4 (10 runs, fixed at 16); D broken 20–22 (3 runs); C never labelled. Run 5 is a feature-branch run, 12 re-runs 11 (a spike). */
function stream(): SimStream {
  const notes: Record<number, RunNote[]> = {
    4: [{ kind: "breakage_start", test: "B", length: 10 }],
    16: [{ kind: "breakage_fixed", test: "B", disabled: false }],
    20: [{ kind: "breakage_start", test: "D", length: 3 }],
    23: [{ kind: "breakage_fixed", test: "D", disabled: false }],
  };
  const runs = Array.from({ length: RUNS }, (_, i): SimRun => {
    const number = i + 1;
    return {
      number,
      branch: number === 5 ? "feature/x" : "main",
      commit_sha: `c${number}`,
      created_at: new Date(Date.UTC(2026, 0, 1, number)).toISOString(),
      duration: 1000,
      wall_clock_ms: null,
      format: "surefire",
      time_decimals: 3,
      retry_of: number === 12 ? 11 : null,
      tests: ["A", "B", "C", "D"].map((key) => ({
        key,
        suite: "s",
        classname: "C",
        name: key,
        status: key === "A" && number === 8 ? "skipped" : "passed",
        attempts: [],
        durationMs: 10,
        message: null,
      })),
      labels: number === 11 ? [{ id: spike.id, type: spike.type, subject: spike.subject, start: 11 }] : [],
      notes: notes[number] ?? [],
    };
  });
  return {
    seed: 1,
    scenario: "mixed",
    knobs: { families: { flaky: true } } as SimStream["knobs"],
    runs,
    anomalies: [flaky, spike],
    tests: [],
    stats: { durationLogSigma: 0, baselineFailureShare: 0, defaultBranchRuns: 0, medianTestsPerRun: 4 },
  };
}

/** The health each test shows after run n. */
function health(key: string, n: number): TestHealth {
  if (key === "A" && n >= 6 && n <= 25) return "flaky";
  if (key === "B" && n >= 14 && n <= 15) return "broken";
  if (key === "C" && n >= 12) return "flaky";
  return "healthy";
}

function replay(): HealthReplay {
  const healthAfter = Array.from({ length: RUNS }, (_, i) => new Map(["A", "B", "C", "D"].map((key) => [key, health(key, i + 1)])));
  const transitions: ReplayedTransition[] = [];
  for (const key of ["A", "B", "C", "D"]) {
    let before: TestHealth = "healthy";
    for (let n = 1; n <= RUNS; n++) {
      const now = health(key, n);
      if (now !== before) transitions.push({ test: key, run: n, from: before, to: now, reason: "by hand", by: "run" });
      before = now;
    }
  }
  return { healthAfter, transitions, rows: new Map(), unnamedFlags: 0 };
}

describe("scoreHealth", () => {
  it("scores a hand-made stream as its definitions say", () => {
    const score = newHealthScore();
    scoreHealth(indexStream(stream()), replay(), score, () => "flaky p=0.3");
    expect([score.runs, score.cleanRuns]).toEqual([59, 0]);

    // Flaky: A enters while labelled (true), C at the green re-run of the spike (false).
    const f = score.flaky;
    expect([f.entries, f.trueEntries, f.falseEntries]).toEqual([2, 1, 1]);
    expect([...f.causes]).toEqual([["same-commit retry of a spike run (same-commit rule)", { entries: 1, units: 49 }]]);
    // A is flaky on default-branch runs 6–25 but skipped in 8: 4 labelled (6, 7, 9, 10), 15 in the allowance after its fix.
    expect([f.units, f.trueUnits, f.allowanceUnits, f.falseUnits]).toEqual([19 + 49, 4, 15, 49]);
    // Labelled executions of A: default-branch runs 3–10 but 5 (feature branch) and 8 (skipped).
    expect([f.labelledUnits, f.labelledShown]).toEqual([6, 4]);
    // Onset 3, flaky after run 6: default-branch runs 3, 4, 6.
    expect(f.sizes.get("large")).toEqual({ detected: 1, total: 1, delays: [3] });
    expect(f.byKind.get("flaky p=0.3|large")).toEqual({ detected: 1, total: 1, delays: [3] });
    expect([f.exits, f.exitsWhileLabelled]).toEqual([1, 0]);

    // Broken: B, 10 runs from 4 (run 5 is a feature-branch run), broken after run 14: delay 10.
    const b = score.broken;
    expect([b.entries, b.trueEntries, b.falseEntries, b.units, b.trueUnits]).toEqual([1, 1, 0, 2, 2]);
    expect([b.labelledUnits, b.labelledShown]).toEqual([11 + 3, 2]);
    expect(b.sizes.get("all")).toEqual({ detected: 1, total: 1, delays: [10] });
    expect(b.byKind.get("breakage, 10 runs|all")).toEqual({ detected: 1, total: 1, delays: [10] });
    // D's 3-run breakage is apart: never broken, never flaky.
    expect(score.short).toEqual({ episodes: 1, broken: 0, flaky: 0 });
  });
});
