/**
 * The pages' happy paths in process (Node): sign-up, the projects home, the project page,
 * sign-out ending the session on the server, sign-in back to `next`. The workerd suite runs the
 * core of it through the Worker (test/worker/web.test.ts); the browser test drives it in Chromium
 * (test/web/sign-up.browser.test.ts).
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alerts, apiKeys, members, organizations, sessions, users } from "../../src/db/schema";
import { createHarness } from "../support/harness";
import { WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe("sign-up", () => {
  it("creates the organization with its API key, the user, an admin membership and a session, then opens /", async () => {
    const client = new WebClient(h.app);
    const email = uniqueEmail("founder");
    const answer = await client.signUp({ name: "Grace Hopper", email, organization: "Acme Analytics" });
    expect(answer.location).toBe("/");
    const cookie = answer.setCookies.find((line) => line.startsWith("__Secure-better-auth.session_token="));
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/; Secure/i);

    const [user] = await h.db.select().from(users).where(eq(users.email, email));
    expect(user!.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(user!.name).toBe("Grace Hopper");
    const [membership] = await h.db.select().from(members).where(eq(members.userId, user!.id));
    expect(membership!.role).toBe("admin");
    const [org] = await h.db.select().from(organizations).where(eq(organizations.id, membership!.organizationId));
    expect(org!.name).toBe("Acme Analytics");
    expect(await h.db.select().from(apiKeys).where(eq(apiKeys.organizationId, org!.id))).toHaveLength(1);
    const [session] = await h.db.select().from(sessions).where(eq(sessions.userId, user!.id));
    expect(session!.activeOrganizationId).toBe(org!.id);

    const home = await client.get("/");
    expect(home.status).toBe(200);
    expect(home.headers.get("content-type")).toMatch(/^text\/html/);
    expect(home.text).toMatch(/^<!DOCTYPE html>/);
    expect(home.text).toContain("Acme Analytics");
    expect(home.text).toContain("Grace Hopper");
    expect(home.text).toContain("No projects yet");
  });

  it("an e-mail is the same whatever its case: the account is found by sign-in in any case", async () => {
    const client = new WebClient(h.app);
    const email = uniqueEmail("Mixed.Case");
    await client.signUp({ email, organization: "Case Org" });
    const other = new WebClient(h.app);
    const signedIn = await other.signIn(email.toUpperCase());
    expect(signedIn.status).toBe(303);
  });
});

describe("the projects home", () => {
  it("lists the organization's projects with latest result, last run, tests, flaky, broken and open alerts", async () => {
    const client = new WebClient(h.app);
    const email = uniqueEmail("lister");
    await client.signUp({ email, organization: "Lister Org" });
    const { organizationId } = await signedUpOrganization(h.db, email);
    const { project, alertIds } = await h.newProject(organizationId, "payments-service", "Charges cards");
    await h.newProject(organizationId, "another-service");
    const run = await h.newRun(project.id, {
      report: {
        suites: [
          {
            name: "suite",
            cases: [
              { name: "a", status: "passed", durationMs: 5 },
              { name: "b", status: "failed", durationMs: 5, failureMessage: "boom" },
            ],
          },
        ],
      },
    });
    await h.newEvent(alertIds.failure_rate_spike!, run.id);
    // A snoozed alert's event does not make it open.
    await h.newEvent(alertIds.test_flakiness!, run.id);
    await h.db
      .update(alerts)
      .set({ snoozedUntil: new Date(h.clock.now().getTime() + 3_600_000) })
      .where(eq(alerts.id, alertIds.test_flakiness!));

    const home = await client.get("/");
    expect(home.status).toBe(200);
    const start = home.text.lastIndexOf("<tr>", home.text.indexOf("payments-service"));
    const row = home.text.slice(start, home.text.indexOf("</tr>", start));
    expect(row).toContain(`href="/projects/${project.id}"`);
    expect(row).toContain("Charges cards");
    expect(row).toContain('<span class="result-failed">Tests failed</span>');
    expect(row).toContain("just now");
    // tests 2, flaky 0, broken ≥ 0, open alerts 1 (the snoozed one is not open).
    const numbers = [...row.matchAll(/<td class="num">(\d+)<\/td>/g)].map((m) => Number(m[1]));
    expect(numbers[0]).toBe(2);
    expect(numbers[3]).toBe(1);
    expect(home.text).toContain("another-service");
    // Names in order.
    expect(home.text.indexOf("another-service")).toBeLessThan(home.text.indexOf("payments-service"));
  });

  it("the project page shows the project's name to a member", async () => {
    const client = new WebClient(h.app);
    const email = uniqueEmail("reader");
    await client.signUp({ email, organization: "Reader Org" });
    const { organizationId } = await signedUpOrganization(h.db, email);
    const { project } = await h.newProject(organizationId, "search-api", "Finds things");
    const page = await client.get(`/projects/${project.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain("<h1>search-api</h1>");
    expect(page.text).toContain("Finds things");
    // The API's url field opens this page.
    expect(project.url.endsWith(`/projects/${project.id}`)).toBe(true);
  });

  it("the navigation's Alerts and Team pages answer to a signed-in person, marked as the current section", async () => {
    const client = new WebClient(h.app);
    await client.signUp({ email: uniqueEmail("nav"), organization: "Nav Org" });
    for (const path of ["/alerts", "/settings/team"]) {
      const page = await client.get(path);
      expect(page.status).toBe(200);
      expect(page.text).toContain('aria-current="page"');
    }
  });
});

describe("sign-out and sign-in", () => {
  it("sign-out ends the session on the server: the old cookie opens nothing; sign-in with next goes back there", async () => {
    const client = new WebClient(h.app);
    const email = uniqueEmail("leaver");
    await client.signUp({ email, organization: "Leaver Org" });
    const { userId, organizationId } = await signedUpOrganization(h.db, email);
    const { project } = await h.newProject(organizationId, "billing");
    const oldCookie = client.cookieHeader()!;

    const out = await client.post("/sign-out", {});
    expect(out.status).toBe(303);
    expect(out.location).toBe("/sign-in");
    expect(await h.db.select().from(sessions).where(eq(sessions.userId, userId))).toEqual([]);
    expect(client.cookies.size).toBe(0);

    // The cookie from before is worth nothing now.
    const replay = await client.get("/", { cookie: oldCookie });
    expect(replay.status).toBe(302);
    expect(replay.location).toBe("/sign-in");

    const away = await client.get(`/projects/${project.id}?tab=runs`);
    expect(away.status).toBe(302);
    expect(away.location).toBe(`/sign-in?next=${encodeURIComponent(`/projects/${project.id}?tab=runs`)}`);

    const form = await client.get(away.location!);
    expect(form.status).toBe(200);
    expect(form.text).toContain(`value="/projects/${project.id}?tab=runs"`);

    const back = await client.signIn(email, undefined, `/projects/${project.id}?tab=runs`);
    expect(back.status).toBe(303);
    expect(back.location).toBe(`/projects/${project.id}?tab=runs`);
    expect((await client.get(back.location!)).status).toBe(200);

    // Signed in, the sign-in and sign-up forms lead on.
    expect((await client.get("/sign-in")).location).toBe("/");
    expect((await client.get("/sign-up")).location).toBe("/");
  });
});
