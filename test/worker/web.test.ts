/**
 * The web app through the Worker (SELF.fetch → the Worker's app → better-auth over the Neon
 * driver): sign-up sets the session cookie, `/` shows the organization's projects, signed-out
 * visits go to sign-in, sign-out ends the session, another organization's project is a 404,
 * and the sign-in throttle holds on this runtime too (its state is in Postgres).
 */
import { describe, expect, it } from "vitest";
import { createHarness } from "./support/harness";
import { PASSWORD, WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

describe("the web app on the Worker", () => {
  it("sign-up → session cookie → / lists the projects; sign-out → / redirects to sign-in; sign-in → back", async () => {
    const h = await createHarness();
    try {
      const client = new WebClient(h.app);
      const signedOut = await client.get("/");
      expect(signedOut.status).toBe(302);
      expect(signedOut.location).toBe("/sign-in");

      const email = uniqueEmail("worker");
      const answer = await client.signUp({ email, organization: "Worker Web Org" });
      expect(answer.location).toBe("/");
      const cookie = answer.setCookies.find((line) => line.startsWith("__Secure-better-auth.session_token="))!;
      expect(cookie).toMatch(/HttpOnly/i);
      expect(cookie).toMatch(/SameSite=Lax/i);

      const { organizationId } = await signedUpOrganization(h.db, email);
      const { project } = await h.newProject(organizationId, "edge-project", "<script>alert(1)</script>");
      const home = await client.get("/");
      expect(home.status).toBe(200);
      expect(home.headers.get("content-security-policy")).toMatch(/script-src 'nonce-/);
      expect(home.text).toContain("Worker Web Org");
      expect(home.text).toContain("edge-project");
      expect(home.text).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
      expect((await client.get(`/projects/${project.id}`)).status).toBe(200);

      const stranger = new WebClient(h.app);
      await stranger.signUp({ email: uniqueEmail("worker-stranger"), organization: "Other Worker Org" });
      expect((await stranger.get(`/projects/${project.id}`)).status).toBe(404);

      expect((await client.post("/sign-out", {}, { origin: "https://evil.example" })).status).toBe(403);
      expect((await client.post("/sign-out", {})).status).toBe(303);
      const after = await client.get(`/projects/${project.id}`);
      expect(after.status).toBe(302);
      expect(after.location).toBe(`/sign-in?next=${encodeURIComponent(`/projects/${project.id}`)}`);
      const back = await client.signIn(email, PASSWORD, `/projects/${project.id}`);
      expect(back.status).toBe(303);
      expect(back.location).toBe(`/projects/${project.id}`);
      expect((await client.get(back.location!)).status).toBe(200);
    } finally {
      await h.close();
    }
  });

  it("ten failed sign-ins lock the e-mail, the right password included", async () => {
    const h = await createHarness();
    try {
      const email = uniqueEmail("worker-throttle");
      await new WebClient(h.app).signUp({ email, organization: "Throttle Worker Org" });
      for (let i = 0; i < 9; i++) expect((await new WebClient(h.app).signIn(email, "wrong password")).status).toBe(401);
      expect((await new WebClient(h.app).signIn(email, "wrong password")).status).toBe(429);
      const right = await new WebClient(h.app).signIn(email);
      expect(right.status).toBe(429);
      expect(right.text).toContain("Too many failed sign-in attempts");
      h.clock.advance(15 * 60_000);
      expect((await new WebClient(h.app).signIn(email)).status).toBe(303);
    } finally {
      await h.close();
    }
  });
});
