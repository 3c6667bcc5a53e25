/** Settings and helpers shared by the benchmark scripts (their record: bench/report.ts). */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { type OpenedDatabase, openDatabase } from "../src/node/database";
import { type RequestDeps, createApp } from "../src/app";
import { InMemoryKeyCounter } from "../src/auth/in-memory-key-counter";
import { InProcessRunQueue } from "../src/node/in-process-run-queue";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";

/** Quota high enough never to throttle the benchmark; the real in-memory key counter (rate limiter) still runs on every request. */
export const BENCH_RATE_LIMIT = { limit: 1e9, windowMs: 60_000 };

/** A benchmark's RequestDeps: as src/node/server.ts builds them, with rate limits that never throttle it (BENCH_RATE_LIMIT). */
export function benchRequestDeps(
  db: RequestDeps["db"],
  runQueue: RequestDeps["runQueue"],
  logger: Logger,
  clock: RequestDeps["clock"] = systemClock,
): RequestDeps {
  return {
    db,
    clock,
    keyCounter: new InMemoryKeyCounter(systemClock, BENCH_RATE_LIMIT),
    uploadCounter: new InMemoryKeyCounter(systemClock, BENCH_RATE_LIMIT),
    clientAddress: null,
    runQueue,
    logger,
  };
}

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

const quietLogger: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };

/**
 * The app in process over `database`, with a warm-able API key, whose pool counts the statements each
 * request sends: `request(path, apiKey)` answers the JSON body and that count (a non-200 throws).
 */
export function statementCountingApp(database: OpenedDatabase, cursorSecret: string) {
  const app = createApp({
    cursorSecret,
    publicBaseUrl: "https://api.example.com",
    webAppUrl: "https://app.example.com",
    secrets: new SecretKeyring({ current: generateSecretsKey() }),
  });
  const requestDeps = benchRequestDeps(database.db, new InProcessRunQueue(async () => {}, { logger: quietLogger }), quietLogger);
  let statements = 0;
  const pool = (database.db as unknown as { $client?: { query: (...args: unknown[]) => unknown } }).$client;
  if (!pool) throw new Error("the benchmark needs a node-postgres pool to count statements");
  const query = pool.query.bind(pool);
  pool.query = (...args: unknown[]) => {
    statements++;
    return query(...args);
  };
  return async (pathname: string, apiKey: string) => {
    const before = statements;
    const res = await app.fetch(new Request(`http://bench${pathname}`, { headers: { authorization: `Bearer ${apiKey}` } }), requestDeps);
    const body = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw new Error(`${pathname}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    return { statements: statements - before, body };
  };
}
