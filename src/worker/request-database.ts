/**
 * The Worker's app is built once per isolate, but its database is per request: each request gets
 * its own Neon Pool (created and ended within the request; workerd forbids using one request's
 * sockets from another). `requestDatabase` is the one `Database` the app is built with; every
 * property access resolves to the Drizzle instance of the request being served, which
 * `withRequestDatabase` installs in an AsyncLocalStorage (node:async_hooks, under nodejs_compat)
 * for the duration of that request's handling. Concurrent requests in one isolate each see their
 * own. Used outside a request (nothing does), it throws rather than fall back to another
 * request's database.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Database } from "../db/types";

const current = new AsyncLocalStorage<Database>();

/** Runs `fn` with `db` as the database every use of `requestDatabase` inside it resolves to. */
export function withRequestDatabase<T>(db: Database, fn: () => Promise<T>): Promise<T> {
  return current.run(db, fn);
}

function currentDatabase(): Database {
  const db = current.getStore();
  if (db === undefined) throw new Error("No request database: requestDatabase was used outside withRequestDatabase (src/worker/request-database.ts).");
  return db;
}

/**
 * Delegates to the current request's Drizzle database. Methods are bound to that instance, so a
 * query builder or transaction started through it belongs to the request wholly; nothing is kept
 * here between calls.
 */
export const requestDatabase: Database = new Proxy(Object.create(null) as Database, {
  get(_target, property) {
    const db = currentDatabase();
    const value: unknown = Reflect.get(db, property, db);
    return typeof value === "function" && property !== "constructor" ? value.bind(db) : value;
  },
  has(_target, property) {
    return Reflect.has(currentDatabase(), property);
  },
  getPrototypeOf() {
    return Reflect.getPrototypeOf(currentDatabase());
  },
  set() {
    throw new TypeError("requestDatabase is read-only.");
  },
});
