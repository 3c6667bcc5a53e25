/**
 * A large run (more cases than one chunk) is stored without holding its executions in memory:
 * its tests are advanced in chunks from its stored cases (advanceRunTestsInChunks), and its
 * failure groups are counted from them. The same reports stored both ways, in two projects, must
 * leave the same tests, health transitions, failure groups, runs and project counts: the chunked
 * path is checked against the in-memory one, which the tests of each rule already pin down. So is
 * the path of a database of one session (PGlite): the run stored in slices and made visible by
 * one final transaction (storeTestRunInSlices, src/services/runs/sliced-store.ts), in a third project.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunMetadata } from "../../../src/ingest/upload-request";
import { rowsOf } from "../../../src/db/rows";
import { type Report, type ReportCase, recordTestRunArrival, storeTestRun } from "../../../src/services/runs/test-runs";
import { storeTestRunInSlices } from "../../../src/services/runs/sliced-store";
import { TESTS_PER_CHUNK } from "../../../src/services/tests/tests-state";
import { scanRepeatedCases, streamJUnit, streamJUnitText } from "../../../src/ingest/junit";
import type { ReportSuite } from "../../../src/ingest/report";
import { type Harness, WEB_APP_URL, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const quiet = { info() {}, error() {} };
const IN_MEMORY = Number.POSITIVE_INFINITY;
const CHUNKED = 0;

async function twoProjects() {
  const { organization } = await h.newOrganization();
  const inMemory = (await h.newProject(organization.id, "in memory")).project.id as string;
  const chunked = (await h.newProject(organization.id, "chunked")).project.id as string;
  const sliced = (await h.newProject(organization.id, "sliced")).project.id as string;
  return { inMemory, chunked, sliced };
}

/** Stores `report` as a new run of each project: in memory, in chunks, in slices. */
async function storeBoth(projects: { inMemory: string; chunked: string; sliced: string }, meta: RunMetadata, report: Report) {
  h.clock.advance(60_000);
  const deps = { db: h.db, clock: h.clock, logger: quiet, webAppUrl: WEB_APP_URL };
  for (const [projectId, largeAbove, store] of [
    [projects.inMemory, IN_MEMORY, storeTestRun],
    [projects.chunked, CHUNKED, storeTestRun],
    [projects.sliced, IN_MEMORY, storeTestRunInSlices],
  ] as const) {
    const { run } = await recordTestRunArrival(deps, projectId, meta);
    const stored = await store(
      deps,
      run.id,
      async (emit) => {
        emit(report.suites);
        return report.durationMs;
      },
      { largeAbove },
    );
    expect(stored?.status).toBe("processed");
  }
}

/** Everything run processing keeps, per project, without ids that differ between the projects. */
async function kept(projectId: string) {
  const rows = (query: ReturnType<typeof sql>) => rowsOf<Record<string, unknown>>(h.db.execute(query));
  return {
    tests: await rows(sql`
      select name, classname, file, suite, health, health_changed_at, executions_count, last_status, last_executed_at, last_failed_at,
        first_seen_at, last_run_number, window_size, failure_rate, flip_rate, impact, passed_on_retry_count, duration_p50_ms, duration_p95_ms, window_outcomes,
        duration_log_mean, duration_log_var, duration_samples, recent_commits, failing_streak, passing_streak, owners
      from tests where project_id = ${projectId} order by classname nulls first, file nulls first, name`),
    transitions: await rows(sql`
      select t.classname, t.file, t.name, x.from_health, x.to_health, x.reason, r.number, x.created_at
      from test_health_transitions x join tests t on t.id = x.test_id join test_runs r on r.id = x.test_run_id
      where t.project_id = ${projectId} order by r.number, t.classname nulls first, t.file nulls first, t.name, x.id`),
    testGroups: await rows(sql`
      select t.classname, t.file, t.name, g.signature, g.message, g.occurrences, g.first_seen_at, g.last_seen_at, g.sample_message, g.sample_text,
        s.name as sample_name, r.number as sample_run
      from test_failure_groups g join tests t on t.id = g.test_id join test_cases s on s.id = g.sample_test_case_id join test_runs r on r.id = s.test_run_id
      where t.project_id = ${projectId} order by t.classname nulls first, t.file nulls first, t.name, g.signature`),
    groups: await rows(sql`
      select g.signature, g.message, g.occurrences, g.tests_count, g.first_seen_at, g.last_seen_at, g.sample_message, s.name as sample_name, r.number as sample_run
      from failure_groups g join test_cases s on s.id = g.sample_test_case_id join test_runs r on r.id = s.test_run_id
      where g.project_id = ${projectId} order by g.signature`),
    runs: await rows(sql`
      select number, status, result, tests_count, passed_count, failed_count, errored_count, skipped_count, quarantined_failures_count, duration_ms, suites_count
      from test_runs where project_id = ${projectId} order by number`),
    project: await rows(
      sql`select tests_count, flaky_tests_count, broken_tests_count, latest_result from projects where id = ${projectId}`,
    ),
  };
}

const passed = (name: string, durationMs = 10, extra: Partial<ReportCase> = {}): ReportCase => ({
  name,
  classname: "app.Spec",
  status: "passed",
  durationMs,
  ...extra,
});
const failed = (name: string, message: string, extra: Partial<ReportCase> = {}): ReportCase => ({
  name,
  classname: "app.Spec",
  status: "failed",
  durationMs: 20,
  failureType: "AssertionError",
  failureMessage: message,
  failureText: `${message}\n    at spec.ts:1`,
  ...extra,
});

describe("a large run, stored in chunks", () => {
  it("leaves what the in-memory path leaves, run after run: health rules, same-commit bursts, retries, duplicates, quarantine, failure groups", async () => {
    const projects = await twoProjects();
    const stable = Array.from({ length: 12 }, (_, i) => `stable ${i}`);
    for (let run = 1; run <= 16; run++) {
      const commit = run === 6 || run === 7 ? "aaaaaaaaaaaaaaaa" : `c${run}`;
      const cases: ReportCase[] = [
        ...stable.map((name, i) => passed(name, 10 + ((i * run) % 7))),
        // Fails on every default-branch run from run 2 to 12 (broken after 10), then passes (healthy again).
        run >= 2 && run <= 12 ? failed("breaks", `expected ${run} to be 0`) : passed("breaks"),
        // Passes then fails on one commit (runs 6 and 7): flaky by the same-commit rule.
        run === 7 ? failed("same commit", "timeout after 30s") : passed("same commit"),
        // Fails, then passes on a retry: both outcomes in one run.
        passed("retried", 15, { attempts: [{ status: "failed", durationMs: 12, failureMessage: "flaked" }] }),
        { name: "skipped one", classname: "app.Spec", status: "skipped", durationMs: null },
        // Identified by its file: no classname.
        {
          name: "by file",
          classname: null,
          file: `spec/by-file.spec.ts`,
          status: run % 3 === 0 ? "errored" : "passed",
          durationMs: 5,
          failureMessage: run % 3 === 0 ? "TypeError: x is undefined" : null,
        },
      ];
      const second: ReportCase[] = [
        // The same test twice in one run, in another suite: merged (worst status, longest duration, the first suite).
        run % 4 === 0 ? failed("stable 0", "duplicate failed") : passed("stable 0", 99),
        passed("quarantined"),
        failed("always failing", `connection refused to 10.0.0.${run}`),
      ];
      if (run === 9) {
        // A run of a commit seen before, where five tests now contradict it: a same-commit burst.
        for (let i = 1; i <= 5; i++) cases[i] = failed(stable[i]!, "network unreachable");
      }
      await storeBoth(
        projects,
        { branch: run === 5 ? "feature/x" : "main", commitSha: run === 9 ? "c8" : commit },
        {
          suites: [
            { name: "first", durationMs: 1_000, cases },
            { name: "outer", durationMs: 500, cases: [], suites: [{ name: "second", durationMs: 400, cases: second }] },
          ],
          durationMs: run % 2 === 0 ? 1_500 : null,
        },
      );
      if (run === 3) {
        await h.db.execute(
          sql`update tests set quarantine_expires_at = now() + interval '30 days' where name = 'quarantined' and project_id in (${projects.inMemory}, ${projects.chunked}, ${projects.sliced})`,
        );
      }
      if (run === 10) {
        await h.db.execute(
          sql`update tests set quarantine_expires_at = now() + interval '30 days' where name = 'always failing' and project_id in (${projects.inMemory}, ${projects.chunked}, ${projects.sliced})`,
        );
      }
    }
    const inMemory = await kept(projects.inMemory);
    const chunked = await kept(projects.chunked);
    expect(chunked).toEqual(inMemory);
    expect(await kept(projects.sliced)).toEqual(inMemory);
    // The scenario reaches what it is meant to compare.
    const reasons = inMemory.transitions.map((t) => `${t.name}: ${t.from_health} → ${t.to_health}`);
    expect(reasons).toEqual(
      expect.arrayContaining([
        "breaks: healthy → broken",
        "breaks: broken → healthy",
        "same commit: healthy → flaky",
        "retried: healthy → flaky",
      ]),
    );
    // Run 9's five contradictions are a same-commit burst: left to the flakiness check, not flaky by the rule.
    expect(inMemory.transitions.filter((t) => /^stable [1-5]$/.test(String(t.name)))).toEqual([]);
    expect(reasons).toContain("stable 0: healthy → flaky");
    expect(inMemory.runs.some((r) => Number(r.quarantined_failures_count) > 0)).toBe(true);
    expect(inMemory.groups.length).toBeGreaterThanOrEqual(4);
    expect(inMemory.tests.find((t) => t.name === "stable 0")).toMatchObject({ suite: "first" });
    // "retried" passed on retry in each of its 15 default-branch runs (run 5 is on a feature branch): passes for the rates.
    expect(inMemory.tests.find((t) => t.name === "retried")).toMatchObject({ passed_on_retry_count: 15, impact: 0, failure_rate: 0 });
  });

  it(`advances the tests of a run ${TESTS_PER_CHUNK.toLocaleString("en")}-at-a-time, the same as in memory`, async () => {
    const projects = await twoProjects();
    const count = TESTS_PER_CHUNK * 2 + 7;
    for (let run = 1; run <= 2; run++) {
      const cases = Array.from({ length: count }, (_, i) =>
        i % 97 === run
          ? failed(`t${i}`, `boom ${i % 3}`)
          : passed(`t${i}`, (i * 7 + run) % 50, i % 13 === 0 ? { file: `spec/${i}.ts` } : {}),
      );
      await storeBoth(projects, { branch: "main", commitSha: `sha-${run}` }, { suites: [{ name: "many", cases }] });
    }
    const inMemory = await kept(projects.inMemory);
    expect(await kept(projects.chunked)).toEqual(inMemory);
    expect(await kept(projects.sliced)).toEqual(inMemory);
    expect(inMemory.tests).toHaveLength(count);
    expect(inMemory.project).toEqual([expect.objectContaining({ tests_count: count })]);
  });

  it("follows the health changes of every chunk, written or not yet: auto-quarantine and webhook events as in memory", async () => {
    const projects = await twoProjects();
    const ids = Object.values(projects);
    await h.db.execute(sql`update projects set auto_quarantine_days = 14 where id in (${sql.join(ids, sql`, `)})`);
    const [owner] = await rowsOf<{ organization_id: string }>(
      h.db.execute(sql`select organization_id from projects where id = ${projects.inMemory}`),
    );
    const organizationId = owner!.organization_id;
    await h.db.execute(
      sql`insert into webhook_endpoints (organization_id, url, signing_secret) values (${organizationId}, 'https://hooks.example.com/tests', 'whsec_test')`,
    );
    // Tests that failed, then passed on retry, turn flaky from healthy (no same-commit burst): spread over every chunk.
    const count = TESTS_PER_CHUNK * 2 + 7;
    const retried = { attempts: [{ status: "failed" as const, durationMs: 5, failureMessage: "boom" }] };
    const cases = Array.from({ length: count }, (_, i) => passed(`t${i}`, 10, i % 40 === 3 ? retried : {}));
    await storeBoth(projects, { branch: "main", commitSha: "sha-1" }, { suites: [{ name: "many", cases }] });

    const followed = async (projectId: string) => ({
      quarantined: await rowsOf(
        h.db.execute(sql`select name, health, quarantine_source, quarantine_reason, quarantine_expires_at from tests
          where project_id = ${projectId} and quarantine_expires_at is not null order by name`),
      ),
      deliveries: await rowsOf(
        h.db.execute(sql`select d.event_type, d.payload -> 'test' ->> 'name' as name, d.payload -> 'test' ->> 'health' as health,
            d.payload -> 'test' -> 'quarantine' ->> 'source' as source
          from notification_deliveries d join test_runs r on r.id = d.test_run_id
          where r.project_id = ${projectId} order by d.event_type, name`),
      ),
      // Not quarantine_version: it counts each follow's quarantines once, per chunk in chunks (the CI list's ETag changes either way).
      project: await rowsOf(
        h.db.execute(sql`select flaky_tests_count, quarantine_version > 0 as versioned from projects where id = ${projectId}`),
      ),
    });
    const inMemory = await followed(projects.inMemory);
    expect(inMemory.quarantined).toHaveLength(Math.ceil((count - 3) / 40));
    expect(inMemory.quarantined[0]).toMatchObject({ health: "flaky", quarantine_source: "auto" });
    expect(inMemory.deliveries).toHaveLength(2 * inMemory.quarantined.length);
    expect(await followed(projects.chunked)).toEqual(inMemory);
    expect(await followed(projects.sliced)).toEqual(inMemory);
    expect(await kept(projects.chunked)).toEqual(await kept(projects.inMemory));
  });

  it("stores a large suite handed out in parts while it is read as the whole suite, cases in the same order", async () => {
    const projects = await twoProjects();
    const entry = (i: number, body = "") => `<testcase classname="app.Spec" name="t${i}" time="0.0${i % 10}">${body}</testcase>`;
    const fail = (message: string) => `<failure message="${message}">at spec:1</failure>`;
    for (let run = 1; run <= 2; run++) {
      const entries = Array.from({ length: 4_500 }, (_, i) => entry(i, (i + run) % 89 === 0 ? fail(`boom ${i % 4}`) : ""));
      // Retries: one right after its first entry, one at the end of the suite; a nested suite after the first 3,000 cases.
      entries.splice(11, 0, entry(10, fail("flaked")));
      entries.push(entry(2_000, fail("again")));
      const nested = `<testsuite name="nested">${entry(1)}${entry(9_999)}</testsuite>`;
      const xml = `<testsuites><testsuite name="small">${entry(0)}</testsuite><testsuite name="big">${entries.slice(0, 3_000).join("")}${nested}${entries.slice(3_000).join("")}</testsuite></testsuites>`;
      const pieces = async function* () {
        for (let i = 0; i < xml.length; i += 8_192) yield xml.slice(i, i + 8_192);
      };
      const deps = { db: h.db, clock: h.clock, logger: quiet, webAppUrl: WEB_APP_URL };
      h.clock.advance(60_000);
      const parts: number[] = [];
      for (const [projectId, source] of [
        [projects.inMemory, (emit: (suites: ReportSuite[]) => void, pause: () => Promise<void>) => streamJUnit(xml, emit, pause)],
        [
          projects.chunked,
          async (emit: (suites: ReportSuite[]) => void, pause: () => Promise<void>) => {
            const repeats = await scanRepeatedCases(pieces(), pause);
            return streamJUnitText(
              pieces(),
              (suites) => emit(suites.map((suite) => (suite.continued ? (parts.push(suite.cases.length), suite) : suite))),
              pause,
              repeats,
            );
          },
        ],
      ] as const) {
        const { run: arrived } = await recordTestRunArrival(deps, projectId, { branch: "main", commitSha: `c${run}` });
        expect((await storeTestRun(deps, arrived.id, source))?.status).toBe("processed");
      }
      expect(parts.length).toBeGreaterThanOrEqual(2);
    }
    const cases = (projectId: string) =>
      rowsOf<Record<string, unknown>>(
        h.db.execute(sql`
          select r.number, c.suite_number, c.name, c.status, c.attempts, c.duration_ms, c.failure_message, s.name as suite, s.parent_number, s.tests_count, s.failed_count
          from test_cases c join test_runs r on r.id = c.test_run_id join test_suites s on s.test_run_id = c.test_run_id and s.number = c.suite_number
          where r.project_id = ${projectId} order by c.id`),
      );
    const whole = await cases(projects.inMemory);
    expect(await cases(projects.chunked)).toEqual(whole);
    expect(await kept(projects.chunked)).toEqual(await kept(projects.inMemory));
    expect(whole.filter((c) => c.number === 1)).toHaveLength(4_503);
  });
});
