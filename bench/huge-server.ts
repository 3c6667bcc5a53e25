/**
 * Child process of `npm run bench:huge`: the Node server as src/node/server.ts builds it (the app,
 * the in-process queue and its background work, one pool) over the benchmark's Postgres database,
 * so that its memory is measured apart from the parent's (which generates the report). Samples its
 * own V8 heap (used) and ArrayBuffers every 10 ms; on IPC `reset` starts a new peak, on `peak`
 * answers it, on `idle` answers once its queue is idle. The parent reads the RSS (peak: VmHWM) from /proc.
 *
 * Env: BENCH_DB_URL, BENCH_CURSOR_SECRET.
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createApp } from "../src/app";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { createNodeBackground } from "../src/node/background";
import { INFLATED_LIMIT_BYTES } from "../src/ingest/upload-body";
import { openDatabase } from "../src/node/database";
import { benchRequestDeps } from "./common";

const quietLogger: Logger = {
  info: () => {},
  error: (message, fields) => console.error(JSON.stringify({ level: "error", message, ...fields })),
};

type Peak = { heapUsed: number; arrayBuffers: number; external: number; heapPlusBuffers: number };

async function main(): Promise<void> {
  const database = await openDatabase(process.env.BENCH_DB_URL!);
  const secrets = new SecretKeyring({ current: generateSecretsKey() });
  const { queue } = createNodeBackground({
    db: database.db,
    clock: systemClock,
    logger: quietLogger,
    webAppUrl: "https://app.example.com",
    secrets,
  });
  const requestDeps = benchRequestDeps(database.db, queue, quietLogger);
  const app = createApp({
    cursorSecret: process.env.BENCH_CURSOR_SECRET!,
    publicBaseUrl: "https://api.example.com",
    webAppUrl: "https://app.example.com",
    secrets,
    // As src/node/server.ts on a Postgres server.
    inflatedLimitBytes: INFLATED_LIMIT_BYTES,
  });
  let peak: Peak = { heapUsed: 0, arrayBuffers: 0, external: 0, heapPlusBuffers: 0 };
  setInterval(() => {
    const m = process.memoryUsage();
    if (m.heapUsed + m.arrayBuffers > peak.heapPlusBuffers)
      peak = { heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers, external: m.external, heapPlusBuffers: m.heapUsed + m.arrayBuffers };
  }, 10).unref();
  process.on("message", (message: { type: string }) => {
    if (message.type === "reset") {
      global.gc?.();
      peak = { heapUsed: 0, arrayBuffers: 0, external: 0, heapPlusBuffers: 0 };
      process.send!({ type: "reset-done", ...process.memoryUsage() });
    } else if (message.type === "peak") process.send!({ type: "peak", ...peak });
    // Once the queue has nothing left (the run's alert checks and what they queued).
    else if (message.type === "idle") void queue.idle().then(() => process.send!({ type: "idle" }));
  });
  const server = serve({ fetch: (request) => app.fetch(request, requestDeps), port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) =>
    process.send!({ type: "ready", port: info.port }),
  );
  const shutdown = () => {
    server.close();
    database.close().finally(() => process.exit(0));
  };
  process.on("SIGTERM", shutdown);
  process.on("disconnect", shutdown);
}

main().catch((error) => {
  console.error("bench:huge server failed to start:", error);
  process.exit(1);
});
