/**
 * Probes for operators and orchestrators, outside /api/v1: no key, no rate limit, and bodies that
 * say nothing about the internals (no versions, hosts or error texts; the log has the cause).
 * - GET /healthz: the process is up and answers (liveness). Touches nothing else.
 * - GET /readyz: the process can serve, its database answers a trivial query (readiness);
 *   otherwise 503 `service_unavailable` in the error envelope, with Retry-After.
 */
import { sql } from "drizzle-orm";
import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { ApiError, describeError } from "../lib/errors";

/** A database that does not answer within this long is not ready (a readiness probe must not hang). */
const READINESS_TIMEOUT_MS = 3000;

export function createHealthRoutes() {
  const health = new Hono<AppEnv>();

  health.get("/healthz", (c) => c.json({ status: "ok" }, 200));

  health.get("/readyz", async (c) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the database did not answer within ${READINESS_TIMEOUT_MS} ms`)), READINESS_TIMEOUT_MS);
    });
    try {
      await Promise.race([c.env.db.execute(sql`select 1`), timeout]);
    } catch (error) {
      c.env.logger.error("readiness check failed", { requestId: c.get("requestId"), error: describeError(error) });
      throw new ApiError("service_unavailable", "The service is not ready: its database is unreachable. Retry shortly.", {
        headers: { "Retry-After": "1" },
      });
    } finally {
      clearTimeout(timer);
    }
    return c.json({ status: "ready" }, 200);
  });

  return health;
}
