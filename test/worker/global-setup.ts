/**
 * globalSetup of the workerd tests (runs in Node, before workerd starts): a real Postgres wire
 * endpoint for the Worker's Neon driver, and the WebSocket bridge it connects through.
 * - Default: an in-memory PGlite, migrated, served by pglite-socket behind the serialising gate.
 * - TEST_DATABASE_URL (CI: the Postgres server on 127.0.0.1:5432): a fresh database of our own on
 *   that server, migrated, dropped afterwards.
 * The Worker gets them as the DATABASE_URL and LOCAL_NEON_PROXY bindings (vitest.config.ts).
 */
import pg from "pg";
import type { TestProject } from "vitest/node";
import { startLocalDatabase } from "../../src/node/local-neon";

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    localNeonProxy: string;
  }
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

export default async function setup(project: TestProject) {
  const serverUrl = process.env.TEST_DATABASE_URL;
  let databaseUrl: string | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  if (serverUrl) {
    const name = `cia_worker_test_${process.pid}_${Date.now().toString(36)}`;
    await adminQuery(serverUrl, `create database "${name}"`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    dropDatabase = () => adminQuery(serverUrl, `drop database if exists "${name}" with (force)`);
  }

  let local: Awaited<ReturnType<typeof startLocalDatabase>>;
  try {
    local = await startLocalDatabase({ databaseUrl: databaseUrl ?? "memory://" });
  } catch (error) {
    await dropDatabase?.();
    throw error;
  }
  if (!local.localNeonProxy) throw new Error("TEST_DATABASE_URL must name a server on this machine (127.0.0.1, localhost or ::1).");
  project.provide("databaseUrl", local.workerDatabaseUrl);
  project.provide("localNeonProxy", local.localNeonProxy);

  return async () => {
    await local.close();
    await dropDatabase?.();
  };
}
