/**
 * Opens the database named by DATABASE_URL for Node runtimes (npm start, tests, benchmarks):
 * unset → embedded PGlite persisted in ./.data/pglite, locked to this process (./data-dir-lock.ts);
 * `memory://` → a throwaway in-memory PGlite; `postgres://…` → a real server through
 * node-postgres. Same schema, migrations and SQL.
 */
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import { finished } from "node:stream/promises";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { type CopyIn, registerCopyIn } from "../db/bulk-copy";
import { foldTransactionBoundaries } from "../db/transaction-boundaries";
import { markSingleSession } from "../db/single-session";
import * as schema from "../db/schema";
import type { Database } from "../db/types";
import { type DataDirLock, lockDataDir } from "./data-dir-lock";

const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../drizzle", import.meta.url));
const DEFAULT_DATA_DIR = "./.data/pglite";

export type OpenedDatabase = {
  db: Database;
  kind: "pglite" | "postgres";
  /** Human-readable location, without credentials. */
  description: string;
  migrate(): Promise<void>;
  /**
   * Runs `work` (migrations, the demo seed, the queue's schema) while holding the start lock: on
   * Postgres a session advisory lock, so that of several processes starting at once one prepares
   * the database and the others wait, then find nothing left to do. PGlite is one process's.
   */
  withStartLock<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
};

/** The start lock's key (the one-argument form of pg_advisory_lock), apart from the transaction-scoped locks of the service. */
const START_LOCK_KEY = "ci-test-analytics: start";

/** Holds the start lock on a connection of its own for as long as `work` runs. */
async function withStartLock<T>(pool: pg.Pool, work: () => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("select pg_advisory_lock(hashtextextended($1, 0))", [START_LOCK_KEY]);
    try {
      return await work();
    } finally {
      await client.query("select pg_advisory_unlock(hashtextextended($1, 0))", [START_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export async function openDatabase(
  url: string | undefined,
  options: { dataDir?: string; pgliteDump?: Blob } = {},
): Promise<OpenedDatabase> {
  if (url && isPostgresUrl(url)) {
    const pool = new pg.Pool({ connectionString: url, max: Number(process.env.PG_POOL_MAX ?? 10) });
    listenForClientErrors(pool);
    // As on the Worker (src/worker/neon.ts): one code path for the transactions of both network drivers.
    pool.on("connect", (client) => foldTransactionBoundaries(client));
    const db = drizzlePg(pool, { schema }) as unknown as Database;
    registerCopyIn(db, pgCopyIn);
    const parsed = new URL(url);
    return {
      db,
      kind: "postgres",
      description: `PostgreSQL ${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`,
      migrate: () => migratePg(db as never, { migrationsFolder: MIGRATIONS_FOLDER }),
      withStartLock: (work) => withStartLock(pool, work),
      close: () => pool.end(),
    };
  }
  if (url !== undefined && url !== "" && url !== "memory://") {
    throw new Error(
      `Unsupported DATABASE_URL: use postgres://…, memory://, or leave it unset for the embedded database in ${DEFAULT_DATA_DIR}.`,
    );
  }
  const inMemory = url === "memory://";
  const dataDir = options.dataDir ?? DEFAULT_DATA_DIR;
  // A directory is one process's (src/node/data-dir-lock.ts): a second one stops here, before opening it.
  let lock: DataDirLock | null = null;
  if (!inMemory) {
    mkdirSync(dataDir, { recursive: true });
    lock = lockDataDir(dataDir);
  }
  let client: PGlite;
  try {
    client = await PGlite.create(inMemory ? undefined : dataDir, options.pgliteDump ? { loadDataDir: options.pgliteDump } : {});
  } catch (error) {
    lock?.release();
    throw error;
  }
  yieldAfterEachQuery(client);
  const db = drizzlePglite(client, { schema }) as unknown as Database;
  // One session: a large run is stored in slices, not one long transaction (src/services/runs/sliced-store.ts).
  markSingleSession(db);
  return {
    db,
    kind: "pglite",
    description: inMemory ? "embedded PGlite (in memory, discarded on exit)" : `embedded PGlite in ${dataDir}`,
    migrate: () => migratePglite(db as never, { migrationsFolder: MIGRATIONS_FOLDER }),
    withStartLock: (work) => work(),
    // The lock goes once everything is on disk, so the next process opens a closed database.
    close: () => client.close().finally(() => lock?.release()),
    // Exposed for tests that snapshot a migrated database.
    ...({ client } as object),
  };
}

/**
 * PGlite answers in this process, and its answers settle as microtasks: a chain of awaited
 * queries (a transaction of many statements, run processing's slices) never returned to the event
 * loop, so no request was even read, and no timer fired, until the chain ended; after a few
 * seconds the HTTP server's keep-alive timer, firing first, reset the connection a request had
 * just arrived on. Each answer is handed back after a turn of the event loop (setImmediate): other
 * requests are read and queue their queries behind the one under way (docs/uploads.md, "On the
 * embedded database").
 */
function yieldAfterEachQuery(client: PGlite): void {
  const afterTurn = <T>(result: T) => new Promise<T>((resolve) => setImmediate(() => resolve(result)));
  const query = client.query.bind(client);
  client.query = ((...args: Parameters<PGlite["query"]>) => query(...args).then(afterTurn)) as PGlite["query"];
  const transaction = client.transaction.bind(client);
  client.transaction = ((work: Parameters<PGlite["transaction"]>[0]) =>
    transaction((tx) => {
      const txQuery = tx.query.bind(tx);
      tx.query = ((...args: Parameters<typeof tx.query>) => txQuery(...args).then(afterTurn)) as typeof tx.query;
      return work(tx);
    })) as PGlite["transaction"];
}

/**
 * A pg client whose connection fails emits 'error', and an 'error' event without a listener ends
 * the process. The pool listens on its idle clients only (and re-emits as the pool's 'error'); a
 * client checked out (a transaction, a COPY, a query under way) has no listener of the pool's.
 * So every client gets one of ours from the moment it leaves the pool until it is back: the
 * failure still reaches its user (the query under way and every later one on that client reject),
 * the transaction ends there, the pool drops the dead client on release, and the work is retried
 * by whoever owns it (the request's client after a 503, the run queue for a run).
 */
function listenForClientErrors(pool: pg.Pool): void {
  const logError = (message: string) => (error: Error) =>
    console.error(JSON.stringify({ level: "error", message, error: error.message, ...("code" in error ? { code: error.code } : {}) }));
  pool.on("error", logError("postgres pool error: an idle connection failed"));
  const onCheckedOutError = logError("postgres connection failed while in use");
  // 'acquire' comes before the pool removes its idle listener, 'release' after it put it back: never a moment without one.
  pool.on("acquire", (client) => client.on("error", onCheckedOutError));
  pool.on("release", (_error, client) => client.removeListener("error", onCheckedOutError));
}

/**
 * COPY FROM STDIN on the connection of a node-postgres transaction (drizzle keeps it as the
 * transaction session's `client`). Returns null for anything else, so callers fall back to INSERT.
 */
const pgCopyIn: CopyIn = (tx, statement) => {
  const client = (tx as unknown as { session?: { client?: unknown } }).session?.client;
  if (!(client instanceof pg.Client)) return null;
  const stream = client.query(copyFrom(statement));
  // A connection that fails mid-COPY makes the stream emit 'error' and let go of the connection:
  // always listened to here, and nothing more is sent through the stream after it (it would
  // write to the connection it no longer has). `done` has rejected with that error by then.
  let failed = false;
  stream.on("error", () => (failed = true));
  const done = finished(stream);
  // Observed by end() or abort(); until then a failure must not surface as an unhandled rejection.
  done.catch(() => {});
  return {
    write: (rows) => {
      if (!failed) stream.write(rows);
    },
    end: async () => {
      if (!failed) stream.end();
      await done;
    },
    abort: async (reason) => {
      if (!failed) stream.destroy(reason);
      await done.catch(() => {});
    },
  };
};
