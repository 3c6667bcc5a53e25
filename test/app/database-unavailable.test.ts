/**
 * A database that cannot take the request (refused connection, too many clients) is a retryable
 * 503 service_unavailable with Retry-After, not a 500, and the log keeps the cause.
 */
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as schema from "../../src/db/schema";
import type { Database } from "../../src/db/types";
import { generateToken } from "../../src/lib/keys";
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

describe("database unavailable", () => {
  it("answers 503 service_unavailable with Retry-After on the API and the admin API", async () => {
    for (const res of [
      await h.get("/api/v1/projects", generateToken("apiKey")),
      await h.admin("POST", "/organizations", { name: "Nope" }),
    ]) {
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: { code: "service_unavailable", message: expect.any(String) } });
      expect(res.headers.get("retry-after")).toBe("1");
    }
    expect(h.logs.some((line) => line.includes("database unavailable") && line.includes("ECONNREFUSED"))).toBe(true);
  });
});
