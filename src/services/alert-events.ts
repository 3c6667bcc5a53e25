import { and, desc, eq, sql } from "drizzle-orm";
import { alertEvents, alerts, testRuns } from "../db/schema";
import { type Page, type PageRequest, keysetBefore, toPage } from "../lib/pagination";
import { findAlertRow } from "./alerts";
import type { OrgScope, ServiceDeps } from "./context";
import { presentAlertEvent } from "./presenters";

export type AlertEventObject = ReturnType<typeof presentAlertEvent>;

/** Events of one alert, newest first, each with the full test run that tripped the check. */
export async function listAlertEvents(scope: OrgScope, alertId: string, page: PageRequest): Promise<Page<AlertEventObject>> {
  await findAlertRow(scope, alertId);
  const rows = await scope.db
    .select({ event: alertEvents, run: testRuns })
    .from(alertEvents)
    .innerJoin(testRuns, eq(testRuns.id, alertEvents.testRunId))
    .where(
      and(
        eq(alertEvents.alertId, alertId),
        page.after ? keysetBefore(alertEvents.triggeredAt, alertEvents.id, page.after, "bigint") : undefined,
      ),
    )
    .orderBy(desc(alertEvents.triggeredAt), desc(alertEvents.id))
    .limit(page.limit + 1);
  return toPage(
    rows,
    page.limit,
    (r) => ({ ts: r.event.triggeredAt, id: r.event.id }),
    (r) => presentAlertEvent(r.event, r.run, scope.webAppUrl),
  );
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
  return deps.db.transaction(async (tx) => {
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
