/**
 * The demo organization of `npm start`: simulated CI histories replayed through the upload path.
 * Read back through /api/v1 with the key it returns: three projects with processed runs, suites
 * and cases, and events of all four alert types produced by the real checks (none written by
 * hand), plus one snoozed and one disabled alert, and its people: an admin and a member.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq, inArray } from "drizzle-orm";
import { members, projects, testRuns, uploadPayloads, users } from "../../src/db/schema";
import { DEMO_PROJECTS, seedDemoOrganization } from "../../src/node/demo-seed";
import { WEB_APP_URL, collectAll, createHarness, testSecrets } from "../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
let apiKey: string;
let seeded: Awaited<ReturnType<typeof seedDemoOrganization>>;

beforeAll(async () => {
  h = await createHarness();
  // The seeding gets its own app and clock; it starts from the harness's "now".
  seeded = await seedDemoOrganization(
    { db: h.db, clock: h.clock, webAppUrl: "http://localhost:3000", secrets: testSecrets },
    { logger: { info: () => {}, error: (message) => h.logs.push(message) } },
  );
  apiKey = seeded.apiKey;
}, 120_000);
afterAll(() => h.close());

const ALERT_TYPES = ["test_flakiness", "performance_regression", "failure_rate_spike", "skipped_test_count_creep"] as const;

describe("demo organization", () => {
  it("has three projects whose uploaded runs were all processed, ending about an hour ago", async () => {
    const org = await h.get("/api/v1/organization", apiKey);
    expect(org.status).toBe(200);
    expect(org.body).toMatchObject({ name: "Demo Organization", time_zone: "Europe/Berlin" });

    const { items: projects } = await collectAll(h, "/api/v1/projects", apiKey, 100);
    expect(projects.map((p) => p.name).sort()).toEqual(DEMO_PROJECTS.map((p) => p.name).sort());
    const now = h.clock.now().getTime();
    for (const project of projects) {
      const spec = DEMO_PROJECTS.find((p) => p.name === project.name)!;
      expect(project.test_runs_count).toBe(spec.window.count);
      const last = Date.parse(project.last_test_run_at);
      expect(now - last).toBeGreaterThan(30 * 60_000);
      expect(now - last).toBeLessThan(3 * 3_600_000);

      const { items: runs } = await collectAll(h, `/api/v1/projects/${project.id}/test_runs`, apiKey, 100);
      expect(runs).toHaveLength(spec.window.count);
      expect(runs.every((r) => r.status === "processed" && r.tests_count >= 50 && r.build_url?.startsWith("https://ci.example.com/"))).toBe(
        true,
      );
      // Newest first, in arrival order, spread over days.
      expect(runs.map((r) => r.number)).toEqual(Array.from({ length: spec.window.count }, (_, i) => spec.window.count - i));
      expect(Date.parse(runs[0].created_at) - Date.parse(runs.at(-1).created_at)).toBeGreaterThan(3 * 86_400_000);
      expect(runs.some((r) => r.branch !== "main")).toBe(true);
    }
  });

  it("stores suites and cases of a run", async () => {
    const { items: projects } = await collectAll(h, "/api/v1/projects", apiKey, 100);
    const project = projects[0];
    const suites = await h.get(`/api/v1/projects/${project.id}/test_runs/1/test_suites?limit=100`, apiKey);
    expect(suites.status).toBe(200);
    expect(suites.body.data.length).toBeGreaterThanOrEqual(2);
    const suite = suites.body.data[0];
    const cases = await h.get(`/api/v1/projects/${project.id}/test_runs/1/test_suites/${suite.number}/test_cases?limit=100`, apiKey);
    expect(cases.status).toBe(200);
    expect(cases.body.data.length).toBe(suite.tests_count);
  });

  it("has events of all four alert types, each from a real check, one snoozed and one disabled alert", async () => {
    const { items: alerts } = await collectAll(h, "/api/v1/alerts?status=all", apiKey, 100);
    expect(alerts).toHaveLength(12);

    const typesWithEvents = new Set<string>();
    for (const alert of alerts) {
      const { items: events } = await collectAll(h, `/api/v1/alerts/${alert.id}/events`, apiKey, 100);
      expect(events).toHaveLength(alert.events_count);
      for (const event of events) {
        expect(typeof event.metadata.detector_version).toBe("string");
        expect(event.metadata.detector_version.startsWith(`${alert.alert_type}/`)).toBe(true);
        expect(JSON.stringify(event.metadata)).not.toContain("demo data");
        // An event is recorded when its run is checked, at the run's (simulated) arrival.
        expect(event.triggered_at).toBe(event.test_run.processed_at);
        expect(event.test_run.project_id).toBe(alert.project_id);
      }
      if (events.length > 0) typesWithEvents.add(alert.alert_type);
    }
    expect([...typesWithEvents].sort()).toEqual([...ALERT_TYPES].sort());

    // A handful of events per project, not a flood.
    const total = alerts.reduce((sum, a) => sum + a.events_count, 0);
    expect(total).toBeGreaterThanOrEqual(6);
    expect(total).toBeLessThanOrEqual(40);

    const snoozed = alerts.filter((a) => a.snoozed);
    const disabled = alerts.filter((a) => !a.active);
    expect(snoozed).toHaveLength(1);
    expect(disabled).toHaveLength(1);
    expect(Date.parse(snoozed[0].snoozed_until) - h.clock.now().getTime()).toBe(24 * 3_600_000);
  });

  it("one request lists a project's flaky tests, one shows a test's history, and a red run's failures come back grouped", async () => {
    const projects = (await h.get("/api/v1/projects", apiKey)).body.data;
    const checkout = projects.find((p: any) => p.name === "checkout-service");
    expect(checkout.tests_count).toBeGreaterThanOrEqual(50);
    expect(checkout.flaky_tests_count).toBeGreaterThan(0);
    const flaky = await h.get(`/api/v1/projects/${checkout.id}/tests?health=flaky`, apiKey);
    expect(flaky.body.data.length).toBe(Math.min(25, checkout.flaky_tests_count));
    for (const test of flaky.body.data) expect(test.health).toBe("flaky");
    // Every test named in a flakiness event of the project is a flaky test of the API.
    const alerts = (await h.get(`/api/v1/alerts?project_id=${checkout.id}&alert_type=test_flakiness&status=all`, apiKey)).body.data;
    const events = (await collectAll(h, `/api/v1/alerts/${alerts[0].id}/events`, apiKey, 100)).items;
    const named = events.filter((e: any) => typeof e.metadata.test_id === "string");
    expect(named.length).toBeGreaterThan(0);
    for (const event of named) {
      // Flaky at that run: the latest health change up to the event's run made it flaky.
      const transitions = (await collectAll(h, `/api/v1/tests/${event.metadata.test_id}/health_transitions`, apiKey, 100)).items;
      const atRun = transitions.find((t: any) => t.test_run.number <= event.test_run.number);
      expect(atRun?.to).toBe("flaky");
    }

    const history = await h.get(`/api/v1/tests/${flaky.body.data[0].id}/executions?limit=100`, apiKey);
    expect(history.body.data.length).toBe(Math.min(100, flaky.body.data[0].executions_count));
    const redRun = (await h.get(`/api/v1/projects/${checkout.id}/test_runs?result=tests_failed&limit=1`, apiKey)).body.data[0];
    const groups = await h.get(`/api/v1/projects/${checkout.id}/test_runs/${redRun.number}/failure_groups`, apiKey);
    expect(groups.status).toBe(200);
    expect(groups.body.data.reduce((sum: number, g: any) => sum + g.run_occurrences, 0)).toBe(redRun.failed_count + redRun.errored_count);
  });

  it("has an admin and a member who sign in with the passwords made at seeding", async () => {
    expect(seeded.people.map((p) => [p.role, p.email])).toEqual([
      ["admin", "demo-admin@example.com"],
      ["member", "demo-member@example.com"],
    ]);
    for (const person of seeded.people) {
      expect(person.password).toMatch(/^[A-Za-z0-9_-]{16}$/);
      const [row] = await h.db
        .select({ role: members.role, organizationId: members.organizationId })
        .from(users)
        .innerJoin(members, eq(members.userId, users.id))
        .where(eq(users.email, person.email));
      expect(row).toEqual({ role: person.role, organizationId: seeded.organizationId });
    }
    // Sign-in through the harness's app (WEB_APP_URL of the tests).
    const form = new URLSearchParams({ email: seeded.people[1]!.email, password: seeded.people[1]!.password });
    const signIn = await h.app.request("/sign-in", {
      method: "POST",
      headers: { origin: new URL(WEB_APP_URL).origin, "content-type": "application/x-www-form-urlencoded" },
      body: form.toString(),
      redirect: "manual",
    });
    expect(signIn.status).toBe(303);
  });

  it("left nothing pending and logged no errors", async () => {
    // Only the demo's own runs: on Postgres other test files share the database and upload at the same time.
    const demoPending = await h.db
      .select({ testRunId: uploadPayloads.testRunId })
      .from(uploadPayloads)
      .innerJoin(testRuns, eq(testRuns.id, uploadPayloads.testRunId))
      .innerJoin(projects, and(eq(projects.id, testRuns.projectId), inArray(projects.organizationId, [seeded.organizationId])));
    expect(demoPending).toEqual([]);
    expect(h.logs).toEqual([]);
  });
});
