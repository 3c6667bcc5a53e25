import type { Database } from "./db/types";
import type { Clock } from "./lib/clock";
import type { KeyIdCache } from "./auth/key-gate";
import type { KeyCounter } from "./auth/key-state";
import type { AuthenticatedKey } from "./services/organizations";
import type { OrgScope } from "./services/context";
import type { RunQueue } from "./services/run-processing";
import type { UrlPolicy } from "./notifications/url-policy";

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** One JSON line per entry; `level` and `message` always win over same-named fields. */
export const consoleLogger: Logger = {
  info: (message, fields) => console.log(JSON.stringify({ ...fields, level: "info", message })),
  error: (message, fields) => console.error(JSON.stringify({ ...fields, level: "error", message })),
};

/** Everything the app needs; runtime entries (Node, Worker) build this and nothing else. */
export type AppDeps = {
  db: Database;
  clock: Clock;
  /** Per-key authority: organization, revoked mark and rate window (in memory on Node, a Durable Object per key on Workers). */
  keyCounter: KeyCounter;
  /** Key-hash → key-id cache that outlives one request (per process / isolate); a fresh one if omitted. */
  keyIdCache?: KeyIdCache;
  /** Signs pagination cursors (≥ 16 characters). */
  cursorSecret: string;
  /** Enables /admin/v1 when set. */
  adminToken?: string;
  /** Base of the `url` fields. */
  webAppUrl: string;
  /** Where accepted uploads go to be processed (a Cloudflare Queue on Workers, in process on Node). */
  runQueue: RunQueue;
  /** Which webhook URLs the admin API accepts; by default https to public hosts only. */
  webhookUrlPolicy?: UrlPolicy;
  logger?: Logger;
};

export type AppEnv = {
  Variables: {
    requestId: string;
    auth: AuthenticatedKey;
    scope: OrgScope;
  };
};
