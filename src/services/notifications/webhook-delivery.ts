/**
 * Delivering one planned notification (an alert's trip, a test's event, a test message, a weekly
 * digest): a signed POST to a webhook, a Slack (Block Kit) or Teams (Adaptive Card) message to a
 * channel whose URL is opened from its sealed form (src/notifications/channel-messages.ts), or
 * e-mails to an e-mail channel's members through the e-mail outbox (email-channel.ts), retried through the queue with backoff until it is delivered, the attempts run out,
 * or (an alert's) the alert is silenced. Every attempt is held to the outbound policy
 * (src/notifications/outbound-policy.ts): its URL here, its connection by `deps.fetch` (on Node,
 * one DNS lookup whose addresses are judged and dialled), and the organization's deliveries per
 * minute, over which an attempt waits in the queue without counting as one.
 */
import { and, eq, isNull, or, sql } from "drizzle-orm";
import { alerts, notificationDeliveries, projects, testRuns, webhookEndpoints } from "../../db/schema";
import { channelMessage, slackPayload, teamsPayload } from "../../notifications/channel-messages";
import { transactionWithRetry } from "../../db/transaction-retry";
import { describeError } from "../../lib/errors";
import { SecretDecryptionError } from "../../lib/secret-box";
import { SIGNATURE_HEADER, signatureHeader } from "../../notifications/signature";
import { DEFAULT_DELIVERIES_PER_MINUTE, outboundRefusal, outboundUrlProblem } from "../../notifications/outbound-policy";
import { takeDeliverySlot } from "./delivery-rate";
import { notificationBody } from "./notification-presenters";
import type { NotificationDeps } from "./notifications";
import { isSnoozed } from "../../contract/presenters";
import { endpointUrl, openSigningSecret } from "./webhook-secrets";
import { deliverByEmail } from "./email-channel";

/** The longest wait a receiver's `Retry-After` may ask for (Slack's 429): beyond it, the retry schedule's own delay. */
const MAX_RETRY_AFTER_SECONDS = 3600;

/** Attempts per delivery, the first included; then the delivery is marked failed. */
export const MAX_DELIVERY_ATTEMPTS = 6;
/** Seconds before attempt n+1 (n = attempts so far): 10 s, 1 min, 5 min, 30 min, 2 h. */
const RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200];
const DELIVERY_TIMEOUT_MS = 10_000;

type DeliveryRow = typeof notificationDeliveries.$inferSelect;
type EndpointRow = typeof webhookEndpoints.$inferSelect;
type AlertRow = typeof alerts.$inferSelect;

export type DeliveryOutcome = "delivered" | "retrying" | "failed" | "suppressed" | "deferred" | "gone";

/** What one attempt came to: an answer's status (and the wait its Retry-After asked for), or why nothing was (or could be) sent. */
type Attempt = { statusCode: number | null; error: string | null; retryAfterSeconds?: number };

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
  if (endpoint.kind === "webhook") {
    return recordAttempt(deps, delivery, await post(deps, prepared.url, prepared.secret, delivery, JSON.stringify(body)));
  }
  const message = channelMessage(body, await messageContext(deps, delivery, endpoint, body));
  if (!message) return "gone";
  if (endpoint.kind === "email") return deliverByEmail(deps, delivery, endpoint, message);
  const payload = endpoint.kind === "slack" ? slackPayload(message) : teamsPayload(message);
  return recordAttempt(deps, delivery, await post(deps, prepared.url, null, delivery, JSON.stringify(payload)));
}

const EVENT_LABELS = {
  alerts: "alerts",
  health: "tests turning flaky or broken",
  quarantine: "quarantine changes",
  digest: "the weekly digest",
} as const;

/** What a channel's sentences name beyond the body: the project, the run of a test's event, the channel's events. */
async function messageContext(deps: NotificationDeps, delivery: DeliveryRow, endpoint: EndpointRow, body: Record<string, unknown>) {
  const projectOf = body.project as { name?: unknown } | undefined;
  let projectName = typeof projectOf?.name === "string" ? projectOf.name : null;
  if (projectName === null && typeof body.project_id === "string") {
    const [project] = await deps.db.select({ name: projects.name }).from(projects).where(eq(projects.id, body.project_id)).limit(1);
    projectName = project?.name ?? null;
  }
  let runNumber: number | null = null;
  if (delivery.testRunId !== null && delivery.alertId === null) {
    const [run] = await deps.db.select({ number: testRuns.number }).from(testRuns).where(eq(testRuns.id, delivery.testRunId)).limit(1);
    runNumber = run?.number ?? null;
  }
  const labels = endpoint.events.map((event) => EVENT_LABELS[event]);
  const eventsLabel = labels.length > 1 ? `${labels.slice(0, -1).join(", ")} and ${labels.at(-1)}` : (labels[0] ?? "nothing");
  const owned = endpoint.ownerFilter ? ` (tests owned by ${endpoint.ownerFilter})` : "";
  return { projectName: projectName ?? "every project", runNumber, eventsLabel: `${eventsLabel}${owned}` };
}

/**
 * What an attempt needs before anything is sent: a destination the policy allows (a channel's URL
 * opened from its sealed form), and a webhook's signing secret. A secret or URL that does not open
 * (its key is not configured) fails the attempt like an unreachable endpoint, with retries, so
 * configuring the key in time lets the delivery through; nothing unsigned is ever sent to a webhook.
 */
async function prepareAttempt(
  deps: NotificationDeps,
  endpoint: EndpointRow,
): Promise<{ url: string; secret: string | null } | { error: string }> {
  // An e-mail channel goes through the e-mail outbox, not over HTTP: no URL to check or open.
  if (endpoint.kind === "email") return { url: endpoint.url, secret: null };
  let url: string;
  try {
    url = await endpointUrl(deps.secrets, endpoint);
  } catch (cause) {
    if (!(cause instanceof SecretDecryptionError)) throw cause;
    return { error: `not sent: the channel's URL cannot be decrypted (${cause.message}) See docs/secrets.md.` };
  }
  const problem = outboundUrlProblem(url, deps.urlPolicy);
  if (problem) return { error: `url ${problem}` };
  if (endpoint.kind !== "webhook") return { url, secret: null };
  try {
    return { url, secret: await openSigningSecret(deps.secrets, endpoint) };
  } catch (cause) {
    if (!(cause instanceof SecretDecryptionError)) throw cause;
    return { error: `not sent: the signing secret cannot be decrypted (${cause.message}) See docs/secrets.md.` };
  }
}

/** A `Retry-After` in seconds (or an HTTP date), at most MAX_RETRY_AFTER_SECONDS; null when absent or unreadable. */
function retryAfterSeconds(header: string | null, now: Date): number | null {
  if (header === null) return null;
  const seconds = /^\s*\d+\s*$/.test(header) ? Number(header) : (Date.parse(header) - now.getTime()) / 1000;
  return Number.isFinite(seconds) ? Math.min(Math.max(seconds, 0), MAX_RETRY_AFTER_SECONDS) : null;
}

/**
 * The POST itself, signed for a webhook (`secret`), plain JSON for Slack and Teams; redirects are
 * answers (never followed), a refused connection an error. A 429 or 503's `Retry-After` (Slack's
 * rate limit) is kept for the retry's delay.
 */
async function post(deps: NotificationDeps, url: string, secret: string | null, delivery: DeliveryRow, text: string): Promise<Attempt> {
  try {
    const signed: Record<string, string> =
      secret === null
        ? {}
        : {
            [SIGNATURE_HEADER]: signatureHeader(secret, Math.floor(deps.clock.now().getTime() / 1000), text),
            "CTA-Delivery-Id": String(delivery.id),
            "CTA-Event-Type": delivery.eventType,
          };
    const response = await deps.fetch(url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      headers: { "content-type": "application/json", "user-agent": "ci-test-analytics-webhooks/1", ...signed },
      body: text,
    });
    await response.body?.cancel().catch(() => {});
    const { status } = response;
    if (status >= 200 && status < 300) return { statusCode: status, error: null };
    const wait = status === 429 || status === 503 ? retryAfterSeconds(response.headers.get("retry-after"), deps.clock.now()) : null;
    return {
      statusCode: status,
      error:
        status >= 300 && status < 400
          ? `redirect (${status}) not followed`
          : `HTTP ${status}${wait === null ? "" : ` (Retry-After ${wait} s)`}`,
      ...(wait === null ? {} : { retryAfterSeconds: wait }),
    };
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
async function recordAttempt(
  deps: NotificationDeps,
  delivery: DeliveryRow,
  { statusCode, error, retryAfterSeconds: asked }: Attempt,
): Promise<DeliveryOutcome> {
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
    // The receiver's Retry-After, when it asks for longer than the schedule.
    const delaySeconds = Math.max(delays[attempt - 1] ?? delays.at(-1)!, asked ?? 0);
    await deps.queue.send({ deliveryId: delivery.id }, { delaySeconds });
  } catch (queueError) {
    deps.logger.error("could not queue a webhook retry", { deliveryId: delivery.id, error: describeError(queueError) });
  }
  return "retrying";
}
