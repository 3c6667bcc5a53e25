/**
 * Invitations cannot relay phishing (Node, in process, nodemailer to a real SMTP server started
 * here): the organization's and inviter's names are quoted data after fixed wording, never the
 * subject's lead, shortened, one line, with nothing a mail client would make a link of; and an
 * organization sends at most 20 invitations an hour, counted in the database (two apps over one
 * database, as two processes, share the count), the 21st refused on the page with Retry-After.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emailOutbox, invitations, members } from "../../src/db/schema";
import type { ApiError } from "../../src/lib/errors";
import { nodeSmtpTransport } from "../../src/node/smtp-transport";
import { quotedName } from "../../src/services/tenancy/invitation-email";
import { INVITATION_RATE, inviteMember } from "../../src/services/tenancy/team";
import { WEB_APP_URL, createHarness, inProcessHarness, testSecrets } from "../support/harness";
import { SmtpSink } from "../support/smtp-sink";
import { WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
const sink = new SmtpSink();
let mail: { transport: ReturnType<typeof nodeSmtpTransport>; from: string; logHeldBodies: boolean };
beforeAll(async () => {
  const smtpUrl = await sink.start();
  mail = { transport: nodeSmtpTransport(smtpUrl), from: "CI test analytics <ci@example.com>", logHeldBodies: false };
  h = await createHarness({ background: { mail } });
});
afterAll(async () => {
  await h?.close();
  await sink.close();
});

const PHISHING_ORG = "Your password expires today! Reset it now at https://evil.example/reset";
const PHISHING_INVITER = "IT Support <support@evil.example> www.evil.example";

/** Signs up an admin of a new organization; the client and the organization's id. */
async function admin(organization: string, name = "Ada Admin") {
  const client = new WebClient(h.app);
  const email = uniqueEmail("inviter");
  await client.signUp({ name, email, organization });
  return { client, email, organizationId: (await signedUpOrganization(h.db, email)).organizationId };
}

const inviteAll = (client: WebClient, count: number) =>
  Promise.all(
    Array.from({ length: count }, () => client.post("/settings/team/invitations", { email: uniqueEmail("invitee"), role: "member" })),
  );
/** The e-mails that reached `to`, once at least one has. */
async function arrived(to: string) {
  const deadline = Date.now() + 10_000;
  while (sink.to(to).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return sink.to(to);
}
const invitationsOf = async (organizationId: string) =>
  (await h.db.select().from(invitations).where(eq(invitations.organizationId, organizationId))).length;

describe("quotedName", () => {
  it.each([
    ["Acme", 40, '"Acme"'],
    ["https://evil.example/reset", 40, '"https[:]//evil[.]example/reset"'],
    ["www.evil.example", 40, '"www[.]evil[.]example"'],
    ["evil。example．com", 40, '"evil[.]example[.]com"'],
    ["mail me: a@evil.example", 40, '"mail me: a@evil[.]example"'],
    ["Acme Inc.", 40, '"Acme Inc."'],
    ['Acme" urges you: "reset', 40, "\"Acme' urges you: 'reset\""],
    ["Line one\r\nSubject: two\u2028three", 80, '"Line one Subject: two three"'],
    ["Bidi \u202egnp.exe\u202c zero\u200bwidth", 80, '"Bidi gnp[.]exe zero width"'],
    ["x".repeat(50), 40, `"${"x".repeat(39)}…"`],
    ["😀".repeat(50), 10, `"${"😀".repeat(9)}…"`],
  ])("%j (at most %i) → %s", (name, max, expected) => {
    expect(quotedName(name, max)).toBe(expected);
  });
});

describe("the invitation e-mail", () => {
  it("leads with fixed wording; the names are quoted, shortened and unlinkable; the link to accept is the only link", async () => {
    const { client } = await admin(PHISHING_ORG, PHISHING_INVITER);
    const to = uniqueEmail("phished");
    expect((await client.post("/settings/team/invitations", { email: to, role: "member" })).status).toBe(303);
    const [message] = await arrived(to);
    expect(message!.subject).toBe('Invitation: join the organization "Your password expires today! Reset it n…" on CI test analytics');
    expect(message!.subject).not.toMatch(/https?:|evil\.example/);
    const lines = message!.text.split("\n");
    expect(lines.slice(0, 3)).toEqual(["Hello,", "", "You are invited to join an organization on CI test analytics as a member."]);
    expect(lines).toContain('Organization: "Your password expires today! Reset it now at https[:]//evil[.]example/reset"');
    expect(lines).toContain('Invited by: "IT Support <support@evil[.]example> www[.]evil[.]example"');
    expect(message!.text).not.toMatch(/evil\.example|www\.evil|https?:\/\/evil/);
    const links = [...message!.text.matchAll(/https?:\/\/\S+/g)].map((m) => m[0]);
    expect(links).toHaveLength(1);
    expect(links[0]).toMatch(/\/invitations\/[A-Za-z0-9_-]{43}$/);
    // Plain text only: no HTML part in which a name could become markup or a link.
    expect(message!.raw).toMatch(/content-type: text\/plain/i);
    expect(message!.raw).not.toMatch(/text\/html/i);
  });

  it("a 255-character name is cut in the subject and in the text", async () => {
    const long = `Org ${"n".repeat(251)}`;
    const { client } = await admin(long);
    const to = uniqueEmail("long-name");
    expect((await client.post("/settings/team/invitations", { email: to, role: "admin" })).status).toBe(303);
    const [message] = await arrived(to);
    expect(message!.subject).toBe(`Invitation: join the organization "Org ${"n".repeat(35)}…" on CI test analytics`);
    expect(message!.text).toContain(`Organization: "Org ${"n".repeat(95)}…"`);
    expect(message!.text).toContain("as an admin.");
  });
});

describe("at most 20 invitations an hour per organization", () => {
  it("the 21st is refused on the page (429, Retry-After), writes no invitation and sends nothing; an hour later it works", async () => {
    expect(INVITATION_RATE.limit).toBe(20);
    const { client, organizationId } = await admin("Rate Org");
    for (const answer of await inviteAll(client, 20)) expect(answer.status).toBe(303);
    const to = uniqueEmail("twenty-first");
    const refused = await client.post("/settings/team/invitations", { email: to, role: "member" });
    expect(refused.status).toBe(429);
    expect(refused.text).toContain(
      "This organization has sent 20 invitations within the last hour, the most allowed. Try again in 60 minutes.",
    );
    expect(Number(refused.headers.get("retry-after"))).toBe(3600);
    expect(await invitationsOf(organizationId)).toBe(20);
    // Replacing a pending invitation is an e-mail too: refused as well.
    expect((await client.post("/settings/team/invitations", { email: to, role: "admin" })).status).toBe(429);

    h.clock.advance(30 * 60_000);
    const later = await client.post("/settings/team/invitations", { email: to, role: "member" });
    expect(later.status).toBe(429);
    expect(later.text).toContain("Try again in 30 minutes.");
    h.clock.advance(30 * 60_000 + 1);
    expect((await client.post("/settings/team/invitations", { email: to, role: "member" })).status).toBe(303);
    expect(await invitationsOf(organizationId)).toBe(21);
    // The refused attempts wrote no e-mail: the one to this address is the last invitation's.
    expect(await h.db.select({ id: emailOutbox.id }).from(emailOutbox).where(eq(emailOutbox.toAddress, to))).toHaveLength(1);
    expect(await arrived(to)).toHaveLength(1);
  });

  it("concurrent invitations stop at 20 (the service's transactions overlap on PostgreSQL); another organization is not affected", async () => {
    const { client, organizationId } = await admin("Concurrent Rate Org");
    const [row] = await h.db.select({ userId: members.userId }).from(members).where(eq(members.organizationId, organizationId));
    const deps = { db: h.db, clock: h.clock, webAppUrl: WEB_APP_URL, secrets: testSecrets };
    const outcomes = await Promise.allSettled(
      Array.from({ length: 30 }, () =>
        inviteMember(deps, { userId: row!.userId, organizationId }, { email: uniqueEmail("racer"), role: "member" }),
      ),
    );
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(20);
    const refusals = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as ApiError] : []));
    expect(refusals.map((error) => error.code)).toEqual(Array(10).fill("rate_limited"));
    expect(await invitationsOf(organizationId)).toBe(20);
    expect((await inviteAll(client, 1))[0]!.status).toBe(429);
    const other = await admin("Unaffected Org");
    expect((await other.client.post("/settings/team/invitations", { email: uniqueEmail("other"), role: "member" })).status).toBe(303);
  });

  it("the count is the database's: two apps over one database (two processes) share it", async () => {
    // A second app with its own clock, queue and in-memory counters: what another process has.
    const second = inProcessHarness(h.db, { background: { mail } }, async () => {});
    second.clock.set(h.clock.now());
    const { client: first, organizationId } = await admin("Two Processes Org");
    const other = new WebClient(second.app);
    for (const [name, value] of first.cookies) other.cookies.set(name, value);
    for (const answer of await inviteAll(first, 12)) expect(answer.status).toBe(303);
    for (const answer of await inviteAll(other, 8)) expect(answer.status).toBe(303);
    expect((await inviteAll(other, 1))[0]!.status).toBe(429);
    expect((await inviteAll(first, 1))[0]!.status).toBe(429);
    expect(await invitationsOf(organizationId)).toBe(20);
    // The second app's e-mails are sent before the file's SMTP server closes.
    await second.queue.idle();
  });
});
