/**
 * /healthz and /readyz (src/routes/health.ts): public probes outside /api/v1, never rate limited,
 * with bodies that tell nothing of the internals. The database that fails: health-unavailable.test.ts
 * (Node) and test/worker/health.test.ts (workerd).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ rateLimit: { limit: 2, windowMs: 60_000 } });
});
afterAll(() => h.close());

describe("GET /healthz and GET /readyz", () => {
  it("answer 200 with a small JSON status, without a key, and not stored by caches", async () => {
    for (const [path, status] of [
      ["/healthz", "ok"],
      ["/readyz", "ready"],
    ] as const) {
      const res = await h.get(path);
      expect(res.status, path).toBe(200);
      expect(res.body, path).toEqual({ status });
      expect(res.headers.get("content-type"), path).toBe("application/json; charset=utf-8");
      expect(res.headers.get("cache-control"), path).toBe("no-store");
      expect(res.headers.get("ratelimit"), path).toBeNull();
    }
  });

  it("are never rate limited, whatever key is sent", async () => {
    const { apiKey } = await h.newOrganization("Probes");
    for (let i = 0; i < 10; i++) {
      for (const path of ["/healthz", "/readyz"]) expect((await h.get(path, i % 2 ? apiKey : null)).status, path).toBe(200);
    }
    // The key's own quota (2 a minute) is untouched by the probes above.
    expect((await h.get("/api/v1/organization", apiKey)).status).toBe(200);
  });

  it("HEAD answers 200; other methods are not routes", async () => {
    expect((await h.call("HEAD", "/healthz")).status).toBe(200);
    expect((await h.call("HEAD", "/readyz")).status).toBe(200);
    expect([404, 405]).toContain((await h.call("POST", "/healthz")).status);
  });
});
