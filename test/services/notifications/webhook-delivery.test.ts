/**
 * Webhook deliveries held to the outbound policy (docs/outbound-policy.md), on Node's own fetch
 * (src/node/outbound-fetch.ts) and a real local receiver:
 * - with the Node default (no OUTBOUND_ALLOW_HOSTS), a quarantine sends nothing to loopback, even
 *   to an endpoint stored before the policy tightened, nor to a public-looking name resolving there;
 * - an organization has at most WEBHOOKS_PER_ORGANIZATION webhooks: one more is a 429 `quota_exceeded`;
 * - past WEBHOOK_DELIVERIES_PER_MINUTE, a delivery waits in the queue (not dropped, no attempt
 *   counted) and goes out in the next window.
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { notificationDeliveries, tests, webhookEndpoints } from "../../../src/db/schema";
import type { QueueMessage, SendOptions } from "../../../src/ingest/run-queue";
import { nodeOutboundFetch } from "../../../src/node/outbound-fetch";
import { requeueStalledWork } from "../../../src/services/stalled-work";
import { MAX_DELIVERY_ATTEMPTS, deliverNotification } from "../../../src/services/notifications/webhook-delivery";
import { LOCAL_RECEIVERS_POLICY, createHarness } from "../../support/harness";
import { captureLogger } from "../../support/harness-core";

let receiver: Server;
let base: string;
const received: string[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    received.push(req.url ?? "/");
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => receiver.close(resolve)));

/** An organization with a project holding one test, and an API key to quarantine it. */
async function organizationWithTest(h: Awaited<ReturnType<typeof createHarness>>) {
  const { organization, apiKey } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  await h.newRun(project.id, { report: { suites: [{ name: "s", cases: [{ name: "checkout", status: "passed", durationMs: 5 }] }] } });
  const [test] = await h.db.select({ id: tests.id }).from(tests).where(eq(tests.projectId, project.id));
  return { organizationId: organization.id as string, apiKey, testId: test!.id };
}

describe("the Node default policy (OUTBOUND_ALLOW_HOSTS unset)", () => {
  let h: Awaited<ReturnType<typeof createHarness>>;
  beforeAll(async () => {
    // The background as `npm start` builds it without allowances; "hooks.example.com" resolves to loopback.
    h = await createHarness({
      overrides: { webhookUrlPolicy: {} },
      background: {
        urlPolicy: {},
        fetch: nodeOutboundFetch({}, { resolve: async () => ["127.0.0.1"] }),
        deliveryRetryDelaysSeconds: [0.01],
      },
    });
  });
  afterAll(() => h.close());

  it("a webhook URL with a NUL character is a 422 in the envelope, not a 500, and nothing is stored", async () => {
    const { organizationId } = await organizationWithTest(h);
    const res = await h.admin("POST", `/organizations/${organizationId}/webhooks`, { url: "https://hooks.example.com/a\u0000" });
    expect(res.status, res.text).toBe(422);
    expect(res.body.error.code).toBe("validation_failed");
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.organizationId, organizationId))).toEqual([]);
  });

  it("a quarantine sends no signed POST to loopback, in any spelling of an endpoint stored earlier, nor to a name resolving there", async () => {
    const { organizationId, apiKey, testId } = await organizationWithTest(h);
    const port = new URL(base).port;
    const urls = [
      `${base}/plain`,
      `http://localhost:${port}/name`,
      `http://2130706433:${port}/decimal`,
      `http://0x7f000001:${port}/hex`,
      `https://hooks.example.com:${port}/resolves-inside`,
    ];
    // Rows as the old policy let admins store them (http to loopback was accepted on Node).
    await h.db.insert(webhookEndpoints).values(urls.map((url) => ({ organizationId, url, legacySigningSecret: "whsec_legacy" })));

    expect((await h.post(`/api/v1/tests/${testId}/quarantine`, apiKey, { reason: "flaky", duration: "7d" })).status).toBe(200);
    await h.queue.idle();

    // None of this test's paths (the receiver is shared with the file's other tests).
    const ours = new Set(urls.map((url) => new URL(url).pathname));
    expect(received.filter((path) => ours.has(path))).toEqual([]);
    const log = await h.db
      .select({
        url: webhookEndpoints.url,
        status: notificationDeliveries.status,
        attempts: notificationDeliveries.attempts,
        lastError: notificationDeliveries.lastError,
      })
      .from(notificationDeliveries)
      .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, notificationDeliveries.endpointId))
      .where(eq(webhookEndpoints.organizationId, organizationId));
    expect(log).toHaveLength(urls.length);
    for (const entry of log) {
      // Every attempt refused, to the last one.
      expect(entry, entry.url).toMatchObject({ status: "failed", attempts: MAX_DELIVERY_ATTEMPTS });
      expect(entry.lastError, entry.url).toMatch(
        /^url (must not point at a private, loopback|must not point at a loopback|resolves to a private, loopback)/,
      );
    }
  });

  it("the admin API refuses loopback webhooks", async () => {
    const { organizationId } = await organizationWithTest(h);
    for (const url of [`${base}/x`, "http://localhost:9/x", "https://127.1/x", "https://[::1]/x"]) {
      const answer = await h.admin("POST", `/organizations/${organizationId}/webhooks`, { url });
      expect(answer.status, url).toBe(422);
      expect(answer.body.error.details[0].field).toBe("url");
    }
  });
});

describe("webhooks per organization", () => {
  let h: Awaited<ReturnType<typeof createHarness>>;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it("the 11th webhook of an organization is a 429 quota_exceeded; removing one makes room", async () => {
    const { organization } = await h.newOrganization();
    const create = (i: number) => h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: `https://hooks.example.com/${i}` });
    const created = [];
    for (let i = 0; i < 10; i++) {
      const answer = await create(i);
      expect(answer.status).toBe(201);
      created.push(answer.body.webhook.id as string);
    }
    const eleventh = await create(10);
    expect(eleventh.status).toBe(429);
    expect(eleventh.body.error.code).toBe("quota_exceeded");
    expect(eleventh.body.error.message).toMatch(/at most|most it may have/);
    expect((await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.organizationId, organization.id))).length).toBe(10);

    expect((await h.admin("DELETE", `/webhooks/${created[0]}`)).status).toBe(204);
    expect((await create(11)).status).toBe(201);
    // Another organization has its own ten.
    const other = await h.newOrganization();
    expect(
      (await h.admin("POST", `/organizations/${other.organization.id}/webhooks`, { url: "https://hooks.example.com/other" })).status,
    ).toBe(201);
  });

  it("concurrent additions never pass the cap, which the operator sets (WEBHOOKS_PER_ORGANIZATION)", async () => {
    const capped = await createHarness({ overrides: { webhookUrlPolicy: { ...LOCAL_RECEIVERS_POLICY, webhooksPerOrganization: 3 } } });
    try {
      const { organization } = await capped.newOrganization();
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          capped.admin("POST", `/organizations/${organization.id}/webhooks`, { url: `https://hooks.example.com/${i}` }),
        ),
      );
      expect(answers.filter((answer) => answer.status === 201)).toHaveLength(3);
      expect(answers.filter((answer) => answer.status === 429 && answer.body.error.code === "quota_exceeded")).toHaveLength(5);
    } finally {
      await capped.close();
    }
  });
});

describe("deliveries per organization and minute", () => {
  let h: Awaited<ReturnType<typeof createHarness>>;
  beforeAll(async () => {
    h = await createHarness({ background: { urlPolicy: { ...LOCAL_RECEIVERS_POLICY, deliveriesPerMinute: 2 } } });
  });
  afterAll(() => h.close());

  it("past the cap a delivery is queued again for the next window, without an attempt, then sent", async () => {
    const { organizationId } = await organizationWithTest(h);
    const [endpoint] = await h.db
      .insert(webhookEndpoints)
      .values({ organizationId, url: `${base}/capped`, legacySigningSecret: "whsec_legacy" })
      .returning();
    const rows = await h.db
      .insert(notificationDeliveries)
      .values([1, 2, 3].map((n) => ({ endpointId: endpoint!.id, eventType: "test.quarantined" as const, eventIds: [], payload: { n } })))
      .returning({ id: notificationDeliveries.id });
    const queued: { message: QueueMessage; options?: SendOptions }[] = [];
    const deps = {
      ...h.work.notifications,
      queue: { send: async (message: QueueMessage, options?: SendOptions) => void queued.push({ message, options }) },
    };

    const outcomes = [];
    for (const { id } of rows) outcomes.push(await deliverNotification(deps, id));
    expect(outcomes).toEqual(["delivered", "delivered", "deferred"]);
    expect(received.filter((path) => path === "/capped")).toHaveLength(2);
    const [waiting] = await h.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.id, rows[2]!.id));
    // No attempt counted; the time is kept so the stalled-work sweep does not queue it again meanwhile.
    expect(waiting).toMatchObject({ status: "pending", attempts: 0, lastAttemptAt: h.clock.now() });
    expect(queued).toEqual([{ message: { deliveryId: rows[2]!.id }, options: { delaySeconds: 60 } }]);
    const sweptBefore = queued.length;
    await requeueStalledWork({
      db: h.db,
      clock: { now: () => new Date(h.clock.now().getTime() + 10 * 60_000) },
      queue: deps.queue,
      logger: captureLogger([]),
    });
    expect(queued.slice(sweptBefore).filter((sent) => (sent.message as { deliveryId?: number }).deliveryId === rows[2]!.id)).toEqual([]);

    // Still the same window: deferred again. The next window: sent.
    h.clock.advance(30_000);
    expect(await deliverNotification(deps, rows[2]!.id)).toBe("deferred");
    expect(queued.at(-1)!.options).toEqual({ delaySeconds: 30 });
    h.clock.advance(30_000);
    expect(await deliverNotification(deps, rows[2]!.id)).toBe("delivered");
    expect(received.filter((path) => path === "/capped")).toHaveLength(3);
  });
});
