/**
 * Delivering one planned notification (an alert's trip, or a test's event): a signed POST to the
 * endpoint, retried through the queue with backoff until it is delivered, the attempts run out,
 * or (an alert's) the alert is silenced.
 */
import { and, eq, isNull, or, sql } from "drizzle-orm";
import { alerts, notificationDeliveries, webhookEndpoints } from "../db/schema";
import { transactionWithRetry } from "../db/transaction-retry";
import { describeError } from "../lib/errors";
import { SecretDecryptionError } from "../lib/secret-box";
import { SIGNATURE_HEADER, signatureHeader } from "../notifications/signature";
import { isInternalAddress, isLoopbackHost, webhookUrlProblem } from "../notifications/url-policy";
import { notificationBody } from "./notification-presenters";
import type { NotificationDeps } from "./notifications";
import { isSnoozed } from "./presenters";
import { openSigningSecret } from "./webhook-secrets";

/** Attempts per delivery, the first included; then the delivery is marked failed. */
export const MAX_DELIVERY_ATTEMPTS = 6;
/** Seconds before attempt n+1 (n = attempts so far): 10 s, 1 min, 5 min, 30 min, 2 h. */
const RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200];
const DELIVERY_TIMEOUT_MS = 10_000;

/** Refuses a destination that resolves to an internal address (where the runtime can resolve names). */
async function destinationProblem(deps: NotificationDeps, url: string): Promise<string | null> {
  const problem = webhookUrlProblem(url, deps.urlPolicy);
  if (problem) return `url ${problem}`;
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  if (!deps.resolveHost || isLoopbackHost(host)) return null;
  try {
    const addresses = await deps.resolveHost(host);
    if (addresses.some(isInternalAddress)) return "url resolves to a private, link-local or reserved address";
  } catch {
    return "url host could not be resolved";
  }
  return null;
}

export type DeliveryOutcome = "delivered" | "retrying" | "failed" | "suppressed" | "gone";

/**
 * One attempt of one delivery. A 2xx is delivered (and sets the alert's last_notified_at);
 * anything else, a redirect included, is retried later through the queue with backoff, and
 * the attempt that exhausts MAX_DELIVERY_ATTEMPTS marks the delivery failed.
 */
export async function deliverNotification(deps: NotificationDeps, deliveryId: number): Promise<DeliveryOutcome> {
  const [row] = await deps.db
    .select({ delivery: notificationDeliveries, endpoint: webhookEndpoints })
    .from(notificationDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, notificationDeliveries.endpointId))
    .where(eq(notificationDeliveries.id, deliveryId))
    .limit(1);
  if (row?.delivery.status !== "pending") return "gone";
  const { delivery, endpoint } = row;
  const now = deps.clock.now();
  const attempt = delivery.attempts + 1;

  // Snoozing or disabling an alert silences it at once, retries of earlier trips included. A
  // test's event (no alert) is silenced by nothing.
  let alert: typeof alerts.$inferSelect | null = null;
  if (delivery.alertId !== null) {
    [alert = null] = await deps.db.select().from(alerts).where(eq(alerts.id, delivery.alertId)).limit(1);
    if (!alert) return "gone";
  }
  const silencedBy = alert === null ? null : !alert.active ? "disabled" : isSnoozed(alert.snoozedUntil, now) ? "snoozed" : null;
  if (silencedBy) {
    await deps.db
      .update(notificationDeliveries)
      .set({ status: "suppressed", lastError: `not sent: the alert was ${silencedBy} before this attempt` })
      .where(and(eq(notificationDeliveries.id, delivery.id), eq(notificationDeliveries.status, "pending")));
    deps.logger.info("webhook delivery suppressed", { deliveryId: delivery.id, reason: silencedBy });
    return "suppressed";
  }

  let statusCode: number | null = null;
  let error: string | null = await destinationProblem(deps, endpoint.url);
  // Opened only to sign this attempt; nothing unsigned is ever sent. A secret that does not open
  // (its key is not configured) fails the attempt like an unreachable endpoint, with retries, so
  // configuring the key in time lets the delivery through.
  let secret: string | null = null;
  if (!error) {
    try {
      secret = await openSigningSecret(deps.secrets, endpoint);
    } catch (cause) {
      if (!(cause instanceof SecretDecryptionError)) throw cause;
      error = `not sent: the signing secret cannot be decrypted (${cause.message}) See docs/secrets.md.`;
    }
  }
  if (!error && secret !== null) {
    // A test's event was written whole when it happened; an alert's trip is presented now.
    const body = alert === null ? delivery.payload : await notificationBody(deps.db, delivery, alert, now, deps.webAppUrl);
    if (!body) return "gone";
    const text = JSON.stringify(body);
    try {
      const response = await deps.fetch(endpoint.url, {
        method: "POST",
        redirect: "manual",
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
        headers: {
          "content-type": "application/json",
          "user-agent": "ci-test-analytics-webhooks/1",
          [SIGNATURE_HEADER]: signatureHeader(secret, Math.floor(now.getTime() / 1000), text),
          "CTA-Delivery-Id": String(delivery.id),
          "CTA-Event-Type": delivery.eventType,
        },
        body: text,
      });
      statusCode = response.status;
      await response.body?.cancel().catch(() => {});
      if (response.status < 200 || response.status >= 300) error = response.status >= 300 && response.status < 400 ? `redirect (${response.status}) not followed` : `HTTP ${response.status}`;
    } catch (cause) {
      error = cause instanceof Error && cause.name === "TimeoutError" ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : "could not connect";
    }
  }

  if (!error) {
    await transactionWithRetry(deps.db, async (tx) => {
      await tx
        .update(notificationDeliveries)
        .set({ status: "delivered", attempts: attempt, lastStatusCode: statusCode, lastError: null, lastAttemptAt: now, deliveredAt: now })
        .where(eq(notificationDeliveries.id, delivery.id));
      // Only an alert's notification holds its cooldown.
      if (delivery.alertId === null) return;
      await tx
        .update(alerts)
        .set({ lastNotifiedAt: now })
        .where(and(eq(alerts.id, delivery.alertId), or(isNull(alerts.lastNotifiedAt), sql`${alerts.lastNotifiedAt} < ${now.toISOString()}::timestamptz`)));
    });
    return "delivered";
  }

  const final = attempt >= MAX_DELIVERY_ATTEMPTS;
  await deps.db
    .update(notificationDeliveries)
    .set({ status: final ? "failed" : "pending", attempts: attempt, lastStatusCode: statusCode, lastError: error, lastAttemptAt: now })
    .where(eq(notificationDeliveries.id, delivery.id));
  deps.logger.info("webhook delivery attempt failed", { deliveryId: delivery.id, attempt, error, final });
  if (final) return "failed";
  try {
    const delays = deps.retryDelaysSeconds ?? RETRY_DELAYS_SECONDS;
    await deps.queue.send({ deliveryId: delivery.id }, { delaySeconds: delays[attempt - 1] ?? delays.at(-1)! });
  } catch (queueError) {
    deps.logger.error("could not queue a webhook retry", { deliveryId: delivery.id, error: describeError(queueError) });
  }
  return "retrying";
}
