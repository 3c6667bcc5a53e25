import { and, desc, eq, exists, inArray, sql } from "drizzle-orm";
import { alertEvents, alerts, testRuns } from "../../db/schema";
import { transactionWithRetry } from "../../db/transaction-retry";
import { notFound } from "../../lib/errors";
import { isUuid } from "../../lib/ids";
import { type ListRequest, defineList } from "../../lib/lists";
import type { Page } from "../../lib/pagination";
import { findAlertRow } from "./alerts";
import type { OrgScope, ServiceDeps } from "../shared/context";
import { presentAlertEvent } from "../../contract/presenters";
import { selectWithDataVersion } from "../shared/data-versions";

export type AlertEventObject = ReturnType<typeof presentAlertEvent>;

export type AlertEventFilters = { alert_id: string };

/** Events of one alert, newest first, each with the full test run that tripped the check. */
export const alertEventList = defineList<
  AlertEventFilters,
  { event: typeof alertEvents.$inferSelect; run: typeof testRuns.$inferSelect },
  AlertEventObject,
  string
>({
  name: "alert_events",
  order: { ts: alertEvents.triggeredAt, id: alertEvents.id, idKind: "bigint" },
  positionOf: (row) => ({ ts: row.event.triggeredAt, id: row.event.id }),
  present: (row, webAppUrl) => presentAlertEvent(row.event, row.run, webAppUrl),
});

/**
 * One statement for a page with events (one database round trip on the Worker): the alert's
 * organization is checked inside the query (an EXISTS that Postgres evaluates once, so the page is
 * still read in the keyset index's order). Only an empty page asks again whether the alert exists
 * in the organization (404) or has no events (an empty page).
 */
export async function listAlertEvents(scope: OrgScope, request: ListRequest<AlertEventFilters>): Promise<Page<AlertEventObject>> {
  const alertId = request.filters.alert_id;
  if (!isUuid(alertId)) throw notFound("Alert");
  const alertInScope = scope.db
    .select({ id: alerts.id })
    .from(alerts)
    .where(and(eq(alerts.id, alertId), eq(alerts.organizationId, scope.organizationId)));
  const rows = await selectWithDataVersion(
    scope,
    (version) =>
      scope.db
        .select({ event: alertEvents, run: testRuns, ...version })
        .from(alertEvents)
        .innerJoin(testRuns, eq(testRuns.id, alertEvents.testRunId))
        .where(and(eq(alertEvents.alertId, alertId), exists(alertInScope), alertEventList.after(request)))
        .orderBy(...alertEventList.orderBy)
        .limit(alertEventList.fetchLimit(request)),
    "empty_list",
  );
  if (rows.length === 0) await findAlertRow(scope, alertId);
  return alertEventList.page(rows, request, scope.webAppUrl);
}

/**
 * Each alert's newest event with its run, for the alerts list's sentences (`alertIds`: one page of
 * the organization's alerts). One statement: DISTINCT ON over the (alert, triggered_at) order, the
 * organization checked on the alerts joined, so an id of another organization finds nothing.
 */
export async function latestAlertEvents(scope: OrgScope, alertIds: readonly string[]) {
  if (alertIds.length === 0) return new Map<string, LatestAlertEvent>();
  const rows = await scope.db
    .selectDistinctOn([alertEvents.alertId], {
      alertId: alertEvents.alertId,
      metadata: alertEvents.metadata,
      triggeredAt: alertEvents.triggeredAt,
      run: { projectId: testRuns.projectId, number: testRuns.number, branch: testRuns.branch, commitSha: testRuns.commitSha },
    })
    .from(alertEvents)
    .innerJoin(alerts, eq(alerts.id, alertEvents.alertId))
    .innerJoin(testRuns, eq(testRuns.id, alertEvents.testRunId))
    .where(and(inArray(alertEvents.alertId, [...new Set(alertIds)]), eq(alerts.organizationId, scope.organizationId)))
    .orderBy(alertEvents.alertId, desc(alertEvents.triggeredAt), desc(alertEvents.id));
  return new Map(rows.map((row) => [row.alertId, row]));
}

export type LatestAlertEvent = {
  alertId: string;
  metadata: unknown;
  triggeredAt: Date;
  run: { projectId: string; number: number; branch: string | null; commitSha: string | null };
};

/** The events a run tripped (newest first), each with its alert's id, type and project: what the run's page lists. */
export async function listRunAlertEvents(scope: OrgScope, runId: number) {
  return scope.db
    .select({
      id: alertEvents.id,
      alertId: alerts.id,
      alertType: alerts.alertType,
      metadata: alertEvents.metadata,
      triggeredAt: alertEvents.triggeredAt,
    })
    .from(alertEvents)
    .innerJoin(alerts, eq(alerts.id, alertEvents.alertId))
    .where(and(eq(alertEvents.testRunId, runId), eq(alerts.organizationId, scope.organizationId)))
    .orderBy(desc(alertEvents.triggeredAt), desc(alertEvents.id));
}

/**
 * Records one trip of an alert's check on a test run and counts it, in one transaction.
 * Called by the alert checks; whether to notify is decided by the caller.
 */
export async function recordAlertEvent(
  deps: Pick<ServiceDeps, "db" | "clock">,
  input: { alertId: string; testRunId: number; metadata: Record<string, unknown> },
) {
  const triggeredAt = deps.clock.now();
  return transactionWithRetry(deps.db, async (tx) => {
    const [event] = await tx
      .insert(alertEvents)
      .values({ alertId: input.alertId, testRunId: input.testRunId, metadata: input.metadata, triggeredAt })
      .returning();
    await tx
      .update(alerts)
      .set({ eventsCount: sql`${alerts.eventsCount} + 1` })
      .where(eq(alerts.id, input.alertId));
    return event!;
  });
}
