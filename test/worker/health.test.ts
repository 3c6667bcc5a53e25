/**
 * /readyz inside workerd with a database that cannot be reached (the Neon driver's WebSocket to a
 * port where no Postgres listens): 503 service_unavailable with no internals, while /healthz
 * still answers. The probes' happy paths run here too (test/routes/health.test.ts).
 */
import { env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/neon-serverless";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as schema from "../../src/db/schema";
import type { Database } from "../../src/db/types";
import { requestPool } from "../../src/worker/neon";
import { type Harness, createHarness } from "./support/harness";

const url = new URL(env.DATABASE_URL);
url.port = "9";
const unreachable = requestPool({ ...env, DATABASE_URL: url.toString() }, "test");

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ overrides: { db: drizzle(unreachable, { schema }) as unknown as Database } });
});
afterAll(async () => {
  await h.close();
  await unreachable.end().catch(() => {});
});

describe("probes in workerd with the database unreachable", () => {
  it("/readyz answers 503 service_unavailable with Retry-After and no internals; /healthz answers 200", async () => {
    const ready = await h.get("/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ error: { code: "service_unavailable", message: expect.any(String) } });
    expect(ready.headers.get("retry-after")).toBe("1");
    expect(ready.text).not.toMatch(/127\.0\.0\.1|:9\b|websocket|neon/i);
    const health = await h.get("/healthz");
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: "ok" });
  });
});
