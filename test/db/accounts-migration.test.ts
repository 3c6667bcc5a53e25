/**
 * The migration that brings e-mail confirmation (drizzle/0025_accounts.sql) counts the people who
 * had an account before it as verified: they signed up when no confirmation existed, and must not
 * be locked out by better-auth's "verified e-mails only" rule (docs/accounts.md). A database
 * migrated up to the one before, with an unverified user in it, then migrated to the end. An
 * embedded database of its own (memory://), since the shared one is migrated already.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rowsOf } from "../../src/db/rows";
import { type DatabaseBefore, databaseBefore } from "../support/migration-before";

let before: DatabaseBefore;
beforeAll(async () => {
  before = await databaseBefore("0025_accounts");
});
afterAll(async () => before?.close());

it("the people who had an account before it count as verified", async () => {
  const { database } = before;
  const { db } = database;
  await before.migrateBefore();
  await db.execute(sql`insert into users (name, email) values ('Earlier', 'earlier@example.com')`);
  const [unverified] = await rowsOf<{ email_verified: boolean }>(db.execute(sql`select email_verified from users`));
  expect(unverified!.email_verified).toBe(false);
  await database.migrate();
  const [verified] = await rowsOf<{ email_verified: boolean }>(db.execute(sql`select email_verified from users`));
  expect(verified!.email_verified).toBe(true);
});
