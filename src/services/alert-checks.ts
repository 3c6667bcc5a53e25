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
import { type SQL, sql } from "drizzle-orm";
import type { Logger } from "../lib/logger";
import type { CheckRegistry, RunSummary } from "../checks/types";
import { alertCheckStates, alertEvents, alerts, projects, testCases, testSuites, tests } from "../db/schema";
import type { CaseStatus } from "../lib/vocabulary";
import { rowFromJson, rowsOf } from "../db/rows";
import { transactionWithRetry } from "../db/transaction-retry";
import { inlined, lastStatement } from "../db/transaction-boundaries";
import type { Database } from "../db/types";
import type { Clock } from "../lib/clock";
import type { AlertType } from "../lib/vocabulary";
import { isSnoozed } from "./presenters";
import { isDefaultBranch } from "./default-branch";
import { markTestsFlaky, projectTestsLock } from "./tests-state";
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


/** A case of the run as the checks' read returns it (json_build_array, in the cases' order). */
type CaseJson = [testId: string, suite: string, classname: string | null, name: string, status: CaseStatus, attempts: { status: CaseStatus }[] | null, durationMs: number | null, quarantined: boolean];

/** A case without attempts: one shared empty list (the checks never change a test's attempts). */
const NO_ATTEMPTS = Object.freeze([]) as unknown as CaseStatus[];

/** The run as the checks see it: counts, metadata, and every final case with its attempts, keyed by its test's id. */
export function runSummary(run: TestRunRow, defaultBranch: string | null, cases: readonly CaseJson[]): RunSummary {
  // A large run's summary is held through all four checks: its tests share one copy of each
  // suite name, class name and status instead of one per test.
  const strings = new Map<string, string>();
  const shared = <T extends string | null>(value: T): T => {
    if (value === null) return value;
    const known = strings.get(value);
    if (known !== undefined) return known as T;
    strings.set(value, value);
    return value;
  };
  return {
    runId: run.id,
    number: run.number,
    branch: run.branch,
    commitSha: run.commitSha,
    createdAt: run.createdAt,
    durationMs: run.durationMs,
    onDefaultBranch: isDefaultBranch(run.branch, defaultBranch),
    counts: { tests: run.testsCount, passed: run.passedCount, failed: run.failedCount, errored: run.erroredCount, skipped: run.skippedCount },
    tests: cases.map(([testId, suite, classname, name, status, attempts, durationMs, quarantined]) => ({
      key: testId,
      suite: shared(suite),
      classname: shared(classname),
      name,
      status: shared(status),
      attempts: attempts?.length ? attempts.map((attempt) => shared(attempt.status)) : NO_ATTEMPTS,
      durationMs,
      ...(quarantined ? { quarantined: true } : {}),
    })),
  };
}

const parsedJson = <T>(value: unknown, empty: T): T => (value === null || value === undefined ? empty : typeof value === "string" ? (JSON.parse(value) as T) : (value as T));

type ChecksRead = {
  project: { id: string; defaultBranch: string | null } | null;
  /** The alerts whose checks run (active ones, and test_flakiness always), each with its state row, locked. */
  checked: { alert: typeof alerts.$inferSelect; stored: typeof alertCheckStates.$inferSelect }[];
  cases: CaseJson[];
  /** The checks' entries of the run's tests (tests.check_state), and their owners (for events that name them), by test id. */
  entries: Map<string, Record<string, unknown>>;
  owners: Map<string, string[]>;
};

/**
 * Everything the checks read, as the transaction's first statement (one round trip on the
 * Worker): the project's tests lock (lockProjectTests), then, behind it, each checked alert's
 * state row, created if missing and locked (an upsert, which locks and returns the row's latest
 * version, a concurrent transaction's too: the lock serializes checks of one project), the run's
 * cases, and its tests' entries, locked (FOR UPDATE reads their latest version, so what the lock's
 * previous holder wrote is seen although this statement's snapshot was taken before the lock).
 */
async function readForChecks(tx: Database, deps: Pick<AlertChecksDeps, "checks">, run: TestRunRow, now: Date): Promise<ChecksRead> {
  const initial = JSON.stringify(Object.entries(deps.checks).map(([type, check]) => ({ t: type, s: check.initialState(), v: check.version })));
  // Inlined (no parameters): the transaction's BEGIN goes in the same message (src/db/transaction-boundaries.ts).
  const [row] = await rowsOf<{ project: unknown; checked: unknown; cases: unknown; entries: unknown }>(
    tx.execute(inlined(sql`
      with locked as (select ${projectTestsLock(sql`${run.projectId}`)} is null as l),
      project as (select id, default_branch from ${projects} where id = ${run.projectId}::uuid),
      checked as (select * from ${alerts} a where a.project_id = ${run.projectId}::uuid and (a.active or a.alert_type = 'test_flakiness')),
      states as (
        insert into ${alertCheckStates} as s (project_id, alert_type, state, detector_version, updated_at)
        select c.project_id, c.alert_type, i.s, i.v, ${now.toISOString()}::timestamptz
        from checked c join json_to_recordset(${initial}::json) as i(t text, s jsonb, v text) on i.t = c.alert_type::text, locked
        on conflict (project_id, alert_type) do update set project_id = s.project_id
        returning s.*),
      cases as (
        select c.id, c.test_id, su.name as suite, c.classname, c.name, c.status, c.attempts, c.duration_ms, c.quarantined
        from ${testCases} c join ${testSuites} su on su.test_run_id = c.test_run_id and su.number = c.suite_number
        where c.test_run_id = ${run.id}),
      entries as (
        select t.id, t.check_state, t.owners from ${tests} t
        where t.id in (select test_id from cases) and (select l from locked) is not null
        for update of t)
      select (select row_to_json(p) from project p) as project,
        (select json_agg(json_build_object('alert', row_to_json(c), 'stored', row_to_json(s)) order by c.alert_type) from checked c join states s on s.alert_type = c.alert_type) as checked,
        (select json_agg(json_build_array(c.test_id, c.suite, c.classname, c.name, c.status, c.attempts, c.duration_ms, c.quarantined) order by c.id) from cases c) as cases,
        (select json_agg(json_build_array(e.id, e.check_state, e.owners)) from entries e) as entries`)),
  );
  const project = parsedJson<{ id: string; default_branch: string | null } | null>(row?.project, null);
  const checked = parsedJson<{ alert: Record<string, unknown>; stored: Record<string, unknown> }[]>(row?.checked, []);
  const entries = parsedJson<[string, Record<string, unknown> | string, string[]][]>(row?.entries, []);
  return {
    project: project ? { id: project.id, defaultBranch: project.default_branch } : null,
    checked: checked.map((pair) => ({ alert: rowFromJson(alerts, pair.alert), stored: rowFromJson(alertCheckStates, pair.stored) })),
    cases: parsedJson<CaseJson[]>(row?.cases, []),
    entries: new Map(entries.map(([id, state]) => [id, typeof state === "string" ? (JSON.parse(state) as Record<string, unknown>) : state])),
    owners: new Map(entries.map(([id, , owners]) => [id, owners])),
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

/**
 * The checks of one run, as one transaction of two statements besides BEGIN and COMMIT (round
 * trips on the Worker): everything read at once (readForChecks), then, after the checks ran in
 * memory, every write at once (writeChecks). Only a run whose flakiness check flags tests adds
 * statements (markTestsFlaky and what follows the health changes), as does a legacy state's
 * conversion (legacyRekey).
 */
export async function runAlertChecks(deps: AlertChecksDeps, run: TestRunRow): Promise<RecordedTrip[]> {
  const now = deps.clock.now();
  const trips: RecordedTrip[] = [];
  const versions = new Set(Object.values(deps.checks).map((check) => check.version));

  await transactionWithRetry(deps.db, async (tx) => {
    // A retried attempt starts over: the trips of an attempt rolled back were never recorded.
    trips.length = 0;
    // The flakiness check also feeds the tests' health, which disabling its alert does not stop:
    // it is checked for a disabled alert too (readForChecks), and only its events are left out.
    const read = await readForChecks(tx, deps, run, now);
    const { project } = read;
    if (!project) return;
    const due: CheckedAlert[] = read.checked
      .filter(({ stored }) => run.number > stored.lastRunNumber)
      .map(({ alert, stored }) => ({ alert, check: deps.checks[alert.alertType], stored }));
    if (due.length === 0) return;

    const summary = runSummary(run, project.defaultBranch, read.cases);
    // The summary holds what the checks need of the cases: the rows as read are let go now, not after the checks.
    read.cases.length = 0;
    const runTests = new Set(summary.tests.map((test) => test.key));
    const quarantinedTests = new Set(summary.tests.filter((test) => test.quarantined).map((test) => test.key));
    const { entries: stored, owners } = read;
    /** Entries to write: the run's tests (their whole check_state) and, once, tests of a converted legacy state. */
    const written = new Map<string, Record<string, unknown>>();
    const converted = new Map<string, Record<string, unknown>>();
    const states: StateWrite[] = [];
    const events: EventWrite[] = [];
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
      const { state: next, tests: changed, events: tripped } = check.update(state, entries, summary);
      for (const [key, entry] of changed) written.set(key, { ...written.get(key), [check.version]: entry });
      states.push({ t: alert.alertType, s: next, v: check.version });
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
      if (tripped.length === 0) continue;

      const named = tripped.map((event) => withTestId(event.metadata, runTests, owners));
      if (!alert.active) continue;
      // A quarantined test's flakiness is known already: its health still follows the check (above),
      // but no event is recorded (nor notified) for it while it is quarantined.
      const recorded = alert.alertType === "test_flakiness" ? named.filter((metadata) => !(typeof metadata.test_id === "string" && quarantinedTests.has(metadata.test_id))) : named;
      if (recorded.length === 0) continue;
      const kept = recorded.slice(0, MAX_EVENTS_PER_CHECK).map((metadata) => boundedMetadata(metadata));
      if (recorded.length > MAX_EVENTS_PER_CHECK) kept[kept.length - 1] = { ...kept.at(-1), more_trips_in_run: recorded.length - MAX_EVENTS_PER_CHECK };
      for (const metadata of kept) events.push({ a: alert.id, m: metadata });
    }
    const inserted = await writeChecks(tx, { project: project.id, run, now }, states, events, entryWrites(stored, written, converted, versions));
    const byId = new Map(due.map(({ alert }) => [alert.id, alert]));
    for (const { id, alertId } of inserted) {
      const alert = byId.get(alertId)!;
      trips.push({ alertId, alertType: alert.alertType, eventId: id, snoozed: isSnoozed(alert.snoozedUntil, now) });
    }
  });
  if (trips.length > 0) deps.logger.info("alert checks tripped", { testRunId: run.id, trips: trips.length });
  return trips;
}

/** A check's new state, for its alert type's row. */
type StateWrite = { t: AlertType; s: unknown; v: string };
/** An event to record, with its alert. */
type EventWrite = { a: string; m: Record<string, unknown> };

/**
 * The checks' entries to store: a run's test gets its whole check_state rewritten (entries of
 * detector versions no check has any more are dropped); a test outside the run that a converted
 * legacy state holds an entry for gets it merged in. Changed rows only.
 */
function entryWrites(
  stored: Map<string, Record<string, unknown>>,
  written: Map<string, Record<string, unknown>>,
  converted: Map<string, Record<string, unknown>>,
  versions: ReadonlySet<string>,
): { replaced: { id: string; s: Record<string, unknown> }[]; merged: { id: string; s: Record<string, unknown> }[] } {
  const replaced = [...written].map(([id, entries]) => {
    const kept: Record<string, unknown> = {};
    for (const [version, entry] of Object.entries(stored.get(id) ?? {})) if (versions.has(version)) kept[version] = entry;
    return { id, s: { ...kept, ...entries } };
  });
  return { replaced, merged: [...converted].map(([id, entries]) => ({ id, s: entries })) };
}

/**
 * Every write of the checks as one statement: the checked alerts' states (each one run further),
 * the events and their alerts' counts, the tests' entries (the run's tests and those of a
 * converted legacy state are different rows). Returns the events' ids, in the order recorded.
 */
async function writeChecks(
  tx: Database,
  at: { project: string; run: TestRunRow; now: Date },
  states: StateWrite[],
  events: EventWrite[],
  entries: ReturnType<typeof entryWrites>,
): Promise<{ id: number; alertId: string }[]> {
  const now = sql`${at.now.toISOString()}::timestamptz`;
  const ctes: SQL[] = [
    sql`states_w as (
      update ${alertCheckStates} s set state = y.s, detector_version = y.v, last_run_number = ${at.run.number}, runs_checked = s.runs_checked + 1, updated_at = ${now}
      from json_to_recordset(${JSON.stringify(states)}::json) as y(t text, s jsonb, v text)
      where s.project_id = ${at.project}::uuid and s.alert_type::text = y.t)`,
  ];
  if (events.length > 0) {
    const counts = new Map<string, number>();
    for (const event of events) counts.set(event.a, (counts.get(event.a) ?? 0) + 1);
    ctes.push(
      sql`events_w as (
        insert into ${alertEvents} (alert_id, test_run_id, metadata, triggered_at)
        select y.a, ${at.run.id}, y.m, ${now} from json_to_recordset(${JSON.stringify(events.map((event, i) => ({ ...event, i })))}::json) as y(a uuid, m jsonb, i int) order by y.i
        returning id, alert_id)`,
      sql`alerts_w as (
        update ${alerts} a set events_count = a.events_count + y.n
        from json_to_recordset(${JSON.stringify([...counts].map(([id, n]) => ({ id, n })))}::json) as y(id uuid, n int) where a.id = y.id)`,
    );
  }
  if (entries.replaced.length > 0) {
    ctes.push(sql`entries_w as (
      update ${tests} t set check_state = y.s
      from json_to_recordset(${JSON.stringify(entries.replaced)}::json) as y(id uuid, s jsonb)
      where t.id = y.id)`);
  }
  if (entries.merged.length > 0) {
    ctes.push(sql`converted_w as (
      update ${tests} t set check_state = t.check_state || y.s
      from json_to_recordset(${JSON.stringify(entries.merged)}::json) as y(id uuid, s jsonb)
      where t.id = y.id)`);
  }
  // The transaction's last statement: COMMIT goes with it (src/db/transaction-boundaries.ts).
  const [row] = await rowsOf<{ events: unknown }>(
    tx.execute(
      lastStatement(
        tx,
        sql`with ${sql.join(ctes, sql`, `)}
      select ${events.length > 0 ? sql`(select json_agg(json_build_array(e.id, e.alert_id) order by e.id) from events_w e)` : sql`null::json`} as events`,
      ),
    ),
  );
  return parsedJson<[number, string][]>(row?.events, []).map(([id, alertId]) => ({ id: Number(id), alertId }));
}
