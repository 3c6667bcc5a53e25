/**
 * The migration that adds the projects' stored-case counters (drizzle/0027_stored_cases_quota.sql)
 * counts the cases already stored: a database migrated up to the one before, with cases in it, then
 * migrated to the end, has each project's counter equal to its cases' rows. An embedded database of
 * its own (memory://), since the shared one is migrated already.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rowsOf } from "../../src/db/rows";
import { type DatabaseBefore, databaseBefore } from "../support/migration-before";

let before: DatabaseBefore;
beforeAll(async () => {
  before = await databaseBefore("0027_stored_cases_quota");
});
afterAll(async () => before?.close());

it("counts each project's existing cases; a project without any counts 0", async () => {
  const { database } = before;
  const { db } = database;
  await before.migrateBefore();
  const [organization] = await rowsOf<{ id: string }>(db.execute(sql`insert into organizations (name) values ('Before') returning id`));
  const project = async (name: string) =>
    (
      await rowsOf<{ id: string }>(
        db.execute(
          sql`insert into projects (organization_id, name, upload_token_hash) values (${organization!.id}, ${name}, ${name}) returning id`,
        ),
      )
    )[0]!.id;
  const [busy, quiet, empty] = [await project("busy"), await project("quiet"), await project("empty")];
  const run = async (projectId: string, number: number, cases: number) => {
    const [row] = await rowsOf<{ id: number }>(
      db.execute(
        sql`insert into test_runs (project_id, number, status, tests_count) values (${projectId}, ${number}, 'processed', ${cases}) returning id`,
      ),
    );
    await db.execute(sql`insert into test_cases (test_run_id, project_id, suite_number, name, status)
      select ${row!.id}, ${projectId}, 1, 'case ' || i, 'passed' from generate_series(1, ${cases}) i`);
  };
  await run(busy, 1, 120);
  await run(busy, 2, 30);
  await run(quiet, 1, 7);
  await db.execute(sql`insert into test_runs (project_id, number) values (${empty}, 1)`);

  await database.migrate();
  const counters = await rowsOf<{ name: string; stored_cases_count: string | number }>(
    db.execute(sql`select name, stored_cases_count from projects order by name`),
  );
  expect(counters.map((row) => [row.name, Number(row.stored_cases_count)])).toEqual([
    ["busy", 150],
    ["empty", 0],
    ["quiet", 7],
  ]);
  // And from then on the trigger follows deletions.
  await db.execute(sql`delete from test_runs where project_id = ${busy} and number = 1`);
  const [after] = await rowsOf<{ stored_cases_count: string | number }>(
    db.execute(sql`select stored_cases_count from projects where id = ${busy}`),
  );
  expect(Number(after!.stored_cases_count)).toBe(30);
});
