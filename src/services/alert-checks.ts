/**
 * Runs the alert checks on a processed run (the `afterRunProcessed` seam of run processing).
 *
 * For each of the project's four alerts: a disabled alert is not checked at all (no state
 * update, no events; its history stays), except `test_flakiness`, whose check also feeds the
 * tests' health: it runs while disabled and records no events. Quarantined tests (docs/quarantine.md):
 * `test_flakiness` records no events for them (their health still follows it), and
 * `failure_rate_spike` leaves their failures out of its failing count (RunTest.quarantined). An active alert's check — snoozed or not — reads its
 * state, takes the run, and in one transaction saves the new state and records one event per
 * trip (counting them in `events_count`). Snoozing only suppresses notifications.
 *
 * Runs feed the checks in number order: a run processed after a newer one (a retry, a slow
 * upload) is not fed in, so windows never rewind (docs/alert-checks.md#shared-rules).
 */
import { and, asc, eq, sql } from "drizzle-orm";
import type { Logger } from "../lib/logger";
import type { CheckRegistry, RunSummary } from "../checks/types";
import { alertCheckStates, alertEvents, alerts, projects, testCases, testSuites, tests } from "../db/schema";
import { rowsOf } from "../db/rows";
import { transactionWithRetry } from "../db/transaction-retry";
import type { Database } from "../db/types";
import type { Clock } from "../lib/clock";
import type { AlertType } from "../lib/vocabulary";
import { isSnoozed } from "./presenters";
import { isDefaultBranch } from "./default-branch";
import { lockProjectTests, markTestsFlaky } from "./tests-state";
import { followHealthChanges } from "./quarantine";
import { type FlakinessTestState, flaggedInRun } from "../checks/flakiness";
import type { TestRunRow } from "./test-runs";

/** Events recorded per check and run at most; a check that trips more is summarised in the last one. */
const MAX_EVENTS_PER_CHECK = 50;
/** Metadata is uploaded test output turned into JSON data: bounded so one event stays small. */
const MAX_METADATA_BYTES = 16 * 1024;

export type AlertChecksDeps = { db: Database; clock: Clock; logger: Logger; checks: CheckRegistry; webAppUrl: string };

/** A recorded trip, for notification delivery after the transaction commits. */
export type RecordedTrip = { alertId: string; alertType: AlertType; eventId: number; snoozed: boolean };


/** The run as the checks see it: counts, metadata, and every final case with its attempts, keyed by its test's id. */
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
      quarantined: testCases.quarantined,
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
      key: row.testId,
      suite: row.suite,
      classname: row.classname,
      name: row.name,
      status: row.status,
      attempts: row.attempts.map((attempt) => attempt.status),
      durationMs: row.durationMs,
      ...(row.quarantined ? { quarantined: true } : {}),
    })),
  };
}

/** The checks' entries of the run's tests (tests.check_state), and their owners (for events that name them), by test id. */
async function storedEntries(tx: Database, runId: number): Promise<{ entries: Map<string, Record<string, unknown>>; owners: Map<string, string[]> }> {
  const rows = await rowsOf<{ id: string; check_state: Record<string, unknown> | string; owners: string[] }>(
    tx.execute(sql`select t.id, t.check_state, t.owners from ${tests} t where t.id in (select c.test_id from ${testCases} c where c.test_run_id = ${runId})`),
  );
  return {
    entries: new Map(rows.map((row) => [row.id, typeof row.check_state === "string" ? (JSON.parse(row.check_state) as Record<string, unknown>) : row.check_state])),
    owners: new Map(rows.map((row) => [row.id, row.owners])),
  };
}

/**
 * For states stored before per-test entries lived in the tests' rows: maps a check's old key
 * (suite, classname and name, whitespace-normalised) to the project's test with that classname
 * and name, the most recently executed one when several match (the old key knew no file).
 */
async function legacyRekey(tx: Database, projectId: string): Promise<(oldKey: string) => string | null> {
  const rows = await rowsOf<{ id: string; classname: string | null; name: string }>(
    tx.execute(sql`select id, classname, name from ${tests} where project_id = ${projectId} order by last_executed_at desc nulls last, id`),
  );
  const norm = (value: string | null) => (value ?? "").replace(/\s+/g, " ").trim();
  const byName = new Map<string, string>();
  for (const row of rows) {
    const key = `${norm(row.classname)}\u001f${norm(row.name)}`;
    if (!byName.has(key)) byName.set(key, row.id);
  }
  return (oldKey) => {
    const parts = oldKey.split("\u001f");
    return parts.length === 3 ? (byName.get(`${parts[1]}\u001f${parts[2]}`) ?? null) : null;
  };
}

/**
 * An event that names a test of the run names it as the API knows it too: `test_id` beside the
 * check's `test_key`, and the test's `owners` from CODEOWNERS (docs/codeowners.md), as they are
 * when the event is recorded.
 */
function withTestId(metadata: Record<string, unknown>, runTests: ReadonlySet<string>, owners: ReadonlyMap<string, string[]>): Record<string, unknown> {
  const key = metadata.test_key;
  return typeof key === "string" && runTests.has(key) ? { ...metadata, test_id: key, owners: owners.get(key) ?? [] } : metadata;
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

type CheckedAlert = { alert: typeof alerts.$inferSelect; check: CheckRegistry[AlertType]; stored: typeof alertCheckStates.$inferSelect };

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

  const now = deps.clock.now();
  const trips: RecordedTrip[] = [];
  const versions = new Set(Object.values(deps.checks).map((check) => check.version));

  await transactionWithRetry(deps.db, async (tx) => {
    // A retried attempt starts over: the trips of an attempt rolled back were never recorded.
    trips.length = 0;
    // The tests' rows are written by run processing too: one writer per project at a time.
    await lockProjectTests(tx, project.id);
    const due: CheckedAlert[] = [];
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
      if (stored && run.number > stored.lastRunNumber) due.push({ alert, check, stored });
    }
    if (due.length === 0) return;

    const summary = await runSummary(tx, run, project.defaultBranch);
    const runTests = new Set(summary.tests.map((test) => test.key));
    const quarantinedTests = new Set(summary.tests.filter((test) => test.quarantined).map((test) => test.key));
    const { entries: stored, owners } = await storedEntries(tx, run.id);
    /** Entries to write: the run's tests (their whole check_state) and, once, tests of a converted legacy state. */
    const written = new Map<string, Record<string, unknown>>();
    const converted = new Map<string, Record<string, unknown>>();
    let rekey: ((oldKey: string) => string | null) | null = null;

    for (const { alert, check, stored: row } of due) {
      // A state written by another detector version starts over rather than being misread.
      let state: unknown = row.detectorVersion === check.version ? row.state : check.initialState();
      let entries = new Map<string, unknown>();
      for (const key of runTests) {
        const entry = stored.get(key)?.[check.version];
        if (entry !== undefined) entries.set(key, entry);
      }
      if (row.detectorVersion === check.version && check.fromLegacy?.(state, () => null)) {
        rekey ??= await legacyRekey(tx, project.id);
        const legacy = check.fromLegacy(state, rekey);
        if (legacy) {
          state = legacy.state;
          entries = legacy.tests;
          // Every converted entry is stored: the run's tests' with the run's writes (below).
          for (const [key, entry] of legacy.tests) {
            const target = runTests.has(key) ? written : converted;
            target.set(key, { ...target.get(key), [check.version]: entry });
          }
        }
      }
      const { state: next, tests: changed, events } = check.update(state, entries, summary);
      for (const [key, entry] of changed) written.set(key, { ...written.get(key), [check.version]: entry });
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
      if (alert.alertType === "test_flakiness") {
        // Every test the check flagged at this run is flaky at this run, those past its 50 events too.
        const flagged = flaggedInRun(changed as Map<string, FlakinessTestState>, run.number).flatMap(({ key, rule }) =>
          runTests.has(key) ? [{ testId: key, reason: `the flakiness check flagged it (${rule})` }] : [],
        );
        const changes = await markTestsFlaky(tx, { id: run.id, projectId: project.id, createdAt: run.createdAt }, flagged);
        // Auto-quarantine and the webhooks of the changes, in this transaction. The events below are
        // still filtered by the cases' quarantine as the run was processed (summary), so a test this
        // run quarantines keeps its event of this run.
        await followHealthChanges(tx, deps, { id: run.id, number: run.number, projectId: project.id, processedAt: run.processedAt ?? now }, changes);
      }
      if (events.length === 0) continue;

      const named = events.map((event) => withTestId(event.metadata, runTests, owners));
      if (!alert.active) continue;
      // A quarantined test's flakiness is known already: its health still follows the check (above),
      // but no event is recorded (nor notified) for it while it is quarantined.
      const recorded = alert.alertType === "test_flakiness" ? named.filter((metadata) => !(typeof metadata.test_id === "string" && quarantinedTests.has(metadata.test_id))) : named;
      if (recorded.length === 0) continue;
      const kept = recorded.slice(0, MAX_EVENTS_PER_CHECK).map((metadata) => boundedMetadata(metadata));
      if (recorded.length > MAX_EVENTS_PER_CHECK) kept[kept.length - 1] = { ...kept.at(-1), more_trips_in_run: recorded.length - MAX_EVENTS_PER_CHECK };
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
    await writeEntries(tx, stored, written, converted, versions);
  });
  if (trips.length > 0) deps.logger.info("alert checks tripped", { testRunId: run.id, trips: trips.length });
  return trips;
}

/**
 * Stores the checks' entries: a run's test gets its whole check_state rewritten (entries of
 * detector versions no check has any more are dropped); a test outside the run that a converted
 * legacy state holds an entry for gets it merged in. One statement each, of the changed rows only.
 */
async function writeEntries(
  tx: Database,
  stored: Map<string, Record<string, unknown>>,
  written: Map<string, Record<string, unknown>>,
  converted: Map<string, Record<string, unknown>>,
  versions: ReadonlySet<string>,
): Promise<void> {
  if (written.size > 0) {
    const rows = [...written].map(([id, entries]) => {
      const kept: Record<string, unknown> = {};
      for (const [version, entry] of Object.entries(stored.get(id) ?? {})) if (versions.has(version)) kept[version] = entry;
      return { id, s: { ...kept, ...entries } };
    });
    await tx.execute(sql`
      update ${tests} t set check_state = y.s
      from json_to_recordset(${JSON.stringify(rows)}::json) as y(id uuid, s jsonb)
      where t.id = y.id`);
  }
  if (converted.size > 0) {
    const rows = [...converted].map(([id, entries]) => ({ id, s: entries }));
    await tx.execute(sql`
      update ${tests} t set check_state = t.check_state || y.s
      from json_to_recordset(${JSON.stringify(rows)}::json) as y(id uuid, s jsonb)
      where t.id = y.id`);
  }
}
