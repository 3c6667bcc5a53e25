/** The verdict benchmark's scoring (bench/verdict-scoring.ts) on hand-made truth and stored comparisons. */
import { describe, expect, it } from "vitest";
import type { SimRun, SimTest } from "../../src/simulator/stream-types";
import type { StoredComparison } from "../../src/simulator/verdict-replay";
import type { FailureTruth, RunTruth } from "../../src/simulator/verdict-truth";
import type { Verdict } from "../../src/lib/vocabulary";
import {
  failedOnMainBefore,
  mergeScores,
  newVerdictScore,
  precisionOfNew,
  recallOfNew,
  scoreVerdicts,
  shareText,
} from "../../bench/verdict-scoring";

const failure = (key: string, expected: Verdict, trulyNew: boolean, cause: string): FailureTruth => ({ key, expected, trulyNew, cause });
const stored = (
  number: number,
  baseNumber: number | null,
  verdicts: Record<string, [Verdict, string]>,
  fixed: string[] = [],
): StoredComparison => ({
  number,
  baseNumber,
  baseChoice: "previous_default",
  verdicts: new Map(Object.entries(verdicts).map(([key, [verdict, reason]]) => [key, { verdict, reason }])),
  fixed: new Set(fixed),
});

describe("scoreVerdicts", () => {
  const truth: (RunTruth & { scored?: boolean })[] = [
    { number: 1, baseNumber: null, failures: [failure("w", "flaky", false, "flaky")], fixed: [], scored: false, massFailure: true },
    {
      number: 2,
      baseNumber: 1,
      failures: [
        failure("a", "new", true, "branch breakage"),
        failure("b", "new", true, "branch breakage"),
        failure("c", "flaky", false, "flaky"),
        failure("d", "infrastructure", true, "branch breakage"),
      ],
      fixed: ["x", "y"],
      massFailure: false,
    },
    { number: 3, baseNumber: 2, failures: [failure("e", "failing_on_base", false, "main breakage")], fixed: [], massFailure: false },
  ];
  const comparisons = [
    stored(1, null, { w: ["new", "no base run to compare with"] }),
    stored(
      2,
      1,
      {
        a: ["new", "passed on main in run #1"],
        b: ["flaky", "flaky since 3 Jan: 4 of its last 30 runs failed"],
        c: ["new", "passed on main in run #1"],
        d: ["infrastructure", "mass failure: 30 of the run's 40 tests failed (usually 0%)"],
      },
      ["x", "z"],
    ),
    stored(3, 1, { e: ["failing_on_base", "also failed on main in run #2"], f: ["new", "not in the base, run #2"] }),
  ];

  it("counts `new` right and wrong, the misses by kind, per failure of the scored runs only", () => {
    const score = newVerdictScore();
    scoreVerdicts(score, truth, comparisons, "s");
    expect({
      runs: score.runs,
      failures: score.failures,
      newVerdicts: score.newVerdicts,
      trulyNew: score.trulyNew,
      both: score.newAndTrulyNew,
    }).toEqual({
      runs: 2,
      failures: 5,
      newVerdicts: 2,
      trulyNew: 3,
      both: 1,
    });
    expect([precisionOfNew(score), recallOfNew(score)]).toEqual([0.5, 1 / 3]);
    expect(Object.fromEntries(score.missedNew)).toEqual({ "flaky: known as flaky": 1, "infrastructure: inside a mass failure": 1 });
    expect(Object.fromEntries(score.falseNew)).toEqual({ flaky: 1 });
    expect(score.byExpected.get("new")).toEqual(
      new Map([
        ["new", 1],
        ["flaky", 1],
      ]),
    );
    expect(score.unmatched).toEqual({ missing: 0, extra: 1 });
    expect(score.fixed).toEqual({ truth: 2, stored: 2, agree: 1, afterMassFailure: 2 });
    expect(score.base).toEqual({ runs: 2, agree: 1 });
    expect(score.samples.some((s) => s.includes("truly new → flaky"))).toBe(true);
  });

  it("merges scores by adding them", () => {
    const one = newVerdictScore();
    scoreVerdicts(one, truth, comparisons, "s");
    const both = mergeScores([one, one]);
    expect([both.failures, both.newVerdicts, both.newAndTrulyNew, both.fixed.agree]).toEqual([10, 4, 2, 2]);
    expect(both.byCause.get("branch breakage")).toEqual(
      new Map([
        ["new", 2],
        ["flaky", 2],
        ["infrastructure", 2],
      ]),
    );
    expect(shareText(412, 420)).toBe("0.981 (412 of 420)");
    expect(shareText(0, 0)).toBe("n/a (0 of 0)");
  });
});

describe("failedOnMainBefore", () => {
  const test = (key: string, status: SimTest["status"]): SimTest => ({
    key,
    suite: "s",
    classname: "C",
    name: key,
    status,
    attempts: [],
    durationMs: 1,
    message: null,
  });
  const run = (number: number, branch: string, tests: SimTest[]) => ({ number, branch, tests }) as SimRun;

  it("holds the tests that failed on the default branch within their last `window` executions there, before the run", () => {
    const runs = [
      run(1, "main", [test("a", "failed"), test("b", "passed")]),
      run(2, "feature", [test("a", "passed"), test("b", "failed")]),
      run(3, "main", [test("a", "passed"), test("b", "passed")]),
      run(4, "main", [test("a", "passed"), test("b", "skipped")]),
      run(5, "main", [test("a", "passed"), test("b", "passed")]),
    ];
    const recent = failedOnMainBefore(runs, 2);
    expect([...recent.entries()].map(([n, keys]) => [n, [...keys]])).toEqual([
      [1, []],
      [2, ["a"]],
      [3, ["a"]],
      [4, ["a"]],
      [5, []],
    ]);
  });
});
