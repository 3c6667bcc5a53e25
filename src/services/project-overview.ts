/**
 * What the project overview shows (docs/project-pages.md): headline figures over the last 30 UTC
 * days and the 30 before, daily series over the last 30, the open alerts and the latest runs.
 * Three statements, run together, whatever the project's history: the 60 days of rollups
 * (daily-rollups.ts), the project's alerts that are open, and its newest runs (keyset index).
 */
import { and, desc, eq, gt, gte, isNull, lte, or, sql } from "drizzle-orm";
import { alertEvents, alerts, projectDailyRollups, testRuns } from "../db/schema";
import type { AlertType, RunResult, RunStatus } from "../lib/vocabulary";
import type { ServiceDeps } from "./context";
import { type DurationHistogram, histogramPercentile, mergeHistograms, utcDay } from "./daily-rollups";
import { OPEN_ALERT_DAYS } from "./project-summaries";

/** Days in a window: the headline figures compare the last WINDOW_DAYS (today included) with the WINDOW_DAYS before. */
export const WINDOW_DAYS = 30;
/** Runs listed under "Latest runs". */
export const LATEST_RUNS = 10;

export type DayFigures = {
  day: string;
  runs: number;
  passed: number;
  failed: number;
  errored: number;
  durationP50Ms: number | null;
  durationP95Ms: number | null;
  /** The project's flaky tests at the end of the day (the latest count known by then); null before any. */
  flakyTests: number | null;
};

export type Headline = {
  runs: number;
  /** Passed runs over processed runs; null without runs. */
  passRate: number | null;
  /** Flaky tests at the window's end: now for the current window, at the end of the day 30 days ago for the previous. */
  flakyTests: number | null;
  medianDurationMs: number | null;
  /** Skipped cases over all cases of the window's runs; null without cases. */
  skippedShare: number | null;
};

export type OverviewAlert = { id: string; alertType: AlertType; eventsCount: number; lastTriggeredAt: Date | null };

export type OverviewRun = {
  number: number;
  status: RunStatus;
  result: RunResult | null;
  branch: string | null;
  commitSha: string | null;
  createdAt: Date;
  durationMs: number | null;
  testsCount: number;
  failedCount: number;
  erroredCount: number;
  skippedCount: number;
};

export type ProjectOverview = { days: DayFigures[]; current: Headline; previous: Headline; openAlerts: OverviewAlert[]; latestRuns: OverviewRun[] };

type RollupRow = typeof projectDailyRollups.$inferSelect;

const addDays = (day: string, days: number) => utcDay(new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000));

function headline(rows: RollupRow[], flakyTests: number | null): Headline {
  let runs = 0;
  let passed = 0;
  let cases = 0;
  let skipped = 0;
  for (const row of rows) {
    runs += row.runsCount;
    passed += row.passedRunsCount;
    cases += row.casesCount;
    skipped += row.skippedCasesCount;
  }
  return {
    runs,
    passRate: runs === 0 ? null : passed / runs,
    flakyTests,
    medianDurationMs: histogramPercentile(mergeHistograms(rows.map((row) => row.durationHistogram as DurationHistogram)), 0.5),
    skippedShare: cases === 0 ? null : skipped / cases,
  };
}

/** The overview of a project the caller may see (its row found through the person's membership). */
export async function projectOverview(
  deps: Pick<ServiceDeps, "db" | "clock">,
  project: { id: string; flakyTestsCount: number },
): Promise<ProjectOverview> {
  const now = deps.clock.now();
  const today = utcDay(now);
  const firstDay = addDays(today, -(WINDOW_DAYS - 1));
  const previousFirstDay = addDays(firstDay, -WINDOW_DAYS);
  const openSince = new Date(now.getTime() - OPEN_ALERT_DAYS * 86_400_000);

  const [rollups, openAlerts, latestRuns] = await Promise.all([
    deps.db
      .select()
      .from(projectDailyRollups)
      .where(and(eq(projectDailyRollups.projectId, project.id), gte(projectDailyRollups.day, previousFirstDay), lte(projectDailyRollups.day, today)))
      .orderBy(projectDailyRollups.day),
    // Open as on the home page: checking, not snoozed, tripped within OPEN_ALERT_DAYS days.
    deps.db
      .select({
        id: alerts.id,
        alertType: alerts.alertType,
        eventsCount: alerts.eventsCount,
        // Spelled out: inside a select list Drizzle writes columns unqualified, and "id" would be the event's.
        lastTriggeredAt: sql<Date | null>`(select max(e.triggered_at) from alert_events e where e.alert_id = "alerts"."id")`.mapWith(
          (value: string | Date | null) => (value === null ? null : new Date(value)),
        ),
      })
      .from(alerts)
      .where(
        and(
          eq(alerts.projectId, project.id),
          eq(alerts.active, true),
          or(isNull(alerts.snoozedUntil), lte(alerts.snoozedUntil, now)),
          sql`exists (select 1 from ${alertEvents} where ${alertEvents.alertId} = ${alerts.id} and ${gt(alertEvents.triggeredAt, openSince)})`,
        ),
      )
      .orderBy(alerts.alertType),
    deps.db
      .select({
        number: testRuns.number,
        status: testRuns.status,
        result: testRuns.result,
        branch: testRuns.branch,
        commitSha: testRuns.commitSha,
        createdAt: testRuns.createdAt,
        durationMs: testRuns.durationMs,
        testsCount: testRuns.testsCount,
        failedCount: testRuns.failedCount,
        erroredCount: testRuns.erroredCount,
        skippedCount: testRuns.skippedCount,
      })
      .from(testRuns)
      .where(eq(testRuns.projectId, project.id))
      .orderBy(desc(testRuns.createdAt), desc(testRuns.id))
      .limit(LATEST_RUNS),
  ]);

  const previousRows = rollups.filter((row) => row.day < firstDay);
  const currentRows = rollups.filter((row) => row.day >= firstDay);
  const flakyBefore = previousRows.reduce<number | null>((last, row) => row.flakyTestsCount ?? last, null);

  const byDay = new Map(currentRows.map((row) => [row.day, row]));
  const days: DayFigures[] = [];
  let flaky = flakyBefore;
  for (let i = 0; i < WINDOW_DAYS; i++) {
    const day = addDays(firstDay, i);
    const row = byDay.get(day);
    flaky = row?.flakyTestsCount ?? flaky;
    const histogram = (row?.durationHistogram ?? {}) as DurationHistogram;
    days.push({
      day,
      runs: row?.runsCount ?? 0,
      passed: row?.passedRunsCount ?? 0,
      failed: row?.failedRunsCount ?? 0,
      errored: row?.erroredRunsCount ?? 0,
      durationP50Ms: histogramPercentile(histogram, 0.5),
      durationP95Ms: histogramPercentile(histogram, 0.95),
      flakyTests: flaky,
    });
  }
  return {
    days,
    current: headline(currentRows, project.flakyTestsCount),
    previous: headline(previousRows, flakyBefore),
    openAlerts,
    latestRuns,
  };
}
