/**
 * A simulated stream stored by the service run by run, as the queue consumer stores an upload:
 * the run's arrival (recordTestRunArrival, with its branch, commit, base commit and start time),
 * then processTestRun on its JUnit XML, which compares it with its base (run-comparison.ts), with
 * the alert checks as its after-processing step (they feed the tests' health: a flaky test's
 * `flaky`). The clock is each run's start, as the checks' windows expect. Planned quarantines are
 * put on through quarantineTest before the run they precede. Then every run's stored comparison
 * is read back, by the simulator's test keys: what the verdict benchmark scores against the truth.
 */
import { and, eq } from "drizzle-orm";
import { CHECKS } from "../checks";
import { runComparisons, runFixedTests, runVerdicts, testRuns, tests } from "../db/schema";
import type { Database } from "../db/types";
import type { ManualClock } from "../lib/clock";
import type { Logger } from "../lib/logger";
import type { Verdict } from "../lib/vocabulary";
import { runAlertChecks } from "../services/alerts/alert-checks";
import { processTestRun } from "../services/runs/run-processing";
import { recordTestRunArrival } from "../services/runs/test-runs";
import { quarantineTest } from "../services/tests/quarantine";
import { toJUnitXml } from "./junit-report";
import type { SimRun } from "./stream-types";
import type { PlannedQuarantine } from "./verdict-streams";

export type VerdictReplayDeps = { db: Database; clock: ManualClock; logger: Logger; webAppUrl: string };
export type ReplayProject = { id: string; organizationId: string };

/** A run's stored comparison, by the simulator's test keys. */
export type StoredComparison = {
  number: number;
  baseNumber: number | null;
  baseChoice: string;
  verdicts: Map<string, { verdict: Verdict; reason: string }>;
  fixed: Set<string>;
};

/** The queue consumer's processing, with the alert checks after it (src/services/background-work.ts does the same, plus notifications). */
function processingDeps(deps: VerdictReplayDeps) {
  return {
    ...deps,
    afterRunProcessed: async (run: Parameters<typeof runAlertChecks>[1]) => {
      await runAlertChecks({ ...deps, checks: CHECKS }, run);
    },
  };
}

/** Quarantines a test of the project by its simulated key (its name is unique in a stream). */
async function quarantineByKey(deps: VerdictReplayDeps, project: ReplayProject, planned: PlannedQuarantine, nameOf: Map<string, string>) {
  const name = nameOf.get(planned.test)!;
  const [test] = await deps.db
    .select({ id: tests.id })
    .from(tests)
    .where(and(eq(tests.projectId, project.id), eq(tests.name, name)));
  if (!test) throw new Error(`quarantine of ${name}: the project has no such test yet`);
  const scope = { ...deps, organizationId: project.organizationId, queue: { send: async () => {} } };
  const input = { reason: planned.reason, duration: "30d" as const, expiresAt: null, owner: null, issueUrl: null, allVariants: false };
  // As an API key would through /api/v1 (the replay has none: the nil id names nobody).
  await quarantineTest(scope, test.id, input, { via: "api", apiKeyId: "00000000-0000-0000-0000-000000000000" });
}

/** Stores every run in order (quarantines first where planned) and returns the stored comparisons, in run order. */
export async function replayVerdicts(
  deps: VerdictReplayDeps,
  project: ReplayProject,
  stream: { runs: readonly SimRun[]; quarantines?: readonly PlannedQuarantine[] },
): Promise<StoredComparison[]> {
  const nameOf = new Map(stream.runs.flatMap((run) => run.tests.map((t) => [t.key, t.name] as const)));
  const processing = processingDeps(deps);
  for (const run of stream.runs) {
    for (const planned of stream.quarantines ?? [])
      if (planned.beforeRun === run.number) await quarantineByKey(deps, project, planned, nameOf);
    deps.clock.set(Date.parse(run.created_at));
    const payload = { format: "junit_xml" as const, content: toJUnitXml(run) };
    const meta = {
      branch: run.branch,
      commitSha: run.commit_sha,
      baseCommitSha: run.base_commit_sha ?? null,
      startedAt: new Date(run.created_at),
    };
    const { run: arrived } = await recordTestRunArrival(deps, project.id, meta, payload);
    if (arrived.number !== run.number) throw new Error(`run ${run.number} arrived as number ${arrived.number}: the project had runs`);
    const outcome = await processTestRun(processing, arrived.id, { finalAttempt: true, payload });
    if (outcome !== "processed") throw new Error(`run ${run.number} was not processed (${outcome})`);
  }
  return readComparisons(deps.db, project.id, new Map([...nameOf].map(([key, name]) => [name, key])));
}

/** Every run's comparison, verdicts and fixed tests, read back with the test's name mapped to its key. */
async function readComparisons(db: Database, projectId: string, keyOf: Map<string, string>): Promise<StoredComparison[]> {
  const runs = await db
    .select({ id: testRuns.id, number: testRuns.number, baseRunId: runComparisons.baseRunId, baseChoice: runComparisons.baseChoice })
    .from(testRuns)
    .innerJoin(runComparisons, eq(runComparisons.testRunId, testRuns.id))
    .where(eq(testRuns.projectId, projectId));
  const numberOf = new Map(runs.map((r) => [r.id, r.number]));
  const byRun = new Map<number, StoredComparison>();
  for (const r of runs) {
    const baseNumber = r.baseRunId === null ? null : (numberOf.get(r.baseRunId) ?? null);
    byRun.set(r.id, { number: r.number, baseNumber, baseChoice: r.baseChoice, verdicts: new Map(), fixed: new Set() });
  }
  const verdicts = await db
    .select({ run: runVerdicts.testRunId, name: tests.name, verdict: runVerdicts.verdict, reason: runVerdicts.reason })
    .from(runVerdicts)
    .innerJoin(tests, eq(tests.id, runVerdicts.testId))
    .where(eq(tests.projectId, projectId));
  for (const v of verdicts) byRun.get(v.run)?.verdicts.set(keyOf.get(v.name) ?? v.name, { verdict: v.verdict, reason: v.reason });
  const fixed = await db
    .select({ run: runFixedTests.testRunId, name: tests.name })
    .from(runFixedTests)
    .innerJoin(tests, eq(tests.id, runFixedTests.testId))
    .where(eq(tests.projectId, projectId));
  for (const f of fixed) byRun.get(f.run)?.fixed.add(keyOf.get(f.name) ?? f.name);
  return [...byRun.values()].sort((a, b) => a.number - b.number);
}
