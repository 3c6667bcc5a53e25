/**
 * /admin/v1, the surface the web app uses (issue tracker contract):
 * - enabled only when ADMIN_TOKEN is configured (else every path is 404), `Authorization: Bearer <ADMIN_TOKEN>`;
 * - POST /organizations → 201 {organization, api_key: {id, name, created_at, secret}};
 * - POST /organizations/:id/api_key/regenerate → 200 {api_key}; the old key is 401 from its next request;
 * - POST /organizations/:id/projects → 201 {project, upload_token}, with four active, unsnoozed alerts;
 * - POST /projects/:id/upload_token/regenerate → 200 {upload_token}.
 */
import { createHash, randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { organizations, projects } from "../../../src/db/schema";
import { isWellFormedToken } from "../../../src/lib/keys";
import { ADMIN_TOKEN, type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ALERT_TYPES = ["performance_regression", "test_flakiness", "skipped_test_count_creep", "failure_rate_spike"];
const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");
const isIsoUtc = (value: unknown) => typeof value === "string" && new Date(value).toISOString() === value;

function adminCall(
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: unknown; rawBody?: string; harness?: Harness } = {},
) {
  return (options.harness ?? h).call(method, `/admin/v1${path}`, {
    key: null,
    headers: options.headers,
    body: options.body,
    rawBody: options.rawBody,
  });
}
const asAdmin = (method: string, path: string, body?: unknown) =>
  adminCall(method, path, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });

async function organizationsNamed(name: string) {
  return h.db.select().from(organizations).where(eq(organizations.name, name));
}

/** The four admin routes, with real ids and valid bodies. */
async function adminRoutes() {
  const { organization, apiKey } = await h.newOrganization(`Routes ${randomUUID().slice(0, 8)}`);
  const { project } = await h.newProject(organization.id, "Routes project");
  return {
    organization,
    apiKey,
    project,
    routes: [
      { label: "POST /organizations", path: "/organizations", body: { name: `Created ${randomUUID()}` } },
      { label: "POST /organizations/:id/api_key/regenerate", path: `/organizations/${organization.id}/api_key/regenerate` },
      {
        label: "POST /organizations/:id/projects",
        path: `/organizations/${organization.id}/projects`,
        body: { name: `Created ${randomUUID()}` },
      },
      { label: "POST /projects/:id/upload_token/regenerate", path: `/projects/${project.id}/upload_token/regenerate` },
    ] as { label: string; path: string; body?: { name: string } }[],
  };
}

describe("POST /admin/v1/organizations", () => {
  it("201 with the organization and its API key, secret included; the organization equals GET /api/v1/organization with the new key", async () => {
    const res = await asAdmin("POST", "/organizations", { name: "Admin Created", time_zone: "Europe/Berlin" });
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(res.body).sort()).toEqual(["api_key", "organization"]);

    const { organization, api_key } = res.body;
    expect(Object.keys(api_key).sort()).toEqual(["created_at", "id", "name", "secret"]);
    expect(api_key.id).toMatch(UUID);
    expect(typeof api_key.name).toBe("string");
    expect(api_key.name.length).toBeGreaterThan(0);
    expect(isIsoUtc(api_key.created_at)).toBe(true);
    expect(api_key.secret).toMatch(/^cta_[0-9A-Za-z]{49}$/);
    expect(isWellFormedToken("apiKey", api_key.secret)).toBe(true);

    expect(organization.id).toMatch(UUID);
    expect(organization.name).toBe("Admin Created");
    expect(organization.time_zone).toBe("Europe/Berlin");
    expect(isIsoUtc(organization.created_at)).toBe(true);
    expect(organization.api_key).toEqual({ id: api_key.id, name: api_key.name, created_at: api_key.created_at });

    const viaApi = await h.get("/api/v1/organization", api_key.secret);
    expect(viaApi.status).toBe(200);
    expect(viaApi.body).toEqual(organization);
    // The secret is shown only in the creation response.
    expect(viaApi.text).not.toContain(api_key.secret);
  });

  it("defaults time_zone to UTC", async () => {
    const res = await asAdmin("POST", "/organizations", { name: "No zone" });
    expect(res.status).toBe(201);
    expect(res.body.organization.time_zone).toBe("UTC");
    const viaApi = await h.get("/api/v1/organization", res.body.api_key.secret);
    expect(viaApi.body.time_zone).toBe("UTC");
  });

  it("issues a different key to every organization", async () => {
    const a = await asAdmin("POST", "/organizations", { name: "Twin" });
    const b = await asAdmin("POST", "/organizations", { name: "Twin" });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(a.body.organization.id).not.toBe(b.body.organization.id);
    expect(a.body.api_key.id).not.toBe(b.body.api_key.id);
    expect(a.body.api_key.secret).not.toBe(b.body.api_key.secret);
    expect((await h.get("/api/v1/organization", a.body.api_key.secret)).body.id).toBe(a.body.organization.id);
    expect((await h.get("/api/v1/organization", b.body.api_key.secret)).body.id).toBe(b.body.organization.id);
  });

  it.each([
    ["empty string", { name: "" }],
    ["spaces only", { name: "   " }],
    ["whitespace only", { name: " \t\n " }],
    ["missing", {}],
    ["missing, with a time zone", { time_zone: "UTC" }],
    ["null", { name: null }],
  ])("a blank name (%s) is 422 validation_failed with details [{field: name, message: can't be blank}]", async (_label, body) => {
    const res = await asAdmin("POST", "/organizations", body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: { code: "validation_failed", message: expect.any(String), details: [{ field: "name", message: "can't be blank" }] },
    });
  });

  it.each([
    ["a number", 42],
    ["a boolean", true],
    ["an object", { first: "Acme" }],
    ["an array", ["Acme"]],
  ])("a non-string name (%s) is 422 validation_failed with a detail for name", async (_label, name) => {
    const res = await asAdmin("POST", "/organizations", { name });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: { code: "validation_failed", message: expect.any(String), details: [{ field: "name", message: expect.any(String) }] },
    });
  });

  it.each(["Mars/Olympus_Mons", "Europe/Atlantis", "Not a zone", "UTC+99", "Europe/Berlin; DROP TABLE organizations"])(
    "an unknown time_zone (%s) is 422 validation_failed on field time_zone, and creates nothing",
    async (zone) => {
      const name = `Bad zone ${randomUUID()}`;
      const res = await asAdmin("POST", "/organizations", { name, time_zone: zone });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe("validation_failed");
      expect(typeof res.body.error.message).toBe("string");
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(["time_zone"]);
      expect(typeof res.body.error.details[0].message).toBe("string");
      expect(await organizationsNamed(name)).toEqual([]);
    },
  );

  it("a non-string time_zone is 422 on field time_zone", async () => {
    const res = await asAdmin("POST", "/organizations", { name: "Numeric zone", time_zone: 5 });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("validation_failed");
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(["time_zone"]);
  });

  it("a name containing a NUL character is 422 on name (never 500) and creates nothing", async () => {
    const name = `Nul\u0000${randomUUID()}`;
    const res = await asAdmin("POST", "/organizations", { name });
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 422, code: "validation_failed" });
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(["name"]);
    expect(await organizationsNamed(name.replace("\u0000", ""))).toEqual([]);
  });

  it("a time zone written in another case is stored under its canonical IANA name, or rejected", async () => {
    const res = await asAdmin("POST", "/organizations", { name: "Case zone", time_zone: "europe/berlin" });
    const outcome =
      res.status === 201
        ? `201 ${res.body.organization.time_zone}`
        : `${res.status} ${res.body?.error?.details?.map((d: { field: string }) => d.field).join(",")}`;
    expect(["201 Europe/Berlin", "422 time_zone"]).toContain(outcome);
  });

  it.each(['{"name": ', "{name: 'x'}", '{"name": "x",}', "not json"])("malformed JSON (%s) is 400 invalid_request", async (rawBody) => {
    const res = await adminCall("POST", "/organizations", {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      rawBody,
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: "invalid_request", message: expect.any(String) } });
  });
});

describe("POST /admin/v1/organizations/:id/api_key/regenerate", () => {
  it("200 with a new key (new id, new secret); the old key is 401 on its next request and the new one works", async () => {
    const { organization, apiKey, apiKeyObject } = await h.newOrganization("Regenerate me");
    expect((await h.get("/api/v1/organization", apiKey)).status).toBe(200);

    const res = await asAdmin("POST", `/organizations/${organization.id}/api_key/regenerate`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(res.body)).toEqual(["api_key"]);
    const key = res.body.api_key;
    expect(Object.keys(key).sort()).toEqual(["created_at", "id", "name", "secret"]);
    expect(key.id).toMatch(UUID);
    expect(key.id).not.toBe(apiKeyObject.id);
    expect(key.secret).not.toBe(apiKey);
    expect(isWellFormedToken("apiKey", key.secret)).toBe(true);
    expect(key.name).toBe(apiKeyObject.name);
    expect(isIsoUtc(key.created_at)).toBe(true);

    const old = await h.get("/api/v1/organization", apiKey);
    expect(old.status).toBe(401);
    expect(old.body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });

    const fresh = await h.get("/api/v1/organization", key.secret);
    expect(fresh.status).toBe(200);
    expect(fresh.body.id).toBe(organization.id);
    expect(fresh.body.api_key).toEqual({ id: key.id, name: key.name, created_at: key.created_at });
    // Still dead later, not only on the first request.
    expect((await h.get("/api/v1/projects", apiKey)).status).toBe(401);
  });

  it("every regeneration returns a secret never seen before", async () => {
    const { organization, apiKey } = await h.newOrganization("Many regenerations");
    const secrets = new Set([apiKey]);
    const ids = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const res = await asAdmin("POST", `/organizations/${organization.id}/api_key/regenerate`);
      expect(res.status).toBe(200);
      secrets.add(res.body.api_key.secret);
      ids.add(res.body.api_key.id);
    }
    expect(secrets.size).toBe(11);
    expect(ids.size).toBe(10);
  });

  it("does not touch other organizations' keys", async () => {
    const a = await h.newOrganization("Regenerated");
    const b = await h.newOrganization("Bystander");
    expect((await asAdmin("POST", `/organizations/${a.organization.id}/api_key/regenerate`)).status).toBe(200);
    const stillWorks = await h.get("/api/v1/organization", b.apiKey);
    expect(stillWorks.status).toBe(200);
    expect(stillWorks.body.api_key.id).toBe(b.apiKeyObject.id);
  });

  it.each(["unknown uuid", "not-a-uuid", "1", "00000000-0000-0000-0000-000000000000"])(
    "an unknown or malformed organization id (%s) is 404 not_found",
    async (label) => {
      const id = label === "unknown uuid" ? randomUUID() : label;
      const res = await asAdmin("POST", `/organizations/${encodeURIComponent(id)}/api_key/regenerate`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: "not_found", message: expect.any(String) } });
    },
  );
});

describe("POST /admin/v1/organizations/:id/projects", () => {
  it("201 with the project (equal to GET /api/v1/projects/:id) and its upload token", async () => {
    const { organization, apiKey } = await h.newOrganization("Project owner");
    const res = await asAdmin("POST", `/organizations/${organization.id}/projects`, {
      name: "Checkout",
      description: "The checkout service",
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(res.body).sort()).toEqual(["project", "upload_token"]);

    const { project, upload_token } = res.body;
    expect(typeof upload_token).toBe("string");
    expect(upload_token.startsWith("ctu_")).toBe(true);
    expect(isWellFormedToken("uploadToken", upload_token)).toBe(true);
    expect(project.id).toMatch(UUID);
    expect(project).toMatchObject({
      name: "Checkout",
      description: "The checkout service",
      test_runs_count: 0,
      latest_result: null,
      last_test_run_at: null,
    });
    expect(isIsoUtc(project.created_at)).toBe(true);
    expect(isIsoUtc(project.updated_at)).toBe(true);
    expect(typeof project.url).toBe("string");

    const viaApi = await h.get(`/api/v1/projects/${project.id}`, apiKey);
    expect(viaApi.status).toBe(200);
    expect(viaApi.body).toEqual(project);
    expect(viaApi.text).not.toContain(upload_token);

    const list = await h.get("/api/v1/projects", apiKey);
    expect(list.body.data).toEqual([project]);

    // Only a hash of the token is stored.
    const [row] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    expect(row!.uploadTokenHash).toBe(sha256(upload_token));
  });

  it("without a description the project's description is null", async () => {
    const { organization, apiKey } = await h.newOrganization("No description");
    const res = await asAdmin("POST", `/organizations/${organization.id}/projects`, { name: "Bare" });
    expect(res.status).toBe(201);
    expect(res.body.project.description).toBeNull();
    expect((await h.get(`/api/v1/projects/${res.body.project.id}`, apiKey)).body).toEqual(res.body.project);
  });

  it("the project starts with its four alerts, one per type, active and not snoozed", async () => {
    const { organization, apiKey } = await h.newOrganization("Alert owner");
    const res = await asAdmin("POST", `/organizations/${organization.id}/projects`, { name: "With alerts" });
    expect(res.status).toBe(201);
    const projectId = res.body.project.id;

    // The default status filter lists active, unsnoozed alerts: all four must be there.
    const active = await h.get(`/api/v1/alerts?project_id=${projectId}`, apiKey);
    expect(active.status).toBe(200);
    expect(active.body.data).toHaveLength(4);
    const all = await h.get(`/api/v1/alerts?project_id=${projectId}&status=all`, apiKey);
    expect(all.body.data).toHaveLength(4);
    expect(all.body.data.map((a: { alert_type: string }) => a.alert_type).sort()).toEqual([...ALERT_TYPES].sort());
    for (const alert of all.body.data) {
      expect(alert).toMatchObject({
        project_id: projectId,
        active: true,
        snoozed: false,
        snoozed_until: null,
        last_notified_at: null,
        events_count: 0,
      });
      expect(alert.id).toMatch(UUID);
    }
    expect((await h.get(`/api/v1/alerts?project_id=${projectId}&status=snoozed`, apiKey)).body.data).toEqual([]);
    expect((await h.get(`/api/v1/alerts?project_id=${projectId}&status=inactive`, apiKey)).body.data).toEqual([]);
  });

  it("the project belongs to that organization only", async () => {
    const owner = await h.newOrganization("Owner");
    const other = await h.newOrganization("Other");
    const res = await asAdmin("POST", `/organizations/${owner.organization.id}/projects`, { name: "Owned" });
    expect(res.status).toBe(201);
    expect((await h.get(`/api/v1/projects/${res.body.project.id}`, owner.apiKey)).status).toBe(200);
    expect((await h.get(`/api/v1/projects/${res.body.project.id}`, other.apiKey)).status).toBe(404);
    expect((await h.get("/api/v1/projects", other.apiKey)).body.data).toEqual([]);
  });

  it("every project gets a different upload token", async () => {
    const { organization } = await h.newOrganization("Tokens");
    const tokens = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const res = await asAdmin("POST", `/organizations/${organization.id}/projects`, { name: `P${i}` });
      expect(res.status).toBe(201);
      tokens.add(res.body.upload_token);
    }
    expect(tokens.size).toBe(5);
  });

  it.each([
    ["empty string", { name: "" }],
    ["spaces only", { name: "   " }],
    ["missing", {}],
    ["missing, with a description", { description: "no name" }],
    ["null", { name: null }],
  ])("a blank name (%s) is 422 with details [{field: name, message: can't be blank}] and creates nothing", async (_label, body) => {
    const { organization, apiKey } = await h.newOrganization("Blank project names");
    const res = await asAdmin("POST", `/organizations/${organization.id}/projects`, body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: { code: "validation_failed", message: expect.any(String), details: [{ field: "name", message: "can't be blank" }] },
    });
    expect((await h.get("/api/v1/projects", apiKey)).body.data).toEqual([]);
  });

  it.each([
    ["a number", 7],
    ["a boolean", false],
    ["an object", { text: "x" }],
    ["an array", ["x"]],
  ])("a non-string name (%s) is 422 with a detail for name", async (_label, name) => {
    const { organization } = await h.newOrganization("Typed project names");
    const res = await asAdmin("POST", `/organizations/${organization.id}/projects`, { name });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: { code: "validation_failed", message: expect.any(String), details: [{ field: "name", message: expect.any(String) }] },
    });
  });

  it("a non-string description is 422 with a detail for description", async () => {
    const { organization } = await h.newOrganization("Typed descriptions");
    const res = await asAdmin("POST", `/organizations/${organization.id}/projects`, { name: "Fine", description: 12 });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("validation_failed");
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(["description"]);
  });

  it.each([
    ["name", { name: "Nul\u0000name" }],
    ["description", { name: "Fine", description: "Nul\u0000description" }],
  ])("a %s containing a NUL character is 422 on that field (never 500) and creates nothing", async (field, body) => {
    const { organization, apiKey } = await h.newOrganization("NUL project fields");
    const res = await asAdmin("POST", `/organizations/${organization.id}/projects`, body);
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 422, code: "validation_failed" });
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual([field]);
    expect((await h.get("/api/v1/projects", apiKey)).body.data).toEqual([]);
  });

  it("malformed JSON is 400 invalid_request", async () => {
    const { organization } = await h.newOrganization("Malformed project JSON");
    const res = await adminCall("POST", `/organizations/${organization.id}/projects`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      rawBody: '{"name": "x"',
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: "invalid_request", message: expect.any(String) } });
  });

  it.each(["unknown uuid", "not-a-uuid", "1", "00000000-0000-0000-0000-000000000000"])(
    "an unknown or malformed organization id (%s) is 404 not_found",
    async (label) => {
      const id = label === "unknown uuid" ? randomUUID() : label;
      const res = await asAdmin("POST", `/organizations/${encodeURIComponent(id)}/projects`, { name: "Orphan" });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: "not_found", message: expect.any(String) } });
      expect(await h.db.select().from(projects).where(eq(projects.name, "Orphan"))).toEqual([]);
    },
  );
});

describe("POST /admin/v1/projects/:id/upload_token/regenerate", () => {
  it("200 with a different, well-formed upload token that replaces the old one", async () => {
    const { organization, apiKey } = await h.newOrganization("Upload token owner");
    const { project, uploadToken } = await h.newProject(organization.id, "Uploads");
    const res = await asAdmin("POST", `/projects/${project.id}/upload_token/regenerate`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(res.body)).toEqual(["upload_token"]);
    expect(typeof res.body.upload_token).toBe("string");
    expect(res.body.upload_token.startsWith("ctu_")).toBe(true);
    expect(isWellFormedToken("uploadToken", res.body.upload_token)).toBe(true);
    expect(res.body.upload_token).not.toBe(uploadToken);

    const [row] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    expect(row!.uploadTokenHash).toBe(sha256(res.body.upload_token));
    expect(row!.uploadTokenHash).not.toBe(sha256(uploadToken));

    // The project itself is unchanged in the API.
    expect((await h.get(`/api/v1/projects/${project.id}`, apiKey)).body).toEqual(project);

    const again = await asAdmin("POST", `/projects/${project.id}/upload_token/regenerate`);
    expect(again.status).toBe(200);
    expect(new Set([uploadToken, res.body.upload_token, again.body.upload_token]).size).toBe(3);
  });

  it.each(["unknown uuid", "not-a-uuid", "1", "00000000-0000-0000-0000-000000000000"])(
    "an unknown or malformed project id (%s) is 404 not_found",
    async (label) => {
      const id = label === "unknown uuid" ? randomUUID() : label;
      const res = await asAdmin("POST", `/projects/${encodeURIComponent(id)}/upload_token/regenerate`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: { code: "not_found", message: expect.any(String) } });
    },
  );

  it("an organization id is not a project id (404)", async () => {
    const { organization } = await h.newOrganization("Id confusion");
    const res = await asAdmin("POST", `/projects/${organization.id}/upload_token/regenerate`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("not_found");
  });
});

describe("admin authentication", () => {
  const BAD_CREDENTIALS: [string, (apiKey: string) => Record<string, string>][] = [
    ["no Authorization header", () => ({})],
    ["empty Authorization header", () => ({ authorization: "" })],
    ["Bearer with nothing", () => ({ authorization: "Bearer" })],
    ["a wrong token", () => ({ authorization: "Bearer wrong-admin-token" })],
    ["the admin token with an extra character", () => ({ authorization: `Bearer ${ADMIN_TOKEN}x` })],
    ["a prefix of the admin token", () => ({ authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` })],
    ["the admin token without a scheme", () => ({ authorization: ADMIN_TOKEN })],
    ["the admin token under Basic", () => ({ authorization: `Basic ${btoa(`admin:${ADMIN_TOKEN}`)}` })],
    ["an organization's API key", (apiKey) => ({ authorization: `Bearer ${apiKey}` })],
    ["the admin token in another header", () => ({ "x-admin-token": ADMIN_TOKEN })],
  ];

  it.each(BAD_CREDENTIALS)("%s → 401 unauthorized on every admin route, and nothing happens", async (_label, headers) => {
    const { organization, apiKey, project, routes } = await adminRoutes();
    const [projectRow] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    for (const route of routes) {
      const res = await adminCall("POST", route.path, { headers: headers(apiKey), body: route.body });
      expect({ route: route.label, status: res.status, body: res.body }).toEqual({
        route: route.label,
        status: 401,
        body: { error: { code: "unauthorized", message: expect.any(String) } },
      });
      expect(res.text).not.toContain(ADMIN_TOKEN);
    }
    // No organization or project was created, the key still works, the upload token is unchanged.
    expect(await organizationsNamed(routes[0]!.body!.name)).toEqual([]);
    expect(await h.db.select().from(projects).where(eq(projects.name, routes[2]!.body!.name))).toEqual([]);
    const stillValid = await h.get("/api/v1/organization", apiKey);
    expect(stillValid.status).toBe(200);
    expect(stillValid.body.id).toBe(organization.id);
    const [after] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    expect(after!.uploadTokenHash).toBe(projectRow!.uploadTokenHash);
  });

  it("the right token is accepted on every admin route (control)", async () => {
    const { routes } = await adminRoutes();
    const statuses = [];
    for (const route of routes) statuses.push((await asAdmin("POST", route.path, route.body)).status);
    expect(statuses).toEqual([201, 200, 201, 200]);
  });
});

describe("admin disabled (no ADMIN_TOKEN configured)", () => {
  it.each([
    ["undefined", undefined],
    ["empty string", ""],
  ])("with ADMIN_TOKEN %s every /admin/v1 path answers 404 not_found, with or without a token", async (_label, adminToken) => {
    const disabled = await createHarness({ adminToken });
    try {
      const id = randomUUID();
      const paths: [string, string, unknown][] = [
        ["POST", "/organizations", { name: "Should not exist" }],
        ["POST", `/organizations/${id}/api_key/regenerate`, undefined],
        ["POST", `/organizations/${id}/projects`, { name: "Should not exist" }],
        ["POST", `/projects/${id}/upload_token/regenerate`, undefined],
        ["POST", `/organizations/${id}/invitations`, { email: "should-not-exist@example.com" }],
        ["GET", `/organizations/${id}/invitations`, undefined],
        ["GET", "/organizations", undefined],
        ["GET", "/openapi.json", undefined],
        ["GET", "/", undefined],
        ["GET", "/anything/else", undefined],
      ];
      for (const [method, path, body] of paths) {
        const variants: Record<string, string>[] = [
          { authorization: `Bearer ${ADMIN_TOKEN}` },
          {},
          { authorization: "Bearer " },
          { authorization: "Bearer undefined" },
        ];
        for (const headers of variants) {
          const res = await adminCall(method, path, { headers, body, harness: disabled });
          expect({ method, path, headers, status: res.status, body: res.body }).toEqual({
            method,
            path,
            headers,
            status: 404,
            body: { error: { code: "not_found", message: expect.any(String) } },
          });
        }
      }
      expect(await disabled.db.select().from(organizations).where(eq(organizations.name, "Should not exist"))).toEqual([]);
    } finally {
      await disabled.close();
    }
  });
});

describe("wrong methods", () => {
  it("405 method_not_allowed with an Allow header listing POST on every admin route", async () => {
    const { routes } = await adminRoutes();
    for (const route of routes) {
      for (const method of ["GET", "PUT", "PATCH", "DELETE"]) {
        const res = await adminCall(method, route.path, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          body: method === "GET" || method === "DELETE" ? undefined : route.body,
        });
        const allow = (res.headers.get("allow") ?? "").split(/\s*,\s*/).filter(Boolean);
        expect({
          route: route.label,
          method,
          status: res.status,
          code: res.body?.error?.code,
          allowsPost: allow.includes("POST"),
          allowsMethod: allow.includes(method),
        }).toEqual({
          route: route.label,
          method,
          status: 405,
          code: "method_not_allowed",
          allowsPost: true,
          allowsMethod: false,
        });
        expect(typeof res.body.error.message).toBe("string");
      }
    }
    // Nothing was created by the rejected PUT/PATCH bodies.
    expect(await organizationsNamed(routes[0]!.body!.name)).toEqual([]);
  });
});
