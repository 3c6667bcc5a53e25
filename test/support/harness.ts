/**
 * Node test harness: a real database (PGlite from the run's snapshot, or the run's own Postgres
 * database), the app built by createApp and called in process, a manual clock, and the fixtures
 * of harness-core.ts. Each file creates its own organizations, so files never depend on each
 * other or on order. The workerd suite swaps this module for test/worker/support/harness.ts.
 */
import { readFileSync } from "node:fs";
import { inject } from "vitest";
import { openDatabase, type OpenedDatabase } from "../../src/node/database";
import { type HarnessOptions, inProcessHarness } from "./harness-core";

export * from "./harness-core";

export async function openTestDatabase(): Promise<OpenedDatabase> {
  const url = inject("testDatabaseUrl");
  if (url) return openDatabase(url);
  const snapshotPath = inject("pgliteSnapshotPath");
  if (!snapshotPath) throw new Error("The global setup did not prepare a database.");
  return openDatabase("memory://", { pgliteDump: new Blob([readFileSync(snapshotPath)]) });
}

export async function createHarness(options: HarnessOptions = {}) {
  const database = await openTestDatabase();
  return inProcessHarness(database.db, options, () => database.close());
}
