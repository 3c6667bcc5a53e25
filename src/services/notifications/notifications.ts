/**
 * Notifications about alert trips: signed webhooks and e-mail to the organization's members.
 *
 * After the checks record events, `planNotifications` decides, per alert that tripped on the
 * run: a snoozed alert notifies nobody; an alert notified (or with a notification under way)
 * within its cooldown (default 24 hours) stays quiet; otherwise one delivery per configured
 * endpoint (the organization's, for every project or for this one) that chose alerts carries the
 * alert's events of this run (with an owner filter, those naming its owner's tests; none: no delivery), and one e-mail per member of the organization (src/services/shared/email-outbox.ts). Deliveries go through the queue (a Cloudflare Queue on Workers, in
 * process locally), are retried with backoff, and leave a log. `last_notified_at` is set when a
 * delivery reached its endpoint (docs/notifications.md: a notification that reached at least one channel).
 *
 * This file plans; webhook-delivery.ts delivers, notification-presenters.ts shapes what leaves,
 * notification-admin.ts holds the endpoints and cooldowns the admin API configures.
 */
import { and, asc, eq, gt, inArray, isNull, or, sql } from "drizzle-orm";
import type { Logger } from "../../lib/logger";
import { alertEvents, alerts, emailOutbox, members, notificationDeliveries, projects, users, webhookEndpoints } from "../../db/schema";
import { ownerMatches } from "../../notifications/channel-routing";
import type { AlertType } from "../../lib/vocabulary";
import { queueEmails, writeEmail } from "../shared/email-outbox";
import { oneLine } from "../tenancy/organizations";
import { ALERT_NAMES } from "../../contract/presenters";
import { transactionWithRetry } from "../../db/transaction-retry";
import type { Database } from "../../db/types";
import type { Clock } from "../../lib/clock";
import type { SecretKeyring } from "../../lib/secret-box";
import type { OutboundPolicy } from "../../notifications/outbound-policy";
import type { RecordedTrip } from "../alerts/alert-checks";
import type { RunQueue } from "../../ingest/run-queue";
import type { TestRunRow } from "../runs/test-runs";

export type NotificationDeps = {
  db: Database;
  clock: Clock;
  logger: Logger;
  webAppUrl: string;
  queue: RunQueue;
  /** Where deliveries may go and how many an organization may cause (src/notifications/outbound-policy.ts). */
  urlPolicy: OutboundPolicy;
  /**
   * Outbound HTTP, held to the same policy: on Node the checked connections of
   * src/node/outbound-fetch.ts (one DNS lookup, its addresses judged and dialled), on Workers
   * guardedFetch over the runtime's fetch (whose egress cannot reach private networks).
   */
  fetch: typeof fetch;
  /** Seconds before each retry; RETRY_DELAYS_SECONDS of webhook-delivery.ts by default (tests shorten them). */
  retryDelaysSeconds?: number[];
  /** Seals new endpoints' signing secrets and opens them to sign deliveries (docs/secrets.md). */
  secrets: SecretKeyring;
};

/**
 * Which trips notify whom: for each alert that may notify (not snoozed, out of its cooldown), one
 * delivery per webhook endpoint and one e-mail per member of the organization (docs/e-mail.md),
 * written in one transaction under the alert's row lock; all are queued once it has committed.
 * Returns how many webhook deliveries and e-mails were queued.
 */
export async function planNotifications(deps: NotificationDeps, run: TestRunRow, trips: RecordedTrip[]): Promise<number> {
  const byAlert = new Map<string, number[]>();
  for (const trip of trips) {
    if (trip.snoozed) continue;
    byAlert.set(trip.alertId, [...(byAlert.get(trip.alertId) ?? []), trip.eventId]);
  }
  if (byAlert.size === 0) return 0;

  const [project] = await deps.db
    .select({ organizationId: projects.organizationId, name: projects.name })
    .from(projects)
    .where(eq(projects.id, run.projectId))
    .limit(1);
  if (!project) return 0;
  const { endpoints, eventsFor } = await alertChannels(deps.db, project.organizationId, run.projectId, [...byAlert.values()].flat());
  const recipients = await alertRecipients(deps.db, project.organizationId);
  if (endpoints.length === 0 && recipients.length === 0) return 0;

  const now = deps.clock.now();
  const planned: number[] = [];
  const emails: string[] = [];
  for (const [alertId, eventIds] of byAlert) {
    const written = await transactionWithRetry(deps.db, async (tx) => {
      // The alert's row lock makes the cooldown decision once per alert, even with concurrent runs.
      const [alert] = await tx.select().from(alerts).where(eq(alerts.id, alertId)).for("update");
      if (!alert?.active) return null;
      const since = new Date(now.getTime() - alert.notificationCooldownSeconds * 1000);
      if (alert.lastNotifiedAt && alert.lastNotifiedAt > since) return null;
      // Failed and suppressed notifications reached nobody, so they do not hold the cooldown.
      const [recent] = await tx
        .select({ id: notificationDeliveries.id })
        .from(notificationDeliveries)
        .where(
          and(
            eq(notificationDeliveries.alertId, alertId),
            gt(notificationDeliveries.createdAt, since),
            sql`${notificationDeliveries.status} not in ('failed', 'suppressed')`,
          ),
        )
        .limit(1);
      if (recent) return null;
      const [recentEmail] = await tx
        .select({ id: emailOutbox.id })
        .from(emailOutbox)
        .where(
          and(
            eq(emailOutbox.alertId, alertId),
            gt(emailOutbox.createdAt, since),
            sql`${emailOutbox.status} not in ('failed', 'suppressed')`,
          ),
        )
        .limit(1);
      if (recentEmail) return null;
      const values = endpoints
        .map((endpoint) => ({
          endpointId: endpoint.id,
          alertId,
          testRunId: run.id,
          eventIds: eventsFor(endpoint, eventIds),
          createdAt: now,
        }))
        .filter((value) => value.eventIds.length > 0);
      const deliveryIds =
        values.length === 0
          ? []
          : (await tx.insert(notificationDeliveries).values(values).returning({ id: notificationDeliveries.id })).map((row) => row.id);
      const emailIds: string[] = [];
      for (const recipient of recipients) {
        const text = alertEmailText(deps.webAppUrl, {
          recipient: recipient.name,
          alertId,
          alertType: alert.alertType,
          projectId: run.projectId,
          projectName: project.name,
          run,
          events: eventIds.length,
        });
        const subject = `${ALERT_NAMES[alert.alertType]} on ${oneLine(project.name)} (run #${run.number})`;
        emailIds.push(
          await writeEmail(
            { db: tx, clock: deps.clock, secrets: deps.secrets },
            { organizationId: project.organizationId, kind: "alert", to: recipient.email, subject, text, alertId },
          ),
        );
      }
      return { deliveryIds, emailIds };
    });
    if (!written) continue;
    planned.push(...written.deliveryIds);
    emails.push(...written.emailIds);
  }
  for (const deliveryId of planned) await deps.queue.send({ deliveryId });
  await queueEmails(deps, emails);
  return planned.length + emails.length;
}

/**
 * The channels hearing a project's alerts (the organization's for every project and the
 * project's own, that chose alerts), and which of a trip's events each gets: all of them, or
 * with an owner filter those whose `owners` (CODEOWNERS, in the metadata) include its owner.
 */
async function alertChannels(db: Database, organizationId: string, projectId: string, eventIds: number[]) {
  const endpoints = (
    await db
      .select({ id: webhookEndpoints.id, events: webhookEndpoints.events, ownerFilter: webhookEndpoints.ownerFilter })
      .from(webhookEndpoints)
      .where(
        and(
          eq(webhookEndpoints.organizationId, organizationId),
          or(isNull(webhookEndpoints.projectId), eq(webhookEndpoints.projectId, projectId)),
        ),
      )
  ).filter((endpoint) => endpoint.events.includes("alerts"));
  const ownersOf = new Map<number, unknown>();
  if (endpoints.some((endpoint) => endpoint.ownerFilter !== null)) {
    const rows = await db
      .select({ id: alertEvents.id, metadata: alertEvents.metadata })
      .from(alertEvents)
      .where(inArray(alertEvents.id, eventIds));
    for (const event of rows) ownersOf.set(event.id, event.metadata.owners);
  }
  const eventsFor = (endpoint: (typeof endpoints)[number], ids: number[]) =>
    endpoint.ownerFilter === null ? ids : ids.filter((id) => ownerMatches(endpoint.ownerFilter, ownersOf.get(id)));
  return { endpoints, eventsFor };
}

/**
 * Who is e-mailed when an alert trips: every member of the organization, admins and members alike
 * (members act on alerts: they snooze them), oldest membership first (docs/e-mail.md).
 */
async function alertRecipients(db: Database, organizationId: string): Promise<{ name: string; email: string }[]> {
  return db
    .select({ name: users.name, email: users.email })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(eq(members.organizationId, organizationId))
    .orderBy(asc(members.createdAt), asc(members.id));
}

function alertEmailText(
  webAppUrl: string,
  input: {
    recipient: string;
    alertId: string;
    alertType: AlertType;
    projectId: string;
    projectName: string;
    run: TestRunRow;
    events: number;
  },
): string {
  const base = webAppUrl.replace(/\/+$/, "");
  const { run } = input;
  const where = [run.branch ? `branch ${run.branch}` : null, run.commitSha ? `commit ${run.commitSha.slice(0, 12)}` : null]
    .filter(Boolean)
    .join(", ");
  return [
    `Hello ${input.recipient},`,
    "",
    `The alert "${ALERT_NAMES[input.alertType]}" of the project "${input.projectName}" tripped on run #${run.number}${where ? ` (${where})` : ""}: ${input.events} event${input.events === 1 ? "" : "s"}.`,
    "",
    `The alert: ${base}/alerts/${input.alertId}`,
    `The run: ${base}/projects/${input.projectId}/runs/${run.number}`,
    "",
    "Further trips of this alert send nothing until its cooldown has passed. Snooze or disable it on its page to silence it.",
  ].join("\n");
}
