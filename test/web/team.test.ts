/**
 * The team page and invitations in process (Node), with e-mail through nodemailer to a real SMTP
 * server started here: an admin invites an admin and a member, the invitations arrive, both sign
 * up through their links; the member sees the list but neither the key nor the controls, and
 * their forged admin POSTs are refused; the admin reveals the key, regenerates it, every admin
 * (and only they) is e-mailed, and the old key gets 401 from the API.
 */
import { and, eq, isNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeys, invitations, members, users } from "../../src/db/schema";
import { nodeSmtpTransport } from "../../src/node/smtp-transport";
import { createHarness } from "../support/harness";
import { SmtpSink } from "../support/smtp-sink";
import { WEB_ORIGIN, WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
const sink = new SmtpSink();
beforeAll(async () => {
  const smtpUrl = await sink.start();
  h = await createHarness({
    background: { mail: { transport: nodeSmtpTransport(smtpUrl), from: "CI test analytics <ci@example.com>", logHeldBodies: false } },
  });
});
afterAll(async () => {
  await h?.close();
  await sink.close();
});

/** The link of the invitation e-mail sent to `email`, as a path of the app. */
async function invitationPath(email: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  while (sink.to(email).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  const [message] = sink.to(email);
  const link = /https?:\/\/\S+\/invitations\/[A-Za-z0-9_-]{43}/.exec(message?.text ?? "")?.[0];
  if (!link) throw new Error(`no invitation link for ${email}: ${message?.text}`);
  return new URL(link).pathname;
}

/**
 * POST-redirect-GET: the post answers 303 to the team page (a URL without a secret), whose next
 * GET shows what the post had to say, once.
 */
async function postThenFollow(client: WebClient, path: string, form: Record<string, string>) {
  const posted = await client.post(path, form);
  expect(posted.status).toBe(303);
  expect(posted.location).toBe("/settings/team");
  expect(posted.text).not.toMatch(/cta_[0-9A-Za-z]{20,}/);
  return client.get(posted.location!);
}

const revealedKey = (html: string) =>
  /id="api-key-value"[^>]*value="([^"]+)"|value="([^"]+)"[^>]*id="api-key-value"/.exec(html)?.slice(1).find(Boolean);

describe("invitations, the team page and the API key", () => {
  const adminEmail = uniqueEmail("team-admin");
  const secondAdminEmail = uniqueEmail("team-admin2");
  const memberEmail = uniqueEmail("team-member");
  const admin = new WebClient({ request: (path, init) => h.app.request(path, init) });
  const secondAdmin = new WebClient({ request: (path, init) => h.app.request(path, init) });
  const member = new WebClient({ request: (path, init) => h.app.request(path, init) });
  let organizationId: string;
  let firstKey: string;

  it("an admin invites by e-mail with a role; the e-mail arrives at the SMTP server with the link", async () => {
    await admin.signUp({ name: "Ada Admin", email: adminEmail, organization: "Team <b>Org</b>" });
    ({ organizationId } = await signedUpOrganization(h.db, adminEmail));
    const invited = await postThenFollow(admin, "/settings/team/invitations", { email: secondAdminEmail, role: "admin" });
    expect(invited.status).toBe(200);
    // This harness's pages run as without SMTP_URL (the sign-up helper reads its link from the page),
    // so the page says no e-mail was sent and shows the link; the background still e-mails it through the sink.
    expect(invited.text).toContain(`Invitation created for <strong>${secondAdminEmail}</strong>, but <strong>no e-mail was sent</strong>`);
    expect(invited.text).toMatch(/id="invitation-link"/);
    expect(invited.text).not.toContain("Invitation sent to");
    expect((await postThenFollow(admin, "/settings/team/invitations", { email: memberEmail, role: "member" })).status).toBe(200);
    // The admin's own sign-up sent its confirmation to the sink too: wait for the member's e-mail itself.
    const deadline = Date.now() + 10_000;
    while (sink.to(memberEmail).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const [mail] = sink.to(memberEmail);
    expect(mail!.from).toBe("ci@example.com");
    expect(mail!.subject).toBe('Invitation: join the organization "Team <b>Org</b>" on CI test analytics');
    expect(mail!.text).toContain("as a member");
    // The token is stored only as a hash.
    const rows = await h.db.select().from(invitations).where(eq(invitations.organizationId, organizationId));
    expect(rows).toHaveLength(2);
    const path = await invitationPath(memberEmail);
    for (const row of rows) expect(row.tokenHash).not.toContain(path.split("/").pop());
    const page = await admin.get("/settings/team");
    expect(page.text).toContain(memberEmail);
    expect(page.text).toContain("Pending invitations");
  });

  it("the invitees sign up through their links and join with the invited role; a link works once", async () => {
    const memberPath = await invitationPath(memberEmail);
    const page = await member.get(memberPath);
    expect(page.status).toBe(200);
    expect(page.text).toContain("Create account and join");
    expect(page.text).toContain("Team &lt;b&gt;Org&lt;/b&gt;");
    const joined = await member.post(`${memberPath}/sign-up`, { name: "Max Member", password: "member password 1" });
    expect(joined.status).toBe(303);
    expect(joined.location).toBe("/");
    const home = await member.get("/");
    expect(home.status).toBe(200);
    expect(home.text).toContain("Team &lt;b&gt;Org&lt;/b&gt;");
    // The invitation arrived at the address: the account it made is verified (docs/accounts.md).
    expect((await h.db.select().from(users).where(eq(users.email, memberEmail)))[0]!.emailVerified).toBe(true);

    const adminPath = await invitationPath(secondAdminEmail);
    expect((await secondAdmin.post(`${adminPath}/sign-up`, { name: "Bea Admin", password: "admin password 2" })).status).toBe(303);

    const roles = await h.db
      .select({ email: users.email, role: members.role })
      .from(members)
      .innerJoin(users, eq(users.id, members.userId))
      .where(eq(members.organizationId, organizationId));
    expect(Object.fromEntries(roles.map((r) => [r.email, r.role]))).toEqual({
      [adminEmail]: "admin",
      [secondAdminEmail]: "admin",
      [memberEmail]: "member",
    });
    // Spent: the link is a 404 now, for anyone.
    expect((await new WebClient({ request: (p, i) => h.app.request(p, i) }).get(memberPath)).status).toBe(404);
    expect((await member.post(`${memberPath}/sign-up`, { name: "Again", password: "member password 1" })).status).toBe(404);
  });

  it("a member sees the members and roles but neither the key nor the controls, and forged admin posts are refused", async () => {
    const page = await member.get("/settings/team");
    expect(page.status).toBe(200);
    expect(page.text).toContain(adminEmail);
    expect(page.text).toContain("Max Member");
    expect(page.text).not.toContain("API key");
    expect(page.text).not.toContain("Reveal");
    expect(page.text).not.toContain("Invite someone");
    expect(page.text).not.toContain("Remove");

    const keyBefore = await h.db.select().from(apiKeys).where(eq(apiKeys.organizationId, organizationId));
    const regenerate = await member.post("/settings/team/api-key/regenerate", {});
    expect(regenerate.status).toBe(403);
    expect(regenerate.text).not.toMatch(/cta_[0-9A-Za-z]{49}/);
    const reveal = await member.post("/settings/team/api-key/reveal", {});
    expect(reveal.status).toBe(403);
    expect(reveal.text).not.toMatch(/cta_[0-9A-Za-z]{49}/);
    expect((await member.post("/settings/team/invitations", { email: uniqueEmail("x"), role: "admin" })).status).toBe(403);
    const [adminRow] = await h.db
      .select({ id: members.id })
      .from(members)
      .innerJoin(users, eq(users.id, members.userId))
      .where(eq(users.email, adminEmail));
    expect((await member.post(`/settings/team/members/${adminRow!.id}/remove`, {})).status).toBe(403);
    expect(await h.db.select().from(apiKeys).where(eq(apiKeys.organizationId, organizationId))).toEqual(keyBefore);
    expect(await h.db.select().from(invitations).where(eq(invitations.organizationId, organizationId))).toHaveLength(2);
  });

  it("an admin reveals the key (stored sealed beside its hash) and it opens the API", async () => {
    const page = await postThenFollow(admin, "/settings/team/api-key/reveal", {});
    expect(page.status).toBe(200);
    firstKey = revealedKey(page.text)!;
    expect(firstKey).toMatch(/^cta_/);
    const [row] = await h.db.select().from(apiKeys).where(eq(apiKeys.organizationId, organizationId));
    expect(row!.keyEncrypted).toMatch(/^v1:/);
    expect(row!.keyEncrypted).not.toContain(firstKey);
    expect((await h.call("GET", "/api/v1/organization", { key: firstKey })).status).toBe(200);
  });

  it("regenerating the key refuses the old one at once and e-mails every admin, only them", async () => {
    const before = sink.received.length;
    const page = await postThenFollow(secondAdmin, "/settings/team/api-key/regenerate", {});
    expect(page.status).toBe(200);
    const newKey = revealedKey(page.text)!;
    expect(newKey).toMatch(/^cta_/);
    expect(newKey).not.toBe(firstKey);
    expect((await h.call("GET", "/api/v1/organization", { key: firstKey })).status).toBe(401);
    expect((await h.call("GET", "/api/v1/organization", { key: newKey })).status).toBe(200);
    const arrived = (await sink.waitFor(before + 2)).slice(before);
    expect(arrived.map((mail) => mail.to[0]).sort()).toEqual([adminEmail, secondAdminEmail].sort());
    for (const mail of arrived) {
      expect(mail.subject).toContain("was regenerated");
      expect(mail.text).toContain("by Bea Admin");
      expect(mail.text).not.toContain(newKey);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sink.to(memberEmail).filter((mail) => mail.subject.includes("regenerated"))).toHaveLength(0);
  });

  it("an admin removes a member (whose team page is then a 404), never the last admin", async () => {
    // Two admins: each can be removed from the page.
    const before = await admin.get("/settings/team");
    for (const name of ["Ada Admin", "Bea Admin", "Max Member"]) expect(before.text).toContain(`aria-label="Remove ${name}"`);
    expect(before.text).not.toContain("The only admin");
    const [memberRow] = await h.db
      .select({ id: members.id })
      .from(members)
      .innerJoin(users, eq(users.id, members.userId))
      .where(eq(users.email, memberEmail));
    expect((await postThenFollow(admin, `/settings/team/members/${memberRow!.id}/remove`, {})).text).toContain("The member was removed");
    expect((await member.get("/settings/team")).status).toBe(404);
    const [second] = await h.db
      .select({ id: members.id })
      .from(members)
      .innerJoin(users, eq(users.id, members.userId))
      .where(eq(users.email, secondAdminEmail));
    expect((await postThenFollow(admin, `/settings/team/members/${second!.id}/remove`, {})).status).toBe(200);
    // Ada is now the only admin: no Remove control beside her (the server would refuse it).
    const after = await admin.get("/settings/team");
    expect(after.text).toContain("Ada Admin");
    expect(after.text).not.toContain(`aria-label="Remove Ada Admin"`);
    expect(after.text).not.toContain("/remove");
    expect(after.text).toContain("The only admin");
    const [self] = await h.db
      .select({ id: members.id })
      .from(members)
      .innerJoin(users, eq(users.id, members.userId))
      .where(and(eq(users.email, adminEmail), eq(members.organizationId, organizationId)));
    const last = await admin.post(`/settings/team/members/${self!.id}/remove`, {});
    expect(last.status).toBe(400);
    expect(last.text).toContain("last admin");
  });

  it("refuses cross-site posts and unknown, revoked or replaced links", async () => {
    expect(
      (await admin.post("/settings/team/invitations", { email: uniqueEmail("csrf"), role: "member" }, { origin: "https://evil.example" }))
        .status,
    ).toBe(403);
    expect((await admin.get("/invitations/not-a-token")).status).toBe(404);
    const email = uniqueEmail("revoked");
    expect((await postThenFollow(admin, "/settings/team/invitations", { email, role: "member" })).status).toBe(200);
    const path = await invitationPath(email);
    const [row] = await h.db.select().from(invitations).where(eq(invitations.email, email));
    const revoked = await admin.post(`/settings/team/invitations/${row!.id}/revoke`, {}, { origin: WEB_ORIGIN });
    expect(revoked.status).toBe(303);
    expect((await admin.get(revoked.location!)).text).toContain("The invitation was revoked");
    expect((await new WebClient({ request: (p, i) => h.app.request(p, i) }).get(path)).status).toBe(404);
  });

  it("a key sealed under a secret key the server no longer has: the page still opens, and reveal says it cannot be shown", async () => {
    const [row] = await h.db
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.organizationId, organizationId), isNull(apiKeys.revokedAt)));
    // As after SECRETS_KEY was replaced without keeping the old one in SECRETS_KEY_PREVIOUS.
    const [version, , ...rest] = row!.keyEncrypted!.split(":");
    await h.db
      .update(apiKeys)
      .set({ keyEncrypted: [version, "0123456789ab", ...rest].join(":") })
      .where(eq(apiKeys.id, row!.id));
    const page = await admin.get("/settings/team");
    expect(page.status).toBe(200);
    expect(page.text).toContain(row!.displayPrefix);
    const reveal = await postThenFollow(admin, "/settings/team/api-key/reveal", {});
    expect(reveal.status).toBe(200);
    expect(reveal.text).toContain("This key cannot be shown");
    expect(reveal.text).not.toContain('id="api-key-value"');
    // Regenerating gives a key that can be revealed again.
    const regenerated = await postThenFollow(admin, "/settings/team/api-key/regenerate", {});
    expect(revealedKey(regenerated.text)).toMatch(/\S{20,}/);
    expect(revealedKey((await postThenFollow(admin, "/settings/team/api-key/reveal", {})).text)).toBe(revealedKey(regenerated.text));
  });
});
