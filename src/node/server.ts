/**
 * `npm start`: the API on Node with an embedded PGlite database by default.
 * Listens, builds the app's deps from the environment, applies migrations, seeds the demo
 * organization on an empty database, and serves until SIGINT/SIGTERM.
 */
import { INFLATED_LIMIT_BYTES } from "../ingest/upload-body";
import { DatabasePayloadStore } from "../services/runs/database-payload-store";
import { sweepOrphanedPayloads } from "../services/runs/payload-sweep";
import { type RequestDeps, createApp } from "../app";
import { withStaticAssets } from "./static-assets";
import { ApiError, describeError } from "../lib/errors";
import { consoleLogger } from "../lib/logger";
import { systemClock } from "../lib/clock";
import { RUN_STALLED_AFTER_MS } from "../services/stalled-work";
import { queueDueCompletions } from "../services/runs/run-parts";
import type { Database } from "../db/types";
import type { RunQueue } from "../ingest/run-queue";
import type { SecretKeyring } from "../lib/secret-box";

import { InMemoryKeyCounter } from "../auth/in-memory-key-counter";
import { PostgresKeyCounter } from "../auth/postgres-key-counter";
import { recoverPendingDeliveries, recoverPendingRuns } from "./in-process-run-queue";
import { type NodeBackgroundDeps, createNodeBackground, createScaledOutBackground } from "./background";
import { PostgresRunQueue } from "./postgres-run-queue";
import { asLeader } from "./leader";
import { requeueStalledWork } from "../services/stalled-work";
import { nodeOutboundFetch } from "./outbound-fetch";
import { prepareDatabase } from "./prepare-database";
import { type NodeConfig, publicUrls, readNodeConfig } from "./config";
import { type OpenedDatabase, openDatabase } from "./database";
import { type FetchHandler, createNodeServer, envelopeResponse, listen } from "./http-server";
import { openSecretsKeyring, secretsKeyNotice } from "./secrets-key";
import { printStartBanner } from "./start-banner";
import { isLocalWebApp, mailFromAddress } from "../mail/transport";
import { recoverPendingEmails } from "../services/shared/email-outbox";
import { nodeSmtpTransport } from "./smtp-transport";
import { type DigestDeps, sendDueDigests } from "../services/notifications/digest";
import { type RetentionSweepDeps, sweepRetention } from "../services/runs/retention-sweep";
import { clientAddressFromConnection, formatIpAddress } from "../lib/client-address";

/** How often Node looks for runs in parts whose quiet period ended. */
const COMPLETION_SWEEP_MS = 60_000;

/**
 * Who runs a sweep of the timers below: this process alone; scaled out, one process of those on
 * the database per round (src/node/leader.ts), the others skip it.
 */
type SweepLead = (task: string, work: () => Promise<unknown>) => Promise<unknown>;

/** Runs in parts whose quiet period ended complete (docs/uploads.md): on the Worker, its cron does it every 10 minutes. */
function startCompletionSweep(db: Database, queue: RunQueue, lead: SweepLead): NodeJS.Timeout {
  const timer = setInterval(() => {
    lead("completion sweep", () =>
      queueDueCompletions({ db, clock: systemClock, queue }, { stalledAfterMs: RUN_STALLED_AFTER_MS, limit: 500 }),
    ).catch((error: unknown) => consoleLogger.error("could not queue the completion of runs in parts", { error: describeError(error) }));
  }, COMPLETION_SWEEP_MS);
  timer.unref();
  return timer;
}

/** How often scaled-out processes look for work whose message was lost (the Worker's cron, every 10 minutes). */
const STALLED_SWEEP_MS = 5 * 60_000;

/**
 * Scaled out, no process recovers pending work at its start (the queue in Postgres outlives
 * processes, and a start would queue again what others are doing): a run, e-mail or delivery
 * whose message was lost anyway (queued before scaling out, or given up during an outage) is
 * queued again by this sweep, at start and then on a timer, by one process per round.
 */
function startStalledWorkSweep(db: Database, queue: RunQueue, lead: SweepLead): NodeJS.Timeout {
  const sweep = () =>
    lead("stalled work sweep", () => requeueStalledWork({ db, clock: systemClock, queue, logger: consoleLogger })).catch((error: unknown) =>
      consoleLogger.error("could not queue stalled work again", { error: describeError(error) }),
    );
  void sweep();
  const timer = setInterval(sweep, STALLED_SWEEP_MS);
  timer.unref();
  return timer;
}

/** This process's pending work, queued again at its start: its in-process queue did not outlive the previous process. */
async function recoverPendingWork(db: Database, queue: RunQueue): Promise<void> {
  const recovered = await recoverPendingRuns(db, queue);
  if (recovered > 0) consoleLogger.info("queued runs left pending by an earlier process", { runs: recovered });
  const redelivered = await recoverPendingDeliveries(db, queue);
  if (redelivered > 0) consoleLogger.info("queued webhook deliveries left pending by an earlier process", { deliveries: redelivered });
  const resent = await recoverPendingEmails(db, queue);
  if (resent > 0) consoleLogger.info("queued e-mails left pending by an earlier process", { emails: resent });
}

/** How often Node looks for weekly digests that are due (Monday 09:00 in each organization's time zone); the Worker's cron, every 10 minutes. */
const DIGEST_CHECK_MS = 5 * 60_000;

/**
 * The weekly digests (src/services/notifications/digest.ts): checked at start and then on a timer.
 * Each organization's week is claimed in the database, so several processes on one database send it once.
 */
function startDigestTimer(deps: DigestDeps): NodeJS.Timeout {
  const check = () =>
    sendDueDigests(deps).catch((error: unknown) =>
      consoleLogger.error("could not send the weekly digests", { error: describeError(error) }),
    );
  void check();
  const timer = setInterval(check, DIGEST_CHECK_MS);
  timer.unref();
  return timer;
}

/**
 * The rate limits of API keys and upload tokens: this process's own, in memory; scaled out, in
 * Postgres, where every process counts on the same windows (src/auth/postgres-key-counter.ts).
 */
function rateCounters(db: Database, scaleOut: boolean): Pick<RequestDeps, "keyCounter" | "uploadCounter"> {
  if (!scaleOut) return { keyCounter: new InMemoryKeyCounter(systemClock), uploadCounter: new InMemoryKeyCounter(systemClock) };
  const deps = { db, clock: systemClock };
  return { keyCounter: new PostgresKeyCounter(deps, "api_key"), uploadCounter: new PostgresKeyCounter(deps, "upload_token") };
}

/** How often Node runs the retention sweep (docs/retention.md); the Worker's cron, every 10 minutes. */
const RETENTION_SWEEP_MS = 5 * 60_000;

/**
 * The retention sweep (src/services/runs/retention-sweep.ts): a bounded number of small batches per
 * tick, never two at once in this process (a slow tick is not overlapped by the next); scaled out,
 * one process per round (`lead`).
 */
function startRetentionTimer(retentionDeps: RetentionSweepDeps, lead: SweepLead): NodeJS.Timeout {
  const deps = { ...retentionDeps, payloadStore: new DatabasePayloadStore(retentionDeps.db) };
  let running = false;
  const sweep = () => {
    if (running) return;
    running = true;
    // Then the database store's objects no run holds (a request that died mid-upload): the Worker's cron sweeps R2's.
    lead("retention sweep", async () => {
      await sweepRetention(deps);
      await sweepOrphanedPayloads({ db: deps.db, clock: deps.clock, store: deps.payloadStore, logger: deps.logger });
    })
      .catch((error: unknown) => consoleLogger.error("could not run the retention sweep", { error: describeError(error) }))
      .finally(() => {
        running = false;
      });
  };
  const timer = setInterval(sweep, RETENTION_SWEEP_MS);
  timer.unref();
  return timer;
}

/**
 * On a Postgres server a gzip report may inflate to 256 MiB: it streams to the database's payload
 * store. PGlite keeps the body limit (its one session is the run's while the consumer reads).
 */
const inflatedLimitOf = (database: OpenedDatabase) => (database.kind === "postgres" ? INFLATED_LIMIT_BYTES : undefined);

/** SMTP_URL's transport, or none (the outbox holds the mail, printed in the log for a local web app). */
const mailSettingsOf = (config: NodeConfig, webAppUrl: string) => ({
  transport: config.smtpUrl ? nodeSmtpTransport(config.smtpUrl) : null,
  from: mailFromAddress(config.mailFrom, webAppUrl),
  logHeldBodies: !config.smtpUrl && isLocalWebApp(webAppUrl),
});

/** While the database is being opened, migrated and seeded: retryable, in the envelope. */
const starting = () =>
  envelopeResponse(new ApiError("service_unavailable", "The service is starting; retry shortly.", { headers: { "Retry-After": "1" } }));

/**
 * Of several processes starting at once, one migrates, seeds and creates the queue's schema
 * (pg-boss's, when scaled out); the others wait for the start lock, then find it all done.
 */
async function prepareUnderStartLock(database: OpenedDatabase, config: NodeConfig, webAppUrl: string, secrets: SecretKeyring) {
  return database.withStartLock(async () => {
    await database.migrate();
    const prepared = await prepareDatabase(database.db, { ...config, webAppUrl }, secrets);
    const sharedQueue =
      config.scaleOut && config.databaseUrl ? await PostgresRunQueue.open(config.databaseUrl, { logger: consoleLogger }) : null;
    return { ...prepared, sharedQueue };
  });
}

async function main(): Promise<void> {
  const config = readNodeConfig();
  // Listening comes first: the port (PORT=0 picks one) is part of the default public base URL,
  // and a port already taken fails the start at once rather than after seeding.
  let serveApp: FetchHandler = starting;
  const server = createNodeServer((request, connection) => serveApp(request, connection), { logger: consoleLogger });
  const port = await listen(server, config.port, config.host);
  const { publicBaseUrl, webAppUrl } = publicUrls(config, port);

  const database = await openDatabase(config.databaseUrl);
  // After the database: an unusable DATABASE_URL must not leave a key file behind.
  const { secrets, source: secretsKeySource } = openSecretsKeyring(config);
  const { cursorSecret, demoKey, demoPeople, sharedQueue } = await prepareUnderStartLock(database, config, webAppUrl, secrets);
  const mail = mailSettingsOf(config, webAppUrl);
  // One policy for what the pages and the admin API accept and what deliveries reach (OUTBOUND_ALLOW_HOSTS: none by default).
  const outbound = config.outbound;
  if (outbound.allowHosts?.length)
    consoleLogger.info("OUTBOUND_ALLOW_HOSTS: webhooks may reach these hosts although internal, over http too", {
      hosts: outbound.allowHosts,
    });
  const backgroundDeps: NodeBackgroundDeps = {
    db: database.db,
    clock: systemClock,
    logger: consoleLogger,
    webAppUrl,
    urlPolicy: outbound,
    fetch: nodeOutboundFetch(outbound),
    secrets,
    mail,
  };
  const { queue: runQueue } = sharedQueue ? createScaledOutBackground(backgroundDeps, sharedQueue) : createNodeBackground(backgroundDeps);
  const lead: SweepLead = sharedQueue ? (task, work) => asLeader(database.db, task, work) : (_task, work) => work();
  if (!sharedQueue) await recoverPendingWork(database.db, runQueue);
  const stalled = sharedQueue ? startStalledWorkSweep(database.db, runQueue, lead) : undefined;
  const completions = startCompletionSweep(database.db, runQueue, lead);
  const digests = startDigestTimer({ db: database.db, clock: systemClock, logger: consoleLogger, webAppUrl, queue: runQueue, secrets });
  const retention = startRetentionTimer({ db: database.db, clock: systemClock, logger: consoleLogger, retention: config.retention }, lead);
  const app = createApp({
    cursorSecret,
    adminToken: config.adminToken,
    publicBaseUrl,
    webAppUrl,
    webAppLoopbackAliases: config.webAppUrl === undefined,
    webhookUrlPolicy: outbound,
    quotas: config.quotas,
    signUp: config.signUp,
    runQuietPeriodMs: config.runQuietPeriodMs,
    retention: config.retention,
    mailConfigured: Boolean(config.smtpUrl),
    secrets,
    inflatedLimitBytes: inflatedLimitOf(database),
  });
  // One pool per process: every request gets the same dependencies, and its client's address.
  const requestDeps: Omit<RequestDeps, "clientAddress"> = {
    db: database.db,
    clock: systemClock,
    ...rateCounters(database.db, config.scaleOut),
    runQueue,
    logger: consoleLogger,
  };
  if (sharedQueue)
    consoleLogger.info(
      "SCALE_OUT: the queue and the rate limits are in Postgres, shared with every process on this database (docs/scale-out.md)",
    );
  const { trustedProxies } = config;
  if (trustedProxies.length > 0)
    consoleLogger.info("TRUSTED_PROXIES: on connections from these, X-Forwarded-For names the client", {
      proxies: trustedProxies.map((range) => `${formatIpAddress(range)}/${range.prefix}`),
    });
  serveApp = withStaticAssets((request, connection) => {
    const clientAddress = clientAddressFromConnection({
      remoteAddress: connection.remoteAddress,
      forwardedFor: request.headers.get("x-forwarded-for"),
      trustedProxies,
    });
    return app.fetch(request, { ...requestDeps, clientAddress });
  });
  printStartBanner({
    base: `http://localhost:${port}`,
    webAppUrl,
    signUp: config.signUp,
    databaseDescription: database.description,
    adminEnabled: Boolean(config.adminToken),
    secretsKeyNotice: secretsKeyNotice(secretsKeySource, config.databaseUrl),
    demoKey,
    demoPeople,
    seedDemo: config.seedDemo,
    mailNotice: config.smtpUrl
      ? null
      : mail.logHeldBodies
        ? "E-mail: SMTP_URL is not set; e-mails (invitations, notices) are kept in the outbox and printed in this log (docs/e-mail.md)."
        : `E-mail: SMTP_URL is not set; e-mails are kept in the outbox: GET http://localhost:${port}/admin/v1/emails with the admin token (docs/e-mail.md).`,
  });

  const shutdown = () => {
    clearInterval(completions);
    clearInterval(stalled);
    clearInterval(digests);
    clearInterval(retention);
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
