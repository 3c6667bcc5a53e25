/**
 * POST and GET /admin/v1/organizations/:id/invitations (docs/e-mail.md, "The operator's
 * invitations"): an organization the admin API created has no people; the operator invites its
 * first admin, who signs up through the link and holds the organization (its team page, its key).
 * - 201 {invitation: {id, email, role, status, expires_at, created_at}, invitation_url, email_id};
 *   role defaults to admin; the e-mail goes through the outbox with the same link, "Invited by:
 *   the operator of CI test analytics", the organization's name quoted;
 * - a pending invitation of the same address is replaced; the link works once;
 * - unknown or malformed organization id: 404; a bad e-mail or role: 422 validation_failed (never a
 *   500 for NUL or control characters); malformed JSON: 400; an existing member: 400;
 * - the organization's hourly bound (20) counts the operator's and the team page's invitations together: 429, Retry-After;
 * - GET lists the pending ones, newest first, without links.
 * Runs on Node and in workerd (a contract file). Every test makes its own organization.
 */
import { randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emailOutbox, invitations, members, users } from "../../../src/db/schema";
import { ADMIN_TOKEN, type Harness, WEB_APP_URL, createHarness } from "../../support/harness";
import { WebClient, uniqueEmail } from "../../support/web-client";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const LINK = new RegExp(`^${WEB_APP_URL.replaceAll(".", "\\.")}/invitations/[A-Za-z0-9_-]{43}$`);
const isIsoUtc = (value: unknown) => typeof value === "string" && new Date(value).toISOString() === value;

const invite = (organizationId: string, body: unknown) => h.admin("POST", `/organizations/${organizationId}/invitations`, body);
const pending = (organizationId: string) => h.admin("GET", `/organizations/${organizationId}/invitations`);
const pathOf = (link: string) => new URL(link).pathname;
const browser = () => new WebClient(h.app);

async function invitationRows(organizationId: string) {
  return h.db.select().from(invitations).where(eq(invitations.organizationId, organizationId));
}

async function roleOf(organizationId: string, email: string) {
  const [row] = await h.db
    .select({ role: members.role })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.organizationId, organizationId), eq(users.email, email)));
  return row?.role ?? null;
}

describe("an organization made by the admin API gets its first admin", () => {
  it("invite → the e-mail and the answer carry the link → sign-up through it → an admin of the organization, e-mail verified; the link works once", async () => {
    const { organization, apiKey } = await h.newOrganization("Reset now: https://evil.example/reset");
    expect((await h.db.select().from(members).where(eq(members.organizationId, organization.id))).length).toBe(0);
    const email = uniqueEmail("first-admin");

    const res = await invite(organization.id, { email: `  ${email.toUpperCase()} ` });
    expect(res.status, res.text).toBe(201);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(res.body).sort()).toEqual(["email_id", "invitation", "invitation_url"]);
    const { invitation, invitation_url: link, email_id: emailId } = res.body;
    expect(Object.keys(invitation).sort()).toEqual(["created_at", "email", "expires_at", "id", "role", "status"]);
    expect(invitation).toMatchObject({ email, role: "admin", status: "pending" });
    expect(invitation.id).toMatch(UUID);
    expect(isIsoUtc(invitation.created_at)).toBe(true);
    expect(isIsoUtc(invitation.expires_at)).toBe(true);
    expect(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)).toBe(7 * 86_400_000);
    expect(link).toMatch(LINK);
    expect(emailId).toMatch(UUID);

    // Stored: no inviting user, only the token's hash.
    const [row] = await invitationRows(organization.id);
    expect(row).toMatchObject({ id: invitation.id, inviterId: null, status: "pending", role: "admin", email });
    expect(row!.tokenHash).not.toContain(link.split("/").pop());

    // The e-mail: the outbox's, with the same link; the operator named in the service's words, the organization's name quoted data.
    const mail = await h.admin("GET", `/emails/${emailId}`);
    expect(mail.status).toBe(200);
    expect(mail.body).toMatchObject({ organization_id: organization.id, kind: "invitation", to: email });
    expect(mail.body.subject).toBe('Invitation: join the organization "Reset now: https[:]//evil[.]example/reset" on CI test analytics');
    expect(mail.body.text.split("\n").slice(0, 3)).toEqual([
      "Hello,",
      "",
      "You are invited to join an organization on CI test analytics as an admin.",
    ]);
    expect(mail.body.text).toContain('Organization: "Reset now: https[:]//evil[.]example/reset"');
    expect(mail.body.text).toContain("Invited by: the operator of CI test analytics\n");
    expect(mail.body.text).toContain(`Accept the invitation (create your account or sign in): ${link}\n`);
    expect(mail.body.text.match(/https?:\/\//g)).toEqual(["https://"]);

    // The link's page, then sign-up through it.
    const person = browser();
    const page = await person.get(pathOf(link));
    expect(page.status).toBe(200);
    expect(page.text).toContain("The operator of CI test analytics invites");
    expect(page.text).toContain("Create account and join");
    const joined = await person.post(`${pathOf(link)}/sign-up`, { name: "First Admin", password: "first admin password" });
    expect(joined.status, joined.text).toBe(303);
    expect(joined.location).toBe("/");

    expect(await roleOf(organization.id, email)).toBe("admin");
    const [user] = await h.db.select({ emailVerified: users.emailVerified }).from(users).where(eq(users.email, email));
    expect(user!.emailVerified).toBe(true);
    expect((await invitationRows(organization.id)).map((r) => r.status)).toEqual(["accepted"]);

    // An admin of that organization: its team page with the admin's controls, and the key regenerated from it.
    const team = await person.get("/settings/team");
    expect(team.status).toBe(200);
    expect(team.text).toContain("First Admin");
    expect(team.text).toContain("Reveal the key");
    expect(team.text).toContain("Invite someone");
    const regenerated = await person.postAndFollow("/settings/team/api-key/regenerate", {});
    expect(regenerated.posted.status).toBe(303);
    const newKey = /value="(cta_[0-9A-Za-z]{49})"/.exec(regenerated.text)?.[1];
    expect(newKey).toBeDefined();
    expect((await h.get("/api/v1/organization", apiKey)).status).toBe(401);
    const viaNewKey = await h.get("/api/v1/organization", newKey!);
    expect(viaNewKey.status).toBe(200);
    expect(viaNewKey.body.id).toBe(organization.id);

    // Used: the link is a 404 for anyone, and signing up through it again creates nobody.
    expect((await browser().get(pathOf(link))).status).toBe(404);
    const again = await browser().post(`${pathOf(link)}/sign-up`, { name: "Second Try", password: "second try password" });
    expect(again.status).toBe(404);
    expect(await h.db.select().from(users).where(eq(users.name, "Second Try"))).toEqual([]);
    expect((await pending(organization.id)).body).toEqual({ data: [] });

    // Already a member: refused as on the team page, nothing written.
    const member = await invite(organization.id, { email });
    expect(member.status).toBe(400);
    expect(member.body).toEqual({ error: { code: "invalid_request", message: `${email} is already a member of the organization.` } });
    expect(await invitationRows(organization.id)).toHaveLength(1);
  });

  it("role member: the invitee joins as a member; the admins' team page lists the pending invitation as the operator's", async () => {
    const { organization } = await h.newOrganization("Operator and members");
    const adminEmail = uniqueEmail("op-admin");
    const first = await invite(organization.id, { email: adminEmail, role: "admin" });
    const admin = browser();
    expect(
      (await admin.post(`${pathOf(first.body.invitation_url)}/sign-up`, { name: "Op Admin", password: "op admin password" })).status,
    ).toBe(303);

    const memberEmail = uniqueEmail("op-member");
    const res = await invite(organization.id, { email: memberEmail, role: "member" });
    expect(res.status).toBe(201);
    expect(res.body.invitation.role).toBe("member");
    expect((await h.admin("GET", `/emails/${res.body.email_id}`)).body.text).toContain("as a member.");
    const team = await admin.get("/settings/team");
    expect(team.text).toContain(memberEmail);
    expect(team.text).toContain("the operator (admin API)");

    const member = browser();
    expect((await member.post(`${pathOf(res.body.invitation_url)}/sign-up`, { name: "Op Member", password: "op member pw" })).status).toBe(
      303,
    );
    expect(await roleOf(organization.id, memberEmail)).toBe("member");
    const memberTeam = await member.get("/settings/team");
    expect(memberTeam.status).toBe(200);
    expect(memberTeam.text).not.toContain("Reveal the key");
  });

  it("a person with an account signs in through the link and joins", async () => {
    const existing = browser();
    const email = uniqueEmail("has-account");
    await existing.signUp({ name: "Has Account", email, organization: `Own org ${randomUUID()}` });
    const { organization } = await h.newOrganization("Joined by sign-in");
    const res = await invite(organization.id, { email });
    const person = browser();
    const page = await person.get(pathOf(res.body.invitation_url));
    expect(page.text).toContain("Sign in and join");
    const joined = await person.post(`${pathOf(res.body.invitation_url)}/sign-in`, { password: "correct horse battery" });
    expect(joined.status, joined.text).toBe(303);
    expect(await roleOf(organization.id, email)).toBe("admin");
  });

  it("inviting an address again replaces its pending invitation: the older link stops working", async () => {
    const { organization } = await h.newOrganization("Replaced invitations");
    const email = uniqueEmail("replaced");
    const older = await invite(organization.id, { email, role: "member" });
    const newer = await invite(organization.id, { email });
    expect([older.status, newer.status]).toEqual([201, 201]);
    expect(newer.body.invitation_url).not.toBe(older.body.invitation_url);
    expect((await browser().get(pathOf(older.body.invitation_url))).status).toBe(404);
    expect((await browser().get(pathOf(newer.body.invitation_url))).status).toBe(200);
    const list = await pending(organization.id);
    expect(list.body.data.map((i: { id: string }) => i.id)).toEqual([newer.body.invitation.id]);
    expect((await invitationRows(organization.id)).map((r) => r.status).sort()).toEqual(["canceled", "pending"]);
  });
});

describe("GET /admin/v1/organizations/:id/invitations", () => {
  it("the pending invitations, newest first, without their links; revoked and other organizations' left out", async () => {
    const { organization } = await h.newOrganization("Listed invitations");
    const other = await h.newOrganization("Other invitations");
    expect((await pending(organization.id)).body).toEqual({ data: [] });
    const made = [];
    for (const role of ["admin", "member", "admin"]) {
      made.push((await invite(organization.id, { email: uniqueEmail("listed"), role })).body);
      h.clock.advance(1000);
    }
    await invite(other.organization.id, { email: uniqueEmail("elsewhere") });
    await h.db.update(invitations).set({ status: "canceled" }).where(eq(invitations.id, made[1].invitation.id));

    const res = await pending(organization.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.body.data).toEqual([made[2].invitation, made[0].invitation]);
    for (const { invitation_url: link } of made) expect(res.text).not.toContain(link.split("/").pop());
  });
});

describe("refusals", () => {
  it.each(["unknown uuid", "not-a-uuid", "1", "00000000-0000-0000-0000-000000000000", "%00"])(
    "an unknown or malformed organization id (%s) is 404 not_found on POST and GET, and nothing is written",
    async (label) => {
      const id = label === "unknown uuid" ? randomUUID() : label === "%00" ? label : encodeURIComponent(label);
      const email = uniqueEmail("orphan");
      for (const res of [await invite(id, { email }), await pending(id)]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: { code: "not_found", message: expect.any(String) } });
      }
      expect(await h.db.select().from(invitations).where(eq(invitations.email, email))).toEqual([]);
      expect(await h.db.select().from(emailOutbox).where(eq(emailOutbox.toAddress, email))).toEqual([]);
    },
  );

  it.each([
    ["missing", {}],
    ["null", { email: null }],
    ["empty", { email: "" }],
    ["blank", { email: "   " }],
    ["a number", { email: 42 }],
    ["an array", { email: ["a@example.com"] }],
    ["without @", { email: "nobody.example.com" }],
    ["without a dot in the domain", { email: "a@localhost" }],
    ["with a space", { email: "a b@example.com" }],
    ["with NUL", { email: "nul\u0000@example.com" }],
    ["with NUL at the end", { email: "nul@example.com\u0000" }],
    ["with a bell", { email: "bell\u0007@example.com" }],
    ["with a newline inside", { email: "a@example.com\nBcc: b@example.com" }],
    ["with DEL", { email: "del\u007f@example.com" }],
    ["too long", { email: `${"a".repeat(250)}@example.com` }],
  ])("an e-mail %s is 422 validation_failed on email (never a 500), and nothing is written", async (_label, body) => {
    const { organization } = await h.newOrganization("Bad e-mails");
    const res = await invite(organization.id, body);
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 422, code: "validation_failed" });
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(["email"]);
    expect(await invitationRows(organization.id)).toEqual([]);
  });

  it.each([
    ["owner", "owner"],
    ["empty", ""],
    ["upper case", "ADMIN"],
    ["a number", 1],
    ["null", null],
    ["with NUL", "admin\u0000"],
  ])("a role %s is 422 validation_failed on role", async (_label, role) => {
    const { organization } = await h.newOrganization("Bad roles");
    const res = await invite(organization.id, { email: uniqueEmail("role"), role });
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 422, code: "validation_failed" });
    expect(res.body.error.details).toEqual([{ field: "role", message: 'must be "admin" or "member"' }]);
    expect(await invitationRows(organization.id)).toEqual([]);
  });

  it.each(['{"email": ', "not json", "[]", '"a@example.com"'])(
    "a body that is not a JSON object (%s) is 400 invalid_request",
    async (rawBody) => {
      const { organization } = await h.newOrganization("Bad bodies");
      const res = await h.call("POST", `/admin/v1/organizations/${organization.id}/invitations`, {
        key: ADMIN_TOKEN,
        rawBody,
        headers: { "content-type": "application/json" },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: { code: "invalid_request", message: expect.any(String) } });
    },
  );

  it("without the admin token: 401 on POST and GET, nothing written", async () => {
    const { organization, apiKey } = await h.newOrganization("Unauthorized invitations");
    for (const key of [null, apiKey, "wrong-admin-token"]) {
      const posted = await h.call("POST", `/admin/v1/organizations/${organization.id}/invitations`, {
        key,
        body: { email: uniqueEmail("nope") },
      });
      const listed = await h.call("GET", `/admin/v1/organizations/${organization.id}/invitations`, { key });
      for (const res of [posted, listed])
        expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 401, code: "unauthorized" });
    }
    expect(await invitationRows(organization.id)).toEqual([]);
  });

  it("PUT and DELETE are 405 with Allow: GET, POST", async () => {
    const { organization } = await h.newOrganization("Methods");
    for (const method of ["PUT", "DELETE", "PATCH"]) {
      const res = await h.call(method, `/admin/v1/organizations/${organization.id}/invitations`, { key: ADMIN_TOKEN });
      expect(res.status).toBe(405);
      expect(res.body.error.code).toBe("method_not_allowed");
      const allow = (res.headers.get("allow") ?? "").split(/\s*,\s*/).sort();
      expect(allow).toEqual(expect.arrayContaining(["GET", "POST"]));
    }
  });
});

describe("at most 20 invitations an hour per organization, the operator's and the team page's together", () => {
  it("the 21st is a 429 rate_limited with Retry-After on either path, writes nothing; an hour later the operator invites again", async () => {
    const { organization } = await h.newOrganization("Rate-bound organization");
    const first = await invite(organization.id, { email: uniqueEmail("rate-admin") });
    const admin = browser();
    expect(
      (await admin.post(`${pathOf(first.body.invitation_url)}/sign-up`, { name: "Rate Admin", password: "rate admin password" })).status,
    ).toBe(303);
    // 1 by the operator so far; the admin sends 9 from the team page, the operator 10 more.
    for (let i = 0; i < 9; i++)
      expect((await admin.post("/settings/team/invitations", { email: uniqueEmail("page"), role: "member" })).status).toBe(303);
    for (let i = 0; i < 10; i++) expect((await invite(organization.id, { email: uniqueEmail("api"), role: "member" })).status).toBe(201);
    expect(await invitationRows(organization.id)).toHaveLength(20);

    const email = uniqueEmail("twenty-first");
    const refused = await invite(organization.id, { email });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: {
        code: "rate_limited",
        message: "This organization has sent 20 invitations within the last hour, the most allowed. Try again in 60 minutes.",
      },
    });
    expect(refused.headers.get("retry-after")).toBe("3600");
    expect((await admin.post("/settings/team/invitations", { email, role: "member" })).status).toBe(429);
    expect(await invitationRows(organization.id)).toHaveLength(20);
    expect(await h.db.select().from(emailOutbox).where(eq(emailOutbox.toAddress, email))).toEqual([]);

    // Another organization is not affected.
    const other = await h.newOrganization("Unbound organization");
    expect((await invite(other.organization.id, { email: uniqueEmail("other") })).status).toBe(201);

    h.clock.advance(3_600_000 + 1);
    const later = await invite(organization.id, { email });
    expect(later.status).toBe(201);
    expect(await invitationRows(organization.id)).toHaveLength(21);
  });
});
