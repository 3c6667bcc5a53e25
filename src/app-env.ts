/**
 * What the app is made of, split by lifetime:
 * - `AppConfig`: what lives as long as a process or Worker isolate (configuration, the cursor
 *   secret, the secrets keyring, the key-id cache). `createApp(config)` keeps only this.
 * - `RequestDeps`: what one request uses (its database, the key counter, the run queue, the
 *   clock, the logger, the client's address). The runtime's entry builds them for each request and hands them to
 *   `app.fetch(request, deps)`, where Hono exposes them as `c.env`: the Node entry from one shared
 *   pool, the Worker from a Neon pool opened and ended within the request.
 */
import type { KeyIdCache } from "./auth/key-gate";
import type { KeyCounter } from "./auth/key-state";
import type { Database } from "./db/types";
import type { RunQueue } from "./ingest/run-queue";
import type { PayloadStore } from "./ingest/payload-store";
import type { Clock } from "./lib/clock";
import type { Logger } from "./lib/logger";
import type { SecretKeyring } from "./lib/secret-box";
import type { Quotas } from "./lib/quotas";
import type { Retention } from "./lib/retention";
import type { SignUpMode } from "./lib/sign-up-mode";
import type { OutboundPolicy } from "./notifications/outbound-policy";
import type { OrgScope } from "./services/shared/context";
import type { AuthenticatedKey } from "./services/tenancy/organizations";

export type AppConfig = {
  /** Signs pagination cursors (≥ 16 characters). */
  cursorSecret: string;
  /** Enables /admin/v1 when set. */
  adminToken?: string;
  /**
   * Where clients reach this service (PUBLIC_BASE_URL, no trailing slash): the base of every
   * absolute URL of the API (an upload's `api_url` and `Location`, the OpenAPI documents'
   * `servers`). Never taken from a request's Host header.
   */
  publicBaseUrl: string;
  /** Base of the `url` fields (the web app's pages). */
  webAppUrl: string;
  /**
   * WEB_APP_URL is unset and the pages are on a loopback name (`localhost`, `127.0.0.1`): form
   * posts from either loopback name, same scheme and port, are the pages' own (local development:
   * wrangler prints 127.0.0.1, `npm start` localhost). Never an origin taken from a request.
   */
  webAppLoopbackAliases?: boolean;
  /**
   * The outbound policy webhooks are configured under (src/notifications/outbound-policy.ts): which
   * URLs the admin API and the pages accept (by default https to public hosts only, no operator
   * allowances) and how many webhooks an organization may have.
   */
  webhookUrlPolicy?: OutboundPolicy;
  /**
   * Quotas per organization (src/lib/quotas.ts, docs/quotas.md): projects, uploads per hour,
   * concurrent exports, stored cases. An absent field is its default; null switches it off.
   */
  quotas?: Partial<Quotas>;
  /** Who may create accounts (SIGN_UP, docs/accounts.md); unset → open. */
  signUp?: SignUpMode;
  /**
   * Whether a mail transport is configured (SMTP_URL). Without one, the account pages show the
   * link an e-mail would have carried (a sign-up's confirmation; a reset's on a local instance)
   * and say that nothing was sent.
   */
  mailConfigured?: boolean;
  /** Key-hash → key-id cache that outlives one request (per process / isolate); a fresh one if omitted. */
  keyIdCache?: KeyIdCache;
  /** Seals the secrets kept for reading back (webhook signing secrets) under SECRETS_KEY (docs/secrets.md). */
  secrets: SecretKeyring;
  /** Rows per database statement of the bulk exports (default in src/services/runs/exports.ts); tests lower it to cross batches with little data. */
  exportBatchRows?: number;
  /**
   * Largest upload body as sent, compressed or not (413 above it); UPLOAD_LIMIT_BYTES (32 MiB) when
   * unset. The Worker may set less (its UPLOAD_LIMIT_BYTES; docs/uploads.md#limits).
   */
  uploadLimitBytes?: number;
  /**
   * Largest report once a gzip body is inflated (413 above it). Unset: the body limit, and a gzip
   * body is read whole. Above the body limit, a gzip body is streamed to the payload store (the
   * Worker's R2; else the database's, which needs a Postgres server: PGlite's one session is held by
   * the run's transaction while the consumer reads it). The Worker and Node on Postgres set
   * INFLATED_LIMIT_BYTES (256 MiB; docs/uploads.md#limits).
   */
  inflatedLimitBytes?: number;
  /** RUN_QUIET_PERIOD_SECONDS in ms (src/lib/run-quiet-period.ts): a run in parts completes this long after its last part. */
  runQuietPeriodMs?: number;
  /** RETENTION_DAYS and SUMMARY_RETENTION_DAYS (src/lib/retention.ts): what reads past retention answer, what a project may set. */
  retention?: Retention;
};

export type RequestDeps = {
  db: Database;
  clock: Clock;
  /**
   * Per-credential authority: for API keys the organization, revoked mark and rate window; for
   * upload tokens the project's rate window (in memory on Node, a Durable Object per key or
   * project on Workers).
   */
  keyCounter: KeyCounter;
  uploadCounter: KeyCounter;
  /** Where accepted uploads go to be processed (a Cloudflare Queue on Workers, in process on Node). */
  runQueue: RunQueue;
  logger: Logger;
  /**
   * Where uploads (JUnit XML and JSON) are streamed instead of being read whole (the Worker's R2 bucket);
   * without one (Node), the body is read and its text stored in the database.
   */
  payloadStore?: PayloadStore;
  /**
   * The client's IP address, normalised (src/lib/client-address.ts), as the runtime's entry found
   * it, never read by the app from request headers: on Node the connection's peer, or, from a
   * proxy named in TRUSTED_PROXIES, the right-most X-Forwarded-For entry that is not a trusted
   * proxy; on Workers `CF-Connecting-IP`. Null when unknown. The sign-in throttle counts by it.
   */
  clientAddress: string | null;
  /**
   * The edge cache's side of this request (the Worker only; docs/edge-path.md, "Edge-cached
   * reads"): absent on Node, which has no edge cache.
   */
  edgeCache?: EdgeCacheHooks;
};

/** The credential a request was admitted with: the edge serves that credential's next reads of the organization. */
export type EdgeCredential = { organizationId: string; counter: "key" | "upload"; counterId: string };

/**
 * What the app tells the edge cache. `beforeWrite` is awaited before a request that may write an
 * organization's data runs its writes: it marks the organization's edge-cached answers bypassed
 * (the Worker releases the bypass once the request's writes are committed), and it throws when it
 * cannot, so that nothing is written that a cached answer could contradict.
 */
export type EdgeCacheHooks = {
  admitted(credential: EdgeCredential): void;
  beforeWrite(organizationId: string): Promise<void>;
  /** The answer must not be served from the edge at or after this moment (ms since the epoch): a quarantine's end. */
  expires(atMs: number): void;
  /** Whether the request may write (any method but GET and HEAD). */
  readonly writes: boolean;
};

export type AppEnv = {
  Bindings: RequestDeps;
  Variables: {
    requestId: string;
    auth: AuthenticatedKey;
    scope: OrgScope;
  };
};
