/**
 * The weekly digest and e-mail channels on the pages (docs/notifications.md):
 * - the team page: each person turns their own digest on and off (admins on by default, members off);
 * - the unsubscribe link, without a session: GET shows a button and changes nothing, POST (the
 *   button, or a mail client's RFC 8058 one-click from another origin) turns it off; a tampered
 *   token, or one signed for another membership, is a 404 that changes nothing;
 * - an admin adds an e-mail channel on a project's settings page with a member's address; a
 *   stranger's address is refused, naming it; a member reads how many addresses, not which.
 */
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { members, projects, users, webhookEndpoints } from "../../src/db/schema";
import { unsubscribeToken } from "../../src/services/notifications/digest-subscriptions";
import { createHarness } from "../support/harness";
import { testSecrets } from "../support/harness-core";
import { adminAndMember } from "../support/project-page-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

async function membership(organizationId: string, email: string) {
  const [row] = await h.db
    .select({ id: members.id, weeklyDigest: members.weeklyDigest })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.organizationId, organizationId), eq(users.email, email.toLowerCase())));
  return row!;
}

describe("the weekly digest on the pages", () => {
  it("each person turns their own digest on and off on the team page: admins on by default, members off", async () => {
    const people = await adminAndMember(h, "Digest Pages");
    expect((await people.admin.get("/settings/team")).text).toContain("You receive the weekly digest e-mail");
    const member = await people.member.get("/settings/team");
    expect(member.text).toContain("You do not receive the weekly digest e-mail");
    const on = await people.member.postAndFollow("/settings/team/digest", { weeklyDigest: "on" });
    expect(on.posted.status).toBe(303);
    expect(on.text).toContain("You will receive the weekly digest e-mail.");
    expect(on.text).toContain("Stop the weekly digest");
    expect((await membership(people.organizationId, people.memberEmail)).weeklyDigest).toBe(true);
    // Only their own: the admin's stays as it was.
    expect((await membership(people.organizationId, people.adminEmail)).weeklyDigest).toBeNull();
    // From another site: refused like every form of the pages.
    const forged = await people.member.post("/settings/team/digest", { weeklyDigest: "off" }, { origin: "https://evil.example" });
    expect(forged.status).toBe(403);
    expect((await membership(people.organizationId, people.memberEmail)).weeklyDigest).toBe(true);
  });

  it("the unsubscribe link works without a session, once clicked; a tampered one is refused", async () => {
    const people = await adminAndMember(h, "Digest Unsubscribe");
    const admin = await membership(people.organizationId, people.adminEmail);
    const member = await membership(people.organizationId, people.memberEmail);
    const token = await unsubscribeToken(testSecrets, admin.id);
    const path = `/digest/unsubscribe/${token}`;

    // Opening the link (a mail scanner does too) changes nothing.
    const page = await h.app.request(path);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(people.adminEmail.toLowerCase());
    expect(html).toContain("Digest Unsubscribe");
    expect(html).toContain(`<form method="post" action="${path}">`);
    expect((await membership(people.organizationId, people.adminEmail)).weeklyDigest).toBeNull();

    const [memberId, signature] = token.split(".");
    const flipped = `${signature!.slice(0, -2)}${signature!.endsWith("AA") ? "BB" : "AA"}`;
    for (const tampered of [`${memberId}.${flipped}`, `${member.id}.${signature}`, `${memberId}`, "nonsense"]) {
      const refused = await h.app.request(`/digest/unsubscribe/${tampered}`, { method: "POST", body: "List-Unsubscribe=One-Click" });
      expect(refused.status, tampered).toBe(404);
      expect(await refused.text()).toContain("This unsubscribe link is not valid");
    }
    expect((await membership(people.organizationId, people.memberEmail)).weeklyDigest).toBeNull();
    expect((await membership(people.organizationId, people.adminEmail)).weeklyDigest).toBeNull();

    // A mail provider's one-click POST: another origin, no session.
    const done = await h.app.request(path, {
      method: "POST",
      headers: { origin: "https://mail.example", "content-type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click",
    });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain("You are unsubscribed");
    expect((await membership(people.organizationId, people.adminEmail)).weeklyDigest).toBe(false);
    expect((await h.app.request(path)).status).toBe(200);
    expect((await people.admin.get("/settings/team")).text).toContain("You do not receive the weekly digest e-mail");
  });
});

describe("e-mail channels on the settings page", () => {
  it("an admin adds one with a member's address; a stranger's is refused by name; a member reads how many, not which", async () => {
    const people = await adminAndMember(h, "Mail Channel Pages");
    expect((await people.admin.post("/projects/new", { name: "Checkout", description: "", defaultBranch: "" })).status).toBe(303);
    const [project] = await h.db.select().from(projects).where(eq(projects.organizationId, people.organizationId));
    const settings = `/projects/${project!.id}/settings`;
    const form = { kind: "email", url: "", eventsShown: "1", events: ["digest", "alerts"], ownerFilter: "", description: "" };

    const stranger = "stranger@example.com";
    const refused = await people.admin.post(`${settings}/webhooks`, { ...form, addresses: `${people.memberEmail}, ${stranger}` });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain(`${stranger} is not a member of this organization: an e-mail channel sends to members only.`);
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project!.id))).toEqual([]);

    const added = await people.admin.postAndFollow(`${settings}/webhooks`, { ...form, addresses: people.memberEmail });
    expect(added.posted.status).toBe(303);
    expect(added.text).toContain(`E-mail channel added for <code>${people.memberEmail.toLowerCase()}</code>`);
    const [endpoint] = await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project!.id));
    expect(endpoint).toMatchObject({ kind: "email", events: ["alerts", "digest"], emailAddresses: [people.memberEmail.toLowerCase()] });
    expect((await people.admin.get(settings)).text).toContain("Alerts tripping, The weekly digest (Monday 09:00)");

    const member = await people.member.get(settings);
    expect(member.text).toContain("1 member (addresses shown to admins)");
    expect(member.text).not.toContain(people.memberEmail.toLowerCase().split("@")[0]!);
  });
});
