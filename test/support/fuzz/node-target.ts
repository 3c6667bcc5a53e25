/**
 * The fuzz target on Node: the app in process (as the harness builds it) over the test database,
 * and beside it the same app with one dependency down: the database (a pool whose connections
 * are refused), the key counters (they throw), the run queue (it rejects). Used by
 * test/app/fuzz.test.ts and `npm run fuzz`.
 */
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import * as schema from "../../../src/db/schema";
import type { Database } from "../../../src/db/types";
import type { KeyCounter } from "../../../src/auth/key-state";
import type { RateLimitPolicy } from "../../../src/lib/rate-limit";
import { type Harness, inProcessHarness } from "../harness-core";
import type { Fault, FuzzTarget } from "./fuzz";

const unavailable = (what: string) => () => Promise.reject(new Error(`${what} is unavailable (injected by the fuzz suite)`));

export function nodeFuzzTarget(h: Harness, options: { rateLimit?: RateLimitPolicy } = {}): FuzzTarget & { close(): Promise<void> } {
  // Port 9 (discard) has no Postgres: every connection is refused, as when the server is down.
  const refused = new pg.Pool({ connectionString: "postgres://nobody@127.0.0.1:9/none", connectionTimeoutMillis: 2000 });
  refused.on("error", () => {});
  const downCounter: KeyCounter = { admit: unavailable("the key counter"), revoke: unavailable("the key counter") };
  const base = { rateLimit: options.rateLimit };
  const noClose = async () => {};
  const apps: Record<Fault, Harness> = {
    database: inProcessHarness(h.db, { ...base, overrides: { db: drizzle(refused, { schema }) as unknown as Database } }, noClose),
    counter: inProcessHarness(h.db, { ...base, overrides: { keyCounter: downCounter, uploadCounter: downCounter } }, noClose),
    queue: inProcessHarness(h.db, { ...base, overrides: { runQueue: { send: unavailable("the run queue") } } }, noClose),
  };
  return {
    faults: ["database", "counter", "queue"],
    send: (request, fault) => (fault ? apps[fault] : h).app.request(request as unknown as string),
    close: () => refused.end(),
  };
}
