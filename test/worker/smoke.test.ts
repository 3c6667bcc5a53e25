/**
 * The Worker end to end inside workerd: SELF.fetch → Hono app → Neon driver (WebSocket) → local
 * bridge → Postgres wire endpoint (embedded PGlite behind the serialising gate, or the
 * TEST_DATABASE_URL server), plus the per-key Durable Object for auth and rate limits.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

import { ADMIN_TOKEN } from "../support/harness-core";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Json = Record<string, any>;

async function call(
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<{ status: number; body: Json; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await SELF.fetch(`http://worker.test${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Json) : {}, headers: response.headers };
}

const admin = (method: string, path: string, body?: unknown) => call(method, `/admin/v1${path}`, ADMIN_TOKEN, body);
const api = (key: string, method: string, path: string, body?: unknown) => call(method, `/api/v1${path}`, key, body);

describe("the Worker against a real Postgres wire endpoint", () => {
  it("admin creates an organization and a project; the v1 API reads, snoozes, lists events; key regeneration cuts the old key off", async () => {
    const created = await admin("POST", "/organizations", { name: "Worker Smoke", time_zone: "Europe/Berlin" });
    expect(created.status).toBe(201);
    expect(created.body.organization.id).toMatch(UUID);
    expect(created.body.api_key.secret).toMatch(/^cta_/);
    const organizationId: string = created.body.organization.id;
    const key: string = created.body.api_key.secret;

    const project = await admin("POST", `/organizations/${organizationId}/projects`, {
      name: "edge-service",
      description: "Runs on Workers",
    });
    expect(project.status).toBe(201);
    expect(project.body.project.name).toBe("edge-service");
    expect(project.body.upload_token).toEqual(expect.any(String));
    const projectId: string = project.body.project.id;

    const organization = await api(key, "GET", "/organization");
    expect(organization.status).toBe(200);
    expect(organization.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(organization.body).toEqual(created.body.organization);

    const projects = await api(key, "GET", "/projects");
    expect(projects.status).toBe(200);
    expect(projects.body.data.map((p: Json) => p.id)).toEqual([projectId]);
    expect(projects.body.pagination).toEqual({ next_cursor: null, has_more: false });

    const alerts = await api(key, "GET", "/alerts?status=all");
    expect(alerts.status).toBe(200);
    expect(alerts.body.data).toHaveLength(4);
    expect(new Set(alerts.body.data.map((a: Json) => a.alert_type))).toEqual(
      new Set(["performance_regression", "test_flakiness", "skipped_test_count_creep", "failure_rate_spike"]),
    );
    const alertId: string = alerts.body.data[0].id;

    const snoozed = await api(key, "POST", `/alerts/${alertId}/snooze`, { duration: "4h" });
    expect(snoozed.status).toBe(200);
    expect(snoozed.body.snoozed).toBe(true);
    const until = Date.parse(snoozed.body.snoozed_until);
    expect(until - Date.now()).toBeGreaterThan(3.9 * 3_600_000);
    expect(until - Date.now()).toBeLessThanOrEqual(4 * 3_600_000);
    const snoozedList = await api(key, "GET", "/alerts?status=snoozed");
    expect(snoozedList.body.data.map((a: Json) => a.id)).toEqual([alertId]);

    const events = await api(key, "GET", `/alerts/${alertId}/events`);
    expect(events.status).toBe(200);
    expect(events.body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });

    const regenerated = await admin("POST", `/organizations/${organizationId}/api_key/regenerate`);
    expect(regenerated.status).toBe(200);
    const newKey: string = regenerated.body.api_key.secret;
    expect(newKey).not.toBe(key);
    const old = await api(key, "GET", "/organization");
    expect(old.status).toBe(401);
    expect(old.body.error.code).toBe("unauthorized");
    const fresh = await api(newKey, "GET", "/organization");
    expect(fresh.status).toBe(200);
    expect(fresh.body.id).toBe(organizationId);
    expect(fresh.body.api_key.id).toBe(regenerated.body.api_key.id);
  });

  it("50 requests in parallel (reads and writes, several keys) all succeed", async () => {
    const organizations = await Promise.all(
      Array.from({ length: 5 }, async (_, i) => {
        const res = await admin("POST", "/organizations", { name: `Parallel ${i}` });
        expect(res.status).toBe(201);
        return { id: res.body.organization.id as string, key: res.body.api_key.secret as string };
      }),
    );
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const org = organizations[Math.floor(i / 10)]!;
        if (i % 5 === 0) return admin("POST", `/organizations/${org.id}/projects`, { name: `parallel-project-${i}` });
        if (i % 5 === 1) return api(org.key, "GET", "/alerts?status=all");
        if (i % 5 === 2) return api(org.key, "GET", "/projects");
        return api(org.key, "GET", "/organization");
      }),
    );
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 50 }, (_, i) => (i % 5 === 0 ? 201 : 200)));

    // Every project created in parallel is there, each with its four alerts.
    for (const [index, org] of organizations.entries()) {
      const projects = await api(org.key, "GET", "/projects");
      expect(projects.body.data.map((p: Json) => p.name).sort()).toEqual(
        Array.from({ length: 50 }, (_, i) => i)
          .filter((i) => i % 5 === 0 && Math.floor(i / 10) === index)
          .map((i) => `parallel-project-${i}`)
          .sort(),
      );
      const alerts = await api(org.key, "GET", "/alerts?status=all");
      expect(alerts.body.data).toHaveLength(4 * projects.body.data.length);
    }
  });

  it("the admin API refuses a wrong token", async () => {
    const res = await call("POST", "/admin/v1/organizations", "not-the-admin-token-0123456789", { name: "Nope" });
    expect(res.status).toBe(401);
  });
});
