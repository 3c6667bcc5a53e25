/**
 * The migration that moves the alert checks' per-test entries out of tests.check_state
 * (drizzle/0049_test_check_states.sql): a database migrated up to the one before, with tests that
 * have entries and one that has none, then migrated to the end, has each test's entries in
 * test_check_states as they were, no row for the test without entries, and no check_state column.
 * An embedded database of its own (memory://).
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rowsOf } from "../../src/db/rows";
import { type DatabaseBefore, databaseBefore, organizationBefore } from "../support/migration-before";

let before: DatabaseBefore;
beforeAll(async () => {
  before = await databaseBefore("0049_test_check_states");
});
afterAll(async () => before?.close());

it("moves every test's entries into test_check_states, and drops the column", async () => {
  const { database } = before;
  const { db } = database;
  await before.migrateBefore();
  const {
    projectIds: [project],
  } = await organizationBefore(db, "p");
  const entries = {
    a: { "test_flakiness/2": { wh: 0, wl: 5, n: 3, ls: 7, cp: 0, c: [1, 2, 3, 4] }, "failure_rate_spike/2": { l: 29 } },
    b: { "performance_regression/3": 12 },
  };
  await db.execute(sql`insert into tests (id, project_id, name, first_seen_at, check_state) values
    ('00000000-0000-4000-8000-00000000000a', ${project!}, 'a', now(), ${JSON.stringify(entries.a)}::jsonb),
    ('00000000-0000-4000-8000-00000000000b', ${project!}, 'b', now(), ${JSON.stringify(entries.b)}::jsonb),
    ('00000000-0000-4000-8000-00000000000c', ${project!}, 'c', now(), '{}'::jsonb)`);

  await database.migrate();
  const moved = await rowsOf<{ name: string; state: unknown }>(
    db.execute(sql`select t.name, e.state from tests t join test_check_states e on e.test_id = t.id order by t.name`),
  );
  expect(moved).toEqual([
    { name: "a", state: entries.a },
    { name: "b", state: entries.b },
  ]);
  const columns = await rowsOf<{ n: number }>(
    db.execute(sql`select count(*)::int as n from information_schema.columns where table_name = 'tests' and column_name = 'check_state'`),
  );
  expect(columns[0]!.n).toBe(0);
  // A test's entries go with it.
  await db.execute(sql`delete from tests where name = 'a'`);
  expect(await rowsOf(db.execute(sql`select test_id from test_check_states`))).toEqual([
    { test_id: "00000000-0000-4000-8000-00000000000b" },
  ]);
});
