/**
 * Prepares one migrated database for the run.
 * - PGlite (default): migrate an in-memory instance once and snapshot it; every test file
 *   starts its own instance from the snapshot (skips the slow initdb and migrations).
 * - Postgres (TEST_DATABASE_URL): create a database of our own on that server and migrate it: the
 *   template each worker's database is cloned from (CREATE DATABASE … TEMPLATE, test/support/harness.ts).
 *   It and its clones are dropped afterwards, so runs never see each other's data.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import pg from "pg";
import { openDatabase } from "../../src/node/database";

declare module "vitest" {
  export interface ProvidedContext {
    /** The migrated template on the TEST_DATABASE_URL server; files get a clone of it (test/support/harness.ts). */
    testDatabaseTemplateUrl: string | null;
    pgliteSnapshotPath: string | null;
  }
}

export default async function setup(project: TestProject) {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (serverUrl) {
    const name = `cia_test_${process.pid}_${Date.now().toString(36)}_${project.name}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`create database "${name}"`);
    await admin.end();
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const database = await openDatabase(url.toString());
    await database.migrate();
    await database.close();
    project.provide("testDatabaseTemplateUrl", url.toString());
    project.provide("pgliteSnapshotPath", null);
    return async () => {
      const cleanup = new pg.Client({ connectionString: serverUrl });
      await cleanup.connect();
      try {
        const clones = await cleanup.query<{ datname: string }>("select datname from pg_database where starts_with(datname, $1)", [
          `${name}_p`,
        ]);
        for (const { datname } of clones.rows) await cleanup.query(`drop database if exists "${datname}" with (force)`);
        await cleanup.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await cleanup.end();
      }
    };
  }

  const database = await openDatabase("memory://");
  await database.migrate();
  const client = (database as unknown as { client: { dumpDataDir(c?: "none"): Promise<Blob> } }).client;
  const snapshot = await client.dumpDataDir("none");
  await database.close();
  const dir = mkdtempSync(join(tmpdir(), "cia-pglite-"));
  const path = join(dir, "snapshot.tar");
  writeFileSync(path, Buffer.from(await snapshot.arrayBuffer()));
  project.provide("testDatabaseTemplateUrl", null);
  project.provide("pgliteSnapshotPath", path);
  return () => rmSync(dir, { recursive: true, force: true });
}
