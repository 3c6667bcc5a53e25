/**
 * Slack and Microsoft Teams channels (docs/notifications.md#slack-and-teams), against local HTTP
 * receivers that check each service's payload shape as it documents it:
 * - a quarantine reaches a Slack channel as Block Kit and a Teams channel as an Adaptive Card,
 *   unsigned, in sentences, with a button to the test's page;
 * - a channel's URL is sealed at rest (the stored columns do not hold it) and masked on every
 *   read but the answer to its creation;
 * - Slack's 429 with Retry-After: the retry waits as long as asked, then the delivery goes through;
 * - the events a channel chose and its owner filter decide what it hears;
 * - a test message goes through the outbox to any channel, and shows in the delivery log.
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { notificationDeliveries, tests, webhookEndpoints } from "../../../src/db/schema";
import { transactionWithRetry } from "../../../src/db/transaction-retry";
import { queueDeliveries, recordTestEvents } from "../../../src/services/tests/test-events";
import { planNotifications } from "../../../src/services/notifications/notifications";
import { endpointUrl, reencryptSigningSecrets } from "../../../src/services/notifications/webhook-secrets";
import { SecretKeyring } from "../../../src/lib/secret-box";
import { createHarness } from "../../support/harness";
import { LOCAL_RECEIVERS_POLICY, captureLogger, testSecrets } from "../../support/harness-core";
import { SECRETS_KEY, WEB_APP_URL } from "../../support/constants";

type Received = { path: string; headers: Record<string, string | string[] | undefined>; body: unknown; at: number };
const received: Received[] = [];
/** Answers to give, per path, before the default 200 "ok" (Slack's answer). */
const scripted = new Map<string, { status: number; headers?: Record<string, string> }[]>();
let receiver: Server;
let base: string;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const path = req.url ?? "/";
      received.push({ path, headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")), at: Date.now() });
      const answer = scripted.get(path)?.shift() ?? { status: 200 };
      res.writeHead(answer.status, { "content-type": "text/plain", ...answer.headers }).end(answer.status === 200 ? "ok" : "rate_limited");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => receiver.close(resolve)));

const at = (path: string) => received.filter((entry) => entry.path === path);

/** Slack's incoming webhook payload (api.slack.com/messaging/webhooks, Block Kit): checked as Slack would. */
function expectSlackShape(body: unknown) {
  const payload = body as { text: string; blocks: Record<string, any>[] };
  expect(Object.keys(payload).sort()).toEqual(["blocks", "text"]);
  expect(typeof payload.text).toBe("string");
  expect(payload.text.length).toBeGreaterThan(0);
  expect(payload.blocks.length).toBeLessThanOrEqual(50);
  const [header, section, context, actions] = payload.blocks;
  expect(header).toMatchObject({ type: "header", text: { type: "plain_text" } });
  expect(header!.text.text.length).toBeLessThanOrEqual(150);
  expect(section).toMatchObject({ type: "section", text: { type: "mrkdwn" } });
  expect(section!.text.text.length).toBeLessThanOrEqual(3000);
  expect(context).toMatchObject({ type: "context" });
  expect(actions).toMatchObject({ type: "actions" });
  expect(actions!.elements).toHaveLength(1);
  expect(actions!.elements[0]).toMatchObject({ type: "button", text: { type: "plain_text" } });
  expect(actions!.elements[0].url.startsWith(WEB_APP_URL)).toBe(true);
  return payload;
}

/** A Teams message with an Adaptive Card (incoming webhooks and Workflows): the fields Teams requires. */
function expectTeamsShape(body: unknown) {
  const payload = body as { type: string; attachments: { contentType: string; content: Record<string, any> }[] };
  expect(payload.type).toBe("message");
  expect(payload.attachments).toHaveLength(1);
  const [attachment] = payload.attachments;
  expect(attachment!.contentType).toBe("application/vnd.microsoft.card.adaptive");
  const card = attachment!.content;
  expect(card.type).toBe("AdaptiveCard");
  expect(card.version).toBe("1.4");
  expect(card.$schema).toBe("http://adaptivecards.io/schemas/adaptive-card.json");
  expect(card.body.length).toBeGreaterThan(0);
  for (const block of card.body) {
    expect(block.type).toBe("TextBlock");
    expect(typeof block.text).toBe("string");
  }
  expect(card.actions).toHaveLength(1);
  expect(card.actions[0]).toMatchObject({ type: "Action.OpenUrl", title: expect.any(String) });
  expect(card.actions[0].url.startsWith(WEB_APP_URL)).toBe(true);
  return card;
}

describe("Slack and Teams channels", () => {
  let h: Awaited<ReturnType<typeof createHarness>>;
  beforeAll(async () => {
    h = await createHarness({ background: { deliveryRetryDelaysSeconds: [0.01] } });
  });
  afterAll(() => h.close());

  /** An organization with a project holding one test (`OrderTest › rejects empty input`). */
  async function setup() {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Checkout");
    await h.newRun(project.id, {
      report: {
        suites: [{ name: "s", cases: [{ classname: "OrderTest", name: "rejects empty input", status: "passed", durationMs: 5 }] }],
      },
    });
    const [test] = await h.db.select({ id: tests.id }).from(tests).where(eq(tests.projectId, project.id));
    return { organizationId: organization.id as string, projectId: project.id as string, apiKey, testId: test!.id };
  }

  const addChannel = async (organizationId: string, body: Record<string, unknown>) => {
    const res = await h.admin("POST", `/organizations/${organizationId}/webhooks`, body);
    expect(res.status, res.text).toBe(201);
    return res.body as { webhook: { id: string; url: string; kind: string }; signing_secret: string | null };
  };

  it("a quarantine reaches Slack as Block Kit and Teams as an Adaptive Card, unsigned, in sentences", async () => {
    const { organizationId, projectId, apiKey, testId } = await setup();
    await addChannel(organizationId, { kind: "slack", url: `${base}/q/slack/services/T1/B1/s3cret`, project_id: projectId });
    await addChannel(organizationId, { kind: "teams", url: `${base}/q/teams/webhookb2/abc/IncomingWebhook/t0ken` });

    const quarantined = await h.post(`/api/v1/tests/${testId}/quarantine`, apiKey, { reason: "races the clock", duration: "7d" });
    expect(quarantined.status, quarantined.text).toBe(200);
    await h.queue.idle();

    const [slack] = at("/q/slack/services/T1/B1/s3cret");
    const payload = expectSlackShape(slack!.body);
    expect(slack!.headers["cta-signature"]).toBeUndefined();
    expect(slack!.headers["content-type"]).toBe("application/json");
    const until = (quarantined.body.quarantine.expires_at as string).slice(0, 10);
    expect(payload.blocks[1]!.text.text).toBe(
      `\`OrderTest › rejects empty input\` was quarantined until ${until} in Checkout.\nReason: races the clock`,
    );
    expect(payload.blocks[3]!.elements[0].url).toBe(`${WEB_APP_URL}/projects/${projectId}/tests/${testId}`);

    const [teams] = at("/q/teams/webhookb2/abc/IncomingWebhook/t0ken");
    const card = expectTeamsShape(teams!.body);
    expect(card.body[1].text).toBe(`**OrderTest › rejects empty input** was quarantined until ${until} in Checkout.`);
    expect(card.actions[0].url).toBe(`${WEB_APP_URL}/projects/${projectId}/tests/${testId}`);
  });

  it("a channel's URL is sealed at rest and masked on every read but its creation's answer", async () => {
    const { organizationId } = await setup();
    const url = `${base}/seal/services/T9/B9/VerySecretToken`;
    const created = await addChannel(organizationId, { kind: "slack", url, description: "payments" });
    expect(created.webhook.url).toBe(url);
    expect(created.signing_secret).toBeNull();

    const [row] = await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, created.webhook.id));
    expect(row!.url).toBe(`${base}/seal/s…/…/…/…••••`);
    expect(row!.urlEncrypted).toMatch(/^v1:[0-9a-f]{12}:/);
    const dump = JSON.stringify(await h.db.execute(sql`select * from webhook_endpoints where id = ${created.webhook.id}`));
    expect(dump).not.toContain("VerySecretToken");

    const list = await h.admin("GET", `/organizations/${organizationId}/webhooks`);
    expect(list.body.data).toEqual([expect.objectContaining({ id: created.webhook.id, kind: "slack", url: row!.url })]);
    expect(list.text).not.toContain("VerySecretToken");
  });

  it("a key rotation re-seals a channel's URL under the new key", async () => {
    const { organizationId } = await setup();
    const url = `${base}/rotate/services/T3/B3/rotated`;
    const { webhook } = await addChannel(organizationId, { kind: "teams", url });
    const rotated = new SecretKeyring({ current: "a-new-key-of-at-least-32-characters!!", previous: [SECRETS_KEY] });
    const report = await reencryptSigningSecrets({ db: h.db, secrets: rotated, logger: captureLogger([]) });
    expect(report.resealed).toBeGreaterThanOrEqual(1);
    const [row] = await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, webhook.id));
    expect(row!.urlEncrypted!.startsWith(`v1:${await rotated.currentKeyId()}:`)).toBe(true);
    expect(await endpointUrl(new SecretKeyring({ current: "a-new-key-of-at-least-32-characters!!" }), row!)).toBe(url);
  });

  it("Slack's 429 with Retry-After: the retry waits as asked (past the schedule's 10 ms), then it is delivered", async () => {
    const { organizationId } = await setup();
    const path = "/limited/services/T2/B2/x";
    scripted.set(path, [{ status: 429, headers: { "retry-after": "1" } }]);
    const { webhook } = await addChannel(organizationId, { kind: "slack", url: `${base}${path}` });

    const sent = await h.admin("POST", `/webhooks/${webhook.id}/test`);
    expect(sent.status, sent.text).toBe(202);
    expect(sent.body).toMatchObject({ endpoint_id: webhook.id, event_type: "test.message", status: "pending" });
    await h.queue.idle();

    const attempts = at(path);
    expect(attempts).toHaveLength(2);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
    expectSlackShape(attempts[1]!.body);
    const log = await h.admin("GET", `/webhooks/${webhook.id}/deliveries`);
    expect(log.body.data).toEqual([
      expect.objectContaining({ event_type: "test.message", status: "delivered", attempts: 2, last_status_code: 200, last_error: null }),
    ]);
    expect(log.text).not.toContain(path);
  });

  it("the events chosen and the owner filter decide what a channel hears", async () => {
    const { organizationId, projectId, apiKey, testId } = await setup();
    await h.db
      .update(tests)
      .set({ owners: ["@acme/payments"] })
      .where(eq(tests.id, testId));
    const paths = { payments: "/route/payments/services/a", search: "/route/search/services/a", alerts: "/route/alerts/services/a" };
    await addChannel(organizationId, { kind: "slack", url: `${base}${paths.payments}`, owner_filter: "@ACME/Payments" });
    await addChannel(organizationId, { kind: "teams", url: `${base}${paths.search}`, owner_filter: "@acme/search" });
    await addChannel(organizationId, { kind: "slack", url: `${base}${paths.alerts}`, events: ["alerts"] });

    expect((await h.post(`/api/v1/tests/${testId}/quarantine`, apiKey, { reason: "r", duration: "1d" })).status).toBe(200);
    await h.queue.idle();
    expect(at(paths.payments)).toHaveLength(1);
    expect(at(paths.search)).toHaveLength(0);
    expect(at(paths.alerts)).toHaveLength(0);

    // Health: Slack and Teams hear a test turning flaky or broken, not one turning healthy again.
    for (const health of ["flaky", "healthy"] as const) {
      await h.db.update(tests).set({ health }).where(eq(tests.id, testId));
      const ids = await transactionWithRetry(h.db, (tx) =>
        recordTestEvents(tx, WEB_APP_URL, { projectId, testRunId: null, occurredAt: new Date() }, [
          { type: "test.health_changed", testId },
        ]),
      );
      await queueDeliveries({ queue: h.queue, logger: { info() {}, error() {} } }, ids);
      await h.queue.idle();
    }
    const payments = at(paths.payments);
    expect(payments).toHaveLength(2);
    expect(expectSlackShape(payments[1]!.body).blocks[1]!.text.text).toBe("`OrderTest › rejects empty input` turned flaky in Checkout.");
  });

  it("an alert's trip: a channel with an owner filter gets the events about its owner's tests, and none without them", async () => {
    const { organizationId } = await setup();
    const { project, alertIds } = await h.newProject(organizationId, "Payments");
    const run = await h.newRun(project.id, { meta: { branch: "main", commitSha: "69d74ac0123456789" } });
    const paths = { payments: "/alert/payments/services/a", search: "/alert/search/services/a", all: "/alert/all/x" };
    await addChannel(organizationId, { kind: "slack", url: `${base}${paths.payments}`, owner_filter: "@acme/payments" });
    await addChannel(organizationId, { kind: "slack", url: `${base}${paths.search}`, owner_filter: "@acme/search" });
    await addChannel(organizationId, { kind: "teams", url: `${base}${paths.all}`, events: ["alerts"] });
    const alertId = alertIds.test_flakiness!;
    const event = (name: string, owners: string[]) =>
      h.newEvent(alertId, run.id, { subject: "test", name, classname: "OrderTest", rule: "same_commit_flip", owners });
    const trips = [
      {
        alertId,
        alertType: "test_flakiness" as const,
        eventId: (await event("rejects empty input", ["@acme/payments"])).id,
        snoozed: false,
      },
      { alertId, alertType: "test_flakiness" as const, eventId: (await event("ships", ["@acme/shipping"])).id, snoozed: false },
    ];
    const deps = {
      db: h.db,
      clock: h.clock,
      logger: captureLogger([]),
      webAppUrl: WEB_APP_URL,
      queue: h.queue,
      urlPolicy: LOCAL_RECEIVERS_POLICY,
      fetch,
      secrets: testSecrets,
    };
    await planNotifications(deps, run, trips);
    await h.queue.idle();

    const payments = expectSlackShape(at(paths.payments)[0]!.body);
    expect(payments.blocks[0]!.text.text).toBe("Flaky tests on Payments");
    expect(payments.blocks[1]!.text.text).toBe(
      `The alert “Flaky tests” of Payments tripped on run #${run.number} (branch main, commit 69d74ac).\n\`OrderTest › rejects empty input\` was flagged (same commit flip).`,
    );
    expect(payments.blocks[3]!.elements[0].url).toBe(`${WEB_APP_URL}/alerts/${alertId}`);
    expect(at(paths.search)).toHaveLength(0);
    const card = expectTeamsShape(at(paths.all)[0]!.body);
    expect(card.body.map((block: { text: string }) => block.text).slice(2, 4)).toEqual([
      "**OrderTest › rejects empty input** was flagged \\(same commit flip\\).",
      "**OrderTest › ships** was flagged \\(same commit flip\\).",
    ]);
  });

  it("a test message reaches any kind of channel; a signed webhook's is signed", async () => {
    const { organizationId, projectId } = await setup();
    const { webhook: teams } = await addChannel(organizationId, {
      kind: "teams",
      url: `${base}/hello/teams/x`,
      project_id: projectId,
      events: ["health", "quarantine"],
      owner_filter: "@acme/payments",
    });
    const { webhook: signed } = await addChannel(organizationId, { url: `${base}/hello/webhook` });
    for (const id of [teams.id, signed.id]) expect((await h.admin("POST", `/webhooks/${id}/test`)).status).toBe(202);
    await h.queue.idle();

    const card = expectTeamsShape(at("/hello/teams/x")[0]!.body);
    expect(card.body[0].text).toBe("Test message from CI test analytics");
    expect(card.body[1].text).toBe(
      "This channel is set up: it will receive tests turning flaky or broken and quarantine changes \\(tests owned by @acme/payments\\) of Checkout.",
    );
    expect(card.actions[0].url).toBe(`${WEB_APP_URL}/projects/${projectId}/settings`);
    const [hook] = at("/hello/webhook");
    expect(hook!.headers["cta-event-type"]).toBe("test.message");
    expect(hook!.headers["cta-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(hook!.body).toMatchObject({ type: "test.message", endpoint_id: signed.id, project_id: null });

    const rows = await h.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.endpointId, teams.id));
    expect(rows).toEqual([expect.objectContaining({ eventType: "test.message", status: "delivered", attempts: 1 })]);
    expect((await h.admin("POST", `/webhooks/${crypto.randomUUID()}/test`)).status).toBe(404);
  });
});
