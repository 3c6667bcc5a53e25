/**
 * Rate limit of /api/v1 (spec part 8; docs/api-decisions.md): at most 600 accepted requests in any rolling
 * 60 seconds per API key, rejected requests consume nothing, IETF RateLimit headers on every
 * authenticated response, Retry-After on 429, and the order authentication → rate limit →
 * validation. The harness clock is manual, so "a burst" means requests at one frozen instant.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CallResult, type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness(); // the default policy: 600 per 60 s
});
afterAll(() => h.close());

const POLICY = '"default";q=600;w=60';
const RATE_LIMIT_RE = /^"default";r=(\d+);t=(\d+)$/;

function rateLimitOf(res: CallResult): { r: number; t: number } {
  const header = res.headers.get("ratelimit");
  expect(header, `RateLimit header on ${res.status}`).not.toBeNull();
  const match = RATE_LIMIT_RE.exec(header!);
  expect(match, header!).not.toBeNull();
  return { r: Number(match![1]), t: Number(match![2]) };
}

function expectRateLimited(res: CallResult) {
  expect(res.status, res.text).toBe(429);
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(res.body.error.code).toBe("rate_limited");
  expect(typeof res.body.error.message).toBe("string");
  const retryAfter = res.headers.get("retry-after");
  expect(retryAfter).toMatch(/^[0-9]+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(res.headers.get("ratelimit-policy")).toBe(POLICY);
  expect(rateLimitOf(res).r).toBe(0);
  return Number(retryAfter);
}

const ping = (key: string) => h.get("/api/v1/organization", key);

async function burst(key: string, count: number, request: (key: string) => Promise<CallResult> = ping) {
  const results: CallResult[] = [];
  for (let i = 0; i < count; i++) results.push(await request(key));
  return results;
}

async function newKey(name = "Rate org") {
  const { organization, apiKey } = await h.newOrganization(name);
  return { orgId: organization.id as string, key: apiKey };
}

describe("quota of 600 requests per rolling minute per key", () => {
  it("a burst of 650 gives exactly 600 successes then 50 × 429 rate_limited; another key is unaffected; rejections consume nothing", async () => {
    const { key } = await newKey();
    const { key: otherKey } = await newKey("Other");
    const results = await burst(key, 650);
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect(ok).toHaveLength(600);
    expect(limited).toHaveLength(50);
    // The successes come first: nothing is rejected before the quota is used up.
    expect(results.slice(0, 600).every((r) => r.status === 200)).toBe(true);
    expect(results.slice(600).every((r) => r.status === 429)).toBe(true);

    ok.forEach((res, i) => {
      expect(res.headers.get("ratelimit-policy")).toBe(POLICY);
      expect(rateLimitOf(res)).toEqual({ r: 599 - i, t: 60 });
    });
    for (const res of limited) {
      // The clock is frozen at the instant of the first request: it leaves the window in 60 s.
      expect(expectRateLimited(res)).toBe(60);
      expect(rateLimitOf(res).t).toBe(60);
    }

    const other = await ping(otherKey);
    expect(other.status).toBe(200);
    expect(rateLimitOf(other).r).toBe(599);

    // 60.001 s later the whole quota is back: only this request is counted.
    h.clock.advance(60_001);
    const again = await ping(key);
    expect(again.status).toBe(200);
    expect(rateLimitOf(again)).toEqual({ r: 599, t: 60 });
  });

  it("successful responses carry RateLimit-Policy and RateLimit with r counting down and t the seconds until quota returns", async () => {
    const { key } = await newKey();
    const first = await ping(key);
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe('"default";q=600;w=60');
    expect(first.headers.get("ratelimit")).toBe('"default";r=599;t=60');
    expect((await ping(key)).headers.get("ratelimit")).toBe('"default";r=598;t=60');
    expect((await ping(key)).headers.get("ratelimit")).toBe('"default";r=597;t=60');
    h.clock.advance(10_000);
    // The oldest counted request leaves the window 50 s from now.
    expect((await ping(key)).headers.get("ratelimit")).toBe('"default";r=596;t=50');
    h.clock.advance(50_000);
    // The first three have left the window: 4 counted → 3, plus this one.
    expect((await ping(key)).headers.get("ratelimit")).toBe('"default";r=598;t=10');
  });

  it("rejections later in the window neither count nor delay the quota; Retry-After is exact (rejected 1 s before, accepted after)", async () => {
    const { key } = await newKey();
    expect((await burst(key, 600)).every((r) => r.status === 200)).toBe(true);
    h.clock.advance(30_000); // t = 30 s
    for (const res of await burst(key, 50)) expect(expectRateLimited(res)).toBe(30);
    h.clock.advance(29_000); // t = 59 s
    expect(expectRateLimited(await ping(key))).toBe(1);
    h.clock.advance(1_000); // t = 60 s: the Retry-After of the first rejection has passed
    const accepted = await ping(key);
    expect(accepted.status).toBe(200);
    // Had the 51 rejections (at t = 30 s and 59 s) been counted, fewer than 599 would be left.
    expect(rateLimitOf(accepted)).toEqual({ r: 599, t: 60 });
  });

  it("the window slides: 300 at t=0 and 300 at t=30 s; at t=45 s rejected; at t=60.001 s 300 more but not 301", async () => {
    const { key } = await newKey();
    expect((await burst(key, 300)).every((r) => r.status === 200)).toBe(true);
    h.clock.advance(30_000);
    const second = await burst(key, 300);
    expect(second.every((r) => r.status === 200)).toBe(true);
    expect(rateLimitOf(second[299]!)).toEqual({ r: 0, t: 30 });

    h.clock.advance(15_000); // t = 45 s
    expect(expectRateLimited(await ping(key))).toBe(15);

    h.clock.advance(15_001); // t = 60.001 s: the first 300 have left the window
    const third = await burst(key, 301);
    expect(third.slice(0, 300).every((r) => r.status === 200)).toBe(true);
    expect(rateLimitOf(third[0]!).r).toBe(299);
    // The next slot frees when the t=30 s requests leave, at t=90 s: 29.999 s from now.
    expect(expectRateLimited(third[300]!)).toBe(30);
  });
});

describe("what counts and in which order", () => {
  it("401 responses carry no RateLimit headers and consume nothing for any key", async () => {
    const { orgId, key } = await newKey();
    // After regeneration `key` is revoked (well-formed but no longer valid) and `live` is the organization's key.
    const live = (await h.admin("POST", `/organizations/${orgId}/api_key/regenerate`)).body.api_key.secret as string;
    const attempts: CallResult[] = [];
    for (let i = 0; i < 20; i++) {
      attempts.push(await h.get("/api/v1/organization", null));
      attempts.push(await h.get("/api/v1/organization", key)); // revoked
      attempts.push(await h.call("GET", "/api/v1/organization", { headers: { authorization: `Basic ${live}` } }));
      attempts.push(await h.call("GET", "/api/v1/organization", { headers: { authorization: "Bearer" } }));
      attempts.push(await h.get("/api/v1/organization", `${live}x`));
      attempts.push(await h.get("/api/v1/projects?limit=0", null));
    }
    for (const res of attempts) {
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("unauthorized");
      expect(res.headers.get("ratelimit")).toBeNull();
      expect(res.headers.get("ratelimit-policy")).toBeNull();
      expect(res.headers.get("retry-after")).toBeNull();
    }
    const first = await ping(live);
    expect(first.status).toBe(200);
    expect(rateLimitOf(first).r).toBe(599);
  });

  it("requests that fail validation still count (after authentication, before validation)", async () => {
    const { key } = await newKey();
    expect(rateLimitOf(await ping(key)).r).toBe(599);
    for (let i = 0; i < 5; i++) {
      const res = await h.get("/api/v1/projects?limit=0", key);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      expect(rateLimitOf(res).r).toBe(598 - i);
    }
    expect(rateLimitOf(await ping(key)).r).toBe(593);
  });

  it("over quota, invalid requests get 429, not 400/404/422; a missing key still gets 401", async () => {
    const { orgId, key } = await newKey();
    const { project, alertIds } = await h.newProject(orgId, "P");
    await burst(key, 600);
    const requests: CallResult[] = [
      await h.get("/api/v1/projects?limit=0", key),
      await h.get("/api/v1/projects?cursor=garbage", key),
      await h.get("/api/v1/alerts?status=bogus", key),
      await h.get("/api/v1/projects/00000000-0000-4000-8000-000000000000", key),
      await h.patch(`/api/v1/projects/${project.id}`, key, { name: "   " }),
      await h.call("PATCH", `/api/v1/projects/${project.id}`, {
        key,
        rawBody: "{not json",
        headers: { "content-type": "application/json" },
      }),
      await h.post(`/api/v1/alerts/${alertIds.test_flakiness}/snooze`, key, { duration: "forever" }),
    ];
    for (const res of requests) expectRateLimited(res);
    // Authentication comes first: a missing key is still a 401 without RateLimit headers.
    const anonymous = await h.get("/api/v1/organization", null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("ratelimit")).toBeNull();
    // Nothing was changed by the rejected PATCH.
    h.clock.advance(60_001);
    const after = await h.get(`/api/v1/projects/${project.id}`, key);
    expect(after.status).toBe(200);
    expect(after.body.name).toBe("P");
  });

  it("every authenticated response carries the RateLimit headers, errors included", async () => {
    const { orgId, key } = await newKey();
    const { project } = await h.newProject(orgId, "P");
    const responses: [number, CallResult][] = [
      [200, await h.get("/api/v1/projects", key)],
      [400, await h.get("/api/v1/projects?limit=abc", key)],
      [404, await h.get("/api/v1/projects/00000000-0000-4000-8000-000000000000", key)],
      [422, await h.patch(`/api/v1/projects/${project.id}`, key, { name: "" })],
      [405, await h.call("DELETE", "/api/v1/projects", { key })],
    ];
    responses.forEach(([status, res], i) => {
      expect(res.status, res.text).toBe(status);
      expect(res.headers.get("ratelimit-policy")).toBe(POLICY);
      expect(rateLimitOf(res).r).toBe(599 - i);
    });
  });

  it("concurrent requests on one key are counted exactly", async () => {
    const { key } = await newKey();
    // One request warms the key; the burst then stops at validation (limit=0 → 400 after the
    // rate limit), so it needs no database connection and measures the limiter alone, not the
    // database's connection cap (a local Postgres allows 100; Neon's pooler 10,000).
    expect((await ping(key)).status).toBe(200);
    const results = await Promise.all(Array.from({ length: 619 }, () => h.get("/api/v1/projects?limit=0", key)));
    expect(results.filter((r) => r.status === 400)).toHaveLength(599);
    expect(results.filter((r) => r.status === 429)).toHaveLength(20);
    const remaining = results
      .filter((r) => r.status === 400)
      .map((r) => rateLimitOf(r).r)
      .sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 599 }, (_, i) => i));
  });
});
