/**
 * Background work off Workers: the in-process queue feeding backgroundWork (run processing, alert
 * checks, notification deliveries). http webhooks are allowed only to loopback (local runs).
 */
import type { Logger } from "../lib/logger";
import { CHECKS } from "../checks";
import type { Database } from "../db/types";
import { InProcessRunQueue, type InProcessQueueOptions } from "../ingest/in-process-run-queue";
import type { Clock } from "../lib/clock";
import type { SecretKeyring } from "../lib/secret-box";
import type { UrlPolicy } from "../notifications/url-policy";
import { type BackgroundWork, backgroundWork } from "../services/background-work";
import { type MailSettings, mailFromAddress } from "../mail/transport";

/** The Node entry runs locally or self-hosted: http webhooks are allowed to loopback only. */
export const NODE_WEBHOOK_URL_POLICY: UrlPolicy = { allowLoopbackHttp: true };

export function createNodeBackground(
  deps: {
    db: Database;
    clock: Clock;
    logger: Logger;
    webAppUrl: string;
    fetch?: typeof fetch;
    urlPolicy?: UrlPolicy;
    /** DNS resolution for the private-address check (src/node/resolve-host.ts in the server). */
    resolveHost?: (host: string) => Promise<string[]>;
    deliveryRetryDelaysSeconds?: number[];
    /** The server's keyring: opens webhook signing secrets to sign deliveries. */
    secrets: SecretKeyring;
    /** The e-mail transport (SMTP_URL); by default none: mail is held in the outbox. */
    mail?: MailSettings;
    emailRetryDelaysSeconds?: number[];
  },
  options: Omit<InProcessQueueOptions, "logger"> = {},
): { queue: InProcessRunQueue; work: BackgroundWork } {
  // The consumer reads `work` only when a message arrives, after both exist.
  const queue = new InProcessRunQueue((message, attempt) => work.consume(message, attempt), { ...options, logger: deps.logger });
  const work = backgroundWork({
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    webAppUrl: deps.webAppUrl,
    queue,
    checks: CHECKS,
    urlPolicy: deps.urlPolicy ?? NODE_WEBHOOK_URL_POLICY,
    fetch: deps.fetch ?? fetch,
    resolveHost: deps.resolveHost,
    deliveryRetryDelaysSeconds: deps.deliveryRetryDelaysSeconds,
    secrets: deps.secrets,
    mail: deps.mail ?? { transport: null, from: mailFromAddress(undefined, deps.webAppUrl), logHeldBodies: false },
    emailRetryDelaysSeconds: deps.emailRetryDelaysSeconds,
  });
  return { queue, work };
}
