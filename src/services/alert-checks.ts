/**
 * Runs the alert checks on a processed run (the `afterRunProcessed` seam of run processing).
 *
 * For each of the project's four alerts: a disabled alert is not checked at all (no state
 * update, no events; its history stays), except `test_flakiness`, whose check also feeds the
 * tests' health: it runs while disabled and records no events. An active alert's check — snoozed or not — reads its
 * state, takes the run, and in one transaction saves the new state and records one event per
 * trip (counting them in `events_count`). Snoozing only suppresses notifications.
 *
 * Runs feed the checks in number order: a run processed after a newer one (a retry, a slow
 * upload) is not fed in, so windows never rewind (docs/alert-checks.md#shared-rules).
 */
import { and, asc, eq, sql } from "drizzle-orm";
import type { Logger } from "../lib/logger";
import { type CheckRegistry, type RunSummary, testKey } from "../checks/types";
import { alertCheckStates, alertEvents, alerts, projects, testCases, testSuites } from "../db/schema";
import type { Database } from "../db/types";
import type { Clock } from "../lib/clock";
import type { AlertType } from "../lib/vocabulary";
import { isSnoozed } from "./presenters";
import { isDefaultBranch } from "./default-branch";
import { markTestsFlaky } from "./tests-state";
import type { TestRunRow } from "./test-runs";

/** Events recorded per check and run at most; a check that trips more is summarised in the last one. */
const MAX_EVENTS_PER_CHECK = 50;
/** Metadata is uploaded test output turned into JSON data: bounded so one event stays small. */
const MAX_METADATA_BYTES = 16 * 1024;

export type AlertChecksDeps = { db: Database; clock: Clock; logger: Logger; checks: CheckRegistry };

/** A recorded trip, for notification delivery after the transaction commits. */
export type RecordedTrip = { alertId: string; alertType: AlertType; eventId: number; snoozed: boolean };


/** The run as the checks see it: counts, metadata, and every final case with its attempts. */
export async function runSummary(db: Database, run: TestRunRow, defaultBranch: string | null): Promise<RunSummary> {
  const rows = await db
    .select({
      suite: testSuites.name,
      classname: testCases.classname,
      name: testCases.name,
      status: testCases.status,
      attempts: testCases.attempts,
      durationMs: testCases.durationMs,
      testId: testCases.testId,
    })
    .from(testCases)
    .innerJoin(testSuites, and(eq(testSuites.testRunId, testCases.testRunId), eq(testSuites.number, testCases.suiteNumber)))
    .where(eq(testCases.testRunId, run.id))
    .orderBy(asc(testCases.id));
  return {
    runId: run.id,
    number: run.number,
    branch: run.branch,
    commitSha: run.commitSha,
    createdAt: run.createdAt,
    durationMs: run.durationMs,
    onDefaultBranch: isDefaultBranch(run.branch, defaultBranch),
    counts: { tests: run.testsCount, passed: run.passedCount, failed: run.failedCount, errored: run.erroredCount, skipped: run.skippedCount },
    tests: rows.map((row) => ({
      key: testKey(row.suite, row.classname, row.name),
      suite: row.suite,
      classname: row.classname,
      name: row.name,
      status: row.status,
      attempts: row.attempts.map((attempt) => attempt.status),
      durationMs: row.durationMs,
      testId: row.testId,
    })),
  };
}

/** A flakiness event names its test as the API knows it: `test_id` beside the check's own key. */
function withTestId(metadata: Record<string, unknown>, testIds: Map<string, string>): Record<string, unknown> {
  const testId = typeof metadata.test_key === "string" ? testIds.get(metadata.test_key) : undefined;
  return testId ? { ...metadata, test_id: testId } : metadata;
}

/** Keeps metadata within its size cap: the largest arrays are cut first, and the cut is recorded. */
export function boundedMetadata(metadata: Record<string, unknown>): Record<string, unknown> {
  let result = metadata;
  for (let round = 0; round < 8 && jsonBytes(result) > MAX_METADATA_BYTES; round++) {
    const [key, value] = Object.entries(result)
      .filter(([, v]) => Array.isArray(v) && v.length > 1)
      .sort(([, a], [, b]) => JSON.stringify(b).length - JSON.stringify(a).length)[0] ?? [undefined, undefined];
    if (key === undefined || !Array.isArray(value)) break;
    result = { ...result, [key]: value.slice(0, Math.ceil(value.length / 2)), [`${key}_truncated`]: true };
  }
  return jsonBytes(result) > MAX_METADATA_BYTES ? { truncated: true, detector_version: metadata.detector_version ?? null } : result;
}

const utf8 = new TextEncoder();
/** Size of a value as stored and sent: UTF-8 bytes of its JSON (test names are often not ASCII). */
const jsonBytes = (value: unknown): number => utf8.encode(JSON.stringify(value)).length;

export async function runAlertChecks(deps: AlertChecksDeps, run: TestRunRow): Promise<RecordedTrip[]> {
  const [project] = await deps.db
    .select({ id: projects.id, defaultBranch: projects.defaultBranch })
    .from(projects)
    .where(eq(projects.id, run.projectId))
    .limit(1);
  if (!project) return [];
  const projectAlerts = await deps.db.select().from(alerts).where(eq(alerts.projectId, project.id));
  // The flakiness check also feeds the tests' health, which disabling its alert does not stop:
  // it runs for a disabled alert too, and only its events are left out.
  const checked = projectAlerts.filter((alert) => alert.active || alert.alertType === "test_flakiness");
  if (checked.length === 0) return [];

  const summary = await runSummary(deps.db, run, project.defaultBranch);
  const testIds = new Map(summary.tests.flatMap((test) => (test.testId ? [[test.key, test.testId] as const] : [])));
  const now = deps.clock.now();
  const trips: RecordedTrip[] = [];

  await deps.db.transaction(async (tx) => {
    for (const alert of checked) {
      const check = deps.checks[alert.alertType];
      // The row lock serializes checks of one project; a missing row is created first.
      await tx
        .insert(alertCheckStates)
        .values({ projectId: project.id, alertType: alert.alertType, state: check.initialState(), detectorVersion: check.version, updatedAt: now })
        .onConflictDoNothing();
      const [stored] = await tx
        .select()
        .from(alertCheckStates)
        .where(and(eq(alertCheckStates.projectId, project.id), eq(alertCheckStates.alertType, alert.alertType)))
        .for("update");
      if (!stored || run.number <= stored.lastRunNumber) continue;

      // A state written by another detector version starts over rather than being misread.
      const state = stored.detectorVersion === check.version ? stored.state : check.initialState();
      const { state: next, events } = check.update(state, summary);
      await tx
        .update(alertCheckStates)
        .set({
          state: next,
          detectorVersion: check.version,
          lastRunNumber: run.number,
          runsChecked: sql`${alertCheckStates.runsChecked} + 1`,
          updatedAt: now,
        })
        .where(and(eq(alertCheckStates.projectId, project.id), eq(alertCheckStates.alertType, alert.alertType)));
      if (events.length === 0) continue;

      const named = alert.alertType === "test_flakiness" ? events.map((event) => withTestId(event.metadata, testIds)) : events.map((event) => event.metadata);
      if (alert.alertType === "test_flakiness") {
        const flagged = named.flatMap((metadata) =>
          typeof metadata.test_id === "string" ? [{ testId: metadata.test_id, reason: `the flakiness check flagged it (${String(metadata.rule ?? "evidence")})` }] : [],
        );
        await markTestsFlaky(tx, { id: run.id, projectId: project.id, createdAt: run.createdAt }, flagged);
      }
      if (!alert.active) continue;
      const kept = named.slice(0, MAX_EVENTS_PER_CHECK).map((metadata) => boundedMetadata(metadata));
      if (events.length > MAX_EVENTS_PER_CHECK) kept[kept.length - 1] = { ...kept.at(-1), more_trips_in_run: events.length - MAX_EVENTS_PER_CHECK };
      const inserted = await tx
        .insert(alertEvents)
        .values(kept.map((metadata) => ({ alertId: alert.id, testRunId: run.id, metadata, triggeredAt: now })))
        .returning({ id: alertEvents.id });
      await tx
        .update(alerts)
        .set({ eventsCount: sql`${alerts.eventsCount} + ${inserted.length}` })
        .where(eq(alerts.id, alert.id));
      const snoozed = isSnoozed(alert.snoozedUntil, now);
      for (const { id } of inserted) trips.push({ alertId: alert.id, alertType: alert.alertType, eventId: id, snoozed });
    }
  });
  if (trips.length > 0) deps.logger.info("alert checks tripped", { testRunId: run.id, trips: trips.length });
  return trips;
}
