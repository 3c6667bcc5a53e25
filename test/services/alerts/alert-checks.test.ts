/**
 * The four alert checks end to end: JUnit uploads through POST /uploads/v1/test_runs, processing,
 * the checks, events read back through /api/v1. The scenarios of the checks issue: what must
 * trip (and name its subject), what must not, and the alert states (disabled: no check and no
 * events; snoozed: checks and events continue).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { failureRateSpikeCheck } from "../../../src/checks/failure-rate-spike";
import { flakinessCheck } from "../../../src/checks/flakiness";
import { performanceRegressionCheck } from "../../../src/checks/performance-regression";
import { legacyTestKey } from "../../../src/checks/types";
import { rowsOf } from "../../../src/db/rows";
import { boundedMetadata } from "../../../src/services/alerts/alert-checks";
import { createHarness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

type Status = "passed" | "failed" | "errored" | "skipped";
type CaseSpec = { name: string; status: Status; seconds?: number; retriedFrom?: Status };
type RunSpec = { cases: CaseSpec[]; seconds?: number; branch?: string; commit?: string };

const escapeXml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");

function junit(run: RunSpec): string {
  const cases = run.cases
    .map((c) => {
      const time = `time="${(c.seconds ?? 0.05).toFixed(3)}"`;
      const head = `<testcase classname="com.shop.CheckoutTest" name="${escapeXml(c.name)}" ${time}`;
      const retry = c.retriedFrom ? `<flakyFailure message="first attempt failed" type="AssertionError"/>` : "";
      if (c.status === "passed") return retry ? `${head}>${retry}</testcase>` : `${head}/>`;
      if (c.status === "skipped") return `${head}><skipped/></testcase>`;
      if (c.status === "errored") return `${head}><error message="boom" type="IOException"/></testcase>`;
      return `${head}><failure message="expected true" type="AssertionError">at CheckoutTest.java:42</failure></testcase>`;
    })
    .join("");
  const total = run.seconds ?? run.cases.reduce((sum, c) => sum + (c.seconds ?? 0.05), 0);
  return `<testsuites time="${total.toFixed(3)}"><testsuite name="checkout" time="${total.toFixed(3)}">${cases}</testsuite></testsuites>`;
}

async function newProject() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken, alertIds } = await h.newProject(organization.id);
  return { project, apiKey, uploadToken, alertIds };
}

/** Uploads runs in order (a minute apart), each processed (and checked) before the next. */
async function uploadRuns(uploadToken: string, runs: RunSpec[]) {
  for (const run of runs) {
    h.clock.advance(60_000);
    const query = new URLSearchParams({ branch: run.branch ?? "main", commit_sha: run.commit ?? Math.random().toString(16).slice(2, 14) });
    const done = await h.uploadAndWait(uploadToken, junit(run), { query: query.toString() });
    if (done.status !== "processed") throw new Error(`run failed: ${done.failure_reason}`);
    // The checks run right after the run is stored: wait for them too.
    await h.queue.idle();
  }
}

async function eventsOf(apiKey: string, alertId: string) {
  const res = await h.get(`/api/v1/alerts/${alertId}/events?limit=100`, apiKey);
  expect(res.status).toBe(200);
  return res.body.data as { metadata: Record<string, any>; test_run: { number: number } }[];
}

const stable = (count: number, status: Status = "passed"): CaseSpec[] =>
  Array.from({ length: count }, (_, i) => ({ name: `stable_${i}`, status }));
const times = <T>(count: number, make: (i: number) => T): T[] => Array.from({ length: count }, (_, i) => make(i));

describe("must trip", () => {
  it("a test alternating pass/fail over 30 default-branch runs is flaky, and the event names it", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(
      uploadToken,
      times(30, (i) => ({ cases: [...stable(10), { name: "flaky_cart_total", status: (i % 2 ? "failed" : "passed") as Status }] })),
    );
    const events = await eventsOf(apiKey, alertIds.test_flakiness!);
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(events.every((e) => e.metadata.name === "flaky_cart_total")).toBe(true);
    expect(events[0]!.metadata.detector_version).toEqual(expect.any(String));
  });

  it("the same commit passing and failing is flaky", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(uploadToken, [
      { cases: [...stable(5), { name: "same_commit_test", status: "passed" }], commit: "aaaabbbbcccc" },
      { cases: [...stable(5), { name: "same_commit_test", status: "failed" }], commit: "aaaabbbbcccc" },
    ]);
    const events = await eventsOf(apiKey, alertIds.test_flakiness!);
    expect(events).toHaveLength(1);
    expect(events[0]!.metadata).toMatchObject({ name: "same_commit_test", rule: "same_commit" });
    expect(events[0]!.test_run.number).toBe(2);
  });

  it("30 runs of about 60 s then 10 of about 120 s is a performance regression, reported once", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    const jitter = (i: number) => ((i * 7919) % 13) / 10 - 0.6;
    await uploadRuns(uploadToken, [
      ...times(30, (i) => ({ cases: stable(5), seconds: 60 + jitter(i) })),
      ...times(10, (i) => ({ cases: stable(5), seconds: 120 + jitter(i) })),
    ]);
    const events = await eventsOf(apiKey, alertIds.performance_regression!);
    expect(events).toHaveLength(1);
    expect(events[0]!.metadata.subject).toBe("run_duration");
    expect(events[0]!.test_run.number).toBeGreaterThan(30);
  });

  it("30 runs with almost no failures then one with 40 % failing is a failure-rate spike", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(uploadToken, [
      ...times(30, (i) => ({ cases: [...stable(49), { name: "rarely_fails", status: (i === 12 ? "failed" : "passed") as Status }] })),
      { cases: [...stable(30), ...times(20, (i) => ({ name: `broken_${i}`, status: "failed" as const }))] },
    ]);
    const events = await eventsOf(apiKey, alertIds.failure_rate_spike!);
    expect(events).toHaveLength(1);
    expect(events[0]!.test_run.number).toBe(31);
    expect(events[0]!.metadata.failure_rate).toBeCloseTo(0.4, 5);
  });

  it("skipped tests going from 0 to 20 % for 5 runs is skip creep, naming the newly skipped tests", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(uploadToken, [
      ...times(20, () => ({ cases: stable(100) })),
      ...times(5, () => ({ cases: [...stable(80), ...times(20, (i) => ({ name: `skipped_${i}`, status: "skipped" as const }))] })),
    ]);
    const events = await eventsOf(apiKey, alertIds.skipped_test_count_creep!);
    expect(events).toHaveLength(1);
    expect(events[0]!.metadata.skipped_count).toBe(20);
    expect(JSON.stringify(events[0]!.metadata.newly_skipped_tests)).toContain("skipped_0");
  });
});

describe("small suites (the scenarios with nothing around the test)", () => {
  it("a lone test alternating pass/fail over 30 runs is flaky: one test failing is not an infrastructure outage", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(
      uploadToken,
      times(30, (i) => ({ cases: [{ name: "lonely_flake", status: (i % 2 ? "failed" : "passed") as Status }] })),
    );
    const events = await eventsOf(apiKey, alertIds.test_flakiness!);
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(events.every((e) => e.metadata.name === "lonely_flake")).toBe(true);
  });

  it("one of two tests alternating is flaky (half the suite failing is not most of it)", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(
      uploadToken,
      times(30, (i) => ({ cases: [...stable(1), { name: "half_flake", status: (i % 2 ? "failed" : "passed") as Status }] })),
    );
    expect((await eventsOf(apiKey, alertIds.test_flakiness!)).length).toBeGreaterThanOrEqual(1);
  });

  it("a lone test passing and failing on the same commit is flaky", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(uploadToken, [
      { cases: [{ name: "alone", status: "passed" }], commit: "ddddeeeeffff" },
      { cases: [{ name: "alone", status: "failed" }], commit: "ddddeeeeffff" },
    ]);
    expect(await eventsOf(apiKey, alertIds.test_flakiness!)).toHaveLength(1);
  });

  it("a 10-test suite going from 0 to 20 % skipped for 5 runs is creep; a 10-test suite with one skip is not", async () => {
    const creeping = await newProject();
    await uploadRuns(creeping.uploadToken, [
      ...times(20, () => ({ cases: stable(10) })),
      ...times(5, () => ({ cases: [...stable(8), ...times(2, (i) => ({ name: `skipped_${i}`, status: "skipped" as const }))] })),
    ]);
    const events = await eventsOf(creeping.apiKey, creeping.alertIds.skipped_test_count_creep!);
    expect(events).toHaveLength(1);
    expect(events[0]!.metadata).toMatchObject({
      skipped_count: 2,
      total_tests: 10,
      thresholds: expect.objectContaining({ min_increase: 2 }),
    });

    const steady = await newProject();
    await uploadRuns(steady.uploadToken, [
      ...times(20, () => ({ cases: stable(10) })),
      ...times(8, () => ({ cases: [...stable(9), { name: "one_skip", status: "skipped" as const }] })),
    ]);
    expect(await eventsOf(steady.apiKey, steady.alertIds.skipped_test_count_creep!)).toEqual([]);
  });

  it("a lone test that breaks and stays broken is not flaky", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(
      uploadToken,
      times(40, (i) => ({ cases: [{ name: "broke_alone", status: (i < 15 ? "passed" : "failed") as Status }] })),
    );
    expect(await eventsOf(apiKey, alertIds.test_flakiness!)).toEqual([]);
  });
});

describe("the project's default branch (admin check settings)", () => {
  it("runs on the configured branch feed the windows; without it, runs on develop do not", async () => {
    const alternating = times(30, (i) => ({
      branch: "develop",
      cases: [...stable(10), { name: "develop_flake", status: (i % 2 ? "failed" : "passed") as Status }],
    }));

    const unconfigured = await newProject();
    await uploadRuns(unconfigured.uploadToken, alternating);
    expect(await eventsOf(unconfigured.apiKey, unconfigured.alertIds.test_flakiness!)).toEqual([]);

    const { organization, apiKey } = await h.newOrganization();
    const created = await h.admin("POST", `/organizations/${organization.id}/projects`, {
      name: "Develop first",
      default_branch: " develop ",
    });
    expect(created.status).toBe(201);
    const projectId = created.body.project.id as string;
    const alerts = (await h.get(`/api/v1/alerts?project_id=${projectId}&status=all`, apiKey)).body.data as {
      id: string;
      alert_type: string;
    }[];
    const flakinessAlert = alerts.find((a) => a.alert_type === "test_flakiness")!.id;
    await uploadRuns(created.body.upload_token, alternating);
    const events = await eventsOf(apiKey, flakinessAlert);
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(events[0]!.metadata.name).toBe("develop_flake");
  });

  it("PATCH /admin/v1/projects/:id/check_settings sets or clears it; bad values are 422, unknown projects 404", async () => {
    const { project } = await newProject();
    const set = await h.admin("PATCH", `/projects/${project.id}/check_settings`, { default_branch: "trunk" });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ project_id: project.id, default_branch: "trunk", auto_quarantine_days: null, retention_days: null });
    expect((await h.admin("PATCH", `/projects/${project.id}/check_settings`, { default_branch: "" })).body.default_branch).toBeNull();
    expect((await h.admin("PATCH", `/projects/${project.id}/check_settings`, { default_branch: null })).body.default_branch).toBeNull();
    const bad = await h.admin("PATCH", `/projects/${project.id}/check_settings`, { default_branch: 7 });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details[0].field).toBe("default_branch");
    expect((await h.admin("PATCH", `/projects/${project.id}/check_settings`, {})).status).toBe(422);
    expect((await h.admin("PATCH", `/projects/00000000-0000-4000-8000-000000000000/check_settings`, { default_branch: "x" })).status).toBe(
      404,
    );
  });
});

describe("event metadata size", () => {
  it("is capped at 16 KiB of UTF-8, non-ASCII names included: the longest lists are cut and the cut is marked", () => {
    const names = Array.from({ length: 400 }, (_, i) => `テスト_${i}_${"名".repeat(20)}`);
    const bounded = boundedMetadata({ subject: "run", newly_skipped_tests: names, detector_version: "x/1" });
    const bytes = new TextEncoder().encode(JSON.stringify(bounded)).length;
    expect(bytes).toBeLessThanOrEqual(16 * 1024);
    expect(bounded.newly_skipped_tests_truncated).toBe(true);
    expect((bounded.newly_skipped_tests as string[])[0]).toBe(names[0]);
    // Under the cap nothing changes.
    const small = { subject: "run", newly_skipped_tests: names.slice(0, 3) };
    expect(boundedMetadata(small)).toEqual(small);
  });
});

describe("must not trip", () => {
  it("a test that breaks and stays broken is not flaky", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(
      uploadToken,
      times(40, (i) => ({ cases: [...stable(10), { name: "broke_for_good", status: (i < 15 ? "passed" : "failed") as Status }] })),
    );
    expect(await eventsOf(apiKey, alertIds.test_flakiness!)).toEqual([]);
  });

  it("a single slow outlier is not a regression", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(
      uploadToken,
      times(40, (i) => ({ cases: stable(5), seconds: i === 32 ? 120 : 60 + (i % 3) * 0.4 })),
    );
    expect(await eventsOf(apiKey, alertIds.performance_regression!)).toEqual([]);
  });

  it("one skipped test is not creep", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(uploadToken, [
      ...times(20, () => ({ cases: stable(100) })),
      ...times(8, () => ({ cases: [...stable(99), { name: "one_skip", status: "skipped" as const }] })),
    ]);
    expect(await eventsOf(apiKey, alertIds.skipped_test_count_creep!)).toEqual([]);
  });
});

describe("alert states", () => {
  it("a disabled alert is not checked and records nothing; its history stays", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    const alertId = alertIds.test_flakiness!;
    await uploadRuns(uploadToken, [
      { cases: [...stable(5), { name: "t", status: "passed" }], commit: "c1c1c1c1" },
      { cases: [...stable(5), { name: "t", status: "failed" }], commit: "c1c1c1c1" },
    ]);
    expect(await eventsOf(apiKey, alertId)).toHaveLength(1);
    expect((await h.post(`/api/v1/alerts/${alertId}/disable`, apiKey)).status).toBe(200);
    await uploadRuns(uploadToken, [
      { cases: [...stable(5), { name: "u", status: "passed" }], commit: "d2d2d2d2" },
      { cases: [...stable(5), { name: "u", status: "failed" }], commit: "d2d2d2d2" },
    ]);
    expect(await eventsOf(apiKey, alertId)).toHaveLength(1);
    expect((await h.get(`/api/v1/alerts/${alertId}`, apiKey)).body.events_count).toBe(1);
  });

  it("a snoozed alert keeps checking and recording events; nothing is notified", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    const alertId = alertIds.test_flakiness!;
    expect((await h.post(`/api/v1/alerts/${alertId}/snooze`, apiKey, { duration: "1w" })).status).toBe(200);
    await uploadRuns(uploadToken, [
      { cases: [...stable(5), { name: "t", status: "passed" }], commit: "e3e3e3e3" },
      { cases: [...stable(5), { name: "t", status: "failed" }], commit: "e3e3e3e3" },
    ]);
    const alert = (await h.get(`/api/v1/alerts/${alertId}`, apiKey)).body;
    expect(alert).toMatchObject({ snoozed: true, events_count: 1, last_notified_at: null });
    expect(await eventsOf(apiKey, alertId)).toHaveLength(1);
  });

  it("a pass on retry within one run is flaky evidence", async () => {
    const { apiKey, uploadToken, alertIds } = await newProject();
    await uploadRuns(uploadToken, [{ cases: [...stable(3), { name: "retried", status: "passed", retriedFrom: "failed" }] }]);
    const events = await eventsOf(apiKey, alertIds.test_flakiness!);
    expect(events).toHaveLength(1);
    expect(events[0]!.metadata).toMatchObject({ name: "retried", rule: "passed_on_retry" });
  });
});

describe("the checks' per-test state lives in the tests' rows", () => {
  const VERSIONS = {
    test_flakiness: flakinessCheck.version,
    failure_rate_spike: failureRateSpikeCheck.version,
    performance_regression: performanceRegressionCheck.version,
  };
  const OLD_SUITE = "checkout";
  const OLD_CLASS = "com.shop.CheckoutTest";

  async function testRows(projectId: string) {
    const rows = await rowsOf<{ id: string; name: string; check_state: Record<string, unknown> }>(
      h.db.execute(
        sql`select t.id, t.name, coalesce(e.state, '{}'::jsonb) as check_state from tests t left join test_check_states e on e.test_id = t.id where t.project_id = ${projectId} order by t.name`,
      ),
    );
    return new Map(rows.map((row) => [row.name, row]));
  }

  async function projectStates(projectId: string) {
    const rows = await rowsOf<{ alert_type: string; state: Record<string, unknown> }>(
      h.db.execute(sql`select alert_type, state from alert_check_states where project_id = ${projectId}`),
    );
    return new Map(rows.map((row) => [row.alert_type, row.state]));
  }

  const alternating = (count: number, withAbsent: boolean) =>
    times(count, (i) => ({
      cases: [
        ...stable(6),
        { name: "flaky_x", status: (i % 2 ? "failed" : "passed") as Status },
        ...(withAbsent ? [{ name: "absent_x", status: "passed" as Status }] : []),
      ],
    }));

  it("each test's row holds its entries, the project's state none; a run writes its own tests' rows only", async () => {
    const { project, uploadToken } = await newProject();
    await uploadRuns(uploadToken, alternating(4, true));
    const before = await testRows(project.id);
    expect(before.size).toBe(8);
    for (const row of before.values()) expect(Object.keys(row.check_state).sort()).toEqual(Object.values(VERSIONS).sort());
    const states = JSON.stringify([...(await projectStates(project.id)).values()]);
    for (const row of before.values()) expect(states).not.toContain(row.id);

    await uploadRuns(uploadToken, alternating(1, false));
    const after = await testRows(project.id);
    expect(after.get("absent_x")!.check_state).toEqual(before.get("absent_x")!.check_state);
    expect(after.get("flaky_x")!.check_state).not.toEqual(before.get("flaky_x")!.check_state);
  });

  it("converts a state stored in one document per check (old keys) at the project's next run, every test's entry included", async () => {
    const control = await newProject();
    await uploadRuns(control.uploadToken, alternating(19, true));
    const converted = await newProject();
    await uploadRuns(converted.uploadToken, alternating(19, true));

    // Turn the second project's state back into what the service stored before: one document per
    // check holding every test's entry under its old key (suite, classname and name).
    const rows = await testRows(converted.project.id);
    const oldKey = new Map([...rows.values()].map((row) => [row.id, legacyTestKey(OLD_SUITE, OLD_CLASS, row.name)]));
    const entries = (version: string) =>
      Object.fromEntries(
        [...rows.values()].flatMap((row) =>
          row.check_state[version] === undefined ? [] : [[oldKey.get(row.id)!, row.check_state[version]]],
        ),
      );
    const states = await projectStates(converted.project.id);
    const spikeEntries = entries(VERSIONS.failure_rate_spike) as Record<string, { l?: number; f?: number; t?: number }>;
    const spikeMap = (field: "l" | "f" | "t") =>
      Object.fromEntries(Object.entries(spikeEntries).flatMap(([key, entry]) => (entry[field] === undefined ? [] : [[key, entry[field]]])));
    const perf = states.get("performance_regression") as { tests: { k: string }[]; pool: { k: string }[] };
    const skipped = states.get("skipped_test_count_creep") as { keys: string[] | null };
    const legacy: Record<string, unknown> = {
      test_flakiness: { ...states.get("test_flakiness"), v: 1, tests: entries(VERSIONS.test_flakiness) },
      failure_rate_spike: { ...states.get("failure_rate_spike"), v: 1, last: spikeMap("l"), lf: spikeMap("f"), tf: spikeMap("t") },
      performance_regression: {
        ...perf,
        v: 2,
        o: entries(VERSIONS.performance_regression),
        tests: perf.tests.map((series) => ({ ...series, k: oldKey.get(series.k)! })),
        pool: perf.pool.map((entry) => ({ ...entry, k: oldKey.get(entry.k)! })),
      },
      skipped_test_count_creep: { ...skipped, v: 1, keys: skipped.keys?.map((key) => oldKey.get(key)!) ?? null },
    };
    for (const [alertType, state] of Object.entries(legacy)) {
      await h.db.execute(
        sql`update alert_check_states set state = ${JSON.stringify(state)}::jsonb where project_id = ${converted.project.id} and alert_type = ${alertType}`,
      );
    }
    await h.db.execute(
      sql`delete from test_check_states where test_id in (select id from tests where project_id = ${converted.project.id})`,
    );

    // Run 20 without absent_x: the alternating test is flagged in both projects alike.
    await uploadRuns(control.uploadToken, alternating(1, false));
    await uploadRuns(converted.uploadToken, alternating(1, false));
    const flagged = async (p: Awaited<ReturnType<typeof newProject>>) =>
      (await eventsOf(p.apiKey, p.alertIds.test_flakiness!)).map((e) => [e.test_run.number, e.metadata.name, e.metadata.rule]);
    expect(await flagged(converted)).toEqual(await flagged(control));
    expect(await flagged(converted)).toEqual([[20, "flaky_x", "history_flips"]]);
    const [event] = await eventsOf(converted.apiKey, converted.alertIds.test_flakiness!);
    expect(event!.metadata.test_id).toBe([...rows.values()].find((row) => row.name === "flaky_x")!.id);

    // Every entry came back, absent_x's too (it was not in the run), and the documents hold no tests.
    const after = await testRows(converted.project.id);
    expect(after.get("absent_x")!.check_state).toEqual(rows.get("absent_x")!.check_state);
    const controlRows = await testRows(control.project.id);
    for (const name of ["flaky_x", "stable_0"]) {
      expect(Object.keys(after.get(name)!.check_state).sort()).toEqual(Object.values(VERSIONS).sort());
      expect(after.get(name)!.check_state[VERSIONS.failure_rate_spike]).toEqual(
        controlRows.get(name)!.check_state[VERSIONS.failure_rate_spike],
      );
    }
    const convertedStates = await projectStates(converted.project.id);
    expect(convertedStates.get("test_flakiness")).toMatchObject({ v: 2 });
    expect(convertedStates.get("test_flakiness")).not.toHaveProperty("tests");
    expect(convertedStates.get("failure_rate_spike")).not.toHaveProperty("last");
    expect(convertedStates.get("performance_regression")).toMatchObject({ v: 3 });
    expect(convertedStates.get("performance_regression")).not.toHaveProperty("o");
    expect((convertedStates.get("skipped_test_count_creep") as { v: number }).v).toBe(2);
  });
});

describe("tests the flakiness check flags are flaky, all of them", () => {
  it("a run that flags more than 50 tests (50 events) makes every one of them flaky", async () => {
    const { project, apiKey, uploadToken, alertIds } = await newProject();
    const shaky = (status: Status) => times(60, (i) => ({ name: `shaky_${i}`, status }));
    // Same commit: all 60 pass, then all 60 fail beside 70 stable tests (under half the run: not an outage).
    await uploadRuns(uploadToken, [
      { cases: [...stable(70), ...shaky("passed")], commit: "cafe00000001" },
      { cases: [...stable(70), ...shaky("failed")], commit: "cafe00000001" },
    ]);
    const events = await eventsOf(apiKey, alertIds.test_flakiness!);
    expect(events).toHaveLength(50);
    expect(events.find((e) => e.metadata.more_flagged_count !== undefined)?.metadata.more_flagged_count).toBe(10);
    const flaky = await h.get(`/api/v1/projects/${project.id}/tests?health=flaky&limit=100`, apiKey);
    expect(flaky.body.data.map((t: { name: string }) => t.name).sort()).toEqual(times(60, (i) => `shaky_${i}`).sort());
    const projectBody = await h.get(`/api/v1/projects/${project.id}`, apiKey);
    expect(projectBody.body.flaky_tests_count).toBe(60);
  });
});
