/**
 * Notifications: signed webhooks about alert trips.
 *
 * After the checks record events, `planNotifications` decides, per alert that tripped on the
 * run: a snoozed alert notifies nobody; an alert notified (or with a notification under way)
 * within its cooldown (default 24 hours) stays quiet; otherwise one delivery per configured
 * endpoint (the organization's, for every project or for this one) carries all of the alert's
 * events of this run. Deliveries go through the queue (a Cloudflare Queue on Workers, in
 * process locally), are retried with backoff, and leave a log. `last_notified_at` is set when a
 * delivery reached its endpoint (docs/notifications.md: a notification that reached at least one channel).
 *
 * This file plans; webhook-delivery.ts delivers, notification-presenters.ts shapes what leaves,
 * notification-admin.ts holds the endpoints and cooldowns the admin API configures.
 */
import { and, eq, gt, isNull, or, sql } from "drizzle-orm";
import type { Logger } from "../lib/logger";
import { alerts, notificationDeliveries, projects, webhookEndpoints } from "../db/schema";
import { transactionWithRetry } from "../db/transaction-retry";
import type { Database } from "../db/types";
import type { Clock } from "../lib/clock";
import type { SecretKeyring } from "../lib/secret-box";
import type { UrlPolicy } from "../notifications/url-policy";
import type { RecordedTrip } from "./alert-checks";
import type { RunQueue } from "../ingest/run-queue";
import type { TestRunRow } from "./test-runs";

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
  /** Seconds before each retry; RETRY_DELAYS_SECONDS of webhook-delivery.ts by default (tests shorten them). */
  retryDelaysSeconds?: number[];
  /** Seals new endpoints' signing secrets and opens them to sign deliveries (docs/secrets.md). */
  secrets: SecretKeyring;
};

/** Which trips notify whom: one delivery per endpoint for each alert that may notify; returns how many were queued. */
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
    const ids = await transactionWithRetry(deps.db, async (tx) => {
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
