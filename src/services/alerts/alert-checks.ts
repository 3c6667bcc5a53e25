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
import type { Logger } from "../../lib/logger";
import type { CheckEvent, CheckPass, CheckRegistry, RunHeader, RunTest } from "../../checks/types";
import { alertCheckStates, alertEvents, alerts, projects, testCases, testSuites, tests } from "../../db/schema";
import type { CaseStatus } from "../../lib/vocabulary";
import { rowFromJson, rowsOf } from "../../db/rows";
import { transactionWithRetry } from "../../db/transaction-retry";
import { inlined, lastStatement } from "../../db/transaction-boundaries";
import type { Database } from "../../db/types";
import type { Clock } from "../../lib/clock";
import { isUuid } from "../../lib/ids";
import type { AlertType } from "../../lib/vocabulary";
import { isSnoozed } from "../../contract/presenters";
import { isDefaultBranch } from "../tests/default-branch";
import { markTestsFlaky, projectTestsLock } from "../tests/tests-state";
import { followHealthChanges } from "../tests/quarantine";
import { type FlakinessTestState, flaggedInRun } from "../../checks/flakiness";
import type { TestRunRow } from "../runs/test-runs";

/** Events recorded per check and run at most; a check that trips more is summarised in the last one. */
const MAX_EVENTS_PER_CHECK = 50;
/** Metadata is uploaded test output turned into JSON data: bounded so one event stays small. */
const MAX_METADATA_BYTES = 16 * 1024;

export type AlertChecksDeps = { db: Database; clock: Clock; logger: Logger; checks: CheckRegistry; webAppUrl: string };

/** A recorded trip, for notification delivery after the transaction commits. */
export type RecordedTrip = { alertId: string; alertType: AlertType; eventId: number; snoozed: boolean };

/** A case of the run as the checks read it (json_build_array, in key order, then the cases' order). */
type CaseJson = [
  testId: string,
  suite: string,
  classname: string | null,
  name: string,
  status: CaseStatus,
  attempts: { status: CaseStatus }[] | null,
  durationMs: number | null,
  quarantined: boolean,
];

/** A case without attempts: one shared empty list (the checks never change a test's attempts). */
const NO_ATTEMPTS = Object.freeze([]) as unknown as CaseStatus[];

/**
 * A run with more cases than this is checked in chunks of about as many cases, read through a
 * cursor (CheckPass in src/checks/types.ts): the checks then hold one chunk of the run at a time.
 * A smaller run is read with everything else in the transaction's first statement.
 */
const CHECK_CHUNK_CASES = 2_000;

/**
 * Tests marked flaky, and their health changes followed, per batch: every realistic run is one
 * batch (one quarantine version, one set of webhooks); one flagging more keeps each statement's
 * parameters bounded.
 */
const MARK_FLAKY_BATCH = 2_000;

/** The run as the checks see it before its tests. */
function runHeaderOf(run: TestRunRow, defaultBranch: string | null): RunHeader {
  return {
    runId: run.id,
    number: run.number,
    branch: run.branch,
    commitSha: run.commitSha,
    createdAt: run.createdAt,
    durationMs: run.durationMs,
    onDefaultBranch: isDefaultBranch(run.branch, defaultBranch),
    counts: {
      tests: run.testsCount,
      passed: run.passedCount,
      failed: run.failedCount,
      errored: run.erroredCount,
      skipped: run.skippedCount,
    },
  };
}

/** Cases as the checks take them: keyed by their test's id; the cases of a chunk share one copy of each suite name, class name and status. */
function runTestsOf(cases: readonly CaseJson[]): RunTest[] {
  const strings = new Map<string, string>();
  const shared = <T extends string | null>(value: T): T => {
    if (value === null) return value;
    const known = strings.get(value);
    if (known !== undefined) return known as T;
    strings.set(value, value);
    return value;
  };
  return cases.map(([testId, suite, classname, name, status, attempts, durationMs, quarantined]) => ({
    key: testId,
    suite: shared(suite),
    classname: shared(classname),
    name,
    status: shared(status),
    attempts: attempts?.length ? attempts.map((attempt) => shared(attempt.status)) : NO_ATTEMPTS,
    durationMs,
    ...(quarantined ? { quarantined: true } : {}),
  }));
}

const parsedJson = <T>(value: unknown, empty: T): T =>
  value === null || value === undefined ? empty : typeof value === "string" ? (JSON.parse(value) as T) : (value as T);

/** The checks' entries of a test (tests.check_state: one entry per detector version). */
type CheckState = Record<string, unknown>;

type ChecksRead = {
  project: { id: string; defaultBranch: string | null } | null;
  /** The alerts whose checks run (active ones, and test_flakiness always), each with its state row, locked. */
  checked: { alert: typeof alerts.$inferSelect; stored: typeof alertCheckStates.$inferSelect }[];
  /** A small run's cases (none for a large run, whose cases are read in chunks). */
  cases: CaseJson[];
  /** A small run's tests' entries (tests.check_state) and owners (for events that name them), by test id. */
  entries: Map<string, CheckState>;
  owners: Map<string, string[]>;
};

/**
 * Everything the checks read, as the transaction's first statement (one round trip on the
 * Worker): the project's tests lock (lockProjectTests), then, behind it, each checked alert's
 * state row, created if missing and locked (an upsert, which locks and returns the row's latest
 * version, a concurrent transaction's too: the lock serializes checks of one project), and the
 * run's tests, locked (FOR UPDATE reads their latest version, so what the lock's previous holder
 * wrote is seen although this statement's snapshot was taken before the lock). A small run's
 * cases and entries come with it; a large run's (`withTests` false) are read later in chunks.
 */
async function readForChecks(
  tx: Database,
  deps: Pick<AlertChecksDeps, "checks">,
  run: TestRunRow,
  now: Date,
  withTests: boolean,
): Promise<ChecksRead> {
  const initial = JSON.stringify(
    Object.entries(deps.checks).map(([type, check]) => ({ t: type, s: check.initialState(), v: check.version })),
  );
  // Inlined (no parameters): the transaction's BEGIN goes in the same message (src/db/transaction-boundaries.ts).
  const [row] = await rowsOf<{ project: unknown; checked: unknown; cases: unknown; entries: unknown }>(
    tx.execute(
      inlined(sql`
      with locked as (select ${projectTestsLock(sql`${run.projectId}`)} is null as l),
      project as (select id, default_branch from ${projects} where id = ${run.projectId}::uuid),
      checked as (select * from ${alerts} a where a.project_id = ${run.projectId}::uuid and (a.active or a.alert_type = 'test_flakiness')),
      states as (
        insert into ${alertCheckStates} as s (project_id, alert_type, variant, state, detector_version, updated_at)
        select c.project_id, c.alert_type, ${run.variant}::text, i.s, i.v, ${now.toISOString()}::timestamptz
        from checked c join json_to_recordset(${initial}::json) as i(t text, s jsonb, v text) on i.t = c.alert_type::text, locked
        on conflict (project_id, alert_type, variant) do update set project_id = s.project_id
        returning s.*),
      cases as (
        select c.id, c.test_id, su.name as suite, c.classname, c.name, c.status, c.attempts, c.duration_ms, c.quarantined
        from ${testCases} c join ${testSuites} su on su.test_run_id = c.test_run_id and su.number = c.suite_number
        where c.test_run_id = ${run.id}),
      entries as (
        select t.id, ${withTests ? sql`t.check_state, t.owners` : sql`null::jsonb as check_state, null::text[] as owners`} from ${tests} t
        where t.id in (select test_id from cases) and (select l from locked) is not null
        for update of t)
      select (select row_to_json(p) from project p) as project,
        (select json_agg(json_build_object('alert', row_to_json(c), 'stored', row_to_json(s)) order by c.alert_type) from checked c join states s on s.alert_type = c.alert_type) as checked,
        ${
          withTests
            ? sql`(select json_agg(json_build_array(c.test_id, c.suite, c.classname, c.name, c.status, c.attempts, c.duration_ms, c.quarantined) order by c.id) from cases c) as cases,
        (select json_agg(json_build_array(e.id, e.check_state, e.owners)) from entries e) as entries`
            : sql`null::json as cases, (select count(*) from entries) as entries`
        }`),
    ),
  );
  const project = parsedJson<{ id: string; default_branch: string | null } | null>(row?.project, null);
  const checked = parsedJson<{ alert: Record<string, unknown>; stored: Record<string, unknown> }[]>(row?.checked, []);
  const entries = withTests ? parsedJson<[string, CheckState | string, string[]][]>(row?.entries, []) : [];
  return {
    project: project ? { id: project.id, defaultBranch: project.default_branch } : null,
    checked: checked.map((pair) => ({ alert: rowFromJson(alerts, pair.alert), stored: rowFromJson(alertCheckStates, pair.stored) })),
    cases: withTests ? parsedJson<CaseJson[]>(row?.cases, []) : [],
    entries: new Map(entries.map(([id, state]) => [id, typeof state === "string" ? (JSON.parse(state) as CheckState) : state])),
    owners: new Map(entries.map(([id, , owners]) => [id, owners])),
  };
}

/** A chunk of the run's tests (every case of its tests) with its tests' entries. */
type Chunk = { tests: RunTest[]; entries: ReadonlyMap<string, CheckState> };

/** What an event that names a test of the run adds: the test's owners, and whether a case of it was quarantined as the run was processed. */
type NamedTest = { owners: string[]; quarantined: boolean };

/**
 * The run's tests as the checks go through them, twice (CheckPass), and where their new entries go.
 * A small run is one chunk held from the first read, its entries written with the checks' last
 * statement; a large run is read through a cursor, chunk by chunk, and each chunk's entries are
 * written before the next is read.
 */
type RunTestsSource = {
  each(visit: (chunk: Chunk) => Promise<void>): Promise<void>;
  /** The run's tests among `keys`, for the events that name them. */
  named(keys: readonly string[]): Promise<Map<string, NamedTest>>;
  /** Stores tests' new check_state values (whole values: the stored one with the chunk's changes). */
  write(rows: { id: string; s: CheckState }[]): Promise<void>;
  /** Values left for the checks' last statement. */
  pending: { id: string; s: CheckState }[];
};

function heldRunTests(read: ChecksRead): RunTestsSource {
  const chunk: Chunk = { tests: runTestsOf(read.cases), entries: read.entries };
  // The tests hold what the checks need of the cases: the rows as read are let go now.
  read.cases.length = 0;
  const pending: { id: string; s: CheckState }[] = [];
  return {
    async each(visit) {
      if (chunk.tests.length > 0) await visit(chunk);
    },
    async named(keys) {
      const wanted = new Set(keys);
      const named = new Map<string, NamedTest>();
      for (const test of chunk.tests) {
        if (!wanted.has(test.key)) continue;
        const known = named.get(test.key);
        if (known) known.quarantined ||= test.quarantined === true;
        else named.set(test.key, { owners: read.owners.get(test.key) ?? [], quarantined: test.quarantined === true });
      }
      return named;
    },
    async write(rows) {
      pending.push(...rows);
    },
    pending,
  };
}

/**
 * A large run's tests through a cursor, CHECK_CHUNK_CASES cases at a time in key order; a chunk
 * ends at the last whole test it holds (the rest of that test's cases open the next chunk), so the
 * checks see every case of a test together. The cursor is declared anew for each pass: the
 * entries it reads are those locked and unchanged since the first read (the first pass writes
 * nothing, and each test's entries are written in the second pass after its chunk was read).
 */
function cursorRunTests(tx: Database, run: TestRunRow, chunkCases: number): RunTestsSource {
  type Row = {
    test_id: string;
    suite: string;
    classname: string | null;
    name: string;
    status: CaseStatus;
    attempts: { status: CaseStatus }[] | string | null;
    duration_ms: number | null;
    quarantined: boolean;
    check_state: CheckState | string | null;
  };
  const chunkOf = (rows: Row[]): Chunk => {
    const entries = new Map<string, CheckState>();
    for (const row of rows)
      if (row.check_state !== null && !entries.has(row.test_id))
        entries.set(row.test_id, typeof row.check_state === "string" ? (JSON.parse(row.check_state) as CheckState) : row.check_state);
    const cases = rows.map((row): CaseJson => [
      row.test_id,
      row.suite,
      row.classname,
      row.name,
      row.status,
      typeof row.attempts === "string" ? (JSON.parse(row.attempts) as { status: CaseStatus }[]) : row.attempts,
      row.duration_ms === null ? null : Number(row.duration_ms),
      row.quarantined,
    ]);
    return { tests: runTestsOf(cases), entries };
  };
  return {
    async each(visit) {
      await tx.execute(sql`
        declare check_tests no scroll cursor for
        select c.test_id, su.name as suite, c.classname, c.name, c.status, c.attempts, c.duration_ms, c.quarantined, t.check_state
        from ${testCases} c join ${testSuites} su on su.test_run_id = c.test_run_id and su.number = c.suite_number left join ${tests} t on t.id = c.test_id
        where c.test_run_id = ${run.id}
        order by c.test_id, c.id`);
      let carried: Row[] = [];
      for (;;) {
        const rows = await rowsOf<Row>(tx.execute(sql.raw(`fetch ${chunkCases} from check_tests`)));
        const last = rows.length < chunkCases;
        let all = carried.length > 0 ? [...carried, ...rows] : rows;
        carried = [];
        if (!last) {
          // Hold back the last test's cases: more of them may follow.
          const lastKey = all[all.length - 1]!.test_id;
          let cut = all.length;
          while (cut > 0 && all[cut - 1]!.test_id === lastKey) cut--;
          // A test with more cases than a chunk stays whole, in a larger chunk.
          if (cut > 0) {
            carried = all.slice(cut);
            all = all.slice(0, cut);
          } else {
            carried = all;
            continue;
          }
        }
        if (all.length > 0) await visit(chunkOf(all));
        if (last) break;
      }
      await tx.execute(sql`close check_tests`);
    },
    async named(keys) {
      if (keys.length === 0) return new Map();
      const rows = await rowsOf<{ id: string; owners: string[]; quarantined: boolean }>(
        tx.execute(sql`
          select t.id, t.owners, bool_or(c.quarantined) as quarantined
          from ${testCases} c join ${tests} t on t.id = c.test_id
          where c.test_run_id = ${run.id} and c.test_id in (select k::uuid from json_array_elements_text(${JSON.stringify(keys)}::json) as k)
          group by t.id, t.owners`),
      );
      return new Map(rows.map((row) => [row.id, { owners: row.owners ?? [], quarantined: row.quarantined === true }]));
    },
    async write(rows) {
      if (rows.length > 0) await tx.execute(checkStatesUpdate(rows, "replace"));
    },
    pending: [],
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
function withTestId(metadata: Record<string, unknown>, named: ReadonlyMap<string, NamedTest>): Record<string, unknown> {
  const key = metadata.test_key;
  const test = typeof key === "string" ? named.get(key) : undefined;
  return test ? { ...metadata, test_id: key, owners: test.owners } : metadata;
}

/** The test ids events name (test_key), for RunTestsSource.named. */
function namedKeys(events: readonly CheckEvent[]): string[] {
  const keys = new Set<string>();
  for (const event of events)
    if (typeof event.metadata.test_key === "string" && isUuid(event.metadata.test_key)) keys.add(event.metadata.test_key);
  return [...keys];
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

export type AlertChecksOptions = {
  /** A run with more cases is checked in chunks through a cursor (default CHECK_CHUNK_CASES); tests set it to check small runs that way. */
  largeAbove?: number;
  /** Cases per chunk of a large run (default CHECK_CHUNK_CASES). */
  chunkCases?: number;
};

/**
 * The checks of one run, as one transaction. A small run (at most CHECK_CHUNK_CASES cases) is two
 * statements besides BEGIN and COMMIT (round trips on the Worker): everything read at once
 * (readForChecks), then, after the checks ran in memory, every write at once (writeChecks). A
 * larger run is read twice through a cursor, chunk by chunk (CheckPass: the checks first gather
 * what their decisions need, then write each chunk's entries), so that checking it holds one chunk
 * at a time. Only a run whose flakiness check flags tests adds statements (markTestsFlaky and what
 * follows the health changes), as does a legacy state's conversion (legacyRekey).
 */
export async function runAlertChecks(deps: AlertChecksDeps, run: TestRunRow, options: AlertChecksOptions = {}): Promise<RecordedTrip[]> {
  const now = deps.clock.now();
  const trips: RecordedTrip[] = [];
  const versions = new Set(Object.values(deps.checks).map((check) => check.version));
  const large = run.testsCount > (options.largeAbove ?? CHECK_CHUNK_CASES);

  await transactionWithRetry(deps.db, async (tx) => {
    // A retried attempt starts over: the trips of an attempt rolled back were never recorded.
    trips.length = 0;
    // The flakiness check also feeds the tests' health, which disabling its alert does not stop:
    // it is checked for a disabled alert too (readForChecks), and only its events are left out.
    const read = await readForChecks(tx, deps, run, now, !large);
    const { project } = read;
    if (!project) return;
    const due: CheckedAlert[] = read.checked
      .filter(({ stored }) => run.number > stored.lastRunNumber)
      .map(({ alert, stored }) => ({ alert, check: deps.checks[alert.alertType], stored }));
    if (due.length === 0) return;

    const passes = await startPasses(tx, project.id, due, runHeaderOf(run, project.defaultBranch), read);
    const source = large ? cursorRunTests(tx, run, Math.max(1, Math.floor(options.chunkCases ?? CHECK_CHUNK_CASES))) : heldRunTests(read);
    const flagged = await checkRunTests(source, passes, run, versions);
    // Auto-quarantine and the webhooks of the changes follow, in this transaction. The events below
    // are still filtered by the cases' quarantine as the run was processed, so a test this run
    // quarantines keeps its event of this run.
    await markFlagged(tx, deps, run, project.id, flagged, now);

    const { states, events } = await finishPasses(passes, source, run.variant);
    const inserted = await writeChecks(tx, { project: project.id, run, now }, states, events, source.pending);
    const byId = new Map(due.map(({ alert }) => [alert.id, alert]));
    for (const { id, alertId } of inserted) {
      const alert = byId.get(alertId)!;
      trips.push({ alertId, alertType: alert.alertType, eventId: id, snoozed: isSnoozed(alert.snoozedUntil, now) });
    }
  });
  if (trips.length > 0) deps.logger.info("alert checks tripped", { testRunId: run.id, trips: trips.length });
  return trips;
}

/** A due alert's check going through the run (CheckPass). */
type AlertPass = { alert: CheckedAlert["alert"]; check: CheckedAlert["check"]; pass: CheckPass<unknown, unknown> };

/**
 * Starts each due check's pass from its stored state. A state written by another detector version
 * starts over rather than being misread. A legacy state (every test's entry in one document) is
 * converted: its entries are stored in the tests' rows first, so the run's chunks read them like
 * any other entry (and a small run's entries, already read, get them too).
 */
async function startPasses(
  tx: Database,
  projectId: string,
  due: CheckedAlert[],
  header: RunHeader,
  read: ChecksRead,
): Promise<AlertPass[]> {
  const converted = new Map<string, CheckState>();
  let rekey: ((oldKey: string) => string | null) | null = null;
  const passes: AlertPass[] = [];
  for (const { alert, check, stored: row } of due) {
    let state: unknown = row.detectorVersion === check.version ? row.state : check.initialState();
    if (row.detectorVersion === check.version && check.fromLegacy?.(state, () => null)) {
      rekey ??= await legacyRekey(tx, projectId);
      const legacy = check.fromLegacy(state, rekey);
      if (legacy) {
        state = legacy.state;
        for (const [key, entry] of legacy.tests) converted.set(key, { ...converted.get(key), [check.version]: entry });
      }
    }
    passes.push({ alert, check, pass: check.start(state, header) });
  }
  if (converted.size > 0) {
    await tx.execute(
      checkStatesUpdate(
        [...converted].map(([id, s]) => ({ id, s })),
        "merge",
      ),
    );
    for (const [id, entries] of converted) if (read.entries.has(id)) read.entries.set(id, { ...read.entries.get(id), ...entries });
  }
  return passes;
}

/** A chunk's entries of one check (by its detector version). */
function entriesOf(chunk: Chunk, version: string): Map<string, unknown> {
  const entries = new Map<string, unknown>();
  for (const [id, state] of chunk.entries) if (state[version] !== undefined) entries.set(id, state[version]);
  return entries;
}

/**
 * The checks' two passes over the run's tests: the first gathers what each check's decision
 * needs, the second writes each chunk's new entries before the next chunk is read (a large run).
 * Returns the tests the flakiness check flags at this run.
 */
async function checkRunTests(
  source: RunTestsSource,
  passes: AlertPass[],
  run: TestRunRow,
  versions: ReadonlySet<string>,
): Promise<{ testId: string; reason: string }[]> {
  // First pass: what each check's decision needs.
  await source.each(async (chunk) => {
    for (const { check, pass } of passes) pass.observe(chunk.tests, entriesOf(chunk, check.version));
  });
  for (const { pass } of passes) pass.decide();
  // Every test the flakiness check flags at this run is flaky at this run, those past its 50
  // events too. Gathered over the chunks and marked after them, so that a large run changes the
  // tests' health, the project's quarantine version and the webhooks once, as a small one does.
  const flagged: { testId: string; reason: string }[] = [];
  // Second pass: each chunk's new entries, written before the next chunk is read (a large run).
  await source.each(async (chunk) => {
    const written = new Map<string, CheckState>();
    for (const { alert, check, pass } of passes) {
      const changed = pass.write(chunk.tests, entriesOf(chunk, check.version));
      for (const [key, entry] of changed) written.set(key, { ...written.get(key), [check.version]: entry });
      if (alert.alertType === "test_flakiness") {
        for (const { key, rule } of flaggedInRun(changed as Map<string, FlakinessTestState>, run.number))
          flagged.push({ testId: key, reason: `the flakiness check flagged it (${rule})` });
      }
    }
    // A written test gets its whole check_state rewritten: entries of detector versions no check has any more are dropped.
    await source.write(
      [...written].map(([id, entries]) => {
        const kept: CheckState = {};
        for (const [version, entry] of Object.entries(chunk.entries.get(id) ?? {})) if (versions.has(version)) kept[version] = entry;
        return { id, s: { ...kept, ...entries } };
      }),
    );
  });
  return flagged;
}

/** The flagged tests marked flaky, batch by batch, and their health changes followed (auto-quarantine, webhooks). */
async function markFlagged(
  tx: Database,
  deps: AlertChecksDeps,
  run: TestRunRow,
  projectId: string,
  flagged: { testId: string; reason: string }[],
  now: Date,
): Promise<void> {
  for (let at = 0; at < flagged.length; at += MARK_FLAKY_BATCH) {
    const changes = await markTestsFlaky(tx, { id: run.id, projectId, createdAt: run.createdAt }, flagged.slice(at, at + MARK_FLAKY_BATCH));
    await followHealthChanges(tx, deps, { id: run.id, number: run.number, projectId, processedAt: run.processedAt ?? now }, changes);
  }
}

/** Each check's new state and the events to record: an active alert's, with the tests they name, bounded. */
async function finishPasses(
  passes: AlertPass[],
  source: RunTestsSource,
  variant: string,
): Promise<{ states: StateWrite[]; events: EventWrite[] }> {
  const finished = passes.map(({ alert, check, pass }) => ({ alert, check, ...pass.finish() }));
  const named = await source.named(namedKeys(finished.flatMap(({ alert, events }) => (alert.active ? events : []))));
  const states: StateWrite[] = [];
  const events: EventWrite[] = [];
  for (const { alert, check, state, events: tripped } of finished) {
    states.push({ t: alert.alertType, s: state, v: check.version });
    if (tripped.length === 0 || !alert.active) continue;
    // Every event names the variant of the run it judged (each variant keeps its own baselines).
    const withIds = tripped.map((event): Record<string, unknown> => ({ ...withTestId(event.metadata, named), variant }));
    // A quarantined test's flakiness is known already: its health still follows the check (above),
    // but no event is recorded (nor notified) for it while it is quarantined.
    const recorded =
      alert.alertType === "test_flakiness"
        ? withIds.filter((metadata) => !(typeof metadata.test_id === "string" && named.get(metadata.test_id)?.quarantined))
        : withIds;
    if (recorded.length === 0) continue;
    const kept = recorded.slice(0, MAX_EVENTS_PER_CHECK).map((metadata) => boundedMetadata(metadata));
    if (recorded.length > MAX_EVENTS_PER_CHECK)
      kept[kept.length - 1] = { ...kept.at(-1), more_trips_in_run: recorded.length - MAX_EVENTS_PER_CHECK };
    for (const metadata of kept) events.push({ a: alert.id, m: metadata });
  }
  return { states, events };
}

/** A check's new state, for its alert type's row. */
type StateWrite = { t: AlertType; s: unknown; v: string };
/** An event to record, with its alert. */
type EventWrite = { a: string; m: Record<string, unknown> };

/**
 * Tests' check_state written in one statement: each replaced by the value given (the stored one
 * with the run's changes), or the value merged in (a converted legacy state: other checks' entries stay).
 */
function checkStatesUpdate(rows: readonly { id: string; s: CheckState }[], how: "replace" | "merge"): SQL {
  return sql`
    update ${tests} t set check_state = ${how === "merge" ? sql`t.check_state || y.s` : sql`y.s`}
    from json_to_recordset(${JSON.stringify(rows)}::json) as y(id uuid, s jsonb)
    where t.id = y.id`;
}

/**
 * Every write of the checks as one statement: the checked alerts' states (each one run further),
 * the events and their alerts' counts, a small run's tests' entries. Returns the events' ids, in
 * the order recorded.
 */
async function writeChecks(
  tx: Database,
  at: { project: string; run: TestRunRow; now: Date },
  states: StateWrite[],
  events: EventWrite[],
  entries: { id: string; s: CheckState }[],
): Promise<{ id: number; alertId: string }[]> {
  const now = sql`${at.now.toISOString()}::timestamptz`;
  const ctes: SQL[] = [
    sql`states_w as (
      update ${alertCheckStates} s set state = y.s, detector_version = y.v, last_run_number = ${at.run.number}, runs_checked = s.runs_checked + 1, updated_at = ${now}
      from json_to_recordset(${JSON.stringify(states)}::json) as y(t text, s jsonb, v text)
      where s.project_id = ${at.project}::uuid and s.variant = ${at.run.variant}::text and s.alert_type::text = y.t)`,
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
  if (entries.length > 0) {
    ctes.push(sql`entries_w as (${checkStatesUpdate(entries, "replace")})`);
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
