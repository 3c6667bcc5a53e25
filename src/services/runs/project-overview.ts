/**
 * What the project overview shows (docs/project-pages.md): headline figures over the last 30 UTC
 * days and the 30 before, daily series over the last 30, the open alerts and the latest runs.
 * One statement whatever the project's history: the 60 days of rollups (daily-rollups.ts), the
 * project's alerts that are open, and its newest runs (keyset index), as three JSON arrays.
 */
import { sql } from "drizzle-orm";
import { alertEvents, alerts, projectDailyRollups, testRuns } from "../../db/schema";
import type { AlertType, RunResult, RunStatus } from "../../lib/vocabulary";
import { rowsOf } from "../../db/rows";
import type { ServiceDeps } from "../shared/context";
import { type DurationHistogram, histogramPercentile, mergeHistograms, utcDay } from "../shared/daily-rollups";
import { OPEN_ALERT_DAYS } from "./project-summaries";
import { topCostTestsSql } from "./flakiness-cost-reads";

/** The most costly tests of the window the overview lists (docs/flakiness-cost.md). */
const COST_TESTS = 5;

/** Days in a window: the headline figures compare the last WINDOW_DAYS (today included) with the WINDOW_DAYS before. */
export const WINDOW_DAYS = 30;
/** Runs listed under "Latest runs". */
const LATEST_RUNS = 10;

type DayFigures = {
  day: string;
  runs: number;
  passed: number;
  failed: number;
  errored: number;
  durationP50Ms: number | null;
  durationP95Ms: number | null;
  /** The project's flaky tests at the end of the day (the latest count known by then); null before any. */
  flakyTests: number | null;
  /** The cost of flakiness of the day's runs, in ms of test time, per component (docs/flakiness-cost.md). */
  cost: DayCost;
};

type DayCost = { retryMs: number; flakyFailuresMs: number; quarantinedFailuresMs: number; rerunMs: number; reruns: number };

/** A test among the window's most costly, with its share of the window's cost. */
type CostTest = { id: string; name: string; classname: string | null; costMs: number; share: number | null };

export type Headline = {
  runs: number;
  /** Passed runs over processed runs; null without runs. */
  passRate: number | null;
  /** Flaky tests at the window's end: now for the current window, at the end of the day 30 days ago for the previous. */
  flakyTests: number | null;
  medianDurationMs: number | null;
  /** Skipped cases over all cases of the window's runs; null without cases. */
  skippedShare: number | null;
  /** The cost of flakiness of the window's runs, in ms of test time (all components). */
  flakinessCostMs: number;
};

type OverviewAlert = { id: string; alertType: AlertType; eventsCount: number; lastTriggeredAt: Date | null };

export type OverviewRun = {
  number: number;
  status: RunStatus;
  result: RunResult | null;
  failureReason: string | null;
  branch: string | null;
  /** "" for a run without one (docs/tests.md, "Variants"). */
  variant: string;
  commitSha: string | null;
  createdAt: Date;
  durationMs: number | null;
  testsCount: number;
  failedCount: number;
  erroredCount: number;
  skippedCount: number;
};

export type ProjectOverview = {
  days: DayFigures[];
  current: Headline;
  previous: Headline;
  openAlerts: OverviewAlert[];
  latestRuns: OverviewRun[];
  /** The current window's most costly tests, most costly first. */
  costTests: CostTest[];
};

type RollupRow = {
  day: string;
  runs: number;
  passed: number;
  failed: number;
  errored: number;
  histogram: DurationHistogram;
  cases: number;
  skipped: number;
  flaky: number | null;
  cost: DayCost;
};
type CostJson = Record<"retry" | "flaky_ms" | "quarantined" | "rerun", number | string> & { reruns: number };
type RollupJson = Omit<RollupRow, "cases" | "skipped" | "cost"> & { cases: number | string; skipped: number | string } & CostJson;
type CostTestJson = { test_id: string; name: string | null; classname: string | null } & Record<
  "retry" | "flaky" | "quarantined",
  number | string
>;
type AlertJson = { id: string; alert_type: AlertType; events_count: number; last_triggered_at: string | null };
/** A run's fields as the API's run object names them (the overview's JSON, the runs page's input). */
export type RunJson = {
  number: number;
  status: RunStatus;
  result: RunResult | null;
  failure_reason: string | null;
  branch: string | null;
  variant: string;
  commit_sha: string | null;
  created_at: string;
  duration_ms: number | null;
  tests_count: number;
  failed_count: number;
  errored_count: number;
  skipped_count: number;
};

/** bigint sums may come back as text from some drivers' JSON; they are far below 2^53. */
const rollupOf = (json: RollupJson): RollupRow => ({
  ...json,
  cases: Number(json.cases),
  skipped: Number(json.skipped),
  cost: {
    retryMs: Number(json.retry),
    flakyFailuresMs: Number(json.flaky_ms),
    quarantinedFailuresMs: Number(json.quarantined),
    rerunMs: Number(json.rerun),
    reruns: json.reruns,
  },
});

const NO_COST: DayCost = { retryMs: 0, flakyFailuresMs: 0, quarantinedFailuresMs: 0, rerunMs: 0, reruns: 0 };
const costTotal = (cost: DayCost) => cost.retryMs + cost.flakyFailuresMs + cost.quarantinedFailuresMs + cost.rerunMs;

const addDays = (day: string, days: number) => utcDay(new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000));

function headline(rows: RollupRow[], flakyTests: number | null): Headline {
  let runs = 0;
  let passed = 0;
  let cases = 0;
  let skipped = 0;
  let costMs = 0;
  for (const row of rows) {
    runs += row.runs;
    passed += row.passed;
    cases += row.cases;
    skipped += row.skipped;
    costMs += costTotal(row.cost);
  }
  return {
    runs,
    passRate: runs === 0 ? null : passed / runs,
    flakyTests,
    medianDurationMs: histogramPercentile(mergeHistograms(rows.map((row) => row.histogram)), 0.5),
    skippedShare: cases === 0 ? null : skipped / cases,
    flakinessCostMs: costMs,
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

  // One statement (one round trip on the Worker): the three parts as JSON arrays.
  const [row] = await rowsOf<{ rollups: RollupJson[]; alerts: AlertJson[]; runs: RunJson[]; cost_tests: CostTestJson[] }>(
    deps.db.execute(sql`
      select
        (select coalesce(json_agg(json_build_object(
            'day', r.day, 'runs', r.runs_count, 'passed', r.passed_runs_count, 'failed', r.failed_runs_count, 'errored', r.errored_runs_count,
            'histogram', r.duration_histogram, 'cases', r.cases_count, 'skipped', r.skipped_cases_count, 'flaky', r.flaky_tests_count,
            'retry', r.retry_ms, 'flaky_ms', r.flaky_failures_ms, 'quarantined', r.quarantined_failures_ms, 'rerun', r.rerun_ms,
            'reruns', r.reruns_count) order by r.day), '[]'::json)
          from ${projectDailyRollups} r
          where r.project_id = ${project.id}::uuid and r.day between ${previousFirstDay}::date and ${today}::date) as rollups,
        -- Open as on the home page: checking, not snoozed, tripped within OPEN_ALERT_DAYS days.
        (select coalesce(json_agg(json_build_object(
            'id', a.id, 'alert_type', a.alert_type, 'events_count', a.events_count,
            'last_triggered_at', (select max(e.triggered_at) from ${alertEvents} e where e.alert_id = a.id)) order by a.alert_type), '[]'::json)
          from ${alerts} a
          where a.project_id = ${project.id}::uuid and a.active and (a.snoozed_until is null or a.snoozed_until <= ${now.toISOString()}::timestamptz)
            and exists (select 1 from ${alertEvents} e where e.alert_id = a.id and e.triggered_at > ${openSince.toISOString()}::timestamptz)) as alerts,
        (select coalesce(json_agg(t order by t.created_at desc, t.id desc), '[]'::json)
          from (select id, number, status, result, failure_reason, branch, variant, commit_sha, created_at, duration_ms, tests_count, failed_count, errored_count, skipped_count
                from ${testRuns} where project_id = ${project.id}::uuid order by created_at desc, id desc limit ${LATEST_RUNS}) t) as runs,
        ${topCostTestsSql(sql`${project.id}::uuid`, { from: firstDay, to: today }, COST_TESTS)} as cost_tests`),
  );
  const rollups = row!.rollups.map(rollupOf);
  const openAlerts: OverviewAlert[] = row!.alerts.map((a) => ({
    id: a.id,
    alertType: a.alert_type,
    eventsCount: a.events_count,
    lastTriggeredAt: a.last_triggered_at === null ? null : new Date(a.last_triggered_at),
  }));
  const latestRuns: OverviewRun[] = row!.runs.map((r) => ({
    number: r.number,
    status: r.status,
    result: r.result,
    failureReason: r.failure_reason,
    branch: r.branch,
    variant: r.variant,
    commitSha: r.commit_sha,
    createdAt: new Date(r.created_at),
    durationMs: r.duration_ms,
    testsCount: r.tests_count,
    failedCount: r.failed_count,
    erroredCount: r.errored_count,
    skippedCount: r.skipped_count,
  }));

  const previousRows = rollups.filter((row) => row.day < firstDay);
  const currentRows = rollups.filter((row) => row.day >= firstDay);
  const flakyBefore = previousRows.reduce<number | null>((last, row) => row.flaky ?? last, null);

  const byDay = new Map(currentRows.map((row) => [row.day, row]));
  const days: DayFigures[] = [];
  let flaky = flakyBefore;
  for (let i = 0; i < WINDOW_DAYS; i++) {
    const day = addDays(firstDay, i);
    const row = byDay.get(day);
    flaky = row?.flaky ?? flaky;
    const histogram = row?.histogram ?? {};
    days.push({
      day,
      runs: row?.runs ?? 0,
      passed: row?.passed ?? 0,
      failed: row?.failed ?? 0,
      errored: row?.errored ?? 0,
      durationP50Ms: histogramPercentile(histogram, 0.5),
      durationP95Ms: histogramPercentile(histogram, 0.95),
      flakyTests: flaky,
      cost: row?.cost ?? NO_COST,
    });
  }
  const current = headline(currentRows, project.flakyTestsCount);
  const costTests = row!.cost_tests.map((test) => {
    const costMs = Number(test.retry) + Number(test.flaky) + Number(test.quarantined);
    const share = current.flakinessCostMs > 0 ? costMs / current.flakinessCostMs : null;
    return { id: test.test_id, name: test.name ?? "", classname: test.classname, costMs, share };
  });
  return { days, current, previous: headline(previousRows, flakyBefore), openAlerts, latestRuns, costTests };
}
