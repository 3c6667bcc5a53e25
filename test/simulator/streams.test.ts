import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isInfraSuspect, legacyTestKey } from "../../src/checks/types";
import { parseJUnit } from "../../src/ingest/junit";
import type { ReportSuite } from "../../src/ingest/report";
import { replayThroughUploads } from "../../src/simulator/replay";
import {
  ANOMALY_FAMILY,
  type SimRun,
  type SimStream,
  Rng,
  failingShare,
  generateStream,
  mulberry32,
  toJUnitXml,
  toRunSummary,
} from "../../src/simulator/streams";

/** What the service stores from a parsed report, in the shape of the summary's tests. */
function fromParsed(xml: string) {
  const report = parseJUnit(xml);
  const tests: { key: string; status: string; attempts: string[]; durationMs: number | null }[] = [];
  const walk = (suite: ReportSuite) => {
    for (const c of suite.cases) {
      tests.push({
        key: legacyTestKey(suite.name, c.classname ?? null, c.name),
        status: c.status,
        attempts: (c.attempts ?? []).map((a) => a.status),
        durationMs: c.durationMs ?? null,
      });
    }
    for (const child of suite.suites ?? []) walk(child);
  };
  for (const suite of report.suites) walk(suite);
  // The store: `<testsuites time>` when present, else the sum of the top-level suites.
  const duration = report.durationMs ?? Math.round(report.suites.reduce((sum, s) => sum + (s.durationMs ?? 0), 0));
  return { tests, duration, suites: report.suites.length };
}

function expectSameAsParsed(run: SimRun) {
  const summary = toRunSummary(run);
  const parsed = fromParsed(toJUnitXml(run));
  expect(parsed.tests).toEqual(
    summary.tests.map((t) => ({ key: t.key, status: t.status, attempts: t.attempts, durationMs: t.durationMs })),
  );
  expect(parsed.duration).toBe(summary.durationMs);
  const counts = { tests: 0, passed: 0, failed: 0, errored: 0, skipped: 0 };
  for (const t of parsed.tests) {
    counts.tests++;
    counts[t.status as "passed"]++;
  }
  expect(counts).toEqual(summary.counts);
}

describe("random numbers", () => {
  it("mulberry32 is deterministic and uniform enough", () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    const values = Array.from({ length: 10_000 }, () => a());
    expect(values.slice(0, 5)).toEqual(Array.from({ length: 5 }, () => b()));
    const mean = values.reduce((s, v) => s + v, 0) / values.length;
    expect(mean).toBeGreaterThan(0.48);
    expect(mean).toBeLessThan(0.52);
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...values)).toBeLessThan(1);
  });

  it("beta draws have the requested mean and intra-class correlation", () => {
    const rng = new Rng(3);
    const mu = 0.02;
    const rho = 0.05;
    const draws = Array.from({ length: 20_000 }, () => rng.beta((mu * (1 - rho)) / rho, ((1 - mu) * (1 - rho)) / rho));
    const mean = draws.reduce((s, v) => s + v, 0) / draws.length;
    const variance = draws.reduce((s, v) => s + (v - mean) ** 2, 0) / draws.length;
    expect(mean).toBeCloseTo(mu, 2);
    // Var(π) = ρ·μ(1 − μ) for the beta-binomial parametrisation.
    expect(variance / (mu * (1 - mu))).toBeGreaterThan(0.035);
    expect(variance / (mu * (1 - mu))).toBeLessThan(0.065);
  });
});

describe("generateStream", () => {
  const stream = generateStream({ seed: 11, runs: 300 });

  it("is deterministic by seed, and seeds differ", () => {
    const again = generateStream({ seed: 11, runs: 300 });
    expect(JSON.stringify(again)).toBe(JSON.stringify(stream));
    const other = generateStream({ seed: 12, runs: 300 });
    expect(JSON.stringify(other.runs.slice(0, 5))).not.toBe(JSON.stringify(stream.runs.slice(0, 5)));
  });

  it("numbers runs 1…n with non-decreasing times, mostly on main", () => {
    expect(stream.runs.map((r) => r.number)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    for (let i = 1; i < stream.runs.length; i++)
      expect(Date.parse(stream.runs[i]!.created_at)).toBeGreaterThanOrEqual(Date.parse(stream.runs[i - 1]!.created_at));
    const main = stream.runs.filter((r) => r.branch === "main").length;
    expect(main / stream.runs.length).toBeGreaterThan(0.6);
    expect(stream.runs.some((r) => r.branch.startsWith("feature/"))).toBe(true);
    for (const run of stream.runs) expect(run.commit_sha).toMatch(/^[0-9a-f]{40}$/);
  });

  it("retries rerun the failed run's commit on the same branch, right after it", () => {
    const retried = generateStream({ seed: 5, knobs: { retryProbability: 0.5 } });
    const retries = retried.runs.filter((r) => r.retry_of !== null);
    expect(retries.length).toBeGreaterThan(10);
    for (const retry of retries) {
      const original = retried.runs[retry.number - 2]!;
      expect(original.number).toBe(retry.retry_of);
      expect(retry.commit_sha).toBe(original.commit_sha);
      expect(retry.branch).toBe(original.branch);
      expect(original.tests.some((t) => t.status === "failed" || t.status === "errored")).toBe(true);
    }
    // Other commits are unique.
    const firsts = retried.runs.filter((r) => r.retry_of === null).map((r) => r.commit_sha);
    expect(new Set(firsts).size).toBe(firsts.length);
  });

  it("labels each run with exactly the anomalies active at it", () => {
    for (const anomaly of stream.anomalies) {
      const labelled = stream.runs.filter((r) => r.labels.some((l) => l.id === anomaly.id)).map((r) => r.number);
      expect(labelled[0]).toBe(anomaly.start);
      const start = stream.runs[anomaly.start - 1]!;
      expect(start.branch).toBe("main");
      expect(start.retry_of).toBeNull();
      if (anomaly.type === "failure_spike" || anomaly.type === "infra_outage") expect(labelled).toEqual([anomaly.start]);
      if (anomaly.type === "flaky_test") {
        const last = anomaly.end ?? stream.runs.length;
        // A flaky test is labelled on every run between start and end that contains it.
        const containing = stream.runs
          .filter((r) => r.number >= anomaly.start && r.number <= last && r.tests.some((t) => t.key === anomaly.subject))
          .map((r) => r.number);
        expect(labelled).toEqual(containing);
      }
      expect(ANOMALY_FAMILY[anomaly.type]).toBeDefined();
    }
    // Labels only reference listed anomalies.
    const ids = new Set(stream.anomalies.map((a) => a.id));
    for (const run of stream.runs) for (const label of run.labels) expect(ids.has(label.id)).toBe(true);
  });

  it("injects what the labels say", () => {
    const all: SimStream[] = [11, 21, 31, 41].map((seed) => generateStream({ seed }));
    const checked = { spike: 0, outage: 0, skip: 0, flaky: 0, shift: 0 };
    for (const s of all) {
      const mainRuns = s.runs.filter((r) => r.branch === "main");
      for (const anomaly of s.anomalies) {
        const run = s.runs[anomaly.start - 1]!;
        if (anomaly.type === "failure_spike") {
          expect(failingShare(run)).toBeGreaterThanOrEqual(Number(anomaly.details.target_share) - 0.01);
          checked.spike++;
        } else if (anomaly.type === "infra_outage") {
          const suite = String(anomaly.details.suite);
          const inSuite = run.tests.filter((t) => t.suite === suite && t.status !== "skipped");
          expect(inSuite.length).toBeGreaterThan(0);
          expect(inSuite.every((t) => t.status === "errored")).toBe(true);
          checked.outage++;
        } else if (anomaly.type === "skip_step") {
          const before = mainRuns.filter((r) => r.number < anomaly.start).at(-1)!;
          const skipped = (r: SimRun) => new Set(r.tests.filter((t) => t.status === "skipped").map((t) => t.key));
          const newly = [...skipped(run)].filter((k) => !skipped(before).has(k) && before.tests.some((t) => t.key === k));
          expect(newly.length).toBeGreaterThanOrEqual(anomaly.magnitude);
          checked.skip++;
        } else if (anomaly.type === "flaky_test" && anomaly.magnitude >= 0.1 && !anomaly.details.systemic) {
          // Fails sometimes and passes sometimes while active (final status or an in-run attempt).
          const outcomes = s.runs
            .filter(
              (r) => r.number >= anomaly.start && (anomaly.end === null || r.number <= anomaly.end) && !isInfraSuspect(toRunSummary(r)),
            )
            .map((r) => r.tests.find((t) => t.key === anomaly.subject))
            .filter((t) => t !== undefined && t.status !== "skipped");
          const failing = outcomes.filter((t) => t!.status !== "passed" || t!.attempts.length > 0).length;
          expect(failing).toBeGreaterThan(0);
          expect(failing).toBeLessThan(outcomes.length);
          checked.flaky++;
        } else if (anomaly.type === "duration_shift") {
          const before = mainRuns
            .filter((r) => r.number < anomaly.start)
            .slice(-30)
            .map((r) => r.duration);
          const after = mainRuns
            .filter((r) => r.number >= anomaly.start)
            .slice(0, 30)
            .map((r) => r.duration);
          const med = (v: number[]) => v.sort((a, b) => a - b)[v.length >> 1]!;
          expect(med(after) / med(before)).toBeGreaterThan(1 + anomaly.magnitude * 0.5);
          checked.shift++;
        }
      }
    }
    expect(checked.spike + checked.outage).toBeGreaterThan(0);
    expect(checked.skip + checked.flaky + checked.shift).toBeGreaterThan(0);
  });

  it("keeps a family's anomalies out of a stream where it is off", () => {
    const quiet = generateStream({ seed: 3, scenario: "quiet" });
    expect(quiet.anomalies).toEqual([]);
    expect(quiet.runs.every((r) => r.labels.length === 0)).toBe(true);
    const onlySpikes = generateStream({ seed: 3, scenario: "spike" });
    expect(onlySpikes.anomalies.length).toBeGreaterThan(0);
    expect(onlySpikes.anomalies.every((a) => ANOMALY_FAMILY[a.type] === "spike")).toBe(true);
  });

  it("honours knobs: in-run retries give attempts, size classes follow the stated rules", () => {
    const retried = generateStream({ seed: 8, knobs: { inRunRetries: 2, format: "surefire" } });
    const withAttempts = retried.runs.flatMap((r) => r.tests.filter((t) => t.attempts.length > 0));
    expect(withAttempts.length).toBeGreaterThan(0);
    expect(withAttempts.some((t) => t.status === "passed")).toBe(true);
    for (const t of withAttempts) {
      expect(t.attempts.length).toBeLessThanOrEqual(2);
      if (t.status === "failed" || t.status === "errored") expect(t.attempts.length).toBe(2);
    }
    for (const anomaly of retried.anomalies) {
      if (anomaly.type === "flaky_test") expect(anomaly.size).toBe(anomaly.magnitude >= 0.1 ? "large" : "small");
      if (anomaly.type === "skip_step") expect(anomaly.size).toBe(anomaly.magnitude >= 20 ? "large" : "small");
    }
  });
});

describe("detection patterns", () => {
  const isFail = (status: string) => status === "failed" || status === "errored";

  it("leave the other scenarios' streams byte-identical (hashes from before the patterns existed)", () => {
    const hash = (stream: SimStream) => createHash("sha256").update(JSON.stringify(stream)).digest("hex").slice(0, 16);
    expect(hash(generateStream({ seed: 1000, runs: 120 }))).toBe("0548358b5b545802");
    expect(hash(generateStream({ seed: 1005, runs: 120 }))).toBe("aaac95f354c1b3ca");
    expect(hash(generateStream({ seed: 3, scenario: "quiet", runs: 120 }))).toBe("89d0e79e01a896d0");
    expect(hash(generateStream({ seed: 3, scenario: "spike", runs: 120 }))).toBe("e846c453880973be");
  });

  it("env_half: about half the executed tests fail in every run and never pass; they are not anomalies", () => {
    const stream = generateStream({ seed: 11, scenario: "env_half", runs: 150 });
    const always = new Set(stream.tests.filter((t) => t.alwaysFailing).map((t) => t.key));
    expect(always.size).toBeGreaterThan(80);
    for (const run of stream.runs) {
      const executed = run.tests.filter((t) => t.status !== "skipped");
      for (const t of executed) if (always.has(t.key)) expect(isFail(t.status)).toBe(true);
      const share = executed.filter((t) => always.has(t.key)).length / executed.length;
      expect(share).toBeGreaterThan(0.5);
      expect(share).toBeLessThan(0.7);
    }
    expect(stream.anomalies.some((a) => always.has(a.subject))).toBe(false);
    // The flaky family's tests are there to be found; by the counts alone every run looks like an outage.
    expect(stream.anomalies.filter((a) => a.type === "flaky_test").length).toBeGreaterThan(4);
    expect(stream.runs.every((r) => isInfraSuspect(toRunSummary(r)))).toBe(true);
  });

  it("co_failing_group: 5–20 tests fail together in some runs and pass together in others, same-commit re-runs included", () => {
    const stream = generateStream({
      seed: 12,
      scenario: "co_failing_group",
      runs: 300,
      knobs: { coFailingGroup: { size: 8, rate: 0.1 }, retryProbability: 0.5 },
    });
    const members = stream.anomalies.filter((a) => a.details.group !== undefined);
    expect(members).toHaveLength(8);
    for (const a of members) expect(a).toMatchObject({ type: "flaky_test", magnitude: 0.1, size: "large", end: null });
    const keys = new Set(members.map((a) => a.subject));
    const start = members[0]!.start;
    let together = 0;
    const groupFailed = new Map<number, boolean>();
    // On main, apart from spikes and outages (which fail any test), the group fails all together or not at all.
    const plain = (r: SimRun) => r.branch === "main" && !r.labels.some((l) => l.type === "failure_spike" || l.type === "infra_outage");
    for (const run of stream.runs.filter((r) => r.number >= start && plain(r))) {
      const failing = run.tests.filter((t) => keys.has(t.key) && isFail(t.status)).length;
      const present = run.tests.filter((t) => keys.has(t.key) && t.status !== "skipped").length;
      expect(failing === 0 || failing === present).toBe(true);
      if (failing > 0) together++;
      groupFailed.set(run.number, failing > 0);
    }
    expect(together).toBeGreaterThan(5);
    // Some re-run of a commit where the group failed passes it.
    expect(
      stream.runs.some((r) => r.retry_of !== null && groupFailed.get(r.retry_of) === true && groupFailed.get(r.number) === false),
    ).toBe(true);
    expect(
      stream.runs
        .filter((r) => r.number >= start)
        .every((r) => r.labels.filter((l) => keys.has(l.subject)).length === r.tests.filter((t) => keys.has(t.key)).length),
    ).toBe(true);
  });
});

describe("rerun patterns (issue 29: real rerun data, one commit re-run ~100 times per batch)", () => {
  const isFail = (status: string) => status === "failed" || status === "errored";
  /** Default-branch runs that are not retries, in order, and the commits they ran. */
  const mainRuns = (stream: SimStream) => stream.runs.filter((r) => r.branch === "main" && r.retry_of === null);

  it("run in batches of 100 re-runs of one commit on the default branch, without feature branches", () => {
    for (const scenario of ["co_failing_subsets", "env_block_flaky"] as const) {
      const stream = generateStream({ seed: 21, scenario, runs: 250 });
      expect(stream.runs.every((r) => r.branch === "main")).toBe(true);
      const commits = mainRuns(stream).map((r) => r.commit_sha);
      expect(new Set(commits.slice(0, 100)).size).toBe(1);
      expect(new Set(commits.slice(100, 200)).size).toBe(1);
      expect(commits[100]).not.toBe(commits[99]);
      // A retry re-runs its run's commit.
      for (const run of stream.runs) if (run.retry_of !== null) expect(run.commit_sha).toBe(stream.runs[run.retry_of - 1]!.commit_sha);
    }
  });

  it("co_failing_subsets: each failing run fails a different few (5–8) of a group of 14–18 tests of one suite", () => {
    const stream = generateStream({
      seed: 22,
      scenario: "co_failing_subsets",
      runs: 300,
      knobs: { coFailingSubsets: { size: 16, rate: 0.1, subsetMin: 5, subsetMax: 8 } },
    });
    const members = stream.anomalies.filter((a) => a.details.subsets !== undefined);
    expect(members).toHaveLength(16);
    const keys = new Set(members.map((a) => a.subject));
    expect(new Set(stream.runs[0]!.tests.filter((t) => keys.has(t.key)).map((t) => t.suite)).size).toBe(1);
    // Expected failure probability of a member: 10 % of the runs × 6.5 of 16.
    for (const a of members) expect(a).toMatchObject({ type: "flaky_test", magnitude: 0.041, size: "small", end: null });
    const start = members[0]!.start;
    expect(mainRuns(stream).findIndex((r) => r.number === start)).toBeGreaterThanOrEqual(29);
    const plain = (r: SimRun) => !r.labels.some((l) => l.type === "failure_spike" || l.type === "infra_outage");
    const subsets: string[] = [];
    for (const run of stream.runs.filter((r) => r.number >= start && plain(r))) {
      const failing = run.tests.filter((t) => keys.has(t.key) && isFail(t.status)).map((t) => t.key);
      if (failing.length === 0) continue;
      expect(failing.length).toBeGreaterThanOrEqual(5);
      expect(failing.length).toBeLessThanOrEqual(8);
      subsets.push(failing.sort().join("|"));
    }
    expect(subsets.length).toBeGreaterThan(10);
    // The subsets vary: (almost) never the same twice, and every member fails in some and passes in others.
    expect(new Set(subsets).size).toBeGreaterThan(subsets.length - 2);
    for (const key of keys) {
      const outcomes = stream.runs.filter((r) => r.number >= start).map((r) => r.tests.find((t) => t.key === key)!.status);
      expect(outcomes.some(isFail)).toBe(true);
      expect(outcomes.filter((s) => s === "passed").length).toBeGreaterThan(outcomes.length / 2);
    }
  });

  it("env_block_flaky: about half of one suite's tests error in every run, a few others of it error in varying subsets", () => {
    const stream = generateStream({
      seed: 23,
      scenario: "env_block_flaky",
      runs: 300,
      knobs: { envBlock: { blockShare: 0.5, flaky: 16, rate: 0.1, subsetMin: 5, subsetMax: 8 } },
    });
    const block = new Set(stream.tests.filter((t) => t.alwaysFailing).map((t) => t.key));
    const flaky = stream.anomalies.filter((a) => a.details.env_block !== undefined);
    const flakyKeys = new Set(flaky.map((a) => a.subject));
    expect(flaky.length).toBeGreaterThanOrEqual(5);
    for (const a of flaky) expect(a.details.env_block).toBe(block.size);
    const first = stream.runs[0]!;
    const suites = new Set(first.tests.filter((t) => block.has(t.key) || flakyKeys.has(t.key)).map((t) => t.suite));
    expect(suites.size).toBe(1);
    const suite = [...suites][0]!;
    const moduleTests = first.tests.filter((t) => t.suite === suite && t.status !== "skipped");
    expect(block.size / moduleTests.length).toBeGreaterThan(0.35);
    expect(block.size / moduleTests.length).toBeLessThan(0.6);
    // The block errors in every run and is no anomaly; the flaky ones error in subsets of 5–8.
    expect(stream.anomalies.some((a) => block.has(a.subject))).toBe(false);
    const start = flaky[0]!.start;
    const plain = (r: SimRun) => !r.labels.some((l) => l.type === "failure_spike" || l.type === "infra_outage");
    let failingRuns = 0;
    for (const run of stream.runs) {
      // (A spike may fail it instead.)
      for (const t of run.tests) if (block.has(t.key) && t.status !== "skipped") expect(plain(run) ? t.status : "errored").toBe("errored");
      for (const t of run.tests) if (block.has(t.key)) expect(t.status === "passed").toBe(false);
      if (run.number < start || !plain(run)) continue;
      const failing = run.tests.filter((t) => flakyKeys.has(t.key) && isFail(t.status));
      if (failing.length === 0) continue;
      failingRuns++;
      for (const t of failing) expect(t.status).toBe("errored");
      expect(failing.length).toBeGreaterThanOrEqual(Math.min(5, flakyKeys.size));
      expect(failing.length).toBeLessThanOrEqual(8);
    }
    expect(failingRuns).toBeGreaterThan(10);
  });
});

describe("toJUnitXml / toRunSummary", () => {
  it("parse with the service's parser into the statuses, attempts and durations toRunSummary gives (Surefire)", () => {
    const stream = generateStream({
      seed: 21,
      runs: 150,
      knobs: { format: "surefire", inRunRetries: 2, reportsWallClock: true, timeDecimals: 3 },
    });
    const runs = stream.runs;
    expect(runs.some((r) => r.tests.some((t) => t.status === "passed" && t.attempts.length > 0))).toBe(true);
    expect(runs.some((r) => r.tests.some((t) => t.status !== "passed" && t.attempts.length > 0))).toBe(true);
    const xml = toJUnitXml(runs.find((r) => r.tests.some((t) => t.status === "passed" && t.attempts.length > 0))!);
    expect(xml).toContain("<flakyFailure");
    for (const run of runs) expectSameAsParsed(run);
  });

  it("does the same for Gradle-style repeated testcases and suite-summed durations", () => {
    const stream = generateStream({
      seed: 22,
      runs: 150,
      knobs: { format: "gradle", inRunRetries: 2, reportsWallClock: false, timeDecimals: 2 },
    });
    const run = stream.runs.find((r) => r.tests.some((t) => t.attempts.length > 0))!;
    const xml = toJUnitXml(run);
    expect(xml).not.toContain("flakyFailure");
    const retried = run.tests.find((t) => t.attempts.length > 0)!;
    expect(xml.split(`name="${retried.name}"`).length - 1).toBe(retried.attempts.length + 1);
    expect(run.wall_clock_ms).toBeNull();
    for (const r of stream.runs) expectSameAsParsed(r);
  });

  it("summarises keys with legacyTestKey and the default branch as main", () => {
    const stream = generateStream({ seed: 23, runs: 40 });
    for (const run of stream.runs) {
      const summary = toRunSummary(run);
      expect(summary.number).toBe(run.number);
      expect(summary.onDefaultBranch).toBe(run.branch === "main");
      expect(summary.commitSha).toBe(run.commit_sha);
      expect(summary.createdAt.toISOString()).toBe(run.created_at);
      for (const t of summary.tests) expect(t.key).toBe(legacyTestKey(t.suite, t.classname, t.name));
      expect(new Set(summary.tests.map((t) => t.key)).size).toBe(summary.tests.length);
    }
  });
});

describe("replayThroughUploads", () => {
  it("posts each run's XML with its metadata and waits for it before the next", async () => {
    const stream = generateStream({ seed: 31, runs: 4 });
    const calls: { method: string; url: string; headers: Record<string, string>; body?: string }[] = [];
    const polls = new Map<number, number>();
    let next = 100;
    const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input);
      const method = init?.method ?? "GET";
      calls.push({
        method,
        url,
        headers: { ...(init?.headers as Record<string, string>) },
        body: typeof init?.body === "string" ? init.body : undefined,
      });
      if (method === "POST") {
        // Nothing may be posted while an earlier run is still pending.
        for (const [, remaining] of polls) expect(remaining).toBe(0);
        const number = ++next;
        polls.set(number, 2);
        return new Response(JSON.stringify({ number, status: "pending", failure_reason: null }), { status: 202 });
      }
      const number = Number(url.split("/").at(-1));
      const remaining = polls.get(number)! - 1;
      polls.set(number, remaining);
      const body =
        remaining > 0
          ? { number, status: "pending" }
          : {
              number,
              status: "processed",
              failure_reason: null,
              duration_ms: 5,
              tests_count: 3,
              passed_count: 3,
              failed_count: 0,
              errored_count: 0,
              skipped_count: 0,
            };
      return new Response(JSON.stringify(body), { status: 200 });
    }) as typeof fetch;

    const result = await replayThroughUploads({
      baseUrl: "http://api.test/",
      uploadToken: "ctu_x",
      runs: stream.runs,
      fetch: fakeFetch,
      sleep: async () => {},
      idempotencyPrefix: "p",
    });
    expect(result).toMatchObject({ uploaded: 4, processed: 4, failed: 0 });
    expect(result.runs.map((r) => [r.simulatedNumber, r.serviceNumber])).toEqual([
      [1, 101],
      [2, 102],
      [3, 103],
      [4, 104],
    ]);
    const posts = calls.filter((c) => c.method === "POST");
    expect(posts).toHaveLength(4);
    const first = new URL(posts[0]!.url);
    expect(first.pathname).toBe("/uploads/v1/test_runs");
    expect(first.searchParams.get("branch")).toBe(stream.runs[0]!.branch);
    expect(first.searchParams.get("commit_sha")).toBe(stream.runs[0]!.commit_sha);
    expect(first.searchParams.get("started_at")).toBe(stream.runs[0]!.created_at);
    expect(posts[0]!.headers).toMatchObject({ Authorization: "Bearer ctu_x", "Content-Type": "application/xml", "Idempotency-Key": "p-1" });
    expect(posts[0]!.body).toBe(toJUnitXml(stream.runs[0]!));
    expect(calls.filter((c) => c.method === "GET").map((c) => new URL(c.url).pathname)).toContain("/uploads/v1/test_runs/101");
  });
});
