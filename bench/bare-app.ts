/**
 * The benchmark's baseline: a plain `new Hono()` (no middleware) whose three handlers run the
 * same Drizzle query-builder calls as the services behind GET /projects, GET /alerts and
 * GET /alerts/:id/events (same filters, ordering and `limit 25 + 1`), and return the raw rows.
 *
 * Deliberately absent: API-key lookup, rate limiting, Zod validation, cursor decoding/signing,
 * presenters, the request-id/security-header middleware. The organization is fixed at start-up.
 * GET /alerts/:id/events keeps the service's alert lookup (findAlertRow), since that query is part
 * of the endpoint's SQL, not of authentication.
 */
import { and, desc, eq, isNull, lte, or } from "drizzle-orm";
import { Hono } from "hono";
import { alertEvents, alerts, projects, testRuns } from "../src/db/schema";
import type { Database } from "../src/db/types";
import { DEFAULT_PAGE_SIZE } from "../src/lib/pagination";

const LIMIT = DEFAULT_PAGE_SIZE + 1;

export function createBareApp(db: Database, organizationId: string): Hono {
  const app = new Hono();

  app.get("/projects", async (c) => {
    const rows = await db
      .select()
      .from(projects)
      .where(and(eq(projects.organizationId, organizationId), undefined))
      .orderBy(desc(projects.createdAt), desc(projects.id))
      .limit(LIMIT);
    return c.json(rows);
  });

  // status=active, the endpoint's default filter.
  app.get("/alerts", async (c) => {
    const now = new Date();
    const rows = await db
      .select()
      .from(alerts)
      .where(
        and(
          eq(alerts.organizationId, organizationId),
          undefined,
          undefined,
          and(eq(alerts.active, true), or(isNull(alerts.snoozedUntil), lte(alerts.snoozedUntil, now))),
          undefined,
        ),
      )
      .orderBy(desc(alerts.createdAt), desc(alerts.id))
      .limit(LIMIT);
    return c.json(rows);
  });

  app.get("/alerts/:id/events", async (c) => {
    const alertId = c.req.param("id");
    const [alert] = await db
      .select()
      .from(alerts)
      .where(and(eq(alerts.id, alertId), eq(alerts.organizationId, organizationId)))
      .limit(1);
    if (!alert) return c.json({ error: "not found" }, 404);
    const rows = await db
      .select({ event: alertEvents, run: testRuns })
      .from(alertEvents)
      .innerJoin(testRuns, eq(testRuns.id, alertEvents.testRunId))
      .where(and(eq(alertEvents.alertId, alertId), undefined))
      .orderBy(desc(alertEvents.triggeredAt), desc(alertEvents.id))
      .limit(LIMIT);
    return c.json(rows);
  });

  return app;
}
