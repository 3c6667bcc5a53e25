/**
 * Notifications: signed webhooks about alert trips.
 *
 * After the checks record events, `planNotifications` decides, per alert that tripped on the
 * run: a snoozed alert notifies nobody; an alert notified (or with a notification under way)
 * within its cooldown (default 24 hours) stays quiet; otherwise one delivery per configured
 * endpoint (the organization's, for every project or for this one) carries all of the alert's
 * events of this run. Deliveries go through the queue (a Cloudflare Queue on Workers, in
 * process locally), are retried with backoff, and leave a log. `last_notified_at` is set when a
 * delivery reached its endpoint (DESIGN.md: a notification that reached at least one channel).
 */
import { and, desc, eq, gt, inArray, isNull, or, sql } from "drizzle-orm";
import type { Logger } from "../lib/logger";
import { alertEvents, alerts, notificationDeliveries, organizations, projects, testRuns, webhookEndpoints } from "../db/schema";
import type { Database } from "../db/types";
import type { Clock } from "../lib/clock";
import { describeError, notFound, validationFailed } from "../lib/errors";
import { isUuid } from "../lib/ids";
import { SIGNATURE_HEADER, signatureHeader } from "../notifications/signature";
import { type UrlPolicy, isInternalAddress, isLoopbackHost, webhookUrlProblem } from "../notifications/url-policy";
import type { RecordedTrip } from "./alert-checks";
import { isSnoozed, presentAlert, presentAlertEvent, presentTestRun } from "./presenters";
import type { RunQueue } from "../ingest/run-queue";
import type { TestRunRow } from "./test-runs";

/** Attempts per delivery, the first included; then the delivery is marked failed. */
export const MAX_DELIVERY_ATTEMPTS = 6;
/** Seconds before attempt n+1 (n = attempts so far): 10 s, 1 min, 5 min, 30 min, 2 h. */
const RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200];
const DELIVERY_TIMEOUT_MS = 10_000;

export type NotificationDeps = {
  db: Database;
  clock: Clock;
  logger: Logger;
  webAppUrl: string;
  queue: RunQueue;
  urlPolicy: UrlPolicy;
  /** Outbound HTTP; the runtime's fetch. */
  fetch: typeof fetch;
  /** Resolves a host name to its addresses where the runtime can (Node); absent on Workers, whose fetch cannot reach private networks. */
  resolveHost?: (host: string) => Promise<string[]>;
  /** Seconds before each retry; RETRY_DELAYS_SECONDS by default (tests shorten them). */
  retryDelaysSeconds?: number[];
};

function randomSigningSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

export function presentWebhookEndpoint(row: typeof webhookEndpoints.$inferSelect) {
  return {
    id: row.id,
    organization_id: row.organizationId,
    project_id: row.projectId,
    url: row.url,
    description: row.description,
    created_at: row.createdAt.toISOString(),
  };
}

export function presentDelivery(row: typeof notificationDeliveries.$inferSelect) {
  return {
    id: row.id,
    endpoint_id: row.endpointId,
    alert_id: row.alertId,
    event_ids: row.eventIds,
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.lastStatusCode,
    last_error: row.lastError,
    created_at: row.createdAt.toISOString(),
    last_attempt_at: row.lastAttemptAt?.toISOString() ?? null,
    delivered_at: row.deliveredAt?.toISOString() ?? null,
  };
}

// ---------------------------------------------------------------------------------------------
// Configuration (admin)

export async function createWebhookEndpoint(
  deps: Pick<NotificationDeps, "db" | "clock" | "urlPolicy">,
  organizationId: string,
  input: { url: string; projectId?: string | null; description?: string | null },
) {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const problem = webhookUrlProblem(input.url, deps.urlPolicy);
  if (problem) throw validationFailed([{ field: "url", message: problem }]);
  if (input.projectId) {
    if (!isUuid(input.projectId)) throw validationFailed([{ field: "project_id", message: "is not a project of this organization" }]);
    const [project] = await deps.db
      .select({ id: projects.id })
      .from(projects)
      .where(and(eq(projects.id, input.projectId), eq(projects.organizationId, organizationId)))
      .limit(1);
    if (!project) throw validationFailed([{ field: "project_id", message: "is not a project of this organization" }]);
  }
  const secret = randomSigningSecret();
  try {
    const [row] = await deps.db
      .insert(webhookEndpoints)
      .values({
        organizationId,
        projectId: input.projectId ?? null,
        url: input.url,
        description: input.description ?? null,
        signingSecret: secret,
        createdAt: deps.clock.now(),
      })
      .returning();
    return { webhook: presentWebhookEndpoint(row!), signing_secret: secret };
  } catch (error) {
    if ((error as { cause?: { code?: string } }).cause?.code === "23503") throw notFound("Organization");
    throw error;
  }
}

export async function listWebhookEndpoints(db: Database, organizationId: string) {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const [organization] = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).limit(1);
  if (!organization) throw notFound("Organization");
  const rows = await db
    .select()
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.organizationId, organizationId))
    .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id))
    .limit(100);
  return { data: rows.map(presentWebhookEndpoint) };
}

export async function deleteWebhookEndpoint(db: Database, endpointId: string) {
  if (!isUuid(endpointId)) throw notFound("Webhook");
  const deleted = await db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId)).returning({ id: webhookEndpoints.id });
  if (deleted.length === 0) throw notFound("Webhook");
}

/** The newest deliveries of an endpoint (the delivery log). */
export async function listDeliveries(db: Database, endpointId: string) {
  if (!isUuid(endpointId)) throw notFound("Webhook");
  const [endpoint] = await db.select({ id: webhookEndpoints.id }).from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId)).limit(1);
  if (!endpoint) throw notFound("Webhook");
  const rows = await db
    .select()
    .from(notificationDeliveries)
    .where(eq(notificationDeliveries.endpointId, endpointId))
    .orderBy(desc(notificationDeliveries.createdAt), desc(notificationDeliveries.id))
    .limit(100);
  return { data: rows.map(presentDelivery) };
}

export async function setNotificationCooldown(deps: Pick<NotificationDeps, "db" | "clock" | "webAppUrl">, alertId: string, cooldownSeconds: number) {
  if (!isUuid(alertId)) throw notFound("Alert");
  const [row] = await deps.db
    .update(alerts)
    .set({ notificationCooldownSeconds: cooldownSeconds, updatedAt: deps.clock.now() })
    .where(eq(alerts.id, alertId))
    .returning();
  if (!row) throw notFound("Alert");
  return { ...presentAlert(row, deps.clock.now(), deps.webAppUrl), notification_cooldown_seconds: row.notificationCooldownSeconds };
}

// ---------------------------------------------------------------------------------------------
// Planning: which trips notify whom

export async function planNotifications(deps: NotificationDeps, run: TestRunRow, trips: RecordedTrip[]): Promise<number> {
  const byAlert = new Map<string, number[]>();
  for (const trip of trips) {
    if (trip.snoozed) continue;
    byAlert.set(trip.alertId, [...(byAlert.get(trip.alertId) ?? []), trip.eventId]);
  }
  if (byAlert.size === 0) return 0;

  const [project] = await deps.db.select({ organizationId: projects.organizationId }).from(projects).where(eq(projects.id, run.projectId)).limit(1);
  if (!project) return 0;
  const endpoints = await deps.db
    .select({ id: webhookEndpoints.id })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.organizationId, project.organizationId), or(isNull(webhookEndpoints.projectId), eq(webhookEndpoints.projectId, run.projectId))));
  if (endpoints.length === 0) return 0;

  const now = deps.clock.now();
  const planned: number[] = [];
  for (const [alertId, eventIds] of byAlert) {
    const ids = await deps.db.transaction(async (tx) => {
      // The alert's row lock makes the cooldown decision once per alert, even with concurrent runs.
      const [alert] = await tx.select().from(alerts).where(eq(alerts.id, alertId)).for("update");
      if (!alert) return [];
      const since = new Date(now.getTime() - alert.notificationCooldownSeconds * 1000);
      if (alert.lastNotifiedAt && alert.lastNotifiedAt > since) return [];
      const [recent] = await tx
        .select({ id: notificationDeliveries.id })
        .from(notificationDeliveries)
        // Failed and suppressed deliveries reached nobody, so they do not hold the cooldown.
        .where(and(eq(notificationDeliveries.alertId, alertId), gt(notificationDeliveries.createdAt, since), sql`${notificationDeliveries.status} not in ('failed', 'suppressed')`))
        .limit(1);
      if (recent) return [];
      const rows = await tx
        .insert(notificationDeliveries)
        .values(endpoints.map((endpoint) => ({ endpointId: endpoint.id, alertId, testRunId: run.id, eventIds, createdAt: now })))
        .returning({ id: notificationDeliveries.id });
      return rows.map((row) => row.id);
    });
    planned.push(...ids);
  }
  for (const deliveryId of planned) await deps.queue.send({ deliveryId });
  return planned.length;
}

// ---------------------------------------------------------------------------------------------
// Delivery

/** The JSON a webhook receives. Event metadata is uploaded test output: receivers must escape it. */
async function notificationBody(
  db: Database,
  delivery: typeof notificationDeliveries.$inferSelect,
  alert: typeof alerts.$inferSelect,
  now: Date,
  webAppUrl: string,
) {
  const [run] = await db.select().from(testRuns).where(eq(testRuns.id, delivery.testRunId)).limit(1);
  if (!run) return null;
  const [project] = await db.select().from(projects).where(eq(projects.id, run.projectId)).limit(1);
  if (!project) return null;
  const events = delivery.eventIds.length ? await db.select().from(alertEvents).where(inArray(alertEvents.id, delivery.eventIds)) : [];
  return {
    type: "alert.triggered",
    delivery_id: delivery.id,
    created_at: delivery.createdAt.toISOString(),
    project: { id: project.id, name: project.name, url: `${webAppUrl.replace(/\/+$/, "")}/projects/${project.id}` },
    alert: presentAlert(alert, now, webAppUrl),
    test_run: presentTestRun(run, webAppUrl),
    events: events.map((event) => {
      const { test_run: _run, ...rest } = presentAlertEvent(event, run, webAppUrl);
      return rest;
    }),
  };
}

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
  if (!row || row.delivery.status !== "pending") return "gone";
  const { delivery, endpoint } = row;
  const now = deps.clock.now();
  const attempt = delivery.attempts + 1;

  // Snoozing or disabling an alert silences it at once, retries of earlier trips included.
  const [alert] = await deps.db.select().from(alerts).where(eq(alerts.id, delivery.alertId)).limit(1);
  if (!alert) return "gone";
  const silencedBy = !alert.active ? "disabled" : isSnoozed(alert.snoozedUntil, now) ? "snoozed" : null;
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
  if (!error) {
    const body = await notificationBody(deps.db, delivery, alert, now, deps.webAppUrl);
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
          [SIGNATURE_HEADER]: signatureHeader(endpoint.signingSecret, Math.floor(now.getTime() / 1000), text),
          "CTA-Delivery-Id": String(delivery.id),
          "CTA-Event-Type": "alert.triggered",
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
    await deps.db.transaction(async (tx) => {
      await tx
        .update(notificationDeliveries)
        .set({ status: "delivered", attempts: attempt, lastStatusCode: statusCode, lastError: null, lastAttemptAt: now, deliveredAt: now })
        .where(eq(notificationDeliveries.id, delivery.id));
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
