/**
 * Notification channels on the project settings page (docs/notifications.md#slack-and-teams): an
 * admin adds a Slack channel with its events and an owner filter, reads its URL whole only on the
 * page the addition leads to, masked afterwards (a member: scheme and host only), and sends it a
 * test message that reaches a local receiver as Block Kit; a form without events or with an
 * owner that is not one is refused, without echoing the channel's URL.
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects, webhookEndpoints } from "../../src/db/schema";
import { createHarness } from "../support/harness";
import { adminAndMember } from "../support/project-page-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
let receiver: Server;
let base: string;
const received: { path: string; body: any }[] = [];

beforeAll(async () => {
  h = await createHarness();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "/", body: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
  await h?.close();
});

async function projectOf(people: Awaited<ReturnType<typeof adminAndMember>>) {
  const created = await people.admin.post("/projects/new", { name: "Checkout", description: "", defaultBranch: "" });
  expect(created.status).toBe(303);
  const [project] = await h.db.select().from(projects).where(eq(projects.organizationId, people.organizationId));
  return project!;
}

describe("notification channels on the settings page", () => {
  it("an admin adds a Slack channel: its URL whole once, masked after, a member sees the host only; a test message reaches it", async () => {
    const people = await adminAndMember(h, "Channels Org");
    const project = await projectOf(people);
    const settings = `/projects/${project.id}/settings`;
    const url = `${base}/services/T0001/B0001/TopSecretToken`;
    const added = await people.admin.postAndFollow(`${settings}/webhooks`, {
      kind: "slack",
      url,
      eventsShown: "1",
      events: ["health", "quarantine"],
      ownerFilter: "@acme/payments",
      description: "Payments team",
    });
    expect(added.posted.status).toBe(303);
    expect(added.text).toContain(`Slack channel added for <code>${url}</code>`);
    const [endpoint] = await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project.id));
    expect(endpoint).toMatchObject({ kind: "slack", events: ["health", "quarantine"], ownerFilter: "@acme/payments" });

    const page = await people.admin.get(settings);
    expect(page.text).not.toContain("TopSecretToken");
    expect(page.text).toContain(`<code>${base}/services/T…/…/…••••</code>`);
    expect(page.text).toContain("Tests turning flaky or broken, Quarantines made and ended");
    expect(page.text).toContain("<code>@acme/payments</code>");
    expect(page.text).toContain(`action="${settings}/webhooks/${endpoint!.id}/test"`);
    expect(page.text).toContain("None yet");
    const member = await people.member.get(settings);
    expect(member.text).toContain(`<code>${base}/…</code>`);
    expect(member.text).not.toContain("/services/");
    expect(member.text).not.toContain("Send a test message");
    expect((await people.member.post(`${settings}/webhooks/${endpoint!.id}/test`, {})).status).toBe(403);

    const sent = await people.admin.postAndFollow(`${settings}/webhooks/${endpoint!.id}/test`, {});
    expect(sent.posted.status).toBe(303);
    expect(sent.text).toContain("Test message queued for");
    await h.queue.idle();
    const [message] = received.filter((entry) => entry.path === "/services/T0001/B0001/TopSecretToken");
    expect(message!.body.blocks[0].text.text).toBe("Test message from CI test analytics");
    expect(message!.body.blocks[1].text.text).toContain(
      "it will receive tests turning flaky or broken and quarantine changes (tests owned by @acme/payments) of Checkout.",
    );
    // The outcome shows beside the channel.
    expect((await people.admin.get(settings)).text).toContain('Delivered <span class="muted">(test.message, ');
    expect((await people.admin.post(`${settings}/webhooks/${crypto.randomUUID()}/test`, {})).status).toBe(404);
  });

  it("no event, or an owner that is not one, is refused with the problem named and the channel's URL not echoed", async () => {
    const people = await adminAndMember(h, "Channels Refused");
    const project = await projectOf(people);
    const form = { kind: "teams", url: `${base}/workflows/abc/secretsig`, eventsShown: "1", description: "" };
    const none = await people.admin.post(`/projects/${project.id}/settings/webhooks`, { ...form, ownerFilter: "" });
    expect(none.status).toBe(400);
    expect(none.text).toContain("Choose at least one event.");
    expect(none.text).not.toContain("secretsig");
    const owner = await people.admin.post(`/projects/${project.id}/settings/webhooks`, {
      ...form,
      events: "alerts",
      ownerFilter: "pay ments",
    });
    expect(owner.status).toBe(400);
    expect(owner.text).toContain("Owner must be a CODEOWNERS owner: @org/team, @user or an e-mail address.");
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project.id))).toEqual([]);
  });
});
