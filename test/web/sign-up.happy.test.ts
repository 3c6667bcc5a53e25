/** Sign-up, sessions, sign-out and sign-in through the pages, in process (Node; the workerd suite has its own: test/worker/web.test.ts). */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeys, members, organizations, sessions, users } from "../../src/db/schema";
import { createHarness } from "../support/harness";
import { WebClient, uniqueEmail } from "../support/web-client";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe("sign-up", () => {
  it("creates the organization with its API key, the user, an admin membership and a session, then opens /", async () => {
    const client = new WebClient(h.app);
    const email = uniqueEmail("founder");
    const answer = await client.signUp({ email, organization: "Acme Analytics" });
    expect(answer.location).toBe("/");
    const cookie = answer.setCookies.find((line) => line.startsWith("__Secure-better-auth.session_token="));
    expect(cookie).toBeDefined();
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Secure/);

    const [user] = await h.db.select().from(users).where(eq(users.email, email));
    expect(user!.id).toMatch(/^[0-9a-f-]{36}$/);
    const [membership] = await h.db.select().from(members).where(eq(members.userId, user!.id));
    expect(membership!.role).toBe("admin");
    const [org] = await h.db.select().from(organizations).where(eq(organizations.id, membership!.organizationId));
    expect(org!.name).toBe("Acme Analytics");
    const keys = await h.db.select().from(apiKeys).where(eq(apiKeys.organizationId, org!.id));
    expect(keys).toHaveLength(1);
    const [session] = await h.db.select().from(sessions).where(eq(sessions.userId, user!.id));
    expect(session!.activeOrganizationId).toBe(org!.id);

    const home = await client.get("/");
    expect(home.status).toBe(200);
    expect(home.headers.get("content-type")).toMatch(/^text\/html/);
    expect(home.text).toContain("Acme Analytics");
    expect(home.text).toContain("No projects yet");
  });
});
