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
import { inFlight } from "../../lib/in-flight";
import { type SQL, sql } from "drizzle-orm";
import type { Logger } from "../../lib/logger";
import type { CheckEvent, CheckPass, CheckRegistry, RunHeader, RunTest } from "../../checks/types";
import {
  alertCheckStates,
  alertEvents,
  alerts,
  committedCheckSlices,
  projects,
  stagedTestCheckStates,
  testCases,
  testCheckStates,
  testSuites,
  tests,
} from "../../db/schema";
import type { CaseStatus } from "../../lib/vocabulary";
import { rowFromJson, rowsOf } from "../../db/rows";
import { transactionWithRetry } from "../../db/transaction-retry";
import { inlined, lastStatement } from "../../db/transaction-boundaries";
import type { Database } from "../../db/types";
import { hasSingleSession } from "../../db/single-session";
import { yieldToEventLoop } from "../../lib/yield-to-event-loop";
import type { Clock } from "../../lib/clock";
import { isUuid } from "../../lib/ids";
import { describeError } from "../../lib/errors";
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

/** The checks' entries of a test (test_check_states.state: one entry per detector version). */
type CheckState = Record<string, unknown>;

type ChecksRead = {
  project: { id: string; defaultBranch: string | null } | null;
  /** The alerts whose checks run (active ones, and test_flakiness always), each with its state row, locked. */
  checked: { alert: typeof alerts.$inferSelect; stored: typeof alertCheckStates.$inferSelect }[];
  /** A small run's cases (none for a large run, whose cases are read in chunks). */
  cases: CaseJson[];
  /** A small run's tests' entries (test_check_states; a test without a row has none) and owners (for events that name them), by test id. */
  entries: Map<string, CheckState>;
  owners: Map<string, string[]>;
};

/** The run's tests' entries (null without a row) and owners: `ids` selects the run's test ids. */
const entriesOfRunSql = (ids: SQL, moved: boolean): SQL => sql`
  select t.id, ${moved ? sql`coalesce(n.state, e.state)` : sql`e.state`} as check_state, t.owners
  from ${tests} t left join ${testCheckStates} e on e.test_id = t.id ${moved ? sql`left join newest n on n.test_id = t.id` : sql``}
  where t.id in (${ids})`;

/**
 * Everything the checks read, as the transaction's first statement (one round trip on the
 * Worker): the project's tests lock (lockProjectTests), then, behind it, each checked alert's
 * state row, created if missing and locked (an upsert, which locks and returns the row's latest
 * version, a concurrent transaction's too: the lock serializes checks of one project). A small
 * run's cases and its tests' entries come with it; a large run's (`withTests` false) are read later
 * in chunks, by statements whose snapshots follow the lock.
 *
 * The entries are read with the statement's snapshot, taken before the lock was granted: when
 * another run's checks of the project committed while this statement waited for the lock, they
 * are not all seen (an entry row that transaction inserted is not). That is seen on the state
 * rows, whose upsert returns their latest version: one checked since the snapshot (`runs_checked`
 * moved on) makes the entries be read again, behind the lock (one more statement, only then).
 * Only the checks write test_check_states, always with their alerts' state rows, under the lock.
 *
 * First, behind the lock, the entries that checks run in slices (PGlite) staged and committed and
 * that are not in place yet are moved into test_check_states (runAlertChecksInSlices, step 4;
 * normally none), and read as moved.
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
  const [row] = await rowsOf<{ project: unknown; stale: boolean; checked: unknown; cases: unknown; entries: unknown }>(
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
      marks as (delete from ${committedCheckSlices} m where m.project_id = ${run.projectId}::uuid and (select l from locked) is not null
        returning m.test_run_id),
      moved as (delete from ${stagedTestCheckStates} s using marks k where s.test_run_id = k.test_run_id returning s.test_run_id, s.test_id, s.state),
      newest as (select distinct on (test_id) test_id, state from moved order by test_id, test_run_id desc),
      placed as (insert into ${testCheckStates} as e (test_id, state) select test_id, state from newest
        on conflict (test_id) do update set state = excluded.state),
      cases as (
        select c.id, c.test_id, su.name as suite, c.classname, c.name, c.status, c.attempts, c.duration_ms, c.quarantined
        from ${testCases} c join ${testSuites} su on su.test_run_id = c.test_run_id and su.number = c.suite_number
        where c.test_run_id = ${run.id}),
      entries as (${entriesOfRunSql(sql`select test_id from cases`, true)})
      select (select row_to_json(p) from project p) as project,
        (select count(*) from states s left join ${alertCheckStates} o on o.project_id = s.project_id and o.alert_type = s.alert_type and o.variant = s.variant
          where s.runs_checked > 0 and o.runs_checked is distinct from s.runs_checked) > 0 as stale,
        (select json_agg(json_build_object('alert', row_to_json(c), 'stored', row_to_json(s)) order by c.alert_type) from checked c join states s on s.alert_type = c.alert_type) as checked,
        ${
          withTests
            ? sql`(select json_agg(json_build_array(c.test_id, c.suite, c.classname, c.name, c.status, c.attempts, c.duration_ms, c.quarantined) order by c.id) from cases c) as cases,
        (select json_agg(json_build_array(e.id, e.check_state, e.owners)) from entries e) as entries`
            : sql`null::json as cases, null::json as entries`
        }`),
    ),
  );
  const project = parsedJson<{ id: string; default_branch: string | null } | null>(row?.project, null);
  const checked = parsedJson<{ alert: Record<string, unknown>; stored: Record<string, unknown> }[]>(row?.checked, []);
  let entries = withTests ? parsedJson<[string, CheckState | string | null, string[]][]>(row?.entries, []) : [];
  if (withTests && row?.stale) {
    const again = await rowsOf<{ entries: unknown }>(
      tx.execute(sql`with entries as (${entriesOfRunSql(sql`select test_id from ${testCases} where test_run_id = ${run.id}`, false)})
        select (select json_agg(json_build_array(e.id, e.check_state, e.owners)) from entries e) as entries`),
    );
    entries = parsedJson<[string, CheckState | string | null, string[]][]>(again[0]?.entries, []);
  }
  return {
    project: project ? { id: project.id, defaultBranch: project.default_branch } : null,
    checked: checked.map((pair) => ({ alert: rowFromJson(alerts, pair.alert), stored: rowFromJson(alertCheckStates, pair.stored) })),
    cases: withTests ? parsedJson<CaseJson[]>(row?.cases, []) : [],
    entries: new Map(
      entries.flatMap(([id, state]) =>
        state === null ? [] : [[id, typeof state === "string" ? (JSON.parse(state) as CheckState) : state]],
      ),
    ),
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
  /** Stores tests' new entries (whole values: the stored one with the chunk's changes). */
  write(rows: EntriesWrite[]): Promise<void>;
  /** Values left for the checks' last statement. */
  pending: EntriesWrite[];
};

/** A test's new entries: `n` when it has no row in test_check_states yet. */
type EntriesWrite = { id: string; s: CheckState; n: boolean };

function heldRunTests(read: ChecksRead): RunTestsSource {
  const chunk: Chunk = { tests: runTestsOf(read.cases), entries: read.entries };
  // The tests hold what the checks need of the cases: the rows as read are let go now.
  read.cases.length = 0;
  const pending: EntriesWrite[] = [];
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
 * checks see every case of a test together. One scroll cursor for both passes, rewound for the
 * second: the run's cases are joined with their entries and sorted once (a second sort took as
 * long as the first, 80–200 ms for 10,000 cases), and the second pass reads the same rows, with
 * the entries as the first read them (the cursor's snapshot): what the checks' passes need (the
 * first pass writes nothing, and each test's entries are written in the second pass after its
 * chunk was read).
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
  let declared = false;
  let writing: Promise<unknown> | null = null;
  return {
    async each(visit) {
      if (declared) await tx.execute(sql`move absolute 0 in check_tests`);
      else
        await tx.execute(sql`
        declare check_tests scroll cursor for
        select c.test_id, su.name as suite, c.classname, c.name, c.status, c.attempts, c.duration_ms, c.quarantined, e.state as check_state
        from ${testCases} c join ${testSuites} su on su.test_run_id = c.test_run_id and su.number = c.suite_number
          left join ${testCheckStates} e on e.test_id = c.test_id
        where c.test_run_id = ${run.id}
        order by c.test_id, c.id`);
      // Node and Postgres at once: the next chunk is asked for before this one is checked, and a
      // chunk's entries are written without waiting (one write in flight; one connection, so its
      // statements still run in order, and the cursor reads with its own snapshot).
      const fetchChunk = () => inFlight(rowsOf<Row>(tx.execute(sql.raw(`fetch ${chunkCases} from check_tests`))));
      let next: Promise<Row[]> | null = fetchChunk();
      let carried: Row[] = [];
      try {
        for (;;) {
          const rows: Row[] = await next!;
          const last = rows.length < chunkCases;
          next = last ? null : fetchChunk();
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
        await writing;
      } finally {
        // Nothing may be left running on the connection when a pass fails.
        await Promise.allSettled([next, writing]);
        writing = null;
      }
      // Left open for the next pass; closed with the transaction.
      declared = true;
    },
    named: (keys) => namedOfRun(tx, run, keys),
    async write(rows) {
      await writing;
      writing = rows.length > 0 ? inFlight(rowsOf(tx.execute(entriesWriteSql(rows)))) : null;
    },
    pending: [],
  };
}

/** A case of the run as slicedRunTests holds it: its id first (the cases' order within a test). */
type HeldCase = [id: number, ...CaseJson];

/** Cases of the run read per statement by slicedRunTests. */
const CASES_PER_READ = 500;

/**
 * A large run's tests on a database of one session (runAlertChecksInSlices): its cases read a
 * slice at a time and held (in key order, a test's cases in their order, as the cursor reads them),
 * then cut into chunks of about `chunkCases` cases at tests' boundaries; each chunk's entries are
 * read by a statement of its own at each pass, and its new entries staged. Each statement is short
 * and the event loop is free between them.
 */
async function slicedRunTests(db: Database, run: TestRunRow, chunkCases: number): Promise<RunTestsSource> {
  const cases: HeldCase[] = [];
  // Read in the order of their ids, a slice after another: the run's cases are contiguous there.
  const [range] = await rowsOf<{ first: number | string | null; last: number | string | null }>(
    db.execute(sql`select min(id) as first, max(id) as last from ${testCases} where test_run_id = ${run.id}`),
  );
  for (let after = Number(range?.first ?? 0) - 1, last = Number(range?.last ?? -1); after < last;) {
    const [row] = await rowsOf<{ c: HeldCase[] | string | null }>(
      db.execute(sql`
        select json_agg(json_build_array(c.id, c.test_id, su.name, c.classname, c.name, c.status, c.attempts, c.duration_ms, c.quarantined) order by c.id) as c
        from (select * from ${testCases} where test_run_id = ${run.id} and id > ${after} and id <= ${last} order by id limit ${CASES_PER_READ}) c
          join ${testSuites} su on su.test_run_id = c.test_run_id and su.number = c.suite_number`),
    );
    const slice = parsedJson<HeldCase[]>(row?.c, []);
    if (slice.length === 0) break;
    for (const held of slice) cases.push(held);
    after = Number(slice[slice.length - 1]![0]);
    await yieldToEventLoop();
  }
  cases.sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : Number(a[0]) - Number(b[0])));
  const chunks: HeldCase[][] = [];
  for (let at = 0; at < cases.length;) {
    let end = Math.min(cases.length, at + chunkCases);
    while (end < cases.length && cases[end]![1] === cases[end - 1]![1]) end++;
    chunks.push(cases.slice(at, end));
    at = end;
  }
  cases.length = 0;
  return {
    async each(visit) {
      for (const chunk of chunks) {
        const ids = [...new Set(chunk.map((held) => held[1]))];
        const rows = await rowsOf<{ test_id: string; state: CheckState | string }>(
          db.execute(sql`select test_id, state from ${testCheckStates}
            where test_id in (select k::uuid from json_array_elements_text(${JSON.stringify(ids)}::json) as k)`),
        );
        const entries = new Map(
          rows.map((row) => [row.test_id, typeof row.state === "string" ? (JSON.parse(row.state) as CheckState) : row.state]),
        );
        await visit({ tests: runTestsOf(chunk.map(([, ...json]) => json)), entries });
        await yieldToEventLoop();
      }
    },
    named: (keys) => namedOfRun(db, run, keys),
    async write(rows) {
      if (rows.length === 0) return;
      await db.execute(sql`insert into ${stagedTestCheckStates} (test_run_id, test_id, state)
        select ${run.id}, y.id, y.s from json_to_recordset(${JSON.stringify(rows.map(({ id, s }) => ({ id, s })))}::json) as y(id uuid, s jsonb)`);
    },
    pending: [],
  };
}

/** The run's tests among `keys` (RunTestsSource.named), read from its cases and tests. */
async function namedOfRun(db: Database, run: TestRunRow, keys: readonly string[]): Promise<Map<string, NamedTest>> {
  if (keys.length === 0) return new Map();
  const rows = await rowsOf<{ id: string; owners: string[]; quarantined: boolean }>(
    db.execute(sql`
      select t.id, t.owners, bool_or(c.quarantined) as quarantined
      from ${testCases} c join ${tests} t on t.id = c.test_id
      where c.test_run_id = ${run.id} and c.test_id in (select k::uuid from json_array_elements_text(${JSON.stringify(keys)}::json) as k)
      group by t.id, t.owners`),
  );
  return new Map(rows.map((row) => [row.id, { owners: row.owners ?? [], quarantined: row.quarantined === true }]));
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
 * follows the health changes), as does a legacy state's conversion (legacyRekey). On a database
 * of one session (PGlite) a larger run is checked in slices instead (runAlertChecksInSlices).
 */
export async function runAlertChecks(deps: AlertChecksDeps, run: TestRunRow, options: AlertChecksOptions = {}): Promise<RecordedTrip[]> {
  const large = run.testsCount > (options.largeAbove ?? CHECK_CHUNK_CASES);
  // On a database of one session (PGlite) a large run's checks would hold every request for seconds.
  const sliced = large && hasSingleSession(deps.db) ? await runAlertChecksInSlices(deps, run, options) : null;
  const trips = sliced ?? (await runAlertChecksAtOnce(deps, run, large, options));
  if (trips.length > 0) deps.logger.info("alert checks tripped", { testRunId: run.id, trips: trips.length });
  return trips;
}

/** The checks of one run as one transaction (runAlertChecks). */
async function runAlertChecksAtOnce(
  deps: AlertChecksDeps,
  run: TestRunRow,
  large: boolean,
  options: AlertChecksOptions,
): Promise<RecordedTrip[]> {
  const now = deps.clock.now();
  const trips: RecordedTrip[] = [];
  const versions = new Set(Object.values(deps.checks).map((check) => check.version));

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

    const { states, events } = await finishPasses(passes, source.named, run.variant);
    const inserted = await writeChecks(tx, { project: project.id, run, now }, states, events, source.pending);
    trips.push(...tripsOf(due, inserted, now));
  });
  return trips;
}

/** The recorded events as trips, for notifications. */
function tripsOf(due: CheckedAlert[], inserted: { id: number; alertId: string }[], now: Date): RecordedTrip[] {
  const byId = new Map(due.map(({ alert }) => [alert.id, alert]));
  return inserted.map(({ id, alertId }) => {
    const alert = byId.get(alertId)!;
    return { alertId, alertType: alert.alertType, eventId: id, snoozed: isSnoozed(alert.snoozedUntil, now) };
  });
}

/** The checked alerts' state rows changed between the slices and the checks' last transaction: that transaction is rolled back. */
class StatesChanged extends Error {}

/**
 * Cases per chunk of a run checked in slices: each chunk's statements take a few milliseconds of
 * PGlite (tens on 2 loaded cores), which is what a request waits behind. With 250, requests made
 * during the checks of a 20,000-case run waited up to 290–334 ms at load 9; with 100, 236 ms at 11.
 */
const SLICED_CHUNK_CASES = 100;

/**
 * A large run's checks on a database of one session (PGlite: src/db/single-session.ts), where one
 * transaction would hold every other query, each request's, for as long as it runs (seconds for a
 * 20,000-case run). The same passes as runAlertChecksAtOnce, in short statements with the event
 * loop free between them (docs/alert-checks.md, "On the embedded database"):
 *
 * 1. a short transaction (readForChecks): the lock, the checked alerts' state rows (created if
 *    missing), what earlier checks of the project left staged and committed moved into place (see 4:
 *    moved a slice at a time just before, so normally nothing);
 * 2. the run's cases read a slice at a time (slicedRunTests), then both passes chunk by chunk, each
 *    chunk's entries read by a statement of its own, its new entries staged in
 *    staged_test_check_states (never read before step 3 commits), what an earlier, killed attempt
 *    of the run staged deleted first;
 * 3. one short transaction: the state rows checked unchanged since step 1, the run marked in
 *    committed_check_slices (its staged entries count from now on), the flagged tests marked, the
 *    states and events written (writeChecks), as runAlertChecksAtOnce ends;
 * 4. the staged entries moved into test_check_states a slice at a time. Every check of the project
 *    moves what is left of them first (readForChecks), so a process killed meanwhile loses nothing,
 *    and no check reads an entry they replace.
 *
 * A process killed before step 3 commits leaves only staged rows that nothing reads: the run's
 * checks are left to do again, from the same states and entries, with the same result. If another
 * run's checks of the project committed between steps 1 and 3 (their state rows moved on), step 3
 * is rolled back and null returned: the run is checked in one transaction. Null too for a state
 * stored before per-test entries, whose conversion runAlertChecksAtOnce does.
 */
async function runAlertChecksInSlices(deps: AlertChecksDeps, run: TestRunRow, options: AlertChecksOptions): Promise<RecordedTrip[] | null> {
  const now = deps.clock.now();
  await moveCommittedEntries(deps.db, run.projectId);
  const read = await transactionWithRetry(deps.db, (tx) => readForChecks(tx, deps, run, now, false));
  if (!read.project) return [];
  const project = read.project;
  const due: CheckedAlert[] = read.checked
    .filter(({ stored }) => run.number > stored.lastRunNumber)
    .map(({ alert, stored }) => ({ alert, check: deps.checks[alert.alertType], stored }));
  if (due.length === 0) return [];
  if (due.some(({ check, stored }) => stored.detectorVersion === check.version && check.fromLegacy?.(stored.state, () => null)))
    return null;
  const versions = new Set(Object.values(deps.checks).map((check) => check.version));
  await clearStagedEntries(deps.db, run.id);
  let trips: RecordedTrip[];
  try {
    const passes = await startPasses(deps.db, project.id, due, runHeaderOf(run, project.defaultBranch), read);
    const chunkCases = Math.max(1, Math.floor(options.chunkCases ?? SLICED_CHUNK_CASES));
    const flagged = await checkRunTests(await slicedRunTests(deps.db, run, chunkCases), passes, run, versions);
    trips = await transactionWithRetry(deps.db, async (tx) => {
      await statesUnchanged(tx, run, read.checked);
      await tx.insert(committedCheckSlices).values({ testRunId: run.id, projectId: project.id });
      await markFlagged(tx, deps, run, project.id, flagged, now);
      const { states, events } = await finishPasses(passes, (keys) => namedOfRun(tx, run, keys), run.variant);
      return tripsOf(due, await writeChecks(tx, { project: project.id, run, now }, states, events, []), now);
    });
  } catch (error) {
    // The staged rows go (the next attempt deletes them too, so a failure here must not hide the error).
    await clearStagedEntries(deps.db, run.id).catch(() => {});
    if (error instanceof StatesChanged) return null;
    throw error;
  }
  // The checks are committed: what is left staged is moved by the project's next checks.
  await moveCommittedEntries(deps.db, run.projectId).catch((error: unknown) =>
    deps.logger.error("could not move the checks' staged entries", { testRunId: run.id, error: describeError(error) }),
  );
  return trips;
}

/** What an attempt of the run's checks in slices staged and did not commit. */
const clearStagedEntries = (db: Database, runId: number) =>
  db.execute(sql`delete from ${stagedTestCheckStates} s where s.test_run_id = ${runId}
    and not exists (select 1 from ${committedCheckSlices} m where m.test_run_id = ${runId})`);

/** Entries moved from staged_test_check_states into place per statement (moveCommittedEntries). */
const MOVED_PER_SLICE = 100;

/**
 * `limit` staged entries of the project's runs whose checks committed, moved into test_check_states,
 * and each such run's mark deleted once none of its entries is left: one statement. Each test's
 * newest entry wins should two committed runs have staged it.
 */
function moveCommittedEntriesSql(projectId: string, limit: number): SQL {
  return sql`
    with runs as (select test_run_id from ${committedCheckSlices} where project_id = ${projectId}::uuid),
    picked as (select s.test_run_id, s.test_id from ${stagedTestCheckStates} s join runs r on r.test_run_id = s.test_run_id limit ${limit}),
    moved as (delete from ${stagedTestCheckStates} s using picked p where s.test_run_id = p.test_run_id and s.test_id = p.test_id
      returning s.test_run_id, s.test_id, s.state),
    placed as (insert into ${testCheckStates} as e (test_id, state)
      select distinct on (test_id) test_id, state from moved order by test_id, test_run_id desc
      on conflict (test_id) do update set state = excluded.state),
    done as (delete from ${committedCheckSlices} m using runs r where m.test_run_id = r.test_run_id
      and not exists (select 1 from ${stagedTestCheckStates} s where s.test_run_id = r.test_run_id
        and not exists (select 1 from picked p where p.test_run_id = s.test_run_id and p.test_id = s.test_id)))
    select count(*)::int as moved from moved`;
}

/** moveCommittedEntriesSql a slice at a time, the event loop free between them, until none is left. */
async function moveCommittedEntries(db: Database, projectId: string): Promise<void> {
  for (;;) {
    const [row] = await rowsOf<{ moved: number }>(db.execute(moveCommittedEntriesSql(projectId, MOVED_PER_SLICE)));
    if (Number(row?.moved ?? 0) === 0) return;
    await yieldToEventLoop();
  }
}

/** Step 3 of runAlertChecksInSlices: the project's tests lock, and the checked alerts' state rows as step 1 read them. */
async function statesUnchanged(tx: Database, run: TestRunRow, checked: ChecksRead["checked"]): Promise<void> {
  const rows = await rowsOf<{ alert_type: string; runs_checked: number; last_run_number: number }>(
    tx.execute(sql`
      with locked as (select ${projectTestsLock(sql`${run.projectId}`)} is null as l)
      select s.alert_type, s.runs_checked, s.last_run_number from ${alertCheckStates} s, locked
      where s.project_id = ${run.projectId}::uuid and s.variant = ${run.variant}::text
      for update of s`),
  );
  const now = new Map(rows.map((row) => [row.alert_type, `${row.runs_checked}/${row.last_run_number}`]));
  for (const { stored } of checked)
    if (now.get(stored.alertType) !== `${stored.runsChecked}/${stored.lastRunNumber}`) throw new StatesChanged();
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
    // Merged into what the tests' rows hold: other checks' entries stay.
    await tx.execute(sql`
      insert into ${testCheckStates} as e (test_id, state)
      select y.id, y.s from json_to_recordset(${JSON.stringify([...converted].map(([id, s]) => ({ id, s })))}::json) as y(id uuid, s jsonb)
      on conflict (test_id) do update set state = e.state || excluded.state`);
    // A small run's entries, already read, get them too (a test of the run without a row has one now).
    const inRun = new Set(read.cases.map(([testId]) => testId));
    for (const [id, entries] of converted) if (inRun.has(id)) read.entries.set(id, { ...read.entries.get(id), ...entries });
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
    // A written test gets its whole entries rewritten: entries of detector versions no check has any
    // more are dropped. A test whose entries come out as stored is not written.
    const rows: EntriesWrite[] = [];
    for (const [id, entries] of written) {
      const stored = chunk.entries.get(id);
      const kept: CheckState = {};
      for (const [version, entry] of Object.entries(stored ?? {})) if (versions.has(version)) kept[version] = entry;
      const state = { ...kept, ...entries };
      if (stored === undefined || !sameJson(stored, state)) rows.push({ id, s: state, n: stored === undefined });
    }
    await source.write(rows);
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
  namedBy: RunTestsSource["named"],
  variant: string,
): Promise<{ states: StateWrite[]; events: EventWrite[] }> {
  const finished = passes.map(({ alert, check, pass }) => ({ alert, check, ...pass.finish() }));
  const named = await namedBy(namedKeys(finished.flatMap(({ alert, events }) => (alert.active ? events : []))));
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

/** Whether two JSON values (an entry as stored and as the checks leave it) are equal, whatever their keys' order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((value, i) => sameJson(value, b[i]));
  if (Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

/**
 * Tests' entries written in one statement, each replaced by the value given (the stored one with
 * the run's changes): an update of the rows there are, an insert of the tests that had none.
 */
function entriesWriteSql(rows: readonly EntriesWrite[]): SQL {
  const [update, insert] = entriesWrites(rows);
  if (!insert) return update!;
  if (!update) return insert;
  return sql`with updated as (${update}) ${insert}`;
}

/** The update and the insert of entriesWriteSql (either null when it has no rows), to be put in a WITH of their own. */
function entriesWrites(rows: readonly EntriesWrite[]): [SQL | null, SQL | null] {
  const updated = rows.filter((row) => !row.n).map(({ id, s }) => ({ id, s }));
  const added = rows.filter((row) => row.n).map(({ id, s }) => ({ id, s }));
  return [
    updated.length === 0
      ? null
      : sql`update ${testCheckStates} e set state = y.s
    from json_to_recordset(${JSON.stringify(updated)}::json) as y(id uuid, s jsonb) where e.test_id = y.id`,
    added.length === 0
      ? null
      : sql`insert into ${testCheckStates} (test_id, state)
    select y.id, y.s from json_to_recordset(${JSON.stringify(added)}::json) as y(id uuid, s jsonb)`,
  ];
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
  entries: EntriesWrite[],
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
  const [update, insert] = entriesWrites(entries);
  if (update) ctes.push(sql`entries_u as (${update})`);
  if (insert) ctes.push(sql`entries_i as (${insert})`);
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
