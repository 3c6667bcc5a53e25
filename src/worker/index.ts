/**
 * The Worker entry (wrangler.toml `main`). It only builds deps per request, from bindings:
 * Drizzle over a Neon Pool (WebSocket) created and ended within the request, the per-key
 * Durable Object counter, and secrets. Everything else is the same app as on Node.
 */
import { drizzle } from "drizzle-orm/neon-serverless";
import { createApp } from "../app";
import { consoleLogger } from "../app-env";
import { KeyIdCache } from "../auth/key-gate";
import * as schema from "../db/schema";
import type { Database } from "../db/types";
import { getOrCreateSetting, randomSecret } from "../services/settings";
import { DurableObjectKeyCounter } from "./durable-object-key-counter";
import type { KeyCounter } from "../auth/key-state";
import type { WorkerEnv } from "./env";
import { configureLocalProxy, requestPool } from "./neon";
import { workerRuntime } from "./runtime";
import { CloudflareRunQueue, consumeRunBatch } from "./run-queue";
import { CHECKS } from "../checks";
import { backgroundWork } from "../services/background-work";
import type { QueueMessage } from "../services/run-processing";

export { KeyCounterObject } from "./key-counter-object";
export { workerRuntime } from "./runtime";

/** Isolate-lifetime cache of key hash → key id: the mapping never changes and holds no secret (docs/edge-auth.md). */
const keyIdCache = new KeyIdCache();
/** The generated cursor secret, once read (a value, never a pending promise: promises must not cross requests). */
let storedCursorSecret: string | undefined;

async function cursorSecretFor(env: WorkerEnv, db: Database): Promise<string> {
  if (env.CURSOR_SECRET) return env.CURSOR_SECRET;
  storedCursorSecret ??= await getOrCreateSetting(db, "cursor_secret", randomSecret);
  return storedCursorSecret;
}

export type WorkerOptions = {
  /** The per-key counter; by default the key's Durable Object. The benchmark swaps in an in-memory one. */
  keyCounter?: (env: WorkerEnv) => KeyCounter;
};

export function createWorkerHandler(options: WorkerOptions = {}): ExportedHandler<WorkerEnv, QueueMessage> {
  const keyCounterFor = options.keyCounter ?? ((env: WorkerEnv) => new DurableObjectKeyCounter(env.KEY_COUNTER));
  return {
    async fetch(request, env, ctx): Promise<Response> {
      configureLocalProxy(env);
      const pool = requestPool(env);
      try {
        const db = drizzle(pool, { schema }) as unknown as Database;
        const app = createApp({
          db,
          clock: workerRuntime.clock,
          keyCounter: keyCounterFor(env),
          keyIdCache,
          cursorSecret: await cursorSecretFor(env, db),
          adminToken: env.ADMIN_TOKEN || undefined,
          webAppUrl: env.WEB_APP_URL || "http://localhost:3000",
          runQueue: new CloudflareRunQueue(env.RUN_QUEUE),
          logger: consoleLogger,
        });
        return await app.fetch(request);
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
          clock: workerRuntime.clock,
          logger: consoleLogger,
          webAppUrl: env.WEB_APP_URL || "http://localhost:3000",
          queue: new CloudflareRunQueue(env.RUN_QUEUE),
          checks: CHECKS,
          // http webhooks to loopback only in local development (the local Neon stand-in marks it).
          urlPolicy: { allowLoopbackHttp: Boolean(env.LOCAL_NEON_PROXY) },
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
