/**
 * `npm start`: the API on Node with an embedded PGlite database by default.
 * Builds the app's deps from the environment, applies migrations, seeds the demo organization
 * on an empty database, and serves until SIGINT/SIGTERM.
 */
import { serve } from "@hono/node-server";
import { type RequestDeps, createApp } from "../app";
import { consoleLogger } from "../lib/logger";
import { systemClock } from "../lib/clock";
import { InMemoryKeyCounter } from "../auth/in-memory-key-counter";
import { recoverPendingDeliveries, recoverPendingRuns } from "../ingest/in-process-run-queue";
import { NODE_WEBHOOK_URL_POLICY, createNodeBackground } from "./background";
import { resolveHost } from "./resolve-host";
import { prepareDatabase } from "./prepare-database";
import { readNodeConfig } from "./config";
import { openDatabase } from "./database";
import { printStartBanner } from "./start-banner";

async function main(): Promise<void> {
  const config = readNodeConfig();
  const database = await openDatabase(config.databaseUrl);
  await database.migrate();
  const { cursorSecret, demoKey } = await prepareDatabase(database.db, config);
  const { queue: runQueue } = createNodeBackground({ db: database.db, clock: systemClock, logger: consoleLogger, webAppUrl: config.webAppUrl, resolveHost });
  const recovered = await recoverPendingRuns(database.db, runQueue);
  if (recovered > 0) consoleLogger.info("queued runs left pending by an earlier process", { runs: recovered });
  const redelivered = await recoverPendingDeliveries(database.db, runQueue);
  if (redelivered > 0) consoleLogger.info("queued webhook deliveries left pending by an earlier process", { deliveries: redelivered });
  const app = createApp({
    cursorSecret,
    adminToken: config.adminToken,
    webAppUrl: config.webAppUrl,
    // The same rule as the deliveries (background.ts): a local receiver on http://127.0.0.1 is fine.
    webhookUrlPolicy: NODE_WEBHOOK_URL_POLICY,
  });
  // One process, one pool: every request gets the same dependencies.
  const requestDeps: RequestDeps = {
    db: database.db,
    clock: systemClock,
    keyCounter: new InMemoryKeyCounter(systemClock),
    uploadCounter: new InMemoryKeyCounter(systemClock),
    runQueue,
    logger: consoleLogger,
  };
  const server = serve({ fetch: (request) => app.fetch(request, requestDeps), port: config.port, hostname: config.host }, (info) => {
    printStartBanner({
      base: `http://localhost:${info.port}`,
      databaseDescription: database.description,
      adminEnabled: Boolean(config.adminToken),
      demoKey,
      seedDemo: config.seedDemo,
    });
  });

  const shutdown = () => {
    server.close();
    // Runs being processed finish (each is one transaction); the rest are recovered on the next start.
    Promise.race([runQueue.close(), new Promise((resolve) => setTimeout(resolve, 5000))])
      .then(() => database.close())
      .finally(() => process.exit(0));
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

main().catch((error) => {
  consoleLogger.error("failed to start", { error: error instanceof Error ? error.message : String(error) });
  process.exit(1);
});
