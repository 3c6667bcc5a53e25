/**
 * A processed run's verdicts against its base (docs/verdicts.md), read with the upload token:
 * `GET /uploads/v1/test_runs/{n}/comparison` (the base, counts per verdict, fixed count), then one
 * page of failures per verdict that has any (`…/comparison/failures?verdict=`), in the order a
 * developer reads them: `new` first. What `--wait` prints, the step summary and the pull request
 * comment show, and what `--fail-on new` decides from.
 */
import { VERDICTS_BY_CONCERN, type Verdict } from "../lib/vocabulary";
import { type HttpResponse, type RetryOptions, describeHttpError, requestWithRetry } from "./http-retry";
import type { Output } from "./output";
import { testLabel } from "./results";

/** The verdicts in the order they are shown: what the change broke first. */
export const VERDICT_ORDER: readonly Verdict[] = VERDICTS_BY_CONCERN;

/** Failures read per verdict (one page); the rest are counted. */
const MAX_LISTED_PER_VERDICT = 100;

export const VERDICT_TITLES: Record<Verdict, string> = {
  new: "New failures",
  failing_on_base: "Failing on the base too",
  flaky: "Flaky",
  quarantined: "Quarantined",
  infrastructure: "Infrastructure (mass failure)",
};

export type VerdictFailure = {
  classname: string | null;
  name: string;
  file: string | null;
  status: string;
  reason: string;
  /** The test's page in the web app. */
  url: string | null;
};

export type RunComparison = {
  baseChoice: string;
  base: { number: number; branch: string | null; commitSha: string | null; url: string | null } | null;
  awaitedBaseCommit: string | null;
  infrastructureReason: string | null;
  counts: Record<Verdict, number>;
  fixedCount: number;
};

export type RunVerdicts = {
  comparison: RunComparison;
  /** Per verdict, its first failures (at most MAX_LISTED_PER_VERDICT; `counts` has them all). */
  failures: Record<Verdict, VerdictFailure[]>;
};

export type VerdictsOutcome = { verdicts: RunVerdicts; problem: null } | { verdicts: null; problem: string };

const str = (value: unknown): string | null => (typeof value === "string" ? value : null);
const int = (value: unknown): number | null => (typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : null);

/** The service's comparison, or null when the answer is not one. */
function comparisonOf(body: unknown): RunComparison | null {
  const b = body as Record<string, unknown> | null;
  const rawCounts = b?.verdict_counts as Record<string, unknown> | null | undefined;
  if (typeof b !== "object" || b === null || typeof b.base_choice !== "string" || typeof rawCounts !== "object" || rawCounts === null) {
    return null;
  }
  const counts = {} as Record<Verdict, number>;
  for (const verdict of VERDICT_ORDER) {
    const n = int(rawCounts[verdict]);
    if (n === null) return null;
    counts[verdict] = n;
  }
  const fixedCount = int(b.fixed_count);
  if (fixedCount === null) return null;
  const base = b.base as Record<string, unknown> | null;
  return {
    baseChoice: b.base_choice,
    base:
      typeof base === "object" && base !== null && int(base.number) !== null
        ? { number: base.number as number, branch: str(base.branch), commitSha: str(base.commit_sha), url: str(base.url) }
        : null,
    awaitedBaseCommit: str(b.awaited_base_commit),
    infrastructureReason: str(b.infrastructure_reason),
    counts,
    fixedCount,
  };
}

function failuresOf(body: unknown): VerdictFailure[] | null {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return null;
  const failures: VerdictFailure[] = [];
  for (const item of data as Record<string, unknown>[]) {
    if (typeof item !== "object" || item === null || typeof item.name !== "string" || typeof item.reason !== "string") return null;
    failures.push({
      classname: str(item.classname),
      name: item.name,
      file: str(item.file),
      status: str(item.status) ?? "failed",
      reason: item.reason,
      url: str(item.url),
    });
  }
  return failures;
}

/** "404 not_found: …", "connect ECONNREFUSED …". */
function describeResult(result: Awaited<ReturnType<typeof requestWithRetry>>): string {
  return result.kind === "network-error" ? `${result.message} (after ${result.attempts} attempt(s))` : describeHttpError(result);
}

/**
 * The run's comparison and its failures per verdict.
 * @param runUrl `{base}/uploads/v1/test_runs/{number}`
 */
export async function readRunVerdicts(
  runUrl: string,
  request: { headers: Record<string, string>; retryOptions: RetryOptions },
): Promise<VerdictsOutcome> {
  const get = (url: string) => requestWithRetry(url, { method: "GET", headers: request.headers }, request.retryOptions);
  const answer = await get(`${runUrl}/comparison`);
  if (answer.kind !== "response" || answer.status !== 200) return { verdicts: null, problem: describeResult(answer) };
  const comparison = comparisonOf((answer as HttpResponse).json);
  if (comparison === null) return { verdicts: null, problem: "the service's answer is not a comparison" };
  const failures = { new: [], failing_on_base: [], flaky: [], quarantined: [], infrastructure: [] } as Record<Verdict, VerdictFailure[]>;
  for (const verdict of VERDICT_ORDER) {
    if (comparison.counts[verdict] === 0) continue;
    const page = await get(`${runUrl}/comparison/failures?verdict=${verdict}&limit=${MAX_LISTED_PER_VERDICT}`);
    if (page.kind !== "response" || page.status !== 200) return { verdicts: null, problem: describeResult(page) };
    const items = failuresOf((page as HttpResponse).json);
    if (items === null) return { verdicts: null, problem: "the service's answer is not a list of failures" };
    failures[verdict] = items;
  }
  return { verdicts: { comparison, failures }, problem: null };
}

const shortSha = (sha: string | null) => (sha ? sha.slice(0, 7) : null);

/** What the run was compared with, in a few words (plain text; callers escape it where needed). */
export function describeBase(comparison: RunComparison): string {
  const { base } = comparison;
  if (base === null) return "no base run (every failure is new unless known otherwise)";
  const where = [base.branch, shortSha(base.commitSha)].filter((part) => part !== null).join(", ");
  const how: Record<string, string> = {
    base_commit: "the pull request's base commit",
    latest_default_before: "the latest default-branch run before it",
    previous_default: "the previous default-branch run",
  };
  const awaited = comparison.awaitedBaseCommit
    ? `; base commit ${shortSha(comparison.awaitedBaseCommit)} has no processed run yet, so this may be compared again`
    : "";
  return `run #${base.number}${where ? ` (${where})` : ""}, ${how[comparison.baseChoice] ?? comparison.baseChoice}${awaited}`;
}

/** "2 new, 1 failing on the base, 0 flaky, 0 quarantined, 0 infrastructure; 3 fixed". */
function describeCounts(comparison: RunComparison): string {
  const words: Record<Verdict, string> = {
    new: "new",
    failing_on_base: "failing on the base",
    flaky: "flaky",
    quarantined: "quarantined",
    infrastructure: "infrastructure",
  };
  const counts = VERDICT_ORDER.map((v) => `${comparison.counts[v]} ${words[v]}`).join(", ");
  return `${counts}; ${comparison.fixedCount} fixed`;
}

/** --wait's report of a run's verdicts (stdout): the base and counts, each failure with its reason, new first. */
export function printVerdicts(out: Output, number: string, verdicts: RunVerdicts): void {
  const { comparison } = verdicts;
  out.result(`Verdicts of test run #${number} against ${describeBase(comparison)}: ${describeCounts(comparison)}`);
  for (const verdict of VERDICT_ORDER) {
    const listed = verdicts.failures[verdict];
    for (const failure of listed) out.result(`  ${verdict.padEnd(16)} ${testLabel(failure)} (${failure.status}): ${failure.reason}`);
    const rest = comparison.counts[verdict] - listed.length;
    if (rest > 0) out.result(`  ${verdict.padEnd(16)} … and ${rest} more`);
  }
}

/** The merge gate's decision over the runs of one invocation. */
export type GateDecision =
  | { kind: "fail"; reason: string }
  | { kind: "pass"; reason: string }
  /** The verdicts of some run are unknown: the default exit code stands. */
  | { kind: "unknown"; reason: string };

/**
 * --fail-on new: fails when a run read has a `new` failure or is a mass failure (infrastructure:
 * re-run it, never merge it); passes when every run's verdicts were read and none does; otherwise
 * (a run not uploaded, not processed in time, or its comparison unreadable) cannot decide.
 */
export function judgeGate(runs: { number: number | string | null; verdicts: RunVerdicts | null }[], expectedRuns: number): GateDecision {
  const failing: string[] = [];
  let known = 0;
  for (const run of runs) {
    if (run.verdicts === null) continue;
    known += 1;
    const { counts, infrastructureReason } = run.verdicts.comparison;
    if (counts.infrastructure > 0 || infrastructureReason !== null) {
      failing.push(
        `test run #${run.number} is a mass failure (${infrastructureReason ?? `${counts.infrastructure} infrastructure`}): re-run it`,
      );
    } else if (counts.new > 0) {
      failing.push(`test run #${run.number} has ${counts.new} new failure(s)`);
    }
  }
  if (failing.length > 0) return { kind: "fail", reason: failing.join("; ") };
  if (known === expectedRuns && runs.length === expectedRuns) {
    const knownFailures = runs.reduce((sum, run) => {
      const counts = run.verdicts!.comparison.counts;
      return sum + counts.failing_on_base + counts.flaky + counts.quarantined;
    }, 0);
    return { kind: "pass", reason: knownFailures > 0 ? `no new failure (${knownFailures} known)` : "no new failure" };
  }
  return { kind: "unknown", reason: `the verdicts of ${expectedRuns - known} of ${expectedRuns} run(s) could not be read` };
}

/** The runs' counts per verdict and fixed, added up (runs whose verdicts were read). */
export function totalCounts(runs: { verdicts: RunVerdicts | null }[]): { counts: Record<Verdict, number>; fixed: number } {
  const counts = { new: 0, failing_on_base: 0, flaky: 0, quarantined: 0, infrastructure: 0 } as Record<Verdict, number>;
  let fixed = 0;
  for (const run of runs) {
    if (run.verdicts === null) continue;
    for (const verdict of VERDICT_ORDER) counts[verdict] += run.verdicts.comparison.counts[verdict];
    fixed += run.verdicts.comparison.fixedCount;
  }
  return { counts, fixed };
}

/** The gate's decision in words: "fails the build: test run #12 has 2 new failure(s)". */
export function describeGate(gate: GateDecision): string {
  if (gate.kind === "fail") return `fails the build: ${gate.reason}`;
  if (gate.kind === "pass") return `passes: ${gate.reason}`;
  return `cannot decide (${gate.reason}): the exit code is the one without --fail-on`;
}
