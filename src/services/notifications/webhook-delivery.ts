/**
 * Delivering one planned notification (an alert's trip, or a test's event): a signed POST to the
 * endpoint, retried through the queue with backoff until it is delivered, the attempts run out,
 * or (an alert's) the alert is silenced. Every attempt is held to the outbound policy
 * (src/notifications/outbound-policy.ts): its URL here, its connection by `deps.fetch` (on Node,
 * one DNS lookup whose addresses are judged and dialled), and the organization's deliveries per
 * minute, over which an attempt waits in the queue without counting as one.
 */
import { and, eq, isNull, or, sql } from "drizzle-orm";
import { alerts, notificationDeliveries, webhookEndpoints } from "../../db/schema";
import { transactionWithRetry } from "../../db/transaction-retry";
import { describeError } from "../../lib/errors";
import { SecretDecryptionError } from "../../lib/secret-box";
import { SIGNATURE_HEADER, signatureHeader } from "../../notifications/signature";
import { DEFAULT_DELIVERIES_PER_MINUTE, outboundRefusal, outboundUrlProblem } from "../../notifications/outbound-policy";
import { takeDeliverySlot } from "./delivery-rate";
import { notificationBody } from "./notification-presenters";
import type { NotificationDeps } from "./notifications";
import { isSnoozed } from "../../contract/presenters";
import { openSigningSecret } from "./webhook-secrets";

/** Attempts per delivery, the first included; then the delivery is marked failed. */
export const MAX_DELIVERY_ATTEMPTS = 6;
/** Seconds before attempt n+1 (n = attempts so far): 10 s, 1 min, 5 min, 30 min, 2 h. */
const RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200];
const DELIVERY_TIMEOUT_MS = 10_000;

type DeliveryRow = typeof notificationDeliveries.$inferSelect;
type EndpointRow = typeof webhookEndpoints.$inferSelect;
type AlertRow = typeof alerts.$inferSelect;

export type DeliveryOutcome = "delivered" | "retrying" | "failed" | "suppressed" | "deferred" | "gone";

/** What one attempt came to: an answer's status, or why nothing was (or could be) sent. */
type Attempt = { statusCode: number | null; error: string | null };

/**
 * One attempt of one delivery. A 2xx is delivered (and sets the alert's last_notified_at);
 * anything else, a redirect included, is retried later through the queue with backoff, and
 * the attempt that exhausts MAX_DELIVERY_ATTEMPTS marks the delivery failed. An attempt over the
 * organization's deliveries per minute is not made: the delivery waits in the queue (deferred).
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

  // Snoozing or disabling an alert silences it at once, retries of earlier trips included. A
  // test's event (no alert) is silenced by nothing.
  let alert: AlertRow | null = null;
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

  const prepared = await prepareAttempt(deps, endpoint);
  if ("error" in prepared) return recordAttempt(deps, delivery, { statusCode: null, error: prepared.error });
  // The slot first: a deferred delivery costs no presentation.
  const slot = await takeDeliverySlot(deps, endpoint.organizationId, deps.urlPolicy.deliveriesPerMinute ?? DEFAULT_DELIVERIES_PER_MINUTE);
  if (!slot.granted) return deferDelivery(deps, delivery.id, slot.retryAfterSeconds);
  // A test's event was written whole when it happened; an alert's trip is presented now.
  const body = alert === null ? delivery.payload : await notificationBody(deps.db, delivery, alert, now, deps.webAppUrl);
  if (!body) return "gone";
  return recordAttempt(deps, delivery, await post(deps, endpoint.url, prepared.secret, delivery, JSON.stringify(body)));
}

/**
 * What an attempt needs before anything is sent: a destination the policy allows, and the signing
 * secret. A secret that does not open (its key is not configured) fails the attempt like an
 * unreachable endpoint, with retries, so configuring the key in time lets the delivery through;
 * nothing unsigned is ever sent.
 */
async function prepareAttempt(deps: NotificationDeps, endpoint: EndpointRow): Promise<{ secret: string } | { error: string }> {
  const problem = outboundUrlProblem(endpoint.url, deps.urlPolicy);
  if (problem) return { error: `url ${problem}` };
  try {
    return { secret: await openSigningSecret(deps.secrets, endpoint) };
  } catch (cause) {
    if (!(cause instanceof SecretDecryptionError)) throw cause;
    return { error: `not sent: the signing secret cannot be decrypted (${cause.message}) See docs/secrets.md.` };
  }
}

/** The signed POST itself; redirects are answers (never followed), a refused connection an error. */
async function post(deps: NotificationDeps, url: string, secret: string, delivery: DeliveryRow, text: string): Promise<Attempt> {
  try {
    const response = await deps.fetch(url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      headers: {
        "content-type": "application/json",
        "user-agent": "ci-test-analytics-webhooks/1",
        [SIGNATURE_HEADER]: signatureHeader(secret, Math.floor(deps.clock.now().getTime() / 1000), text),
        "CTA-Delivery-Id": String(delivery.id),
        "CTA-Event-Type": delivery.eventType,
      },
      body: text,
    });
    await response.body?.cancel().catch(() => {});
    const { status } = response;
    if (status >= 200 && status < 300) return { statusCode: status, error: null };
    return { statusCode: status, error: status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}` };
  } catch (cause) {
    const refused = outboundRefusal(cause);
    if (refused) return { statusCode: null, error: `url ${refused.message}` };
    return {
      statusCode: null,
      error:
        cause instanceof Error && cause.name === "TimeoutError" ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : "could not connect",
    };
  }
}

/**
 * Over the organization's deliveries per minute: queued again for the next window, no attempt
 * counted. `last_attempt_at` is set all the same, so the stalled-work sweep (which re-queues a
 * pending delivery never attempted after 5 minutes) leaves it to its queued message instead of
 * queuing it again during a long backlog.
 */
async function deferDelivery(deps: NotificationDeps, deliveryId: number, delaySeconds: number): Promise<DeliveryOutcome> {
  deps.logger.info("webhook delivery deferred: the organization's deliveries per minute are used up", { deliveryId, delaySeconds });
  await deps.db
    .update(notificationDeliveries)
    .set({ lastAttemptAt: deps.clock.now() })
    .where(and(eq(notificationDeliveries.id, deliveryId), eq(notificationDeliveries.status, "pending")));
  try {
    await deps.queue.send({ deliveryId }, { delaySeconds });
  } catch (queueError) {
    // Left pending: Node queues it again at its next start, the Worker's cron sweep when it is overdue.
    deps.logger.error("could not queue a deferred webhook delivery", { deliveryId, error: describeError(queueError) });
  }
  return "deferred";
}

/** Writes the attempt to the delivery log; a failure is retried with backoff until the attempts run out. */
async function recordAttempt(deps: NotificationDeps, delivery: DeliveryRow, { statusCode, error }: Attempt): Promise<DeliveryOutcome> {
  const now = deps.clock.now();
  const attempt = delivery.attempts + 1;
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
        .where(
          and(
            eq(alerts.id, delivery.alertId),
            or(isNull(alerts.lastNotifiedAt), sql`${alerts.lastNotifiedAt} < ${now.toISOString()}::timestamptz`),
          ),
        );
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
