/**
 * Child process of `npm run bench:export`: the app served on Node over the benchmark's Postgres
 * database, alone in its process, so that the parent can read this process's peak memory
 * (/proc/<pid>/status) around one export. Reports its port to the parent over IPC.
 *
 * Env: BENCH_DB_URL (the benchmark database).
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createApp } from "../src/app";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { createNodeBackground } from "../src/node/background";
import { openDatabase } from "../src/node/database";
import { benchRequestDeps } from "./common";

const quietLogger: Logger = {
  info: () => {},
  error: (message, fields) => console.error(JSON.stringify({ level: "error", message, ...fields })),
};

async function main(): Promise<void> {
  const url = process.env.BENCH_DB_URL;
  if (!url) throw new Error("BENCH_DB_URL is required");
  const database = await openDatabase(url);
  const secrets = new SecretKeyring({ current: generateSecretsKey() });
  const background = createNodeBackground({
    db: database.db,
    clock: systemClock,
    logger: quietLogger,
    webAppUrl: "https://app.example.com",
    secrets,
  });
  const deps = benchRequestDeps(database.db, background.queue, quietLogger);
  const app = createApp({
    cursorSecret: "export-bench-cursor-secret",
    publicBaseUrl: "https://api.example.com",
    webAppUrl: "https://app.example.com",
    secrets,
  });
  const server = serve({ fetch: (request: Request) => app.fetch(request, deps), port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => {
    process.send?.({ type: "ready", port: info.port });
  });
  const shutdown = () => {
    server.close();
    database.close().finally(() => process.exit(0));
  };
  process.on("SIGTERM", shutdown);
  process.on("disconnect", shutdown);
}

main().catch((error) => {
  console.error("export bench server failed to start:", error);
  process.exit(1);
});
