/**
 * Sign-up confirms the e-mail before anything exists (docs/accounts.md), in process on Node:
 * without a mail transport (the page shows the link), with one (a real SMTP server: the page says
 * the same for registered and new addresses, the e-mails differ), the hourly cap per address,
 * expiry, squatting, and the SIGN_UP modes.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountTokens, apiKeys, emailOutbox, members, organizations, users } from "../../src/db/schema";
import { nodeSmtpTransport } from "../../src/node/smtp-transport";
import { createHarness } from "../support/harness";
import { SmtpSink } from "../support/smtp-sink";
import { PASSWORD, WebClient, linkOnPage, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const form = (email: string, organization: string, password = PASSWORD) => ({ name: "Grace Hopper", email, password, organization });
const usersWith = (email: string) => h.db.select().from(users).where(eq(users.email, email));
const orgsNamed = (name: string) => h.db.select().from(organizations).where(eq(organizations.name, name));

describe("without a mail transport", () => {
  it("creates nothing until the link's click, which creates the verified user, the organization with its key, the admin and a session", async () => {
    const email = uniqueEmail("confirm");
    const organization = `Confirmed Org ${email}`;
    const client = new WebClient(h.app);
    const posted = await client.post("/sign-up", form(email, organization));
    expect(posted.status).toBe(303);
    expect(posted.location).toBe("/sign-up/sent");
    expect(await usersWith(email)).toEqual([]);
    expect(await orgsNamed(organization)).toEqual([]);
    const sent = await client.get("/sign-up/sent");
    expect(sent.text).toContain("No e-mail was sent");
    expect(sent.headers.get("cache-control")).toBe("no-store");
    const link = linkOnPage(sent.text, "confirmation-link")!;
    expect(link).toMatch(/^\/verify-email\/[A-Za-z0-9_-]{43}$/);
    // The link is a one-time message of this browser: a reload, or another browser, shows no link.
    expect(linkOnPage((await client.get("/sign-up/sent")).text, "confirmation-link")).toBeNull();
    // Only the link's hash is stored.
    const [token] = await h.db.select().from(accountTokens).where(eq(accountTokens.email, email));
    expect(token!.tokenHash).not.toContain(link.split("/").pop()!);
    const shown = await client.get(link);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain(organization);
    expect(await usersWith(email)).toEqual([]);
    const confirmed = await client.post(link, {});
    expect(confirmed.status).toBe(303);
    expect(confirmed.location).toBe("/");
    const [user] = await usersWith(email);
    expect(user!.emailVerified).toBe(true);
    const { organizationId } = await signedUpOrganization(h.db, email);
    expect(await h.db.select().from(members).where(eq(members.organizationId, organizationId))).toMatchObject([{ role: "admin" }]);
    expect(await h.db.select().from(apiKeys).where(eq(apiKeys.organizationId, organizationId))).toHaveLength(1);
    expect((await client.get("/")).text).toContain(organization);
    // Used up: a second click, or the page, says the link is no longer valid.
    expect((await new WebClient(h.app).post(link, {})).status).toBe(404);
    expect((await client.get(link)).status).toBe(404);
  });

  it("a stranger's unconfirmed sign-up with someone's e-mail keeps nobody out: the owner signs up, and the stranger's link then creates nothing", async () => {
    const victim = uniqueEmail("victim");
    const stranger = new WebClient(h.app);
    const strangerPost = await stranger.post("/sign-up", form(victim, `Squatter Org ${victim}`, "stranger password"));
    const strangerLink = linkOnPage((await stranger.get(strangerPost.location!)).text, "confirmation-link")!;
    const owner = new WebClient(h.app);
    await owner.signUp({ email: victim, organization: `Owner Org ${victim}` });
    expect((await stranger.post(strangerLink, {})).status).toBe(409);
    expect(await orgsNamed(`Squatter Org ${victim}`)).toEqual([]);
    expect((await new WebClient(h.app).signIn(victim, "stranger password")).status).toBe(401);
    expect((await new WebClient(h.app).signIn(victim)).status).toBe(303);
  });

  it("a link expires after 24 hours: 404, nothing created", async () => {
    const email = uniqueEmail("expired");
    const client = new WebClient(h.app);
    const posted = await client.post("/sign-up", form(email, `Expired Org ${email}`));
    const link = linkOnPage((await client.get(posted.location!)).text, "confirmation-link")!;
    h.clock.advance(24 * 3_600_000 + 1000);
    try {
      expect((await client.get(link)).status).toBe(404);
      expect((await client.post(link, {})).status).toBe(404);
      expect(await usersWith(email)).toEqual([]);
    } finally {
      h.clock.advance(-(24 * 3_600_000 + 1000));
    }
  });

  it("malformed and unknown links are the same 404 without a query; two clicks at once create one account", async () => {
    for (const path of ["/verify-email/short", `/verify-email/${"A".repeat(43)}`, `/verify-email/${"%00".repeat(20)}`])
      expect((await new WebClient(h.app).post(path, {})).status).toBe(404);
    const email = uniqueEmail("twice-at-once");
    const client = new WebClient(h.app);
    const posted = await client.post("/sign-up", form(email, `Race Org ${email}`));
    const link = linkOnPage((await client.get(posted.location!)).text, "confirmation-link")!;
    const answers = await Promise.all([new WebClient(h.app).post(link, {}), new WebClient(h.app).post(link, {})]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([303, 404]);
    expect(await usersWith(email)).toHaveLength(1);
    expect(await orgsNamed(`Race Org ${email}`)).toHaveLength(1);
  });

  it("at most 5 account e-mails an hour go to one address; the page answers the same past the cap", async () => {
    const email = uniqueEmail("flood");
    for (let i = 0; i < 7; i += 1) {
      const client = new WebClient(h.app);
      const posted = await client.post("/sign-up", form(email, `Flood Org ${i}`));
      expect(posted.status).toBe(303);
      expect(linkOnPage((await client.get(posted.location!)).text, "confirmation-link")).not.toBeNull();
    }
    const mails = await h.db.select().from(emailOutbox).where(eq(emailOutbox.toAddress, email));
    expect(mails).toHaveLength(5);
    expect(mails.every((mail) => mail.kind === "email_verification" && mail.organizationId === null)).toBe(true);
  });
});

describe("with a mail transport: the same answer for registered and new e-mails", () => {
  const sink = new SmtpSink();
  let mailed: Awaited<ReturnType<typeof createHarness>>;
  beforeAll(async () => {
    const smtpUrl = await sink.start();
    mailed = await createHarness({
      overrides: { mailConfigured: true },
      background: { mail: { transport: nodeSmtpTransport(smtpUrl), from: "CI test analytics <ci@example.com>", logHeldBodies: false } },
    });
  });
  afterAll(async () => {
    await mailed?.close();
    await sink.close();
  });

  async function mailTo(email: string) {
    const deadline = Date.now() + 10_000;
    while (sink.to(email).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    return sink.to(email)[0]!;
  }

  it("answers and pages are the same but for the address; the owner is told they have an account, the newcomer gets the link", async () => {
    const registered = uniqueEmail("registered");
    await mailed.db.insert(users).values({ name: "Owner", email: registered, emailVerified: true });
    const fresh = uniqueEmail("fresh");
    const pages: string[] = [];
    for (const email of [registered, fresh]) {
      const client = new WebClient(mailed.app);
      const posted = await client.post("/sign-up", form(email, "Same Org"));
      expect({ status: posted.status, location: posted.location }).toEqual({ status: 303, location: "/sign-up/sent" });
      const page = await client.get("/sign-up/sent");
      expect(page.text).not.toContain("confirmation-link");
      pages.push(page.text.replace(email, "EMAIL"));
    }
    expect(pages[0]).toBe(pages[1]);
    const ownerMail = await mailTo(registered);
    expect(ownerMail.subject).toBe("You already have an account on CI test analytics");
    expect(ownerMail.text).not.toContain("/verify-email/");
    const newcomerMail = await mailTo(fresh);
    expect(newcomerMail.subject).toBe("Confirm your e-mail address for CI test analytics");
    const link = /https:\/\/\S+(\/verify-email\/[A-Za-z0-9_-]{43})/.exec(newcomerMail.text)![1]!;
    const client = new WebClient(mailed.app);
    expect((await client.post(link, {})).status).toBe(303);
    expect((await client.get("/")).text).toContain("Same Org");
  });
});

describe("SIGN_UP modes", () => {
  it("invite-only and off close /sign-up (403) and store nothing; sign-in no longer offers it", async () => {
    for (const signUp of ["invite-only", "off"] as const) {
      const closed = await createHarness({ overrides: { signUp } });
      try {
        const email = uniqueEmail(signUp);
        const client = new WebClient(closed.app);
        const page = await client.get("/sign-up");
        expect(page.status).toBe(403);
        expect(page.text).toContain("Sign-up is closed");
        expect((await client.post("/sign-up", form(email, "Closed Org"))).status).toBe(403);
        expect(await closed.db.select().from(accountTokens).where(eq(accountTokens.email, email))).toEqual([]);
        expect((await client.get("/sign-in")).text).not.toContain('href="/sign-up"');
      } finally {
        await closed.close();
      }
    }
  });

  it("a link made while sign-up was open creates nothing once it is closed", async () => {
    const email = uniqueEmail("closed-later");
    const client = new WebClient(h.app);
    const posted = await client.post("/sign-up", form(email, "Later Org"));
    const link = linkOnPage((await client.get(posted.location!)).text, "confirmation-link")!;
    // The same database, served by an app configured closed: the instance restarted with SIGN_UP=invite-only.
    const closed = await createHarness({ overrides: { signUp: "invite-only" } });
    try {
      expect((await new WebClient(closed.app).post(link, {})).status).toBe(403);
      expect(await closed.db.select().from(users).where(eq(users.email, email))).toEqual([]);
    } finally {
      await closed.close();
    }
  });

  it("off: an invitation's link can no longer create an account (the page says so, its sign-up post is a 403); invite-only still creates it", async () => {
    const adminEmail = uniqueEmail("off-admin");
    const admin = new WebClient(h.app);
    await admin.signUp({ email: adminEmail, organization: "Off Org" });
    const invitee = uniqueEmail("off-invitee");
    expect((await admin.post("/settings/team/invitations", { email: invitee, role: "member" })).status).toBe(303);
    const [mail] = await h.db.select().from(emailOutbox).where(eq(emailOutbox.toAddress, invitee));
    const held = await h.admin("GET", `/emails/${mail!.id}`);
    const path = new URL(/https:\/\/\S+\/invitations\/[A-Za-z0-9_-]{43}/.exec(held.text.replaceAll("\\n", " "))![0]).pathname;
    const off = await createHarness({ overrides: { signUp: "off" } });
    const inviteOnly = await createHarness({ overrides: { signUp: "invite-only" } });
    try {
      expect((await new WebClient(off.app).get(path)).text).toContain("does not create new accounts");
      expect((await new WebClient(off.app).post(`${path}/sign-up`, { name: "Invitee", password: PASSWORD })).status).toBe(403);
      expect(await usersWith(invitee)).toEqual([]);
      expect((await new WebClient(inviteOnly.app).post(`${path}/sign-up`, { name: "Invitee", password: PASSWORD })).status).toBe(303);
      expect(await usersWith(invitee)).toHaveLength(1);
    } finally {
      await off.close();
      await inviteOnly.close();
    }
  });
});
