import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CallResult, type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const UNKNOWN_UUID = "0b9e6a1c-2d3f-4a5b-9c8d-7e6f5a4b3c2d";
const MALFORMED_IDS = [
  "abc",
  "1",
  "0",
  "0b9e6a1c-2d3f-4a5b-9c8d-7e6f5a4b3c2",
  "0b9e6a1c2d3f4a5b9c8d7e6f5a4b3c2d",
  "0b9e6a1c-2d3f-4a5b-9c8d-7e6f5a4b3c2g",
];
const DURATION_DETAILS = [{ field: "duration", message: "must be one of 1h, 4h, 24h, 1w" }];
const ACTIONS = ["snooze", "unsnooze", "enable", "disable"] as const;

type CallOptionsLike = { body?: unknown; rawBody?: string; headers?: Record<string, string> };

function expectError(res: CallResult, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.body).toBeTypeOf("object");
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe("string");
  expect(res.body.error.message.length).toBeGreaterThan(0);
}

async function setup() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, alertIds } = await h.newProject(organization.id);
  const id = alertIds.test_flakiness!;
  h.clock.advance(60_000);
  const before = (await h.get(`/api/v1/alerts/${id}`, apiKey)).body;
  return { organization, apiKey, project, alertIds, id, before };
}

async function expectAlertUnchanged(apiKey: string, id: string, before: unknown) {
  const res = await h.get(`/api/v1/alerts/${id}`, apiKey);
  expect(res.status).toBe(200);
  expect(res.body).toEqual(before);
}

function actionBody(name: (typeof ACTIONS)[number]) {
  return name === "snooze" ? { duration: "1h" } : undefined;
}

describe("GET /alerts filter errors", () => {
  for (const status of ["bogus", "ACTIVE", "Snoozed", "enabled", "disabled", "expired"]) {
    it(`status=${status} → 400 invalid_request`, async () => {
      const { apiKey } = await setup();
      expectError(await h.get(`/api/v1/alerts?status=${status}`, apiKey), 400, "invalid_request");
    });
  }

  for (const alertType of ["flakiness", "TEST_FLAKINESS", "performance-regression", "all"]) {
    it(`alert_type=${alertType} → 400 invalid_request`, async () => {
      const { apiKey } = await setup();
      expectError(await h.get(`/api/v1/alerts?alert_type=${alertType}`, apiKey), 400, "invalid_request");
    });
  }

  it("an unknown status is rejected even together with valid filters", async () => {
    const { apiKey, project } = await setup();
    expectError(
      await h.get(`/api/v1/alerts?status=nope&project_id=${project.id}&alert_type=test_flakiness`, apiKey),
      400,
      "invalid_request",
    );
  });

  it("project_id of an unknown uuid → 404 not_found", async () => {
    const { apiKey } = await setup();
    expectError(await h.get(`/api/v1/alerts?project_id=${UNKNOWN_UUID}`, apiKey), 404, "not_found");
    expectError(await h.get(`/api/v1/alerts?project_id=${UNKNOWN_UUID}&status=all`, apiKey), 404, "not_found");
  });

  for (const projectId of ["abc", "1", "0b9e6a1c2d3f4a5b9c8d7e6f5a4b3c2d"]) {
    it(`malformed project_id ${JSON.stringify(projectId)} → 404 not_found`, async () => {
      const { apiKey } = await setup();
      expectError(await h.get(`/api/v1/alerts?project_id=${projectId}`, apiKey), 404, "not_found");
    });
  }

  it("project_id of another organization's project → 404 not_found, not an empty list", async () => {
    const mine = await setup();
    const other = await h.newOrganization("other");
    const theirs = await h.newProject(other.organization.id);
    const res = await h.get(`/api/v1/alerts?project_id=${theirs.project.id}`, mine.apiKey);
    expectError(res, 404, "not_found");
    expect(res.text).not.toContain(theirs.alertIds.test_flakiness);
    const all = await h.get(`/api/v1/alerts?project_id=${theirs.project.id}&status=all`, mine.apiKey);
    expectError(all, 404, "not_found");
    // Same answer as for a project that does not exist.
    const missing = await h.get(`/api/v1/alerts?project_id=${UNKNOWN_UUID}`, mine.apiKey);
    expect(res.body).toEqual(missing.body);
  });

  for (const limit of ["0", "-5", "ten"]) {
    it(`limit=${limit} → 400 invalid_request`, async () => {
      const { apiKey } = await setup();
      expectError(await h.get(`/api/v1/alerts?limit=${limit}`, apiKey), 400, "invalid_request");
    });
  }

  it("a cursor from one status filter cannot be used with another → 400 invalid_request", async () => {
    const { organization, apiKey } = await setup();
    await h.newProject(organization.id, "second");
    const first = await h.get("/api/v1/alerts?status=all&limit=2", apiKey);
    const cursor = first.body.pagination.next_cursor as string;
    expect(typeof cursor).toBe("string");
    expectError(await h.get(`/api/v1/alerts?status=active&limit=2&cursor=${encodeURIComponent(cursor)}`, apiKey), 400, "invalid_request");
    expectError(await h.get(`/api/v1/projects?limit=2&cursor=${encodeURIComponent(cursor)}`, apiKey), 400, "invalid_request");
  });
});

describe("POST /alerts/:id/snooze with a missing or invalid duration", () => {
  const cases: [string, CallOptionsLike][] = [
    ["{}", { body: {} }],
    ["an empty body with a JSON content-type", { rawBody: "", headers: { "content-type": "application/json" } }],
    ["no body at all", {}],
    ["a whitespace body", { rawBody: "  \n", headers: { "content-type": "application/json" } }],
    ['duration "2h"', { body: { duration: "2h" } }],
    ['duration "1H"', { body: { duration: "1H" } }],
    ['duration "1W"', { body: { duration: "1W" } }],
    ['duration " 1h"', { body: { duration: " 1h" } }],
    ['duration "60m"', { body: { duration: "60m" } }],
    ['duration ""', { body: { duration: "" } }],
    ['duration "forever"', { body: { duration: "forever" } }],
    ["duration 1", { body: { duration: 1 } }],
    ["duration 3600", { body: { duration: 3600 } }],
    ["duration null", { body: { duration: null } }],
    ["duration true", { body: { duration: true } }],
    ['duration ["1h"]', { body: { duration: ["1h"] } }],
    ["snoozed_until instead of duration", { body: { snoozed_until: "2099-01-01T00:00:00.000Z" } }],
    ["a differently named field", { body: { period: "1h" } }],
  ];
  for (const [label, options] of cases) {
    it(`${label} → 422 validation_failed with exactly the duration detail, alert unchanged`, async () => {
      const { apiKey, id, before } = await setup();
      const res = await h.call("POST", `/api/v1/alerts/${id}/snooze`, { key: apiKey, ...options });
      expectError(res, 422, "validation_failed");
      expect(res.body.error.details).toEqual(DURATION_DETAILS);
      await expectAlertUnchanged(apiKey, id, before);
    });
  }

  it("a rejected snooze leaves a running snooze as it was", async () => {
    const { apiKey, id } = await setup();
    const snoozed = await h.post(`/api/v1/alerts/${id}/snooze`, apiKey, { duration: "1h" });
    expect(snoozed.status).toBe(200);
    h.clock.advance(60_000);
    const res = await h.post(`/api/v1/alerts/${id}/snooze`, apiKey, { duration: "2h" });
    expectError(res, 422, "validation_failed");
    await expectAlertUnchanged(apiKey, id, snoozed.body);
  });

  it("a rejected snooze of a disabled alert leaves it disabled and not snoozed", async () => {
    const { apiKey, id } = await setup();
    const disabled = await h.post(`/api/v1/alerts/${id}/disable`, apiKey);
    expect(disabled.status).toBe(200);
    const res = await h.post(`/api/v1/alerts/${id}/snooze`, apiKey, {});
    expectError(res, 422, "validation_failed");
    expect(res.body.error.details).toEqual(DURATION_DETAILS);
    await expectAlertUnchanged(apiKey, id, disabled.body);
  });

  for (const [label, raw] of [
    ["malformed JSON", '{"duration": "1h"'],
    ["a JSON array", '["1h"]'],
    ["a JSON string", '"1h"'],
    ["JSON null", "null"],
  ] as const) {
    it(`${label} → 400 invalid_request, alert unchanged`, async () => {
      const { apiKey, id, before } = await setup();
      const res = await h.call("POST", `/api/v1/alerts/${id}/snooze`, {
        key: apiKey,
        rawBody: raw,
        headers: { "content-type": "application/json" },
      });
      expectError(res, 400, "invalid_request");
      await expectAlertUnchanged(apiKey, id, before);
    });
  }
});

describe("unknown, malformed and foreign alert ids", () => {
  it("GET an unknown uuid → 404 not_found", async () => {
    const { apiKey } = await setup();
    expectError(await h.get(`/api/v1/alerts/${UNKNOWN_UUID}`, apiKey), 404, "not_found");
  });

  for (const name of ACTIONS) {
    it(`POST ${name} on an unknown uuid → 404 not_found`, async () => {
      const { apiKey } = await setup();
      expectError(await h.post(`/api/v1/alerts/${UNKNOWN_UUID}/${name}`, apiKey, actionBody(name)), 404, "not_found");
    });
  }

  for (const id of MALFORMED_IDS) {
    it(`malformed id ${JSON.stringify(id)} → 404 not_found on GET and every action`, async () => {
      const { apiKey } = await setup();
      expectError(await h.get(`/api/v1/alerts/${id}`, apiKey), 404, "not_found");
      for (const name of ACTIONS) expectError(await h.post(`/api/v1/alerts/${id}/${name}`, apiKey, actionBody(name)), 404, "not_found");
    });
  }

  it("an alert of another organization → 404 on GET, indistinguishable from a missing one", async () => {
    const owner = await setup();
    const stranger = await h.newOrganization("stranger");
    const res = await h.get(`/api/v1/alerts/${owner.id}`, stranger.apiKey);
    expectError(res, 404, "not_found");
    const missing = await h.get(`/api/v1/alerts/${UNKNOWN_UUID}`, stranger.apiKey);
    expect(res.body).toEqual(missing.body);
  });

  for (const name of ACTIONS) {
    it(`POST ${name} on an alert of another organization → 404 and the alert is unchanged`, async () => {
      const owner = await setup();
      const stranger = await h.newOrganization("stranger");
      // Put the alert in a state where each action would change something.
      let before = owner.before;
      if (name === "unsnooze") before = (await h.post(`/api/v1/alerts/${owner.id}/snooze`, owner.apiKey, { duration: "1w" })).body;
      if (name === "enable") before = (await h.post(`/api/v1/alerts/${owner.id}/disable`, owner.apiKey)).body;
      h.clock.advance(1000);
      const res = await h.post(`/api/v1/alerts/${owner.id}/${name}`, stranger.apiKey, actionBody(name));
      expectError(res, 404, "not_found");
      await expectAlertUnchanged(owner.apiKey, owner.id, before);
    });
  }

  it("snooze with an invalid duration on a foreign alert answers exactly as for a missing alert and changes nothing", async () => {
    const owner = await setup();
    const stranger = await h.newOrganization("stranger");
    const foreign = await h.post(`/api/v1/alerts/${owner.id}/snooze`, stranger.apiKey, { duration: "2h" });
    const missing = await h.post(`/api/v1/alerts/${UNKNOWN_UUID}/snooze`, stranger.apiKey, { duration: "2h" });
    expect(foreign.status).toBe(missing.status);
    expect(foreign.body).toEqual(missing.body);
    await expectAlertUnchanged(owner.apiKey, owner.id, owner.before);
  });

  it("foreign alerts never appear in the caller's lists", async () => {
    const owner = await setup();
    const stranger = await h.newOrganization("stranger");
    await h.newProject(stranger.organization.id);
    const res = await h.get("/api/v1/alerts?status=all", stranger.apiKey);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(4);
    expect(res.body.data.map((a: any) => a.id)).not.toContain(owner.id);
  });
});

describe("wrong methods and missing key on alert endpoints", () => {
  it("no key → 401 unauthorized on GET and every action, alert unchanged", async () => {
    const { apiKey, id, before } = await setup();
    expectError(await h.get("/api/v1/alerts", null), 401, "unauthorized");
    expectError(await h.get(`/api/v1/alerts/${id}`, null), 401, "unauthorized");
    for (const name of ACTIONS) expectError(await h.post(`/api/v1/alerts/${id}/${name}`, null, actionBody(name)), 401, "unauthorized");
    await expectAlertUnchanged(apiKey, id, before);
  });

  it("GET on an action path → 405 method_not_allowed, alert unchanged", async () => {
    const { apiKey, id, before } = await setup();
    for (const name of ACTIONS) expectError(await h.get(`/api/v1/alerts/${id}/${name}`, apiKey), 405, "method_not_allowed");
    await expectAlertUnchanged(apiKey, id, before);
  });

  it("PATCH on an alert → 405 method_not_allowed, alert unchanged", async () => {
    const { apiKey, id, before } = await setup();
    expectError(await h.patch(`/api/v1/alerts/${id}`, apiKey, { active: false }), 405, "method_not_allowed");
    await expectAlertUnchanged(apiKey, id, before);
  });
});
