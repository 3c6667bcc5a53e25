/**
 * The migration that brings e-mail confirmation (drizzle/0025_accounts.sql) counts the people who
 * had an account before it as verified: they signed up when no confirmation existed, and must not
 * be locked out by better-auth's "verified e-mails only" rule (docs/accounts.md). A database
 * migrated up to the one before, with an unverified user in it, then migrated to the end. An
 * embedded database of its own (memory://), since the shared one is migrated already.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { migrate } from "drizzle-orm/pglite/migrator";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rowsOf } from "../../src/db/rows";
import { type OpenedDatabase, openDatabase } from "../../src/node/database";

const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));
const TAG = "0025_accounts";

let database: OpenedDatabase;
let before: string;
beforeAll(async () => {
  before = mkdtempSync(join(tmpdir(), "cta-before-accounts-"));
  cpSync(MIGRATIONS, before, { recursive: true });
  const journal = JSON.parse(readFileSync(join(MIGRATIONS, "meta/_journal.json"), "utf8")) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((entry) => entry.tag === TAG);
  expect(at).toBeGreaterThan(0);
  writeFileSync(join(before, "meta/_journal.json"), JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }));
  database = await openDatabase("memory://");
});
afterAll(async () => {
  await database?.close();
  rmSync(before, { recursive: true, force: true });
});

it("the people who had an account before it count as verified", async () => {
  const { db } = database;
  await migrate(db as never, { migrationsFolder: before });
  await db.execute(sql`insert into users (name, email) values ('Earlier', 'earlier@example.com')`);
  const [unverified] = await rowsOf<{ email_verified: boolean }>(db.execute(sql`select email_verified from users`));
  expect(unverified!.email_verified).toBe(false);
  await database.migrate();
  const [verified] = await rowsOf<{ email_verified: boolean }>(db.execute(sql`select email_verified from users`));
  expect(verified!.email_verified).toBe(true);
});
