/**
 * Password reset (docs/accounts.md#password-reset), in process on Node: on a local instance
 * without a mail transport (the page shows the link), on a public one without (it does not: the
 * operator's outbox has it), and with a real SMTP server (the same answer for registered and
 * unregistered e-mails). The new password ends every session and lifts the sign-in lock.
 */
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emailOutbox, sessions, users } from "../../src/db/schema";
import { nodeSmtpTransport } from "../../src/node/smtp-transport";
import { createHarness } from "../support/harness";
import { SmtpSink } from "../support/smtp-sink";
import { PASSWORD, WebClient, linkOnPage, uniqueEmail } from "../support/web-client";

const LOCAL = "http://localhost:8787";
const NEW_PASSWORD = "a brand new passphrase";

let local: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  local = await createHarness({ overrides: { webAppUrl: LOCAL } });
});
afterAll(async () => local?.close());

const localClient = () => new WebClient(local.app, LOCAL);

/** Asks for a reset of `email` and returns the page after it and the link it shows (null if none). */
async function askForReset(client: WebClient, email: string) {
  const posted = await client.post("/reset-password", { email });
  expect(posted.status).toBe(303);
  expect(posted.location).toBe("/reset-password/sent");
  const page = await client.get("/reset-password/sent");
  return { page, link: linkOnPage(page.text, "reset-link") };
}

describe("on a local instance without a mail transport", () => {
  it("the link sets a new password, ends every session, works once; the old password no longer signs in", async () => {
    const email = uniqueEmail("reset");
    const owner = localClient();
    await owner.signUp({ email, organization: "Reset Org" });
    expect(
      await local.db.select().from(sessions).innerJoin(users, eq(users.id, sessions.userId)).where(eq(users.email, email)),
    ).toHaveLength(1);
    const { page, link } = await askForReset(localClient(), email);
    expect(page.text).toContain("No e-mail was sent");
    expect(link).toMatch(/^\/reset-password\/[A-Za-z0-9_-]{43}$/);
    const form = await localClient().get(link!);
    expect(form.text).toContain("Choose a new password");
    expect((await localClient().post(link!, { password: "short" })).status).toBe(400);
    const reset = localClient();
    const done = await reset.post(link!, { password: NEW_PASSWORD });
    expect(done.status).toBe(303);
    expect(done.location).toBe("/sign-in");
    expect((await reset.get("/sign-in")).text).toContain("Your password was changed");
    // Every session ended: the owner's cookie opens nothing any more.
    expect((await owner.get("/")).status).toBe(302);
    expect((await localClient().signIn(email, PASSWORD)).status).toBe(401);
    expect((await localClient().signIn(email, NEW_PASSWORD)).status).toBe(303);
    expect((await localClient().post(link!, { password: "yet another one" })).status).toBe(404);
  });

  it("an unknown e-mail answers the same redirect and page; its link says no account uses it", async () => {
    const known = uniqueEmail("known");
    await localClient().signUp({ email: known, organization: "Known Org" });
    const unknown = uniqueEmail("unknown");
    const a = await askForReset(localClient(), known);
    const b = await askForReset(localClient(), unknown);
    const blank = (text: string, email: string, link: string) => text.replaceAll(email, "EMAIL").replaceAll(link, "LINK");
    expect(blank(a.page.text, known, a.link!)).toBe(blank(b.page.text, unknown, b.link!));
    const noAccount = await localClient().get(b.link!);
    expect(noAccount.text).toContain("No account uses this e-mail");
    expect(await local.db.select().from(users).where(eq(users.email, unknown))).toEqual([]);
  });

  it("a reset lifts the sign-in lock a stranger's wrong passwords set", async () => {
    const email = uniqueEmail("locked");
    await localClient().signUp({ email, organization: "Locked Org" });
    for (let i = 0; i < 10; i += 1) await localClient().signIn(email, "wrong password");
    expect((await localClient().signIn(email, PASSWORD)).status).toBe(429);
    const { link } = await askForReset(localClient(), email);
    expect((await localClient().post(link!, { password: NEW_PASSWORD })).status).toBe(303);
    expect((await localClient().signIn(email, NEW_PASSWORD)).status).toBe(303);
  });

  it("a link expires after an hour", async () => {
    const email = uniqueEmail("expiring");
    await localClient().signUp({ email, organization: "Expiring Org" });
    const { link } = await askForReset(localClient(), email);
    local.clock.advance(3_600_000 + 1000);
    try {
      expect((await localClient().get(link!)).status).toBe(404);
      expect((await localClient().post(link!, { password: NEW_PASSWORD })).status).toBe(404);
    } finally {
      local.clock.advance(-(3_600_000 + 1000));
    }
  });
});

describe("on a public instance without a mail transport", () => {
  it("the page shows no link and points to the operator's outbox, which holds the e-mail with it", async () => {
    const h = await createHarness();
    try {
      const email = uniqueEmail("public");
      await new WebClient(h.app).signUp({ email, organization: "Public Org" });
      const { page, link } = await askForReset(new WebClient(h.app), email);
      expect(link).toBeNull();
      expect(page.text).not.toContain("/reset-password/");
      expect(page.text).toContain("Its operator can read the message");
      const [mail] = await h.db
        .select()
        .from(emailOutbox)
        .where(and(eq(emailOutbox.toAddress, email), eq(emailOutbox.kind, "password_reset")));
      const outbox = await h.admin("GET", `/emails/${mail!.id}`);
      expect(outbox.status).toBe(200);
      expect(outbox.body).toMatchObject({ kind: "password_reset", organization_id: null, to: email });
      expect(outbox.text).toMatch(/\/reset-password\/[A-Za-z0-9_-]{43}/);
    } finally {
      await h.close();
    }
  });
});

describe("with a mail transport", () => {
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

  async function mailTo(email: string, subject: string) {
    const deadline = Date.now() + 10_000;
    const find = () => sink.to(email).find((mail) => mail.subject === subject);
    while (!find() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    return find()!;
  }

  it("registered and unregistered e-mails get the same page; the owner's e-mail holds the link, the other's says no account", async () => {
    const registered = uniqueEmail("mailed");
    await mailed.db.insert(users).values({ name: "Owner", email: registered, emailVerified: true });
    const unregistered = uniqueEmail("nobody");
    const pages = [];
    for (const email of [registered, unregistered]) {
      const { page, link } = await askForReset(new WebClient(mailed.app), email);
      expect(link).toBeNull();
      pages.push(page.text.replaceAll(email, "EMAIL"));
    }
    expect(pages[0]).toBe(pages[1]);
    const reset = await mailTo(registered, "Reset your CI test analytics password");
    expect(reset.text).toMatch(/https:\/\/\S+\/reset-password\/[A-Za-z0-9_-]{43}/);
    const none = await mailTo(unregistered, "Password reset for CI test analytics");
    expect(none.text).toContain("no account uses it");
    expect(none.text).not.toContain("/reset-password/");
  });
});
