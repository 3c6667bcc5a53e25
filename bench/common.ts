/** Settings and helpers shared by the benchmark scripts (their record: bench/report.ts). */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { type OpenedDatabase, openDatabase } from "../src/node/database";

/** Quota high enough never to throttle the benchmark; the real in-memory key counter (rate limiter) still runs on every request. */
export const BENCH_RATE_LIMIT = { limit: 1e9, windowMs: 60_000 };

/**
 * Runs `fn` on a database made for it on the local Postgres server (migrated), and drops the
 * database afterwards, whatever happens. `postgres` is the server's version line for the report;
 * `url` the made database's, for a child process to open.
 */
export async function withBenchDatabase<T>(
  serverUrl: string,
  prefix: string,
  fn: (database: OpenedDatabase, postgres: string, url: string) => Promise<T>,
): Promise<T> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  const dbName = `${prefix}_${randomBytes(5).toString("hex")}`;
  await admin.query(`create database "${dbName}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${dbName}`;
  const database = await openDatabase(url.toString());
  try {
    await database.migrate();
    const postgres = (await admin.query<{ v: string }>("select version() as v")).rows[0]!.v.replace(/ on .*$/, "");
    return await fn(database, postgres, url.toString());
  } finally {
    await database.close();
    await admin.query(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
  }
}
