/**
 * Control characters in the people forms (Node, in process): a NUL byte (which Postgres refuses in
 * any text value) or another control character in an e-mail, a password or a name is answered
 * by the form with a clear error, never a 500, and leaves nothing behind: sign-in, sign-up, the
 * team page's invite form, and both forms of an invitation's page.
 */
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { invitations, organizations, users } from "../../src/db/schema";
import { nodeSmtpTransport } from "../../src/node/smtp-transport";
import { createHarness } from "../support/harness";
import { SmtpSink } from "../support/smtp-sink";
import { PASSWORD, WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
const sink = new SmtpSink();
beforeAll(async () => {
  const smtpUrl = await sink.start();
  h = await createHarness({
    background: { mail: { transport: nodeSmtpTransport(smtpUrl), from: "ci@example.com", logHeldBodies: false } },
  });
});
afterAll(async () => {
  await h?.close();
  await sink.close();
});

const client = () => new WebClient(h.app);
/** The page's error notice, as text. */
const alertOf = (html: string) =>
  /role="alert"[^>]*>([\s\S]*?)<\/(?:p|div)>/
    .exec(html)?.[1]
    ?.replace(/<[^>]+>/g, "")
    .trim() ?? null;
/** NUL first (the 500 of the report), then other control characters. */
const CONTROLS = ["\u0000", "\u0001", "\u001f", "\u007f", "\t", "\n"];

describe("sign-in", () => {
  const email = uniqueEmail("nul-sign-in");
  beforeAll(async () => {
    await client().signUp({ email, organization: "NUL Sign-in Org" });
  });

  it.each([["a\u0000@x.io"], [`${email}\u0000`], [`\u0000${email}`], ["a\u0001@x.io"], ["a@x\u007f.io"]])(
    "the e-mail %j is a 400 asking for an address",
    async (bad) => {
      const answer = await client().post("/sign-in", { email: bad, password: PASSWORD });
      expect(answer.status).toBe(400);
      expect(alertOf(answer.text)).toBe("Enter an e-mail address such as name@example.com.");
      expect(answer.setCookies).toEqual([]);
    },
  );

  it.each(CONTROLS)("a password with %j is a wrong password (401), for a known and an unknown e-mail", async (control) => {
    for (const address of [email, uniqueEmail("nul-unknown")]) {
      const answer = await client().post("/sign-in", { email: address, password: `pass${control}word!` });
      expect(answer.status).toBe(401);
      expect(alertOf(answer.text)).toBe("Wrong e-mail or password.");
    }
  });
});

describe("sign-up", () => {
  const organization = (label: string) => `NUL Sign-up ${label} ${Math.random().toString(36).slice(2)}`;

  it.each(CONTROLS)("an e-mail with %j is refused with the address hint; nothing is created", async (control) => {
    const org = organization("email");
    const answer = await client().post("/sign-up", { name: "Nul", email: `a${control}@x.io`, password: PASSWORD, organization: org });
    expect(answer.status).toBe(400);
    expect(alertOf(answer.text)).toBe("Enter an e-mail address such as name@example.com.");
    expect(await h.db.select().from(organizations).where(eq(organizations.name, org))).toEqual([]);
  });

  it.each(CONTROLS)("a password with %j is refused; nothing is created", async (control) => {
    const org = organization("password");
    const email = uniqueEmail("nul-password");
    const answer = await client().post("/sign-up", { name: "Nul", email, password: `pass${control}word!`, organization: org });
    expect(answer.status).toBe(400);
    expect(alertOf(answer.text)).toBe("The password must not contain control characters.");
    expect(await h.db.select().from(users).where(eq(users.email, email))).toEqual([]);
    expect(await h.db.select().from(organizations).where(eq(organizations.name, org))).toEqual([]);
  });

  it("a NUL in the name or the organization's name is refused with the field's message", async () => {
    const answer = await client().post("/sign-up", {
      name: "N\u0000ul",
      email: uniqueEmail("nul-name"),
      password: PASSWORD,
      organization: "O\u0000rg",
    });
    expect(answer.status).toBe(400);
    expect(answer.text).toContain("Your name must not contain control characters.");
    expect(answer.text).toContain("Organization name must not contain control characters.");
  });
});

describe("the team page's invite form", () => {
  const admin = new WebClient({ request: (path, init) => h.app.request(path, init) });
  let organizationId: string;
  beforeAll(async () => {
    const email = uniqueEmail("nul-admin");
    await admin.signUp({ email, organization: "NUL Team Org" });
    ({ organizationId } = await signedUpOrganization(h.db, email));
  });

  it.each(CONTROLS)("an e-mail with %j is a 400 on the page; no invitation is made", async (control) => {
    const answer = await admin.post("/settings/team/invitations", { email: `a${control}@x.io`, role: "member" });
    expect(answer.status).toBe(400);
    expect(alertOf(answer.text)).toBe("Enter an e-mail address such as name@example.com.");
    expect(await h.db.select().from(invitations).where(eq(invitations.organizationId, organizationId))).toEqual([]);
  });

  it("a role with a NUL is a 400 naming the roles", async () => {
    const answer = await admin.post("/settings/team/invitations", { email: uniqueEmail("nul-role"), role: "member\u0000" });
    expect(answer.status).toBe(400);
    expect(alertOf(answer.text)).toBe("Choose the role: admin or member.");
  });
});

describe("an invitation's page", () => {
  const admin = new WebClient({ request: (path, init) => h.app.request(path, init) });
  let organizationId: string;
  beforeAll(async () => {
    const email = uniqueEmail("nul-inviter");
    await admin.signUp({ email, organization: "NUL Invitation Org" });
    ({ organizationId } = await signedUpOrganization(h.db, email));
  });

  /** Invites `email` and returns the path of the link its e-mail carries. */
  async function invite(email: string): Promise<string> {
    expect((await admin.post("/settings/team/invitations", { email, role: "member" })).status).toBe(303);
    const deadline = Date.now() + 10_000;
    // The address may have had its sign-up's confirmation first: the invitation is the e-mail with its link.
    const invitationOf = () => sink.to(email).find((mail) => mail.text.includes("/invitations/"));
    while (!invitationOf() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const link = /https?:\/\/\S+\/invitations\/[A-Za-z0-9_-]{43}/.exec(invitationOf()?.text ?? "")?.[0];
    if (!link) throw new Error(`no invitation e-mail for ${email}`);
    return new URL(link).pathname;
  }
  const stillPending = async (email: string) =>
    (
      await h.db
        .select({ status: invitations.status })
        .from(invitations)
        .where(and(eq(invitations.organizationId, organizationId), eq(invitations.email, email)))
    )[0]?.status;

  it("signing up through the link with a NUL in the password or the name is a 400; no account, the link still works", async () => {
    const email = uniqueEmail("nul-invitee");
    const path = await invite(email);
    const badPassword = await client().post(`${path}/sign-up`, { name: "Nul Invitee", password: "pass\u0000word!" });
    expect(badPassword.status).toBe(400);
    expect(alertOf(badPassword.text)).toBe("The password must not contain control characters.");
    const badName = await client().post(`${path}/sign-up`, { name: "Nul\u0000Invitee", password: PASSWORD });
    expect(badName.status).toBe(400);
    expect(alertOf(badName.text)).toBe("Your name must not contain control characters.");
    expect(await h.db.select().from(users).where(eq(users.email, email))).toEqual([]);
    expect(await stillPending(email)).toBe("pending");
    expect((await client().post(`${path}/sign-up`, { name: "Nul Invitee", password: PASSWORD })).status).toBe(303);
  });

  it("signing in through the link with a NUL in the password is a wrong password (401)", async () => {
    const email = uniqueEmail("nul-existing");
    await client().signUp({ email, organization: "NUL Existing Org" });
    const path = await invite(email);
    const answer = await client().post(`${path}/sign-in`, { password: "pass\u0000word!" });
    expect(answer.status).toBe(401);
    expect(alertOf(answer.text)).toBe("Wrong password.");
    expect(await stillPending(email)).toBe("pending");
  });
});
