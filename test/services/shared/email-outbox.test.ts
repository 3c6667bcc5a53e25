/**
 * The e-mail outbox through nodemailer to a real SMTP server started here: alert notifications
 * (one per alert per cooldown, to every member, never while snoozed, setting last_notified_at),
 * retries with backoff and the failed state, held mail without a transport (readable through the
 * admin API; its text logged only on a local run), and a snooze that suppresses a queued e-mail.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPasswordUser } from "../../../src/auth/people";
import { alerts, emailOutbox } from "../../../src/db/schema";
import { nodeSmtpTransport } from "../../../src/node/smtp-transport";
import { MAX_EMAIL_ATTEMPTS, SEND_LEASE_SECONDS, deliverEmail, writeEmail } from "../../../src/services/shared/email-outbox";
import { addMember } from "../../../src/services/tenancy/memberships";
import { WEB_APP_URL, captureLogger, createHarness, testSecrets } from "../../support/harness";
import { SmtpSink } from "../../support/smtp-sink";
import { uniqueEmail } from "../../support/web-client";

let h: Awaited<ReturnType<typeof createHarness>>;
const sink = new SmtpSink();
let smtpUrl: string;
const FROM = "CI test analytics <alerts@example.com>";

beforeAll(async () => {
  smtpUrl = await sink.start();
  h = await createHarness({
    background: {
      mail: { transport: nodeSmtpTransport(smtpUrl), from: FROM, logHeldBodies: false },
      emailRetryDelaysSeconds: [0.02, 0.02, 0.02, 0.02, 0.02],
    },
  });
});
afterAll(async () => {
  await h?.close();
  await sink.close();
});

/** An organization with a project, an admin and a member (their e-mail addresses). */
async function team() {
  const { organization, apiKey } = await h.newOrganization("Mail Org");
  const { uploadToken, alertIds } = await h.newProject(organization.id);
  const people = { admin: uniqueEmail("mail-admin"), member: uniqueEmail("mail-member") };
  for (const [role, email] of Object.entries(people) as ["admin" | "member", string][]) {
    const user = await createPasswordUser(
      { db: h.db, secrets: testSecrets, webAppUrl: WEB_APP_URL },
      { name: `${role} person`, email, password: "long enough password" },
    );
    await addMember({ db: h.db, clock: h.clock }, { organizationId: organization.id, userId: user.id, role });
  }
  return { organization, apiKey, uploadToken, alertIds, people };
}

/** Two runs of one commit, one test passing then failing: one flakiness trip. */
async function tripFlakiness(uploadToken: string, commit: string, test = "total") {
  for (const status of ["passed", "failed"]) {
    h.clock.advance(60_000);
    const neighbours = Array.from({ length: 5 }, (_, i) => `<testcase classname="Cart" name="stable_${i}" time="0.1"/>`).join("");
    const body = `<testsuite name="s">${neighbours}<testcase classname="Cart" name="${test}" time="0.1">${status === "failed" ? '<failure message="off by one"/>' : ""}</testcase></testsuite>`;
    const run = await h.uploadAndWait(uploadToken, body, { query: `branch=main&commit_sha=${commit}` });
    expect(run.status).toBe("processed");
  }
  await h.queue.idle();
}

const alertMail = (address: string) => sink.to(address).filter((mail) => mail.subject.startsWith("Flaky tests"));

describe("alert e-mails", () => {
  it("a trip e-mails every member once, with links to the alert and the run, and sets last_notified_at", async () => {
    const { uploadToken, alertIds, people } = await team();
    await tripFlakiness(uploadToken, "e1e1e1e1");
    for (const address of [people.admin, people.member]) {
      const mails = alertMail(address);
      expect(mails, address).toHaveLength(1);
      expect(mails[0]!.from).toBe("alerts@example.com");
      expect(mails[0]!.text).toContain(`${WEB_APP_URL}/alerts/${alertIds.test_flakiness!}`);
      expect(mails[0]!.text).toMatch(/\/runs\/2\b/);
    }
    const [alert] = await h.db.select().from(alerts).where(eq(alerts.id, alertIds.test_flakiness!));
    expect(alert!.lastNotifiedAt).not.toBeNull();

    // Within the cooldown (24 h by default): events are recorded, nothing is sent.
    await tripFlakiness(uploadToken, "e2e2e2e2", "second");
    expect(alertMail(people.admin)).toHaveLength(1);
    expect((await h.db.select().from(alerts).where(eq(alerts.id, alertIds.test_flakiness!)))[0]!.eventsCount).toBe(2);
    // After it, the next trip notifies again.
    h.clock.advance(25 * 3_600_000);
    await tripFlakiness(uploadToken, "e3e3e3e3", "third");
    expect(alertMail(people.admin)).toHaveLength(2);
  });

  it("a snoozed alert e-mails nobody; last_notified_at stays", async () => {
    const { apiKey, uploadToken, alertIds, people } = await team();
    expect((await h.post(`/api/v1/alerts/${alertIds.test_flakiness!}/snooze`, apiKey, { duration: "24h" })).status).toBe(200);
    await tripFlakiness(uploadToken, "f1f1f1f1");
    expect(alertMail(people.admin)).toHaveLength(0);
    const [alert] = await h.db.select().from(alerts).where(eq(alerts.id, alertIds.test_flakiness!));
    expect(alert!.lastNotifiedAt).toBeNull();
  });

  it("an alert's e-mail queued before a snooze or a disable is suppressed at its attempt", async () => {
    const { organization, apiKey, alertIds } = await team();
    const emailId = await writeEmail(
      { db: h.db, clock: h.clock, secrets: testSecrets },
      { organizationId: organization.id, kind: "alert", to: "x@example.com", subject: "s", text: "t", alertId: alertIds.test_flakiness! },
    );
    expect((await h.post(`/api/v1/alerts/${alertIds.test_flakiness!}/disable`, apiKey, {})).status).toBe(200);
    expect(await deliverEmail(h.work.email, emailId)).toBe("suppressed");
    const [row] = await h.db.select().from(emailOutbox).where(eq(emailOutbox.id, emailId));
    expect(row!.status).toBe("suppressed");
    expect(row!.lastError).toContain("disabled");
  });
});

describe("delivery", () => {
  it("a refused message is retried with backoff until it is sent; the attempts are recorded", async () => {
    const { organization } = await team();
    sink.refuseWith = "Try again later";
    const to = uniqueEmail("retry");
    const emailId = await writeEmail(
      { db: h.db, clock: h.clock, secrets: testSecrets },
      { organizationId: organization.id, kind: "invitation", to, subject: "Retry me", text: "body" },
    );
    expect(await deliverEmail(h.work.email, emailId)).toBe("retrying");
    let [row] = await h.db.select().from(emailOutbox).where(eq(emailOutbox.id, emailId));
    expect(row!.status).toBe("pending");
    expect(row!.attempts).toBe(1);
    expect(row!.lastError).toContain("Try again later");
    sink.refuseWith = null;
    // The retry was queued by the failed attempt.
    const deadline = Date.now() + 10_000;
    while (sink.to(to).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    await h.queue.idle();
    [row] = await h.db.select().from(emailOutbox).where(eq(emailOutbox.id, emailId));
    expect(row!.status).toBe("sent");
    expect(row!.attempts).toBe(2);
    expect(sink.to(to)).toHaveLength(1);
    expect(sink.logins.at(-1)).toEqual({ username: "tester", password: "secret" });
  });

  it("two deliveries of one message at once send it once: the second finds the attempt under way and checks back when its claim would lapse", async () => {
    const { organization } = await team();
    const to = uniqueEmail("twice");
    const emailId = await writeEmail(
      { db: h.db, clock: h.clock, secrets: testSecrets },
      { organizationId: organization.id, kind: "invitation", to, subject: "Once", text: "body" },
    );
    // The first attempt is held inside its SMTP exchange until the second delivery has answered.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const smtp = nodeSmtpTransport(smtpUrl);
    const queued: { message: unknown; delaySeconds?: number }[] = [];
    const deps = {
      ...h.work.email,
      queue: {
        send: async (message: never, options?: { delaySeconds?: number }) =>
          void queued.push({ message, delaySeconds: options?.delaySeconds }),
      },
      mail: { ...h.work.email.mail, transport: { send: async (mail: Parameters<typeof smtp.send>[0]) => (await gate, smtp.send(mail)) } },
    };
    const first = deliverEmail(deps, emailId);
    await expect.poll(async () => (await h.db.select().from(emailOutbox).where(eq(emailOutbox.id, emailId)))[0]!.attempts).toBe(1);
    expect(await deliverEmail(deps, emailId)).toBe("claimed");
    expect(queued).toEqual([{ message: { emailId }, delaySeconds: SEND_LEASE_SECONDS }]);
    release();
    expect(await first).toBe("sent");
    expect(await deliverEmail(deps, emailId)).toBe("gone");
    expect(sink.to(to)).toHaveLength(1);
  });

  it("an attempt that died mid-send is taken over once its claim has lapsed", async () => {
    const { organization } = await team();
    const to = uniqueEmail("died");
    const emailId = await writeEmail(
      { db: h.db, clock: h.clock, secrets: testSecrets },
      { organizationId: organization.id, kind: "invitation", to, subject: "Taken over", text: "body" },
    );
    // As a process killed during its SMTP exchange leaves it: started, no outcome.
    await h.db.update(emailOutbox).set({ attempts: 1, lastAttemptAt: h.clock.now(), lastError: null }).where(eq(emailOutbox.id, emailId));
    const deps = { ...h.work.email, queue: { send: async () => {} } };
    expect(await deliverEmail(deps, emailId)).toBe("claimed");
    expect(sink.to(to)).toHaveLength(0);
    h.clock.advance((SEND_LEASE_SECONDS + 1) * 1000);
    expect(await deliverEmail(deps, emailId)).toBe("sent");
    const [row] = await h.db.select().from(emailOutbox).where(eq(emailOutbox.id, emailId));
    expect(row!.attempts).toBe(2);
    expect(sink.to(to)).toHaveLength(1);
  });

  it("the last allowed attempt that fails marks the e-mail failed", async () => {
    const { organization } = await team();
    const emailId = await writeEmail(
      { db: h.db, clock: h.clock, secrets: testSecrets },
      { organizationId: organization.id, kind: "invitation", to: "nobody@example.com", subject: "Lost", text: "body" },
    );
    await h.db
      .update(emailOutbox)
      .set({ attempts: MAX_EMAIL_ATTEMPTS - 1 })
      .where(eq(emailOutbox.id, emailId));
    const unreachable = { ...h.work.email, mail: { ...h.work.email.mail, transport: nodeSmtpTransport("smtp://127.0.0.1:1") } };
    expect(await deliverEmail(unreachable, emailId)).toBe("failed");
    const [row] = await h.db.select().from(emailOutbox).where(eq(emailOutbox.id, emailId));
    expect(row!.status).toBe("failed");
    expect(row!.attempts).toBe(MAX_EMAIL_ATTEMPTS);
  });

  it("without a transport the e-mail is held, readable by the operator, its body sealed and not logged", async () => {
    const { organization } = await team();
    const secretLink = `${WEB_APP_URL}/invitations/${"A".repeat(43)}`;
    const emailId = await writeEmail(
      { db: h.db, clock: h.clock, secrets: testSecrets },
      { organizationId: organization.id, kind: "invitation", to: "held@example.com", subject: "Held", text: `Open ${secretLink}` },
    );
    const [sealed] = await h.db.select().from(emailOutbox).where(eq(emailOutbox.id, emailId));
    expect(sealed!.bodyEncrypted).not.toContain("invitations");
    const logs: string[] = [];
    const held = { ...h.work.email, logger: captureLogger(logs), mail: { transport: null, from: FROM, logHeldBodies: false } };
    expect(await deliverEmail(held, emailId)).toBe("held");
    expect(logs.join("\n")).toContain(emailId);
    expect(logs.join("\n")).not.toContain(secretLink);
    const listed = await h.admin("GET", "/emails?status=held");
    expect(listed.status).toBe(200);
    const mine = (listed.body.data as { id: string; text: string; status: string }[]).find((email) => email.id === emailId);
    expect(mine!.text).toContain(secretLink);
    expect((await h.admin("GET", `/emails/${emailId}`)).body.status).toBe("held");
    expect((await h.call("GET", "/admin/v1/emails")).status).toBe(401);

    // On a local run (logHeldBodies) the operator reads the link in the log.
    const local = await writeEmail(
      { db: h.db, clock: h.clock, secrets: testSecrets },
      { organizationId: organization.id, kind: "invitation", to: "held@example.com", subject: "Held", text: `Open ${secretLink}` },
    );
    await deliverEmail({ ...held, mail: { ...held.mail, logHeldBodies: true } }, local);
    expect(logs.join("\n")).toContain(secretLink);
  });
});
