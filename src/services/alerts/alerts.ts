import { type SQL, and, eq, getTableColumns, gt, inArray, isNull, lte, or } from "drizzle-orm";
import { alerts, projects } from "../../db/schema";
import { notFound } from "../../lib/errors";
import { isUuid } from "../../lib/ids";
import { type ListRequest, defineList } from "../../lib/lists";
import type { Page } from "../../lib/pagination";
import type { OrgScope } from "../shared/context";
import { type AlertStatus, type AlertType, SNOOZE_DURATIONS, type SnoozeDuration } from "../../lib/vocabulary";
import { presentAlert } from "../../contract/presenters";
import { findProjectRow } from "../tenancy/projects";
import { selectWithDataVersion } from "../shared/data-versions";

export type AlertObject = ReturnType<typeof presentAlert>;
/** As in the query string; `status` defaults to `active`. */
export type AlertFilters = { status: AlertStatus; project_id: string | null; alert_type: AlertType | null };

/**
 * The states do not overlap: `active` = checking and not snoozed (the default), `snoozed` =
 * checking and snoozed, `inactive` = not checking (snoozed or not), `all` = every alert.
 * Snoozing is judged against `now`, so an expired snooze needs no job to end.
 */
function statusCondition(status: AlertStatus, now: Date): SQL | undefined {
  const snoozedNow = gt(alerts.snoozedUntil, now);
  switch (status) {
    case "active":
      return and(eq(alerts.active, true), or(isNull(alerts.snoozedUntil), lte(alerts.snoozedUntil, now)));
    case "snoozed":
      return and(eq(alerts.active, true), snoozedNow);
    case "inactive":
      return eq(alerts.active, false);
    case "all":
      return undefined;
  }
}

/** Alerts across the organization's projects, newest first. */
export const alertList = defineList<AlertFilters, typeof alerts.$inferSelect, AlertObject, { now: Date; webAppUrl: string }>({
  name: "alerts",
  order: { ts: alerts.createdAt, id: alerts.id, idKind: "uuid" },
  positionOf: (row) => ({ ts: row.createdAt, id: row.id }),
  present: (row, { now, webAppUrl }) => presentAlert(row, now, webAppUrl),
});

export async function listAlerts(scope: OrgScope, request: ListRequest<AlertFilters>): Promise<Page<AlertObject>> {
  const { filters } = request;
  // An unknown or foreign project_id is a 404, not an empty list.
  if (filters.project_id !== null) await findProjectRow(scope, filters.project_id);
  const now = scope.clock.now();
  const rows = await selectWithDataVersion(
    scope,
    (version) =>
      scope.db
        .select({ ...getTableColumns(alerts), ...version })
        .from(alerts)
        .where(
          and(
            eq(alerts.organizationId, scope.organizationId),
            filters.project_id !== null ? eq(alerts.projectId, filters.project_id) : undefined,
            filters.alert_type !== null ? eq(alerts.alertType, filters.alert_type) : undefined,
            statusCondition(filters.status, now),
            alertList.after(request),
          ),
        )
        .orderBy(...alertList.orderBy)
        .limit(alertList.fetchLimit(request)),
    "empty_list",
  );
  return alertList.page(rows, request, { now, webAppUrl: scope.webAppUrl });
}

export async function findAlertRow(scope: OrgScope, alertId: string) {
  if (!isUuid(alertId)) throw notFound("Alert");
  const [row] = await selectWithDataVersion(
    scope,
    (version) =>
      scope.db
        .select({ ...getTableColumns(alerts), ...version })
        .from(alerts)
        .where(and(eq(alerts.id, alertId), eq(alerts.organizationId, scope.organizationId)))
        .limit(1),
    "not_found",
  );
  if (!row) throw notFound("Alert");
  return row;
}

export async function getAlert(scope: OrgScope, alertId: string): Promise<AlertObject> {
  return presentAlert(await findAlertRow(scope, alertId), scope.clock.now(), scope.webAppUrl);
}

/**
 * Applies a state change as one conditional UPDATE. When the alert is already in the target
 * state the condition matches nothing and the alert is returned unchanged (updated_at included).
 */
async function transition(
  scope: OrgScope,
  alertId: string,
  changes: Partial<typeof alerts.$inferInsert>,
  onlyIf: SQL | undefined,
): Promise<AlertObject> {
  if (!isUuid(alertId)) throw notFound("Alert");
  const now = scope.clock.now();
  const [updated] = await scope.db
    .update(alerts)
    .set({ ...changes, updatedAt: now })
    .where(and(eq(alerts.id, alertId), eq(alerts.organizationId, scope.organizationId), onlyIf))
    .returning();
  if (updated) return presentAlert(updated, now, scope.webAppUrl);
  return getAlert(scope, alertId);
}

/** Snoozing an already snoozed alert restarts the period from now. */
export function snoozeAlert(scope: OrgScope, alertId: string, duration: SnoozeDuration): Promise<AlertObject> {
  const until = new Date(scope.clock.now().getTime() + SNOOZE_DURATIONS[duration]);
  return transition(scope, alertId, { snoozedUntil: until }, undefined);
}

export function unsnoozeAlert(scope: OrgScope, alertId: string): Promise<AlertObject> {
  return transition(scope, alertId, { snoozedUntil: null }, gt(alerts.snoozedUntil, scope.clock.now()));
}

export function enableAlert(scope: OrgScope, alertId: string): Promise<AlertObject> {
  return transition(scope, alertId, { active: true }, eq(alerts.active, false));
}

export function disableAlert(scope: OrgScope, alertId: string): Promise<AlertObject> {
  return transition(scope, alertId, { active: false }, eq(alerts.active, true));
}

/** Names of the organization's projects among `ids`: the alerts page names each alert's project. */
export async function alertProjectNames(scope: OrgScope, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await scope.db
    .select({ id: projects.id, name: projects.name })
    .from(projects)
    .where(and(eq(projects.organizationId, scope.organizationId), inArray(projects.id, [...new Set(ids)])));
  return new Map(rows.map((row) => [row.id, row.name]));
}
