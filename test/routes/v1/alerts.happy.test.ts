import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, WEB_APP_URL, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const ALERT_TYPES = ["performance_regression", "test_flakiness", "skipped_test_count_creep", "failure_rate_spike"] as const;
const DURATIONS: Record<string, number> = { "1h": 3_600_000, "4h": 4 * 3_600_000, "24h": 24 * 3_600_000, "1w": 7 * 24 * 3_600_000 };
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const now = () => h.clock.now().toISOString();
const inMs = (ms: number) => new Date(h.clock.now().getTime() + ms).toISOString();

function expectIsoUtc(value: unknown) {
  expect(typeof value).toBe("string");
  expect(value).toMatch(ISO_UTC);
  expect(new Date(value as string).toISOString()).toBe(value);
}

async function getAlert(key: string, id: string) {
  const res = await h.get(`/api/v1/alerts/${id}`, key);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function listAlerts(key: string, query = "") {
  const res = await h.get(`/api/v1/alerts?limit=100${query ? `&${query}` : ""}`, key);
  expect(res.status, res.text).toBe(200);
  expect(res.body.pagination).toEqual({ next_cursor: null, has_more: false });
  return res.body.data as any[];
}

const ids = (alerts: any[]) => alerts.map((a) => a.id);
const sorted = (values: string[]) => [...values].sort();

async function action(key: string, id: string, name: "snooze" | "unsnooze" | "enable" | "disable", body?: unknown) {
  const res = await h.post(`/api/v1/alerts/${id}/${name}`, key, body);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** An organization with one project, its key, and its alert ids by type. */
async function setup() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, alertIds } = await h.newProject(organization.id);
  return { organization, apiKey, project, alertIds };
}

describe("alerts of a new project", () => {
  it("has exactly four alerts, one per type, active, not snoozed, with no history", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const createdAt = now();
    const { project } = await h.newProject(organization.id);
    const alerts = await listAlerts(apiKey, "status=all");
    expect(alerts).toHaveLength(4);
    expect(sorted(alerts.map((a) => a.alert_type))).toEqual(sorted([...ALERT_TYPES]));
    for (const alert of alerts) {
      expect(alert).toEqual({
        id: alert.id,
        project_id: project.id,
        alert_type: alert.alert_type,
        name: alert.name,
        active: true,
        snoozed: false,
        snoozed_until: null,
        last_notified_at: null,
        events_count: 0,
        created_at: createdAt,
        updated_at: createdAt,
        url: `${WEB_APP_URL}/alerts/${alert.id}`,
      });
      expect(alert.id).toMatch(UUID);
      expect(typeof alert.name).toBe("string");
      expect(alert.name.trim().length).toBeGreaterThan(0);
      expectIsoUtc(alert.created_at);
      expectIsoUtc(alert.updated_at);
    }
    expect(new Set(alerts.map((a) => a.id)).size).toBe(4);
    // A human-readable name per type.
    expect(new Set(alerts.map((a) => a.name)).size).toBe(4);
    // The default listing (active, not snoozed) shows all four.
    expect(sorted(ids(await listAlerts(apiKey)))).toEqual(sorted(ids(alerts)));
  });

  it("names are per type: the same type has the same name in every project", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const a = await h.newProject(organization.id, "a");
    const b = await h.newProject(organization.id, "b");
    for (const type of ALERT_TYPES) {
      const first = await getAlert(apiKey, a.alertIds[type]!);
      const second = await getAlert(apiKey, b.alertIds[type]!);
      expect(first.alert_type).toBe(type);
      expect(second.alert_type).toBe(type);
      expect(first.name).toBe(second.name);
    }
  });
});

describe("GET /alerts/:id", () => {
  it("returns the alert object, identical to its list item", async () => {
    const { apiKey, project, alertIds } = await setup();
    const list = await listAlerts(apiKey, "status=all");
    for (const type of ALERT_TYPES) {
      const alert = await getAlert(apiKey, alertIds[type]!);
      expect(alert.alert_type).toBe(type);
      expect(alert.project_id).toBe(project.id);
      expect(alert).toEqual(list.find((a) => a.id === alert.id));
    }
  });
});

describe("GET /alerts", () => {
  it("lists alerts across all of the organization's projects, newest first", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const older = await h.newProject(organization.id, "older");
    h.clock.advance(5000);
    const middle = await h.newProject(organization.id, "middle");
    h.clock.advance(5000);
    const newer = await h.newProject(organization.id, "newer");
    const alerts = await listAlerts(apiKey);
    expect(alerts).toHaveLength(12);
    expect(alerts.slice(0, 4).every((a) => a.project_id === newer.project.id)).toBe(true);
    expect(alerts.slice(4, 8).every((a) => a.project_id === middle.project.id)).toBe(true);
    expect(alerts.slice(8).every((a) => a.project_id === older.project.id)).toBe(true);
    const times = alerts.map((a) => Date.parse(a.created_at));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
    expect(sorted(ids(alerts))).toEqual(
      sorted([...Object.values(older.alertIds), ...Object.values(middle.alertIds), ...Object.values(newer.alertIds)]),
    );
  });

  it("returns only the caller's organization's alerts", async () => {
    const mine = await h.newOrganization("mine");
    const other = await h.newOrganization("other");
    const myProject = await h.newProject(mine.organization.id);
    const theirProject = await h.newProject(other.organization.id);
    for (const status of ["active", "snoozed", "inactive", "all"]) {
      const listed = await listAlerts(mine.apiKey, `status=${status}`);
      expect(listed.every((a) => a.project_id === myProject.project.id)).toBe(true);
    }
    expect(sorted(ids(await listAlerts(mine.apiKey, "status=all")))).toEqual(sorted(Object.values(myProject.alertIds)));
    expect(sorted(ids(await listAlerts(other.apiKey, "status=all")))).toEqual(sorted(Object.values(theirProject.alertIds)));
  });

  it("returns an empty list for an organization without projects", async () => {
    const { apiKey } = await h.newOrganization();
    const res = await h.get("/api/v1/alerts", apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
  });

  it("pages with limit and cursor in the same order as one page", async () => {
    const { organization, apiKey } = await h.newOrganization();
    for (let i = 0; i < 3; i++) {
      await h.newProject(organization.id, `p${i}`);
      h.clock.advance(1000);
    }
    const whole = await listAlerts(apiKey, "status=all");
    const paged = await collectAll(h, "/api/v1/alerts?status=all", apiKey, 5);
    expect(paged.pages).toBe(3);
    expect(ids(paged.items)).toEqual(ids(whole));
    const first = await h.get("/api/v1/alerts?status=all&limit=5", apiKey);
    expect(first.body.data).toHaveLength(5);
    expect(first.body.pagination.has_more).toBe(true);
    expect(typeof first.body.pagination.next_cursor).toBe("string");
  });

  describe("status filter", () => {
    /**
     * One alert in each state: A active and not snoozed, S active and snoozed,
     * I inactive, IS inactive and snoozed, plus E active with an expired snooze.
     */
    async function stateFixture() {
      const { organization, apiKey } = await h.newOrganization();
      const p1 = await h.newProject(organization.id, "p1");
      const p2 = await h.newProject(organization.id, "p2");
      const A = p1.alertIds.performance_regression!;
      const S = p1.alertIds.test_flakiness!;
      const I = p1.alertIds.skipped_test_count_creep!;
      const IS = p1.alertIds.failure_rate_spike!;
      const E = p2.alertIds.performance_regression!;
      const untouched = [p2.alertIds.test_flakiness!, p2.alertIds.skipped_test_count_creep!, p2.alertIds.failure_rate_spike!];
      await action(apiKey, E, "snooze", { duration: "1h" });
      h.clock.advance(3_600_000 + 1);
      await action(apiKey, S, "snooze", { duration: "24h" });
      await action(apiKey, I, "disable");
      await action(apiKey, IS, "disable");
      await action(apiKey, IS, "snooze", { duration: "1w" });
      return { apiKey, p1, p2, A, S, I, IS, E, untouched };
    }

    it("default = active and not currently snoozed (an expired snooze counts as not snoozed)", async () => {
      const { apiKey, A, E, untouched } = await stateFixture();
      expect(sorted(ids(await listAlerts(apiKey)))).toEqual(sorted([A, E, ...untouched]));
    });

    it("status=active is the same as the default", async () => {
      const { apiKey, A, E, untouched } = await stateFixture();
      const explicit = await listAlerts(apiKey, "status=active");
      expect(sorted(ids(explicit))).toEqual(sorted([A, E, ...untouched]));
      expect(explicit).toEqual(await listAlerts(apiKey));
    });

    it("status=snoozed = active and snoozed only", async () => {
      const { apiKey, S } = await stateFixture();
      const listed = await listAlerts(apiKey, "status=snoozed");
      expect(ids(listed)).toEqual([S]);
      expect(listed[0]).toMatchObject({ active: true, snoozed: true });
    });

    it("status=inactive = not active, snoozed or not", async () => {
      const { apiKey, I, IS } = await stateFixture();
      const listed = await listAlerts(apiKey, "status=inactive");
      expect(sorted(ids(listed))).toEqual(sorted([I, IS]));
      expect(listed.every((a) => a.active === false)).toBe(true);
      expect(listed.find((a) => a.id === IS)).toMatchObject({ snoozed: true });
      expect(listed.find((a) => a.id === I)).toMatchObject({ snoozed: false, snoozed_until: null });
    });

    it("status=all = every alert", async () => {
      const { apiKey, p1, p2 } = await stateFixture();
      expect(sorted(ids(await listAlerts(apiKey, "status=all")))).toEqual(
        sorted([...Object.values(p1.alertIds), ...Object.values(p2.alertIds)]),
      );
    });

    it("the states partition the alerts: active + snoozed + inactive = all, without overlap", async () => {
      const { apiKey } = await stateFixture();
      const active = ids(await listAlerts(apiKey, "status=active"));
      const snoozed = ids(await listAlerts(apiKey, "status=snoozed"));
      const inactive = ids(await listAlerts(apiKey, "status=inactive"));
      const all = ids(await listAlerts(apiKey, "status=all"));
      expect(sorted([...active, ...snoozed, ...inactive])).toEqual(sorted(all));
      expect(new Set([...active, ...snoozed, ...inactive]).size).toBe(all.length);
    });

    it("each listed alert reads the same as GET /alerts/:id", async () => {
      const { apiKey } = await stateFixture();
      for (const alert of await listAlerts(apiKey, "status=all")) expect(alert).toEqual(await getAlert(apiKey, alert.id));
    });

    it("membership moves when the snooze of an active alert expires", async () => {
      const { apiKey, S, IS } = await stateFixture();
      h.clock.advance(24 * 3_600_000 + 1);
      expect(ids(await listAlerts(apiKey, "status=snoozed"))).toEqual([]);
      expect(ids(await listAlerts(apiKey))).toContain(S);
      // The inactive one stays inactive; its snooze still runs for the week.
      expect(ids(await listAlerts(apiKey, "status=inactive"))).toContain(IS);
      expect((await getAlert(apiKey, IS)).snoozed).toBe(true);
    });

    it("combines with project_id and alert_type", async () => {
      const { apiKey, p1, p2, A, I, IS, E } = await stateFixture();
      expect(ids(await listAlerts(apiKey, `project_id=${p1.project.id}`))).toEqual([A]);
      expect(sorted(ids(await listAlerts(apiKey, `project_id=${p1.project.id}&status=inactive`)))).toEqual(sorted([I, IS]));
      expect(ids(await listAlerts(apiKey, `project_id=${p2.project.id}&status=inactive`))).toEqual([]);
      expect(ids(await listAlerts(apiKey, `project_id=${p2.project.id}&status=snoozed`))).toEqual([]);
      expect(sorted(ids(await listAlerts(apiKey, "alert_type=performance_regression")))).toEqual(sorted([A, E]));
      expect(ids(await listAlerts(apiKey, "alert_type=test_flakiness&status=snoozed"))).toEqual([p1.alertIds.test_flakiness]);
      expect(ids(await listAlerts(apiKey, "alert_type=test_flakiness"))).toEqual([p2.alertIds.test_flakiness]);
      expect(ids(await listAlerts(apiKey, `alert_type=failure_rate_spike&status=inactive&project_id=${p1.project.id}`))).toEqual([IS]);
      expect(ids(await listAlerts(apiKey, `alert_type=failure_rate_spike&status=active&project_id=${p1.project.id}`))).toEqual([]);
    });
  });

  it("project_id filter returns only that project's alerts", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const a = await h.newProject(organization.id, "a");
    h.clock.advance(1000);
    const b = await h.newProject(organization.id, "b");
    const listed = await listAlerts(apiKey, `project_id=${a.project.id}`);
    expect(sorted(ids(listed))).toEqual(sorted(Object.values(a.alertIds)));
    expect(listed.every((x) => x.project_id === a.project.id)).toBe(true);
    expect(sorted(ids(await listAlerts(apiKey, `project_id=${b.project.id}&status=all`)))).toEqual(sorted(Object.values(b.alertIds)));
  });

  it("alert_type filter returns only that type, across projects, newest first", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const a = await h.newProject(organization.id, "a");
    h.clock.advance(1000);
    const b = await h.newProject(organization.id, "b");
    for (const type of ALERT_TYPES) {
      const listed = await listAlerts(apiKey, `alert_type=${type}`);
      expect(ids(listed)).toEqual([b.alertIds[type], a.alertIds[type]]);
      expect(listed.every((x) => x.alert_type === type)).toBe(true);
    }
  });

  it("project_id and alert_type together select exactly one alert", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const a = await h.newProject(organization.id, "a");
    await h.newProject(organization.id, "b");
    for (const type of ALERT_TYPES) {
      expect(ids(await listAlerts(apiKey, `project_id=${a.project.id}&alert_type=${type}&status=all`))).toEqual([a.alertIds[type]]);
    }
  });

  it("a project with no alerts in the requested state gives an empty list, not an error", async () => {
    const { apiKey, project } = await setup();
    const res = await h.get(`/api/v1/alerts?project_id=${project.id}&status=snoozed`, apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
  });
});

describe("POST /alerts/:id/snooze", () => {
  for (const [duration, ms] of Object.entries(DURATIONS)) {
    it(`duration ${duration} sets snoozed and snoozed_until = now + ${duration} exactly`, async () => {
      const { apiKey, alertIds } = await setup();
      const id = alertIds.test_flakiness!;
      h.clock.advance(12_345);
      const before = await getAlert(apiKey, id);
      const expectedUntil = inMs(ms);
      const body = await action(apiKey, id, "snooze", { duration });
      expect(body).toEqual({ ...before, snoozed: true, snoozed_until: expectedUntil, updated_at: now() });
      expectIsoUtc(body.snoozed_until);
      expect(await getAlert(apiKey, id)).toEqual(body);
    });
  }

  it("keeps the alert active and its history, and touches no other alert", async () => {
    const { apiKey, alertIds, project } = await setup();
    const id = alertIds.failure_rate_spike!;
    const run = await h.newRun(project.id);
    await h.newEvent(id, run.id);
    const siblingsBefore = await listAlerts(apiKey, `project_id=${project.id}`);
    const body = await action(apiKey, id, "snooze", { duration: "4h" });
    expect(body.active).toBe(true);
    expect(body.events_count).toBe(1);
    const events = await h.get(`/api/v1/alerts/${id}/events`, apiKey);
    expect(events.body.data).toHaveLength(1);
    for (const sibling of siblingsBefore.filter((a) => a.id !== id)) expect(await getAlert(apiKey, sibling.id)).toEqual(sibling);
  });

  it("snoozing again restarts the period from now, also with a shorter duration", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.performance_regression!;
    const first = await action(apiKey, id, "snooze", { duration: "1w" });
    expect(first.snoozed_until).toBe(inMs(DURATIONS["1w"]!));
    h.clock.advance(30 * 60_000);
    const second = await action(apiKey, id, "snooze", { duration: "1h" });
    expect(second.snoozed).toBe(true);
    expect(second.snoozed_until).toBe(inMs(DURATIONS["1h"]!));
    expect(second.updated_at).toBe(now());
    h.clock.advance(50 * 60_000);
    const third = await action(apiKey, id, "snooze", { duration: "1h" });
    expect(third.snoozed_until).toBe(inMs(DURATIONS["1h"]!));
    expect(await getAlert(apiKey, id)).toEqual(third);
  });

  it("snoozing an inactive alert is allowed and keeps it inactive", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.skipped_test_count_creep!;
    await action(apiKey, id, "disable");
    h.clock.advance(1000);
    const body = await action(apiKey, id, "snooze", { duration: "24h" });
    expect(body).toMatchObject({ active: false, snoozed: true, snoozed_until: inMs(DURATIONS["24h"]!), updated_at: now() });
    expect(await getAlert(apiKey, id)).toEqual(body);
  });

  it("unrecognized fields next to a valid duration are ignored", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    const body = await action(apiKey, id, "snooze", {
      duration: "1h",
      active: false,
      snoozed_until: "2099-01-01T00:00:00.000Z",
      events_count: 9,
    });
    expect(body).toMatchObject({ active: true, snoozed: true, snoozed_until: inMs(DURATIONS["1h"]!), events_count: 0 });
  });

  it("accepts a JSON body sent without a JSON content-type", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    const res = await h.call("POST", `/api/v1/alerts/${id}/snooze`, {
      key: apiKey,
      rawBody: JSON.stringify({ duration: "4h" }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.snoozed_until).toBe(inMs(DURATIONS["4h"]!));
  });
});

describe("snooze expiry", () => {
  it("a snooze ends by itself once snoozed_until has passed", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    const snoozed = await action(apiKey, id, "snooze", { duration: "1h" });
    expect(ids(await listAlerts(apiKey))).not.toContain(id);
    expect(ids(await listAlerts(apiKey, "status=snoozed"))).toEqual([id]);

    h.clock.advance(DURATIONS["1h"]! - 1);
    expect((await getAlert(apiKey, id)).snoozed).toBe(true);
    expect(ids(await listAlerts(apiKey, "status=snoozed"))).toEqual([id]);

    h.clock.advance(2);
    const expired = await getAlert(apiKey, id);
    expect(expired).toEqual({ ...snoozed, snoozed: false, snoozed_until: null });
    expect(ids(await listAlerts(apiKey))).toContain(id);
    expect(ids(await listAlerts(apiKey, "status=snoozed"))).toEqual([]);
    expect((await listAlerts(apiKey)).find((a) => a.id === id)).toEqual(expired);
  });

  it("at exactly snoozed_until the alert is no longer snoozed", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.failure_rate_spike!;
    await action(apiKey, id, "snooze", { duration: "4h" });
    h.clock.advance(DURATIONS["4h"]!);
    expect(await getAlert(apiKey, id)).toMatchObject({ snoozed: false, snoozed_until: null });
    expect(ids(await listAlerts(apiKey))).toContain(id);
  });

  it("unsnoozing an expired snooze returns the alert unchanged", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.failure_rate_spike!;
    await action(apiKey, id, "snooze", { duration: "1h" });
    h.clock.advance(DURATIONS["1h"]! + 60_000);
    const before = await getAlert(apiKey, id);
    h.clock.advance(60_000);
    const body = await action(apiKey, id, "unsnooze");
    expect(body).toEqual(before);
  });

  it("an expired snooze can be snoozed again", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.performance_regression!;
    await action(apiKey, id, "snooze", { duration: "1h" });
    h.clock.advance(2 * DURATIONS["1h"]!);
    const body = await action(apiKey, id, "snooze", { duration: "4h" });
    expect(body).toMatchObject({ snoozed: true, snoozed_until: inMs(DURATIONS["4h"]!) });
  });
});

describe("POST /alerts/:id/unsnooze", () => {
  it("ends the snooze immediately and returns the updated alert", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    const snoozed = await action(apiKey, id, "snooze", { duration: "1w" });
    h.clock.advance(10_000);
    const body = await action(apiKey, id, "unsnooze");
    expect(body).toEqual({ ...snoozed, snoozed: false, snoozed_until: null, updated_at: now() });
    expect(await getAlert(apiKey, id)).toEqual(body);
    expect(ids(await listAlerts(apiKey))).toContain(id);
    expect(ids(await listAlerts(apiKey, "status=snoozed"))).toEqual([]);
    // Stays unsnoozed even after the old period would have ended.
    h.clock.advance(DURATIONS["1w"]!);
    expect(await getAlert(apiKey, id)).toEqual(body);
  });

  it("unsnoozes an inactive snoozed alert and keeps it inactive", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    await action(apiKey, id, "disable");
    await action(apiKey, id, "snooze", { duration: "1h" });
    const body = await action(apiKey, id, "unsnooze");
    expect(body).toMatchObject({ active: false, snoozed: false, snoozed_until: null });
  });

  it("on an alert that is not snoozed: 200 and the alert unchanged", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    const before = await getAlert(apiKey, id);
    h.clock.advance(60_000);
    expect(await action(apiKey, id, "unsnooze")).toEqual(before);
    expect(await getAlert(apiKey, id)).toEqual(before);
  });

  it("ignores a body", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    await action(apiKey, id, "snooze", { duration: "1h" });
    const body = await action(apiKey, id, "unsnooze", {
      duration: "1w",
      snoozed: true,
      snoozed_until: "2099-01-01T00:00:00.000Z",
      active: false,
    });
    expect(body).toMatchObject({ active: true, snoozed: false, snoozed_until: null });
  });
});

describe("POST /alerts/:id/disable and /enable", () => {
  it("disable sets active false, returns the updated alert, and keeps the event history", async () => {
    const { apiKey, alertIds, project } = await setup();
    const id = alertIds.failure_rate_spike!;
    const run1 = await h.newRun(project.id);
    await h.newEvent(id, run1.id, { rate: 0.5 });
    h.clock.advance(1000);
    const run2 = await h.newRun(project.id);
    await h.newEvent(id, run2.id, { rate: 0.7 });
    const eventsBefore = await h.get(`/api/v1/alerts/${id}/events`, apiKey);
    const before = await getAlert(apiKey, id);
    expect(before.events_count).toBe(2);

    h.clock.advance(5000);
    const body = await action(apiKey, id, "disable");
    expect(body).toEqual({ ...before, active: false, updated_at: now() });
    expect(body.events_count).toBe(2);
    expect(await getAlert(apiKey, id)).toEqual(body);
    const eventsAfter = await h.get(`/api/v1/alerts/${id}/events`, apiKey);
    expect(eventsAfter.status).toBe(200);
    expect(eventsAfter.body).toEqual(eventsBefore.body);
    expect(eventsAfter.body.data).toHaveLength(2);
    expect(ids(await listAlerts(apiKey, "status=inactive"))).toEqual([id]);
    expect(ids(await listAlerts(apiKey))).not.toContain(id);
  });

  it("disable keeps a running snooze", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    const snoozed = await action(apiKey, id, "snooze", { duration: "24h" });
    const body = await action(apiKey, id, "disable");
    expect(body).toMatchObject({ active: false, snoozed: true, snoozed_until: snoozed.snoozed_until });
  });

  it("enable sets active true and returns the updated alert", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.performance_regression!;
    await action(apiKey, id, "disable");
    const disabled = await getAlert(apiKey, id);
    h.clock.advance(7000);
    const body = await action(apiKey, id, "enable");
    expect(body).toEqual({ ...disabled, active: true, updated_at: now() });
    expect(await getAlert(apiKey, id)).toEqual(body);
    expect(ids(await listAlerts(apiKey))).toContain(id);
    expect(ids(await listAlerts(apiKey, "status=inactive"))).toEqual([]);
  });

  it("enable keeps a running snooze: the alert then lists as snoozed", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.skipped_test_count_creep!;
    await action(apiKey, id, "disable");
    const snoozed = await action(apiKey, id, "snooze", { duration: "4h" });
    const body = await action(apiKey, id, "enable");
    expect(body).toMatchObject({ active: true, snoozed: true, snoozed_until: snoozed.snoozed_until });
    expect(ids(await listAlerts(apiKey, "status=snoozed"))).toEqual([id]);
  });

  it("disable on an inactive alert: 200 and the alert unchanged", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    await action(apiKey, id, "disable");
    const before = await getAlert(apiKey, id);
    h.clock.advance(60_000);
    expect(await action(apiKey, id, "disable")).toEqual(before);
    expect(await getAlert(apiKey, id)).toEqual(before);
  });

  it("enable on an active alert: 200 and the alert unchanged", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    const before = await getAlert(apiKey, id);
    h.clock.advance(60_000);
    expect(await action(apiKey, id, "enable")).toEqual(before);
    expect(await getAlert(apiKey, id)).toEqual(before);
  });

  it("enable and disable ignore a body", async () => {
    const { apiKey, alertIds } = await setup();
    const id = alertIds.test_flakiness!;
    const disabled = await action(apiKey, id, "disable", { active: true, duration: "1h" });
    expect(disabled).toMatchObject({ active: false, snoozed: false, snoozed_until: null });
    const enabled = await action(apiKey, id, "enable", { active: false, snoozed_until: "2099-01-01T00:00:00.000Z" });
    expect(enabled).toMatchObject({ active: true, snoozed: false, snoozed_until: null });
  });

  it("actions touch only the target alert", async () => {
    const { apiKey, alertIds, project } = await setup();
    const before = await listAlerts(apiKey, `project_id=${project.id}&status=all`);
    const target = alertIds.test_flakiness!;
    h.clock.advance(1000);
    await action(apiKey, target, "disable");
    await action(apiKey, target, "snooze", { duration: "1h" });
    for (const alert of before.filter((a) => a.id !== target)) expect(await getAlert(apiKey, alert.id)).toEqual(alert);
  });

  it("actions never change created_at, events_count, last_notified_at, project_id or alert_type", async () => {
    const { apiKey, alertIds, project } = await setup();
    const id = alertIds.performance_regression!;
    const run = await h.newRun(project.id);
    await h.newEvent(id, run.id);
    const original = await getAlert(apiKey, id);
    const steps: [Parameters<typeof action>[2], unknown?][] = [
      ["snooze", { duration: "1h" }],
      ["disable"],
      ["unsnooze"],
      ["enable"],
      ["snooze", { duration: "1w" }],
    ];
    for (const [name, body] of steps) {
      h.clock.advance(1000);
      const result = await action(apiKey, id, name, body);
      expect(result).toMatchObject({
        id,
        created_at: original.created_at,
        events_count: 1,
        last_notified_at: original.last_notified_at,
        project_id: project.id,
        alert_type: "performance_regression",
        name: original.name,
        url: original.url,
      });
    }
  });
});
