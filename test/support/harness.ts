/**
 * Node test harness: a real database, the app built by createApp and called in process, a manual
 * clock, and the fixtures of harness-core.ts. The workerd suite swaps this module for
 * test/worker/support/harness.ts.
 *
 * One migrated database per worker, not per file: the node tier runs with `isolate: false`, so this
 * module, and the database it opened, serve every file the worker runs (PGlite started once from the
 * run's snapshot; on Postgres a database cloned from the run's migrated template). Each file creates
 * its own organizations and asserts only on them (sweeps and the demo seed included), so files
 * never depend on each other or on order.
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { inject } from "vitest";
import { openDatabase, type OpenedDatabase } from "../../src/node/database";
import { nodeOutboundFetch } from "../../src/node/outbound-fetch";
import { type HarnessOptions, LOCAL_RECEIVERS_POLICY, inProcessHarness } from "./harness-core";

export * from "./harness-core";

type WorkerDatabase = { database: OpenedDatabase; url: string | null };

let workerDatabase: Promise<WorkerDatabase> | undefined;

function theWorkerDatabase(): Promise<WorkerDatabase> {
  workerDatabase ??= openWorkerDatabase().catch((error: unknown) => {
    workerDatabase = undefined;
    throw error;
  });
  return workerDatabase;
}

/** The worker's database; closing it is left to the worker's exit, since later files use it too. */
export async function openTestDatabase(): Promise<OpenedDatabase> {
  const { database } = await theWorkerDatabase();
  return { ...database, close: async () => {} };
}

/**
 * The connection string of the worker's database on Postgres (for a second connection, a spawned
 * server or a proxy in front of it), null on PGlite.
 */
export async function testDatabaseUrl(): Promise<string | null> {
  return (await theWorkerDatabase()).url;
}

/**
 * PGlite from the run's snapshot, or on Postgres a clone of the run's template, named after this
 * process (the global setup's teardown drops the template's clones).
 */
async function openWorkerDatabase(): Promise<WorkerDatabase> {
  const template = inject("testDatabaseTemplateUrl");
  if (template) {
    const url = new URL(template);
    const name = `${url.pathname.slice(1)}_p${process.pid}`;
    await adminQuery(template, `create database "${name}" template "${url.pathname.slice(1)}"`);
    url.pathname = `/${name}`;
    return { database: await openDatabase(url.toString()), url: url.toString() };
  }
  const snapshotPath = inject("pgliteSnapshotPath");
  if (!snapshotPath) throw new Error("The global setup did not prepare a database.");
  return { database: await openDatabase("memory://", { pgliteDump: new Blob([readFileSync(snapshotPath)]) }), url: null };
}

/** A statement on the template's server, from the `postgres` maintenance database (CREATE DATABASE cannot run inside the template). */
async function adminQuery(templateUrl: string, sql: string): Promise<void> {
  const url = new URL(templateUrl);
  url.pathname = "/postgres";
  for (let attempt = 1; ; attempt++) {
    const client = new pg.Client({ connectionString: url.toString() });
    try {
      await client.connect();
      await client.query(sql);
      return;
    } catch (error) {
      // 55006: the template is being copied by another worker's CREATE DATABASE at this moment.
      if ((error as { code?: string }).code !== "55006" || attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    } finally {
      await client.end().catch(() => {});
    }
  }
}

/** Deliveries go out as `npm start` sends them: through the checked connections of src/node/outbound-fetch.ts. */
export async function createHarness(options: HarnessOptions = {}) {
  const database = await openTestDatabase();
  const urlPolicy = options.background?.urlPolicy ?? LOCAL_RECEIVERS_POLICY;
  const background = { urlPolicy, fetch: nodeOutboundFetch(urlPolicy), ...options.background };
  return inProcessHarness(database.db, { ...options, background }, () => database.close());
}
