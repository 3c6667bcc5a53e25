/**
 * Webhooks about tests (docs/notifications.md): `test.quarantined`, `test.unquarantined` and
 * `test.health_changed`, to a real local receiver that checks the signature. Signed like alert
 * notifications, in the delivery log, with `{type, occurred_at, project_id, test}` (the test as
 * the API presented it then); a no-op unquarantine sends nothing; a snoozed alert does not
 * silence them; health changes from run processing and from the flakiness check both send one.
 */
import { type IncomingMessage, type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifySignature } from "../../../src/notifications/signature";
import { createHarness } from "../../support/harness";
import { uploadMainRun } from "../../support/upload-main-run";

type Received = { path: string; type: string; headers: IncomingMessage["headers"]; body: any; signatureValid: boolean };

let h: Awaited<ReturnType<typeof createHarness>>;
let server: Server;
let base: string;
const received: Received[] = [];
const secrets = new Map<string, string>();

beforeAll(async () => {
  h = await createHarness({ background: { deliveryRetryDelaysSeconds: [0.02, 0.02, 0.02, 0.02, 0.02] } });
  server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      const path = req.url ?? "/";
      const signatureValid = verifySignature(
        secrets.get(path) ?? "",
        (req.headers["cta-signature"] as string) ?? null,
        text,
        Math.floor(h.clock.now().getTime() / 1000),
      );
      received.push({ path, type: req.headers["cta-event-type"] as string, headers: req.headers, body: JSON.parse(text), signatureValid });
      res.writeHead(204);
      res.end();
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
  const created = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: `${base}${path}` });
  expect(created.status).toBe(201);
  secrets.set(path, created.body.signing_secret);
  return { projectId: project.id as string, apiKey, uploadToken, alertIds, webhook: created.body.webhook };
}

type CaseSpec = { name: string; status: "passed" | "failed" };
const upload = (uploadToken: string, cases: CaseSpec[], commit: string) => uploadMainRun(h, uploadToken, cases, commit);
const stable = (count: number): CaseSpec[] => Array.from({ length: count }, (_, i) => ({ name: `stable_${i}`, status: "passed" }));
const testNamed = async (apiKey: string, projectId: string, name: string) =>
  (await h.get(`/api/v1/projects/${projectId}/tests?q=${name}`, apiKey)).body.data.find((t: any) => t.name === name);
const to = (path: string, type?: string) => received.filter((r) => r.path === path && (type === undefined || r.type === type));

describe("test.quarantined and test.unquarantined", () => {
  it("a quarantine and its end are delivered signed, with the test as the API returned it, and logged", async () => {
    const { projectId, apiKey, uploadToken, webhook } = await setup("/hooks/quarantine");
    await upload(uploadToken, [...stable(3)], "q1");
    const id = (await testNamed(apiKey, projectId, "stable_0")).id;

    const quarantined = await h.post(`/api/v1/tests/${id}/quarantine`, apiKey, { reason: "Times out on ARM", duration: "7d" });
    expect(quarantined.status).toBe(200);
    await h.queue.idle();
    const [sent] = to("/hooks/quarantine");
    expect(to("/hooks/quarantine")).toHaveLength(1);
    expect(sent!.signatureValid).toBe(true);
    expect(sent!.headers["cta-event-type"]).toBe("test.quarantined");
    expect(sent!.headers["cta-delivery-id"]).toMatch(/^\d+$/);
    expect(sent!.body).toEqual({
      type: "test.quarantined",
      occurred_at: h.clock.now().toISOString(),
      project_id: projectId,
      test: quarantined.body,
    });

    h.clock.advance(1_000);
    const ended = await h.post(`/api/v1/tests/${id}/unquarantine`, apiKey);
    await h.queue.idle();
    expect(to("/hooks/quarantine", "test.unquarantined").map((r) => r.body)).toEqual([
      { type: "test.unquarantined", occurred_at: h.clock.now().toISOString(), project_id: projectId, test: ended.body },
    ]);

    // Unquarantining a test that is not quarantined changes nothing, and sends nothing.
    expect((await h.post(`/api/v1/tests/${id}/unquarantine`, apiKey)).status).toBe(200);
    await h.queue.idle();
    expect(to("/hooks/quarantine")).toHaveLength(2);

    const log = (await h.admin("GET", `/webhooks/${webhook.id}/deliveries`)).body.data;
    expect(log.map((d: any) => [d.event_type, d.status, d.alert_id, d.event_ids])).toEqual([
      ["test.unquarantined", "delivered", null, []],
      ["test.quarantined", "delivered", null, []],
    ]);
  });
});

describe("test.health_changed", () => {
  it("run processing's health change and the auto-quarantine are sent, a snoozed alert notwithstanding", async () => {
    const { projectId, apiKey, uploadToken, alertIds } = await setup("/hooks/health");
    expect((await h.admin("PATCH", `/projects/${projectId}/check_settings`, { auto_quarantine_days: 14 })).status).toBe(200);
    expect((await h.post(`/api/v1/alerts/${alertIds.test_flakiness}/snooze`, apiKey, { duration: "1w" })).status).toBe(200);
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "passed" }], "h1");
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "passed" }], "h2");
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "failed" }], "h2");

    const test = await testNamed(apiKey, projectId, "wobbles");
    expect(test).toMatchObject({ health: "flaky", quarantined: true });
    const changed = to("/hooks/health", "test.health_changed");
    expect(changed).toHaveLength(1);
    expect(changed[0]!.signatureValid).toBe(true);
    expect(changed[0]!.body).toMatchObject({ type: "test.health_changed", project_id: projectId, test: { id: test.id, health: "flaky" } });
    const quarantined = to("/hooks/health", "test.quarantined");
    expect(quarantined).toHaveLength(1);
    expect(quarantined[0]!.body.test).toMatchObject({ id: test.id, quarantined: true, quarantine: { source: "auto" } });
    // The alert is snoozed: its trip sends nothing, the tests' events go out all the same.
    expect(to("/hooks/health", "alert.triggered")).toEqual([]);
  });

  it("the flakiness check's flag sends one too", async () => {
    const { projectId, apiKey, uploadToken } = await setup("/hooks/check");
    for (let i = 0; i < 26; i++)
      await upload(uploadToken, [...stable(5), { name: "alternates", status: i % 2 === 0 ? "passed" : "failed" }], `alt${i}`);
    const test = await testNamed(apiKey, projectId, "alternates");
    expect(test.health).toBe("flaky");
    const transition = (await h.get(`/api/v1/tests/${test.id}/health_transitions`, apiKey)).body.data.at(-1);
    expect(transition.reason).toContain("flakiness check");
    const changed = to("/hooks/check", "test.health_changed").filter((r) => r.body.test.id === test.id);
    expect(changed.map((r) => r.body.test.health)).toEqual(["flaky"]);
    expect(changed[0]!.signatureValid).toBe(true);
    // Auto-quarantine is off here: no quarantine sent.
    expect(to("/hooks/check", "test.quarantined")).toEqual([]);
  });
});
