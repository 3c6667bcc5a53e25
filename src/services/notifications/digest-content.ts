/**
 * What a project's weekly digest says (docs/notifications.md#the-weekly-digest), read from what
 * run processing keeps, never from runs or cases: the daily rollups for the trend (runs, pass
 * rate, flaky tests, time lost to flakiness: docs/flakiness-cost.md), the health transitions for
 * the tests that turned flaky or broken, the tests' quarantines, and the tests' daily costs.
 *
 * The week is the seven UTC days before the UTC day of the digest (the days the rollups and every
 * chart of the service count in), compared with the seven before them; quarantines are those that
 * end within the seven days after the digest.
 */
import { and, asc, between, desc, eq, gt, gte, inArray, isNotNull, lt, lte, sql } from "drizzle-orm";
import { projectDailyRollups, testDailyCosts, testHealthTransitions, tests } from "../../db/schema";
import type { Database } from "../../db/types";
import type { DigestPayload, DigestTest } from "../../notifications/digest-messages";
import { ownerMatches } from "../../notifications/channel-routing";
import { utcDay } from "../shared/daily-rollups";

const DAY_MS = 86_400_000;
/** Tests kept per list: the messages name five and count the rest; an owner's filter picks among these. */
const LIST_LIMIT = 20;

export type DigestWindow = { from: Date; to: Date; previousFrom: Date };

/** The week a digest made at `now` covers: the seven UTC days before today (UTC), and the seven before those. */
export function digestWindow(now: Date): DigestWindow {
  const to = new Date(Date.parse(`${utcDay(now)}T00:00:00Z`));
  return { from: new Date(to.getTime() - 7 * DAY_MS), to, previousFrom: new Date(to.getTime() - 14 * DAY_MS) };
}

type Project = { id: string; name: string };

const lastDay = (end: Date) => utcDay(new Date(end.getTime() - DAY_MS));

/** The trend from the rollups of the fourteen days (and the flaky count each week ended with). */
async function trendOf(db: Database, projectId: string, window: DigestWindow): Promise<DigestPayload["trend"]> {
  const r = projectDailyRollups;
  const rows = await db
    .select({
      day: r.day,
      runs: r.runsCount,
      passed: r.passedRunsCount,
      lost: sql<string>`${r.retryMs} + ${r.flakyFailuresMs} + ${r.quarantinedFailuresMs} + ${r.rerunMs}`,
    })
    .from(r)
    .where(and(eq(r.projectId, projectId), between(r.day, utcDay(window.previousFrom), lastDay(window.to))));
  const sum = (from: Date, to: Date) => {
    const inWeek = rows.filter((row) => row.day >= utcDay(from) && row.day <= lastDay(to));
    const runs = inWeek.reduce((total, row) => total + row.runs, 0);
    const passed = inWeek.reduce((total, row) => total + row.passed, 0);
    return { runs, rate: runs === 0 ? null : passed / runs, lost: inWeek.reduce((total, row) => total + Number(row.lost), 0) };
  };
  const current = sum(window.from, window.to);
  const previous = sum(window.previousFrom, window.from);
  return {
    runs: { this_week: current.runs, previous_week: previous.runs },
    pass_rate: { this_week: current.rate, previous_week: previous.rate },
    flaky_tests: {
      this_week: await flakyAt(db, projectId, lastDay(window.to)),
      previous_week: await flakyAt(db, projectId, lastDay(window.from)),
    },
    time_lost_ms: { this_week: current.lost, previous_week: previous.lost },
  };
}

/** The project's flaky tests at the end of a day: the latest count kept on or before it (none: 0). */
async function flakyAt(db: Database, projectId: string, day: string): Promise<number> {
  const r = projectDailyRollups;
  const [row] = await db
    .select({ count: r.flakyTestsCount })
    .from(r)
    .where(and(eq(r.projectId, projectId), lte(r.day, day), isNotNull(r.flakyTestsCount)))
    .orderBy(desc(r.day))
    .limit(1);
  return row?.count ?? 0;
}

const testColumns = { id: tests.id, name: tests.name, classname: tests.classname, owners: tests.owners };

function digestTest(
  webAppUrl: string,
  projectId: string,
  row: { id: string; name: string; classname: string | null; owners: string[] },
): DigestTest {
  return { ...row, url: `${webAppUrl.replace(/\/+$/, "")}/projects/${projectId}/tests/${row.id}` };
}

/** Tests that turned `health` within the week and are so still, first turned first. */
async function turned(db: Database, projectId: string, health: "flaky" | "broken", window: DigestWindow) {
  const h = testHealthTransitions;
  return db
    .selectDistinctOn([tests.id], { ...testColumns, at: h.createdAt })
    .from(h)
    .innerJoin(tests, eq(tests.id, h.testId))
    .where(
      and(
        eq(tests.projectId, projectId),
        eq(tests.health, health),
        eq(h.toHealth, health),
        gte(h.createdAt, window.from),
        lt(h.createdAt, window.to),
      ),
    )
    .orderBy(tests.id, desc(h.createdAt))
    .then((rows) => rows.sort((a, b) => a.at.getTime() - b.at.getTime()).slice(0, LIST_LIMIT));
}

/** The project's digest at `now`, for every test (a channel's owner filter cuts it with `forOwner`). */
export async function projectDigest(db: Database, webAppUrl: string, project: Project, now: Date): Promise<DigestPayload> {
  const window = digestWindow(now);
  const trend = await trendOf(db, project.id, window);
  const quarantines = await db
    .select({ ...testColumns, expiresAt: tests.quarantineExpiresAt, reason: tests.quarantineReason })
    .from(tests)
    .where(
      and(
        eq(tests.projectId, project.id),
        gt(tests.quarantineExpiresAt, now),
        lte(tests.quarantineExpiresAt, new Date(now.getTime() + 7 * DAY_MS)),
      ),
    )
    .orderBy(asc(tests.quarantineExpiresAt), asc(tests.id))
    .limit(LIST_LIMIT);
  const costs = await costlyTests(db, project.id, window);
  const test = (row: Parameters<typeof digestTest>[2]) => digestTest(webAppUrl, project.id, row);
  const base = webAppUrl.replace(/\/+$/, "");
  return {
    type: "digest.weekly",
    occurred_at: now.toISOString(),
    project_id: project.id,
    project: { id: project.id, name: project.name, url: `${base}/projects/${project.id}` },
    week: { from: window.from.toISOString(), to: window.to.toISOString() },
    owner_filter: null,
    trend,
    new_flaky_tests: (await turned(db, project.id, "flaky", window)).map(test),
    new_broken_tests: (await turned(db, project.id, "broken", window)).map(test),
    quarantines_expiring: quarantines.map(({ expiresAt, reason, ...row }) => ({
      ...test(row),
      expires_at: expiresAt!.toISOString(),
      reason,
    })),
    costly_tests: costs.map(({ cost, ...row }) => ({
      ...test(row),
      cost_ms: cost,
      share: trend.time_lost_ms.this_week > 0 ? Math.round((cost / trend.time_lost_ms.this_week) * 1000) / 1000 : 0,
    })),
  };
}

/** The week's most costly tests (test_daily_costs), most costly first. */
async function costlyTests(db: Database, projectId: string, window: DigestWindow) {
  const c = testDailyCosts;
  const cost = sql<string>`sum(${c.retryMs} + ${c.flakyFailuresMs} + ${c.quarantinedFailuresMs})`;
  const top = await db
    .select({ testId: c.testId, cost })
    .from(c)
    .where(and(eq(c.projectId, projectId), between(c.day, utcDay(window.from), lastDay(window.to))))
    .groupBy(c.testId)
    .orderBy(desc(cost), asc(c.testId))
    .limit(LIST_LIMIT);
  if (top.length === 0) return [];
  const rows = await db
    .select(testColumns)
    .from(tests)
    .where(
      inArray(
        tests.id,
        top.map((row) => row.testId),
      ),
    );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return top.flatMap(({ testId, cost: total }) => {
    const row = byId.get(testId);
    return row && Number(total) > 0 ? [{ ...row, cost: Number(total) }] : [];
  });
}

/** The digest as a channel with an owner filter gets it: the lists cut to the owner's tests (the trend stays the project's). */
export function forOwner(digest: DigestPayload, owner: string | null): DigestPayload {
  if (owner === null) return digest;
  const owned = <T extends DigestTest>(list: T[]) => list.filter((test) => ownerMatches(owner, test.owners));
  return {
    ...digest,
    owner_filter: owner,
    new_flaky_tests: owned(digest.new_flaky_tests),
    new_broken_tests: owned(digest.new_broken_tests),
    quarantines_expiring: owned(digest.quarantines_expiring),
    costly_tests: owned(digest.costly_tests),
  };
}

/** A project with nothing to say: no run in either week and no test in any list (its digest is not sent). */
export function isQuiet(digest: DigestPayload): boolean {
  const { trend } = digest;
  return (
    trend.runs.this_week + trend.runs.previous_week === 0 &&
    digest.new_flaky_tests.length + digest.new_broken_tests.length + digest.quarantines_expiring.length + digest.costly_tests.length === 0
  );
}
