/**
 * Child process of `npm run bench`: serves our app (createApp) and the bare Hono baseline from
 * one process and one database pool, so both variants get the same CPU share while the load
 * generator runs in the parent. Reports the two ports to the parent over IPC.
 *
 * Env: BENCH_DB_URL (the benchmark database), BENCH_CURSOR_SECRET, BENCH_ORG_ID, PG_POOL_MAX.
 * Run by hand (no IPC) it prints the two base URLs instead, e.g. for profiling with --cpu-prof.
 */
import { createNodeBackground } from "../src/node/background";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createApp } from "../src/app";
import type { Logger } from "../src/lib/logger";
import { systemClock } from "../src/lib/clock";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { openDatabase } from "../src/node/database";
import { createBareApp } from "./bare-app";
import { benchRequestDeps } from "./common";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

const quietLogger: Logger = {
  info: () => {},
  error: (message, fields) => console.error(JSON.stringify({ level: "error", message, ...fields })),
};

async function main(): Promise<void> {
  const database = await openDatabase(required("BENCH_DB_URL"));
  // The benchmark's database is dropped afterwards and holds no webhooks: a key of this process will do.
  const secrets = new SecretKeyring({ current: generateSecretsKey() });
  const requestDeps = benchRequestDeps(
    database.db,
    createNodeBackground({
      db: database.db,
      clock: systemClock,
      logger: quietLogger,
      webAppUrl: "https://app.example.com",
      secrets,
    }).queue,
    quietLogger,
  );
  const app = createApp({
    cursorSecret: required("BENCH_CURSOR_SECRET"),
    publicBaseUrl: "https://api.example.com",
    webAppUrl: "https://app.example.com",
    secrets,
  });
  const ours = { fetch: (request: Request) => app.fetch(request, requestDeps) };
  const bare = createBareApp(database.db, required("BENCH_ORG_ID"));

  const listen = (fetch: (request: Request) => Response | Promise<Response>) =>
    new Promise<{ port: number; close: () => void }>((resolve) => {
      const server = serve({ fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) =>
        resolve({ port: info.port, close: () => server.close() }),
      );
    });
  const [oursServer, bareServer] = await Promise.all([listen(ours.fetch), listen(bare.fetch)]);

  const shutdown = () => {
    oursServer.close();
    bareServer.close();
    database.close().finally(() => process.exit(0));
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
  process.on("disconnect", shutdown);
  if (process.send) process.send({ type: "ready", ours: oursServer.port, bare: bareServer.port, pid: process.pid });
  else console.log(`ours http://127.0.0.1:${oursServer.port}/api/v1  bare http://127.0.0.1:${bareServer.port}`);
}

main().catch((error) => {
  console.error("bench servers failed to start:", error);
  process.exit(1);
});
