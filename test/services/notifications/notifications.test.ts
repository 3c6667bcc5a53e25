/**
 * Notifications through real uploads to a real local HTTP receiver that checks the signature:
 * delivery with the event embedded, last_notified_at, the cooldown, snooze suppression,
 * retries with a delivery log, redirects never followed, and the URL policy of the admin API.
 * The runs here also change tests' health, which sends `test.health_changed` to the same
 * endpoints (test/services/test-webhooks.test.ts): this file follows the alerts' deliveries only.
 */
import { type IncomingMessage, type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { notificationDeliveries } from "../../../src/db/schema";
import { recoverPendingDeliveries } from "../../../src/node/in-process-run-queue";
import { verifySignature } from "../../../src/notifications/signature";
import { createHarness } from "../../support/harness";

type Received = { path: string; headers: IncomingMessage["headers"]; body: string; signatureValid: boolean };

let h: Awaited<ReturnType<typeof createHarness>>;
let server: Server;
let base: string;
const received: Received[] = [];
const secrets = new Map<string, string>();
/** Status the receiver answers per path (default 204). */
const answers = new Map<string, number[]>();
/** Work done before the receiver answers a path (once). */
const beforeAnswer = new Map<string, () => Promise<unknown>>();

beforeAll(async () => {
  h = await createHarness({ background: { deliveryRetryDelaysSeconds: [0.02, 0.02, 0.02, 0.02, 0.02] } });
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const path = req.url ?? "/";
      // A test's event (not this file's subject): answered, and kept out of the alerts' record and answers.
      if (req.headers["cta-event-type"] !== "alert.triggered") {
        res.writeHead(204);
        res.end();
        return;
      }
      const secret = secrets.get(path) ?? "";
      received.push({
        path,
        headers: req.headers,
        body,
        signatureValid: verifySignature(
          secret,
          (req.headers["cta-signature"] as string) ?? null,
          body,
          Math.floor(h.clock.now().getTime() / 1000),
        ),
      });
      const before = beforeAnswer.get(path);
      beforeAnswer.delete(path);
      void (before ?? (async () => {}))().then(() => {
        const status = answers.get(path)?.shift() ?? 204;
        if (status >= 300 && status < 400) res.writeHead(status, { location: `${base}/redirected` });
        else res.writeHead(status);
        res.end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await h.close();
  await new Promise((resolve) => server.close(resolve));
});

async function setup(path: string) {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken, alertIds } = await h.newProject(organization.id);
  const created = await h.admin("POST", `/organizations/${organization.id}/webhooks`, {
    url: `${base}${path}`,
    description: "team channel",
  });
  expect(created.status).toBe(201);
  expect(created.body.signing_secret).toMatch(/^whsec_[0-9a-f]{64}$/);
  secrets.set(path, created.body.signing_secret);
  return { organization, project, apiKey, uploadToken, alertIds, webhook: created.body.webhook };
}

/** Two runs of one commit, the test passing then failing: one flakiness trip. */
async function tripFlakiness(uploadToken: string, commit: string, test = "checkout_total") {
  for (const status of ["passed", "failed"]) {
    h.clock.advance(60_000);
    // Stable neighbours keep the run from looking like broken infrastructure (which the flakiness check ignores).
    const neighbours = Array.from({ length: 5 }, (_, i) => `<testcase classname="Cart" name="stable_${i}" time="0.1"/>`).join("");
    const body = `<testsuite name="s">${neighbours}<testcase classname="Cart" name="${test}" time="0.1">${status === "failed" ? '<failure message="off by one"/>' : ""}</testcase></testsuite>`;
    const run = await h.uploadAndWait(uploadToken, body, { query: `branch=main&commit_sha=${commit}` });
    expect(run.status).toBe("processed");
  }
  await h.queue.idle();
}

const deliveriesTo = (path: string) => received.filter((r) => r.path === path);
/** The webhook's delivery log, its alerts' deliveries only. */
const alertLog = async (webhookId: string) =>
  ((await h.admin("GET", `/webhooks/${webhookId}/deliveries`)).body.data as any[]).filter((d) => d.event_type === "alert.triggered");

describe("webhook notifications", () => {
  it("a trip is delivered once, signed, with the alert, the run and the event; last_notified_at is set", async () => {
    const { apiKey, uploadToken, alertIds, webhook } = await setup("/hooks/a");
    await tripFlakiness(uploadToken, "a1a1a1a1");
    const got = deliveriesTo("/hooks/a");
    expect(got).toHaveLength(1);
    expect(got[0]!.signatureValid).toBe(true);
    expect(got[0]!.headers["content-type"]).toBe("application/json");
    const payload = JSON.parse(got[0]!.body);
    expect(payload.type).toBe("alert.triggered");
    expect(payload.alert.id).toBe(alertIds.test_flakiness);
    expect(payload.test_run.number).toBe(2);
    expect(payload.events).toHaveLength(1);
    expect(payload.events[0].metadata.name).toBe("checkout_total");

    const alert = (await h.get(`/api/v1/alerts/${alertIds.test_flakiness}`, apiKey)).body;
    expect(alert.last_notified_at).toBe(h.clock.now().toISOString());
    const log = await alertLog(webhook.id);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ status: "delivered", attempts: 1, last_status_code: 204, event_ids: [payload.events[0].id] });
  });

  it("a tampered body or another secret fails verification", async () => {
    const got = deliveriesTo("/hooks/a")[0]!;
    const now = Math.floor(h.clock.now().getTime() / 1000);
    expect(
      verifySignature(
        secrets.get("/hooks/a")!,
        got.headers["cta-signature"] as string,
        got.body.replace("checkout_total", "checkout_totaL"),
        now,
      ),
    ).toBe(false);
    expect(verifySignature("whsec_other", got.headers["cta-signature"] as string, got.body, now)).toBe(false);
    expect(verifySignature(secrets.get("/hooks/a")!, got.headers["cta-signature"] as string, got.body, now + 3600)).toBe(false);
  });

  it("within the cooldown further trips record events but do not notify; after it, they notify again", async () => {
    const { apiKey, uploadToken, alertIds, organization } = await setup("/hooks/cooldown");
    void organization;
    await tripFlakiness(uploadToken, "b1b1b1b1", "first");
    await tripFlakiness(uploadToken, "b2b2b2b2", "second");
    expect(deliveriesTo("/hooks/cooldown")).toHaveLength(1);
    expect((await h.get(`/api/v1/alerts/${alertIds.test_flakiness}`, apiKey)).body.events_count).toBe(2);

    const cooled = await h.admin("PATCH", `/alerts/${alertIds.test_flakiness}/notification_settings`, {
      notification_cooldown_seconds: 3600,
    });
    expect(cooled.status).toBe(200);
    expect(cooled.body.notification_cooldown_seconds).toBe(3600);
    h.clock.advance(3_601_000);
    await tripFlakiness(uploadToken, "b3b3b3b3", "third");
    expect(deliveriesTo("/hooks/cooldown")).toHaveLength(2);
  });

  it("a snoozed alert records events but notifies nobody; last_notified_at stays", async () => {
    const { apiKey, uploadToken, alertIds } = await setup("/hooks/snoozed");
    expect((await h.post(`/api/v1/alerts/${alertIds.test_flakiness}/snooze`, apiKey, { duration: "24h" })).status).toBe(200);
    await tripFlakiness(uploadToken, "c1c1c1c1");
    expect(deliveriesTo("/hooks/snoozed")).toHaveLength(0);
    const alert = (await h.get(`/api/v1/alerts/${alertIds.test_flakiness}`, apiKey)).body;
    expect(alert).toMatchObject({ snoozed: true, events_count: 1, last_notified_at: null });
  });

  it("snoozing or disabling an alert also stops the retries of a delivery in progress; they do not hold the cooldown", async () => {
    for (const [path, silence, undo] of [
      ["/hooks/snoozed-mid-retry", "snooze", "unsnooze"],
      ["/hooks/disabled-mid-retry", "disable", "enable"],
    ] as const) {
      answers.set(path, [500, 500, 500, 500, 500, 500]);
      const { apiKey, uploadToken, alertIds, webhook } = await setup(path);
      const alertId = alertIds.test_flakiness!;
      // The first attempt fails; while it is being answered, the team silences the alert.
      beforeAnswer.set(path, () =>
        h.post(`/api/v1/alerts/${alertId}/${silence}`, apiKey, silence === "snooze" ? { duration: "1h" } : undefined),
      );
      await tripFlakiness(uploadToken, `${silence}1111`);
      for (let i = 0; i < 20 && (await alertLog(webhook.id))[0]?.status === "pending"; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        await h.queue.idle();
      }
      expect(deliveriesTo(path), silence).toHaveLength(1);
      const log = await alertLog(webhook.id);
      expect(log[0], silence).toMatchObject({ status: "suppressed", attempts: 1, last_status_code: 500 });
      expect(log[0].last_error).toContain(silence === "snooze" ? "snoozed" : "disabled");
      expect((await h.get(`/api/v1/alerts/${alertId}`, apiKey)).body.last_notified_at).toBeNull();

      // Back on: the next trip notifies at once (the suppressed delivery reached nobody).
      answers.set(path, []);
      expect((await h.post(`/api/v1/alerts/${alertId}/${undo}`, apiKey)).status).toBe(200);
      await tripFlakiness(uploadToken, `${silence}2222`, "another_test");
      expect(deliveriesTo(path), silence).toHaveLength(2);
      expect((await alertLog(webhook.id))[0]).toMatchObject({ status: "delivered" });
    }
  });

  it("after a restart, deliveries left pending are queued again and delivered (they would otherwise hold the cooldown)", async () => {
    const { uploadToken, webhook } = await setup("/hooks/restart");
    await tripFlakiness(uploadToken, "f1f1f1f1");
    expect(deliveriesTo("/hooks/restart")).toHaveLength(1);
    // A delivery whose queue message died with the process: pending in the database, no timer.
    const [sent] = await h.db
      .select()
      .from(notificationDeliveries)
      .where(and(eq(notificationDeliveries.endpointId, webhook.id), eq(notificationDeliveries.eventType, "alert.triggered")));
    const { id: _id, ...copy } = sent!;
    const [lost] = await h.db
      .insert(notificationDeliveries)
      .values({ ...copy, status: "pending", attempts: 2, deliveredAt: null })
      .returning();
    expect(await recoverPendingDeliveries(h.db, h.queue)).toBeGreaterThanOrEqual(1);
    await h.queue.idle();
    expect(deliveriesTo("/hooks/restart")).toHaveLength(2);
    const [after] = await h.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.id, lost!.id));
    expect(after).toMatchObject({ status: "delivered", attempts: 3 });
  });

  it("a failing receiver is retried with backoff, and the log shows every attempt", async () => {
    answers.set("/hooks/flaky-receiver", [500, 503]);
    const { apiKey, uploadToken, alertIds, webhook } = await setup("/hooks/flaky-receiver");
    await tripFlakiness(uploadToken, "d1d1d1d1");
    await new Promise((resolve) => setTimeout(resolve, 200));
    await h.queue.idle();
    expect(deliveriesTo("/hooks/flaky-receiver")).toHaveLength(3);
    const log = await alertLog(webhook.id);
    expect(log[0]).toMatchObject({ status: "delivered", attempts: 3, last_status_code: 204, last_error: null });
    expect((await h.get(`/api/v1/alerts/${alertIds.test_flakiness}`, apiKey)).body.last_notified_at).not.toBeNull();
  });

  it("a redirect is not followed and counts as a failed attempt; after the last attempt the delivery is failed and nothing was notified", async () => {
    answers.set("/hooks/redirect", [302, 302, 302, 302, 302, 302]);
    const { apiKey, uploadToken, alertIds, webhook } = await setup("/hooks/redirect");
    await tripFlakiness(uploadToken, "e1e1e1e1");
    for (let i = 0; i < 20 && (await alertLog(webhook.id))[0]?.status === "pending"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      await h.queue.idle();
    }
    expect(deliveriesTo("/redirected")).toHaveLength(0);
    const log = await alertLog(webhook.id);
    expect(log[0]).toMatchObject({ status: "failed", attempts: 6, last_status_code: 302 });
    expect(log[0].last_error).toMatch(/redirect/);
    expect((await h.get(`/api/v1/alerts/${alertIds.test_flakiness}`, apiKey)).body.last_notified_at).toBeNull();
  });

  it("a project webhook hears only its project; removing a webhook stops its deliveries", async () => {
    const { organization, uploadToken, project } = await setup("/hooks/org-wide");
    const { project: other, uploadToken: otherToken } = await h.newProject(organization.id, "Other");
    const scoped = await h.admin("POST", `/organizations/${organization.id}/webhooks`, {
      url: `${base}/hooks/other-only`,
      project_id: other.id,
    });
    expect(scoped.status).toBe(201);
    secrets.set("/hooks/other-only", scoped.body.signing_secret);
    void project;
    await tripFlakiness(uploadToken, "f1f1f1f1");
    expect(deliveriesTo("/hooks/other-only")).toHaveLength(0);
    await tripFlakiness(otherToken, "f2f2f2f2");
    expect(deliveriesTo("/hooks/other-only")).toHaveLength(1);
    expect(deliveriesTo("/hooks/org-wide")).toHaveLength(2);

    expect((await h.admin("DELETE", `/webhooks/${scoped.body.webhook.id}`)).status).toBe(204);
    expect((await h.admin("GET", `/organizations/${organization.id}/webhooks`)).body.data.map((w: { url: string }) => w.url)).toEqual([
      `${base}/hooks/org-wide`,
    ]);
    // The delivery log goes with its endpoint.
    expect((await h.admin("GET", `/webhooks/${scoped.body.webhook.id}/deliveries`)).status).toBe(404);
    // An unknown organization is a 404, as documented, not an empty list.
    const unknown = await h.admin("GET", `/organizations/00000000-0000-4000-8000-000000000000/webhooks`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("not_found");
  });
});

describe("webhook URL policy (admin API)", () => {
  const refused = [
    "http://example.com/hook",
    "ftp://example.com/hook",
    "https://10.1.2.3/hook",
    "https://172.16.0.1/hook",
    "https://192.168.1.10/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://[fd00::1]/hook",
    "https://[fe80::1]/hook",
    "https://[::ffff:10.0.0.1]/hook",
    "https://0.0.0.0/hook",
    "https://100.64.0.1/hook",
    "https://2886729729/hook",
    "https://user:pass@example.com/hook",
    "https://printer.local/hook",
    "https://intranet/hook",
    "not a url",
  ];
  for (const url of refused) {
    it(`refuses ${url}`, async () => {
      const { organization } = await h.newOrganization();
      const res = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url });
      expect(res.status).toBe(422);
      expect(res.body.error.details[0].field).toBe("url");
    });
  }

  it("accepts https to a public host, and http to loopback only when running locally", async () => {
    const { organization } = await h.newOrganization();
    expect((await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: "https://hooks.example.com/cta" })).status).toBe(
      201,
    );
    expect((await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: "http://localhost:9/hook" })).status).toBe(201);
  });

  it("never returns the signing secret after creation", async () => {
    const { organization } = await h.newOrganization();
    const created = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: "https://hooks.example.com/x" });
    const listed = await h.admin("GET", `/organizations/${organization.id}/webhooks`);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.signing_secret);
  });
});
