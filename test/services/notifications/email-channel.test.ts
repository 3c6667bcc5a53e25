/**
 * E-mail channels (docs/notifications.md#e-mail-channels) through a real SMTP server: a test message
 * and a quarantine reach the channel's member as HTML and text, through the e-mail outbox, and show
 * in the delivery log; once the member has left the organization nothing reaches them: the next
 * delivery fails at once, and an e-mail already in the outbox is suppressed at its attempt.
 */
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emailOutbox, members, tests, users } from "../../../src/db/schema";
import { nodeSmtpTransport } from "../../../src/node/smtp-transport";
import { deliverEmail, writeEmail } from "../../../src/services/shared/email-outbox";
import { createHarness } from "../../support/harness";
import { testSecrets } from "../../support/harness-core";
import { SmtpSink, mimePart } from "../../support/smtp-sink";

const sink = new SmtpSink();
let h: Awaited<ReturnType<typeof createHarness>>;

beforeAll(async () => {
  const smtpUrl = await sink.start();
  h = await createHarness({
    background: { mail: { transport: nodeSmtpTransport(smtpUrl), from: "CI test analytics <ci@example.com>", logHeldBodies: false } },
  });
});
afterAll(async () => {
  await sink.close();
  await h?.close();
});

describe("e-mail channels", () => {
  it("send to the channel's members through the outbox, in the delivery log; a member who left receives nothing", async () => {
    const { organization, apiKey } = await h.newOrganization("Mail Org");
    const { project } = await h.newProject(organization.id, "Checkout");
    await h.newRun(project.id, {
      report: {
        suites: [{ name: "s", cases: [{ classname: "OrderTest", name: "rejects <b>empty</b>", status: "passed", durationMs: 5 }] }],
      },
    });
    const [test] = await h.db.select({ id: tests.id }).from(tests).where(eq(tests.projectId, project.id));
    const email = `channel-${crypto.randomUUID()}@example.com`;
    const [user] = await h.db.insert(users).values({ name: "Mo", email }).returning();
    await h.db.insert(members).values({ organizationId: organization.id, userId: user!.id, role: "member" });

    const created = await h.admin("POST", `/organizations/${organization.id}/webhooks`, {
      kind: "email",
      addresses: [email],
      project_id: project.id,
      events: ["quarantine"],
    });
    expect(created.status, created.text).toBe(201);
    const channelId = created.body.webhook.id as string;

    expect((await h.admin("POST", `/webhooks/${channelId}/test`)).status).toBe(202);
    await h.queue.idle();
    const [testMessage] = await sink.waitFor(1).then(() => sink.to(email));
    expect(testMessage!.subject).toBe("Test message from CI test analytics");
    expect(mimePart(testMessage!.raw, "text/plain")).toContain("This channel is set up: it will receive quarantine changes of Checkout.");

    const quarantined = await h.post(`/api/v1/tests/${test!.id}/quarantine`, apiKey, { reason: "flaky <i>clock</i>", duration: "7d" });
    expect(quarantined.status, quarantined.text).toBe(200);
    await h.queue.idle();
    await sink.waitFor(2);
    const [, quarantineMail] = sink.to(email);
    expect(quarantineMail!.subject).toBe("OrderTest › rejects <b>empty</b> quarantined");
    const html = mimePart(quarantineMail!.raw, "text/html")!;
    // Uploaded names are escaped in the HTML; the only links are the service's.
    expect(html).toContain("<code>OrderTest › rejects &lt;b&gt;empty&lt;/b&gt;</code>");
    expect(html).toContain("Reason: flaky &lt;i&gt;clock&lt;/i&gt;");
    expect(mimePart(quarantineMail!.raw, "text/plain")).toContain("Open the test: http");

    const log = await h.admin("GET", `/webhooks/${channelId}/deliveries`);
    expect(log.body.data.map((delivery: { event_type: string; status: string }) => [delivery.event_type, delivery.status])).toEqual([
      ["test.quarantined", "delivered"],
      ["test.message", "delivered"],
    ]);

    // The member leaves: the next notification reaches nobody and says why.
    await h.db.delete(members).where(and(eq(members.organizationId, organization.id), eq(members.userId, user!.id)));
    expect((await h.post(`/api/v1/tests/${test!.id}/unquarantine`, apiKey)).status).toBe(200);
    await h.queue.idle();
    const [latest] = (await h.admin("GET", `/webhooks/${channelId}/deliveries`)).body.data;
    expect(latest).toMatchObject({
      event_type: "test.unquarantined",
      status: "failed",
      last_error: "not sent: none of the channel's addresses belongs to a member of the organization any more",
    });
    expect(sink.to(email)).toHaveLength(2);

    // An e-mail already in the outbox when they left is checked again at its attempt.
    const emailId = await writeEmail(
      { db: h.db, clock: h.clock, secrets: testSecrets },
      { organizationId: organization.id, kind: "notification", to: email, subject: "late", text: "late", html: "<p>late</p>" },
    );
    expect(await deliverEmail(h.work.email, emailId)).toBe("suppressed");
    const [row] = await h.db.select().from(emailOutbox).where(eq(emailOutbox.id, emailId));
    expect(row!.lastError).toBe("not sent: the recipient is no longer a member of the organization");
  });
});
