/**
 * The benchmark's baseline: a plain `new Hono()` (no middleware) whose handlers run the same
 * Drizzle query-builder calls as the services behind GET /projects, GET /alerts,
 * GET /alerts/:id/events, GET /projects/:id/tests (bench:api; with `variant` and the page after a
 * row, bench:variants) and a run's comparison and the first page of its failures (bench:verdicts):
 * same filters, ordering and `limit 25 + 1`; they return the raw rows.
 *
 * Deliberately absent: API-key lookup, rate limiting, Zod validation, cursor decoding/signing,
 * presenters, the request-id/security-header middleware. The organization is fixed at start-up.
 * GET /alerts/:id/events keeps the service's alert lookup (findAlertRow), since that query is part
 * of the endpoint's SQL, not of authentication.
 *
 * The query builders are exported so the driver can EXPLAIN exactly the SQL they produce.
 */
import { and, desc, eq, isNull, lte, or, sql } from "drizzle-orm";
import { Hono } from "hono";
import { alertEvents, alerts, projects, testRuns, tests } from "../src/db/schema";
import type { Database } from "../src/db/types";
import { DEFAULT_PAGE_SIZE, type KeysetPosition, keysetBefore } from "../src/lib/pagination";
import { comparisonQuery, verdictPageQuery } from "../src/services/runs/run-comparison-reads";
import { runInProjectQuery } from "../src/services/runs/test-results";

const LIMIT = DEFAULT_PAGE_SIZE + 1;

/** services/projects.ts listProjects, first page. */
export const projectsQuery = (db: Database, organizationId: string) =>
  db
    .select()
    .from(projects)
    .where(and(eq(projects.organizationId, organizationId), undefined))
    .orderBy(desc(projects.createdAt), desc(projects.id))
    .limit(LIMIT);

/** services/alerts.ts listAlerts with the endpoint's default filter (status=active), first page. */
export const alertsQuery = (db: Database, organizationId: string, now: Date) =>
  db
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

/** services/alerts.ts findAlertRow. */
export const alertQuery = (db: Database, organizationId: string, alertId: string) =>
  db
    .select()
    .from(alerts)
    .where(and(eq(alerts.id, alertId), eq(alerts.organizationId, organizationId)))
    .limit(1);

/** services/alert-events.ts listAlertEvents; `after` = the cursor position (null on the first page). */
export const alertEventsQuery = (db: Database, alertId: string, after: KeysetPosition | null) =>
  db
    .select({ event: alertEvents, run: testRuns })
    .from(alertEvents)
    .innerJoin(testRuns, eq(testRuns.id, alertEvents.testRunId))
    .where(
      and(eq(alertEvents.alertId, alertId), after ? keysetBefore(alertEvents.triggeredAt, alertEvents.id, after, "bigint") : undefined),
    )
    .orderBy(desc(alertEvents.triggeredAt), desc(alertEvents.id))
    .limit(LIMIT);

/** The project lookup and the tests page of GET /projects/:id/tests (sort impact), as the service runs them. */
export const testsProjectQuery = (db: Database, organizationId: string, projectId: string) =>
  db
    .select()
    .from(projects)
    .where(and(eq(projects.id, projectId), eq(projects.organizationId, organizationId)))
    .limit(1);

/** The position after a row of the impact sort: its impact and id (what the service's cursor carries). */
export type ImpactPosition = { impact: number; id: string };

/**
 * services/tests/tests.ts listTests, sort impact: `variant` filters as `?variant=` does (the value
 * already normalized), `after` is the cursor's position (the service's keyset condition for the
 * impact sort, `(impact, id) < (k::int4, id::uuid)`).
 */
export const testsQuery = (
  db: Database,
  projectId: string,
  health: "flaky" | null,
  variant: string | null = null,
  after: ImpactPosition | null = null,
) =>
  db
    .select()
    .from(tests)
    .where(
      and(
        eq(tests.projectId, projectId),
        health ? eq(tests.health, health) : undefined,
        variant === null ? undefined : eq(tests.variant, variant),
        after ? sql`(${tests.impact}, ${tests.id}) < (${after.impact}::int4, ${after.id}::uuid)` : undefined,
      ),
    )
    .orderBy(desc(tests.impact), desc(tests.id))
    .limit(LIMIT);

export function createBareApp(db: Database, organizationId: string): Hono {
  const app = new Hono();

  app.get("/projects", async (c) => c.json(await projectsQuery(db, organizationId)));

  app.get("/alerts", async (c) => c.json(await alertsQuery(db, organizationId, new Date())));

  app.get("/alerts/:id/events", async (c) => {
    const alertId = c.req.param("id");
    const [alert] = await alertQuery(db, organizationId, alertId);
    if (!alert) return c.json({ error: "not found" }, 404);
    return c.json(await alertEventsQuery(db, alertId, null));
  });

  app.get("/projects/:id/tests", async (c) => {
    const [project] = await testsProjectQuery(db, organizationId, c.req.param("id"));
    if (!project) return c.json({ error: "not found" }, 404);
    // `after_impact` and `after_id`: the page after that row (the plain position, where ours takes a signed cursor).
    const afterImpact = c.req.query("after_impact");
    const afterId = c.req.query("after_id");
    const after = afterImpact !== undefined && afterId !== undefined ? { impact: Number(afterImpact), id: afterId } : null;
    return c.json(
      await testsQuery(db, project.id, c.req.query("health") === "flaky" ? "flaky" : null, c.req.query("variant") ?? null, after),
    );
  });

  // A run's comparison and the first page of its failures: the project and its run (one statement), then the service's own query.
  const runOf = async (projectId: string, number: string) => {
    const [row] = await runInProjectQuery(db, organizationId, projectId, Number(number));
    return row?.run ?? null;
  };
  app.get("/projects/:id/test_runs/:number/comparison", async (c) => {
    const run = await runOf(c.req.param("id"), c.req.param("number"));
    if (!run) return c.json({ error: "not found" }, 404);
    return c.json(await comparisonQuery(db, organizationId, run.id));
  });
  app.get("/projects/:id/test_runs/:number/comparison/failures", async (c) => {
    const run = await runOf(c.req.param("id"), c.req.param("number"));
    if (!run) return c.json({ error: "not found" }, 404);
    return c.json(await verdictPageQuery(db, organizationId, run, null, undefined, LIMIT));
  });

  return app;
}
