import type { Database } from "./db/types";
import type { Clock } from "./lib/clock";
import type { RateLimiter } from "./lib/rate-limit";
import type { AuthenticatedKey } from "./services/organizations";
import type { OrgScope } from "./services/context";

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const consoleLogger: Logger = {
  info: (message, fields) => console.log(JSON.stringify({ level: "info", message, ...fields })),
  error: (message, fields) => console.error(JSON.stringify({ level: "error", message, ...fields })),
};

/** Everything the app needs; runtime entries (Node, Worker) build this and nothing else. */
export type AppDeps = {
  db: Database;
  clock: Clock;
  rateLimiter: RateLimiter;
  /** Signs pagination cursors (≥ 16 characters). */
  cursorSecret: string;
  /** Enables /admin/v1 when set. */
  adminToken?: string;
  /** Base of the `url` fields. */
  webAppUrl: string;
  logger?: Logger;
  /** Called after a key is replaced, before the new key is returned (edge caches hook revocation here). */
  onApiKeysRevoked?: (revokedKeyIds: string[]) => Promise<void>;
};

export type AppEnv = {
  Variables: {
    requestId: string;
    auth: AuthenticatedKey;
    scope: OrgScope;
  };
};
