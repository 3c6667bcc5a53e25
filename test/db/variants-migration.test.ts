/**
 * The migration that brings variants (drizzle/0036_variants.sql) derives every case's test id
 * anew (a generated column's expression cannot be altered in place): a database migrated up to the
 * one before, with cases in it, then migrated to the end, keeps each case's test id, so every
 * existing test keeps its identity and history (docs/tests.md, "Variants"); a case of a variant
 * gets an id of its own. An embedded database of its own (memory://).
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rowsOf } from "../../src/db/rows";
import { type DatabaseBefore, databaseBefore, organizationBefore } from "../support/migration-before";

let before: DatabaseBefore;
beforeAll(async () => {
  before = await databaseBefore("0036_variants");
});
afterAll(async () => before?.close());

it("keeps every existing case's test id; the variant '' adds nothing, another variant makes another test", async () => {
  const { database } = before;
  const { db } = database;
  await before.migrateBefore();
  const {
    projectIds: [project],
  } = await organizationBefore(db, "p");
  const [run] = await rowsOf<{ id: number }>(
    db.execute(sql`insert into test_runs (project_id, number, status) values (${project!}, 1, 'processed') returning id`),
  );
  await db.execute(sql`insert into test_cases (test_run_id, project_id, suite_number, name, classname, file, status) values
    (${run!.id}, ${project!}, 1, 'adds', 'app.Cart', null, 'passed'),
    (${run!.id}, ${project!}, 1, 'renders', null, 'ui/button.test.tsx', 'failed'),
    (${run!.id}, ${project!}, 1, 'bare', null, null, 'passed')`);
  const idsBefore = await rowsOf<{ name: string; test_id: string }>(db.execute(sql`select name, test_id from test_cases order by name`));

  await database.migrate();
  const idsAfter = await rowsOf<{ name: string; test_id: string; variant: string }>(
    db.execute(sql`select name, test_id, variant from test_cases order by name`),
  );
  expect(idsAfter).toEqual(idsBefore.map((row) => ({ ...row, variant: "" })));

  await db.execute(sql`insert into test_cases (test_run_id, project_id, variant, suite_number, name, classname, status)
    values (${run!.id}, ${project!}, 'os=windows', 1, 'adds', 'app.Cart', 'passed')`);
  const adds = await rowsOf<{ test_id: string }>(db.execute(sql`select test_id from test_cases where name = 'adds' order by id`));
  expect(adds).toHaveLength(2);
  expect(adds[1]!.test_id).not.toBe(adds[0]!.test_id);
});
