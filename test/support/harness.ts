/**
 * Node test harness: a real database (PGlite from the run's snapshot, or the run's own Postgres
 * database), the app built by createApp and called in process, a manual clock, and the fixtures
 * of harness-core.ts. Each file creates its own organizations, so files never depend on each
 * other or on order. The workerd suite swaps this module for test/worker/support/harness.ts.
 */
import { readFileSync } from "node:fs";
import { inject } from "vitest";
import { createApp } from "../../src/app";
import type { AppDeps } from "../../src/app-env";
import { InMemoryKeyCounter } from "../../src/auth/in-memory-key-counter";
import { DEFAULT_RATE_LIMIT } from "../../src/lib/rate-limit";
import { openDatabase, type OpenedDatabase } from "../../src/node/database";
import { ADMIN_TOKEN, CURSOR_SECRET, type HarnessOptions, WEB_APP_URL, buildHarness, captureLogger, harnessClock } from "./harness-core";

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
  const clock = harnessClock();
  const logs: string[] = [];
  const deps: AppDeps = {
    db: database.db,
    clock,
    keyCounter: new InMemoryKeyCounter(clock, options.rateLimit ?? DEFAULT_RATE_LIMIT),
    cursorSecret: CURSOR_SECRET,
    adminToken: "adminToken" in options ? options.adminToken : ADMIN_TOKEN,
    webAppUrl: WEB_APP_URL,
    logger: captureLogger(logs),
    ...options.overrides,
  };
  const app = createApp(deps);
  return buildHarness({ app: { request: async (path, init) => app.request(path, init) }, db: database.db, clock, logs, deps, close: () => database.close() });
}
