/**
 * The round-trip budget of the Worker path (issue 18): the real Worker under `wrangler dev`
 * (workerd, the Neon driver over WebSocket, its Durable Objects and queue) against this run's
 * database (PGlite, or TEST_DATABASE_URL's Postgres) through the counting bridge of
 * src/node/local-neon. Each request type of bench/edge-requests.ts must stay within its budget
 * (EDGE_BUDGETS, the one table of budgets): a change that adds a round trip or a statement fails here.
 * No network delay is emulated: round trips are counted, not timed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDatabaseUrl } from "../support/harness";
import {
  EDGE_BUDGETS,
  EDGE_REQUEST_TYPES,
  type EdgeFixture,
  measureRequest,
  measureUpload,
  overBudget,
  prepareEdgeFixture,
  seedAlertEventsSql,
} from "../../bench/edge-requests";
import { type WranglerDev, startWranglerDev } from "../../bench/limiter-wrangler";
import { type LocalDatabase, startLocalDatabase } from "../../src/node/local-neon";
import { ADMIN_TOKEN, CURSOR_SECRET, PUBLIC_BASE_URL, SECRETS_KEY, WEB_APP_URL } from "../support/constants";

let local: LocalDatabase;
let worker: WranglerDev;
let fixture: EdgeFixture;
let persistTo: string;

const rowsOf = (result: unknown) => (result as { rows: Record<string, unknown>[] }).rows;

beforeAll(async () => {
  local = await startLocalDatabase({ databaseUrl: (await testDatabaseUrl()) ?? "memory://", log: () => {} });
  if (!local.bridge) throw new Error("the test database must be on this machine");
  persistTo = mkdtempSync(join(tmpdir(), "cia-edge-"));
  // Both Workers, as deployed and as `npm run dev` runs them: the edge Worker in front of the placed one.
  worker = await startWranglerDev({
    label: "edge round trips",
    edge: true,
    persistTo,
    vars: {
      DATABASE_URL: local.workerDatabaseUrl,
      LOCAL_NEON_PROXY: local.localNeonProxy!,
      ADMIN_TOKEN,
      CURSOR_SECRET,
      SECRETS_KEY,
      PUBLIC_BASE_URL,
      WEB_APP_URL,
    },
  });
  fixture = await prepareEdgeFixture(worker.baseUrl, ADMIN_TOKEN);
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await local?.close();
  if (persistTo) rmSync(persistTo, { recursive: true, force: true });
});

const counters = async () => local.bridge!.counters();
const status = async (number: number) =>
  String(
    rowsOf(
      await local.database.db.execute(sql`select status from test_runs where project_id = ${fixture.projectId} and number = ${number}`),
    )[0]?.status ?? "missing",
  );

describe("round trips of the Worker path, within their budgets (bench/edge-requests.ts EDGE_BUDGETS)", () => {
  it("an upload and its processing by the queue consumer", async () => {
    // A warm upload token first (its project's counter object), then the measured ones.
    await measureUpload(fixture, 0, counters, status, 1_000);
    const over: string[] = [];
    for (let i = 1; i <= 2; i++) {
      const { upload, processing } = await measureUpload(fixture, i, counters, status, 1_000);
      over.push(
        ...overBudget("upload", upload.counters, EDGE_BUDGETS.upload!),
        ...overBudget("processing", processing.counters, EDGE_BUDGETS.processing!),
      );
    }
    expect(over).toEqual([]);
  });

  it("each API request type with a warm key", async () => {
    // The events page with events (an empty page also asks whether the alert exists).
    await local.database.db.execute(sql.raw(seedAlertEventsSql(fixture)));
    const over: string[] = [];
    for (const type of EDGE_REQUEST_TYPES) {
      // Three warm-ups: the edge learns the credential, then stores the answer, then serves it.
      for (let i = 0; i < 3; i++) await measureRequest(type, fixture, 0, counters);
      for (let i = 1; i <= 2; i++)
        over.push(...overBudget(type.label, (await measureRequest(type, fixture, i, counters)).counters, EDGE_BUDGETS[type.key]!));
    }
    expect(over).toEqual([]);
  });
});
