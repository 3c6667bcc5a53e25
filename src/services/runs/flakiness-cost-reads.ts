/**
 * Reading the cost of flakiness (docs/flakiness-cost.md) through /api/v1, the MCP tool and the
 * pages: what run processing kept per project and day (project_daily_rollups) and per test and day
 * (test_daily_costs), never runs or cases. A project's window is two statements (the organization's
 * project, then its days and top tests as JSON), a test's too (the test, then its days and its
 * project's total); the `…Of` functions are the second statement for a project or test the caller
 * already found in the organization (the pages).
 */
import { type SQL, sql } from "drizzle-orm";
import { projectDailyRollups, projects, testDailyCosts, tests } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import { ApiError } from "../../lib/errors";
import type { OrgScope } from "../shared/context";
import { utcDay } from "../shared/daily-rollups";
import { findProjectRow } from "../tenancy/projects";
import { findTestRow } from "../tests/tests";

/** The window when the request names no bound: the last 30 UTC days, today included. */
const COST_WINDOW_DAYS = 30;
/** The widest window one request may ask for. */
const MAX_COST_WINDOW_DAYS = 366;
/** Tests listed by cost, most costly first. */
const TOP_COST_TESTS = 10;

const DAY_MS = 86_400_000;

/** A window of UTC days, both bounds included (`YYYY-MM-DD`). */
export type CostWindow = { from: string; to: string };

export const addDays = (day: string, days: number) => utcDay(new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS));
const daysIn = (window: CostWindow) => (Date.parse(window.to) - Date.parse(window.from)) / DAY_MS + 1;

/**
 * The window of a request (dates already checked for their format): `to` defaults to today (UTC),
 * `from` to 29 days before `to`. `from` after `to`, or more than MAX_COST_WINDOW_DAYS days, is a
 * 400 `invalid_request` with one detail.
 */
export function costWindow(query: { from?: string | null; to?: string | null }, now: Date): CostWindow {
  const to = query.to ?? utcDay(now);
  const from = query.from ?? addDays(to, -(COST_WINDOW_DAYS - 1));
  const window = { from, to };
  let detail: { field: string; message: string } | null = null;
  if (from > to) detail = { field: "from", message: `must be on or before to (${to})` };
  else if (daysIn(window) > MAX_COST_WINDOW_DAYS)
    detail = {
      field: "to",
      message: `must be at most ${MAX_COST_WINDOW_DAYS - 1} days after from (${MAX_COST_WINDOW_DAYS} days, both included)`,
    };
  if (detail) throw new ApiError("invalid_request", `Invalid query parameter: ${detail.field} ${detail.message}.`, { details: [detail] });
  return window;
}

/** Every day of the window, in order. */
function windowDays(window: CostWindow): string[] {
  return Array.from({ length: daysIn(window) }, (_, i) => addDays(window.from, i));
}

/** JSON of a raw statement: parsed already, or text (bigint sums may be text too: Number). */
const parsed = <T>(value: unknown): T => (typeof value === "string" ? JSON.parse(value) : value) as T;

type TestCostJson = { retry: number | string; flaky: number | string; quarantined: number | string };
type DayCostJson = TestCostJson & { day: string; rerun: number | string; reruns: number; runs: number };
type TopTestJson = TestCostJson & { test_id: string; name: string | null; classname: string | null; file: string | null };

/** A test's figures: its components and their sum (re-runs are the project's, not a test's). */
export type TestCostFigures = { total_ms: number; retry_ms: number; flaky_failures_ms: number; quarantined_failures_ms: number };
/** A project's figures over a day or a window. */
type CostFigures = TestCostFigures & { rerun_ms: number; reruns_count: number; runs_count: number };

function testFigures(json: TestCostJson | undefined): TestCostFigures {
  const retry = Number(json?.retry ?? 0);
  const flaky = Number(json?.flaky ?? 0);
  const quarantined = Number(json?.quarantined ?? 0);
  return { total_ms: retry + flaky + quarantined, retry_ms: retry, flaky_failures_ms: flaky, quarantined_failures_ms: quarantined };
}

function dayFigures(json: DayCostJson | undefined): CostFigures {
  const test = testFigures(json);
  const rerun = Number(json?.rerun ?? 0);
  return { ...test, total_ms: test.total_ms + rerun, rerun_ms: rerun, reruns_count: json?.reruns ?? 0, runs_count: json?.runs ?? 0 };
}

function sumFigures(days: readonly CostFigures[]): CostFigures {
  const total: CostFigures = {
    total_ms: 0,
    retry_ms: 0,
    flaky_failures_ms: 0,
    quarantined_failures_ms: 0,
    rerun_ms: 0,
    reruns_count: 0,
    runs_count: 0,
  };
  for (const day of days) for (const key of Object.keys(total) as (keyof CostFigures)[]) total[key] += day[key];
  return total;
}

const between = (column: SQL, window: CostWindow) => sql`${column} between ${window.from}::date and ${window.to}::date`;
/** The project, held to the organization in every statement. */
const inOrganization = (scope: OrgScope, projectId: string) =>
  sql`(select p.id from ${projects} p where p.id = ${projectId}::uuid and p.organization_id = ${scope.organizationId}::uuid)`;

/** The project's rollups of the window's days, as a JSON array (days without runs have no row). */
const costDaysSql = (projectIdSql: SQL, window: CostWindow): SQL => sql`
  (select coalesce(json_agg(json_build_object('day', r.day, 'runs', r.runs_count, 'retry', r.retry_ms, 'flaky', r.flaky_failures_ms,
      'quarantined', r.quarantined_failures_ms, 'rerun', r.rerun_ms, 'reruns', r.reruns_count) order by r.day), '[]'::json)
   from ${projectDailyRollups} r where r.project_id = ${projectIdSql} and ${between(sql`r.day`, window)})`;

/** The project's `limit` most costly tests over the window, as a JSON array (ties by test id). */
export const topCostTestsSql = (projectIdSql: SQL, window: CostWindow, limit: number): SQL => sql`
  (select coalesce(json_agg(json_build_object('test_id', k.test_id, 'name', t.name, 'classname', t.classname, 'file', t.file,
      'retry', k.retry, 'flaky', k.flaky, 'quarantined', k.quarantined) order by k.total desc, k.test_id), '[]'::json)
   from (select c.test_id, sum(c.retry_ms) as retry, sum(c.flaky_failures_ms) as flaky, sum(c.quarantined_failures_ms) as quarantined,
           sum(c.retry_ms + c.flaky_failures_ms + c.quarantined_failures_ms) as total
         from ${testDailyCosts} c where c.project_id = ${projectIdSql} and ${between(sql`c.day`, window)}
         group by c.test_id order by total desc, c.test_id limit ${limit}) k
   left join ${tests} t on t.id = k.test_id)`;

/** Every day of the window with its figures (zeros for a day without runs), from the rollups' JSON. */
function costDays(window: CostWindow, json: unknown): (CostFigures & { day: string })[] {
  const byDay = new Map(parsed<DayCostJson[]>(json).map((row) => [row.day, row]));
  return windowDays(window).map((day) => ({ day, ...dayFigures(byDay.get(day)) }));
}

const share = (part: number, whole: number) => (whole > 0 ? part / whole : null);
const testUrl = (scope: Pick<OrgScope, "webAppUrl">, projectId: string, testId: string) =>
  `${scope.webAppUrl.replace(/\/+$/, "")}/projects/${projectId}/tests/${testId}`;

/** The most costly tests from their JSON, each with its share of the project's total. */
function topCostTests(scope: Pick<OrgScope, "webAppUrl">, projectId: string, json: unknown, projectTotalMs: number) {
  return parsed<TopTestJson[]>(json).map((row) => {
    const figures = testFigures(row);
    return {
      test_id: row.test_id,
      name: row.name ?? "",
      classname: row.classname,
      file: row.file,
      ...figures,
      share: share(figures.total_ms, projectTotalMs),
      url: testUrl(scope, projectId, row.test_id),
    };
  });
}

/** GET /projects/:id/flakiness_cost: the organization's project, then its window in one statement. */
export async function getProjectFlakinessCost(scope: OrgScope, projectId: string, window: CostWindow) {
  const project = await findProjectRow(scope, projectId);
  return projectFlakinessCostOf(scope, project.id, window);
}

/** A found project's cost over the window: totals, every day, and its most costly tests. */
async function projectFlakinessCostOf(scope: OrgScope, projectId: string, window: CostWindow, topTests = TOP_COST_TESTS) {
  const project = inOrganization(scope, projectId);
  const [row] = await rowsOf<{ days: unknown; tests: unknown }>(
    scope.db.execute(sql`select ${costDaysSql(project, window)} as days, ${topCostTestsSql(project, window, topTests)} as tests`),
  );
  const days = costDays(window, row?.days ?? []);
  const totals = sumFigures(days);
  return {
    project_id: projectId,
    from: window.from,
    to: window.to,
    totals,
    days,
    top_tests: topCostTests(scope, projectId, row?.tests ?? [], totals.total_ms),
  };
}

export type ProjectFlakinessCost = Awaited<ReturnType<typeof projectFlakinessCostOf>>;

/** GET /tests/:id/flakiness_cost: the organization's test, then its window in one statement. */
export async function getTestFlakinessCost(scope: OrgScope, testId: string, window: CostWindow) {
  const { test } = await findTestRow(scope, testId);
  return testFlakinessCostOf(scope, { id: test.id, projectId: test.projectId }, window);
}

/** A found test's cost over the window, every day, and its share of its project's total. */
export async function testFlakinessCostOf(scope: OrgScope, test: { id: string; projectId: string }, window: CostWindow) {
  const project = inOrganization(scope, test.projectId);
  const [row] = await rowsOf<{ days: unknown; project_total: number | string | null }>(
    scope.db.execute(sql`select
      (select coalesce(json_agg(json_build_object('day', c.day, 'retry', c.retry_ms, 'flaky', c.flaky_failures_ms,
          'quarantined', c.quarantined_failures_ms) order by c.day), '[]'::json)
        from ${testDailyCosts} c where c.test_id = ${test.id}::uuid and c.project_id = ${project} and ${between(sql`c.day`, window)}) as days,
      (select sum(r.retry_ms + r.flaky_failures_ms + r.quarantined_failures_ms + r.rerun_ms)
        from ${projectDailyRollups} r where r.project_id = ${project} and ${between(sql`r.day`, window)}) as project_total`),
  );
  const byDay = new Map(parsed<(TestCostJson & { day: string })[]>(row?.days ?? []).map((day) => [day.day, day]));
  const days = windowDays(window).map((day) => ({ day, ...testFigures(byDay.get(day)) }));
  const totals = testFigures(undefined);
  for (const day of days) for (const key of Object.keys(totals) as (keyof TestCostFigures)[]) totals[key] += day[key];
  const projectTotal = Number(row?.project_total ?? 0);
  return {
    test_id: test.id,
    project_id: test.projectId,
    from: window.from,
    to: window.to,
    totals,
    project_total_ms: projectTotal,
    share: share(totals.total_ms, projectTotal),
    days,
  };
}

export type TestFlakinessCost = Awaited<ReturnType<typeof testFlakinessCostOf>>;
