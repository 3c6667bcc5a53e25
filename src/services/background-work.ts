/**
 * The service's background work, the same on both runtimes: processing uploaded runs, then the
 * alert checks, then planning notifications; delivering notifications; sending the outbox's
 * e-mail (src/services/shared/email-outbox.ts). All arrive as queue
 * messages (a Cloudflare Queue on Workers, the in-process queue on Node).
 */
import type { Logger } from "../lib/logger";
import type { Database } from "../db/types";
import type { Clock } from "../lib/clock";
import type { SecretKeyring } from "../lib/secret-box";
import type { OutboundPolicy } from "../notifications/outbound-policy";
import type { CheckRegistry } from "../checks/types";
import { runAlertChecks } from "./alerts/alert-checks";
import { type NotificationDeps, planNotifications } from "./notifications/notifications";
import type { DeliveryAttempt, QueueMessage, RunQueue } from "../ingest/run-queue";
import { type ProcessingDeps, processTestRun } from "./runs/run-processing";
import { completeIfDue, processRunPart } from "./runs/run-parts";
import { DatabasePayloadStore } from "./runs/database-payload-store";
import type { PayloadStore } from "../ingest/payload-store";
import { deliverNotification } from "./notifications/webhook-delivery";
import { queueRunTestEvents } from "./tests/test-events";
import { recordRunSplit } from "./splitting/run-split";
import { describeError } from "../lib/errors";
import type { MailSettings } from "../mail/transport";
import { type EmailDeps, deliverEmail } from "./shared/email-outbox";

export type BackgroundDeps = {
  db: Database;
  clock: Clock;
  logger: Logger;
  webAppUrl: string;
  queue: RunQueue;
  checks: CheckRegistry;
  urlPolicy: OutboundPolicy;
  /** Outbound HTTP held to `urlPolicy` (NotificationDeps.fetch). */
  fetch: typeof fetch;
  deliveryRetryDelaysSeconds?: number[];
  secrets: SecretKeyring;
  /** The e-mail transport and From address (docs/e-mail.md); without a transport, mail is held in the outbox. */
  mail: MailSettings;
  emailRetryDelaysSeconds?: number[];
  /**
   * Where payloads stored as objects are read and deleted: the Worker's R2 bucket; without one,
   * the database's store, which holds gzip uploads on Node (src/services/runs/database-payload-store.ts).
   */
  payloadStore?: PayloadStore;
};

export type BackgroundWork = {
  processing: ProcessingDeps;
  notifications: NotificationDeps;
  email: EmailDeps;
  consume(message: QueueMessage, attempt: DeliveryAttempt): Promise<void>;
};

export function backgroundWork(deps: BackgroundDeps): BackgroundWork {
  const notifications: NotificationDeps = {
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    webAppUrl: deps.webAppUrl,
    queue: deps.queue,
    urlPolicy: deps.urlPolicy,
    fetch: deps.fetch,
    retryDelaysSeconds: deps.deliveryRetryDelaysSeconds,
    secrets: deps.secrets,
  };
  const email: EmailDeps = {
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    secrets: deps.secrets,
    queue: deps.queue,
    mail: deps.mail,
    retryDelaysSeconds: deps.emailRetryDelaysSeconds,
  };
  const processing: ProcessingDeps = {
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    webAppUrl: deps.webAppUrl,
    payloadStore: deps.payloadStore ?? new DatabasePayloadStore(deps.db),
    afterRunProcessed: async (run) => {
      // Before the checks, which may fail: the split is the run's own record (docs/splitting.md).
      await recordRunSplit({ db: deps.db, clock: deps.clock }, run).catch((error: unknown) =>
        deps.logger.error("could not record the run's split", { testRunId: run.id, error: describeError(error) }),
      );
      try {
        const trips = await runAlertChecks(
          { db: deps.db, clock: deps.clock, logger: deps.logger, checks: deps.checks, webAppUrl: deps.webAppUrl },
          run,
        );
        await planNotifications(notifications, run, trips);
      } finally {
        // The test events planned by the run's processing and its checks, both committed by now
        // (those of processing are sent even when the checks fail).
        await queueRunTestEvents(notifications, run.id);
      }
    },
  };
  return {
    processing,
    notifications,
    email,
    async consume(message, attempt) {
      if ("testRunId" in message) {
        if (message.part) await processRunPart(processing, message.testRunId, message.part, attempt);
        else if (message.complete) await completeIfDue(processing, message.testRunId, message.complete);
        else await processTestRun(processing, message.testRunId, attempt);
      } else if ("deliveryId" in message) await deliverNotification(notifications, message.deliveryId);
      else if ("emailId" in message) await deliverEmail(email, message.emailId);
    },
  };
}
