/**
 * What notifications look like from outside: webhook endpoints and deliveries as the admin API
 * returns them, and the JSON a webhook receives.
 */
import { eq, inArray } from "drizzle-orm";
import { alertEvents, type alerts, type notificationDeliveries, projects, testRuns, type webhookEndpoints } from "../../db/schema";
import type { Database } from "../../db/types";
import { presentAlert, presentAlertEvent, presentTestRun } from "../../contract/presenters";

/**
 * A webhook URL as people other than the organization's admins see it: scheme and host, the rest
 * masked. Chat and incident tools put the credential in the path or the query (Slack's
 * `/services/T…/B…/<secret>`, Teams' and Discord's tokens), so whoever can read the URL can post.
 */
export function redactedWebhookUrl(raw: string): string {
  try {
    const url = new URL(raw);
    const bare = url.pathname === "/" && url.search === "" && url.hash === "";
    return `${url.protocol}//${url.host}/${bare ? "" : "…"}`;
  } catch {
    return "…";
  }
}

/**
 * An endpoint as the admin API returns it (admin token: the operator's): a signed webhook's whole
 * URL, a Slack or Teams channel's masked URL (stored so; the URL itself is sealed).
 */
export function presentWebhookEndpoint(row: typeof webhookEndpoints.$inferSelect) {
  return {
    id: row.id,
    organization_id: row.organizationId,
    project_id: row.projectId,
    kind: row.kind,
    url: row.url,
    addresses: row.emailAddresses,
    events: row.events,
    owner_filter: row.ownerFilter,
    description: row.description,
    created_at: row.createdAt.toISOString(),
  };
}

export function presentDelivery(row: typeof notificationDeliveries.$inferSelect) {
  return {
    id: row.id,
    endpoint_id: row.endpointId,
    event_type: row.eventType,
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

/** The JSON a webhook receives. Event metadata is uploaded test output: receivers must escape it. */
export async function notificationBody(
  db: Database,
  delivery: typeof notificationDeliveries.$inferSelect,
  alert: typeof alerts.$inferSelect,
  now: Date,
  webAppUrl: string,
) {
  if (delivery.testRunId === null) return null;
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
