import type { QueueBody } from "./run-queue";
import type { KeyCounterObject } from "./key-counter-object";
import type { EdgeCacheObject } from "./edge-cache-object";

/** Bindings of the Worker (wrangler.toml); checked by `npm run typecheck`. */
export interface WorkerEnv {
  /** Postgres connection string (Neon in production). Secret. */
  DATABASE_URL: string;
  /** Signs pagination cursors. Secret; when unset, one is generated and kept in the database. */
  CURSOR_SECRET?: string;
  /**
   * Seals webhook signing secrets (≥ 32 characters). Secret, required: without it the Worker
   * answers 503 and logs why (docs/secrets.md).
   */
  SECRETS_KEY?: string;
  /** Older keys, separated by commas, that still open secrets sealed under them while they are re-sealed. Secret. */
  SECRETS_KEY_PREVIOUS?: string;
  /** Enables /admin/v1. Secret. */
  ADMIN_TOKEN?: string;
  /** Where clients reach the service: the base of `api_url`, `Location` and the OpenAPI `servers` (never the request's Host). */
  PUBLIC_BASE_URL?: string;
  /** Base of the `url` fields (the web app's pages); unset → PUBLIC_BASE_URL. */
  WEB_APP_URL?: string;
  /** Where the outbox's e-mail is sent: `smtp://user:password@host:587` or `smtps://…:465` (docs/e-mail.md). Secret; unset → mail is held in the outbox. */
  SMTP_URL?: string;
  /** The e-mails' From header; unset → `CI test analytics <no-reply@<web app host>>`. */
  MAIL_FROM?: string;
  /**
   * Largest upload body in bytes as sent, compressed or not ([vars] of wrangler.toml; docs/uploads.md#limits).
   * Unset: the interface's 32 MiB. At most 32 MiB.
   */
  UPLOAD_LIMIT_BYTES?: string;
  /**
   * Largest report in bytes once a gzip body is inflated (docs/uploads.md#limits): the consumer
   * streams it in bounded memory whatever its size. Unset: the interface's 256 MiB. At most 256 MiB.
   */
  INFLATED_LIMIT_BYTES?: string;
  /**
   * Hosts (or host:port) webhooks may reach although internal, over http too: local development
   * and tests only; unset → none (docs/outbound-policy.md).
   */
  OUTBOUND_ALLOW_HOSTS?: string;
  /** Most webhooks per organization; unset → 10. */
  WEBHOOKS_PER_ORGANIZATION?: string;
  /** Most webhook deliveries sent per organization and minute, the rest wait in the queue; unset → 600. */
  WEBHOOK_DELIVERIES_PER_MINUTE?: string;
  /**
   * Quotas per organization ([vars] of wrangler.toml; docs/quotas.md): projects (unset → 1000),
   * uploads per hour (unset → 10000), exports at once (unset → 2), stored test cases (unset →
   * 50000000); `0` or `unlimited`: no cap.
   */
  QUOTA_PROJECTS?: string;
  QUOTA_UPLOADS_PER_HOUR?: string;
  QUOTA_CONCURRENT_EXPORTS?: string;
  QUOTA_STORED_CASES?: string;
  /** Who may create accounts: open (the default), invite-only or off (docs/accounts.md). */
  SIGN_UP?: string;
  /** How long after its last part a run in parts completes by itself (docs/uploads.md); 600 when unset. */
  RUN_QUIET_PERIOD_SECONDS?: string;
  /** Days test cases and payloads are kept (a project may set its own); 90 when unset (docs/retention.md). */
  RETENTION_DAYS?: string;
  /** Days runs' summaries and the daily rollups are kept; 400 when unset (docs/retention.md). */
  SUMMARY_RETENTION_DAYS?: string;
  /** Local development and tests only: host:port of the WebSocket bridge standing in for Neon's proxy. */
  LOCAL_NEON_PROXY?: string;
  /** One Durable Object per API key: organization, revoked mark, rolling rate window. */
  KEY_COUNTER: DurableObjectNamespace<KeyCounterObject>;
  /** One Durable Object per project: its upload token's rolling rate window. */
  UPLOAD_COUNTER: DurableObjectNamespace<KeyCounterObject>;
  /**
   * One Durable Object per organization: the answers the edge Worker serves without the database,
   * and the bypasses writes open on them (docs/edge-path.md). Absent: nothing is bracketed.
   */
  EDGE_CACHE?: DurableObjectNamespace<EdgeCacheObject>;
  /** The static files of public/ (wrangler.toml `[assets]`): the /docs page's scripts. */
  ASSETS?: Fetcher;
  /**
   * The bucket uploads (JUnit XML and JSON) are streamed to while they arrive, read back by the queue
   * consumer and deleted once their run is processed or failed (wrangler.toml `[[r2_buckets]]`).
   * Absent: uploads are read whole and stored in Postgres, as on Node.
   */
  PAYLOADS?: R2Bucket;
  /** Producer of the run queue: accepted uploads wait here to be processed (the same Worker consumes it). */
  RUN_QUEUE: Queue<QueueBody>;
}
