/**
 * A node-postgres pool whose clients fold transactions' BEGIN and COMMIT as the app's do
 * (src/db/transaction-boundaries.ts), with the text of every message they send recorded beneath
 * the folding: what the database receives, one entry per round trip.
 */
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import * as schema from "../../src/db/schema";
import { foldTransactionBoundaries } from "../../src/db/transaction-boundaries";
import type { Database } from "../../src/db/types";

export function recordingPool(connectionString: string, max = 1): { pool: pg.Pool; db: Database; sent: string[] } {
  const sent: string[] = [];
  const pool = new pg.Pool({ connectionString, max });
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const [config] = args;
      sent.push(typeof config === "string" ? config : (config as { text: string }).text);
      return query(...args);
    };
    foldTransactionBoundaries(client);
  });
  return { pool, db: drizzle(pool, { schema }) as unknown as Database, sent };
}
