/**
 * Node test harness: a real database (PGlite from the run's snapshot, or the run's own Postgres
 * database), the app built by createApp and called in process, a manual clock, and the fixtures
 * of harness-core.ts. Each file creates its own organizations, so files never depend on each
 * other or on order. The workerd suite swaps this module for test/worker/support/harness.ts.
 */
import { readFileSync } from "node:fs";
import { inject } from "vitest";
import { openDatabase, type OpenedDatabase } from "../../src/node/database";
import { nodeOutboundFetch } from "../../src/node/outbound-fetch";
import { type HarnessOptions, LOCAL_RECEIVERS_POLICY, inProcessHarness } from "./harness-core";

export * from "./harness-core";

export async function openTestDatabase(): Promise<OpenedDatabase> {
  const url = inject("testDatabaseUrl");
  if (url) return openDatabase(url);
  const snapshotPath = inject("pgliteSnapshotPath");
  if (!snapshotPath) throw new Error("The global setup did not prepare a database.");
  return openDatabase("memory://", { pgliteDump: new Blob([readFileSync(snapshotPath)]) });
}

/** Deliveries go out as `npm start` sends them: through the checked connections of src/node/outbound-fetch.ts. */
export async function createHarness(options: HarnessOptions = {}) {
  const database = await openTestDatabase();
  const urlPolicy = options.background?.urlPolicy ?? LOCAL_RECEIVERS_POLICY;
  const background = { urlPolicy, fetch: nodeOutboundFetch(urlPolicy), ...options.background };
  return inProcessHarness(database.db, { ...options, background }, () => database.close());
}
