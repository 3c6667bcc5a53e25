/**
 * Webhook events about tests (docs/notifications.md): `test.quarantined`, `test.unquarantined` and
 * `test.health_changed`, signed, retried and logged like alert notifications, but not subject to
 * any alert's snooze or cooldown.
 *
 * Their deliveries are written in the transaction that made the change (a quarantine, a run's
 * health rules, the flakiness check), with the body as sent: the test as it was then, not as it
 * is at a retry. They are queued once that transaction has committed, as alert notifications are,
 * so a change rolled back sends nothing.
 */
import { and, eq, inArray, isNull, ne, or, sql } from "drizzle-orm";
import { notificationDeliveries, projects, tests, webhookEndpoints } from "../../db/schema";
import type { Database } from "../../db/types";
import { describeError } from "../../lib/errors";
import type { Logger } from "../../lib/logger";
import type { TestEventType } from "../../lib/vocabulary";
import type { RunQueue } from "../../ingest/run-queue";
import { presentTest } from "../../contract/presenters";
import { windowOf } from "./tests";
import { hearsTestEvent } from "../../notifications/channel-routing";

export type TestEvent = { type: TestEventType; testId: string };

/**
 * Plans one delivery per event and endpoint hearing the project (the organization's webhooks for
 * every project, and this project's) that chose the event and whose owner filter the test
 * matches (channel-routing.ts), inside the caller's transaction, after its changes: the
 * bodies present the tests as that transaction left them. Returns the deliveries' ids, to queue
 * after the commit (queueDeliveries). Nothing is read when no webhook hears the project.
 */
export async function recordTestEvents(
  tx: Database,
  webAppUrl: string,
  context: { projectId: string; testRunId: number | null; occurredAt: Date },
  events: TestEvent[],
): Promise<number[]> {
  if (events.length === 0) return [];
  const [project] = await tx
    .select({ organizationId: projects.organizationId, defaultBranch: projects.defaultBranch })
    .from(projects)
    .where(eq(projects.id, context.projectId))
    .limit(1);
  if (!project) return [];
  const endpoints = await tx
    .select({
      id: webhookEndpoints.id,
      kind: webhookEndpoints.kind,
      events: webhookEndpoints.events,
      ownerFilter: webhookEndpoints.ownerFilter,
    })
    .from(webhookEndpoints)
    .where(
      and(
        eq(webhookEndpoints.organizationId, project.organizationId),
        or(isNull(webhookEndpoints.projectId), eq(webhookEndpoints.projectId, context.projectId)),
      ),
    );
  if (endpoints.length === 0) return [];
  const rows = await tx
    .select()
    .from(tests)
    .where(inArray(tests.id, [...new Set(events.map((event) => event.testId))]));
  const byId = new Map(rows.map((row) => [row.id, row]));
  const occurredAt = context.occurredAt.toISOString();
  const values = events.flatMap((event) => {
    const row = byId.get(event.testId);
    if (!row) return [];
    const payload = {
      type: event.type,
      occurred_at: occurredAt,
      project_id: context.projectId,
      test: presentTest(row, windowOf(project), webAppUrl, context.occurredAt),
    };
    return endpoints
      .filter((endpoint) => hearsTestEvent(endpoint, event.type, payload.test))
      .map((endpoint) => ({
        endpointId: endpoint.id,
        eventType: event.type,
        testRunId: context.testRunId,
        eventIds: [],
        payload,
        createdAt: context.occurredAt,
      }));
  });
  if (values.length === 0) return [];
  const inserted = await tx.insert(notificationDeliveries).values(values).returning({ id: notificationDeliveries.id });
  return inserted.map((row) => row.id);
}

/**
 * Queues planned deliveries. A delivery that cannot be queued stays pending (on Node, the next
 * start queues it again): the change it reports is committed and must not be undone for it.
 */
export async function queueDeliveries(deps: { queue: RunQueue; logger: Logger }, deliveryIds: number[]): Promise<void> {
  for (const deliveryId of deliveryIds) {
    try {
      await deps.queue.send({ deliveryId });
    } catch (error) {
      deps.logger.error("could not queue a webhook delivery", { deliveryId, error: describeError(error) });
    }
  }
}

/**
 * Queues the test events a run's processing and checks planned (never attempted yet): called once
 * both transactions have committed. The partial index over unattempted test events serves it.
 */
export async function queueRunTestEvents(deps: { db: Database; queue: RunQueue; logger: Logger }, testRunId: number): Promise<number> {
  const rows = await deps.db
    .select({ id: notificationDeliveries.id })
    .from(notificationDeliveries)
    .where(
      and(
        eq(notificationDeliveries.testRunId, testRunId),
        sql`${notificationDeliveries.attempts} = 0`,
        ne(notificationDeliveries.eventType, "alert.triggered"),
        eq(notificationDeliveries.status, "pending"),
      ),
    )
    .orderBy(notificationDeliveries.id);
  await queueDeliveries(
    deps,
    rows.map((row) => row.id),
  );
  return rows.length;
}
