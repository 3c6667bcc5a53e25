/**
 * Tests as resources, kept by run processing: each processed run updates the rows of its own
 * tests (O(the run's cases), never a scan of history), inside the run's transaction. The rules
 * are in docs/tests.md; the pure part (`advanceRun`, `advanceTest`) is separate from the
 * statements that read and write the rows.
 */
import { inFlight } from "../../lib/in-flight";
import { type SQL, sql } from "drizzle-orm";
import { projectCodeowners, projects, testCases, testHealthTransitions, testSuites, tests } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import type { Database } from "../../db/types";
import type { ReportCase } from "../../ingest/report";
import type { CaseStatus, TestHealth } from "../../lib/vocabulary";
import { isDefaultBranch } from "./default-branch";
import { testIdentityKey } from "../../lib/test-identity";
import { OwnersMatcher, parseCodeowners } from "../../lib/codeowners";
import { noteFlakyTestsCount } from "../shared/daily-rollups";

/** Executions on the default branch that the rates, impact and durations cover. */
export const TEST_WINDOW = 50;
/** Commits remembered per test for the same-commit rule. */
const COMMITS_KEPT = 10;
/** Consecutive failing default-branch executions after which a test is broken. */
const BROKEN_AFTER_FAILURES = 10;
/** Consecutive passing default-branch executions after which a flaky test is healthy again. */
const HEALTHY_AFTER_PASSES = 30;
/**
 * Tests of one run whose outcome contradicts what they did on the same commit in an earlier run,
 * from which the run changed, not the tests: a burst of failures re-run green (a network blip, an
 * outage), or a green commit re-run into one. The same-commit rule then leaves them to the
 * flakiness check, which tells a one-off burst from a group that fails together again
 * (docs/alert-checks.md). Five is the check's own minimum for a burst (5 newly failing tests).
 */
const SAME_COMMIT_BURST = 5;

/** What one run did with one test (several cases of one identity in a run are merged). */
export type TestExecution = {
  name: string;
  classname: string | null;
  file: string | null;
  suite: string;
  /** Final status: the worst of the run's cases of this test (errored, failed, passed, skipped). */
  status: CaseStatus;
  /** Whether any case or attempt passed / failed or errored in this run. */
  passed: boolean;
  failed: boolean;
  durationMs: number | null;
};

const SEVERITY: Record<CaseStatus, number> = { skipped: 0, passed: 1, failed: 2, errored: 3 };
const isFailure = (status: CaseStatus) => status === "failed" || status === "errored";

/** Collects a run's executions per test identity while its report is stored. */
export class TestExecutions {
  readonly byIdentity = new Map<string, TestExecution>();

  /** `identity`: the case's testIdentityKey, when the caller has it already. */
  add(
    suite: string,
    testCase: ReportCase,
    identity = testIdentityKey({ classname: testCase.classname ?? null, file: testCase.file ?? null, name: testCase.name }),
  ): void {
    const classname = testCase.classname ?? null;
    const attempts = testCase.attempts ?? [];
    const passed = testCase.status === "passed" || attempts.some((a) => a.status === "passed");
    const failed = isFailure(testCase.status) || attempts.some((a) => isFailure(a.status));
    const existing = this.byIdentity.get(identity);
    if (!existing) {
      this.byIdentity.set(identity, {
        name: testCase.name,
        classname,
        file: testCase.file ?? null,
        suite,
        status: testCase.status,
        passed,
        failed,
        durationMs: testCase.durationMs ?? null,
      });
      return;
    }
    if (SEVERITY[testCase.status] > SEVERITY[existing.status]) existing.status = testCase.status;
    existing.passed ||= passed;
    existing.failed ||= failed;
    if (testCase.durationMs !== null && testCase.durationMs !== undefined)
      existing.durationMs = Math.max(existing.durationMs ?? 0, testCase.durationMs);
  }
}

/** The run as the test rows need it. */
export type RunContext = {
  runId: number;
  number: number;
  createdAt: Date;
  commitSha: string | null;
  onDefaultBranch: boolean;
  /** Set by advanceRun: SAME_COMMIT_BURST or more of the run's tests contradict an earlier run of its commit. */
  sameCommitBurst?: boolean;
};

/** The columns run processing maintains (everything but the identity and first_seen_at). */
export type TestProgress = {
  suite: string;
  health: TestHealth;
  healthChangedAt: Date | null;
  executionsCount: number;
  lastStatus: CaseStatus;
  lastExecutedAt: Date;
  lastFailedAt: Date | null;
  lastRunNumber: number;
  windowSize: number;
  failureRate: number | null;
  flipRate: number | null;
  impact: number;
  durationP50Ms: number | null;
  durationP95Ms: number | null;
  /** Executions in the window that passed on retry (a failed or errored attempt, then passed). */
  passedOnRetryCount: number;
  state: TestState;
};

export type HealthChange = { from: TestHealth; to: TestHealth; reason: string };
/** A stored health change of one test: what auto-quarantine and the `test.health_changed` webhooks follow. */
export type TestHealthChange = HealthChange & { testId: string };

/** What run processing keeps per test between runs (the window and streak columns of `tests`). */
type TestState = {
  /**
   * Outcomes of the last executions on the default branch, oldest first: p(assed), f(ailed),
   * e(rrored), r (passed on retry: a failed or errored attempt, then passed; a pass for the rates).
   */
  w: string;
  /** The duration estimate (see `durationEstimate`): mean and variance of ln(1 + ms), and the samples behind them (≤ 50). */
  dm: number;
  dv: number;
  dn: number;
  /** Recent commits (12 characters of the SHA) and what the test did on them: bit 1 passed, bit 2 failed or errored. */
  c: [string, number][];
  /** Consecutive default-branch executions that failed or errored / passed. */
  cf: number;
  cp: number;
};

const commitsFrom = (text: string): [string, number][] =>
  text === ""
    ? []
    : text.split(" ").map((entry) => [entry.slice(0, entry.lastIndexOf(":")), Number(entry.slice(entry.lastIndexOf(":") + 1))]);
const commitsText = (commits: [string, number][]) => commits.map(([sha, bits]) => `${sha}:${bits}`).join(" ");

const emptyTestState = (): TestState => ({ w: "", dm: 0, dv: 0, dn: 0, c: [], cf: 0, cp: 0 });

const CODE: Partial<Record<CaseStatus, string>> = { passed: "p", failed: "f", errored: "e" };

/** An execution's code in the window: CODE, or "r" for a pass on retry (its final status passed, an attempt failed or errored). */
const codeOf = (execution: Pick<TestExecution, "status" | "failed">): string | undefined =>
  execution.status === "passed" && execution.failed ? "r" : CODE[execution.status];

/** Whether a window code is a pass ("p", or "r": passed on retry). */
const isPass = (code: string | undefined) => code === "p" || code === "r";

/**
 * The figures of a window (TestState.w): failure rate, flip rate and impact count a pass on retry
 * as a pass; passedOnRetryCount counts them.
 */
function windowFigures(window: string): Pick<TestProgress, "windowSize" | "failureRate" | "flipRate" | "impact" | "passedOnRetryCount"> {
  const n = window.length;
  let failures = 0;
  let onRetry = 0;
  let flips = 0;
  for (let i = 0; i < n; i++) {
    const code = window[i];
    if (code === "r") onRetry++;
    else if (code !== "p") failures++;
    if (i > 0 && isPass(code) !== isPass(window[i - 1])) flips++;
  }
  return {
    windowSize: n,
    failureRate: n > 0 ? failures / n : null,
    flipRate: n > 1 ? flips / (n - 1) : null,
    impact: failures,
    passedOnRetryCount: onRetry,
  };
}

/** z of the 95th percentile of a normal distribution. */
const Z95 = 1.6448536269514722;

/**
 * The streaming duration estimate (docs/tests.md#what-each-run-updates): durations are taken as
 * log-normal. The mean and variance of ln(1 + ms) are exact over the first 50 known durations of
 * the window, then exponentially weighted with weight 1/50 (about the last 50 executions); p50
 * and p95 are read off the fitted distribution. Three numbers per test instead of 50 durations,
 * which every run would read and rewrite.
 */
function addDuration(state: TestState, ms: number): void {
  const x = Math.log1p(Math.max(0, ms));
  state.dn = Math.min(TEST_WINDOW, state.dn + 1);
  const alpha = 1 / state.dn;
  const delta = x - state.dm;
  state.dm += alpha * delta;
  state.dv = (1 - alpha) * (state.dv + alpha * delta * delta);
}

function durationQuantiles(state: TestState): { p50: number | null; p95: number | null } {
  if (state.dn === 0) return { p50: null, p95: null };
  const sd = Math.sqrt(Math.max(0, state.dv));
  const at = (z: number) => Math.min(2_147_483_647, Math.max(0, Math.round(Math.expm1(state.dm + z * sd))));
  return { p50: at(0), p95: at(Z95) };
}

const shortSha = (sha: string) => sha.slice(0, 12);

/** What advanceTest reads of a test's row. */
export type PreviousTest = Pick<
  TestProgress,
  "health" | "healthChangedAt" | "executionsCount" | "lastFailedAt" | "lastRunNumber" | "state" | "lastStatus" | "lastExecutedAt"
>;

/** Whether an execution contradicts what the test did on the run's commit in an earlier run (the same-commit rule across runs; not a pass and a failure within the run). */
function contradictsCommit(prior: TestState | undefined, execution: TestExecution, commitSha: string | null): boolean {
  if (!commitSha || (execution.passed && execution.failed)) return false;
  const sha = shortSha(commitSha);
  const before = prior?.c.find(([known]) => known === sha)?.[1] ?? 0;
  const bits = (execution.passed ? 1 : 0) | (execution.failed ? 2 : 0);
  return bits !== 0 && (before | bits) === 3 && (before & bits) !== bits;
}

/**
 * One run's effect on its tests: advanceTest on each, once the run is known to be a same-commit
 * burst or not (SAME_COMMIT_BURST). Pure, like advanceTest; results in the order of `tests`.
 */
export function advanceRun(
  tests: readonly { previous: PreviousTest | null; execution: TestExecution }[],
  run: RunContext,
  /** Decided beforehand when the run's tests are advanced in chunks (runBurstSql counted them all). */
  sameCommitBurst?: boolean,
): { progress: TestProgress; change: HealthChange | null }[] {
  let burst = sameCommitBurst;
  if (burst === undefined) {
    let contradicting = 0;
    for (const { previous, execution } of tests) if (contradictsCommit(previous?.state, execution, run.commitSha)) contradicting++;
    burst = contradicting >= SAME_COMMIT_BURST;
  }
  const context: RunContext = { ...run, sameCommitBurst: burst };
  return tests.map(({ previous, execution }) => advanceTest(previous, execution, context));
}

/**
 * One run's effect on one test: the new row values and, when its health changes, why. Pure:
 * the same previous row, execution and run always give the same result. Run processing calls it
 * through advanceRun, which decides `run.sameCommitBurst`.
 */
export function advanceTest(
  previous: PreviousTest | null,
  execution: TestExecution,
  run: RunContext,
): { progress: TestProgress; change: HealthChange | null } {
  const prior = previous?.state ?? emptyTestState();
  const state: TestState = {
    w: prior.w,
    dm: prior.dm,
    dv: prior.dv,
    dn: prior.dn,
    c: prior.c.map(([sha, bits]) => [sha, bits]),
    cf: prior.cf,
    cp: prior.cp,
  };
  const health = previous?.health ?? "healthy";
  // A run older than the newest one this test has seen (processed late) counts, but does not rewind the window.
  const inOrder = run.number > (previous?.lastRunNumber ?? 0);

  let sameCommit: string | null =
    execution.passed && execution.failed
      ? `passed and failed in run #${run.number}${run.commitSha ? ` (commit ${shortSha(run.commitSha)})` : ""}`
      : null;
  if (run.commitSha) {
    const sha = shortSha(run.commitSha);
    const bits = (execution.passed ? 1 : 0) | (execution.failed ? 2 : 0);
    const index = state.c.findIndex(([known]) => known === sha);
    const before = index >= 0 ? state.c[index]![1] : 0;
    if (bits !== 0) {
      if (index >= 0) state.c.splice(index, 1);
      state.c.push([sha, before | bits]);
      if (state.c.length > COMMITS_KEPT) state.c.shift();
      // In a same-commit burst the run changed, not the test: left to the flakiness check.
      if (sameCommit === null && !run.sameCommitBurst && (before | bits) === 3 && (before & bits) !== bits) {
        sameCommit = `${execution.failed ? "failed" : "passed"} in run #${run.number} on commit ${sha}, where it had ${execution.failed ? "passed" : "failed"} before`;
      }
    }
  }

  const code = codeOf(execution);
  if (run.onDefaultBranch && inOrder && code !== undefined) {
    state.w = (state.w + code).slice(-TEST_WINDOW);
    if (execution.durationMs !== null) addDuration(state, execution.durationMs);
    if (isPass(code)) {
      state.cp++;
      state.cf = 0;
    } else {
      state.cf++;
      state.cp = 0;
    }
  }
  if (sameCommit) state.cp = 0;

  let to: TestHealth = health;
  let reason = "";
  if (sameCommit && health !== "flaky") {
    to = "flaky";
    reason = sameCommit;
  } else if (!sameCommit && health !== "broken" && run.onDefaultBranch && state.cf >= BROKEN_AFTER_FAILURES) {
    to = "broken";
    reason = `failed its last ${state.cf} default-branch executions`;
  } else if (health === "broken" && run.onDefaultBranch && inOrder && isPass(code)) {
    to = "healthy";
    reason = `passed on the default branch in run #${run.number}`;
  } else if (health === "flaky" && state.cp >= HEALTHY_AFTER_PASSES) {
    to = "healthy";
    reason = `passed ${state.cp} default-branch executions in a row`;
  }

  const durations = durationQuantiles(state);

  const latest = inOrder || previous === null;
  const progress: TestProgress = {
    suite: execution.suite,
    health: to,
    healthChangedAt: to !== health ? run.createdAt : (previous?.healthChangedAt ?? null),
    executionsCount: (previous?.executionsCount ?? 0) + 1,
    lastStatus: latest ? execution.status : (previous?.lastStatus ?? execution.status),
    lastExecutedAt: latest ? run.createdAt : (previous?.lastExecutedAt ?? run.createdAt),
    lastFailedAt:
      isFailure(execution.status) && (latest || previous?.lastFailedAt == null) ? run.createdAt : (previous?.lastFailedAt ?? null),
    lastRunNumber: Math.max(run.number, previous?.lastRunNumber ?? 0),
    ...windowFigures(state.w),
    durationP50Ms: durations.p50,
    durationP95Ms: durations.p95,
    state,
  };
  return { progress, change: to !== health ? { from: health, to, reason } : null };
}

export type StoredRow = {
  id: string;
  classname: string | null;
  file: string | null;
  name: string;
  found: boolean;
  health: TestHealth | null;
  /** Timestamps as epoch milliseconds (storedTimesSql); a string or Date from a row read otherwise. */
  health_changed_at: number | string | Date | null;
  executions_count: number | null;
  last_status: CaseStatus | null;
  last_executed_at: number | string | Date | null;
  last_failed_at: number | string | Date | null;
  last_run_number: number | null;
  window_outcomes: string | null;
  duration_log_mean: number | null;
  duration_log_var: number | null;
  duration_samples: number | null;
  recent_commits: string | null;
  failing_streak: number | null;
  passing_streak: number | null;
};

const dateOrNull = (value: number | string | Date | null) => (value === null ? null : new Date(value));

/**
 * The timestamps previousOf reads, as epoch milliseconds (the columns keep milliseconds; date_part
 * is a double, cheaper than extract's numeric, and rounding makes it exact): Node makes a Date of a
 * number at once, where a timestamp's text took a slow parse, three per test.
 */
const storedTimesSql = sql.raw(
  ["health_changed_at", "last_executed_at", "last_failed_at"].map((c) => `round(date_part('epoch', t.${c}) * 1000) as ${c}`).join(", "),
);

function previousOf(row: StoredRow): PreviousTest | null {
  if (!row.found) return null;
  return {
    health: row.health!,
    healthChangedAt: dateOrNull(row.health_changed_at),
    executionsCount: row.executions_count!,
    lastStatus: row.last_status!,
    lastExecutedAt: dateOrNull(row.last_executed_at)!,
    lastFailedAt: dateOrNull(row.last_failed_at),
    lastRunNumber: row.last_run_number!,
    state: {
      w: row.window_outcomes ?? "",
      dm: Number(row.duration_log_mean ?? 0),
      dv: Number(row.duration_log_var ?? 0),
      dn: row.duration_samples ?? 0,
      c: commitsFrom(row.recent_commits ?? ""),
      cf: row.failing_streak ?? 0,
      cp: row.passing_streak ?? 0,
    },
  };
}

/** What advanceRunTests reads before it advances the run's tests: the project's default branch (its row locked) and the rows of the run's tests. */
export type StoredTests = { defaultBranch: string | null; rows: StoredRow[] };

/**
 * The statement that reads StoredTests, the project's row locked for the counts: one row per
 * case of `cases` (the run's stored cases, or the rows an insert of them returned, in the same
 * statement), joined with its test's row, or a single row of nulls when there is none. The cases
 * carry their test id (a generated column), so no list of identities travels to the database and
 * back. Read under lockProjectTests, taken by an earlier statement of the transaction (so this
 * statement's snapshot is taken after it).
 */
export function storedTestsSql(projectId: string, cases: { from: SQL; where?: SQL }): SQL {
  return sql`
    locked_project as (select default_branch from ${projects} where id = ${projectId} for update)
    select p.default_branch, s.* from locked_project p left join lateral (
      select c.test_id as id, c.classname, c.file, c.name, t.id is not null as found,
        t.health, ${storedTimesSql}, t.executions_count, t.last_status, t.last_run_number,
        t.window_outcomes, t.duration_log_mean, t.duration_log_var, t.duration_samples, t.recent_commits, t.failing_streak, t.passing_streak
      from ${cases.from} left join ${tests} t on t.id = c.test_id${cases.where ? sql` where ${cases.where}` : sql``}) s on true`;
}

/** StoredTests out of the rows of storedTestsSql. */
export function storedTestsOf(rows: ({ default_branch: string | null } & (StoredRow | { id: null }))[]): StoredTests {
  return {
    defaultBranch: rows[0]?.default_branch ?? null,
    rows: rows.filter((row): row is { default_branch: string | null } & StoredRow => row.id !== null),
  };
}

/** Runs advanceRunTests' writes and the project's counts as one statement. */
export async function writeRunTests(tx: Database, projectId: string, writes: SQL[], counts: ProjectTestCounts | null): Promise<void> {
  const all = counts ? [...writes, projectCountsSql(projectId, counts)] : writes;
  if (all.length === 0) return;
  const [last, ...others] = [...all].reverse();
  await tx.execute(
    others.length === 0
      ? last!
      : sql`with ${sql.join(
          others.map((write, i) => sql`tests_w${sql.raw(String(i))} as (${write})`),
          sql`, `,
        )} ${last}`,
  );
}

/** What the run's tests' rows change by in the project's counts. */
export type ProjectTestCounts = { added: number; flaky: number; broken: number };

/** The assignments of an update of the project's row that add the counts. */
export const projectCountsAssignments = (counts: ProjectTestCounts): SQL =>
  sql`tests_count = tests_count + ${counts.added}, flaky_tests_count = flaky_tests_count + ${counts.flaky}, broken_tests_count = broken_tests_count + ${counts.broken}`;

const projectCountsSql = (projectId: string, counts: ProjectTestCounts): SQL =>
  sql`update ${projects} set ${projectCountsAssignments(counts)} where id = ${projectId}`;

/**
 * What one run did to its tests: reads the rows of the run's tests (one statement, unless the
 * caller read them with the run's cases: storedTestsSql), advances each, and returns the health
 * changes (which the caller follows in the same transaction: followHealthChanges), the writes of
 * the tests' rows and transitions (statements for common table expressions: they touch different
 * rows, and the transitions' foreign keys are checked at the statement's end, after the new tests
 * are in), and the project's counts (null when unchanged), which the caller writes with its own
 * update of the project's row (one statement may not update a row twice), or with writeRunTests.
 * Runs of one project update their tests one at a time: lockProjectTests, which the caller may
 * have taken already (`read` given). What every row of the run shares (the run's time and number)
 * travels once, as a parameter, not once per row.
 */
export async function advanceRunTests(
  tx: Database,
  run: { id: number; projectId: string; variant: string; number: number; createdAt: Date; commitSha: string | null; branch: string | null },
  executions: TestExecutions,
  read?: StoredTests,
  /** Decided beforehand when the run's tests are advanced a slice at a time (sameCommitContradictions over them all). */
  sameCommitBurst?: boolean,
): Promise<{ changes: TestHealthChange[]; writes: SQL[]; counts: ProjectTestCounts | null }> {
  if (executions.byIdentity.size === 0) return { changes: [], writes: [], counts: null };
  if (!read) await lockProjectTests(tx, run.projectId);
  const { defaultBranch, rows: stored } =
    read ??
    storedTestsOf(
      await rowsOf(
        tx.execute(sql`with ${storedTestsSql(run.projectId, { from: sql`${testCases} c`, where: sql`c.test_run_id = ${run.id}` })}`),
      ),
    );
  const rowByIdentity = new Map<string, StoredRow>();
  for (const row of stored) rowByIdentity.set(testIdentityKey({ classname: row.classname, file: row.file, name: row.name }), row);
  const advancing = [...executions.byIdentity].map(([identity, execution]) => {
    const row = rowByIdentity.get(identity);
    if (!row) throw new Error("A test of the run has no stored case.");
    return { row, execution };
  });
  return advanceTests(tx, run, runContext(run, defaultBranch), advancing, sameCommitBurst, ownersOnce(tx, run.projectId));
}

/**
 * How many of these tests contradict an earlier run of the run's commit (what advanceRun counts
 * to decide a same-commit burst), for a caller that reads a run's tests in slices and adds the
 * counts; the run is a burst at SAME_COMMIT_BURST or more.
 */
export function sameCommitContradictions(tests: readonly { row: StoredRow; execution: TestExecution }[], commitSha: string | null): number {
  let contradicting = 0;
  for (const { row, execution } of tests) if (contradictsCommit(previousOf(row)?.state, execution, commitSha)) contradicting++;
  return contradicting;
}

export { SAME_COMMIT_BURST };

const runContext = (
  run: { id: number; number: number; createdAt: Date; commitSha: string | null; branch: string | null },
  defaultBranch: string | null,
): RunContext => ({
  runId: run.id,
  number: run.number,
  createdAt: run.createdAt,
  commitSha: run.commitSha,
  onDefaultBranch: isDefaultBranch(run.branch, defaultBranch),
});

/** The project's CODEOWNERS matcher, read at most once per run however many chunks ask for it. */
function ownersOnce(tx: Database, projectId: string): () => Promise<OwnersMatcher | null> {
  let matcher: Promise<OwnersMatcher | null> | undefined;
  return () => (matcher ??= storedOwnersMatcher(tx, projectId));
}

type AdvancedTests = { changes: TestHealthChange[]; writes: SQL[]; counts: ProjectTestCounts | null };

/** advanceRun on stored rows, and the statements that write the result (see advanceRunTests). */
async function advanceTests(
  tx: Database,
  run: { id: number; projectId: string; variant: string; number: number; createdAt: Date },
  context: RunContext,
  advancing: { row: StoredRow; execution: TestExecution }[],
  sameCommitBurst: boolean | undefined,
  owners: () => Promise<OwnersMatcher | null>,
): Promise<AdvancedTests> {
  const fresh: Record<string, unknown>[] = [];
  const known: unknown[] = [];
  const changes: { t: string; f: TestHealth; to: TestHealth; r: string }[] = [];
  let flaky = 0;
  let broken = 0;
  const rows = advancing.map(({ row, execution }) => ({ row, execution, previous: previousOf(row) }));
  const advanced = advanceRun(rows, context, sameCommitBurst);
  for (const [index, { row, execution, previous }] of rows.entries()) {
    const { progress, change } = advanced[index]!;
    const before = previous?.health ?? "healthy";
    flaky += (progress.health === "flaky" ? 1 : 0) - (before === "flaky" ? 1 : 0);
    broken += (progress.health === "broken" ? 1 : 0) - (before === "broken" ? 1 : 0);
    // One object per test, its own fields added to it (no copy of the shared ones).
    const shared: Record<string, unknown> = {
      id: row.id,
      s: progress.suite,
      ls: progress.lastStatus,
      ws: progress.windowSize,
      fr: progress.failureRate,
      fl: progress.flipRate,
      im: progress.impact,
      pr: progress.passedOnRetryCount,
      p50: progress.durationP50Ms,
      p95: progress.durationP95Ms,
      w: progress.state.w,
      dm: progress.state.dm,
      dv: progress.state.dv,
      dn: progress.state.dn,
      c: commitsText(progress.state.c),
      cf: progress.state.cf,
      cp: progress.state.cp,
    };
    if (previous === null) {
      shared.n = execution.name;
      shared.cl = execution.classname;
      shared.f = execution.file;
      shared.h = progress.health;
      shared.fail = progress.lastFailedAt !== null;
      shared.o = [];
      fresh.push(shared);
    } else {
      // Timestamps are the run's (a parameter): each row says only whether they move.
      shared.h = change ? progress.health : null;
      shared.latest = progress.lastExecutedAt.getTime() === run.createdAt.getTime();
      shared.fail = progress.lastFailedAt?.getTime() === run.createdAt.getTime();
      known.push(shared);
    }
    if (change) changes.push({ t: row.id, f: change.from, to: change.to, r: change.reason });
  }
  const at = run.createdAt.toISOString();
  const writes: SQL[] = [];
  if (fresh.length > 0) {
    // New tests get their owners from the project's CODEOWNERS, read and parsed once for the run
    // (under the lock, so an upload of a new CODEOWNERS is wholly before or after this run).
    const matcher = fresh.some((row) => row.f !== null) ? await owners() : null;
    if (matcher) for (const row of fresh) row.o = matcher.ownersOf(row.f as string | null);
    writes.push(sql`
      insert into ${tests} (id, project_id, variant, name, classname, file, suite, health, health_changed_at, executions_count, last_status, last_executed_at,
        last_failed_at, first_seen_at, last_run_number, window_size, failure_rate, flip_rate, impact, passed_on_retry_count, duration_p50_ms, duration_p95_ms,
        window_outcomes, duration_log_mean, duration_log_var, duration_samples, recent_commits, failing_streak, passing_streak, owners)
      select y.id, ${run.projectId}::uuid, ${run.variant}::text, y.n, y.cl, y.f, y.s, y.h::test_health, case when y.h = 'healthy' then null else ${at}::timestamptz end, 1,
        y.ls::case_status, ${at}::timestamptz, case when y.fail then ${at}::timestamptz end, ${at}::timestamptz, ${run.number}, y.ws, y.fr, y.fl, y.im,
        y.pr, y.p50, y.p95, y.w, y.dm, y.dv, y.dn, y.c, y.cf, y.cp, y.o
      from json_to_recordset(${JSON.stringify(fresh)}::json) as y(id uuid, n text, cl text, f text, s text, h text, fail bool, ls text, ws int,
        fr float8, fl float8, im int, pr int, p50 int, p95 int, w text, dm float8, dv float8, dn int, c text, cf int, cp int, o text[])`);
  }
  if (known.length > 0) {
    writes.push(sql`
      update ${tests} t set
        suite = y.s,
        health = coalesce(y.h::test_health, t.health),
        health_changed_at = case when y.h is null then t.health_changed_at else ${at}::timestamptz end,
        executions_count = t.executions_count + 1,
        last_status = case when y.latest then y.ls::case_status else t.last_status end,
        last_executed_at = case when y.latest then ${at}::timestamptz else t.last_executed_at end,
        last_failed_at = case when y.fail then ${at}::timestamptz else t.last_failed_at end,
        first_seen_at = least(t.first_seen_at, ${at}::timestamptz),
        last_run_number = greatest(t.last_run_number, ${run.number}),
        window_size = y.ws, failure_rate = y.fr, flip_rate = y.fl, impact = y.im, passed_on_retry_count = y.pr, duration_p50_ms = y.p50, duration_p95_ms = y.p95,
        window_outcomes = y.w, duration_log_mean = y.dm, duration_log_var = y.dv, duration_samples = y.dn, recent_commits = y.c,
        failing_streak = y.cf, passing_streak = y.cp
      from json_to_recordset(${JSON.stringify(known)}::json) as y(id uuid, s text, h text, latest bool, fail bool, ls text, ws int,
        fr float8, fl float8, im int, pr int, p50 int, p95 int, w text, dm float8, dv float8, dn int, c text, cf int, cp int)
      where t.id = y.id`);
  }
  if (changes.length > 0) writes.push(transitionsSql(run, changes));
  return {
    changes: changes.map((change) => ({ testId: change.t, from: change.f, to: change.to, reason: change.r })),
    writes,
    counts: fresh.length !== 0 || flaky !== 0 || broken !== 0 ? { added: fresh.length, flaky, broken } : null,
  };
}

/** Tests advanced per chunk of a large run: what one fetch, one advance and one write hold. */
export const TESTS_PER_CHUNK = 2_000;

/**
 * The run's executions merged per test from its stored cases, as TestExecutions.add merges them
 * in memory: the first case's suite and file (in the order stored, which is the report's), the
 * worst status, whether any case or attempt passed / failed or errored, the longest duration.
 */
const storedExecutionsSql = (runId: number): SQL => sql`
  select c.test_id, min(c.classname) as classname, min(c.name) as name,
    (array_agg(c.file order by c.id))[1] as file, (array_agg(su.name order by c.id))[1] as suite,
    max(case c.status when 'skipped' then 0 when 'passed' then 1 when 'failed' then 2 else 3 end) as severity,
    bool_or(c.status = 'passed' or c.attempts @> '[{"status":"passed"}]') as passed,
    bool_or(c.status in ('failed', 'errored') or c.attempts @> '[{"status":"failed"}]' or c.attempts @> '[{"status":"errored"}]') as failed,
    max(c.duration_ms) as duration_ms
  from ${testCases} c join ${testSuites} su on su.test_run_id = c.test_run_id and su.number = c.suite_number
  where c.test_run_id = ${runId}
  group by c.test_id`;

const STATUS_BY_SEVERITY: CaseStatus[] = ["skipped", "passed", "failed", "errored"];

type ChunkRow = StoredRow & {
  test_id: string;
  suite: string;
  severity: number;
  passed: boolean;
  failed: boolean;
  duration_ms: number | null;
};

/**
 * What a large run's advance reads first, the project's row locked for the counts: its default
 * branch, and how many of the run's tests contradict what they did on its commit before (a
 * contradiction: the test passed (only) where it had only failed on the run's commit before, or
 * the reverse: contradictsCommit), counted over all of them before any chunk is advanced. Only a
 * test that knows the run's commit can contradict it: for a new commit (most runs) no test of the
 * project does, and a scan of their recent commits spares merging the run's executions twice.
 */
async function chunkedRunHead(
  tx: Database,
  run: { id: number; projectId: string; commitSha: string | null },
): Promise<{ defaultBranch: string | null; contradicting: number }> {
  const sha = run.commitSha ? shortSha(run.commitSha) : null;
  const [head] = await rowsOf<{ default_branch: string | null; contradicting: number | string }>(
    tx.execute(sql`
      with locked_project as (select default_branch from ${projects} where id = ${run.projectId} for update)
      select p.default_branch, ${
        sha === null
          ? sql`0`
          : sql`case when exists (select 1 from ${tests} k where k.project_id = ${run.projectId} and strpos(k.recent_commits, ${`${sha}:`}) > 0)
            then (select count(*) from (${storedExecutionsSql(run.id)}) e join ${tests} t on t.id = e.test_id
              where e.passed <> e.failed and (case when e.passed then ${`${sha}:2`} else ${`${sha}:1`} end) = any(string_to_array(t.recent_commits, ' ')))
            else 0 end`
      } as contradicting
      from locked_project p`),
  );
  return { defaultBranch: head?.default_branch ?? null, contradicting: Number(head?.contradicting ?? 0) };
}

/**
 * advanceRunTests for a run too large to hold in memory (src/services/runs/test-runs.ts decides): the
 * run's executions are merged from its stored cases by Postgres and read with their tests' rows
 * through a cursor, TESTS_PER_CHUNK at a time; each chunk is advanced and written (and its health
 * changes followed, `follow`, once its write is done), the next chunk read and a chunk's write
 * done by Postgres while Node advances another. Whether the run is a same-commit burst
 * is counted first, over all its tests, as advanceRun would over the whole run. Under
 * lockProjectTests, taken by the caller. Returns what the run changes in the project's counts,
 * which the caller writes with its own update of the project's row.
 */
export async function advanceRunTestsInChunks(
  tx: Database,
  run: { id: number; projectId: string; variant: string; number: number; createdAt: Date; commitSha: string | null; branch: string | null },
  follow: (changes: TestHealthChange[]) => Promise<void>,
): Promise<ProjectTestCounts | null> {
  const head = await chunkedRunHead(tx, run);
  const context = runContext(run, head.defaultBranch);
  const burst = head.contradicting >= SAME_COMMIT_BURST;
  const owners = ownersOnce(tx, run.projectId);
  const total: ProjectTestCounts = { added: 0, flaky: 0, broken: 0 };
  await tx.execute(sql`
    declare run_tests no scroll cursor for
    select e.*, t.id as id, t.id is not null as found, t.health, ${storedTimesSql}, t.executions_count, t.last_status,
      t.last_run_number, t.window_outcomes, t.duration_log_mean, t.duration_log_var, t.duration_samples, t.recent_commits, t.failing_streak, t.passing_streak
    from (${storedExecutionsSql(run.id)}) e left join ${tests} t on t.id = e.test_id
    order by e.test_id`);
  // Node and Postgres work at the same time: the next chunk is asked for before this one is
  // advanced, and a chunk's write is sent without waiting for it, so Postgres reads and writes
  // while Node advances the next chunk (one connection: its statements still run in order). The
  // cursor reads with its declaration's snapshot, which the writes do not change.
  const fetchChunk = () => inFlight(rowsOf<ChunkRow>(tx.execute(sql.raw(`fetch ${TESTS_PER_CHUNK} from run_tests`))));
  let next: Promise<ChunkRow[]> | null = fetchChunk();
  let writing: Promise<void> | null = null;
  try {
    while (next) {
      const rows: ChunkRow[] = await next;
      next = rows.length === TESTS_PER_CHUNK ? fetchChunk() : null;
      if (rows.length === 0) continue;
      const advanced = await advanceChunk(rows);
      // One write in flight at most (with its chunk's health changes followed); a failed one is reported here.
      await writing;
      const { changes } = advanced;
      const written = writeRunTests(tx, run.projectId, advanced.writes, null);
      // Health changes are followed on the tests' rows as this run leaves them: once their chunk is
      // written, and before the next chunk's write is sent (it waits for this), while Node advances the next chunk.
      writing = inFlight(changes.length === 0 ? written : written.then(() => follow(changes)));
    }
    await writing;
  } finally {
    // Nothing may be left running on the connection when an advance fails.
    await Promise.allSettled([next, writing]);
  }
  await tx.execute(sql`close run_tests`);
  return total.added !== 0 || total.flaky !== 0 || total.broken !== 0 ? total : null;

  async function advanceChunk(rows: ChunkRow[]) {
    const chunk = rows.map((row) => ({
      // The row is this chunk's own: its id is the test's, also for a test without a row yet.
      row: Object.assign(row, { id: row.test_id }),
      execution: {
        name: row.name,
        classname: row.classname,
        file: row.file,
        suite: row.suite,
        status: STATUS_BY_SEVERITY[row.severity]!,
        passed: row.passed,
        failed: row.failed,
        durationMs: row.duration_ms,
      },
    }));
    const advanced = await advanceTests(tx, run, context, chunk, burst, owners);
    if (advanced.counts) {
      total.added += advanced.counts.added;
      total.flaky += advanced.counts.flaky;
      total.broken += advanced.counts.broken;
    }
    return advanced;
  }
}

/**
 * The matcher of a project's stored CODEOWNERS (docs/codeowners.md), or null without one: run
 * processing reads and parses it once per run, and only when the run brings new tests with a file.
 */
async function storedOwnersMatcher(tx: Database, projectId: string): Promise<OwnersMatcher | null> {
  const [row] = await tx
    .select({ content: projectCodeowners.content })
    .from(projectCodeowners)
    .where(sql`${projectCodeowners.projectId} = ${projectId}`)
    .limit(1);
  return row ? new OwnersMatcher(parseCodeowners(row.content).rules) : null;
}

/**
 * One writer of a project's tests' rows at a time: run processing (this file) and the alert checks
 * (their entries in check_state) take this lock first, so their updates of the same rows cannot
 * deadlock. A transaction-level advisory lock rather than the project's row, which uploads update
 * (the run counter) and must not wait for.
 */
export async function lockProjectTests(tx: Database, projectId: string): Promise<void> {
  await tx.execute(sql`select ${projectTestsLock(sql`${projectId}`)}`);
}

/** The lock of lockProjectTests as an expression, for statements that take it among other work (one round trip). */
export const projectTestsLock = (projectId: SQL): SQL => sql`pg_advisory_xact_lock(hashtextextended(${projectId}::text, 0))`;

const transitionsSql = (run: { id: number; createdAt: Date }, changes: unknown[]): SQL => sql`
  insert into ${testHealthTransitions} (test_id, from_health, to_health, reason, test_run_id, created_at)
  select z.t, z.f::test_health, z.to::test_health, z.r, ${run.id}, ${run.createdAt.toISOString()}::timestamptz
  from json_to_recordset(${JSON.stringify(changes)}::json) as z(t uuid, f text, "to" text, r text)`;

async function insertTransitions(tx: Database, run: { id: number; createdAt: Date }, changes: unknown[]): Promise<void> {
  await tx.execute(transitionsSql(run, changes));
}

/**
 * The flakiness check's flag on one test, in memory: what markTestsFlaky's statement does to each
 * row it names (keep the two the same). A test that is not flaky becomes flaky at the run, its
 * passing streak reset; a flaky test is left as it is. Pure, like advanceTest; the detection
 * benchmark replays health with the two (src/simulator/health-replay.ts).
 */
export function flagTestFlaky(
  progress: TestProgress,
  run: Pick<RunContext, "createdAt">,
  reason: string,
): { progress: TestProgress; change: HealthChange | null } {
  if (progress.health === "flaky") return { progress, change: null };
  return {
    progress: { ...progress, health: "flaky", healthChangedAt: run.createdAt, state: { ...progress.state, cp: 0 } },
    change: { from: progress.health, to: "flaky", reason },
  };
}

/**
 * The flakiness check's evidence makes the tests it names flaky at that run (so a test named in a
 * `test_flakiness` event is `flaky`), with the check's rule as the reason: flagTestFlaky on each
 * row, as one statement. Returns the changes, which the caller follows in the same transaction.
 */
export async function markTestsFlaky(
  tx: Database,
  run: { id: number; projectId: string; createdAt: Date },
  flagged: { testId: string; reason: string }[],
): Promise<TestHealthChange[]> {
  if (flagged.length === 0) return [];
  const changed = await rowsOf<{ id: string; from_health: TestHealth; reason: string }>(
    tx.execute(sql`
      with flagged as (select * from json_to_recordset(${JSON.stringify(flagged.map((f) => ({ t: f.testId, r: f.reason })))}::json) as f(t uuid, r text)),
      before as (select t.id, t.health as from_health, f.r as reason from ${tests} t join flagged f on f.t = t.id
        where t.project_id = ${run.projectId}::uuid and t.health <> 'flaky' for update of t)
      update ${tests} t set health = 'flaky', health_changed_at = ${run.createdAt.toISOString()}::timestamptz, passing_streak = 0
      from before b where t.id = b.id
      returning t.id, b.from_health, b.reason`),
  );
  if (changed.length === 0) return [];
  await insertTransitions(
    tx,
    run,
    changed.map((row) => ({ t: row.id, f: row.from_health, to: "flaky", r: row.reason })),
  );
  const wasBroken = changed.filter((row) => row.from_health === "broken").length;
  await tx
    .update(projects)
    .set({
      flakyTestsCount: sql`${projects.flakyTestsCount} + ${changed.length}`,
      brokenTestsCount: sql`${projects.brokenTestsCount} - ${wasBroken}`,
    })
    .where(sql`${projects.id} = ${run.projectId}`);
  await noteFlakyTestsCount(tx, run.projectId, run.createdAt);
  return changed.map((row) => ({ testId: row.id, from: row.from_health, to: "flaky", reason: row.reason }));
}

/**
 * A retry part merged after its run fed its tests (src/services/runs/retry-parts.ts) turned the
 * run's failure of these tests into a pass on retry: what advanceTest would have done, had the
 * retry's attempts been in the run's report. The run's outcome in a test's window (its last, when
 * the run is the newest on the default branch that test has seen) becomes `r`, with the window's
 * figures and the failing streak; and a pass and a failure within one run make the test flaky
 * (the same-commit rule). Tests with a case of the run still failing are left as they are.
 * Returns the health changes, which the caller follows in the same transaction.
 */
export async function notePassesOnRetry(
  tx: Database,
  run: { id: number; projectId: string; number: number; createdAt: Date; commitSha: string | null; branch: string | null },
  testIds: readonly string[],
): Promise<TestHealthChange[]> {
  if (testIds.length === 0) return [];
  await lockProjectTests(tx, run.projectId);
  const rows = await rowsOf<{ id: string; window_outcomes: string; last_run_number: number; default_branch: string | null }>(
    tx.execute(sql`select t.id, t.window_outcomes, t.last_run_number, p.default_branch
      from ${tests} t join ${projects} p on p.id = t.project_id
      where t.project_id = ${run.projectId}::uuid
        and t.id in (select value::uuid from json_array_elements_text(${JSON.stringify(testIds)}::json))
        and not exists (select 1 from ${testCases} c where c.test_run_id = ${run.id} and c.test_id = t.id and c.status in ('failed', 'errored'))
      for update of t`),
  );
  if (rows.length === 0) return [];
  const onDefaultBranch = isDefaultBranch(run.branch, rows[0]!.default_branch);
  const updates = rows.map((row) => {
    const latest = row.last_run_number === run.number;
    const last = row.window_outcomes.at(-1);
    if (!onDefaultBranch || !latest || (last !== "f" && last !== "e")) return { id: row.id, latest };
    const w = `${row.window_outcomes.slice(0, -1)}r`;
    const f = windowFigures(w);
    return { id: row.id, latest, w, ws: f.windowSize, fr: f.failureRate, fl: f.flipRate, im: f.impact, pr: f.passedOnRetryCount };
  });
  // As advanceTest: a pass and a failure in one run reset the passing streak; a pass the failing one.
  await tx.execute(sql`update ${tests} t set window_outcomes = coalesce(y.w, t.window_outcomes), window_size = coalesce(y.ws, t.window_size),
      failure_rate = case when y.w is null then t.failure_rate else y.fr end, flip_rate = case when y.w is null then t.flip_rate else y.fl end,
      impact = coalesce(y.im, t.impact), passed_on_retry_count = coalesce(y.pr, t.passed_on_retry_count),
      failing_streak = case when y.w is null then t.failing_streak else 0 end, passing_streak = 0,
      last_status = case when y.latest then 'passed'::case_status else t.last_status end
    from json_to_recordset(${JSON.stringify(updates)}::json) as y(id uuid, latest bool, w text, ws int, fr float8, fl float8, im int, pr int)
    where t.id = y.id`);
  const reason = `passed and failed in run #${run.number}${run.commitSha ? ` (commit ${shortSha(run.commitSha)})` : ""}, passed on retry`;
  return markTestsFlaky(
    tx,
    run,
    rows.map((row) => ({ testId: row.id, reason })),
  );
}
