import type { QueueMessage } from "../ingest/run-queue";
import type { KeyCounterObject } from "./key-counter-object";

/** Bindings of the Worker (wrangler.toml); checked by `npm run typecheck`. */
export interface WorkerEnv {
  /** Postgres connection string (Neon in production). Secret. */
  DATABASE_URL: string;
  /** Signs pagination cursors. Secret; when unset, one is generated and kept in the database. */
  CURSOR_SECRET?: string;
  /** Enables /admin/v1. Secret. */
  ADMIN_TOKEN?: string;
  /** Base of the `url` fields. */
  WEB_APP_URL?: string;
  /** Local development and tests only: host:port of the WebSocket bridge standing in for Neon's proxy. */
  LOCAL_NEON_PROXY?: string;
  /** One Durable Object per API key: organization, revoked mark, rolling rate window. */
  KEY_COUNTER: DurableObjectNamespace<KeyCounterObject>;
  /** One Durable Object per project: its upload token's rolling rate window. */
  UPLOAD_COUNTER: DurableObjectNamespace<KeyCounterObject>;
  /** Producer of the run queue: accepted uploads wait here to be processed (the same Worker consumes it). */
  RUN_QUEUE: Queue<QueueMessage>;
}
