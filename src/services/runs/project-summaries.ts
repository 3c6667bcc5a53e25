/**
 * What the web app's home page lists: the organization's projects with the figures run
 * processing keeps on each project row (latest result, last run, tests, flaky and broken counts)
 * and the number of open alerts. Two statements, whatever the number of projects.
 */
import { and, asc, count, eq, exists, gt, inArray, isNull, lte, or, sql } from "drizzle-orm";
import { alertEvents, alerts, projects } from "../../db/schema";
import type { OrgScope } from "../shared/context";

/** An alert is open while it is checking, not snoozed, and has tripped within this many days. */
export const OPEN_ALERT_DAYS = 7;
/** The home page lists at most this many projects (by name). */
const PROJECT_SUMMARIES_LIMIT = 500;

export type ProjectSummary = {
  id: string;
  name: string;
  description: string | null;
  latestResult: (typeof projects.$inferSelect)["latestResult"];
  lastTestRunAt: Date | null;
  testRunsCount: number;
  testsCount: number;
  flakyTestsCount: number;
  brokenTestsCount: number;
  openAlertsCount: number;
};

export async function listProjectSummaries(scope: Pick<OrgScope, "db" | "clock" | "organizationId">): Promise<ProjectSummary[]> {
  const rows = await scope.db
    .select({
      id: projects.id,
      name: projects.name,
      description: projects.description,
      latestResult: projects.latestResult,
      lastTestRunAt: projects.lastTestRunAt,
      testRunsCount: projects.testRunsCount,
      testsCount: projects.testsCount,
      flakyTestsCount: projects.flakyTestsCount,
      brokenTestsCount: projects.brokenTestsCount,
    })
    .from(projects)
    .where(eq(projects.organizationId, scope.organizationId))
    .orderBy(asc(projects.name), asc(projects.id))
    .limit(PROJECT_SUMMARIES_LIMIT);
  if (rows.length === 0) return [];
  const now = scope.clock.now();
  const since = new Date(now.getTime() - OPEN_ALERT_DAYS * 86_400_000);
  const open = await scope.db
    .select({ projectId: alerts.projectId, open: count() })
    .from(alerts)
    .where(
      and(
        eq(alerts.organizationId, scope.organizationId),
        inArray(
          alerts.projectId,
          rows.map((row) => row.id),
        ),
        eq(alerts.active, true),
        or(isNull(alerts.snoozedUntil), lte(alerts.snoozedUntil, now)),
        exists(
          scope.db
            .select({ one: sql`1` })
            .from(alertEvents)
            .where(and(eq(alertEvents.alertId, alerts.id), gt(alertEvents.triggeredAt, since))),
        ),
      ),
    )
    .groupBy(alerts.projectId);
  const openByProject = new Map(open.map((row) => [row.projectId, row.open]));
  return rows.map((row) => ({ ...row, openAlertsCount: openByProject.get(row.id) ?? 0 }));
}
