/**
 * A test's daily history for its page (docs/retention.md): executions, failures, passes on retry
 * and duration p50 per UTC day over the last HISTORY_DAYS (at most SUMMARY_RETENTION_DAYS), read
 * from the per-test rollups (src/services/shared/test-rollups.ts), which outlive the cases: the
 * days before the project's retention of cases come from there and nowhere else. Two statements
 * (the project's retention, then the rollups' periods and unpacked days) whatever the history.
 */
import { and, eq } from "drizzle-orm";
import { projects } from "../../db/schema";
import { DEFAULT_RETENTION, keptFrom } from "../../lib/retention";
import type { OrgScope } from "../shared/context";
import { utcDay } from "../shared/daily-rollups";
import { type TestDay, readTestDays } from "../shared/test-rollups";

/** Days the page's chart covers, fewer when SUMMARY_RETENTION_DAYS keeps fewer. */
export const HISTORY_DAYS = 180;
const DAY_MS = 86_400_000;

export type TestDailyHistory = {
  /** First and last day shown (UTC), today included. */
  from: string;
  to: string;
  /** Every day of the range, oldest first; a day without executions has zeros and a null p50. */
  days: TestDay[];
  /** The project's retention of cases, in days, and the first day whose cases are kept. */
  retentionDays: number;
  casesKeptFrom: string;
};

/** The history of a test the caller already found in the organization (`projectId` is its project). */
export async function testDailyHistory(scope: OrgScope, test: { id: string; projectId: string }): Promise<TestDailyHistory> {
  const retention = scope.retention ?? DEFAULT_RETENTION;
  const now = scope.clock.now();
  const [project] = await scope.db
    .select({ retentionDays: projects.retentionDays })
    .from(projects)
    .where(and(eq(projects.id, test.projectId), eq(projects.organizationId, scope.organizationId)));
  const span = Math.min(HISTORY_DAYS, retention.summaryDays);
  const first = new Date(keptFrom(now, span - 1));
  const known = new Map((await readTestDays(scope.db, test.id, first, now)).map((day) => [day.day, day]));
  const days: TestDay[] = [];
  for (let at = first.getTime(); at <= now.getTime(); at += DAY_MS) {
    const day = utcDay(new Date(at));
    days.push(known.get(day) ?? { day, executions: 0, failures: 0, passedOnRetry: 0, failedAttemptsMs: 0, durationP50Ms: null });
  }
  const retentionDays = project?.retentionDays ?? retention.days;
  return { from: utcDay(first), to: utcDay(now), days, retentionDays, casesKeptFrom: utcDay(keptFrom(now, retentionDays)) };
}
