import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CallResult, type Harness, WEB_APP_URL, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const UNKNOWN_UUID = "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8";
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const now = () => h.clock.now().toISOString();

function expectIsoUtc(value: unknown) {
  expect(typeof value).toBe("string");
  expect(value).toMatch(ISO_UTC);
  expect(new Date(value as string).toISOString()).toBe(value);
}

function expectError(res: CallResult, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe("string");
}

async function events(key: string, alertId: string, query = "") {
  const res = await h.get(`/api/v1/alerts/${alertId}/events${query ? `?${query}` : ""}`, key);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function setup() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, alertIds } = await h.newProject(organization.id);
  return { organization, apiKey, project, alertIds };
}

describe("GET /alerts/:alert_id/events", () => {
  it("an alert without events returns an empty page", async () => {
    const { apiKey, alertIds } = await setup();
    expect(await events(apiKey, alertIds.test_flakiness!)).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
  });

  it("returns each event with id, alert_id, metadata, triggered_at and the full test run embedded", async () => {
    const { apiKey, project, alertIds } = await setup();
    const alertId = alertIds.failure_rate_spike!;
    const startedAt = new Date(h.clock.now().getTime() - 90_000);
    await h.newRun(project.id); // run #1, so the embedded run is #2
    h.clock.advance(1000);
    const arrivedAt = now();
    const run = await h.newRun(project.id, {
      meta: {
        branch: "main",
        commitSha: "0123456789abcdef0123456789abcdef01234567",
        buildId: "build-42",
        buildUrl: "https://ci.example.test/builds/42",
        tags: ["nightly", "linux"],
        startedAt,
      },
      report: {
        durationMs: 4321,
        suites: [
          {
            name: "unit",
            durationMs: 3000,
            cases: [
              { name: "a", status: "passed", durationMs: 10 },
              { name: "b", status: "passed", durationMs: 10 },
              { name: "c", status: "failed", durationMs: 10, failureMessage: "boom" },
              { name: "d", status: "skipped" },
            ],
            suites: [{ name: "nested", cases: [{ name: "e", status: "errored" }] }],
          },
        ],
      },
    });
    h.clock.advance(2000);
    const triggeredAt = now();
    const metadata = {
      failure_rate: 0.25,
      window: { runs: 20, failed: 5 },
      tests: ["c", "e"],
      note: '<b>escaped</b> & "quoted"',
      nothing: null,
    };
    const event = await h.newEvent(alertId, run.id, metadata);

    const body = await events(apiKey, alertId);
    expect(body.pagination).toEqual({ next_cursor: null, has_more: false });
    expect(body.data).toHaveLength(1);
    const [item] = body.data;
    expect(item).toEqual({
      id: event.id,
      alert_id: alertId,
      metadata,
      triggered_at: triggeredAt,
      test_run: {
        number: 2,
        project_id: project.id,
        status: "processed",
        failure_reason: null,
        result: "tests_errored",
        branch: "main",
        commit_sha: "0123456789abcdef0123456789abcdef01234567",
        base_commit_sha: null,
        build_id: "build-42",
        build_url: "https://ci.example.test/builds/42",
        variant: "",
        tags: ["nightly", "linux"],
        started_at: startedAt.toISOString(),
        created_at: arrivedAt,
        processed_at: arrivedAt,
        duration_ms: 4321,
        tests_count: 5,
        passed_count: 2,
        failed_count: 1,
        errored_count: 1,
        skipped_count: 1,
        quarantined_failures_count: 0,
        run_key: null,
        shard_total: null,
        parts_count: 0,
        completed_at: null,
        passed_on_retry_count: 0,
        failed_attempts_duration_ms: 0,
        verdict_counts: { quarantined: 0, infrastructure: 0, failing_on_base: 0, flaky: 0, new: 2 },
        url: `${WEB_APP_URL}/projects/${project.id}/runs/2`,
      },
    });
    expect(Number.isInteger(item.id)).toBe(true);
    expect(typeof item.id).toBe("number");
    expectIsoUtc(item.triggered_at);
    expectIsoUtc(item.test_run.created_at);
    expectIsoUtc(item.test_run.started_at);
    expectIsoUtc(item.test_run.processed_at);
  });

  it("embeds a run with no metadata with nulls and an empty tags array", async () => {
    const { apiKey, project, alertIds } = await setup();
    const alertId = alertIds.performance_regression!;
    const run = await h.newRun(project.id, {
      report: { suites: [{ name: "s", durationMs: 120, cases: [{ name: "p", status: "passed" }] }] },
    });
    await h.newEvent(alertId, run.id, {});
    const [item] = (await events(apiKey, alertId)).data;
    expect(item.metadata).toEqual({});
    expect(item.test_run).toMatchObject({
      number: 1,
      status: "processed",
      result: "tests_passed",
      branch: null,
      commit_sha: null,
      build_id: null,
      build_url: null,
      tags: [],
      started_at: null,
      duration_ms: 120,
      tests_count: 1,
      passed_count: 1,
      failed_count: 0,
      errored_count: 0,
      skipped_count: 0,
    });
  });

  it("embeds a run that failed to process with its reason, no result and zero counts", async () => {
    const { apiKey, project, alertIds } = await setup();
    const alertId = alertIds.failure_rate_spike!;
    const arrivedAt = now();
    const run = await h.newRun(project.id, { outcome: "failed" });
    await h.newEvent(alertId, run.id);
    const [item] = (await events(apiKey, alertId)).data;
    expect(item.test_run).toMatchObject({
      number: 1,
      status: "failed",
      failure_reason: "could not parse the report",
      result: null,
      created_at: arrivedAt,
      processed_at: arrivedAt,
      tests_count: 0,
      passed_count: 0,
      failed_count: 0,
      errored_count: 0,
      skipped_count: 0,
    });
  });

  it("embeds a pending run with processed_at and result null", async () => {
    const { apiKey, project, alertIds } = await setup();
    const alertId = alertIds.failure_rate_spike!;
    const run = await h.newRun(project.id, { outcome: "pending" });
    await h.newEvent(alertId, run.id);
    const [item] = (await events(apiKey, alertId)).data;
    expect(item.test_run).toMatchObject({ status: "pending", result: null, processed_at: null, failure_reason: null, duration_ms: null });
  });

  it("returns metadata exactly as stored (nested values, unicode, markup untouched)", async () => {
    const { apiKey, project, alertIds } = await setup();
    const alertId = alertIds.test_flakiness!;
    const run = await h.newRun(project.id);
    const metadata = {
      test: { name: "<script>alert(1)</script>", file: "spec/ünïcødé_test.rb", line: 12 },
      flip_rate: 0.3333333333333333,
      attempts: [{ status: "failed" }, { status: "passed" }],
      emoji: "🧪",
      big: 9007199254740991,
      negative: -1.5,
      flag: false,
      empty: {},
      list: [],
    };
    await h.newEvent(alertId, run.id, metadata);
    const res = await h.get(`/api/v1/alerts/${alertId}/events`, apiKey);
    expect(res.body.data[0].metadata).toEqual(metadata);
  });

  it("lists events newest first", async () => {
    const { apiKey, project, alertIds } = await setup();
    const alertId = alertIds.test_flakiness!;
    const created: { id: number; at: string; number: number }[] = [];
    for (let i = 0; i < 4; i++) {
      h.clock.advance(60_000);
      const run = await h.newRun(project.id);
      const event = await h.newEvent(alertId, run.id, { i });
      created.push({ id: event.id, at: now(), number: run.number });
    }
    const body = await events(apiKey, alertId);
    expect(body.data.map((e: any) => e.id)).toEqual(created.map((c) => c.id).reverse());
    expect(body.data.map((e: any) => e.triggered_at)).toEqual(created.map((c) => c.at).reverse());
    expect(body.data.map((e: any) => e.metadata.i)).toEqual([3, 2, 1, 0]);
    expect(body.data.map((e: any) => e.test_run.number)).toEqual(created.map((c) => c.number).reverse());
  });

  it("orders events recorded at the same instant by id, newest first", async () => {
    const { apiKey, project, alertIds } = await setup();
    const alertId = alertIds.test_flakiness!;
    const run = await h.newRun(project.id);
    const a = await h.newEvent(alertId, run.id, { n: 1 });
    const b = await h.newEvent(alertId, run.id, { n: 2 });
    const c = await h.newEvent(alertId, run.id, { n: 3 });
    const body = await events(apiKey, alertId);
    expect(body.data.map((e: any) => e.id)).toEqual([c.id, b.id, a.id]);
    // Several events may point at the same run.
    expect(new Set(body.data.map((e: any) => e.test_run.number))).toEqual(new Set([run.number]));
  });

  it("lists only the requested alert's events", async () => {
    const { apiKey, project, alertIds } = await setup();
    const run = await h.newRun(project.id);
    const flaky = await h.newEvent(alertIds.test_flakiness!, run.id);
    const slow = await h.newEvent(alertIds.performance_regression!, run.id);
    const flakyBody = await events(apiKey, alertIds.test_flakiness!);
    expect(flakyBody.data.map((e: any) => e.id)).toEqual([flaky.id]);
    expect(flakyBody.data[0].alert_id).toBe(alertIds.test_flakiness);
    const slowBody = await events(apiKey, alertIds.performance_regression!);
    expect(slowBody.data.map((e: any) => e.id)).toEqual([slow.id]);
    expect((await events(apiKey, alertIds.failure_rate_spike!)).data).toEqual([]);
  });

  it("events_count on the alert counts its events", async () => {
    const { apiKey, project, alertIds } = await setup();
    const alertId = alertIds.skipped_test_count_creep!;
    const run = await h.newRun(project.id);
    for (let i = 1; i <= 3; i++) {
      h.clock.advance(1000);
      await h.newEvent(alertId, run.id, { i });
      const alert = await h.get(`/api/v1/alerts/${alertId}`, apiKey);
      expect(alert.body.events_count).toBe(i);
    }
    expect((await events(apiKey, alertId)).data).toHaveLength(3);
    // Other alerts of the project are not counted.
    expect((await h.get(`/api/v1/alerts/${alertIds.test_flakiness}`, apiKey)).body.events_count).toBe(0);
    const listed = await h.get(`/api/v1/alerts?alert_type=skipped_test_count_creep`, apiKey);
    expect(listed.body.data[0].events_count).toBe(3);
  });

  it("event ids do not restart per alert: distinct and increasing in recording order", async () => {
    const { organization, apiKey, project, alertIds } = await setup();
    const other = await h.newProject(organization.id, "other");
    const run = await h.newRun(project.id);
    const otherRun = await h.newRun(other.project.id);
    const recorded: { alertId: string; id: number }[] = [];
    const order = [
      alertIds.test_flakiness!,
      alertIds.performance_regression!,
      other.alertIds.test_flakiness!,
      alertIds.test_flakiness!,
      alertIds.performance_regression!,
      other.alertIds.test_flakiness!,
    ];
    for (const alertId of order) {
      h.clock.advance(1000);
      const event = await h.newEvent(alertId, alertId === other.alertIds.test_flakiness ? otherRun.id : run.id);
      recorded.push({ alertId, id: event.id });
    }
    const seen: number[] = [];
    for (const alertId of new Set(order)) {
      const body = await events(apiKey, alertId);
      const expected = recorded
        .filter((r) => r.alertId === alertId)
        .map((r) => r.id)
        .reverse();
      expect(body.data.map((e: any) => e.id)).toEqual(expected);
      seen.push(...body.data.map((e: any) => e.id));
    }
    expect(new Set(seen).size).toBe(order.length);
    const ids = recorded.map((r) => r.id);
    for (let i = 1; i < ids.length; i++) expect(ids[i]!).toBeGreaterThan(ids[i - 1]!);
    // The first events of two alerts do not share a number.
    const firstOfA = recorded.find((r) => r.alertId === alertIds.test_flakiness)!.id;
    const firstOfB = recorded.find((r) => r.alertId === alertIds.performance_regression)!.id;
    expect(firstOfA).not.toBe(firstOfB);
  });

  it("events of a disabled alert are still listed, and a snoozed alert's too", async () => {
    const { apiKey, project, alertIds } = await setup();
    const alertId = alertIds.test_flakiness!;
    const run = await h.newRun(project.id);
    await h.newEvent(alertId, run.id, { n: 1 });
    h.clock.advance(1000);
    await h.newEvent(alertId, run.id, { n: 2 });
    const before = await events(apiKey, alertId);
    expect((await h.post(`/api/v1/alerts/${alertId}/disable`, apiKey)).status).toBe(200);
    expect(await events(apiKey, alertId)).toEqual(before);
    expect((await h.post(`/api/v1/alerts/${alertId}/snooze`, apiKey, { duration: "1w" })).status).toBe(200);
    expect(await events(apiKey, alertId)).toEqual(before);
    expect((await h.get(`/api/v1/alerts/${alertId}`, apiKey)).body.events_count).toBe(2);
  });

  describe("pagination", () => {
    it("pages with limit: {data, pagination:{next_cursor, has_more}}, without gaps or duplicates", async () => {
      const { apiKey, project, alertIds } = await setup();
      const alertId = alertIds.test_flakiness!;
      const run = await h.newRun(project.id);
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) {
        h.clock.advance(1000);
        ids.push((await h.newEvent(alertId, run.id, { i })).id);
      }
      const newestFirst = [...ids].reverse();

      const first = await events(apiKey, alertId, "limit=2");
      expect(Object.keys(first).sort()).toEqual(["data", "pagination"]);
      expect(first.data.map((e: any) => e.id)).toEqual(newestFirst.slice(0, 2));
      expect(first.pagination.has_more).toBe(true);
      expect(typeof first.pagination.next_cursor).toBe("string");

      const second = await events(apiKey, alertId, `limit=2&cursor=${encodeURIComponent(first.pagination.next_cursor)}`);
      expect(second.data.map((e: any) => e.id)).toEqual(newestFirst.slice(2, 4));
      expect(second.pagination.has_more).toBe(true);

      const third = await events(apiKey, alertId, `limit=2&cursor=${encodeURIComponent(second.pagination.next_cursor)}`);
      expect(third.data.map((e: any) => e.id)).toEqual(newestFirst.slice(4));
      expect(third.pagination).toEqual({ next_cursor: null, has_more: false });

      const all = await collectAll(h, `/api/v1/alerts/${alertId}/events`, apiKey, 3);
      expect(all.pages).toBe(2);
      expect(all.items.map((e: any) => e.id)).toEqual(newestFirst);
    });

    it("a page exactly the size of the remainder ends the listing", async () => {
      const { apiKey, project, alertIds } = await setup();
      const alertId = alertIds.test_flakiness!;
      const run = await h.newRun(project.id);
      for (let i = 0; i < 3; i++) {
        h.clock.advance(1000);
        await h.newEvent(alertId, run.id);
      }
      const page = await events(apiKey, alertId, "limit=3");
      expect(page.data).toHaveLength(3);
      expect(page.pagination).toEqual({ next_cursor: null, has_more: false });
    });

    it("pages through events recorded at the same instant without losing any", async () => {
      const { apiKey, project, alertIds } = await setup();
      const alertId = alertIds.test_flakiness!;
      const run = await h.newRun(project.id);
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) ids.push((await h.newEvent(alertId, run.id)).id);
      const all = await collectAll(h, `/api/v1/alerts/${alertId}/events`, apiKey, 2);
      expect(all.items.map((e: any) => e.id)).toEqual([...ids].reverse());
    });

    it("limit above 100 is capped, below 1 is a 400", async () => {
      const { apiKey, alertIds } = await setup();
      const alertId = alertIds.test_flakiness!;
      expect((await h.get(`/api/v1/alerts/${alertId}/events?limit=1000`, apiKey)).status).toBe(200);
      expectError(await h.get(`/api/v1/alerts/${alertId}/events?limit=0`, apiKey), 400, "invalid_request");
    });

    it("a cursor from another alert's events is a 400", async () => {
      const { apiKey, project, alertIds } = await setup();
      const run = await h.newRun(project.id);
      for (let i = 0; i < 2; i++) {
        h.clock.advance(1000);
        await h.newEvent(alertIds.test_flakiness!, run.id);
        await h.newEvent(alertIds.performance_regression!, run.id);
      }
      const first = await events(apiKey, alertIds.test_flakiness!, "limit=1");
      const cursor = encodeURIComponent(first.pagination.next_cursor);
      expectError(
        await h.get(`/api/v1/alerts/${alertIds.performance_regression}/events?limit=1&cursor=${cursor}`, apiKey),
        400,
        "invalid_request",
      );
      expectError(await h.get(`/api/v1/alerts/${alertIds.test_flakiness}/events?cursor=not-a-cursor`, apiKey), 400, "invalid_request");
    });
  });

  describe("errors", () => {
    it("an unknown alert → 404 not_found", async () => {
      const { apiKey } = await setup();
      expectError(await h.get(`/api/v1/alerts/${UNKNOWN_UUID}/events`, apiKey), 404, "not_found");
    });

    for (const id of ["abc", "1", "3c2b1a098f7e4d6ca5b4c3d2e1f0a9b8"]) {
      it(`a malformed alert id ${JSON.stringify(id)} → 404 not_found`, async () => {
        const { apiKey } = await setup();
        expectError(await h.get(`/api/v1/alerts/${id}/events`, apiKey), 404, "not_found");
      });
    }

    it("another organization's alert → 404 not_found, and its events are not revealed", async () => {
      const owner = await setup();
      const alertId = owner.alertIds.test_flakiness!;
      const run = await h.newRun(owner.project.id);
      await h.newEvent(alertId, run.id, { secret: "owner-only-metadata" });
      const stranger = await h.newOrganization("stranger");
      const res = await h.get(`/api/v1/alerts/${alertId}/events`, stranger.apiKey);
      expectError(res, 404, "not_found");
      expect(res.text).not.toContain("owner-only-metadata");
      const missing = await h.get(`/api/v1/alerts/${UNKNOWN_UUID}/events`, stranger.apiKey);
      expect(res.body).toEqual(missing.body);
      // The owner still sees it.
      expect((await events(owner.apiKey, alertId)).data).toHaveLength(1);
    });

    it("no key → 401 unauthorized", async () => {
      const { alertIds } = await setup();
      expectError(await h.get(`/api/v1/alerts/${alertIds.test_flakiness}/events`, null), 401, "unauthorized");
    });
  });
});
