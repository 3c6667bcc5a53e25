/**
 * The Worker entry (wrangler.toml `main`). The app is the same as on Node (createApp), built once
 * per isolate from configuration; a request's dependencies are built per request and passed to
 * `app.fetch(request, deps)`: Drizzle over a Neon Pool (WebSocket) opened and ended within the
 * request (workerd forbids using one request's sockets from another), the Durable Object
 * counters, the run queue. Design: docs/edge-auth.md.
 */
import { drizzle } from "drizzle-orm/neon-serverless";
import { type App, type RequestDeps, createApp } from "../app";
import { KeyIdCache } from "../auth/key-gate";
import type { KeyCounter } from "../auth/key-state";
import { CHECKS } from "../checks";
import * as schema from "../db/schema";
import type { Database } from "../db/types";
import { type Clock, systemClock } from "../lib/clock";
import { configuredBaseUrl } from "../lib/base-url";
import { clientAddressFromCloudflare } from "../lib/client-address";
import { consoleLogger } from "../lib/logger";
import { describeError } from "../lib/errors";
import { NDJSON_CONTENT_TYPE } from "../lib/ndjson";
import { SecretKeyring, parseKeyList } from "../lib/secret-box";
import { INFLATED_LIMIT_BYTES, UPLOAD_LIMIT_BYTES } from "../ingest/upload-body";
import { guardedFetch, outboundPolicyFrom } from "../notifications/outbound-policy";
import { backgroundWork } from "../services/background-work";
import { getOrCreateSetting, randomSecret } from "../services/shared/settings";
import { reencryptSigningSecrets } from "../services/notifications/webhook-secrets";
import { requeueStalledWork } from "../services/stalled-work";
import { sendDueDigests } from "../services/notifications/digest";
import { sweepOrphanedPayloads } from "../services/runs/payload-sweep";
import { sweepRetention } from "../services/runs/retention-sweep";
import { DurableObjectKeyCounter } from "./durable-object-key-counter";
import { EDGE_CREDENTIAL_HEADER, EDGE_EXPIRES_HEADER, EDGE_REQUEST_HEADER, EdgeCacheBracket } from "./edge-cache-bracket";
import { organizationOfQueuedMessage } from "./edge-cache-queue";
import type { QueueMessage } from "../ingest/run-queue";
import { type MailSettings, mailFromAddress } from "../mail/transport";
import { workerSmtpTransport } from "./smtp-transport";
import type { WorkerEnv } from "./env";
import { configureLocalProxy, requestPool } from "./neon";
import { CloudflareRunQueue, type QueueBody, consumeRunBatch, requeueOn } from "./run-queue";
import { R2PayloadStore } from "./r2-payload-store";
import { quotasFrom } from "../lib/quotas";
import { runQuietPeriodMsFrom } from "../lib/run-quiet-period";
import { retentionFrom } from "../lib/retention";
import { signUpModeFrom } from "../lib/sign-up-mode";

export { KeyCounterObject, UploadCounterObject } from "./key-counter-object";
export { EdgeCacheObject } from "./edge-cache-object";

export type WorkerOptions = {
  /** The API keys' counter; by default the key's Durable Object. The benchmark swaps in an in-memory one. */
  keyCounter?: (env: WorkerEnv) => KeyCounter;
  /** The Worker's clock; the system's unless a test composes the Worker with its own. */
  clock?: Clock;
};

/** PUBLIC_BASE_URL ([vars] of wrangler.toml; `npm run dev` passes the local one); unset → the local default of `npm start`. */
const publicBaseUrlOf = (env: WorkerEnv) => configuredBaseUrl(env.PUBLIC_BASE_URL || "http://localhost:8787", "PUBLIC_BASE_URL");
/** WEB_APP_URL, else the public base URL. */
const webAppUrlOf = (env: WorkerEnv) => (env.WEB_APP_URL ? configuredBaseUrl(env.WEB_APP_URL, "WEB_APP_URL") : publicBaseUrlOf(env));
/** A limit in bytes from [vars]: a whole number from 1024 to `max`; unset or empty → `max`. */
function byteLimitOf(name: string, value: string | undefined, max: number): number {
  const text = value?.trim() ?? "";
  if (text === "") return max;
  const limit = Number(text);
  if (!/^\d+$/.test(text) || limit < 1024 || limit > max) {
    throw new Error(`${name} must be a whole number of bytes from 1024 to ${max}; it is '${text.slice(0, 40)}'.`);
  }
  return limit;
}

/** UPLOAD_LIMIT_BYTES: the body as sent, a whole number of bytes up to the interface's 32 MiB; unset or empty → 32 MiB. */
export const uploadLimitOf = (env: Pick<WorkerEnv, "UPLOAD_LIMIT_BYTES">): number =>
  byteLimitOf("UPLOAD_LIMIT_BYTES", env.UPLOAD_LIMIT_BYTES, UPLOAD_LIMIT_BYTES);

/** INFLATED_LIMIT_BYTES: a gzip body's report once inflated, up to the interface's 256 MiB; unset or empty → 256 MiB. */
export const inflatedLimitOf = (env: Pick<WorkerEnv, "INFLATED_LIMIT_BYTES">): number =>
  byteLimitOf("INFLATED_LIMIT_BYTES", env.INFLATED_LIMIT_BYTES, INFLATED_LIMIT_BYTES);

/** The uploads' bucket (R2), when bound. */
const payloadStoreOf = (env: WorkerEnv) => (env.PAYLOADS ? new R2PayloadStore(env.PAYLOADS) : undefined);
/**
 * The outbound policy, as on Node (docs/outbound-policy.md): OUTBOUND_ALLOW_HOSTS (none unless set:
 * `npm run dev` passes the variable on) and the caps. Workers cannot pin the address a name
 * resolves to; the URL rules apply here and Cloudflare's egress never reaches private networks.
 */
const urlPolicyOf = (env: WorkerEnv) => outboundPolicyFrom(env);
/** SMTP over TCP sockets when SMTP_URL is set; else the outbox holds the mail (never logged with its links on a Worker). */
export const mailOf = (env: WorkerEnv): MailSettings => ({
  transport: env.SMTP_URL ? workerSmtpTransport(env.SMTP_URL) : null,
  from: mailFromAddress(env.MAIL_FROM, webAppUrlOf(env)),
  logHeldBodies: false,
});

/** A file of public/ from the assets binding, or null when the request is not for one, or public/ does not hold it. */
async function assetOf(request: Request, env: WorkerEnv): Promise<Response | null> {
  if (!env.ASSETS || !new URL(request.url).pathname.startsWith("/assets/")) return null;
  const asset = await env.ASSETS.fetch(request);
  return asset.status !== 404 ? asset : null;
}

/** The answer when the app cannot be reached at all. */
function unavailableBeforeApp(error: unknown): Response {
  // Only reached when deps cannot be built (the database is unreachable for the cursor secret,
  // SECRETS_KEY is missing). Answered like the app answers: the envelope, with a Request-Id the log keeps.
  const requestId = crypto.randomUUID();
  consoleLogger.error("worker failed before the app", { requestId, error: error instanceof Error ? error.message : String(error) });
  return Response.json(
    { error: { code: "service_unavailable", message: "The service cannot serve requests right now; retry shortly." } },
    {
      status: 503,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "x-content-type-options": "nosniff",
        "cache-control": "no-store",
        "request-id": requestId,
        "retry-after": "1",
      },
    },
  );
}

/**
 * A request's dependencies over its database: the Durable Object counters, the run queue, the
 * payloads' bucket, and the client's address: `CF-Connecting-IP`, which Cloudflare's edge sets
 * (replacing any a client sent), so it cannot be forged; null without one.
 */
function requestDepsOf(
  request: Request,
  env: WorkerEnv,
  db: Database,
  clock: Clock,
  keyCounterFor: (env: WorkerEnv) => KeyCounter,
  edgeCache: EdgeCacheBracket,
): RequestDeps {
  return {
    edgeCache,
    db,
    clock,
    keyCounter: keyCounterFor(env),
    uploadCounter: new DurableObjectKeyCounter(env.UPLOAD_COUNTER),
    runQueue: new CloudflareRunQueue(env.RUN_QUEUE),
    logger: consoleLogger,
    payloadStore: payloadStoreOf(env),
    clientAddress: clientAddressFromCloudflare(request.headers.get("cf-connecting-ip")),
  };
}

/** What the queue's messages run, over the batch's database (`secrets`: the isolate's keyring, read when the work is built). */
function backgroundWorkOf(env: WorkerEnv, db: Database, clock: Clock, secrets: () => SecretKeyring) {
  const policy = urlPolicyOf(env);
  return backgroundWork({
    db,
    clock,
    logger: consoleLogger,
    webAppUrl: webAppUrlOf(env),
    queue: new CloudflareRunQueue(env.RUN_QUEUE),
    checks: CHECKS,
    urlPolicy: policy,
    fetch: guardedFetch(policy, (input, init) => fetch(input, init)),
    secrets: secrets(),
    mail: mailOf(env),
    payloadStore: payloadStoreOf(env),
  });
}

/**
 * The cron trigger's work (wrangler.toml `[triggers]`), on a pool of its own: queues again the
 * work whose message was lost, deletes the bucket's payload objects that no run holds, runs the
 * retention sweep (src/services/runs/retention-sweep.ts: bounded batches), then sends
 * the weekly digests that are due (src/services/notifications/digest.ts: each organization's week
 * claimed once, so a late or repeated trigger sends nothing twice).
 */
async function sweepStalledWork(env: WorkerEnv, ctx: ExecutionContext, clock: Clock, secrets: () => SecretKeyring): Promise<void> {
  configureLocalProxy(env);
  const pool = requestPool(env, "scheduled");
  try {
    const db = drizzle(pool, { schema }) as unknown as Database;
    const queue = new CloudflareRunQueue(env.RUN_QUEUE);
    await requeueStalledWork({ db, clock, queue, logger: consoleLogger });
    await sweepOrphanedPayloads({ db, clock, store: payloadStoreOf(env), logger: consoleLogger });
    // A failing sweep is logged and left to the next trigger; the digests still go.
    await sweepRetention({ db, clock, logger: consoleLogger, retention: retentionFrom(env), payloadStore: payloadStoreOf(env) }).catch(
      (error: unknown) => consoleLogger.error("could not run the retention sweep", { error: describeError(error) }),
    );
    await sendDueDigests({ db, clock, queue, logger: consoleLogger, webAppUrl: webAppUrlOf(env), secrets: secrets() });
  } finally {
    ctx.waitUntil(pool.end());
  }
}

/** The answer, with the credential it was admitted with and its expiry, when the edge Worker asked (src/worker/edge/index.ts removes them). */
function withEdgeCredential(request: Request, response: Response, edgeCache: EdgeCacheBracket): Response {
  const credential = edgeCache.credential;
  if (!credential || !request.headers.has(EDGE_REQUEST_HEADER)) return response;
  const marked = new Response(response.body, response);
  marked.headers.set(EDGE_CREDENTIAL_HEADER, `${credential.counter} ${credential.counterId} ${credential.organizationId}`);
  if (edgeCache.expiresAtMs !== null) marked.headers.set(EDGE_EXPIRES_HEADER, String(edgeCache.expiresAtMs));
  return marked;
}

export function createWorkerHandler(options: WorkerOptions = {}): ExportedHandler<WorkerEnv, QueueBody> {
  const clock = options.clock ?? systemClock;
  const keyCounterFor = options.keyCounter ?? ((env: WorkerEnv) => new DurableObjectKeyCounter(env.KEY_COUNTER));
  /** Isolate-lifetime cache of key hash → key id: the mapping never changes and holds no secret (docs/edge-auth.md). */
  const keyIdCache = new KeyIdCache();
  /**
   * The app, built on the first request and kept for the isolate's life: bindings are the same
   * on every request of an isolate (a new deployment or secret is a new isolate). It is built on
   * a request because the cursor secret may have to be read from the database. It holds no
   * request's I/O objects.
   */
  let app: App | undefined;
  /** The keyring of SECRETS_KEY (and SECRETS_KEY_PREVIOUS), for the isolate's life: bindings change only with a new isolate. */
  let secrets: SecretKeyring | undefined;

  function secretsFor(env: WorkerEnv): SecretKeyring {
    if (secrets) return secrets;
    if (!env.SECRETS_KEY) throw new Error("SECRETS_KEY is not set: `npx wrangler secret put SECRETS_KEY` (docs/secrets.md).");
    secrets = new SecretKeyring({ current: env.SECRETS_KEY, previous: parseKeyList(env.SECRETS_KEY_PREVIOUS) });
    return secrets;
  }

  async function appFor(env: WorkerEnv, db: Database): Promise<App> {
    if (app) return app;
    const keyring = secretsFor(env);
    const cursorSecret = env.CURSOR_SECRET || (await getOrCreateSetting(db, "cursor_secret", randomSecret));
    // Once per isolate, as `npm start` does once per process: secrets still in plain text or under an older key are sealed under SECRETS_KEY.
    await reencryptSigningSecrets({ db, secrets: keyring, logger: consoleLogger });
    app ??= createApp({
      cursorSecret,
      adminToken: env.ADMIN_TOKEN || undefined,
      publicBaseUrl: publicBaseUrlOf(env),
      webAppUrl: webAppUrlOf(env),
      // WEB_APP_URL unset: the local address wrangler prints (127.0.0.1) and localhost are both the pages' (docs/web-app.md).
      webAppLoopbackAliases: !env.WEB_APP_URL,
      webhookUrlPolicy: urlPolicyOf(env),
      quotas: quotasFrom(env),
      signUp: signUpModeFrom(env.SIGN_UP),
      mailConfigured: Boolean(env.SMTP_URL),
      keyIdCache,
      secrets: keyring,
      uploadLimitBytes: uploadLimitOf(env),
      inflatedLimitBytes: inflatedLimitOf(env),
      runQuietPeriodMs: runQuietPeriodMsFrom(env.RUN_QUIET_PERIOD_SECONDS),
      retention: retentionFrom(env),
    });
    return app;
  }

  return {
    async fetch(request, env, ctx): Promise<Response> {
      // Cloudflare serves public/ before the Worker runs; a request that reaches the Worker anyway
      // (its tests' SELF, a deploy with run_worker_first) gets the file from the assets binding,
      // and what public/ does not hold (the pages' stylesheet) from the app.
      const asset = await assetOf(request, env);
      if (asset) return asset;
      configureLocalProxy(env);
      const pool = requestPool(env, "fetch");
      /** A streamed answer reads the database while its body is sent: the pool ends when the body does. */
      let endPoolAfter: Promise<unknown> | null = null;
      const edgeCache = new EdgeCacheBracket(env.EDGE_CACHE, request.method !== "GET" && request.method !== "HEAD", consoleLogger);
      try {
        const db = drizzle(pool, { schema }) as unknown as Database;
        const deps = requestDepsOf(request, env, db, clock, keyCounterFor, edgeCache);
        const answered = await (await appFor(env, db)).fetch(request, deps, ctx);
        // The request's writes are committed (a streamed answer only reads): the bypasses it opened end here.
        await edgeCache.releaseAll();
        const response = withEdgeCredential(request, answered, edgeCache);
        if (!response.body || response.headers.get("content-type") !== NDJSON_CONTENT_TYPE) return response;
        const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
        // pipeTo settles when the body is sent, fails, or the client goes away (which cancels the export's reads).
        endPoolAfter = response.body.pipeTo(writable).catch(() => undefined);
        return new Response(readable, response);
      } catch (error) {
        await edgeCache.releaseAll();
        return unavailableBeforeApp(error);
      } finally {
        ctx.waitUntil(endPoolAfter ? endPoolAfter.then(() => pool.end()) : pool.end());
      }
    },

    /**
     * The cron trigger (wrangler.toml `[triggers]`): queues again the work whose message was lost
     * (a run still pending, an e-mail or a webhook delivery never attempted or whose retry never
     * came; src/services/stalled-work.ts), then deletes the bucket's payload objects that no run
     * holds (src/services/runs/payload-sweep.ts), runs the retention sweep, then sends the weekly digests that are due.
     */
    async scheduled(_controller, env, ctx): Promise<void> {
      await sweepStalledWork(env, ctx, clock, () => secretsFor(env));
    },

    /** Consumer of the run queue: one pool per batch, ended when the batch is done. */
    async queue(batch, env, ctx): Promise<void> {
      configureLocalProxy(env);
      const pool = requestPool(env, "queue");
      try {
        const db = drizzle(pool, { schema }) as unknown as Database;
        const work = backgroundWorkOf(env, db, clock, () => secretsFor(env));
        // The batch's runs write their organizations' data (auto-quarantine among it): bracketed for the edge cache.
        const edgeCache = new EdgeCacheBracket(env.EDGE_CACHE, true, consoleLogger);
        const bracket = async (body: QueueMessage) => {
          const organizationId = await organizationOfQueuedMessage(db, body);
          if (organizationId) await edgeCache.beforeWrite(organizationId);
        };
        try {
          await consumeRunBatch(batch, work, consoleLogger, requeueOn(env.RUN_QUEUE), bracket);
        } finally {
          await edgeCache.releaseAll();
        }
      } finally {
        ctx.waitUntil(pool.end());
      }
    },
  };
}

export default createWorkerHandler();
