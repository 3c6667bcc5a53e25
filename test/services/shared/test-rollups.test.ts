/**
 * Per-test rollups (src/services/shared/test-rollups.ts, drizzle/0044_retention.sql): read from the
 * cases until the sweep rolls the day up, then from test_rollups, equal to what the stored cases
 * say either way, day by day and test by test; the duration
 * sketch's p50 exact to its bucket while a day has at most four distinct buckets, and bounded
 * by its entries past that; counters that stop at their largest value.
 */
import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testCases, testRollupProgress, testRollups, testRunParts, testRuns } from "../../../src/db/schema";
import { rowsOf } from "../../../src/db/rows";
import { bucketValue, durationBucket, utcDay } from "../../../src/services/shared/daily-rollups";
import {
  PERIOD_DAYS,
  SLOT_BYTES,
  bytesOf,
  decodePeriod,
  periodOf,
  readTestDays,
  rollTestDays,
} from "../../../src/services/shared/test-rollups";
import { type Report, completeTestRun } from "../../../src/services/runs/test-runs";
import { mergeRetryPart, retryRows } from "../../../src/services/runs/retry-parts";
import { testDailyHistory } from "../../../src/services/tests/test-daily-history";
import type { OrgScope } from "../../../src/services/shared/context";
import type { CaseStatus } from "../../../src/lib/vocabulary";
import { createHarness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

const DAY = 86_400_000;

type Case = { name: string; status: CaseStatus; durationMs: number | null; failedAttempts?: number[] };

function report(cases: Case[]): Report {
  return {
    suites: [
      {
        name: "suite",
        cases: cases.map((c) => ({
          name: c.name,
          classname: "Cart",
          status: c.status,
          durationMs: c.durationMs,
          failureMessage: c.status === "failed" || c.status === "errored" ? "boom" : null,
          attempts: c.failedAttempts?.map((ms) => ({ status: "failed" as const, durationMs: ms, failureMessage: "flake" })),
        })),
      },
    ],
  };
}

/** The p50 of a day's durations as the sketch keeps it when it holds them all: the nearest-rank p50's bucket value. */
function bucketedP50(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return bucketValue(durationBucket(sorted[Math.ceil(sorted.length / 2) - 1]!));
}

/** Rolls up every day before `now`'s, in batches, as the sweep does (every file's projects: rolling changes no figure). */
async function packAll(now: number): Promise<void> {
  while ((await rollTestDays(h.db, new Date(now), 500)) > 0);
}

const progressOf = async (projectId: string) =>
  (await h.db.select().from(testRollupProgress).where(eq(testRollupProgress.projectId, projectId)))[0];

describe("read from the cases, then rolled up by the sweep", () => {
  it("each test's days equal a count over its stored cases (executions, failures, passes on retry, failed attempts' time, p50)", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    // Over a period's boundary: day 0 is the last day of a period.
    const boundary = Math.ceil(h.clock.now().getTime() / DAY / PERIOD_DAYS) * PERIOD_DAYS;
    const start = (boundary - 1) * DAY + 3_600_000;
    const plan: [number, Case[]][] = [
      [
        0,
        [
          { name: "a", status: "passed", durationMs: 120 },
          { name: "b", status: "failed", durationMs: 40 },
          { name: "c", status: "skipped", durationMs: null },
        ],
      ],
      [
        0,
        [
          { name: "a", status: "passed", durationMs: 130, failedAttempts: [200, 15] },
          { name: "b", status: "errored", durationMs: null },
        ],
      ],
      [
        0,
        [
          { name: "a", status: "failed", durationMs: 5_000 },
          { name: "a", status: "passed", durationMs: 118 },
        ],
      ],
      [
        1,
        [
          { name: "a", status: "passed", durationMs: 90 },
          { name: "b", status: "passed", durationMs: 41, failedAttempts: [39] },
        ],
      ],
      [
        3,
        [
          { name: "b", status: "skipped", durationMs: 1 },
          { name: "c", status: "passed", durationMs: 7 },
        ],
      ],
    ];
    for (const [dayOffset, cases] of plan) {
      h.clock.set(start + dayOffset * DAY);
      await h.newRun(project.id, { report: report(cases) });
    }
    // Pending and failed runs add nothing.
    await h.newRun(project.id, { outcome: "pending" });
    await h.newRun(project.id, { outcome: "failed" });

    const cases = await h.db
      .select({
        testId: testCases.testId,
        status: testCases.status,
        durationMs: testCases.durationMs,
        attempts: testCases.attempts,
        createdAt: testRuns.createdAt,
      })
      .from(testCases)
      .innerJoin(testRuns, eq(testRuns.id, testCases.testRunId))
      .where(eq(testRuns.projectId, project.id));
    const expected = new Map<
      string,
      Map<string, { executions: number; failures: number; passedOnRetry: number; failedAttemptsMs: number; durations: number[] }>
    >();
    for (const c of cases) {
      if (c.status === "skipped") continue;
      const days = expected.get(c.testId) ?? new Map();
      expected.set(c.testId, days);
      const day = days.get(utcDay(c.createdAt)) ?? { executions: 0, failures: 0, passedOnRetry: 0, failedAttemptsMs: 0, durations: [] };
      days.set(utcDay(c.createdAt), day);
      const failedAttempts = c.attempts.filter((a) => a.status === "failed" || a.status === "errored");
      day.executions++;
      if (c.status === "failed" || c.status === "errored") day.failures++;
      if (c.status === "passed" && failedAttempts.length > 0) day.passedOnRetry++;
      day.failedAttemptsMs += failedAttempts.reduce((sum, a) => sum + (a.duration_ms ?? 0), 0);
      if (c.durationMs !== null) day.durations.push(c.durationMs);
    }
    expect(expected.size).toBe(3);
    const expectDays = async () => {
      for (const [testId, days] of expected) {
        const read = await readTestDays(h.db, testId, new Date(start - DAY), new Date(start + 10 * DAY));
        expect(read).toEqual(
          [...days.entries()]
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([day, figures]) => ({
              day,
              executions: figures.executions,
              failures: figures.failures,
              passedOnRetry: figures.passedOnRetry,
              failedAttemptsMs: figures.failedAttemptsMs,
              durationP50Ms: bucketedP50(figures.durations),
            })),
        );
      }
    };
    // Before any sweep (from the cases, nothing in test_rollups), then rolled up (test_rollups): the same figures.
    await expectDays();
    expect(await h.db.select().from(testRollups).where(eq(testRollups.projectId, project.id))).toHaveLength(0);
    await packAll(start + 20 * DAY);
    expect((await progressOf(project.id))!.day).toBe(utcDay(new Date(start + 20 * DAY)));
    await expectDays();
    const rows = await h.db.select().from(testRollups).where(eq(testRollups.projectId, project.id));
    // Two periods for a and b (day 0 and day 1 straddle the boundary), one for c (days 0 skipped, 3).
    expect(rows).toHaveLength(5);
    for (const row of rows) expect(bytesOf(row.days).length % SLOT_BYTES).toBe(0);
  });

  it("a day is packed only once it is over, and a run processed after its day was packed adds to the same slot", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const start = h.clock.now().getTime();
    await h.newRun(project.id, { report: report([{ name: "late", status: "passed", durationMs: 100 }]) });
    await packAll(start);
    expect(await h.db.select().from(testRollups).where(eq(testRollups.projectId, project.id))).toHaveLength(0);
    const staged = await h.db.select({ testId: testCases.testId }).from(testCases).where(eq(testCases.projectId, project.id));
    expect(staged).toHaveLength(1);
    await packAll(start + DAY);
    expect(await h.db.select().from(testRollups).where(eq(testRollups.projectId, project.id))).toHaveLength(1);
    // A run that arrived on the packed day, processed now (its arrival day is what counts).
    h.clock.set(start);
    const late = await h.newRun(project.id, { outcome: "pending" });
    h.clock.set(start + DAY + 60_000);
    await completeTestRun(h.storeDeps, late.id, report([{ name: "late", status: "failed", durationMs: 300 }]));
    const read = () => readTestDays(h.db, staged[0]!.testId, new Date(start), new Date(start + DAY));
    const expected = [
      {
        day: utcDay(new Date(start)),
        executions: 2,
        failures: 1,
        passedOnRetry: 0,
        failedAttemptsMs: 0,
        durationP50Ms: bucketedP50([100, 300]),
      },
    ];
    expect(await read()).toEqual(expected);
    await packAll(start + DAY);
    expect(await read()).toEqual(expected);
    const [row] = await h.db.select().from(testRollups).where(eq(testRollups.projectId, project.id));
    expect(decodePeriod(row!.period, bytesOf(row!.days))).toEqual(expected);
  });

  it("a range reads only the days within it", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const start = h.clock.now().getTime();
    for (let day = 0; day < 5; day++) {
      h.clock.set(start + day * DAY);
      await h.newRun(project.id, { report: report([{ name: "only", status: "passed", durationMs: 10 + day }]) });
    }
    const [c] = await h.db
      .select({ testId: testCases.testId })
      .from(testCases)
      .innerJoin(testRuns, eq(testRuns.id, testCases.testRunId))
      .where(eq(testRuns.projectId, project.id))
      .limit(1);
    const days = await readTestDays(h.db, c!.testId, new Date(start + DAY), new Date(start + 3 * DAY));
    expect(days.map((d) => d.durationP50Ms)).toEqual([11, 12, 13]);
  });
});

describe("the slot's functions", () => {
  async function slotOf(runs: { durations: number[]; executions?: number; failedMs?: number }[]): Promise<Uint8Array> {
    let days: string | null = null;
    for (const run of runs) {
      const counts = new Map<number, number>();
      for (const ms of run.durations) counts.set(durationBucket(ms), (counts.get(durationBucket(ms)) ?? 0) + 1);
      const rows: { days: unknown }[] = await rowsOf<{ days: unknown }>(
        h.db.execute(sql`select encode(test_rollup_merge(decode(${days ?? ""}, 'hex'),
          test_rollup_slot_add(null, ${run.executions ?? run.durations.length}::int, 0, 0, ${run.failedMs ?? 0}::bigint,
            ${`{${[...counts.keys()].join(",")}}`}::int[], ${`{${[...counts.values()].join(",")}}`}::int[])), 'hex') as days`),
      );
      days = String(rows[0]!.days);
    }
    return bytesOf(days ?? "");
  }

  it("Postgres' duration_bucket agrees with durationBucket", async () => {
    const samples = [0, 1, 13, 14, 99, 1024, 65_536, 1_969_251_188, 2_147_483_647];
    const rows = await rowsOf<{ x: number; b: number }>(
      h.db.execute(sql`select x, duration_bucket(x) as b from unnest(${`{${samples.join(",")}}`}::int[]) as x`),
    );
    for (const row of rows) expect(Number(row.b)).toBe(durationBucket(Number(row.x)));
  });

  it("the p50 is the bucketed exact p50 with up to four distinct buckets over several runs", async () => {
    const durations = [100, 100, 250, 250, 250, 3_000, 40];
    const days = await slotOf(durations.map((ms) => ({ durations: [ms] })));
    expect(days.length).toBe(SLOT_BYTES);
    expect(decodePeriod(0, days)[0]).toMatchObject({ executions: 7, durationP50Ms: bucketedP50(durations) });
  });

  it("past four buckets the nearest entries merge and the p50 stays between the merged entries' values", async () => {
    // Tight around 1 s with two outliers: the merges happen between the close buckets.
    const durations = [950, 1_000, 1_050, 1_100, 1_150, 30, 90_000, 1_020, 980];
    const days = await slotOf(durations.map((ms) => ({ durations: [ms] })));
    const p50 = decodePeriod(0, days)[0]!.durationP50Ms!;
    expect(p50).toBeGreaterThanOrEqual(bucketValue(durationBucket(950)));
    expect(p50).toBeLessThanOrEqual(bucketValue(durationBucket(1_150)));
  });

  it("counters stop at their largest value instead of wrapping", async () => {
    const days = await slotOf([
      { durations: [], executions: 40_000, failedMs: 3_000_000_000 },
      { durations: [], executions: 40_000, failedMs: 3_000_000_000 },
    ]);
    expect(decodePeriod(0, days)[0]).toMatchObject({ executions: 65_535, failedAttemptsMs: 2 ** 32 - 1, durationP50Ms: null });
  });
});

describe("rolled up by the sweep", () => {
  /** The case's test in this project. */
  const testIdOf = async (projectId: string, name: string) =>
    (
      await h.db
        .select({ testId: testCases.testId })
        .from(testCases)
        .where(and(eq(testCases.projectId, projectId), eq(testCases.name, name)))
    )[0]!.testId;

  it("a day rolled up from its cases equals what per-run rollups gave (each run's figures added to the day, the day packed)", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const start = Math.floor(h.clock.now().getTime() / DAY) * DAY + 3_600_000;
    // Six runs in a day, over more than four distinct buckets (the sketch merges), passes on retry, failed attempts, skips.
    const durations = [120, 130, 5_000, 118, 90, 41];
    for (const [i, ms] of durations.entries()) {
      h.clock.set(start + i * 60_000);
      await h.newRun(project.id, {
        report: report([
          { name: "a", status: i === 2 ? "failed" : "passed", durationMs: ms, failedAttempts: i === 1 ? [200, 15] : undefined },
          { name: "b", status: i % 3 === 0 ? "skipped" : "passed", durationMs: i % 3 === 0 ? null : 7 * (i + 1) },
        ]),
      });
    }
    // What run processing wrote before (drizzle/0044_retention.sql): each run's figures added to the day's row, then the row packed.
    await h.db.execute(sql`create temporary table old_days (test_id uuid primary key, executions int, failures int, passed_on_retry int,
      failed_attempts_ms bigint, duration_buckets smallint[])`);
    const runs = await h.db.select({ id: testRuns.id }).from(testRuns).where(eq(testRuns.projectId, project.id));
    for (const run of runs)
      await h.db.execute(sql`insert into old_days as t
        select c.test_id, count(*), count(*) filter (where c.status in ('failed', 'errored')),
          count(*) filter (where c.status = 'passed' and c.attempts <> '[]'::jsonb and exists (select 1 from jsonb_array_elements(c.attempts) a
            where a ->> 'status' in ('failed', 'errored'))),
          coalesce(sum(case when c.attempts = '[]'::jsonb then 0 else coalesce((select sum(round((a ->> 'duration_ms')::numeric))
            from jsonb_array_elements(c.attempts) a where a ->> 'status' in ('failed', 'errored')), 0) end), 0),
          coalesce(array_agg(duration_bucket(c.duration_ms)) filter (where c.duration_ms is not null), '{}')
        from ${testCases} c where c.test_run_id = ${run.id} and c.status <> 'skipped' group by c.test_id
        on conflict (test_id) do update set executions = t.executions + excluded.executions, failures = t.failures + excluded.failures,
          passed_on_retry = t.passed_on_retry + excluded.passed_on_retry, failed_attempts_ms = t.failed_attempts_ms + excluded.failed_attempts_ms,
          duration_buckets = t.duration_buckets || excluded.duration_buckets`);
    const old = await rowsOf<{ test_id: string; slot: string }>(
      h.db.execute(sql`select m.test_id, encode(test_rollup_slot_add(null, least(m.executions, 65535), least(m.failures, 65535),
          least(m.passed_on_retry, 65535), m.failed_attempts_ms, h.buckets, h.counts), 'hex') as slot
        from old_days m cross join lateral (
          select coalesce(array_agg(b order by b), '{}') as buckets, coalesce(array_agg(n order by b), '{}') as counts
          from (select b::int as b, count(*)::int as n from unnest(m.duration_buckets) b group by b) x) h`),
    );
    await h.db.execute(sql`drop table old_days`);
    expect(old).toHaveLength(2);
    await packAll(start + DAY);
    const { period, slot } = periodOf(new Date(start));
    for (const { test_id, slot: expected } of old) {
      const [row] = await h.db
        .select()
        .from(testRollups)
        .where(and(eq(testRollups.testId, test_id), eq(testRollups.period, period)));
      const bytes = bytesOf(row!.days).slice(slot * SLOT_BYTES, (slot + 1) * SLOT_BYTES);
      expect(Buffer.from(bytes).toString("hex")).toBe(expected);
    }
    const a = await testIdOf(project.id, "a");
    expect((await readTestDays(h.db, a, new Date(start), new Date(start)))[0]).toMatchObject({
      executions: 6,
      failures: 1,
      passedOnRetry: 1,
    });
  });

  it("a retry part's cases are counted, on the run's day, also when it arrives after the day was rolled up", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const start = Math.floor(h.clock.now().getTime() / DAY) * DAY + 3_600_000;
    h.clock.set(start);
    const run = await h.newRun(project.id, {
      report: report([
        { name: "flaky", status: "failed", durationMs: 300 },
        { name: "steady", status: "passed", durationMs: 10 },
      ]),
    });
    await packAll(start + DAY);
    const flaky = await testIdOf(project.id, "flaky");
    const day = utcDay(new Date(start));
    expect(await readTestDays(h.db, flaky, new Date(start), new Date(start))).toEqual([
      { day, executions: 1, failures: 1, passedOnRetry: 0, failedAttemptsMs: 0, durationP50Ms: bucketedP50([300]) },
    ]);
    // Two days later the retry part arrives: the failure passed on retry, and a test the run did not have (no test of its own: no page).
    h.clock.set(start + 2 * DAY);
    await h.db.insert(testRunParts).values({ testRunId: run.id, partNumber: 2, retry: true });
    const rows = await retryRows(async (emit) => {
      emit(
        report([
          { name: "flaky", status: "passed", durationMs: 280 },
          { name: "extra", status: "passed", durationMs: 5 },
        ]).suites,
      );
      return null;
    });
    expect(await mergeRetryPart(h.storeDeps, run.id, 2, rows)).toBe(true);
    const expected = [{ day, executions: 1, failures: 0, passedOnRetry: 1, failedAttemptsMs: 300, durationP50Ms: bucketedP50([280]) }];
    // Counted at once (the day is read from its cases again), and once rolled up again.
    expect(await readTestDays(h.db, flaky, new Date(start), new Date(start))).toEqual(expected);
    expect((await progressOf(project.id))!.day).toBe(day);
    await packAll(start + 2 * DAY);
    expect((await progressOf(project.id))!.day).toBe(utcDay(new Date(start + 2 * DAY)));
    expect(await readTestDays(h.db, flaky, new Date(start), new Date(start))).toEqual(expected);
  });

  it("today's figures are on the test's page before any sweep", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const now = Math.floor(h.clock.now().getTime() / DAY) * DAY + 7_200_000;
    h.clock.set(now);
    await h.newRun(project.id, { report: report([{ name: "today", status: "failed", durationMs: 60 }]) });
    await h.newRun(project.id, { report: report([{ name: "today", status: "passed", durationMs: 70 }]) });
    const id = await testIdOf(project.id, "today");
    expect(await h.db.select().from(testRollups).where(eq(testRollups.projectId, project.id))).toHaveLength(0);
    const history = await testDailyHistory({ db: h.db, clock: h.clock, organizationId: organization.id } as unknown as OrgScope, {
      id,
      projectId: project.id,
    });
    expect(history.days.at(-1)).toEqual({
      day: utcDay(new Date(now)),
      executions: 2,
      failures: 1,
      passedOnRetry: 0,
      failedAttemptsMs: 0,
      durationP50Ms: bucketedP50([60, 70]),
    });
  });

  it("a sweep killed within a day, or repeated, counts no day twice", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const start = Math.floor(h.clock.now().getTime() / DAY) * DAY + 3_600_000;
    const names = ["k1", "k2", "k3", "k4", "k5"];
    for (let i = 0; i < 3; i++) {
      h.clock.set(start + i * 60_000);
      await h.newRun(project.id, {
        report: report(names.map((name, j) => ({ name, status: j === i ? "failed" : "passed", durationMs: 10 + j }))),
      });
    }
    const today = new Date(start + DAY);
    // Batches of two tests (other files' projects' days too, oldest first) until this day is partway: the sweep is killed there.
    for (let i = 0; i < 500 && (await progressOf(project.id))!.afterId === null; i++) await rollTestDays(h.db, today, 2);
    const partway = await progressOf(project.id);
    expect(partway!.day).toBe(utcDay(new Date(start)));
    expect(partway!.afterId).not.toBeNull();
    // The next sweep goes on where the killed one stopped; another sweep, and the day rolled once more from the start, change nothing.
    await packAll(today.getTime());
    const expected = async () => {
      const days = [];
      for (const name of names)
        days.push(...(await readTestDays(h.db, await testIdOf(project.id, name), new Date(start), new Date(start))));
      return days;
    };
    const once = await expected();
    expect(once.map((d) => [d.executions, d.failures])).toEqual(names.map((_, j) => [3, j < 3 ? 1 : 0]));
    await packAll(today.getTime());
    await h.db
      .update(testRollupProgress)
      .set({ day: utcDay(new Date(start)), afterId: null, afterName: null })
      .where(eq(testRollupProgress.projectId, project.id));
    await packAll(today.getTime());
    expect(await expected()).toEqual(once);
  });
});
