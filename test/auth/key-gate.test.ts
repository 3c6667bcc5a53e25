/**
 * The key gate: a key resolves through a process-level cache and its counter (no database round
 * trip once warm), a regenerated key is rejected on the very next request even with a warm cache,
 * and an unreachable counter fails closed with 503.
 */
import { eq, isNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemoryKeyCounter } from "../../src/auth/in-memory-key-counter";
import { type KeyCounter, admitRequest, newKeyState, revokeKey } from "../../src/auth/key-state";
import { apiKeys } from "../../src/db/schema";
import { ManualClock } from "../../src/lib/clock";
import { type Harness, createHarness } from "../support/harness";

/** A counter that can be switched to "unreachable", the way a Durable Object stub call fails. */
class SwitchableCounter implements KeyCounter {
  down = false;
  readonly inner = new InMemoryKeyCounter(new ManualClock(Date.now()));
  admit: KeyCounter["admit"] = async (keyId, resolution) => {
    if (this.down) throw new Error("Durable Object unreachable");
    return this.inner.admit(keyId, resolution);
  };
  revoke: KeyCounter["revoke"] = async (keyIds) => {
    if (this.down) throw new Error("Durable Object unreachable");
    return this.inner.revoke(keyIds);
  };
}

let h: Harness;
let counter: SwitchableCounter;
let flaky: Harness;
beforeAll(async () => {
  h = await createHarness();
  counter = new SwitchableCounter();
  flaky = await createHarness({ overrides: { keyCounter: counter } });
});
afterAll(async () => {
  await h.close();
  await flaky.close();
});

describe("resolution without a database round trip", () => {
  it("a warm key is admitted from the cache and its counter, without reading api_keys", async () => {
    const { organization, apiKey } = await h.newOrganization();
    expect((await h.get("/api/v1/organization", apiKey)).status).toBe(200);
    // Revoke the row behind the gate's back: a cache-and-counter admission does not see it.
    await h.db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.organizationId, organization.id));
    const projects = await h.get("/api/v1/projects", apiKey);
    expect(projects.status).toBe(200);
    // A cold process (new app, empty cache) reads the database and rejects it.
    const cold = await createHarness();
    try {
      expect((await cold.get("/api/v1/projects", apiKey)).status).toBe(401);
    } finally {
      await cold.close();
    }
  });

  it("regeneration rejects the old key on the very next request although its cache entry is warm", async () => {
    const { organization, apiKey } = await h.newOrganization();
    for (let i = 0; i < 3; i++) expect((await h.get("/api/v1/projects", apiKey)).status).toBe(200);
    const regenerated = await h.admin("POST", `/organizations/${organization.id}/api_key/regenerate`);
    expect(regenerated.status).toBe(200);
    expect((await h.get("/api/v1/projects", apiKey)).status).toBe(401);
    expect((await h.get("/api/v1/projects", regenerated.body.api_key.secret)).status).toBe(200);
  });
});

describe("an unreachable counter fails closed", () => {
  it("answers 503 service_unavailable with Retry-After, not a 500, and never admits", async () => {
    const { apiKey } = await flaky.newOrganization();
    expect((await flaky.get("/api/v1/projects", apiKey)).status).toBe(200);
    counter.down = true;
    try {
      const res = await flaky.get("/api/v1/projects", apiKey);
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: { code: "service_unavailable", message: expect.any(String) } });
      expect(res.headers.get("retry-after")).toBe("1");
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    } finally {
      counter.down = false;
    }
    expect((await flaky.get("/api/v1/projects", apiKey)).status).toBe(200);
  });

  it("a regeneration that cannot revoke the old key changes nothing and answers 503", async () => {
    const { organization, apiKey } = await flaky.newOrganization();
    counter.down = true;
    let res: Awaited<ReturnType<Harness["admin"]>>;
    try {
      res = await flaky.admin("POST", `/organizations/${organization.id}/api_key/regenerate`);
    } finally {
      counter.down = false;
    }
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe("service_unavailable");
    expect(res.text).not.toContain("cta_");
    // The transaction rolled back: the old key is still the one live key.
    const live = await flaky.db.select().from(apiKeys).where(eq(apiKeys.organizationId, organization.id));
    expect(live.filter((k) => k.revokedAt === null)).toHaveLength(1);
    expect((await flaky.get("/api/v1/organization", apiKey)).status).toBe(200);
    const all = await flaky.db.select().from(apiKeys).where(isNull(apiKeys.revokedAt));
    expect(all.length).toBeGreaterThan(0);
  });
});

describe("key state", () => {
  const policy = { limit: 2, windowMs: 1_000 };

  it("is unresolved until told the organization, and counts nothing meanwhile", () => {
    const state = newKeyState();
    expect(admitRequest(state, undefined, 0, policy)).toEqual({ status: "unresolved" });
    expect(state.window).toEqual([]);
    expect(admitRequest(state, { organizationId: "org-1" }, 0, policy)).toMatchObject({ status: "admitted", organizationId: "org-1" });
    expect(admitRequest(state, undefined, 1, policy)).toMatchObject({ status: "admitted", organizationId: "org-1" });
  });

  it("stays revoked: a later resolution from a stale read does not bring the key back", () => {
    const state = newKeyState();
    admitRequest(state, { organizationId: "org-1" }, 0, policy);
    revokeKey(state);
    expect(admitRequest(state, { organizationId: "org-1" }, 10, policy)).toEqual({ status: "revoked" });
    expect(admitRequest(state, undefined, 10, policy)).toEqual({ status: "revoked" });
  });

  it("a key the counter has forgotten re-resolves from the database on its next request", async () => {
    // Forgets every organization between requests, as a counter whose storage was reset would.
    const inner = new InMemoryKeyCounter(new ManualClock(0));
    const forgetful: KeyCounter = {
      admit: async (keyId, resolution) => (resolution ? inner.admit(keyId, resolution) : { status: "unresolved" }),
      revoke: (keyIds) => inner.revoke(keyIds),
    };
    const harness = await createHarness({ overrides: { keyCounter: forgetful } });
    try {
      const { apiKey } = await harness.newOrganization();
      expect((await harness.get("/api/v1/organization", apiKey)).status).toBe(200);
      expect((await harness.get("/api/v1/organization", apiKey)).status).toBe(200);
    } finally {
      await harness.close();
    }
  });
});
