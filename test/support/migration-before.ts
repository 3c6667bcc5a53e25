/**
 * A database one migration short (node tier, memory:// PGlite): the migrations folder copied with
 * its journal cut before `tag`, so a test can put the data of that time in, then run the rest and
 * see what the migration did to it.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { migrate } from "drizzle-orm/pglite/migrator";
import { rowsOf } from "../../src/db/rows";
import type { Database } from "../../src/db/types";
import { type OpenedDatabase, openDatabase } from "../../src/node/database";

const MIGRATIONS = fileURLToPath(new URL("../../drizzle", import.meta.url));

export type DatabaseBefore = {
  database: OpenedDatabase;
  /** Runs the migrations before `tag`. */
  migrateBefore(): Promise<void>;
  close(): Promise<void>;
};

export async function databaseBefore(tag: string): Promise<DatabaseBefore> {
  const before = mkdtempSync(join(tmpdir(), `cta-before-${tag}-`));
  cpSync(MIGRATIONS, before, { recursive: true });
  const journal = JSON.parse(readFileSync(join(MIGRATIONS, "meta/_journal.json"), "utf8")) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((entry) => entry.tag === tag);
  if (at <= 0) throw new Error(`no migration ${tag} after the first`);
  writeFileSync(join(before, "meta/_journal.json"), JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }));
  const database = await openDatabase("memory://");
  return {
    database,
    migrateBefore: () => migrate(database.db as never, { migrationsFolder: before }),
    close: async () => {
      await database.close();
      rmSync(before, { recursive: true, force: true });
    },
  };
}

/**
 * An organization and its projects as the migrations before a later one left their tables (raw
 * statements, not today's schema): each project named, and its upload token hash set, after `names`.
 */
export async function organizationBefore(db: Database, ...names: string[]): Promise<{ organizationId: string; projectIds: string[] }> {
  const [organization] = await rowsOf<{ id: string }>(db.execute(sql`insert into organizations (name) values ('Before') returning id`));
  const projectIds: string[] = [];
  for (const name of names) {
    const [project] = await rowsOf<{ id: string }>(
      db.execute(
        sql`insert into projects (organization_id, name, upload_token_hash) values (${organization!.id}, ${name}, ${name}) returning id`,
      ),
    );
    projectIds.push(project!.id);
  }
  return { organizationId: organization!.id, projectIds };
}
