/**
 * `test_flakiness` (docs/alert-checks.md#test_flakiness): flags a test that both passes and fails on the same code.
 *
 * Per test (by `RunTest.key`, an entry stored in the test's row) the state keeps:
 * - a window of the last ≤ 50 countable outcomes on the default branch (1 = failed/errored,
 *   0 = passed; skipped is not counted), newest in bit 0, as two 25-bit integers;
 * - an LRU of ≤ 8 commits (by a 53-bit hash of the SHA) with pass/fail counts, any branch: the
 *   first time one commit has both a pass and a fail is `same_commit` evidence;
 * - ≤ 8 recent evidence entries (any branch) with a 14-day TTL: `same_commit`, `passed_on_retry`,
 *   `burst_recurred`, `same_commit_bursts` (strong) and `burst_same_commit` (weak, see below);
 * - recovery bookkeeping (consecutive default-branch passes, last failure) and the flag;
 * - `bq`, the last default-branch co-failure the test newly failed in, and `sx`, the guard's memory
 *   for a test with no default-branch outcome yet.
 *
 * A test is flagged (one event) when either
 * - A (evidence): ≥ 1 distinct evidence commit within 14 days if a strong piece of it is on the
 *   default branch, else ≥ 2, and at least one piece strong (a commit SHA identifies evidence; a
 *   run without SHA counts as its own);
 * - B (history): n ≥ 20, f ≥ 3, n − f ≥ 3, flips ≥ 4 and Wald–Wolfowitz runs-test z ≥ −2.
 * It stays flagged (no further events) until it has had ≥ 50 default-branch passes in a row since
 * the flag/last failure AND ≥ 14 days have passed since both the flag and its last evidence;
 * a later flag is a new event.
 *
 * Infrastructure guard (`judgeInfra`, types.ts, counted chunk by chunk with `countPersistent` and
 * judged by `judgeInfraCounts`): it judges the tests that *newly* fail, with this
 * check's own memory of the previous outcome: the newest bit of a test's default-branch window
 * (or `sx` while it has none). A project where half the tests fail in every run (environment-
 * dependent tests that never pass) is therefore not one long outage whose flaky tests are never
 * looked at. Suspect runs do not touch per-test state, except that a failing test with no
 * default-branch outcome yet gets `sx` (so the second run of a project whose first run fails half
 * its tests is judged on the tests that newly fail); they are counted in a project-level window
 * of the last 50 default-branch runs (`infra_excluded_runs_in_window`).
 *
 * One-off co-failure bursts give no evidence. A network blip or a broken shared service that fails
 * 10 % of a suite once, followed by a green re-run of the same commit, would otherwise flag every
 * one of those tests as flaky (same-commit evidence), one event each, although nothing is wrong
 * with any of them: that run is a `failure_rate_spike`, one project-level event (Parry et al.:
 * co-failure clusters are mostly networking and external dependencies; Trunk excludes such uploads
 * from flaky detection). A run is a burst when its *newly failing* tests (failed or errored now, and
 * did not fail the last time in the check's memory: their previous default-branch outcome passed,
 * or without one they did not fail when they last ran; a test never seen, or only seen failing, has
 * never passed, so an always-erroring block does not make a burst of the flaky tests beside it;
 * tests already flagged are left out: their failures are expected) number ≥ 5 and more than 4 × the
 * 90th percentile of the same count over the last ≤ 50 default-branch runs (at least 10 of them). Counting newly failing
 * tests, not failing ones, keeps a lasting breakage from turning every later run into a burst;
 * bursts stay in the baseline window, so a project whose normal state is bursty stops being
 * excluded once bursts are a tenth of its runs. A burst's failures still enter the tests' windows
 * (so a breakage that starts with a burst is known as failing from its first run, and is not
 * "newly failing" again next run). Burst runs are counted in `burst_runs_in_window`.
 *
 * But a burst is not always a one-off (real rerun data: a group of tests that fail together in
 * some runs of a commit and pass together in others was discarded as a one-off burst each time):
 * - recurrence (strong, `burst_recurred`): a default-branch co-failure (≥ 5 newly failing tests,
 *   burst or not) is remembered for 50 default-branch runs (`cf`, and `bq` per test). A burst
 *   whose newly failing tests share ≥ 5 tests with one earlier co-failure, at least half of
 *   each, is the same group failing together again: each shared test that failed in at most half
 *   of its outcomes since then (a group broken most of the time in between is a breakage that
 *   came back) gets evidence, which flags it.
 * - same commit (weak, `burst_same_commit`): a burst's failure is marked in the same-commit LRU;
 *   a pass of that commit (a re-run, or a pass on retry inside the burst run) is weak evidence.
 *   Weak evidence counts toward rule A's distinct commits but never flags on its own: one burst
 *   with a green re-run is still a one-off, and so are two unrelated bursts that happen to share
 *   a test (on the simulated corpus, letting two weak pieces flag added 38 false units from
 *   spikes retried green). It completes evidence from another branch, and is listed in events.
 * - recurring on one commit (strong, `same_commit_bursts`), for co-failures whose tests differ each
 *   time (real rerun data, one commit re-run 100 times: a group of about 16 of which each failing
 *   re-run fails a different few is a burst each time, and never the same burst twice, so neither
 *   rule above saw it):
 *   - a test that failed in ≥ 3 runs of one commit, bursts included, and passed in another run of
 *     it is flaky, whatever failed beside it. The LRU counts a commit's burst failures in its
 *     flags (bits 4 and up, ≤ 15);
 *   - a default-branch burst (not a recurrence above) recurs on its commit when ≥ 3 of its newly
 *     failing tests, at least half of them, newly failed last (`bq`) in earlier co-failures of the
 *     same commit within 50 runs (any of them; `cc` keeps each kept co-failure's commit): each of
 *     its newly failing tests that passed on the commit gets the evidence, a member failing for the
 *     first time too. Bursts on different commits, or sharing fewer tests, stay one-offs.
 *
 * Cost per run: O(tests in the run · log). Each test's entry is stored in the test's row and a run
 * sees only its own tests' entries; the project-level state is bounded (windows of 50 runs, ≤ 8
 * co-failures). A sweep every 50 runs (`pr`) makes entries of tests not seen for 200 project runs
 * count as absent, so a test that comes back after a long pause starts afresh.
 *
 * The run's tests come in chunks, twice (`CheckPass`), and beyond the chunk at hand the check holds
 * only bounded project-level tallies. The first pass counts the guard's persistent failures, the
 * newly failing tests and, per kept co-failure (≤ 8), how many of them newly failed in it last
 * (`bq`): all that the guard, the burst rule and the recurrence rule need. The second pass updates
 * each test from its entry and the decision; whether a test joins this run's co-failure is asked
 * again per test (it newly fails, by the same criterion). Events are built as flags come: at most
 * 50 of them, plus the count and the first 50 keys of the flags past them.
 *
 * Time comes only from `run.createdAt`; the same state and run always give the same output.
 * Cases are processed in key order, so the order of the run's keys, and how the run is cut into
 * chunks, change nothing; an event's names are those of its key's first case in its chunk.
 *
 * Choices beyond the rule in docs/alert-checks.md:
 * - A pass on retry is a pass in the window and in the same-commit LRU (its retry is its own
 *   evidence), but it resets the consecutive-pass counter that un-flagging needs.
 * - Same-commit evidence counts as default-branch evidence if the SHA was seen there in any run.
 * - Un-flag needs 14 days since the flag as well as since the last evidence, so a history flag
 *   (which has no evidence) also waits 14 days.
 * - When both rules hold, `rule` names the newest evidence kind (the most explainable).
 * - `first_failure_run_number` is the first failure (any branch, pass on retry included) since
 *   the test was last clean: no failure in its window and no evidence within 14 days.
 * - Duplicate keys within one run are merged: any failure → failure, else any pass → pass.
 * - Events per run: at most 50, in key order; if more tests were newly flagged, the 50th event
 *   carries `more_flagged_count` and `more_flagged_test_keys` (≤ 50). Those tests are flagged all
 *   the same (no later event). This matches the orchestrator's own cap of 50 per check and run.
 */
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
} from "./types";
import { cap, round } from "./metadata-format";
import { nearestRankPercentile, runsTestZ, wilson95 } from "./statistics";

const FLAKINESS_DETECTOR_VERSION = "test_flakiness/2";

const WINDOW = 50;
const HALF_BITS = 25;
const HALF_MASK = (1 << HALF_BITS) - 1;
const MIN_RUNS = 20;
const MIN_FAILURES = 3;
const MIN_PASSES = 3;
const MIN_FLIPS = 4;
const Z_MIN = -2;
const MIN_EVIDENCE_DEFAULT = 1;
const MIN_EVIDENCE_OTHER = 2;
const EVIDENCE_TTL_MS = 14 * 24 * 60 * 60 * 1000;
const UNFLAG_CLEAN_RUNS = 50;
const LRU_SIZE = 8;
const EVIDENCE_SIZE = 8;
const PRUNE_EVERY_RUNS = 50;
const PRUNE_UNSEEN_RUNS = 200;
const MAX_EVENTS_PER_RUN = 50;
const BURST_MIN_NEWLY_FAILING = 5;
const BURST_FACTOR = 4;
const BURST_BASELINE_MIN_RUNS = 10;
/** A test failing in this many runs of one commit (bursts included) that also passed on it is flaky, whatever failed beside it. */
const SAME_COMMIT_MIN_FAILED_RUNS = 3;
/**
 * A burst recurs on its commit when ≥ 3 of its newly failing tests, at least half of it, newly failed
 * last in earlier co-failures of the same commit (within the last 50 default-branch runs, any of
 * them): a group of which each failing re-run fails a different few.
 */
const SAME_COMMIT_RECUR_MIN_TESTS = 3;
/** The same-commit LRU's flags keep a commit's burst failures above bit 4, counted up to this. */
const BURST_FAILURES_SHIFT = 4;
const BURST_FAILURES_CAP = 15;
/** A burst recurs when ≥ 5 of its newly failing tests, at least half of it and of the earlier co-failure, newly failed together within the last 50 default-branch runs. */
const RECUR_RUNS = 50;
const RECUR_MIN_SHARE = 0.5;
const CO_FAILURES_KEPT = 8;
const MAX_STRING = 500;
/** Stored strings (commit SHA, branch) are shorter than event strings: they live in every entry. */
const MAX_STORED_STRING = 200;
/** Small counters are capped so a long-lived entry cannot grow its digits forever. */
const COUNTER_CAP = 1_000_000;
const DECAY = 0.9;

/**
 * same_commit and passed_on_retry (outside bursts), burst_recurred and same_commit_bursts (≥ 3 runs
 * of one commit failed it, bursts included, and one passed it) are strong: one on the default branch
 * flags. burst_same_commit (a burst's failure with a pass on the same commit: a green re-run, or a
 * pass on retry inside the burst run) is weak: it counts like evidence off the default branch.
 */
type EvidenceKind = "same_commit" | "passed_on_retry" | "burst_same_commit" | "burst_recurred" | "same_commit_bursts";
type Rule = EvidenceKind | "history_flips";

/** One evidence entry (kept ≤ 8, oldest first). */
type Evidence = {
  /** "same_commit" | "passed_on_retry" */
  k: EvidenceKind;
  /** Commit SHA (capped), or null when the run carried none. */
  c: string | null;
  /** Branch of the run that produced it (capped), or null. */
  b: string | null;
  /** 1 when the evidence involves the default branch. */
  d: 0 | 1;
  /** Run number and createdAt (epoch ms) of the run that produced it. */
  r: number;
  t: number;
  /** Passes and failures behind it (same commit: outcomes seen on the SHA; retry: 1 and the failed attempts). */
  p: number;
  f: number;
};

/** Per-test state (about 40–250 bytes of JSON). Optional keys are absent (never undefined) when empty. */
export type FlakinessTestState = {
  /** Default-branch outcome window, 1 = fail, newest outcome in bit 0 of `wl`: bits 0–24 in `wl`, bits 25–49 in `wh`. */
  wh: number;
  wl: number;
  /** Outcomes in the window (≤ 50). */
  n: number;
  /** last_seen_run_number: the last non-infra run that contained the test. */
  ls: number;
  /** Consecutive default-branch passes since the last failure, pass on retry or flag. */
  cp: number;
  /** First failure of the current episode (cleared once the test is clean again) and the last failure: run numbers, any branch. */
  ff?: number;
  lf?: number;
  /**
   * Same-commit LRU, least recently used first, flattened: 4 numbers per commit
   * [53-bit hash of the SHA, passes, failures outside bursts, flags (1 = seen on the default branch,
   * 2 = evidence recorded, 4 = failed in a burst, 8 = weak evidence recorded; bits 4 and up: the
   * commit's burst failures, ≤ 15)].
   */
  c?: number[];
  /** Recent evidence, oldest first. */
  e?: Evidence[];
  /** When flagged: run number, createdAt (epoch ms) and rule of the flag. */
  fl?: number;
  ft?: number;
  fr?: Rule;
  /** 1 when the test has no default-branch outcome yet (n = 0) and failed the last time it ran (the infrastructure guard's memory). */
  sx?: 1;
  /** `sq` of the last default-branch co-failure (≥ 5 newly failing tests) the test newly failed in; dropped after 50 runs. */
  bq?: number;
};

/** The project-level state; each test's entry (`FlakinessTestState`) is stored in the test's row. */
export type FlakinessState = {
  /** State schema version (2: per-test entries stored apart; version 1 held them in `tests`). */
  v: 2;
  /** Project-level window of the last ≤ 50 default-branch runs, 1 = infra-suspect (excluded from per-test state). */
  infra: { wh: number; wl: number; n: number };
  /** The same window, 1 = co-failure burst (its failures are not evidence). Absent in states written before the burst guard. */
  burst?: { wh: number; wl: number; n: number };
  /** Newly failing tests of the last ≤ 50 default-branch runs that were not infra-suspect, oldest first (the burst baseline). */
  nf?: number[];
  /**
   * Run number of the last sweep: an entry whose test was not seen for 200 project runs at the
   * last sweep (every 50 runs) counts as absent, so a test that comes back starts afresh.
   */
  pr: number;
  /** Default-branch runs seen (the clock of `cf` and `bq`). Absent in states written before the recurrence rule. */
  sq?: number;
  /** Co-failures of the last 50 default-branch runs, oldest first, flattened: [sq, newly failing tests] per run (≤ 8). */
  cf?: number[];
  /** The commit of each co-failure in `cf`, in the same order: the 53-bit hash of its SHA, 0 without one. Absent in states written before it (no commit known). */
  cc?: number[];
};

// ---------------------------------------------------------------------------------------------
// Bit windows: 50 bits as two 25-bit halves (exact in JSON, plain 32-bit operations)

function shiftLo(lo: number, bit: number): number {
  return ((lo << 1) | bit) & HALF_MASK;
}

function shiftHi(hi: number, lo: number): number {
  return ((hi << 1) | ((lo >>> (HALF_BITS - 1)) & 1)) & HALF_MASK;
}

function bitAt(hi: number, lo: number, index: number): number {
  return index < HALF_BITS ? (lo >>> index) & 1 : (hi >>> (index - HALF_BITS)) & 1;
}

function popcount(x: number): number {
  let v = x >>> 0;
  v = v - ((v >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Ones in a window (bits beyond its length are always zero). */
function ones(hi: number, lo: number): number {
  return popcount(hi) + popcount(lo);
}

function windowFlips(hi: number, lo: number, n: number): number {
  let flips = 0;
  for (let i = 0; i + 1 < n; i++) flips += bitAt(hi, lo, i) ^ bitAt(hi, lo, i + 1);
  return flips;
}

/** Apple-style decayed flip score over the window: Σ flip_i·0.9^i / Σ 0.9^i (i = 0 is the newest pair). */
function decayedFlipScore(hi: number, lo: number, n: number): number | null {
  if (n < 2) return null;
  let score = 0;
  let norm = 0;
  let weight = 1;
  for (let i = 0; i + 1 < n; i++) {
    score += (bitAt(hi, lo, i) ^ bitAt(hi, lo, i + 1)) * weight;
    norm += weight;
    weight *= DECAY;
  }
  return score / norm;
}

// ---------------------------------------------------------------------------------------------
// The rules' window statistics

type WindowStats = { n: number; failures: number; passes: number; flips: number; z: number | null };

function windowStats(wh: number, wl: number, n: number): WindowStats {
  const failures = ones(wh, wl);
  const flips = windowFlips(wh, wl, n);
  return { n, failures, passes: n - failures, flips, z: runsTestZ(n, failures, flips) };
}

/** Rule B. Cheap guards first: the flip count (≤ 49 steps) only when the counts allow a flag. */
function historyRuleHolds(wh: number, wl: number, n: number): WindowStats | null {
  if (n < MIN_RUNS) return null;
  const failures = ones(wh, wl);
  if (failures < MIN_FAILURES || n - failures < MIN_PASSES) return null;
  const flips = windowFlips(wh, wl, n);
  if (flips < MIN_FLIPS) return null;
  const z = runsTestZ(n, failures, flips);
  if (z === null || z < Z_MIN) return null;
  return { n, failures, passes: n - failures, flips, z };
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** cyrb53: a deterministic 53-bit string hash (a safe integer, exact in JSON and jsonb). */
function hash53(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

function isFail(status: CaseStatus): boolean {
  return status === "failed" || status === "errored";
}

function timeOf(run: RunHeader): number {
  const t = run.createdAt instanceof Date ? run.createdAt.getTime() : new Date(run.createdAt as unknown as string).getTime();
  return Number.isFinite(t) ? t : 0;
}

function isValidState(state: unknown): state is FlakinessState {
  if (typeof state !== "object" || state === null) return false;
  const s = state as Partial<FlakinessState>;
  return s.v === 2 && typeof s.infra === "object" && s.infra !== null && typeof s.pr === "number";
}

/** Version 1: the same project-level fields, plus every test's entry in `tests`. */
type LegacyFlakinessState = Omit<FlakinessState, "v"> & { v: 1; tests: Record<string, FlakinessTestState> };

function isLegacyState(state: unknown): state is LegacyFlakinessState {
  if (typeof state !== "object" || state === null) return false;
  const s = state as Partial<LegacyFlakinessState>;
  return (
    s.v === 1 &&
    typeof s.tests === "object" &&
    s.tests !== null &&
    typeof s.infra === "object" &&
    s.infra !== null &&
    typeof s.pr === "number"
  );
}

/**
 * A test's stored entry if the last sweep kept it (see `pr`), else undefined. Looked up key by key:
 * the entries given with a chunk may hold more than the chunk's tests.
 */
function visibleEntry(stored: TestEntries<FlakinessTestState>, sweptAt: number, key: string): FlakinessTestState | undefined {
  const entry = stored.get(key);
  return entry !== undefined && sweptAt - entry.ls <= PRUNE_UNSEEN_RUNS ? entry : undefined;
}

/** One outcome per key: duplicates of a key within a run (unmerged parametrised cases) are combined. */
type Outcome = { test: RunTest; status: CaseStatus; attempts: CaseStatus[] };

/**
 * The outcomes of a chunk (every case of a key is in the same chunk), in key order. An outcome's
 * `test` (the names in its event) is the key's first case in the chunk's order.
 */
function combine(tests: readonly RunTest[]): Outcome[] {
  const byKey = new Map<string, Outcome>();
  for (const test of tests) {
    const existing = byKey.get(test.key);
    if (!existing) {
      byKey.set(test.key, { test, status: test.status, attempts: test.attempts });
      continue;
    }
    // Any failure makes the combined outcome a failure; else any pass a pass; else skipped.
    existing.status = isFail(existing.status)
      ? existing.status
      : isFail(test.status)
        ? test.status
        : existing.status === "passed" || test.status === "passed"
          ? "passed"
          : "skipped";
    existing.attempts = [...existing.attempts, ...test.attempts];
  }
  // Processing in key order makes the output independent of the order of cases in the run.
  return [...byKey.values()].sort((a, b) => (a.test.key < b.test.key ? -1 : a.test.key > b.test.key ? 1 : 0));
}

function evidenceIdentity(evidence: Evidence): string {
  return evidence.c !== null ? `c:${evidence.c}` : `r:${evidence.r}`;
}

function recentEvidence(evidence: Evidence[] | undefined, now: number): Evidence[] {
  return evidence ? evidence.filter((item) => now - item.t < EVIDENCE_TTL_MS) : [];
}

/** Weak evidence (a burst's failure passing on the same commit) counts like evidence off the default branch. */
function isStrong(kind: EvidenceKind): boolean {
  return kind !== "burst_same_commit";
}

/**
 * Rule A: distinct evidence commits within 14 days (1 needed if any strong piece is on the default
 * branch, else 2), at least one of them strong: weak evidence completes the count but never flags
 * on its own (two unrelated bursts that happen to share a test are two one-offs).
 */
function evidenceRule(evidence: Evidence[] | undefined, now: number): { count: number; needed: number; latest: Evidence } | null {
  const recent = recentEvidence(evidence, now);
  const latest = recent[recent.length - 1];
  if (!latest || !recent.some((item) => isStrong(item.k))) return null;
  const count = new Set(recent.map(evidenceIdentity)).size;
  const needed = recent.some((item) => item.d === 1 && isStrong(item.k)) ? MIN_EVIDENCE_DEFAULT : MIN_EVIDENCE_OTHER;
  return count >= needed ? { count, needed, latest } : null;
}

function pushEvidence(list: Evidence[] | undefined, item: Evidence): Evidence[] {
  const next = list ? list.slice(list.length >= EVIDENCE_SIZE ? list.length - EVIDENCE_SIZE + 1 : 0) : [];
  next.push(item);
  return next;
}

/**
 * Whether a test newly fails: failing now, and known to the check's memory as not failing the last
 * time (its previous default-branch outcome passed; without one, it did not fail when it last ran:
 * the guard's memory, `failedLastTime`). A test never seen, or one that has only failed so far (an
 * environment-dependent block that errors in every run), has never passed: its failure is no
 * co-failure and never makes a burst of the flaky tests beside it. A flagged test's failures are
 * expected, so it never newly fails. `previous` is its visible entry. Counted in the first pass (the
 * burst rule), asked again per test in the second (the co-failure it joins).
 */
function isNewlyFailing(outcome: Outcome, previous: FlakinessTestState | undefined): boolean {
  if (!isFail(outcome.status) || previous === undefined || previous.fl !== undefined) return false;
  return !failedLastTime(previous);
}

/** The guard's memory (judgeInfra): the previous default-branch outcome, or for a test without one, its last failure. */
function failedLastTime(entry: FlakinessTestState | undefined): boolean {
  if (entry === undefined) return false;
  return entry.n > 0 ? (entry.wl & 1) === 1 : entry.sx === 1;
}

/** Ones among the newest `count` bits of a window. */
function recentOnes(hi: number, lo: number, count: number): number {
  let total = 0;
  for (let i = 0; i < count; i++) total += bitAt(hi, lo, i);
  return total;
}

type Recurrence = { previousSq: number; overlap: number };

/**
 * The `sq` of the kept co-failures still within the last 50 default-branch runs (≤ 8): the only
 * `bq` values whose overlap with a burst `burstRecurrence` reads, so the only ones counted.
 */
function recentCoFailures(coFailures: number[], sq: number): Set<number> {
  const recent = new Set<number>();
  for (let i = 0; i + 1 < coFailures.length; i += 2) if (sq - (coFailures[i] as number) <= RECUR_RUNS) recent.add(coFailures[i] as number);
  return recent;
}

/**
 * Whether a burst recurs: the earlier co-failure (≥ 5 newly failing tests, default branch, within
 * the last 50 default-branch runs) that most of the burst's tests newly failed in last (`bq`),
 * when ≥ 5 of them did and they are at least half of the burst and of that co-failure. Per test,
 * the evidence also needs the test to have failed in at most half of its outcomes since then (a
 * group broken for most of the time in between is a breakage that came back, not a flaky group).
 * `overlap` counts the burst's newly failing tests by their `bq` (first pass), `newlyFailing` is
 * the burst's size.
 */
function burstRecurrence(overlap: ReadonlyMap<number, number>, newlyFailing: number, coFailures: number[], sq: number): Recurrence | null {
  let best: Recurrence | null = null;
  for (let i = 0; i + 1 < coFailures.length; i += 2) {
    const previousSq = coFailures[i] as number;
    const size = coFailures[i + 1] as number;
    const shared = overlap.get(previousSq) ?? 0;
    if (sq - previousSq > RECUR_RUNS || shared < BURST_MIN_NEWLY_FAILING) continue;
    if (shared < RECUR_MIN_SHARE * newlyFailing || shared < RECUR_MIN_SHARE * size) continue;
    if (!best || shared >= best.overlap) best = { previousSq, overlap: shared };
  }
  return best;
}

/** The kept co-failures with this one added (`cf`), and their commits (`cc`, aligned; 0 = unknown). */
function pushCoFailure(coFailures: number[], commits: number[], sq: number, size: number, commit: number): { cf: number[]; cc: number[] } {
  const cf: number[] = [];
  const cc: number[] = [];
  for (let i = 0; i + 1 < coFailures.length; i += 2)
    if (sq - (coFailures[i] as number) <= RECUR_RUNS) {
      cf.push(coFailures[i] as number, coFailures[i + 1] as number);
      cc.push(commits[i / 2] ?? 0);
    }
  cf.push(sq, size);
  cc.push(commit);
  return cf.length > 2 * CO_FAILURES_KEPT
    ? { cf: cf.slice(cf.length - 2 * CO_FAILURES_KEPT), cc: cc.slice(cc.length - CO_FAILURES_KEPT) }
    : { cf, cc };
}

/**
 * The `sq` of the kept recent co-failures of this run's commit (`commit` ≠ 0): a burst whose newly
 * failing tests newly failed last in them recurs on its commit (`recursOnCommit`).
 */
function coFailuresOfCommit(coFailures: number[], commits: number[], recent: ReadonlySet<number>, commit: number): Set<number> {
  const found = new Set<number>();
  if (commit === 0) return found;
  for (let i = 0; i + 1 < coFailures.length; i += 2)
    if (commits[i / 2] === commit && recent.has(coFailures[i] as number)) found.add(coFailures[i] as number);
  return found;
}

function isBurst(newlyFailing: number, baseline: number[]): boolean {
  if (baseline.length < BURST_BASELINE_MIN_RUNS || newlyFailing < BURST_MIN_NEWLY_FAILING) return false;
  return newlyFailing > BURST_FACTOR * Math.max(1, nearestRankPercentile(baseline, 0.9));
}

// ---------------------------------------------------------------------------------------------
// Per-test update

/** What the run contributes to every test: computed once per run. */
type RunContext = {
  run: RunHeader;
  now: number;
  shaHash: number | null;
  sha: string | null;
  branch: string | null;
  onDefault: 0 | 1;
  burst: boolean;
  /** Default-branch run counter after this run. */
  sq: number;
  /**
   * Whether this run is a default-branch co-failure (≥ 5 newly failing tests): its newly failing
   * tests (`isNewlyFailing`, asked per test) are its members.
   */
  coFailure: boolean;
  /** When this burst recurs: the earlier co-failure's `sq`. */
  recurrence: Recurrence | null;
  /**
   * When this burst recurs on its commit (SAME_COMMIT_RECUR_MIN_TESTS): each of its newly failing
   * tests that passed on the commit gets `same_commit_bursts` evidence.
   */
  recursOnCommit: boolean;
};

type Flag = {
  key: string;
  outcome: Outcome;
  entry: FlakinessTestState;
  rule: Rule;
  history: WindowStats | null;
  evidence: { count: number; needed: number } | null;
};

/** A test's state while one run is applied to it (updateTest): its entry's fields, the optional ones undefined when absent. */
type Draft = {
  wh: number;
  wl: number;
  n: number;
  cp: number;
  ls: number;
  ff: number | undefined;
  lf: number | undefined;
  /** The same-commit LRU (the entry's `c`). */
  lru: number[] | undefined;
  /** Recent evidence (the entry's `e`). */
  evidence: Evidence[] | undefined;
  fl: number | undefined;
  ft: number | undefined;
  fr: Rule | undefined;
  bq: number | undefined;
};

/** What a test's outcome in this run is: a failure, a pass, and a pass on retry with its failed attempts. */
type OutcomeKinds = { failed: boolean; passed: boolean; failedAttempts: number; passedOnRetry: boolean };

function outcomeKinds(outcome: Outcome): OutcomeKinds {
  const failed = isFail(outcome.status);
  const passed = outcome.status === "passed";
  let failedAttempts = 0;
  for (const attempt of outcome.attempts) if (isFail(attempt)) failedAttempts++;
  return { failed, passed, failedAttempts, passedOnRetry: passed && failedAttempts > 0 };
}

function updateTest(
  previous: FlakinessTestState | undefined,
  outcome: Outcome,
  ctx: RunContext,
): { entry: FlakinessTestState; flag: Flag | null } {
  const { run } = ctx;
  const kinds = outcomeKinds(outcome);
  const draft = startDraft(previous, ctx);

  // 0. Recurrence (read before this run enters the window): the test newly failed in the earlier
  // co-failure this burst repeats, and failed in at most half of its outcomes since then.
  const inCoFailure = ctx.coFailure && isNewlyFailing(outcome, previous);
  const recurred = recurrenceOf(previous, draft.bq, ctx, inCoFailure);
  if (inCoFailure) draft.bq = ctx.sq;

  if (kinds.failed || kinds.passedOnRetry) {
    draft.lf = run.number;
    if (draft.ff === undefined) draft.ff = run.number;
  }

  // 1. The default-branch window and the recovery counter.
  if (ctx.onDefault === 1 && (kinds.passed || kinds.failed)) {
    draft.wh = shiftHi(draft.wh, draft.wl);
    draft.wl = shiftLo(draft.wl, kinds.failed ? 1 : 0);
    draft.n = Math.min(WINDOW, draft.n + 1);
    draft.cp = kinds.failed || kinds.passedOnRetry ? 0 : Math.min(draft.cp + 1, COUNTER_CAP);
  }

  // 2. Same-commit LRU (any branch).
  if (ctx.shaHash !== null && (kinds.passed || kinds.failed))
    countSameCommit(draft, kinds.passed, ctx, ctx.shaHash, ctx.recursOnCommit && inCoFailure);
  addRetryAndRecurrenceEvidence(draft, kinds, recurred, ctx);
  unflagWhenClean(draft, ctx.now);
  // 5. Flag rules, for a test not flagged.
  const flag = draft.fl === undefined ? applyFlagRules(draft, outcome, ctx) : null;
  const entry = entryOf(draft, kinds.failed);
  return { entry, flag: flag ? { ...flag, entry } : null };
}

/** The test's previous entry (or a new test's zeros) to apply the run to; expired evidence and an old `bq` dropped. */
function startDraft(previous: FlakinessTestState | undefined, ctx: RunContext): Draft {
  const { run, now } = ctx;
  return {
    wh: previous?.wh ?? 0,
    wl: previous?.wl ?? 0,
    n: previous?.n ?? 0,
    cp: previous?.cp ?? 0,
    ff: previous?.ff,
    lf: previous?.lf,
    lru: previous?.c,
    // Expired evidence can neither flag nor hold back an un-flag: dropping it keeps entries small.
    evidence:
      previous?.e && previous.e.length > 0 && now - (previous.e[0] as Evidence).t >= EVIDENCE_TTL_MS
        ? recentEvidence(previous.e, now)
        : previous?.e,
    fl: previous?.fl,
    ft: previous?.ft,
    fr: previous?.fr,
    ls: previous ? Math.max(previous.ls, run.number) : run.number,
    bq: previous?.bq !== undefined && ctx.sq - previous.bq <= RECUR_RUNS ? previous.bq : undefined,
  };
}

/** When this burst repeats the earlier co-failure the test newly failed in (`bq`), and the test failed in at most half its outcomes since: the evidence's counts. */
function recurrenceOf(
  previous: FlakinessTestState | undefined,
  bq: number | undefined,
  ctx: RunContext,
  inCoFailure: boolean,
): { p: number; f: number } | null {
  if (ctx.recurrence === null || !previous || bq !== ctx.recurrence.previousSq || !inCoFailure) return null;
  const since = Math.min(previous.n, ctx.sq - bq);
  const fails = recentOnes(previous.wh, previous.wl, since);
  return 2 * fails <= since ? { p: since - fails, f: fails + 1 } : null;
}

/**
 * The same-commit LRU (any branch). A pass on retry counts as a pass here: its retry is its own evidence.
 * A burst's failure is only marked (flag 4) and counted (bits 4 and up): with a pass of the same
 * commit it is weak evidence, until the commit has failed the test in ≥ 3 runs, bursts included,
 * or the burst recurs on its commit (`inRecurringBurst`): then it is strong (`same_commit_bursts`),
 * whatever failed beside it (real rerun data: a group of which each failing re-run fails a
 * different few is a burst each time, and never the same one).
 */
function countSameCommit(draft: Draft, passed: boolean, ctx: RunContext, shaHash: number, inRecurringBurst: boolean): void {
  const lru = draft.lru;
  const next: number[] = [];
  let p = 0;
  let f = 0;
  let flags = 0;
  if (lru) {
    for (let i = 0; i + 3 < lru.length; i += 4) {
      if (lru[i] === shaHash) {
        p = lru[i + 1] ?? 0;
        f = lru[i + 2] ?? 0;
        flags = lru[i + 3] ?? 0;
      } else {
        next.push(lru[i] ?? 0, lru[i + 1] ?? 0, lru[i + 2] ?? 0, lru[i + 3] ?? 0);
      }
    }
  }
  let burstFailures = flags >>> BURST_FAILURES_SHIFT;
  if (passed) p = Math.min(p + 1, COUNTER_CAP);
  else if (ctx.burst) {
    burstFailures = Math.min(burstFailures + 1, BURST_FAILURES_CAP);
    flags = (flags & ((1 << BURST_FAILURES_SHIFT) - 1)) | 4 | (burstFailures << BURST_FAILURES_SHIFT);
  } else f = Math.min(f + 1, COUNTER_CAP);
  flags |= ctx.onDefault;
  if (p > 0 && (f > 0 || burstFailures >= SAME_COMMIT_MIN_FAILED_RUNS || inRecurringBurst) && (flags & 2) === 0) {
    flags |= 2;
    draft.evidence = pushEvidence(draft.evidence, {
      k: f > 0 ? "same_commit" : "same_commit_bursts",
      c: ctx.sha,
      b: ctx.branch,
      d: (flags & 1) as 0 | 1,
      r: ctx.run.number,
      t: ctx.now,
      p,
      f: f + burstFailures,
    });
  } else if (p > 0 && (flags & 4) !== 0 && (flags & (2 | 8)) === 0) {
    flags |= 8;
    draft.evidence = pushEvidence(draft.evidence, {
      k: "burst_same_commit",
      c: ctx.sha,
      b: ctx.branch,
      d: (flags & 1) as 0 | 1,
      r: ctx.run.number,
      t: ctx.now,
      p,
      f: 1,
    });
  }
  next.push(shaHash, p, f, flags);
  draft.lru = next.length > 4 * LRU_SIZE ? next.slice(next.length - 4 * LRU_SIZE) : next;
}

/** 3. A pass on retry (any branch; inside a burst it is weak evidence), and 3b. a recurring burst (default branch): evidence. */
function addRetryAndRecurrenceEvidence(
  draft: Draft,
  kinds: OutcomeKinds,
  recurred: { p: number; f: number } | null,
  ctx: RunContext,
): void {
  const { run, now } = ctx;
  if (kinds.passedOnRetry) {
    draft.evidence = pushEvidence(draft.evidence, {
      k: ctx.burst ? "burst_same_commit" : "passed_on_retry",
      c: ctx.sha,
      b: ctx.branch,
      d: ctx.onDefault,
      r: run.number,
      t: now,
      p: 1,
      f: kinds.failedAttempts,
    });
  }
  if (recurred) {
    draft.evidence = pushEvidence(draft.evidence, {
      k: "burst_recurred",
      c: ctx.sha,
      b: ctx.branch,
      d: ctx.onDefault,
      r: run.number,
      t: now,
      p: recurred.p,
      f: recurred.f,
    });
  }
}

/** 4. Un-flag: ≥ 50 default-branch passes in a row since the flag and the last failure, and 14 days since the flag and the last evidence. */
function unflagWhenClean(draft: Draft, now: number): void {
  if (draft.fl === undefined || draft.cp < UNFLAG_CLEAN_RUNS) return;
  let lastSignal = draft.ft ?? 0;
  if (draft.evidence) for (const item of draft.evidence) lastSignal = Math.max(lastSignal, item.t);
  if (now - lastSignal >= EVIDENCE_TTL_MS) {
    draft.fl = undefined;
    draft.ft = undefined;
    draft.fr = undefined;
    draft.ff = undefined;
  }
}

/** 5. The flag rules (evidence, history) for a test not flagged: the flag, else null; a clean test's episode ends. */
function applyFlagRules(draft: Draft, outcome: Outcome, ctx: RunContext): Omit<Flag, "entry"> | null {
  const { run, now } = ctx;
  const byEvidence = draft.evidence ? evidenceRule(draft.evidence, now) : null;
  const byHistory = ctx.onDefault === 1 ? historyRuleHolds(draft.wh, draft.wl, draft.n) : null;
  if (byEvidence || byHistory) {
    const rule: Rule = byEvidence ? byEvidence.latest.k : "history_flips";
    draft.cp = 0;
    draft.fl = run.number;
    draft.ft = now;
    draft.fr = rule;
    return {
      key: outcome.test.key,
      outcome,
      rule,
      history: byHistory,
      evidence: byEvidence ? { count: byEvidence.count, needed: byEvidence.needed } : null,
    };
  }
  if (draft.ff !== undefined && draft.n > 0 && draft.wh === 0 && draft.wl === 0 && recentEvidence(draft.evidence, now).length === 0) {
    // Clean again (no failure in the window, no recent evidence): the next failure starts a new episode.
    draft.ff = undefined;
  }
  return null;
}

/** The entry stored for the test: a fixed key order; empty optional keys are left out. */
function entryOf(draft: Draft, failed: boolean): FlakinessTestState {
  const { wh, wl, n, ls, cp, ff, lf, lru, evidence, fl, ft, fr, bq } = draft;
  const entry: FlakinessTestState = { wh, wl, n, ls, cp };
  if (ff !== undefined) entry.ff = ff;
  if (lf !== undefined) entry.lf = lf;
  if (lru !== undefined && lru.length > 0) entry.c = lru;
  if (evidence !== undefined && evidence.length > 0) entry.e = evidence;
  if (fl !== undefined) {
    entry.fl = fl;
    if (ft !== undefined) entry.ft = ft;
    if (fr !== undefined) entry.fr = fr;
  }
  if (n === 0 && failed) entry.sx = 1;
  if (bq !== undefined) entry.bq = bq;
  return entry;
}

// ---------------------------------------------------------------------------------------------
// Events

function flagMetadata(flag: Flag, run: RunHeader, now: number, infraExcluded: number, burstExcluded: number): Record<string, unknown> {
  const { entry, outcome } = flag;
  const stats = flag.history ?? windowStats(entry.wh, entry.wl, entry.n);
  const ci = wilson95(stats.failures, stats.n);
  const evidence = recentEvidence(entry.e, now)
    .reverse()
    .map((item) => ({
      kind: item.k,
      commit_sha: cap(item.c, MAX_STRING),
      branch: cap(item.b, MAX_STRING),
      run_number: item.r,
      created_at: new Date(item.t).toISOString(),
      on_default_branch: item.d === 1,
      passed: item.p,
      failed: item.f,
    }));
  const byHistory = flag.rule === "history_flips";
  return {
    subject: "test",
    test_key: cap(flag.key, MAX_STRING),
    suite: cap(outcome.test.suite, MAX_STRING),
    classname: cap(outcome.test.classname, MAX_STRING),
    name: cap(outcome.test.name, MAX_STRING),
    rule: flag.rule,
    run_number: run.number,
    branch: cap(run.branch, MAX_STRING),
    commit_sha: cap(run.commitSha, MAX_STRING),
    branch_scope: byHistory ? "default branch" : "any branch",
    window_runs: stats.n,
    failures: stats.failures,
    passes: stats.passes,
    failure_rate: stats.n > 0 ? round(stats.failures / stats.n, 4) : null,
    failure_rate_ci95_low: ci ? round(ci.low, 4) : null,
    failure_rate_ci95_high: ci ? round(ci.high, 4) : null,
    flips: stats.flips,
    flip_rate: stats.n > 1 ? round(stats.flips / (stats.n - 1), 4) : null,
    runs_test_z: round(stats.z, 3),
    decayed_flip_score: round(decayedFlipScore(entry.wh, entry.wl, entry.n), 4),
    evidence,
    first_failure_run_number: entry.ff ?? null,
    last_failure_run_number: entry.lf ?? null,
    baseline: `last ${WINDOW} default-branch runs containing the test, infra-suspect runs excluded; same-commit and retry evidence from any branch within 14 days; a co-failure burst's failures are evidence when the same tests burst together again within ${RECUR_RUNS} default-branch runs (burst_recurred) or when ${SAME_COMMIT_MIN_FAILED_RUNS} runs of one commit failed the test and another passed it, or the burst's tests newly failed in earlier bursts of its commit (same_commit_bursts), and weak evidence when the commit passes (burst_same_commit, never enough on its own)`,
    infra_excluded_runs_in_window: infraExcluded,
    burst_runs_in_window: burstExcluded,
    thresholds: {
      min_runs: MIN_RUNS,
      min_failures: MIN_FAILURES,
      min_passes: MIN_PASSES,
      min_flips: MIN_FLIPS,
      z_min: Z_MIN,
      min_evidence: MIN_EVIDENCE_DEFAULT,
      min_evidence_non_default: MIN_EVIDENCE_OTHER,
      evidence_window_days: 14,
      burst_min_newly_failing: BURST_MIN_NEWLY_FAILING,
      burst_factor_over_p90: BURST_FACTOR,
      recurrence_window_runs: RECUR_RUNS,
      recurrence_min_tests: BURST_MIN_NEWLY_FAILING,
      recurrence_min_share: RECUR_MIN_SHARE,
      same_commit_min_failed_runs: SAME_COMMIT_MIN_FAILED_RUNS,
      same_commit_recurrence_min_tests: SAME_COMMIT_RECUR_MIN_TESTS,
    },
    statistic: byHistory ? "runs_test_z" : "evidence_count",
    observed: byHistory ? round(stats.z, 3) : (flag.evidence?.count ?? 0),
    threshold: byHistory ? Z_MIN : (flag.evidence?.needed ?? MIN_EVIDENCE_DEFAULT),
    detector_version: FLAKINESS_DETECTOR_VERSION,
  };
}

// ---------------------------------------------------------------------------------------------
// The check

function initialState(): FlakinessState {
  return { v: 2, infra: { wh: 0, wl: 0, n: 0 }, burst: { wh: 0, wl: 0, n: 0 }, nf: [], pr: 0, sq: 0, cf: [], cc: [] };
}

/** What the decision needs of the run's tests, counted over its chunks in the first pass. */
type Tally = {
  /** The guard's persistent failures (countPersistent). */
  persistent: PersistentCount;
  /** Newly failing tests (`isNewlyFailing`), as if the run were not suspect. */
  newlyFailing: number;
  /** Newly failing tests by their `bq`, for the kept co-failures only (≤ 8 keys): the burst's overlap with each. */
  overlap: Map<number, number>;
  /** Newly failing tests whose `bq` is a kept recent co-failure of this run's commit. */
  ofCommit: number;
};

/** The project-level decision, taken between the passes. */
type Decision = {
  state: FlakinessState;
  suspect: boolean;
  /** What the run gives every test's update; null when the run updates no test (suspect). */
  ctx: RunContext | null;
  infraExcluded: number;
  burstExcluded: number;
};

/**
 * The run's events as the second pass builds them, in key order: the first 50 flags' metadata,
 * then only the count and the first 50 keys of the flags past them (`more_flagged_*`).
 */
type FlagEvents = { events: CheckEvent[]; moreCount: number; moreKeys: string[] };

function start(input: FlakinessState, run: RunHeader): CheckPass<FlakinessState, FlakinessTestState> {
  const state = isValidState(input) ? input : initialState();
  const now = timeOf(run);
  const coFailures = Array.isArray(state.cf) ? state.cf : [];
  // The default-branch run counter after this run: the clock `bq` and `cf` are read against.
  const sq = (typeof state.sq === "number" ? state.sq : 0) + (run.onDefaultBranch ? 1 : 0);
  // Only a default-branch burst can recur, and only with a co-failure still kept and recent.
  const recurrable = run.onDefaultBranch ? recentCoFailures(coFailures, sq) : new Set<number>();
  const commitHash = run.commitSha !== null && run.commitSha !== "" ? hash53(run.commitSha) : 0;
  const ofCommit = coFailuresOfCommit(coFailures, Array.isArray(state.cc) ? state.cc : [], recurrable, commitHash);
  const known = (stored: TestEntries<FlakinessTestState>, key: string) => visibleEntry(stored, state.pr, key);
  const tally: Tally = { persistent: { failed: 0, errored: 0 }, newlyFailing: 0, overlap: new Map(), ofCommit: 0 };
  let decision: Decision | null = null;
  const flagged: FlagEvents = { events: [], moreCount: 0, moreKeys: [] };
  return {
    observe(tests, stored) {
      // The infrastructure guard judges the tests that newly fail (judgeInfra): a test whose previous
      // default-branch outcome failed is persistent, so environment-dependent tests that never pass do
      // not make every run look like an outage.
      countPersistent(tally.persistent, tests, (key) => failedLastTime(known(stored, key)));
      for (const outcome of combine(tests)) {
        const previous = known(stored, outcome.test.key);
        if (!isNewlyFailing(outcome, previous)) continue;
        tally.newlyFailing++;
        const bq = previous?.bq;
        if (bq !== undefined && recurrable.has(bq)) tally.overlap.set(bq, (tally.overlap.get(bq) ?? 0) + 1);
        if (bq !== undefined && ofCommit.has(bq)) tally.ofCommit++;
      }
    },
    decide() {
      decision = decide(state, run, tally, now, sq, commitHash);
    },
    write(tests, stored) {
      const changed = new Map<string, FlakinessTestState>();
      if (decision === null || tests.length === 0) return changed;
      if (decision.ctx !== null) {
        for (const outcome of combine(tests)) {
          const key = outcome.test.key;
          const { entry, flag } = updateTest(known(stored, key), outcome, decision.ctx);
          changed.set(key, entry);
          if (flag) addFlag(flagged, flag, run, now, decision);
        }
      } else if (decision.suspect) {
        // A suspect run leaves per-test state alone, except that a failing test with no default-branch
        // outcome yet is remembered as failing (the guard's memory rule, recordsOutcome): a project
        // whose first run fails half its tests judges its second run on the tests that newly fail.
        for (const outcome of combine(tests)) {
          if (!isFail(outcome.status)) continue;
          const key = outcome.test.key;
          const previous = known(stored, key);
          if (previous && (previous.n > 0 || previous.sx === 1)) continue;
          changed.set(
            key,
            previous ? { ...previous, ls: Math.max(previous.ls, run.number), sx: 1 } : { wh: 0, wl: 0, n: 0, ls: run.number, cp: 0, sx: 1 },
          );
        }
      }
      return changed;
    },
    finish() {
      const { events, moreCount, moreKeys } = flagged;
      if (moreCount > 0) {
        const last = events[events.length - 1] as CheckEvent;
        last.metadata = { ...last.metadata, more_flagged_count: moreCount, more_flagged_test_keys: moreKeys };
      }
      return { state: decision?.state ?? state, events };
    },
  };
}

/**
 * Flags come in key order (chunks in ascending key order, each combined in key order). At most 50
 * events per run (the orchestrator's cap too): the 50th carries `more_flagged_count` and up to 50
 * keys of the tests not reported individually (finish). Those tests are flagged all the same and
 * will not be reported again.
 */
function addFlag(flagged: FlagEvents, flag: Flag, run: RunHeader, now: number, decision: Decision): void {
  if (flagged.events.length < MAX_EVENTS_PER_RUN) {
    flagged.events.push({ metadata: flagMetadata(flag, run, now, decision.infraExcluded, decision.burstExcluded) });
    return;
  }
  flagged.moreCount++;
  if (flagged.moreKeys.length < MAX_EVENTS_PER_RUN) flagged.moreKeys.push(cap(flag.key, MAX_STRING) as string);
}

function decide(state: FlakinessState, run: RunHeader, tally: Tally, now: number, sq: number, commitHash: number): Decision {
  const suspect = judgeInfraCounts(run.counts, tally.persistent).suspect;
  const baseline = Array.isArray(state.nf) ? state.nf : [];
  const newlyFailing = suspect ? 0 : tally.newlyFailing;
  const burst = !suspect && isBurst(newlyFailing, baseline);

  let infra = state.infra;
  let burstWindow = state.burst ?? { wh: 0, wl: 0, n: 0 };
  let nf = baseline;
  let cf = Array.isArray(state.cf) ? state.cf : [];
  let cc = Array.isArray(state.cc) ? state.cc : [];
  let coFailure = false;
  let recurrence: Recurrence | null = null;
  let recursOnCommit = false;
  if (run.onDefaultBranch) {
    infra = { wh: shiftHi(infra.wh, infra.wl), wl: shiftLo(infra.wl, suspect ? 1 : 0), n: Math.min(WINDOW, infra.n + 1) };
    burstWindow = {
      wh: shiftHi(burstWindow.wh, burstWindow.wl),
      wl: shiftLo(burstWindow.wl, burst ? 1 : 0),
      n: Math.min(WINDOW, burstWindow.n + 1),
    };
    if (!suspect) nf = [...baseline.slice(baseline.length >= WINDOW ? baseline.length - WINDOW + 1 : 0), newlyFailing];
    // Co-failures (≥ 5 newly failing tests, burst or not) are remembered for 50 runs; a burst that
    // repeats one is evidence for the tests they share.
    if (newlyFailing >= BURST_MIN_NEWLY_FAILING) {
      if (burst) {
        recurrence = burstRecurrence(tally.overlap, newlyFailing, cf, sq);
        // The same group bursting again (above) is evidence of its own; else a group whose bursts on this commit differ.
        recursOnCommit =
          recurrence === null && tally.ofCommit >= SAME_COMMIT_RECUR_MIN_TESTS && tally.ofCommit >= RECUR_MIN_SHARE * newlyFailing;
      }
      coFailure = true;
      ({ cf, cc } = pushCoFailure(cf, cc, sq, newlyFailing, commitHash));
    }
  }

  // Every 50 runs, a sweep: from then on, entries of tests not seen for 200 runs count as absent.
  let pr = state.pr;
  if (run.number - pr >= PRUNE_EVERY_RUNS || run.number < pr) pr = run.number;

  let ctx: RunContext | null = null;
  if (!suspect) {
    const sha = run.commitSha !== null && run.commitSha !== "" ? run.commitSha : null;
    ctx = {
      run,
      now,
      shaHash: sha === null ? null : hash53(sha),
      sha: cap(sha, MAX_STORED_STRING),
      branch: cap(run.branch, MAX_STORED_STRING),
      onDefault: run.onDefaultBranch ? 1 : 0,
      burst,
      sq,
      coFailure,
      recurrence,
      recursOnCommit,
    };
  }
  return {
    state: { v: 2, infra, burst: burstWindow, nf, pr, sq, cf, cc },
    suspect,
    ctx,
    infraExcluded: ones(infra.wh, infra.wl),
    burstExcluded: ones(burstWindow.wh, burstWindow.wl),
  };
}

function fromLegacy(
  legacy: unknown,
  rekey: (oldKey: string) => string | null,
): { state: FlakinessState; tests: Map<string, FlakinessTestState> } | null {
  if (!isLegacyState(legacy)) return null;
  const { v: _v, tests: entries, ...project } = legacy;
  const tests = new Map<string, FlakinessTestState>();
  for (const [oldKey, entry] of Object.entries(entries)) {
    const key = rekey(oldKey);
    // Two old keys of one test (the same test in two suites): the entry seen last wins.
    if (key !== null && (tests.get(key)?.ls ?? -1) < entry.ls) tests.set(key, entry);
  }
  return { state: { v: 2, ...project }, tests };
}

export const flakinessCheck: Check<FlakinessState, FlakinessTestState> = {
  version: FLAKINESS_DETECTOR_VERSION,
  initialState,
  start,
  fromLegacy,
};

/**
 * The tests this run flagged, from the entries it wrote (`fl` is the flag's run number), with the
 * rule: every one of them, including those past the 50 events of a run.
 */
export function flaggedInRun(written: ReadonlyMap<string, FlakinessTestState>, runNumber: number): { key: string; rule: string }[] {
  const flagged: { key: string; rule: string }[] = [];
  for (const [key, entry] of written) if (entry.fl === runNumber && entry.fr !== undefined) flagged.push({ key, rule: entry.fr });
  return flagged.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Keys of the tests currently flagged, from entries held in memory (for reporting and tests). */
export function flaggedTestKeys(state: { tests: Record<string, FlakinessTestState> }): string[] {
  return Object.keys(state.tests)
    .filter((key) => state.tests[key]?.fl !== undefined)
    .sort();
}
