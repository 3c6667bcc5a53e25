/**
 * Authentication and tenant isolation of /api/v1 (spec part 5 and part 7):
 * - every credential that is not the organization's live API key, sent as `Bearer`, is a 401
 *   `unauthorized` on every endpoint, leaks nothing and changes nothing;
 * - a regenerated key fails from the very next request;
 * - another organization's resources are indistinguishable from missing ones (404);
 * - secrets are stored only as hashes and never appear in responses or logs.
 */
import { createHash, randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alerts, apiKeys, organizations, projects } from "../../../src/db/schema";
import { generateToken } from "../../../src/lib/keys";
import { ADMIN_TOKEN, type CallResult, type Harness, collectAll, createHarness, faultyKeyCounter } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");

/** Every secret issued in this file, so that the logs can be checked against all of them. */
const issued: string[] = [ADMIN_TOKEN];

type Fixture = {
  organization: { id: string; name: string };
  /** The live key. */
  key: string;
  /** The key the organization had before one regeneration. */
  previousKey: string;
  project: { id: string; name: string; description: string | null };
  uploadToken: string;
  /** Active, not snoozed, with one event. */
  alertId: string;
  /** Snoozed and disabled, so that unsnooze and enable would visibly change it. */
  quietAlertId: string;
  alertIds: Record<string, string>;
};

async function regenerateKey(harness: Harness, organizationId: string): Promise<{ id: string; secret: string }> {
  const res = await harness.admin("POST", `/organizations/${organizationId}/api_key/regenerate`);
  if (res.status !== 200) throw new Error(`regenerate failed: ${res.status} ${res.text}`);
  issued.push(res.body.api_key.secret);
  return res.body.api_key;
}

async function newFixture(harness: Harness = h, label = "Org"): Promise<Fixture> {
  const unique = `${label}-${randomUUID().slice(0, 8)}`;
  const { organization, apiKey: previousKey } = await harness.newOrganization(`${unique} organization`);
  issued.push(previousKey);
  const { secret: key } = await regenerateKey(harness, organization.id);
  const { project, uploadToken, alertIds } = await harness.newProject(organization.id, `${unique} project`, `${unique} description`);
  issued.push(uploadToken);
  const alertId = alertIds.test_flakiness!;
  const quietAlertId = alertIds.failure_rate_spike!;
  const run = await harness.newRun(project.id);
  await harness.newEvent(alertId, run.id, { note: `${unique} event` });
  for (const [path, body] of [
    [`/api/v1/alerts/${quietAlertId}/snooze`, { duration: "1w" }],
    [`/api/v1/alerts/${quietAlertId}/disable`, undefined],
  ] as const) {
    const res = await harness.post(path, key, body);
    if (res.status !== 200) throw new Error(`fixture ${path} failed: ${res.status} ${res.text}`);
  }
  const fresh = await harness.get(`/api/v1/projects/${project.id}`, key);
  return { organization, key, previousKey, project: fresh.body, uploadToken, alertId, quietAlertId, alertIds };
}

type Endpoint = { label: string; method: "GET" | "POST" | "PATCH"; path: string; body?: unknown };

/** The 11 endpoints of spec part 4, with the fixture's own ids and valid bodies. */
function endpointsOf(f: Fixture): Endpoint[] {
  return [
    { label: "GET /organization", method: "GET", path: "/api/v1/organization" },
    { label: "GET /projects", method: "GET", path: "/api/v1/projects" },
    { label: "GET /projects/:id", method: "GET", path: `/api/v1/projects/${f.project.id}` },
    {
      label: "PATCH /projects/:id",
      method: "PATCH",
      path: `/api/v1/projects/${f.project.id}`,
      body: { name: "Renamed by an intruder", description: "x" },
    },
    { label: "GET /alerts", method: "GET", path: "/api/v1/alerts?status=all" },
    { label: "GET /alerts/:id", method: "GET", path: `/api/v1/alerts/${f.alertId}` },
    { label: "GET /alerts/:alert_id/events", method: "GET", path: `/api/v1/alerts/${f.alertId}/events` },
    { label: "POST /alerts/:id/snooze", method: "POST", path: `/api/v1/alerts/${f.alertId}/snooze`, body: { duration: "1w" } },
    { label: "POST /alerts/:id/unsnooze", method: "POST", path: `/api/v1/alerts/${f.quietAlertId}/unsnooze` },
    { label: "POST /alerts/:id/enable", method: "POST", path: `/api/v1/alerts/${f.quietAlertId}/enable` },
    { label: "POST /alerts/:id/disable", method: "POST", path: `/api/v1/alerts/${f.alertId}/disable` },
  ];
}

function send(harness: Harness, endpoint: Endpoint, headers: Record<string, string>, query = ""): Promise<CallResult> {
  const sep = endpoint.path.includes("?") ? "&" : "?";
  const path = query ? `${endpoint.path}${sep}${query}` : endpoint.path;
  return harness.call(endpoint.method, path, { key: null, headers, body: endpoint.body });
}

/** Everything the organization's key can see, to prove that rejected requests changed nothing. */
async function snapshot(f: Fixture) {
  const get = async (path: string) => {
    const res = await h.get(path, f.key);
    expect(res.status, `${path}: ${res.text}`).toBe(200);
    return res.body;
  };
  return {
    organization: await get("/api/v1/organization"),
    project: await get(`/api/v1/projects/${f.project.id}`),
    alerts: await get(`/api/v1/alerts?status=all&project_id=${f.project.id}&limit=100`),
    events: await get(`/api/v1/alerts/${f.alertId}/events`),
  };
}

const flipLast = (token: string) => token.slice(0, -1) + (token.endsWith("A") ? "B" : "A");

type Credential = { label: string; headers: (f: Fixture) => Record<string, string>; query?: (f: Fixture) => string };

const REJECTED: Credential[] = [
  { label: "no Authorization header", headers: () => ({}) },
  { label: "empty Authorization header", headers: () => ({ authorization: "" }) },
  { label: "Basic scheme (key as user)", headers: (f) => ({ authorization: `Basic ${btoa(`${f.key}:`)}` }) },
  { label: "Basic scheme (user:password)", headers: () => ({ authorization: `Basic ${btoa("admin:admin")}` }) },
  { label: "Bearer with nothing", headers: () => ({ authorization: "Bearer" }) },
  { label: "Bearer followed by spaces", headers: () => ({ authorization: "Bearer   " }) },
  { label: "valid key without a scheme", headers: (f) => ({ authorization: f.key }) },
  { label: "valid key under another scheme (Token)", headers: (f) => ({ authorization: `Token ${f.key}` }) },
  { label: "valid key followed by extra text", headers: (f) => ({ authorization: `Bearer ${f.key} extra` }) },
  { label: "key with the wrong prefix", headers: (f) => ({ authorization: `Bearer ctu_${f.key.slice(4)}` }) },
  { label: "key with a bad checksum (last character flipped)", headers: (f) => ({ authorization: `Bearer ${flipLast(f.key)}` }) },
  { label: "truncated key", headers: (f) => ({ authorization: `Bearer ${f.key.slice(0, -1)}` }) },
  { label: "well-formed but unknown key", headers: () => ({ authorization: `Bearer ${generateToken("apiKey")}` }) },
  { label: "previous key after regeneration", headers: (f) => ({ authorization: `Bearer ${f.previousKey}` }) },
  { label: "the project's upload token", headers: (f) => ({ authorization: `Bearer ${f.uploadToken}` }) },
  { label: "the admin token", headers: () => ({ authorization: `Bearer ${ADMIN_TOKEN}` }) },
  { label: "key in the query string (?api_key=)", headers: () => ({}), query: (f) => `api_key=${f.key}` },
  { label: "key in the query string (?access_token=)", headers: () => ({}), query: (f) => `access_token=${f.key}` },
  { label: "key in an X-API-Key header", headers: (f) => ({ "x-api-key": f.key }) },
];

describe("credential matrix × every endpoint", () => {
  it.each(REJECTED.map((c) => [c.label, c] as const))(
    "%s → 401 unauthorized on all 11 endpoints, nothing leaked or changed",
    async (_label, credential) => {
      const f = await newFixture(h, "Matrix");
      const before = await snapshot(f);
      const endpoints = endpointsOf(f);
      expect(endpoints).toHaveLength(11);
      // Strings that the caller did not send and that only a successful request could reveal.
      const secrets = [f.organization.id, f.organization.name, f.project.name, f.project.description!, f.key, f.uploadToken, ADMIN_TOKEN];

      const results = [];
      for (const endpoint of endpoints) {
        const res = await send(h, endpoint, credential.headers(f), credential.query?.(f));
        results.push({
          endpoint: endpoint.label,
          status: res.status,
          body: res.body,
          messageIsText: typeof res.body?.error?.message === "string" && res.body.error.message.length > 0,
          wwwAuthenticate: res.headers.get("www-authenticate"),
          leaked: secrets.filter((s) => res.text.includes(s)),
        });
      }
      expect(results).toEqual(
        endpoints.map((endpoint) => ({
          endpoint: endpoint.label,
          status: 401,
          body: { error: { code: "unauthorized", message: expect.any(String) } },
          messageIsText: true,
          wwwAuthenticate: expect.stringMatching(/^Bearer\b/),
          leaked: [],
        })),
      );

      expect(await snapshot(f)).toEqual(before);
      expect(before.project.name).toBe(f.project.name);
      const quiet = before.alerts.data.find((a: { id: string }) => a.id === f.quietAlertId);
      expect(quiet).toMatchObject({ active: false, snoozed: true });
    },
  );

  it.each(["bearer", "BEARER", "bEaReR"])("the scheme is case-insensitive: `%s <key>` is accepted on all 11 endpoints", async (scheme) => {
    const f = await newFixture(h, "Scheme");
    const results = [];
    for (const endpoint of endpointsOf(f)) {
      const res = await send(h, endpoint, { authorization: `${scheme} ${f.key}` });
      results.push({ endpoint: endpoint.label, status: res.status });
    }
    expect(results).toEqual(endpointsOf(f).map((e) => ({ endpoint: e.label, status: 200 })));
    // The accepted requests really acted: the rename and the alert actions took effect.
    const project = await h.get(`/api/v1/projects/${f.project.id}`, f.key);
    expect(project.body.name).toBe("Renamed by an intruder");
    const quiet = await h.get(`/api/v1/alerts/${f.quietAlertId}`, f.key);
    expect(quiet.body).toMatchObject({ active: true, snoozed: false });
  });

  it("the live key with the standard `Bearer` scheme is accepted on all 11 endpoints (control)", async () => {
    const f = await newFixture(h, "Control");
    for (const endpoint of endpointsOf(f)) {
      const res = await send(h, endpoint, { authorization: `Bearer ${f.key}` });
      expect(res.status, `${endpoint.label}: ${res.text}`).toBe(200);
    }
  });
});

describe("401 responses", () => {
  it("carry `WWW-Authenticate: Bearer …` and `Cache-Control: no-store`; a 200 carries no challenge and is private", async () => {
    const f = await newFixture(h, "Headers");
    for (const authorization of [
      undefined,
      "Bearer",
      `Bearer ${generateToken("apiKey")}`,
      `Bearer ${f.previousKey}`,
      "Basic Zm9vOmJhcg==",
    ]) {
      const res = await h.call("GET", "/api/v1/organization", { key: null, headers: authorization === undefined ? {} : { authorization } });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer( |$)/);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    }
    const ok = await h.get("/api/v1/organization", f.key);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("www-authenticate")).toBeNull();
    // A GET with an ETag may be revalidated by the client that holds it, never kept by a shared cache
    // (docs/conditional-requests.md); it varies with the key.
    expect(ok.headers.get("cache-control")).toBe("private, no-cache");
    expect(ok.headers.get("vary")).toMatch(/authorization/i);
  });
});

describe("key regeneration", () => {
  it("100 regenerations in a row: the old key is rejected on the very next request every time, the new key always works", async () => {
    const f = await newFixture(h, "Rotation");
    const endpoints = endpointsOf(f);
    const oldKeys: string[] = [f.previousKey];
    let current = f.key;
    let oldAccepted = 0;
    let newAccepted = 0;
    const wrongKeyShown: string[] = [];
    for (let i = 0; i < 100; i++) {
      const next = await regenerateKey(h, f.organization.id);
      expect(next.secret).not.toBe(current);
      // The very next request with the replaced key, rotating through every endpoint.
      const old = await send(h, endpoints[i % endpoints.length]!, { authorization: `Bearer ${current}` });
      if (old.status !== 401) oldAccepted++;
      const fresh = await h.get("/api/v1/organization", next.secret);
      if (fresh.status === 200) newAccepted++;
      if (fresh.body?.api_key?.id !== next.id) wrongKeyShown.push(`${i}: ${fresh.text}`);
      oldKeys.push(current);
      current = next.secret;
    }
    expect(oldAccepted).toBe(0);
    expect(newAccepted).toBe(100);
    expect(wrongKeyShown).toEqual([]);

    // Every one of the 101 replaced keys stays dead; only the last one works.
    const stillAccepted = [];
    for (const key of oldKeys) if ((await h.get("/api/v1/organization", key)).status !== 401) stillAccepted.push(key);
    expect(stillAccepted).toEqual([]);
    expect(new Set([...oldKeys, current]).size).toBe(102);
    expect((await h.get("/api/v1/organization", current)).status).toBe(200);

    // Exactly one live key row remains for the organization.
    const rows = await h.db.select().from(apiKeys).where(eq(apiKeys.organizationId, f.organization.id));
    expect(rows).toHaveLength(102);
    expect(rows.filter((r) => r.revokedAt === null)).toHaveLength(1);
  });
});

describe("cross-organization isolation", () => {
  type Probe = { label: string; method: Endpoint["method"]; path: (id: string) => string; body?: unknown; kind: "project" | "alert" };
  const PROBES: Probe[] = [
    { label: "GET /projects/:id", method: "GET", path: (id) => `/api/v1/projects/${id}`, kind: "project" },
    {
      label: "PATCH /projects/:id",
      method: "PATCH",
      path: (id) => `/api/v1/projects/${id}`,
      body: { name: "Pwned", description: "pwned" },
      kind: "project",
    },
    { label: "GET /alerts?project_id=", method: "GET", path: (id) => `/api/v1/alerts?project_id=${id}`, kind: "project" },
    {
      label: "GET /alerts?project_id=&status=all",
      method: "GET",
      path: (id) => `/api/v1/alerts?status=all&project_id=${id}`,
      kind: "project",
    },
    { label: "GET /alerts/:id", method: "GET", path: (id) => `/api/v1/alerts/${id}`, kind: "alert" },
    { label: "GET /alerts/:alert_id/events", method: "GET", path: (id) => `/api/v1/alerts/${id}/events`, kind: "alert" },
    {
      label: "POST /alerts/:id/snooze",
      method: "POST",
      path: (id) => `/api/v1/alerts/${id}/snooze`,
      body: { duration: "1w" },
      kind: "alert",
    },
    { label: "POST /alerts/:id/unsnooze", method: "POST", path: (id) => `/api/v1/alerts/${id}/unsnooze`, kind: "alert" },
    { label: "POST /alerts/:id/enable", method: "POST", path: (id) => `/api/v1/alerts/${id}/enable`, kind: "alert" },
    { label: "POST /alerts/:id/disable", method: "POST", path: (id) => `/api/v1/alerts/${id}/disable`, kind: "alert" },
  ];

  it("another organization's project and alert ids answer exactly like unknown ids (404), on every route and method, and change nothing", async () => {
    const fixtures = [await newFixture(h, "Tenant-A"), await newFixture(h, "Tenant-B"), await newFixture(h, "Tenant-C")];
    const before = await Promise.all(fixtures.map((f) => snapshot(f)));

    const mismatches: unknown[] = [];
    let probes = 0;
    for (const attacker of fixtures) {
      for (const victim of fixtures) {
        if (victim === attacker) continue;
        for (const probe of PROBES) {
          const ids = probe.kind === "project" ? [victim.project.id] : [victim.alertId, victim.quietAlertId];
          for (const id of ids) {
            const foreign = await h.call(probe.method, probe.path(id), { key: attacker.key, body: probe.body });
            const unknown = await h.call(probe.method, probe.path(randomUUID()), { key: attacker.key, body: probe.body });
            probes++;
            const seen = { status: foreign.status, body: foreign.body };
            const expected = { status: 404, body: unknown.body };
            if (unknown.status !== 404 || unknown.body?.error?.code !== "not_found" || JSON.stringify(seen) !== JSON.stringify(expected)) {
              mismatches.push({
                probe: probe.label,
                attacker: attacker.organization.name,
                foreign: seen,
                unknown: { status: unknown.status, body: unknown.body },
              });
            }
            for (const secret of [victim.project.name, victim.organization.name, victim.organization.id]) {
              if (foreign.text.includes(secret)) mismatches.push({ probe: probe.label, leaked: secret });
            }
          }
        }
      }
    }
    expect(probes).toBe(6 * (4 + 6 * 2));
    expect(mismatches).toEqual([]);

    // Nothing changed for any victim: names, alert states and events are as before.
    const after = await Promise.all(fixtures.map((f) => snapshot(f)));
    expect(after).toEqual(before);
    for (const [i, f] of fixtures.entries()) {
      expect(after[i]!.project.name).toBe(f.project.name);
      const fresh = after[i]!.alerts.data.find((a: { id: string }) => a.id === f.alertId);
      const quiet = after[i]!.alerts.data.find((a: { id: string }) => a.id === f.quietAlertId);
      expect(fresh).toMatchObject({ active: true, snoozed: false, snoozed_until: null, events_count: 1 });
      expect(quiet).toMatchObject({ active: false, snoozed: true });
    }
  });

  it("malformed ids are 404 not_found on every id-taking route", async () => {
    const f = await newFixture(h, "Malformed");
    for (const probe of PROBES) {
      for (const id of ["not-a-uuid", "1", `${f.project.id}x`, f.project.id.toUpperCase().replace(/-/g, "")]) {
        const res = await h.call(probe.method, probe.path(encodeURIComponent(id)), { key: f.key, body: probe.body });
        expect({ probe: probe.label, id, status: res.status, code: res.body?.error?.code }).toEqual({
          probe: probe.label,
          id,
          status: 404,
          code: "not_found",
        });
      }
    }
  });

  it("lists never contain another organization's projects or alerts (several organizations, every page)", async () => {
    const tenants: { key: string; projectIds: Set<string>; alertIds: Set<string>; organizationId: string }[] = [];
    for (let t = 0; t < 4; t++) {
      const { organization, apiKey } = await h.newOrganization(`Lists ${t}`);
      issued.push(apiKey);
      const projectIds = new Set<string>();
      const alertIds = new Set<string>();
      // Tenant 3 has no projects at all: its lists must be empty, not someone else's.
      for (let p = 0; p < (t === 3 ? 0 : t + 2); p++) {
        const created = await h.newProject(organization.id, `Lists ${t}.${p}`);
        issued.push(created.uploadToken);
        projectIds.add(created.project.id);
        for (const id of Object.values(created.alertIds)) alertIds.add(id);
      }
      tenants.push({ key: apiKey, projectIds, alertIds, organizationId: organization.id });
    }
    // Change states so that every status filter has something to show.
    const t0 = tenants[0]!;
    const [a0, a1] = [...t0.alertIds];
    expect((await h.post(`/api/v1/alerts/${a0}/snooze`, t0.key, { duration: "1h" })).status).toBe(200);
    expect((await h.post(`/api/v1/alerts/${a1}/disable`, t0.key)).status).toBe(200);

    for (const tenant of tenants) {
      const projectsSeen = await collectAll(h, "/api/v1/projects", tenant.key, 2);
      expect(new Set(projectsSeen.items.map((p) => p.id))).toEqual(tenant.projectIds);
      const alertsSeen = await collectAll(h, "/api/v1/alerts?status=all", tenant.key, 3);
      expect(new Set(alertsSeen.items.map((a) => a.id))).toEqual(tenant.alertIds);
      expect(alertsSeen.items.every((a) => tenant.projectIds.has(a.project_id))).toBe(true);
      for (const status of ["active", "snoozed", "inactive"]) {
        const filtered = await collectAll(h, `/api/v1/alerts?status=${status}`, tenant.key, 100);
        for (const alert of filtered.items) expect(tenant.alertIds.has(alert.id), `${status} ${alert.id}`).toBe(true);
      }
      for (const alertType of ["test_flakiness", "failure_rate_spike"]) {
        const filtered = await collectAll(h, `/api/v1/alerts?status=all&alert_type=${alertType}`, tenant.key, 100);
        expect(filtered.items).toHaveLength(tenant.projectIds.size);
        for (const alert of filtered.items) expect(tenant.alertIds.has(alert.id)).toBe(true);
      }
      for (const projectId of tenant.projectIds) {
        const own = await collectAll(h, `/api/v1/alerts?status=all&project_id=${projectId}`, tenant.key, 100);
        expect(own.items).toHaveLength(4);
      }
      const organization = await h.get("/api/v1/organization", tenant.key);
      expect(organization.body.id).toBe(tenant.organizationId);
    }
  });
});

describe("secrets at rest, in responses and in logs", () => {
  it("the database holds only SHA-256 hashes of API keys and upload tokens, never the values", async () => {
    const keys: { id: string; secret: string; live: boolean }[] = [];
    const tokens: { projectId: string; token: string; live: boolean }[] = [];
    for (let o = 0; o < 2; o++) {
      const created = await h.newOrganization(`Rest ${o}`);
      issued.push(created.apiKey);
      keys.push({ id: created.apiKeyObject.id, secret: created.apiKey, live: true });
      for (let r = 0; r < 2; r++) {
        keys.at(-1)!.live = false;
        const next = await regenerateKey(h, created.organization.id);
        keys.push({ id: next.id, secret: next.secret, live: true });
      }
      for (let p = 0; p < 2; p++) {
        const project = await h.newProject(created.organization.id, `Rest ${o}.${p}`);
        issued.push(project.uploadToken);
        tokens.push({ projectId: project.project.id, token: project.uploadToken, live: true });
        if (p === 0) {
          const res = await h.admin("POST", `/projects/${project.project.id}/upload_token/regenerate`);
          expect(res.status).toBe(200);
          issued.push(res.body.upload_token);
          tokens.at(-1)!.live = false;
          tokens.push({ projectId: project.project.id, token: res.body.upload_token, live: true });
        }
      }
    }
    const secrets = [...keys.map((k) => k.secret), ...tokens.map((t) => t.token), ...issued];
    // The random part alone (without prefix and checksum) must not be stored either.
    const needles = secrets.flatMap((s) => (s.length === 53 ? [s, s.slice(4, 47), s.slice(8)] : [s]));

    const tables = {
      api_keys: await h.db.select().from(apiKeys),
      projects: await h.db.select().from(projects),
      organizations: await h.db.select().from(organizations),
      alerts: await h.db.select().from(alerts),
    };
    const found: string[] = [];
    for (const [table, rows] of Object.entries(tables)) {
      for (const row of rows) {
        for (const [column, value] of Object.entries(row)) {
          const text = value instanceof Date ? value.toISOString() : JSON.stringify(value);
          for (const needle of needles) if (text?.includes(needle)) found.push(`${table}.${column} contains ${needle.slice(0, 8)}…`);
        }
      }
    }
    expect(found).toEqual([]);

    for (const key of keys) {
      const [row] = await h.db.select().from(apiKeys).where(eq(apiKeys.id, key.id));
      expect(row, key.id).toBeDefined();
      expect(row!.keyHash).toBe(sha256(key.secret));
      expect(row!.keyHash).toMatch(/^[0-9a-f]{64}$/);
      expect(row!.displayPrefix.length).toBeLessThanOrEqual(8);
      expect(key.secret.startsWith(row!.displayPrefix)).toBe(true);
      expect(row!.revokedAt === null).toBe(key.live);
    }
    for (const token of tokens.filter((t) => t.live)) {
      const [row] = await h.db.select().from(projects).where(eq(projects.id, token.projectId));
      expect(row!.uploadTokenHash).toBe(sha256(token.token));
    }
    for (const token of tokens.filter((t) => !t.live)) {
      const rows = await h.db
        .select()
        .from(projects)
        .where(eq(projects.uploadTokenHash, sha256(token.token)));
      expect(rows).toEqual([]);
    }
  });

  it("no /api/v1 response contains the API key, the upload token or the admin token", async () => {
    const f = await newFixture(h, "Responses");
    const needles = [
      f.key,
      f.key.slice(4, 47),
      f.previousKey,
      f.previousKey.slice(4, 47),
      f.uploadToken,
      f.uploadToken.slice(4, 47),
      ADMIN_TOKEN,
    ];
    const paths = [
      ...endpointsOf(f),
      { label: "GET /openapi.json", method: "GET" as const, path: "/api/v1/openapi.json" },
      { label: "GET /projects?limit=1", method: "GET" as const, path: "/api/v1/projects?limit=1" },
      { label: "PATCH blank name", method: "PATCH" as const, path: `/api/v1/projects/${f.project.id}`, body: { name: " " } },
      { label: "snooze bad duration", method: "POST" as const, path: `/api/v1/alerts/${f.alertId}/snooze`, body: { duration: f.key } },
      { label: "unknown route", method: "GET" as const, path: "/api/v1/nothing-here" },
    ];
    for (const endpoint of paths) {
      const res = await send(h, endpoint, { authorization: `Bearer ${f.key}` });
      const headerText = [...res.headers.entries()].map(([k, v]) => `${k}: ${v}`).join("\n");
      const leaked = needles.filter((n) => res.text.includes(n) || headerText.includes(n));
      expect({ endpoint: endpoint.label, status: res.status < 500, leaked }).toEqual({
        endpoint: endpoint.label,
        status: true,
        leaked: [],
      });
    }
    const organization = await h.get("/api/v1/organization", f.key);
    expect(Object.keys(organization.body.api_key).sort()).toEqual(["created_at", "id", "name"]);
  });

  it("the logs never contain an issued secret, also after errors", async () => {
    const f = await newFixture(h, "Logs");
    // A mix of failures that a careless logger might record with the request.
    await h.get("/api/v1/organization", flipLast(f.key));
    await h.get("/api/v1/organization", f.previousKey);
    await h.call("POST", `/api/v1/alerts/${f.alertId}/snooze`, { key: f.key, rawBody: `{"duration": "${f.uploadToken}"` });
    await h.call("GET", `/api/v1/projects?api_key=${f.key}`, { key: f.key });
    const logText = h.logs.join("\n");
    const leaked = issued.filter((secret) => logText.includes(secret) || logText.includes(secret.slice(4, 47)));
    expect(leaked).toEqual([]);
  });

  it("after a 500 the log records the failure with its Request-Id but no secret, and the client sees no internals", async () => {
    const failing = await createHarness({
      overrides: { keyCounter: faultyKeyCounter("boom") },
    });
    try {
      // Built by hand: newFixture's alert actions go through /api/v1, which fails in this harness.
      const { organization, apiKey: previousKey } = await failing.newOrganization("Boom organization");
      const next = await regenerateKey(failing, organization.id);
      const { project, uploadToken, alertIds } = await failing.newProject(organization.id, "Boom project");
      const secrets = [previousKey, next.secret, uploadToken, ADMIN_TOKEN];
      const fixture: Fixture = {
        organization,
        key: next.secret,
        previousKey,
        project,
        uploadToken,
        alertId: alertIds.test_flakiness!,
        quietAlertId: alertIds.failure_rate_spike!,
        alertIds,
      };
      const requestIds: string[] = [];
      for (const endpoint of endpointsOf(fixture)) {
        for (const query of ["", `api_key=${next.secret}&token=${uploadToken}`]) {
          const res = await send(failing, endpoint, { authorization: `Bearer ${next.secret}` }, query);
          expect({ endpoint: endpoint.label, status: res.status, code: res.body?.error?.code }).toEqual({
            endpoint: endpoint.label,
            status: 500,
            code: "internal_error",
          });
          expect(res.text).not.toMatch(/boom|stack|\.ts:\d+|Error:/);
          expect(Object.keys(res.body.error).sort()).toEqual(["code", "message"]);
          requestIds.push(res.headers.get("request-id")!);
        }
      }
      const logText = failing.logs.join("\n");
      expect(failing.logs.length).toBeGreaterThanOrEqual(22);
      expect(logText).toContain("boom");
      for (const id of requestIds) expect(logText).toContain(id);
      const leaked = secrets.filter((s) => logText.includes(s) || logText.includes(s.slice(4, 47)));
      expect(leaked).toEqual([]);
    } finally {
      await failing.close();
    }
  });
});
