/**
 * The Worker entry (wrangler.toml `main`). The app is the same as on Node (createApp) and is
 * built once per isolate; what is per request is the database: Drizzle over a Neon Pool
 * (WebSocket) created and ended within the request, reached by the app through
 * `requestDatabase` (src/worker/request-database.ts). Design: docs/edge-auth.md ("The Worker's
 * app and its per-request database").
 */
import { drizzle } from "drizzle-orm/neon-serverless";
import { createApp } from "../app";
import { consoleLogger } from "../app-env";
import { KeyIdCache } from "../auth/key-gate";
import * as schema from "../db/schema";
import type { Database } from "../db/types";
import type { Clock } from "../lib/clock";
import { getOrCreateSetting, randomSecret } from "../services/settings";
import { DurableObjectKeyCounter } from "./durable-object-key-counter";
import type { KeyCounter } from "../auth/key-state";
import type { WorkerEnv } from "./env";
import { configureLocalProxy, requestPool } from "./neon";
import { requestDatabase, withRequestDatabase } from "./request-database";
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

/** The isolate's clock as it is now: tests replace workerRuntime.clock after the app is built. */
const runtimeClock: Clock = { now: () => workerRuntime.clock.now() };

async function cursorSecretFor(env: WorkerEnv, db: Database): Promise<string> {
  if (env.CURSOR_SECRET) return env.CURSOR_SECRET;
  storedCursorSecret ??= await getOrCreateSetting(db, "cursor_secret", randomSecret);
  return storedCursorSecret;
}

export type WorkerOptions = {
  /** The per-key counter; by default the key's Durable Object. The benchmark swaps in an in-memory one. */
  keyCounter?: (env: WorkerEnv) => KeyCounter;
};

/** What the built app depends on from bindings; the app is rebuilt when any of it changes. */
type AppInputs = {
  keyCounterNamespace: WorkerEnv["KEY_COUNTER"];
  runQueue: WorkerEnv["RUN_QUEUE"];
  cursorSecret: string;
  adminToken: string | undefined;
  webAppUrl: string;
  localDevelopment: boolean;
};

const sameInputs = (a: AppInputs, b: AppInputs) =>
  a.keyCounterNamespace === b.keyCounterNamespace &&
  a.runQueue === b.runQueue &&
  a.cursorSecret === b.cursorSecret &&
  a.adminToken === b.adminToken &&
  a.webAppUrl === b.webAppUrl &&
  a.localDevelopment === b.localDevelopment;

export function createWorkerHandler(options: WorkerOptions = {}): ExportedHandler<WorkerEnv, QueueMessage> {
  const keyCounterFor = options.keyCounter ?? ((env: WorkerEnv) => new DurableObjectKeyCounter(env.KEY_COUNTER));
  /**
   * The app, built on the first request and kept for the isolate's life. Bindings are the same
   * objects and values on every request of an isolate (a new deployment or secret is a new
   * isolate); the identity check rebuilds it anyway if they ever differ. Nothing in it holds a
   * request's I/O objects: the database is `requestDatabase`, the counter keeps only the
   * namespace binding and makes a stub per call.
   */
  let built: { inputs: AppInputs; app: ReturnType<typeof createApp> } | undefined;

  async function appFor(env: WorkerEnv, db: Database) {
    const inputs: AppInputs = {
      keyCounterNamespace: env.KEY_COUNTER,
      runQueue: env.RUN_QUEUE,
      cursorSecret: await cursorSecretFor(env, db),
      adminToken: env.ADMIN_TOKEN || undefined,
      webAppUrl: env.WEB_APP_URL || "http://localhost:3000",
      // http webhooks to loopback only in local development (the local Neon stand-in marks it).
      localDevelopment: Boolean(env.LOCAL_NEON_PROXY),
    };
    if (built === undefined || !sameInputs(built.inputs, inputs)) {
      const app = createApp({
        db: requestDatabase,
        clock: runtimeClock,
        keyCounter: keyCounterFor(env),
        keyIdCache,
        cursorSecret: inputs.cursorSecret,
        adminToken: inputs.adminToken,
        webAppUrl: inputs.webAppUrl,
        runQueue: new CloudflareRunQueue(inputs.runQueue),
        webhookUrlPolicy: { allowLoopbackHttp: inputs.localDevelopment },
        logger: consoleLogger,
      });
      built = { inputs, app };
    }
    return built.app;
  }

  return {
    async fetch(request, env, ctx): Promise<Response> {
      configureLocalProxy(env);
      const pool = requestPool(env);
      try {
        const db = drizzle(pool, { schema }) as unknown as Database;
        return await withRequestDatabase(db, async () => {
          const app = await appFor(env, db);
          return await app.fetch(request);
        });
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
