/**
 * The verdicts' ground truth without a database: the failure causes the checks' streams record
 * (and that recording them leaves the streams as they were), the truth derived from them
 * (streamVerdictTruth), and the verdict scenario family's streams and truth (generateVerdictStream).
 * test/simulator/verdict-replay.test.ts stores a family stream with the service.
 */
import { describe, expect, it } from "vitest";
import { breakageEpisodes, generateStream, generateStreamWithCauses } from "../../src/simulator/streams";
import { generateVerdictStream } from "../../src/simulator/verdict-streams";
import { failingKeys, hasVerdict, streamVerdictTruth } from "../../src/simulator/verdict-truth";

describe("failure causes of the checks' streams", () => {
  // Every family on, breakages and feature-branch breakages, spikes and outages, in-run retries.
  const options = { seed: 1015, runs: 300, tests: 120, knobs: { inRunRetries: 1 as const, breakagesPer100: 4 } };
  const { stream, causes } = generateStreamWithCauses(options);

  it("are kept apart: the stream is generateStream's, byte for byte", () => {
    expect(JSON.stringify(stream)).toBe(JSON.stringify(generateStream(options)));
  });

  it("name a cause for every failure and failed attempt, and only for those", () => {
    const kinds = new Set<string>();
    for (const run of stream.runs) {
      const recorded = causes.get(run.number) ?? new Map();
      expect([...recorded.keys()].sort()).toEqual(
        run.tests
          .filter(hasVerdict)
          .map((t) => t.key)
          .sort(),
      );
      for (const cause of recorded.values()) kinds.add(cause);
      // A spike or an outage belongs to its default-branch run, not to the run's re-run.
      if (run.retry_of !== null) expect([...recorded.values()].filter((c) => c === "spike" || c === "outage")).toEqual([]);
    }
    expect([...kinds].sort()).toEqual(["branch_breakage", "breakage", "flaky", "outage", "pool", "spike"]);
  });

  it("give the truth: a branch's breakage is new; a default-branch breakage is new on the run it starts, then already in the base", () => {
    const truth = streamVerdictTruth(stream, causes);
    expect(truth[0]!.baseNumber).toBeNull();
    for (const run of truth) {
      const sim = stream.runs[run.number - 1]!;
      const base = run.baseNumber === null ? null : stream.runs[run.baseNumber - 1]!;
      expect(base === null || (base.branch === "main" && base.number < run.number)).toBe(true);
      for (const failure of run.failures) {
        if (failure.cause === "branch_breakage") expect([failure.trulyNew, failure.expected]).toEqual([true, "new"]);
        if (failure.cause === "spike" || failure.cause === "outage")
          expect([failure.trulyNew, failure.expected]).toEqual([false, "infrastructure"]);
        if (failure.cause === "flaky" || failure.cause === "pool") expect(failure.trulyNew).toBe(false);
      }
      const failedInBase = failingKeys(base);
      expect(run.fixed).toEqual(
        sim.tests.filter((t) => t.status === "passed" && t.attempts.length === 0 && failedInBase.has(t.key)).map((t) => t.key),
      );
    }
    for (const episode of breakageEpisodes(stream)) {
      const onIt = truth.flatMap((run) =>
        run.failures.filter((f) => f.key === episode.test && f.cause === "breakage").map((f) => ({ run: run.number, f })),
      );
      expect(onIt[0]).toMatchObject({ run: episode.start, f: { trulyNew: true, expected: "new" } });
      for (const { f } of onIt.slice(1)) expect([f.trulyNew, f.expected]).toEqual([false, "failing_on_base"]);
    }
  });
});

describe("the verdict scenario family", () => {
  const stream = generateVerdictStream({ seed: 7 });

  it("is seeded, numbered in upload order, and its branch runs name a default-branch commit of the stream", () => {
    expect(JSON.stringify(generateVerdictStream({ seed: 7 }))).toBe(JSON.stringify(stream));
    expect(JSON.stringify(generateVerdictStream({ seed: 8 }).runs.slice(0, 3))).not.toBe(JSON.stringify(stream.runs.slice(0, 3)));
    expect(stream.runs.map((r) => r.number)).toEqual(stream.runs.map((_, i) => i + 1));
    const mainCommits = new Set(stream.runs.filter((r) => r.branch === "main").map((r) => r.commit_sha));
    for (const run of stream.runs) {
      if (run.branch === "main") expect(run.base_commit_sha).toBeUndefined();
      else expect(mainCommits.has(run.base_commit_sha!)).toBe(true);
    }
    const warmup = stream.truth.filter((t) => !t.scored);
    expect(warmup.length).toBe(50);
    expect(warmup.every((t) => stream.runs[t.number - 1]!.branch === "main")).toBe(true);
  });

  it("knows each failure's verdict: every scenario happens, and what decides it holds in the runs", () => {
    const scored = stream.truth.filter((t) => t.scored);
    const expected = new Map<string, number>();
    for (const run of scored) for (const f of run.failures) expected.set(f.expected, (expected.get(f.expected) ?? 0) + 1);
    expect([...expected.keys()].sort()).toEqual(["failing_on_base", "flaky", "infrastructure", "new", "quarantined"]);
    const quarantinedFrom = new Map(stream.quarantines.map((q) => [q.test, q.beforeRun]));
    let basesPassedOver = 0;
    for (const run of scored) {
      const sim = stream.runs[run.number - 1]!;
      const base = run.baseNumber === null ? null : stream.runs[run.baseNumber - 1]!;
      // The base: never a mass failure; a branch's is its base commit's run unless that run is one.
      expect(base?.branch).toBe("main");
      expect(stream.truth[base!.number - 1]!.massFailure).toBe(false);
      const named = stream.runs.find((r) => r.branch === "main" && r.commit_sha === sim.base_commit_sha);
      if (named && !stream.truth[named.number - 1]!.massFailure) expect(base).toBe(named);
      if (named && stream.truth[named.number - 1]!.massFailure) {
        expect(base!.number).toBeLessThan(named.number);
        basesPassedOver++;
      }
      for (const f of run.failures) {
        const quarantined = (quarantinedFrom.get(f.key) ?? Number.POSITIVE_INFINITY) <= run.number;
        expect(f.expected === "quarantined").toBe(quarantined);
        if (!quarantined && run.massFailure) expect(f.expected).toBe("infrastructure");
        if (f.trulyNew) expect(f.cause).toMatch(/breakage$/);
        // Truly new: the base run passed it (a regression its code does not have).
        if (f.trulyNew) expect(base!.tests.find((t) => t.key === f.key)?.status).not.toMatch(/failed|errored/);
      }
    }
    expect(basesPassedOver).toBeGreaterThan(0);
    // A mass failure errors most of its tests with one message.
    const mass = scored.filter((t) => t.massFailure).map((t) => stream.runs[t.number - 1]!);
    expect(mass.length).toBeGreaterThan(0);
    for (const run of mass) {
      const executed = run.tests.filter((t) => t.status !== "skipped");
      const messages = new Set(executed.filter((t) => t.status === "errored").map((t) => t.message));
      expect(messages.size).toBe(1);
      expect(executed.filter((t) => t.status === "errored").length).toBeGreaterThanOrEqual(0.6 * executed.length - 1);
    }
  });
});
