/**
 * `npm run bench:detection`: how well the four alert checks find injected anomalies in simulated
 * project histories (src/simulator/streams.ts), next to the simple rules of TestNod, and whether a
 * check costs the same per run with 100 or 10,000 runs of history. Writes its section of
 * BENCHMARKS.md.
 *
 * Corpus: seeds 1000…1159 (held out: the checks were tuned on seeds 0–99 and are reported on 1000–1999), one
 * stream each of 300 runs and ~200 tests. Stream `seed` has anomaly family f switched on when bit
 * f of (seed − 1000) mod 16 is set (flaky, regression, spike, skip), so every family is on in
 * exactly half of the streams and off in the other half; all other knobs (ρ, retries, format,
 * runner mix, …) are drawn from the seed. Every check is fed every run through its pure `update`
 * (toRunSummary: what the service derives from the JUnit upload); no database.
 *
 * Scoring, with "runs" counting default-branch runs:
 * - An event matches an anomaly when it is of the check's family, on the right subject, and inside
 *   the anomaly's window (WINDOWS below). Matching events are true, all others false.
 * - Precision = true units / (true + false units); a unit is a distinct (run, matched anomaly) for
 *   true events (a burst of per-test events about one run-level shift counts once) and a distinct
 *   (run, subject) for false events.
 * - False events per 1,000 clean runs: every event of the check in the streams where its family is
 *   off, per 1,000 default-branch runs of those streams.
 * - Recall: share of anomalies with a matching event within D runs of onset (runs to detection =
 *   default-branch runs from onset to the event, inclusive: 1 = on the onset run). D is the large
 *   target for large anomalies and the window for small ones. Anomalies whose stream ends
 *   before D runs are left out.
 *
 * Detection patterns (scored apart, so the figures above stay those of the same corpus): for the
 * same seeds, one more stream each with scenario "env_half" (even seed offsets: about half the
 * tests fail in every run and never pass, beside genuinely flaky tests) or "co_failing_group" (odd
 * offsets: 5–20 tests that fail together in some runs and pass together in others, same-commit
 * re-runs included); flaky family on in all, regression/spike/skip by bits 1–3 as above. The rerun
 * patterns (issue 29, real rerun data: one commit re-run ~100 times per batch), one more stream per
 * seed again: "env_block_flaky" at even offsets (about half of one suite's tests error in every run,
 * the others of it error in varying subsets of 5–8) and "co_failing_subsets" at odd ones (a group
 * of 14–18 tests of one suite of which each failing run fails a different 5–8); default-branch runs in
 * batches of 100 re-runs of one commit.
 *
 * Test health (bench/health-scoring.ts has the definitions): every stream above, corpus and
 * patterns, is also replayed through the service's health rules in memory
 * (src/simulator/health-replay.ts: advanceRun, i.e. advanceTest on each test of a run with the
 * per-test row the service keeps, then the flakiness check's flags applied as markTestsFlaky
 * applies them; test/simulator/health-replay.test.ts checks it against the service), and
 * health = flaky / broken is scored against the ground truth:
 * flaky = the flaky_test anomalies from onset to fix (the 50 runs after a fix are an allowance,
 * neither true nor false), broken = the breakage episodes (the simulator's noise, breakageEpisodes)
 * and env_half's always-failing tests. Precision per entry (a transition into the health: the
 * alert's unit, one event per newly flagged test) and per test-run (a test executed in a
 * default-branch run, with its health after the run); recall = labelled tests that reach the health
 * within N runs of onset (flaky: 50 large / 200 small, the alert's horizons; broken: 10, over
 * breakages planned to last ≥ 10 runs and always-failing tests); false entries per 1,000
 * default-branch runs (flaky also per 1,000 clean runs); coverage = labelled test-runs shown with
 * the health. Reported beside the flakiness alert's figures on the same streams.
 *
 * Verdicts (bench/verdict-bench.ts, issue 28): the verdict scenario family (seeds 2000…2039) and
 * the corpus above (its streams, with each failure's cause) stored run by run by the service on a
 * Postgres database made for the run (BENCH_PG_URL, default the local server), and each failure's
 * stored verdict scored against the truth: precision and recall of `new`, the verdict each rule
 * calls for, fixed lists and bases.
 *
 * Options for quick iterations (they never record the report): --only=test_flakiness,… (checks
 * by name; "health" for the health scoring), --no-timing, --no-patterns, --patterns-only, --patterns=NAME,… (which patterns),
 * --no-health; --no-verdicts, --verdicts-only, --verdict-family=N and --verdict-streams=N (how many
 * family and corpus streams are stored), --verdict-concurrency=N (streams stored at a time, default 2).
 */
import { execFileSync } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { failureRateSpikeCheck } from "../src/checks/failure-rate-spike";
import { flakinessCheck } from "../src/checks/flakiness";
import { performanceRegressionCheck } from "../src/checks/performance-regression";
import { skippedCreepCheck } from "../src/checks/skipped-creep";
import { type Check, type InMemoryState, type RunSummary, checkRun, inMemoryCheck } from "../src/checks/types";
import { isInfraSuspect, judgeInfra } from "../src/checks/types";
import {
  type Anomaly,
  type Family,
  type SimRun,
  type SimStream,
  generateStream,
  generateStreamWithCauses,
  toRunSummary,
} from "../src/simulator/streams";
import { replayHealth } from "../src/simulator/health-replay";
import {
  BROKEN_HORIZON,
  BROKEN_MIN_LENGTH,
  FLAKY_AFTER_FIX_RUNS,
  FLAKY_HORIZON,
  type HealthScore,
  type SignalScore,
  newHealthScore,
  scoreHealth,
} from "./health-scoring";
import { recordBenchmark } from "./report";
import { type StreamIndex, indexStream, mainCount } from "./stream-index";
import { runVerdictBench } from "./verdict-bench";
import { type VerdictScore, shareText } from "./verdict-scoring";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [key, value] = arg.replace(/^--/, "").split("=");
    return [key!, value ?? "true"] as const;
  }),
);
const SEED_BASE = Number(args.get("seed-base") ?? 1000);
const STREAMS = Number(args.get("streams") ?? 160);
const RUNS = Number(args.get("runs") ?? 300);
const TESTS = Number(args.get("tests") ?? 200);
const TIMING_RUNS = 10_000;
const TIMING_BLOCK = 50;
const TIMING_REPS = Number(args.get("timing-reps") ?? 21);
const ONLY = args.get("only")?.split(",") ?? null;
/** The verdicts alone (bench/verdict-bench.ts): nothing of the checks is run. */
const VERDICTS_ONLY = args.get("verdicts-only") !== undefined;
const TIMING = args.get("no-timing") === undefined && !VERDICTS_ONLY;
const PATTERNS = args.get("no-patterns") === undefined && !VERDICTS_ONLY;
/** The detection patterns scored, in this order; `--patterns=a,b` picks some (quick iterations only). */
const ALL_PATTERNS = ["env_half", "co_failing_group", "env_block_flaky", "co_failing_subsets"] as const;
type Pattern = (typeof ALL_PATTERNS)[number];
const PATTERN_LIST: readonly Pattern[] = args.get("patterns")
  ? ALL_PATTERNS.filter((p) => args.get("patterns")!.split(",").includes(p))
  : ALL_PATTERNS;
const MAIN_CORPUS = args.get("patterns-only") === undefined && !VERDICTS_ONLY;
/** Test health scored against the ground truth (health-scoring.ts); `--only=health` scores it alone. */
const HEALTH = args.get("no-health") === undefined && (ONLY === null || ONLY.includes("health")) && !VERDICTS_ONLY;
const VERDICTS = args.get("no-verdicts") === undefined;
const VERDICT_FAMILY = Number(args.get("verdict-family") ?? 40);
const VERDICT_STREAMS = Number(args.get("verdict-streams") ?? STREAMS);
const VERDICT_CONCURRENCY = Number(args.get("verdict-concurrency") ?? 2);
const WRITE =
  args.get("no-write") === undefined &&
  ONLY === null &&
  TIMING &&
  PATTERNS &&
  PATTERN_LIST.length === ALL_PATTERNS.length &&
  MAIN_CORPUS &&
  HEALTH &&
  VERDICTS &&
  VERDICT_FAMILY === 40 &&
  VERDICT_STREAMS === STREAMS;

// ---------------------------------------------------------------------------------------------
// Checks under test and the TestNod rules

type Detected = { run: number; subject: string };

/** A stateful detector fed one run at a time (our checks are wrapped; TestNod rules are classes). */
type Detector = { feed(run: RunSummary): string[] };

type CheckSpec = {
  family: Family;
  name: string;
  check: Check<unknown, unknown>;
  subjects: (metadata: Record<string, unknown>) => string[];
  testNod: () => Detector;
  testNodRule: string;
  /** False where TestNod documents no rule for the check: the comparison row is context, not a target. */
  testNodHasRule: boolean;
};

function ours(check: Check<unknown, unknown>, subjects: (m: Record<string, unknown>) => string[]): Detector {
  const detector = inMemoryCheck(check);
  let state = detector.initialState();
  return {
    feed(run) {
      const { state: next, events } = detector.update(state, run);
      state = next;
      return events.flatMap((event) => subjects(event.metadata));
    },
  };
}

/** TestNod flaky: failure rate ≥ 30 % over the test's last 20 default-branch executions (≥ 10 of them); one event when it starts to hold. */
class TestNodFlaky implements Detector {
  private readonly windows = new Map<string, { bits: number[]; flagged: boolean }>();
  feed(run: RunSummary): string[] {
    if (!run.onDefaultBranch) return [];
    const out: string[] = [];
    for (const test of run.tests) {
      if (test.status === "skipped") continue;
      let entry = this.windows.get(test.key);
      if (!entry) this.windows.set(test.key, (entry = { bits: [], flagged: false }));
      entry.bits.push(test.status === "passed" ? 0 : 1);
      if (entry.bits.length > 20) entry.bits.shift();
      const holds = entry.bits.length >= 10 && entry.bits.reduce((a, b) => a + b, 0) / entry.bits.length >= 0.3;
      if (holds && !entry.flagged) out.push(test.key);
      entry.flagged = holds;
    }
    return out;
  }
}

function medianOf(values: number[]): number {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** TestNod regression: run duration > 1.15 × median of the previous 20 default-branch runs; one event when it starts to hold. */
class TestNodRegression implements Detector {
  private readonly last: number[] = [];
  private firing = false;
  feed(run: RunSummary): string[] {
    if (!run.onDefaultBranch || run.durationMs === null) return [];
    const holds = this.last.length >= 20 && run.durationMs > 1.15 * medianOf(this.last);
    this.last.push(run.durationMs);
    if (this.last.length > 20) this.last.shift();
    const fire = holds && !this.firing;
    this.firing = holds;
    return fire ? ["run_duration"] : [];
  }
}

/** TestNod skip creep: median skipped share of the last 20 default-branch runs ≥ 10 %; one event when it starts to hold. */
class TestNodSkip implements Detector {
  private readonly last: number[] = [];
  private firing = false;
  feed(run: RunSummary): string[] {
    if (!run.onDefaultBranch || run.counts.tests === 0) return [];
    this.last.push(run.counts.skipped / run.counts.tests);
    if (this.last.length > 20) this.last.shift();
    const holds = this.last.length >= 20 && medianOf(this.last) >= 0.1;
    const fire = holds && !this.firing;
    this.firing = holds;
    return fire ? ["skipped_tests"] : [];
  }
}

/** Naive spike rule (TestNod has none): failing share > 2 × the mean of the previous 20 default-branch runs, with ≥ 1 failure; per run. */
class NaiveSpike implements Detector {
  private readonly last: number[] = [];
  feed(run: RunSummary): string[] {
    if (!run.onDefaultBranch) return [];
    const executed = run.counts.passed + run.counts.failed + run.counts.errored;
    if (executed === 0) return [];
    const share = (run.counts.failed + run.counts.errored) / executed;
    const mean = this.last.reduce((a, b) => a + b, 0) / Math.max(1, this.last.length);
    const fire = this.last.length >= 20 && share > 0 && share > 2 * mean;
    this.last.push(share);
    if (this.last.length > 20) this.last.shift();
    return fire ? ["run"] : [];
  }
}

const str = (value: unknown) => (typeof value === "string" ? value : null);

const ALL_CHECKS: CheckSpec[] = [
  {
    family: "flaky",
    name: "test_flakiness",
    check: flakinessCheck as Check<unknown, unknown>,
    subjects: (m) =>
      [str(m.test_key), ...(Array.isArray(m.more_flagged_test_keys) ? m.more_flagged_test_keys.map(str) : [])].filter(
        (k): k is string => k !== null,
      ),
    testNod: () => new TestNodFlaky(),
    testNodRule: "failure rate ≥ 30 % over the test's last 20 default-branch runs (≥ 10 executions)",
    testNodHasRule: true,
  },
  {
    family: "regression",
    name: "performance_regression",
    check: performanceRegressionCheck as Check<unknown, unknown>,
    subjects: (m) => (m.subject === "test_duration" ? [str(m.test_key) ?? "?"] : ["run_duration"]),
    testNod: () => new TestNodRegression(),
    testNodRule: "run duration > 1.15 × median of the last 20 default-branch runs",
    testNodHasRule: true,
  },
  {
    family: "spike",
    name: "failure_rate_spike",
    check: failureRateSpikeCheck as Check<unknown, unknown>,
    subjects: () => ["run"],
    testNod: () => new NaiveSpike(),
    testNodRule: "(TestNod has none) naive: failing share > 2 × mean of the last 20 default-branch runs",
    testNodHasRule: false,
  },
  {
    family: "skip",
    name: "skipped_test_count_creep",
    check: skippedCreepCheck as Check<unknown, unknown>,
    subjects: () => ["skipped_tests"],
    testNod: () => new TestNodSkip(),
    testNodRule: "median skipped share of the last 20 default-branch runs ≥ 10 %",
    testNodHasRule: true,
  },
];

const CHECKS: CheckSpec[] = ONLY === null ? ALL_CHECKS : ALL_CHECKS.filter((spec) => ONLY.includes(spec.name));

// ---------------------------------------------------------------------------------------------
// Windows and matching

/** Large-anomaly recall horizon (runs to detection ≤ D). */
const LARGE_D: Record<Anomaly["type"], number> = {
  flaky_test: 50,
  duration_shift: 10,
  duration_drift: 10,
  test_duration_shift: 10,
  failure_spike: 1,
  infra_outage: 1,
  skip_step: 5,
  skip_ramp: 5,
};

const WINDOW_TEXT = [
  "flaky test: from onset while it is flaky, up to 50 runs after a fix; small-recall horizon 200 runs",
  "run/test duration step: 30 runs from onset; drift: its length + 30 runs",
  "spike / outage: the onset run only",
  "skip step: 30 runs from onset; ramp: its length + 30 runs",
];

/** The window (in runs to detection) of an anomaly; Infinity while it lasts. */
function windowRuns(index: StreamIndex, a: Anomaly): number {
  switch (a.type) {
    case "flaky_test":
      return a.end === null ? Number.POSITIVE_INFINITY : mainCount(index, a.start, a.end) + 50;
    case "duration_shift":
    case "test_duration_shift":
    case "skip_step":
      return 30;
    case "duration_drift":
    case "skip_ramp":
      return a.end === null ? Number.POSITIVE_INFINITY : mainCount(index, a.start, a.end) + 30;
    case "failure_spike":
    case "infra_outage":
      return 1;
  }
}

function smallRecallRuns(index: StreamIndex, a: Anomaly): number {
  if (a.type === "flaky_test") return 200;
  const w = windowRuns(index, a);
  return Number.isFinite(w) ? w : mainCount(index, a.start, index.lastRun) + 1;
}

function subjectMatches(family: Family, subject: string, a: Anomaly): boolean {
  switch (family) {
    case "flaky":
      return a.type === "flaky_test" && a.subject === subject;
    case "regression":
      if (a.type === "duration_shift" || a.type === "duration_drift") return true;
      if (a.type !== "test_duration_shift") return false;
      return subject === "run_duration" ? Number(a.details.run_impact) >= 0.05 : a.subject === subject;
    case "spike":
      return a.type === "failure_spike" || a.type === "infra_outage";
    case "skip":
      return a.type === "skip_step" || a.type === "skip_ramp";
  }
}

function inWindow(index: StreamIndex, a: Anomaly, run: number): boolean {
  if (run < a.start) return false;
  if (a.type === "failure_spike" || a.type === "infra_outage") return run === a.start;
  return mainCount(index, a.start, run) <= windowRuns(index, a);
}

/** The anomaly an event matches (earliest onset first), or null. */
function matchEvent(index: StreamIndex, family: Family, event: Detected, candidates: Anomaly[]): Anomaly | null {
  for (const a of candidates) if (subjectMatches(family, event.subject, a) && inWindow(index, a, event.run)) return a;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Explaining false events

/** The infrastructure guard's verdict on a run, with "failed last time" read from the previous default-branch run (for explanations). */
function guardSuspect(index: StreamIndex, run: SimRun): boolean {
  const { stream } = index;
  let previous: SimRun | undefined;
  for (let n = run.number - 1; n >= 1 && !previous; n--) if (stream.runs[n - 1]!.branch === "main") previous = stream.runs[n - 1];
  const failedBefore = new Set(
    previous ? previous.tests.filter((t) => t.status === "failed" || t.status === "errored").map((t) => t.key) : [],
  );
  return judgeInfra(toRunSummary(run), (key) => failedBefore.has(key)).suspect;
}

function fpCause(index: StreamIndex, family: Family, event: Detected): string {
  const { stream } = index;
  const run = stream.runs[event.run - 1]!;
  const pointLabel = (n: number) => stream.runs[n - 1]!.labels.some((l) => l.type === "failure_spike" || l.type === "infra_outage");
  const recentNotes = (lookback: number) =>
    stream.runs
      .filter((r) => r.number <= event.run && r.branch === "main" && mainCount(index, r.number, event.run) <= lookback)
      .flatMap((r) => r.notes);
  const recentAnomalies = (lookback: number, types: Anomaly["type"][]) =>
    stream.anomalies.filter((a) => types.includes(a.type) && a.start <= event.run && mainCount(index, a.start, event.run) <= lookback);
  switch (family) {
    case "flaky": {
      if (stream.tests.find((t) => t.key === event.subject)?.alwaysFailing) return "always-failing environment-dependent test";
      if (run.retry_of !== null && pointLabel(run.retry_of)) {
        const original = stream.runs[run.retry_of - 1]!;
        const kind = original.labels.some((l) => l.type === "failure_spike") ? "spike" : "outage";
        return `same-commit retry of ${kind === "spike" ? "a spike" : "an outage"} run (${guardSuspect(index, original) ? "infra-suspect" : "not infra-suspect"})`;
      }
      if (pointLabel(run.number)) return "in a spike/outage run";
      const broken = stream.runs.some((r) =>
        r.notes.some((n) => (n.kind === "breakage_start" || n.kind === "breakage_fixed") && n.test === event.subject),
      );
      if (broken) return "test with a breakage episode";
      if (run.branch !== "main") return "feature-branch run";
      return guardSuspect(index, run) ? "infra-suspect run" : "other";
    }
    case "regression": {
      const prior = stream.anomalies.filter(
        (a) =>
          (a.type === "duration_shift" || a.type === "duration_drift" || a.type === "test_duration_shift") &&
          a.start < event.run &&
          (a.type !== "test_duration_shift" || event.subject === "run_duration" || a.subject === event.subject),
      );
      if (prior.length > 0) return "late: after the window of an earlier duration anomaly";
      if (recentAnomalies(40, ["skip_step", "skip_ramp"]).length > 0) return "skip change in the last 40 runs";
      if (event.subject !== "run_duration") {
        const profile = stream.tests.find((t) => t.key === event.subject);
        const cv = profile?.cv ?? 0;
        return `test series, no change (test CV ${cv >= 0.3 ? "≥ 30 %" : cv >= 0.2 ? "20–30 %" : "< 20 %"}, slow-runner share ${stream.knobs.slowRunnerShare})`;
      }
      // Tests added in the last 40 runs, as a share of the run duration.
      const from =
        stream.runs.filter((r) => r.branch === "main" && r.number <= event.run && mainCount(index, r.number, event.run) <= 40)[0]?.number ??
        event.run;
      const added = stream.tests
        .filter((t) => t.addedAt > 1 && t.addedAt >= from && t.addedAt <= event.run)
        .reduce((sum, t) => sum + t.medianMs, 0);
      const before = stream.runs[Math.max(0, from - 2)]!.duration;
      if (added >= 0.05 * before) return "run series: tests added in the last 40 runs add ≥ 5 % of the run duration";
      if (recentNotes(40).some((n) => n.kind === "duration_improvement")) return "run series: duration improvement in the last 40 runs";
      return `run series, no change (slow-runner share ${stream.knobs.slowRunnerShare})`;
    }
    case "spike": {
      return `background noise, rho ${stream.knobs.rho}${stream.knobs.families.flaky ? "" : " (no flaky family)"}`;
    }
    case "skip": {
      const notes = recentNotes(10);
      if (notes.some((n) => n.kind === "suite_skipped")) return "one-run suite skip in the last 10 runs";
      if (stream.anomalies.some((a) => (a.type === "skip_step" || a.type === "skip_ramp") && a.start < event.run))
        return "late: after the window of an earlier skip anomaly";
      if (recentNotes(40).some((n) => n.kind === "breakage_fixed" && n.disabled)) return "broken tests disabled in the last 40 runs";
      return "baseline skipped share (no change)";
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Accumulators

type SizeStats = { detected: number; total: number; delays: number[] };
type Score = {
  events: number;
  trueUnits: number;
  falseUnits: number;
  cleanEvents: number;
  cleanRuns: number;
  large: SizeStats;
  small: SizeStats;
  byKind: Map<string, SizeStats>;
  causes: Map<string, number>;
  samples: string[];
  cleanByRho: Map<string, { events: number; runs: number }>;
  evidence: { flaggedByEvidenceRun: number; withEvidence: number };
  /** Rerun patterns only (sameCommitBatchRecall): per kind, flaky tests that passed and failed in one commit's runs, and those flagged by its last run. */
  sameCommit: Map<string, { detected: number; total: number }>;
  ms: number;
};

const newSize = (): SizeStats => ({ detected: 0, total: 0, delays: [] });
const newScore = (): Score => ({
  events: 0,
  trueUnits: 0,
  falseUnits: 0,
  cleanEvents: 0,
  cleanRuns: 0,
  large: newSize(),
  small: newSize(),
  byKind: new Map(),
  causes: new Map(),
  samples: [],
  cleanByRho: new Map(),
  evidence: { flaggedByEvidenceRun: 0, withEvidence: 0 },
  sameCommit: new Map(),
  ms: 0,
});

/**
 * The real-data evaluation's measure (issue 29: one commit re-run 100 times per batch), on a rerun
 * pattern's stream: for each commit, the flaky tests (flaky_test anomalies active then) that both
 * passed and failed in its runs from their onset on (a pass on retry is both), and of those the ones
 * the check flagged by the commit's last run (a flag at or after onset). Counted per kind.
 */
function sameCommitBatchRecall(stream: SimStream, summaries: RunSummary[], events: Detected[], score: Score): void {
  const runsByCommit = new Map<string, RunSummary[]>();
  for (const summary of summaries) {
    if (summary.commitSha === null) continue;
    const list = runsByCommit.get(summary.commitSha) ?? [];
    list.push(summary);
    runsByCommit.set(summary.commitSha, list);
  }
  const flagRuns = new Map<string, number[]>();
  for (const event of events) flagRuns.set(event.subject, [...(flagRuns.get(event.subject) ?? []), event.run]);
  for (const runs of runsByCommit.values()) {
    const first = runs[0]!.number;
    const last = runs[runs.length - 1]!.number;
    for (const a of stream.anomalies) {
      if (a.type !== "flaky_test" || a.start > last || (a.end !== null && a.end < first)) continue;
      let passed = false;
      let failed = false;
      for (const run of runs) {
        if (run.number < a.start || (a.end !== null && run.number > a.end)) continue;
        const test = run.tests.find((t) => t.key === a.subject);
        if (!test) continue;
        if (test.status === "passed") passed = true;
        if (test.status === "failed" || test.status === "errored" || test.attempts.some((s) => s === "failed" || s === "errored"))
          failed = true;
      }
      if (!passed || !failed) continue;
      const kind = kindOf(a);
      const entry = score.sameCommit.get(kind) ?? { detected: 0, total: 0 };
      entry.total++;
      if ((flagRuns.get(a.subject) ?? []).some((run) => run >= a.start && run <= last)) entry.detected++;
      score.sameCommit.set(kind, entry);
    }
  }
}

/** Kind labels for the power table: type plus magnitude class. */
function kindOf(a: Anomaly): string {
  switch (a.type) {
    case "flaky_test":
      if (a.details.subsets !== undefined) return `flaky, co-failing subsets (${Math.round(Number(a.details.group_rate) * 100)} % of runs)`;
      if (a.details.env_block !== undefined)
        return `flaky beside an always-erroring block (${Math.round(Number(a.details.group_rate) * 100)} % of runs)`;
      if (a.details.group !== undefined) return `flaky, co-failing group p=${a.magnitude}`;
      return a.details.systemic ? "flaky, correlated pool" : `flaky p=${a.magnitude}`;
    case "duration_shift":
      return `run +${Math.round(a.magnitude * 100)} % (log-σ ${Number(a.details.log_sigma) <= 0.05 ? "≤ 0.05" : Number(a.details.log_sigma) <= 0.15 ? "≤ 0.15" : "> 0.15"})`;
    case "duration_drift":
      return "run drift";
    case "test_duration_shift":
      return `test +${Math.round(a.magnitude * 100)} %`;
    case "failure_spike":
      return `spike ${a.details.target_share === 0.03 ? "3" : a.details.target_share === 0.1 ? "10" : "30"} % (ρ ${a.details.rho})`;
    case "infra_outage":
      return `suite outage (ρ ${a.details.rho})`;
    case "skip_step":
      return `skip +${a.magnitude}`;
    case "skip_ramp":
      return "skip ramp +1/5 runs";
  }
}

/** First run where a flaky test shows same-commit or in-run retry evidence the check could use (default-branch involvement). */
function evidenceRun(stream: SimStream, a: Anomaly, summaries: RunSummary[]): number | null {
  const seen = new Map<string, { pass: boolean; fail: boolean; main: boolean }>();
  for (const summary of summaries) {
    if (summary.number < a.start) continue;
    if (a.end !== null && summary.number > a.end) break;
    if (isInfraSuspect(summary)) continue;
    const test = summary.tests.find((t) => t.key === a.subject);
    if (!test || test.status === "skipped") continue;
    if (test.status === "passed" && test.attempts.some((s) => s === "failed" || s === "errored") && summary.onDefaultBranch)
      return summary.number;
    const sha = summary.commitSha ?? "";
    const entry = seen.get(sha) ?? { pass: false, fail: false, main: false };
    if (test.status === "passed") entry.pass = true;
    else entry.fail = true;
    entry.main ||= summary.onDefaultBranch;
    seen.set(sha, entry);
    if (entry.pass && entry.fail && entry.main) return summary.number;
  }
  void stream;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Detection

function familiesFor(seed: number): Record<Family, boolean> {
  const bits = (((seed - SEED_BASE) % 16) + 16) % 16;
  return { flaky: (bits & 1) !== 0, regression: (bits & 2) !== 0, spike: (bits & 4) !== 0, skip: (bits & 8) !== 0 };
}

function scoreStream(index: StreamIndex, summaries: RunSummary[], spec: CheckSpec, events: Detected[], score: Score) {
  const { stream } = index;
  const familyOn = stream.knobs.families[spec.family];
  const mainRuns = mainCount(index, 1, index.lastRun);
  if (!familyOn) {
    score.cleanRuns += mainRuns;
    score.cleanEvents += events.length;
    const key = spec.family === "spike" ? `rho ${stream.knobs.rho}${stream.knobs.families.flaky ? "" : " (no flaky family)"}` : "all";
    const entry = score.cleanByRho.get(key) ?? { events: 0, runs: 0 };
    entry.events += events.length;
    entry.runs += mainRuns;
    score.cleanByRho.set(key, entry);
  }
  score.events += events.length;
  const candidates = stream.anomalies.filter((a) => subjectMatchesFamily(spec.family, a));
  const trueUnits = new Set<string>();
  const falseUnits = new Set<string>();
  for (const event of events) {
    const match = matchEvent(index, spec.family, event, candidates);
    if (match) trueUnits.add(`${event.run}|${match.id}`);
    else falseUnits.add(`${event.run}|${event.subject}`);
  }
  // Each anomaly's first matching event (an event may match several anomalies).
  const firstMatch = new Map<string, number>();
  for (const a of candidates) {
    const first = events.find((event) => subjectMatches(spec.family, event.subject, a) && inWindow(index, a, event.run));
    if (first) firstMatch.set(a.id, first.run);
  }
  score.trueUnits += trueUnits.size;
  score.falseUnits += falseUnits.size;
  for (const unit of falseUnits) {
    const [run, ...rest] = unit.split("|");
    const subject = rest.join("|");
    const cause = fpCause(index, spec.family, { run: Number(run), subject });
    score.causes.set(cause, (score.causes.get(cause) ?? 0) + 1);
    if (score.samples.length < 12)
      score.samples.push(`seed ${stream.seed} run ${run} ${subject.replace(/\u001f/g, " › ").slice(0, 70)}: ${cause}`);
  }

  for (const a of candidates) {
    const horizon = a.size === "large" ? LARGE_D[a.type] : smallRecallRuns(index, a);
    const observed = mainCount(index, a.start, index.lastRun);
    if (observed < horizon) continue;
    const first = firstMatch.get(a.id);
    const delay = first === undefined ? null : mainCount(index, a.start, first);
    const detected = delay !== null && delay <= horizon;
    const size = a.size === "large" ? score.large : score.small;
    size.total++;
    const kindKey = `${kindOf(a)}|${a.size}`;
    const kind = score.byKind.get(kindKey) ?? newSize();
    kind.total++;
    if (detected) {
      size.detected++;
      size.delays.push(delay);
      kind.detected++;
      kind.delays.push(delay);
    }
    score.byKind.set(kindKey, kind);
    if (spec.family === "flaky") {
      const evidence = evidenceRun(stream, a, summaries);
      if (evidence !== null) {
        score.evidence.withEvidence++;
        if (first !== undefined && first <= evidence) score.evidence.flaggedByEvidenceRun++;
      }
    }
  }
}

function subjectMatchesFamily(family: Family, a: Anomaly): boolean {
  switch (family) {
    case "flaky":
      return a.type === "flaky_test";
    case "regression":
      return a.type === "duration_shift" || a.type === "duration_drift" || a.type === "test_duration_shift";
    case "spike":
      return a.type === "failure_spike" || a.type === "infra_outage";
    case "skip":
      return a.type === "skip_step" || a.type === "skip_ramp";
  }
}

// ---------------------------------------------------------------------------------------------
// Timing: per-run cost at 100 vs 10,000 runs of history

/** JSON bytes of the largest per-test entry (0 when a check keeps none). */
function largestEntry(entries: Record<string, unknown>): number {
  let largest = 0;
  for (const key in entries) largest = Math.max(largest, JSON.stringify(entries[key]).length);
  return largest;
}

type Timing = {
  name: string;
  at100: number;
  at10k: number;
  ratio: number;
  bytes100: number;
  bytes10k: number;
  entry100: number;
  entry10k: number;
  tests100: number;
  tests10k: number;
};

function timeChecks(log: (line: string) => void): { timings: Timing[]; streamNote: string } {
  const total = TIMING_RUNS + TIMING_BLOCK;
  const stream = generateStream({
    seed: 7,
    runs: total,
    tests: TESTS,
    knobs: { families: { flaky: true, regression: false, spike: true, skip: false }, breakagesPer100: 0.2 },
  });
  const summaries = stream.runs.map((run) => toRunSummary(run));
  const timings: Timing[] = [];
  for (const spec of CHECKS) {
    const check = spec.check;
    const inMemory = inMemoryCheck(check);
    let state = inMemory.initialState();
    let state100 = state;
    for (const summary of summaries.slice(0, TIMING_RUNS)) {
      state = inMemory.update(state, summary).state;
      if (summary.number === 100) state100 = state;
    }
    const state10k = state;
    const block100 = summaries.slice(100, 100 + TIMING_BLOCK);
    const block10k = summaries.slice(TIMING_RUNS, TIMING_RUNS + TIMING_BLOCK);
    // What the service does per run: look up the run's tests' entries, check, keep the changed
    // ones (an overlay here, rows there), so each repetition starts from the same stored state.
    const runBlock = (from: InMemoryState<unknown, unknown>, block: RunSummary[]) => {
      const started = performance.now();
      let project = from.project;
      const written = new Map<string, unknown>();
      for (const summary of block) {
        const entries = new Map<string, unknown>();
        for (const test of summary.tests) {
          const entry = written.get(test.key) ?? (Object.hasOwn(from.tests, test.key) ? from.tests[test.key] : undefined);
          if (entry !== undefined) entries.set(test.key, entry);
        }
        const result = checkRun(check, project, entries, summary);
        project = result.state;
        for (const [key, entry] of result.tests) written.set(key, entry);
      }
      return (performance.now() - started) / block.length;
    };
    // Warm-up, then interleaved repetitions (A B B A …) so drifting machine load hits both alike.
    for (let i = 0; i < 3; i++) {
      runBlock(state100, block100);
      runBlock(state10k, block10k);
    }
    const a: number[] = [];
    const b: number[] = [];
    for (let rep = 0; rep < TIMING_REPS; rep++) {
      if (rep % 2 === 0) {
        a.push(runBlock(state100, block100));
        b.push(runBlock(state10k, block10k));
      } else {
        b.push(runBlock(state10k, block10k));
        a.push(runBlock(state100, block100));
      }
    }
    const at100 = medianOf(a);
    const at10k = medianOf(b);
    const timing: Timing = {
      name: spec.name,
      at100,
      at10k,
      ratio: at10k / at100,
      bytes100: JSON.stringify(state100.project).length,
      bytes10k: JSON.stringify(state10k.project).length,
      entry100: largestEntry(state100.tests),
      entry10k: largestEntry(state10k.tests),
      tests100: medianOf(block100.map((s) => s.tests.length)),
      tests10k: medianOf(block10k.map((s) => s.tests.length)),
    };
    log(
      `timing ${spec.name}: ${at100.toFixed(3)} ms/run at 100, ${at10k.toFixed(3)} ms/run at 10,000 (ratio ${timing.ratio.toFixed(2)}); project state ${timing.bytes100} → ${timing.bytes10k} bytes, largest test entry ${timing.entry100} → ${timing.entry10k} bytes`,
    );
    timings.push(timing);
  }
  return {
    timings,
    streamNote: `seed 7, ${total} runs, ~${TESTS} tests per run, flaky and spike families on, 0.2 breakages per 100 runs (regression and skip off, fewer lasting breakages, so the test set and durations stay comparable over 10,000 runs)`,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

const pct = (n: number, d: number) => (d === 0 ? "n/a" : `${((100 * n) / d).toFixed(1)} %`);
const ratioText = (n: number, d: number) => (d === 0 ? "n/a" : (n / d).toFixed(3));
const perK = (events: number, runs: number) => (runs === 0 ? "n/a" : ((1000 * events) / runs).toFixed(2));
const medianDelay = (s: SizeStats) => (s.delays.length === 0 ? "n/a" : String(medianOf(s.delays)));

function codeVersion(): string {
  try {
    const git = (...a: string[]) => execFileSync("git", a, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const commit = git("rev-parse", "--short", "HEAD");
    const watched = [
      "src/checks",
      "src/simulator",
      "src/services/tests/tests-state.ts",
      "bench/detection-bench.ts",
      "bench/health-scoring.ts",
      "bench/stream-index.ts",
    ];
    const dirty = git("status", "--porcelain", "--", ...watched) !== "";
    return dirty
      ? `commit ${commit} plus uncommitted changes under src/checks, src/simulator, the health rules or the bench`
      : `commit ${commit}`;
  } catch {
    return "unknown (not a git checkout)";
  }
}

type Scores = Map<string, { ours: Score; testNod: Score }>;
type CorpusStats = {
  runs: number;
  main: number;
  generationMs: number;
  anomalies: Map<string, number>;
  countSuspect: number;
  alwaysFailingTests: number;
  streams: number;
};

const newScores = (): Scores => new Map(CHECKS.map((spec) => [spec.name, { ours: newScore(), testNod: newScore() }]));

/** Feeds every stream through every check (ours and the TestNod rule) and scores it. */
function scoreCorpus(
  seeds: number[],
  make: (seed: number) => SimStream,
  scores: Scores,
  health: HealthScore | null,
  log: (line: string) => void,
  label: string,
): CorpusStats {
  const stats: CorpusStats = {
    runs: 0,
    main: 0,
    generationMs: 0,
    anomalies: new Map(),
    countSuspect: 0,
    alwaysFailingTests: 0,
    streams: 0,
  };
  for (const seed of seeds) {
    const t0 = performance.now();
    const stream = make(seed);
    const summaries = stream.runs.map((run) => toRunSummary(run));
    stats.generationMs += performance.now() - t0;
    const index = indexStream(stream);
    stats.streams++;
    stats.runs += stream.runs.length;
    stats.main += mainCount(index, 1, index.lastRun);
    stats.countSuspect += summaries.filter((summary) => summary.onDefaultBranch && isInfraSuspect(summary)).length;
    stats.alwaysFailingTests += stream.tests.filter((t) => t.alwaysFailing).length;
    for (const a of stream.anomalies) stats.anomalies.set(a.type, (stats.anomalies.get(a.type) ?? 0) + 1);

    for (const spec of CHECKS) {
      const score = scores.get(spec.name)!;
      for (const [which, detector] of [
        ["ours", ours(spec.check, spec.subjects)],
        ["testNod", spec.testNod()],
      ] as const) {
        const events: Detected[] = [];
        const t1 = performance.now();
        for (const summary of summaries) for (const subject of detector.feed(summary)) events.push({ run: summary.number, subject });
        score[which].ms += performance.now() - t1;
        scoreStream(index, summaries, spec, events, score[which]);
        if (spec.family === "flaky" && stream.knobs.rerunBatch !== undefined)
          sameCommitBatchRecall(stream, summaries, events, score[which]);
      }
    }
    if (health) {
      const t2 = performance.now();
      const replay = replayHealth(stream.runs, { summaries });
      health.ms += performance.now() - t2;
      scoreHealth(index, replay, health, kindOf);
    }
    if (stats.streams % 40 === 0) log(`${label}: ${stats.streams}/${seeds.length} streams`);
  }
  log(`${label} done: ${stats.runs} runs (${stats.main} default-branch), generation ${(stats.generationMs / 1000).toFixed(1)} s`);
  return stats;
}

/**
 * Whether a detection pattern has a stream for a seed: env_half and env_block_flaky at even
 * offsets, co_failing_group and co_failing_subsets at odd ones.
 */
function patternHasSeed(pattern: Pattern, seed: number): boolean {
  const even = (seed - SEED_BASE) % 2 === 0;
  return pattern === "env_half" || pattern === "env_block_flaky" ? even : !even;
}

/** The rerun patterns' flaky tests to find (issue 29): recall on them is a target of its own. */
const RERUN_PATTERN_KINDS: Partial<Record<Pattern, string>> = {
  co_failing_subsets: "flaky, co-failing subsets",
  env_block_flaky: "flaky beside an always-erroring block",
};

const PATTERNS_TEXT: Record<string, string> = {
  env_half: "env_half: 52–62 % of the tests fail (or error) in every run and never pass; the flaky family's tests are the ones to find",
  co_failing_group:
    "co_failing_group: 5–20 tests fail together in 3, 5 or 10 % of the runs (same-commit retries included) and pass together otherwise",
  env_block_flaky:
    "env_block_flaky (rerun batches: default-branch runs in batches of 100 re-runs of one commit, no feature branches, no breakage episodes): in the suite with the most free tests, 45–55 % of its tests error in every run and never pass, while the others of it (up to 16) error in a different subset of 5–8 in 6 or 10 % of the runs (those are flaky); the flaky tests start after the first 30 default-branch runs",
  co_failing_subsets:
    "co_failing_subsets (rerun batches, as env_block_flaky): a group of 14–18 tests of one suite of which a different subset of 5–8 fails together in 6 or 10 % of the runs (each member is flaky; from after the first 30 default-branch runs)",
};

/** The test-health subsection of the report: health = flaky beside the flakiness alert, health = broken, by kind, false entries by cause. */
function healthReport(healthScores: Map<string, HealthScore>, alertOf: (label: string) => Score | null): string[] {
  const lines: string[] = [];
  const corpusName = (label: string) => (label === "corpus" ? "corpus" : `${label} (patterns)`);
  const unitsText = (n: number, d: number) => `${ratioText(n, d)} (${n}/${d})`;
  const sizeOf = (signal: SignalScore, size: string) => signal.sizes.get(size) ?? newSize();
  const recallText = (s: SizeStats) => `${ratioText(s.detected, s.total)} (${s.detected}/${s.total})`;
  lines.push("");
  lines.push("### Test health against the ground truth");
  lines.push("");
  lines.push(
    "The same streams (the corpus and the patterns above) fed through the service's health rules in memory (src/simulator/health-replay.ts): each run's tests advanced by `advanceRun` (`advanceTest` on each, with the per-test row the service keeps), then the flakiness check's flags applied as `markTestsFlaky` does (`flagTestFlaky`), run by run; no database. Scoring (bench/health-scoring.ts; runs = default-branch runs):",
  );
  lines.push(
    `- Ground truth. Flaky: the subject of a flaky_test anomaly (independent flaky test, fragile-pool test, co-failing group member) from onset to its fix; the ${FLAKY_AFTER_FIX_RUNS} runs after a fix are an allowance (the rule needs 30 passes in a row to clear a test; as in the alert's window), neither true nor false. Broken: a test in a breakage episode (the simulator's noise: it fails in every run, every branch, for 1, 3, 10 or 30 runs or to the end, then passes again or is disabled), or one of env_half's always-failing tests from its first run; no allowance (a fixed test passes at its fix run, which heals a broken test at once).`,
  );
  lines.push(
    "- Entry: a test's transition into the health (at any run, by the run's rules or the check's flag); true when the test is labelled so at that run. Entry precision is comparable with the alert's (one event per newly flagged test). Test-run: a test executed (not skipped) in a default-branch run, with its health after the run; test-run precision = labelled test-runs among those shown with the health: how often the health the dashboard shows is right. Coverage = labelled test-runs shown with the health / labelled test-runs: detection delay and relapses to healthy included.",
  );
  lines.push(
    `- Recall: labelled tests whose health reaches it within N runs of onset (1 = the onset run). Flaky: N = ${FLAKY_HORIZON.large} for large anomalies (p ≥ 0.1), ${FLAKY_HORIZON.small} for small ones, the alert's horizons. Broken: N = ${BROKEN_HORIZON} (the rule's ${BROKEN_MIN_LENGTH} failing executions) over breakages planned to last ≥ ${BROKEN_MIN_LENGTH} runs (10, 30, never fixed) and always-failing tests; 1- and 3-run breakages are listed apart. Labels whose stream ends within N runs are left out. False entries per 1,000 runs: per 1,000 default-branch runs; "clean" = streams with the flaky family off (the alert's clean runs; the patterns have none, and every stream has breakages, so broken has none either).`,
  );
  lines.push("");
  lines.push(
    "| Corpus | Signal | Precision (entries) | Precision (test-runs) | Recall large (≤ 50 runs) | Recall small (≤ 200 runs) | Median runs to detection (large / small) | False entries / 1,000 clean runs | False entries / 1,000 runs | Coverage (labelled test-runs shown flaky) |",
  );
  lines.push("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const [label, h] of healthScores) {
    const f = h.flaky;
    lines.push(
      `| ${corpusName(label)} | health = flaky | ${unitsText(f.trueEntries, f.entries)} | ${unitsText(f.trueUnits + f.allowanceUnits, f.units)} | ${recallText(sizeOf(f, "large"))} | ${recallText(sizeOf(f, "small"))} | ${medianDelay(sizeOf(f, "large"))} / ${medianDelay(sizeOf(f, "small"))} | ${perK(f.cleanFalseEntries, h.cleanRuns)} | ${perK(f.falseEntries, h.runs)} | ${pct(f.labelledShown, f.labelledUnits)} |`,
    );
    const alert = alertOf(label);
    if (alert) {
      lines.push(
        `| ${corpusName(label)} | test_flakiness alert (events) | ${unitsText(alert.trueUnits, alert.trueUnits + alert.falseUnits)} | n/a | ${recallText(alert.large)} | ${recallText(alert.small)} | ${medianDelay(alert.large)} / ${medianDelay(alert.small)} | ${perK(alert.cleanEvents, alert.cleanRuns)} | ${perK(alert.falseUnits, h.runs)} | n/a |`,
      );
    }
  }
  lines.push("");
  lines.push(
    `| Corpus | Labelled (breakages ≥ ${BROKEN_MIN_LENGTH} runs and always-failing tests, in recall) | Precision (entries) | Precision (test-runs) | Recall (≤ ${BROKEN_HORIZON} runs) | Median runs to detection | False entries / 1,000 runs | Coverage (labelled test-runs shown broken) |`,
  );
  lines.push("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const [label, h] of healthScores) {
    const b = h.broken;
    const all = sizeOf(b, "all");
    lines.push(
      `| ${corpusName(label)} | ${all.total} | ${unitsText(b.trueEntries, b.entries)} | ${unitsText(b.trueUnits, b.units)} | ${recallText(all)} | ${medianDelay(all)} | ${perK(b.falseEntries, h.runs)} | ${pct(b.labelledShown, b.labelledUnits)} |`,
    );
  }
  lines.push("");
  lines.push("Recall by kind (health within the horizon; for flaky beside the alert's recall on the same anomalies):");
  lines.push("");
  lines.push("| Corpus | Health | Kind | Size | Health recall | Alert recall | Health median runs |");
  lines.push("|---|---|---|---|---:|---:|---:|");
  for (const [label, h] of healthScores) {
    const alert = alertOf(label);
    for (const [health, signal] of [
      ["flaky", h.flaky],
      ["broken", h.broken],
    ] as const) {
      for (const [kind, s] of [...signal.byKind].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))) {
        const [kindName, kindSize] = kind.split("|");
        const a = health === "flaky" ? alert?.byKind.get(kind) : undefined;
        lines.push(
          `| ${corpusName(label)} | ${health} | ${kindName} | ${kindSize === "all" ? "" : kindSize} | ${pct(s.detected, s.total)} (${s.detected}/${s.total}) | ${a ? pct(a.detected, a.total) : "n/a"} | ${medianDelay(s)} |`,
        );
      }
    }
  }
  lines.push("");
  lines.push(
    "Where the false entries come from (false test-runs: default-branch executions shown with the health while not labelled, counted against the entry that put the test there):",
  );
  lines.push("");
  lines.push("| Corpus | Health | Cause (and the step that made it) | False entries | False test-runs |");
  lines.push("|---|---|---|---:|---:|");
  for (const [label, h] of healthScores) {
    for (const [health, signal] of [
      ["flaky", h.flaky],
      ["broken", h.broken],
    ] as const) {
      const rows = [...signal.causes].sort((a, b) => b[1].units - a[1].units || b[1].entries - a[1].entries);
      for (const [cause, n] of rows) lines.push(`| ${corpusName(label)} | ${health} | ${cause} | ${n.entries} | ${n.units} |`);
      if (rows.length === 0) lines.push(`| ${corpusName(label)} | ${health} | (none) | 0 | 0 |`);
    }
  }
  lines.push("");
  for (const [label, h] of healthScores) {
    const f = h.flaky;
    const retryOfPoint = [...f.causes]
      .filter(([cause]) => cause.startsWith("same-commit retry of a"))
      .reduce((sum, [, n]) => sum + n.entries, 0);
    lines.push(
      `- ${corpusName(label)}: if tests that fail in a spike/outage run and pass on its same-commit re-run counted as flaky (they are not labelled flaky), health = flaky entry precision would be ${ratioText(f.trueEntries + retryOfPoint, f.entries)} instead of ${ratioText(f.trueEntries, f.entries)}.`,
    );
  }
  for (const [label, h] of healthScores) {
    lines.push(
      `- ${corpusName(label)}: ${h.streams} streams, ${h.runs} default-branch runs (${h.cleanRuns} in streams without the flaky family). Flaky test-runs in the after-fix allowance: ${h.flaky.allowanceUnits} of ${h.flaky.units}. Flaky tests declared healthy again while still flaky (30 passes in a row): ${h.flaky.exitsWhileLabelled} of ${h.flaky.exits} exits from flaky; broken tests leaving broken while still broken: ${h.broken.exitsWhileLabelled} of ${h.broken.exits}. Breakages of 1 or 3 runs: ${h.short.episodes}, of which ${h.short.broken} reached broken and ${h.short.flaky} were called flaky during it or within ${FLAKY_AFTER_FIX_RUNS} runs after. Breakages of ≥ ${BROKEN_MIN_LENGTH} runs fixed by disabling the test: ${h.disabled.episodes}, of which ${h.disabled.leftBroken} still broken at the end (skipped ever since: no test-runs counted; a test becomes healthy only by passing). Flags the service cannot apply (\`more_flagged_test_keys\`): ${h.unnamedFlags}. Replay CPU: ${(h.ms / 1000).toFixed(1)} s.`,
    );
  }
  return lines;
}

/** A verdict score's `new` precision and recall with their counts, for the table's row. */
function verdictFigure(score: VerdictScore): string {
  return `${shareText(score.newAndTrulyNew, score.newVerdicts)} / ${shareText(score.newAndTrulyNew, score.trulyNew)}`;
}

async function main() {
  const started = performance.now();
  const log = (line: string) => process.stderr.write(`[detection-bench ${((performance.now() - started) / 1000).toFixed(1)} s] ${line}\n`);
  const loadAtStart = os.loadavg()[0]!.toFixed(1);
  const scores = newScores();
  const seeds = Array.from({ length: STREAMS }, (_, i) => SEED_BASE + i);
  /** Test health per corpus ("corpus", then the patterns), scored on the same streams as the checks. */
  const healthScores = new Map<string, HealthScore>();
  const healthFor = (label: string) => {
    if (!HEALTH) return null;
    const score = newHealthScore();
    healthScores.set(label, score);
    return score;
  };
  const corpus = MAIN_CORPUS
    ? scoreCorpus(
        seeds,
        (seed) => generateStream({ seed, runs: RUNS, tests: TESTS, knobs: { families: familiesFor(seed) } }),
        scores,
        healthFor("corpus"),
        log,
        "corpus",
      )
    : { runs: 0, main: 0, generationMs: 0, anomalies: new Map<string, number>(), countSuspect: 0, alwaysFailingTests: 0, streams: 0 };
  const totalRuns = corpus.runs;
  const totalMain = corpus.main;
  const anomalyCounts = corpus.anomalies;

  // The detection patterns: one more stream per seed, scored apart.
  const patternScores = new Map<string, Scores>();
  const patternStats = new Map<string, CorpusStats>();
  if (PATTERNS) {
    for (const pattern of PATTERN_LIST) {
      const pScores = newScores();
      const stats = scoreCorpus(
        seeds.filter((seed) => patternHasSeed(pattern, seed)),
        (seed) =>
          generateStream({ seed, scenario: pattern, runs: RUNS, tests: TESTS, knobs: { families: { ...familiesFor(seed), flaky: true } } }),
        pScores,
        healthFor(pattern),
        log,
        pattern,
      );
      patternScores.set(pattern, pScores);
      patternStats.set(pattern, stats);
    }
  }

  const { timings, streamNote } = TIMING ? timeChecks(log) : { timings: [], streamNote: "" };
  const verdicts = VERDICTS
    ? await runVerdictBench({
        serverUrl: process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
        familySeeds: Array.from({ length: VERDICT_FAMILY }, (_, i) => 2000 + i),
        familyOptions: { tests: 100, warmupRuns: 50, scenarioCommits: 40 },
        corpusSeeds: seeds.slice(0, VERDICT_STREAMS),
        corpusStream: (seed) => generateStreamWithCauses({ seed, runs: RUNS, tests: TESTS, knobs: { families: familiesFor(seed) } }),
        corpusText: `the corpus above (${RUNS} runs, ~${TESTS} tests per stream)`,
        concurrency: VERDICT_CONCURRENCY,
        log,
      })
    : null;
  if (VERDICTS_ONLY) {
    console.log(`\n${verdicts?.lines.join("\n") ?? ""}\n`);
    console.log(`False or missed \`new\`, samples:\n  ${verdicts?.samples.join("\n  ") ?? ""}`);
    return;
  }

  // ------------------------------------------------------------------ tables
  const targets: { check: string; target: string; value: string; pass: boolean | null }[] = [];
  const patternTargets: typeof targets = [];
  const lines: string[] = [];
  lines.push("## Alert-check detection quality (`npm run bench:detection`)");
  lines.push("");
  lines.push(
    `Command: \`npm run bench:detection\` (script \`tsx bench/detection-bench.ts\`; options \`--streams=N --seed-base=S --runs=R --tests=T --no-write\`).`,
  );
  lines.push("");
  lines.push(`- Date: ${new Date().toISOString().replace(/\.\d+Z$/, "Z")}; code: ${codeVersion()}`);
  const cpus = os.cpus();
  lines.push(
    `- Machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, Node ${process.version}; load average ${loadAtStart} at start, ${os.loadavg()[0]!.toFixed(1)} at end`,
  );
  lines.push(
    `- Corpus: seeds ${SEED_BASE}–${SEED_BASE + STREAMS - 1} (${STREAMS} streams × ${RUNS} runs, ~${TESTS} tests; ${totalRuns} runs, ${totalMain} on the default branch). Anomaly family f is on in stream s when bit f of (s − ${SEED_BASE}) mod 16 is set (bits: flaky, regression, spike, skip), so each family is on in half the streams; the other half are its clean streams. Other knobs drawn per seed: ρ ∈ {0, 0.01, 0.05}, same-commit retry probability ∈ {0, 0.2, 0.5}, in-run retries ∈ {0, 1, 2}, Surefire or Gradle format, slow-runner share ∈ {0, 0.2, 0.5} (1.3×), 1 ms or 10 ms time steps.`,
  );
  lines.push(`- Anomalies injected: ${[...anomalyCounts].map(([type, n]) => `${type} ${n}`).join(", ")}.`);
  lines.push(
    `- Windows (runs = default-branch runs; an event outside every window, or on the wrong subject, is false): ${WINDOW_TEXT.join("; ")}.`,
  );
  lines.push(
    "- Large (recall target ≥ 0.95 within D runs): flaky p ≥ 0.1 (D = 50); run +25 % at log-σ ≤ 0.05, +50 % at ≤ 0.15, +100 % at ≤ 0.3 (D = 10; σ measured on the stream before its first duration anomaly); test ≥ +100 % with CV ≤ 20 % and median ≥ 1 s (D = 10); spike or outage with failing share ≥ 10 %, ≥ 20× the stream's baseline share and ρ ≤ 0.01 (D = 1); skip step +20 (D = 5). Everything else is small (recall within the window; flaky within 200 runs).",
  );
  lines.push(
    "- Precision counts units: a distinct (run, anomaly) for true events, a distinct (run, subject) for false ones. False events per 1,000 clean runs: all events of the check in the streams where its family is off, per 1,000 default-branch runs.",
  );
  lines.push("");
  lines.push(
    "| Check | Rule | Events | False / 1,000 clean runs | Precision | Recall large | Recall small | Median runs to detection (large / small) | CPU s |",
  );
  lines.push("|---|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const spec of CHECKS) {
    const { ours: o, testNod: t } = scores.get(spec.name)!;
    for (const [label, s] of [
      ["ours", o],
      [`TestNod: ${spec.testNodRule}`, t],
    ] as const) {
      lines.push(
        `| ${spec.name} | ${label} | ${s.events} | ${perK(s.cleanEvents, s.cleanRuns)} | ${ratioText(s.trueUnits, s.trueUnits + s.falseUnits)} (${s.trueUnits}/${s.trueUnits + s.falseUnits}) | ${ratioText(s.large.detected, s.large.total)} (${s.large.detected}/${s.large.total}) | ${ratioText(s.small.detected, s.small.total)} (${s.small.detected}/${s.small.total}) | ${medianDelay(s.large)} / ${medianDelay(s.small)} | ${(s.ms / 1000).toFixed(1)} |`,
      );
    }
    const precision = (s: Score) => s.trueUnits / Math.max(1, s.trueUnits + s.falseUnits);
    const recall = (s: SizeStats) => (s.total === 0 ? Number.NaN : s.detected / s.total);
    targets.push({
      check: spec.name,
      target: "≤ 1 false event / 1,000 clean runs",
      value: perK(o.cleanEvents, o.cleanRuns),
      pass: (1000 * o.cleanEvents) / Math.max(1, o.cleanRuns) <= 1,
    });
    targets.push({ check: spec.name, target: "precision ≥ 0.9", value: precision(o).toFixed(3), pass: precision(o) >= 0.9 });
    targets.push({
      check: spec.name,
      target: "recall ≥ 0.95 on large anomalies",
      value: ratioText(o.large.detected, o.large.total),
      pass: o.large.total > 0 && recall(o.large) >= 0.95,
    });
    const largeOk = !(recall(o.large) < recall(t.large));
    const smallOk = !(recall(o.small) < recall(t.small));
    targets.push({
      check: spec.name,
      target: "recall ≥ TestNod's (large and small)",
      value: `${ratioText(o.large.detected, o.large.total)} vs ${ratioText(t.large.detected, t.large.total)}; ${ratioText(o.small.detected, o.small.total)} vs ${ratioText(t.small.detected, t.small.total)}`,
      pass: spec.testNodHasRule ? largeOk && smallOk : null,
    });
    targets.push({
      check: spec.name,
      target: "precision > TestNod's",
      value: `${precision(o).toFixed(3)} vs ${precision(t).toFixed(3)}`,
      pass: spec.testNodHasRule ? precision(o) > precision(t) : null,
    });
  }
  lines.push("");
  lines.push(
    "Recall by chance alone: a rule that fires at its clean-stream rate r (events per default-branch run) hits a 30-run window with probability 1 − (1 − r)^30 without seeing any anomaly. The small-anomaly windows are 30 runs or longer, so a rule's small recall is only informative well above this figure: " +
      CHECKS.map((spec) => {
        const { ours: o, testNod: t } = scores.get(spec.name)!;
        const chance = (s: Score) => 1 - (1 - Math.min(1, s.cleanEvents / Math.max(1, s.cleanRuns))) ** 30;
        return `${spec.name} ours ${chance(o).toFixed(3)}, ${spec.testNodHasRule ? "TestNod" : "naive rule"} ${chance(t).toFixed(3)}`;
      }).join("; ") +
      ".",
  );
  lines.push("");
  lines.push("Recall by anomaly kind (ours vs TestNod; detected/total within the size's horizon, median runs to detection):");
  lines.push("");
  lines.push("| Check | Anomaly | Size | Ours | TestNod | Ours median runs |");
  lines.push("|---|---|---|---:|---:|---:|");
  for (const spec of CHECKS) {
    const { ours: o, testNod: t } = scores.get(spec.name)!;
    for (const [kind, s] of [...o.byKind].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))) {
      const tn = t.byKind.get(kind) ?? newSize();
      const [kindName, kindSizeName] = kind.split("|");
      lines.push(
        `| ${spec.name} | ${kindName} | ${kindSizeName} | ${pct(s.detected, s.total)} (${s.detected}/${s.total}) | ${pct(tn.detected, tn.total)} | ${medianDelay(s)} |`,
      );
    }
  }
  const flaky = (scores.get("test_flakiness") ?? { ours: newScore() }).ours;
  lines.push("");
  lines.push(
    `Same-commit / in-run retry evidence: of ${flaky.evidence.withEvidence} flaky tests that showed it on the default branch (in a non-infra-suspect run), ${flaky.evidence.flaggedByEvidenceRun} (${pct(flaky.evidence.flaggedByEvidenceRun, flaky.evidence.withEvidence)}) were flagged on or before that run.`,
  );
  const retryOfSpike = [...flaky.causes].filter(([cause]) => cause.startsWith("same-commit retry of a")).reduce((sum, [, n]) => sum + n, 0);
  lines.push(
    `If failures of a spike/outage run that pass on a same-commit retry counted as flaky (they are not labelled flaky here), test_flakiness precision would be ${ratioText(flaky.trueUnits + retryOfSpike, flaky.trueUnits + flaky.falseUnits)} instead of ${ratioText(flaky.trueUnits, flaky.trueUnits + flaky.falseUnits)}.`,
  );
  lines.push("");
  lines.push("False events per 1,000 clean runs, failure_rate_spike by background (clean = spike family off):");
  lines.push("");
  lines.push("| Background | Ours | Naive rule | Default-branch runs |");
  lines.push("|---|---:|---:|---:|");
  const spike = scores.get("failure_rate_spike") ?? { ours: newScore(), testNod: newScore() };
  for (const [key, entry] of [...spike.ours.cleanByRho].sort(([a], [b]) => a.localeCompare(b))) {
    const naive = spike.testNod.cleanByRho.get(key) ?? { events: 0, runs: 0 };
    lines.push(`| ${key} | ${perK(entry.events, entry.runs)} | ${perK(naive.events, naive.runs)} | ${entry.runs} |`);
  }
  lines.push("");
  lines.push("Where the false events of our checks come from (false units by cause, all streams):");
  lines.push("");
  lines.push("| Check | Cause | False units |");
  lines.push("|---|---|---:|");
  for (const spec of CHECKS) {
    const o = scores.get(spec.name)!.ours;
    for (const [cause, n] of [...o.causes].sort((a, b) => b[1] - a[1])) lines.push(`| ${spec.name} | ${cause} | ${n} |`);
    if (o.causes.size === 0) lines.push(`| ${spec.name} | (none) | 0 |`);
  }
  if (PATTERNS) {
    lines.push("");
    lines.push("### Detection patterns (additional streams)");
    lines.push("");
    lines.push(
      `Patterns found on real rerun data of open-source projects, simulated: for each seed above one more stream (${STREAMS} × ${RUNS} runs, ~${TESTS} tests), scenario env_half at even seed offsets and co_failing_group at odd ones, and one more again for the rerun patterns, env_block_flaky at even offsets and co_failing_subsets at odd ones; the flaky family is on in all of them, regression, spike and skip by bits 1–3 as above; scored exactly like the corpus above, apart from it (its figures do not include these streams).`,
    );
    for (const [pattern, stats] of patternStats) {
      lines.push(
        `- ${PATTERNS_TEXT[pattern]}. ${stats.streams} streams, ${stats.runs} runs (${stats.main} on the default branch); anomalies: ${[...stats.anomalies].map(([type, n]) => `${type} ${n}`).join(", ")}${stats.alwaysFailingTests > 0 ? `; ${stats.alwaysFailingTests} always-failing tests` : ""}; default-branch runs that look like an outage by the run's counts alone (the guard before it judged newly failing tests): ${pct(stats.countSuspect, stats.main)}.`,
      );
    }
    lines.push("");
    lines.push(
      "| Pattern | Check | Rule | Events | False / 1,000 clean runs | Precision | Recall large | Recall small | Median runs to detection (large / small) |",
    );
    lines.push("|---|---|---|---:|---:|---:|---:|---:|---:|");
    for (const [pattern, pScores] of patternScores) {
      for (const spec of CHECKS) {
        const { ours: o, testNod: t } = pScores.get(spec.name)!;
        for (const [label, sc] of [
          ["ours", o],
          [spec.testNodHasRule ? "TestNod" : "naive rule", t],
        ] as const) {
          lines.push(
            `| ${pattern} | ${spec.name} | ${label} | ${sc.events} | ${perK(sc.cleanEvents, sc.cleanRuns)} | ${ratioText(sc.trueUnits, sc.trueUnits + sc.falseUnits)} (${sc.trueUnits}/${sc.trueUnits + sc.falseUnits}) | ${ratioText(sc.large.detected, sc.large.total)} (${sc.large.detected}/${sc.large.total}) | ${ratioText(sc.small.detected, sc.small.total)} (${sc.small.detected}/${sc.small.total}) | ${medianDelay(sc.large)} / ${medianDelay(sc.small)} |`,
          );
        }
      }
    }
    lines.push("");
    lines.push("Flaky-test recall on the patterns by kind (ours vs TestNod):");
    lines.push("");
    lines.push("| Pattern | Anomaly | Size | Ours | TestNod | Ours median runs |");
    lines.push("|---|---|---|---:|---:|---:|");
    for (const [pattern, pScores] of patternScores) {
      const entry = pScores.get("test_flakiness");
      if (!entry) continue;
      for (const [kind, sc] of [...entry.ours.byKind].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))) {
        const tn = entry.testNod.byKind.get(kind) ?? newSize();
        const [kindName, kindSizeName] = kind.split("|");
        lines.push(
          `| ${pattern} | ${kindName} | ${kindSizeName} | ${pct(sc.detected, sc.total)} (${sc.detected}/${sc.total}) | ${pct(tn.detected, tn.total)} | ${medianDelay(sc)} |`,
        );
      }
    }
    const rerunPatterns = [...patternScores].filter(([pattern]) => RERUN_PATTERN_KINDS[pattern as Pattern] !== undefined);
    if (rerunPatterns.length > 0) {
      lines.push("");
      lines.push(
        "Same-commit recall on the rerun patterns, as the real-data evaluation counts it (issue 29): for each commit (a batch of 100 re-runs), the flaky tests that both passed and failed in its runs, and of those the ones flagged by the commit's last run:",
      );
      lines.push("");
      lines.push("| Pattern | Anomaly | Ours | TestNod |");
      lines.push("|---|---|---:|---:|");
      for (const [pattern, pScores] of rerunPatterns) {
        const entry = pScores.get("test_flakiness");
        if (!entry) continue;
        const all = (m: Map<string, { detected: number; total: number }>) =>
          [...m.values()].reduce((sum, v) => ({ detected: sum.detected + v.detected, total: sum.total + v.total }), {
            detected: 0,
            total: 0,
          });
        for (const [kind, sc] of [...entry.ours.sameCommit].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))) {
          const tn = entry.testNod.sameCommit.get(kind) ?? { detected: 0, total: 0 };
          lines.push(
            `| ${pattern} | ${kind} | ${pct(sc.detected, sc.total)} (${sc.detected}/${sc.total}) | ${pct(tn.detected, tn.total)} |`,
          );
        }
        const o = all(entry.ours.sameCommit);
        const t = all(entry.testNod.sameCommit);
        lines.push(
          `| ${pattern} | all flaky tests | ${pct(o.detected, o.total)} (${o.detected}/${o.total}) | ${pct(t.detected, t.total)} |`,
        );
      }
    }
    lines.push("");
    lines.push("False units of our checks on the patterns, by cause:");
    lines.push("");
    lines.push("| Pattern | Check | Cause | False units |");
    lines.push("|---|---|---|---:|");
    for (const [pattern, pScores] of patternScores) {
      for (const spec of CHECKS) {
        const o = pScores.get(spec.name)!.ours;
        for (const [cause, n] of [...o.causes].sort((a, b) => b[1] - a[1])) lines.push(`| ${pattern} | ${spec.name} | ${cause} | ${n} |`);
        if (o.causes.size === 0) lines.push(`| ${pattern} | ${spec.name} | (none) | 0 |`);
      }
      const flakyPattern = pScores.get("test_flakiness");
      if (flakyPattern) {
        const onAlwaysFailing = (sc: Score) => sc.causes.get("always-failing environment-dependent test") ?? 0;
        if (pattern === "env_half")
          lines.push(
            `| ${pattern} | test_flakiness (TestNod) | always-failing environment-dependent test | ${onAlwaysFailing(flakyPattern.testNod)} |`,
          );
      }
    }
    const flakyTargets = (pattern: string) => {
      const entry = patternScores.get(pattern)?.get("test_flakiness");
      if (!entry) return;
      const o = entry.ours;
      const precision = o.trueUnits / Math.max(1, o.trueUnits + o.falseUnits);
      patternTargets.push({
        check: `test_flakiness (${pattern})`,
        target: "precision ≥ 0.9",
        value: precision.toFixed(3),
        pass: precision >= 0.9,
      });
      patternTargets.push({
        check: `test_flakiness (${pattern})`,
        target: "recall ≥ 0.95 on large anomalies",
        value: ratioText(o.large.detected, o.large.total),
        pass: o.large.total > 0 && o.large.detected / o.large.total >= 0.95,
      });
    };
    for (const pattern of PATTERN_LIST) flakyTargets(pattern);
    // The rerun patterns: recall on the shape's own flaky tests (within the horizon of their size).
    for (const pattern of PATTERN_LIST) {
      const prefix = RERUN_PATTERN_KINDS[pattern];
      const entry = patternScores.get(pattern)?.get("test_flakiness");
      if (!prefix || !entry) continue;
      let detected = 0;
      let total = 0;
      for (const [kind, sc] of entry.ours.byKind)
        if (kind.startsWith(prefix)) {
          detected += sc.detected;
          total += sc.total;
        }
      patternTargets.push({
        check: `test_flakiness (${pattern})`,
        target: `recall ≥ 0.9 on its ${prefix.replace(/^flaky, /, "")} tests`,
        value: `${ratioText(detected, total)} (${detected}/${total})`,
        pass: total > 0 && detected / total >= 0.9,
      });
      let sameDetected = 0;
      let sameTotal = 0;
      for (const [kind, sc] of entry.ours.sameCommit)
        if (kind.startsWith(prefix)) {
          sameDetected += sc.detected;
          sameTotal += sc.total;
        }
      patternTargets.push({
        check: `test_flakiness (${pattern})`,
        target: `same-commit recall ≥ 0.9 on its ${prefix.replace(/^flaky, /, "")} tests (flagged by the commit's last run)`,
        value: `${ratioText(sameDetected, sameTotal)} (${sameDetected}/${sameTotal})`,
        pass: sameTotal > 0 && sameDetected / sameTotal >= 0.9,
      });
    }
  }
  if (HEALTH)
    lines.push(
      ...healthReport(
        healthScores,
        (label) => (label === "corpus" ? scores : patternScores.get(label))?.get("test_flakiness")?.ours ?? null,
      ),
    );
  lines.push("");
  lines.push(
    `Cost per run with 100 vs 10,000 runs of history (stream ${streamNote}; each check fed runs 1–10,000 through \`update\`; then the block of runs 101–${100 + TIMING_BLOCK} from the state after run 100 and the block ${TIMING_RUNS + 1}–${TIMING_RUNS + TIMING_BLOCK} from the state after run 10,000, ${TIMING_REPS} interleaved repetitions each after 3 warm-ups, median; state size = JSON bytes of the project-level state, which every run reads and writes, and of the largest per-test entry (stored in the test's row; a run reads and writes its own tests' entries only); the target is judged on the raw ratio, the per-test ratio divides out the different number of tests in the two blocks):`,
  );
  lines.push("");
  lines.push(
    "| Check | ms/run at 100 | ms/run at 10,000 | Ratio | Target ≤ 1.3 | Ratio per test in the run | Project state bytes at 100 / 10,000 | Largest test entry bytes at 100 / 10,000 | Tests per run (100 / 10,000) |",
  );
  lines.push("|---|---:|---:|---:|---|---:|---:|---:|---:|");
  for (const t of timings) {
    const perTest = t.at10k / t.tests10k / (t.at100 / t.tests100);
    lines.push(
      `| ${t.name} | ${t.at100.toFixed(3)} | ${t.at10k.toFixed(3)} | ${t.ratio.toFixed(2)} | ${t.ratio <= 1.3 ? "PASS" : "FAIL"} | ${perTest.toFixed(2)} | ${t.bytes100} / ${t.bytes10k} | ${t.entry100} / ${t.entry10k} | ${t.tests100} / ${t.tests10k} |`,
    );
    targets.push({ check: t.name, target: "per-run time ratio 10,000 / 100 ≤ 1.3", value: t.ratio.toFixed(2), pass: t.ratio <= 1.3 });
  }
  targets.push(...patternTargets);
  if (verdicts) {
    lines.push("");
    lines.push(...verdicts.lines);
    targets.push(...verdicts.targets);
  }
  lines.push("");
  lines.push("Targets:");
  lines.push("");
  lines.push("| Check | Target | Value | Result |");
  lines.push("|---|---|---|---|");
  for (const t of targets)
    lines.push(
      `| ${t.check} | ${t.target} | ${t.value} | ${t.pass === null ? "n/a: TestNod documents no such rule (the naive rule is context)" : t.pass ? "PASS" : "FAIL"} |`,
    );
  lines.push("");
  lines.push(`Bench wall time: ${((performance.now() - started) / 1000).toFixed(0)} s.`);
  const report = lines.join("\n");

  console.log(`\n${report}\n`);
  for (const spec of CHECKS) {
    const o = scores.get(spec.name)!.ours;
    if (o.samples.length > 0) console.log(`False-event samples, ${spec.name}:\n  ${o.samples.join("\n  ")}`);
  }
  for (const [pattern, pScores] of patternScores) {
    for (const spec of CHECKS) {
      const o = pScores.get(spec.name)!.ours;
      if (o.samples.length > 0) console.log(`False-event samples, ${spec.name} on ${pattern}:\n  ${o.samples.join("\n  ")}`);
    }
  }
  if (verdicts && verdicts.samples.length > 0) console.log(`False or missed \`new\`, samples:\n  ${verdicts.samples.join("\n  ")}`);
  for (const [label, h] of healthScores) {
    for (const [health, signal] of [
      ["flaky", h.flaky],
      ["broken", h.broken],
    ] as const) {
      if (signal.samples.length > 0) console.log(`False ${health} entries, samples on ${label}:\n  ${signal.samples.join("\n  ")}`);
    }
  }
  if (WRITE) {
    const judged = targets.filter((t) => t.pass !== null);
    const failed = judged.filter((t) => !t.pass);
    const flaky = scores.get("test_flakiness")!.ours;
    const health = healthScores.get("corpus")!.flaky;
    recordBenchmark({
      name: "detection",
      command: "npm run bench:detection",
      measures:
        "The alert checks' and test health's precision and recall on simulated CI streams, against TestNod's rules; the runs' verdicts against the truth",
      figure:
        `${judged.length - failed.length} of ${judged.length} targets PASS` +
        (judged.length < targets.length ? ` (${targets.length - judged.length} n/a)` : "") +
        (failed.length > 0 ? `, FAIL: ${failed.map((t) => `${t.check} ${t.target}`).join("; ")}` : "") +
        `; test_flakiness precision ${ratioText(flaky.trueUnits, flaky.trueUnits + flaky.falseUnits)}, recall large ${ratioText(flaky.large.detected, flaky.large.total)}` +
        `; health = flaky entry precision ${ratioText(health.trueEntries, health.entries)}` +
        `; verdict \`new\` precision / recall: family ${verdictFigure(verdicts!.family)}, corpus ${verdictFigure(verdicts!.corpus)}`,
      target:
        "per check: ≤ 1 false event / 1,000 clean runs, precision ≥ 0.9, recall ≥ 0.95 on large anomalies, ≥ TestNod's; cost ratio 10,000 / 100 runs ≤ 1.3; verdicts: precision and recall of `new` ≥ 0.95",
      report,
    });
  }
}

await main();
