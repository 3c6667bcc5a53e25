/**
 * A large run's alert checks go through its tests in chunks read by a cursor (CheckPass, twice),
 * a small run's in one piece. Each run of a simulated stream is checked both ways on the same
 * database: first in chunks of a few cases inside a transaction that is rolled back, then in one
 * piece, committed. Both must leave the same rows: the checks' states, the tests' entries and
 * health, the events with their metadata, the health transitions. The check-level tests pin the
 * rules down (and test/checks/support/feed.ts the cut of a run in memory); this pins the cursor,
 * the per-chunk writes and the events' test facts.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECKS } from "../../../src/checks";
import { failureRateSpikeCheck } from "../../../src/checks/failure-rate-spike";
import { flakinessCheck } from "../../../src/checks/flakiness";
import { performanceRegressionCheck } from "../../../src/checks/performance-regression";
import { legacyTestKey } from "../../../src/checks/types";
import { rowsOf } from "../../../src/db/rows";
import type { Database } from "../../../src/db/types";
import { runAlertChecks } from "../../../src/services/alerts/alert-checks";
import { processTestRun } from "../../../src/services/runs/run-processing";
import { recordTestRunArrival } from "../../../src/services/runs/test-runs";
import { generateStream, toJUnitXml } from "../../../src/simulator/streams";
import { type Harness, WEB_APP_URL, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const logger = { info() {}, error() {} };

/** What the checks leave in the project, without the ids a rolled-back sequence moves on. */
async function checksOutcome(db: Database, projectId: string) {
  const rows = (query: ReturnType<typeof sql>) => rowsOf<Record<string, unknown>>(db.execute(query));
  return {
    states: await rows(
      sql`select alert_type, state, detector_version, last_run_number, runs_checked from alert_check_states where project_id = ${projectId} order by alert_type`,
    ),
    events: await rows(sql`
      select a.alert_type, e.test_run_id, e.metadata, e.triggered_at from alert_events e join alerts a on a.id = e.alert_id
      where a.project_id = ${projectId} order by e.id`),
    alerts: await rows(sql`select alert_type, events_count from alerts where project_id = ${projectId} order by alert_type`),
    tests: await rows(sql`
      select t.id, e.state as check_state, t.health, t.health_changed_at, t.passing_streak, t.quarantine_expires_at from tests t left join test_check_states e on e.test_id = t.id where t.project_id = ${projectId} order by t.id`),
    // Auto-quarantine and the flaky count follow the run's health changes once, however it is cut.
    project: await rows(sql`select quarantine_version, flaky_tests_count from projects where id = ${projectId}`),
    quarantines: await rows(sql`
      select id, quarantine_source, quarantine_reason, quarantine_created_at from tests where project_id = ${projectId} and quarantine_source is not null order by id`),
    transitions: await rows(sql`
      select x.test_id, x.from_health, x.to_health, x.reason, x.test_run_id from test_health_transitions x join tests t on t.id = x.test_id
      where t.project_id = ${projectId} order by x.test_run_id, x.test_id, x.to_health`),
  };
}

class RolledBack extends Error {}

/** A run to upload: its metadata and its JUnit XML. */
type Upload = { branch: string; commitSha: string; createdAt: string; xml: string };

const uploadsOf = (stream: ReturnType<typeof generateStream>): Upload[] =>
  stream.runs.map((run) => ({ branch: run.branch, commitSha: run.commit_sha, createdAt: run.created_at, xml: toJUnitXml(run) }));

/**
 * Runs where tests appear twice, in two suites (one test, two cases: the checks merge them), with
 * different outcomes, failing together in a few runs, one of them quarantined.
 */
function duplicatedTests(runs: number): Upload[] {
  const uploads: Upload[] = [];
  const start = Date.parse("2026-03-01T00:00:00Z");
  for (let run = 1; run <= runs; run++) {
    const status = (i: number, suite: number) => {
      if (run % 9 === 0 && i < 8) return "failed";
      // The two cases of a test often disagree, either way round: the test's outcome is their merge.
      if (suite === 0 ? (i + run) % 4 === 0 : (i + run) % 5 === 0) return "failed";
      if ((i * 3 + run) % 13 === 0 && suite === 1) return "skipped";
      return "passed";
    };
    const testcase = (i: number, suite: number) => {
      const outcome = status(i, suite);
      const time = (0.2 + ((i * 7 + run * (i % 3 === 0 ? 3 : 1)) % 10) / 10).toFixed(3);
      const body =
        outcome === "failed" ? `<failure message="expected ${i}">at spec:${i}</failure>` : outcome === "skipped" ? "<skipped/>" : "";
      return `<testcase classname="app.Spec" name="test ${String(i).padStart(2, "0")}" time="${time}">${body}</testcase>`;
    };
    const first = Array.from({ length: 24 }, (_, i) => testcase(i, 0)).join("");
    const second = Array.from({ length: 24 }, (_, i) => i)
      .filter((i) => i % 2 === 0)
      .map((i) => testcase(i, 1))
      .join("");
    uploads.push({
      branch: run % 10 === 5 ? "feature/x" : "main",
      commitSha: run % 9 === 1 && run > 1 ? `c${run - 1}` : `c${run}`,
      createdAt: new Date(start + run * 3_600_000).toISOString(),
      xml: `<testsuites><testsuite name="first">${first}</testsuite><testsuite name="second">${second}</testsuite></testsuites>`,
    });
  }
  return uploads;
}

describe("alert checks of a large run, in chunks", () => {
  // Each of these checks every run twice; on a loaded 2-core machine the first takes about 40 s.
  it("leave what the checks of the run in one piece leave, run after run, for every check", async () => {
    // Two streams of 160 runs of about 40 tests (every anomaly family: flaky tests, duration steps,
    // failure spikes and outages, skip steps; same-commit re-runs and in-run retries). Between them
    // every check trips: seed 1 flaky tests, slow tests and a spike, seed 6 skip creep.
    const tripped = new Set<unknown>();
    for (const seed of [1, 6]) {
      const stream = generateStream({ seed, runs: 160, tests: 40, knobs: { retryProbability: 0.5 } });
      const outcome = await checkBothWays(uploadsOf(stream));
      for (const event of outcome.events) tripped.add(event.alert_type);
      expect(outcome.transitions.some((transition) => transition.to_health === "flaky")).toBe(true);
    }
    expect(tripped).toEqual(new Set(["test_flakiness", "performance_regression", "failure_rate_spike", "skipped_test_count_creep"]));
  }, 240_000);

  it("quarantine automatically, and count flaky tests, once per run however it is cut", async () => {
    // With auto-quarantine on, a run that turns tests in several chunks flaky quarantines them in one
    // step: one quarantine version, as when the run is checked in one piece.
    const outcome = await checkBothWays(duplicatedTests(60), { chunkCases: 3, autoQuarantineDays: 30 });
    expect(outcome.quarantines.length).toBeGreaterThan(1);
    expect(outcome.project[0]!.quarantine_version).toBeGreaterThan(0);
  }, 240_000);

  it("keep a test's cases in one chunk: a test reported in two suites is one outcome", async () => {
    // Chunks of 3 cases: most chunks end inside a test with two cases, unless the cursor holds them back.
    const outcome = await checkBothWays(duplicatedTests(60), { quarantine: "test 04", chunkCases: 3 });
    expect(outcome.events.length).toBeGreaterThan(0);
  });

  it("convert a state stored in one document per check (old keys) as the checks of the run in one piece do", async () => {
    const outcome = await checkBothWays(duplicatedTests(30), { chunkCases: 3, beforeLast: toLegacyStates });
    // Converted, not started over: the states count all 27 default-branch runs of the 30.
    const states = Object.fromEntries(
      outcome.states.map((row) => [row.alert_type, row.state as { v: number; sq?: number; runs?: number; seq?: number }]),
    );
    expect(states.test_flakiness).toMatchObject({ v: 2, sq: 27 });
    expect(states.failure_rate_spike).toMatchObject({ v: 2, seq: 27 });
    expect(states.performance_regression).toMatchObject({ v: 3 });
    expect(states.skipped_test_count_creep).toMatchObject({ v: 2, runs: 27 });
    // Every test's entries are back (skip creep keeps none per test).
    expect(
      outcome.tests.every((row) =>
        [flakinessCheck.version, failureRateSpikeCheck.version, performanceRegressionCheck.version].every(
          (version) => version in (row.check_state as object),
        ),
      ),
    ).toBe(true);
  });
});

/** Turns the project's checks' states back into what the service stored before per-test entries: one document per check, every test's entry under its old key. */
async function toLegacyStates(projectId: string) {
  const tests = await rowsOf<{ id: string; name: string; check_state: Record<string, unknown> }>(
    h.db.execute(
      sql`select t.id, t.name, coalesce(e.state, '{}'::jsonb) as check_state from tests t left join test_check_states e on e.test_id = t.id where t.project_id = ${projectId}`,
    ),
  );
  const states = new Map(
    (
      await rowsOf<{ alert_type: string; state: Record<string, unknown> }>(
        h.db.execute(sql`select alert_type, state from alert_check_states where project_id = ${projectId}`),
      )
    ).map((row) => [row.alert_type, row.state]),
  );
  const oldKey = new Map(tests.map((test) => [test.id, legacyTestKey("first", "app.Spec", test.name)]));
  const entries = (version: string) =>
    Object.fromEntries(
      tests.flatMap((test) => (test.check_state[version] === undefined ? [] : [[oldKey.get(test.id)!, test.check_state[version]]])),
    );
  const spike = entries(failureRateSpikeCheck.version) as Record<string, Record<string, number>>;
  const spikeMap = (field: string) =>
    Object.fromEntries(Object.entries(spike).flatMap(([key, entry]) => (entry[field] === undefined ? [] : [[key, entry[field]]])));
  const perf = states.get("performance_regression") as { tests: { k: string }[]; pool: { k: string }[] };
  const skipped = states.get("skipped_test_count_creep") as { keys: string[] | null };
  const legacy: Record<string, unknown> = {
    test_flakiness: { ...states.get("test_flakiness"), v: 1, tests: entries(flakinessCheck.version) },
    failure_rate_spike: { ...states.get("failure_rate_spike"), v: 1, last: spikeMap("l"), lf: spikeMap("f"), tf: spikeMap("t") },
    performance_regression: {
      ...perf,
      v: 2,
      o: entries(performanceRegressionCheck.version),
      tests: perf.tests.map((series) => ({ ...series, k: oldKey.get(series.k)! })),
      pool: perf.pool.map((entry) => ({ ...entry, k: oldKey.get(entry.k)! })),
    },
    skipped_test_count_creep: { ...skipped, v: 1, keys: skipped.keys?.map((key) => oldKey.get(key)!) ?? null },
  };
  for (const [alertType, state] of Object.entries(legacy)) {
    await h.db.execute(
      sql`update alert_check_states set state = ${JSON.stringify(state)}::jsonb where project_id = ${projectId} and alert_type = ${alertType}`,
    );
  }
  await h.db.execute(sql`delete from test_check_states where test_id in (select id from tests where project_id = ${projectId})`);
}

/**
 * Uploads and processes the runs, checking each both ways (above); returns what the checks left.
 * `quarantine` names a test quarantined after the first run; `chunkCases` the chunks' size;
 * `autoQuarantineDays` turns the project's auto-quarantine on;
 * `beforeLast` runs before the last run is uploaded.
 */
async function checkBothWays(
  uploads: Upload[],
  options: {
    quarantine?: string;
    chunkCases?: number;
    autoQuarantineDays?: number;
    beforeLast?: (projectId: string) => Promise<void>;
  } = {},
) {
  const { organization } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  if (options.autoQuarantineDays)
    await h.db.execute(sql`update projects set auto_quarantine_days = ${options.autoQuarantineDays} where id = ${project.id}`);
  const checkDeps = (db: Database) => ({ db, clock: h.clock, logger, checks: CHECKS, webAppUrl: WEB_APP_URL });
  let compared = 0;
  let difference: unknown = null;
  const deps = {
    db: h.db,
    clock: h.clock,
    logger,
    webAppUrl: WEB_APP_URL,
    afterRunProcessed: async (run: Parameters<typeof runAlertChecks>[1]) => {
      let chunked: Awaited<ReturnType<typeof checksOutcome>> | null = null;
      await h.db
        .transaction(async (outer) => {
          // Chunks of 7 cases unless told: a run of 40 tests is read in about six chunks, each pass.
          await runAlertChecks(checkDeps(outer), run, { largeAbove: 0, chunkCases: options.chunkCases ?? 7 });
          chunked = await checksOutcome(outer, project.id);
          throw new RolledBack();
        })
        .catch((error: unknown) => {
          if (!(error instanceof RolledBack)) throw error;
        });
      await runAlertChecks(checkDeps(h.db), run);
      // Run processing logs what its hook throws and goes on: the first difference is thrown below.
      try {
        expect(chunked).toEqual(await checksOutcome(h.db, project.id));
        compared++;
      } catch (error) {
        difference ??= error;
      }
    },
  };
  for (const [i, upload] of uploads.entries()) {
    if (i === uploads.length - 1) await options.beforeLast?.(project.id);
    h.clock.set(Date.parse(upload.createdAt));
    const payload = { format: "junit_xml" as const, content: upload.xml };
    const { run: arrived } = await recordTestRunArrival(
      deps,
      project.id,
      { branch: upload.branch, commitSha: upload.commitSha, startedAt: new Date(upload.createdAt) },
      payload,
    );
    expect(await processTestRun(deps, arrived.id, { finalAttempt: false, payload })).toBe("processed");
    if (i === 0 && options.quarantine) {
      await h.db.execute(
        sql`update tests set quarantine_expires_at = now() + interval '30 days' where name = ${options.quarantine} and project_id = ${project.id}`,
      );
    }
  }
  if (difference) throw difference;
  expect(compared).toBe(uploads.length);
  return checksOutcome(h.db, project.id);
}
