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
import type { QueueMessage } from "../ingest/run-queue";
import { type Clock, systemClock } from "../lib/clock";
import { consoleLogger } from "../lib/logger";
import { backgroundWork } from "../services/background-work";
import { getOrCreateSetting, randomSecret } from "../services/settings";
import { DurableObjectKeyCounter } from "./durable-object-key-counter";
import type { WorkerEnv } from "./env";
import { configureLocalProxy, requestPool } from "./neon";
import { CloudflareRunQueue, consumeRunBatch } from "./run-queue";

export { KeyCounterObject, UploadCounterObject } from "./key-counter-object";

export type WorkerOptions = {
  /** The API keys' counter; by default the key's Durable Object. The benchmark swaps in an in-memory one. */
  keyCounter?: (env: WorkerEnv) => KeyCounter;
  /** The Worker's clock; the system's unless a test composes the Worker with its own. */
  clock?: Clock;
};

const webAppUrlOf = (env: WorkerEnv) => env.WEB_APP_URL || "http://localhost:3000";
/** http webhooks to loopback only in local development (the local Neon stand-in marks it). */
const urlPolicyOf = (env: WorkerEnv) => ({ allowLoopbackHttp: Boolean(env.LOCAL_NEON_PROXY) });

export function createWorkerHandler(options: WorkerOptions = {}): ExportedHandler<WorkerEnv, QueueMessage> {
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

  async function appFor(env: WorkerEnv, db: Database): Promise<App> {
    if (app) return app;
    const cursorSecret = env.CURSOR_SECRET || (await getOrCreateSetting(db, "cursor_secret", randomSecret));
    app ??= createApp({ cursorSecret, adminToken: env.ADMIN_TOKEN || undefined, webAppUrl: webAppUrlOf(env), webhookUrlPolicy: urlPolicyOf(env), keyIdCache });
    return app;
  }

  return {
    async fetch(request, env, ctx): Promise<Response> {
      configureLocalProxy(env);
      const pool = requestPool(env);
      try {
        const db = drizzle(pool, { schema }) as unknown as Database;
        const deps: RequestDeps = {
          db,
          clock,
          keyCounter: keyCounterFor(env),
          uploadCounter: new DurableObjectKeyCounter(env.UPLOAD_COUNTER),
          runQueue: new CloudflareRunQueue(env.RUN_QUEUE),
          logger: consoleLogger,
        };
        return await (await appFor(env, db)).fetch(request, deps, ctx);
      } catch (error) {
        // Only reached when deps cannot be built (e.g. the database is unreachable for the cursor secret).
        consoleLogger.error("worker failed before the app", { error: error instanceof Error ? error.message : String(error) });
        return Response.json(
          { error: { code: "service_unavailable", message: "The service cannot reach its database; retry shortly." } },
          { status: 503, headers: { "content-type": "application/json; charset=utf-8", "x-content-type-options": "nosniff", "retry-after": "1" } },
        );
      } finally {
        ctx.waitUntil(pool.end());
      }
    },

    /** Consumer of the run queue: one pool per batch, ended when the batch is done. */
    async queue(batch, env, ctx): Promise<void> {
      configureLocalProxy(env);
      const pool = requestPool(env);
      try {
        const db = drizzle(pool, { schema }) as unknown as Database;
        const work = backgroundWork({
          db,
          clock,
          logger: consoleLogger,
          webAppUrl: webAppUrlOf(env),
          queue: new CloudflareRunQueue(env.RUN_QUEUE),
          checks: CHECKS,
          urlPolicy: urlPolicyOf(env),
          fetch: (input, init) => fetch(input, init),
        });
        await consumeRunBatch(batch, work, consoleLogger);
      } finally {
        ctx.waitUntil(pool.end());
      }
    },
  };
}

export default createWorkerHandler();
