/**
 * /readyz with a database that refuses every connection: 503 service_unavailable in the error
 * envelope with Retry-After, a body that names no host, port or driver error (the log has the
 * cause), while /healthz, which touches no database, still answers 200.
 */
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as schema from "../../src/db/schema";
import type { Database } from "../../src/db/types";
import { type Harness, createHarness } from "../support/harness";

// Port 9 (discard) has no Postgres: every connection is refused.
const unreachable = new pg.Pool({ connectionString: "postgres://nobody@127.0.0.1:9/none", connectionTimeoutMillis: 2000 });
unreachable.on("error", () => {});

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ overrides: { db: drizzle(unreachable, { schema }) as unknown as Database } });
});
afterAll(async () => {
  await h.close();
  await unreachable.end();
});

describe("probes with the database unreachable", () => {
  it("/readyz answers 503 service_unavailable with Retry-After and no internals; /healthz answers 200", async () => {
    const ready = await h.get("/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ error: { code: "service_unavailable", message: expect.any(String) } });
    expect(ready.headers.get("retry-after")).toBe("1");
    expect(ready.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|:9\b|postgres|pg/i);
    expect(h.logs.some((line) => line.includes("readiness check failed") && line.includes("ECONNREFUSED"))).toBe(true);

    const health = await h.get("/healthz");
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: "ok" });
  });
});
