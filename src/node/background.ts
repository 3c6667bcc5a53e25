/**
 * Background work off Workers: the in-process queue feeding backgroundWork (run processing, alert
 * checks, notification deliveries). Deliveries go out through the fetch the entry gives, held to
 * the same outbound policy (src/node/outbound-fetch.ts in the server); without one, nothing leaves.
 */
import type { Logger } from "../lib/logger";
import { CHECKS } from "../checks";
import type { Database } from "../db/types";
import { InProcessRunQueue, type InProcessQueueOptions } from "./in-process-run-queue";
import type { PostgresRunQueue } from "./postgres-run-queue";
import type { RunQueue } from "../ingest/run-queue";
import type { Clock } from "../lib/clock";
import type { SecretKeyring } from "../lib/secret-box";
import { type OutboundPolicy, OutboundRefusedError } from "../notifications/outbound-policy";
import { type BackgroundWork, backgroundWork } from "../services/background-work";
import { type MailSettings, mailFromAddress } from "../mail/transport";

/** What a background built without a fetch sends: nothing (fail closed rather than an unchecked global fetch). */
const refuseAll: typeof fetch = () => Promise.reject(new OutboundRefusedError("cannot be reached: no outbound fetch is configured"));

/** What the background work of a Node process is built from. */
export type NodeBackgroundDeps = {
  db: Database;
  clock: Clock;
  logger: Logger;
  webAppUrl: string;
  /** Outbound HTTP held to `urlPolicy` (nodeOutboundFetch in the server); none → nothing is sent. */
  fetch?: typeof fetch;
  /** The outbound policy (OUTBOUND_ALLOW_HOSTS and the caps); none → no allowances, default caps. */
  urlPolicy?: OutboundPolicy;
  deliveryRetryDelaysSeconds?: number[];
  /** The server's keyring: opens webhook signing secrets to sign deliveries. */
  secrets: SecretKeyring;
  /** The e-mail transport (SMTP_URL); by default none: mail is held in the outbox. */
  mail?: MailSettings;
  emailRetryDelaysSeconds?: number[];
};

export function createNodeBackground(
  deps: NodeBackgroundDeps,
  options: Omit<InProcessQueueOptions, "logger"> = {},
): { queue: InProcessRunQueue; work: BackgroundWork } {
  // The consumer reads `work` only when a message arrives, after both exist.
  const queue = new InProcessRunQueue((message, attempt) => work.consume(message, attempt), { ...options, logger: deps.logger });
  const work = nodeBackgroundWork(deps, queue);
  return { queue, work };
}

/**
 * Scaled out (docs/scale-out.md): the same work fed by the queue in Postgres, which every process
 * on the database takes from; it starts taking messages once the work exists.
 */
export function createScaledOutBackground(
  deps: NodeBackgroundDeps,
  queue: PostgresRunQueue,
): { queue: PostgresRunQueue; work: BackgroundWork } {
  const work = nodeBackgroundWork(deps, queue);
  queue.consume((message, attempt) => work.consume(message, attempt));
  return { queue, work };
}

function nodeBackgroundWork(deps: NodeBackgroundDeps, queue: RunQueue): BackgroundWork {
  return backgroundWork({
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    webAppUrl: deps.webAppUrl,
    queue,
    checks: CHECKS,
    urlPolicy: deps.urlPolicy ?? {},
    fetch: deps.fetch ?? refuseAll,
    deliveryRetryDelaysSeconds: deps.deliveryRetryDelaysSeconds,
    secrets: deps.secrets,
    mail: deps.mail ?? { transport: null, from: mailFromAddress(undefined, deps.webAppUrl), logHeldBodies: false },
    emailRetryDelaysSeconds: deps.emailRetryDelaysSeconds,
  });
}
