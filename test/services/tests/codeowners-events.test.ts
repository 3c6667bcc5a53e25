/**
 * Owners beyond the test object (docs/codeowners.md): a flakiness event names the test's owners
 * in its metadata (and so does the `alert.triggered` webhook that carries it), and the
 * `test.*` webhooks carry the test object with its `owners`. Node only: a local receiver checks
 * the deliveries of the in-process queue.
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
let server: Server;
let base: string;
const received: { path: string; type: string; body: any }[] = [];

beforeAll(async () => {
  h = await createHarness({ background: { deliveryRetryDelaysSeconds: [0.02, 0.02, 0.02] } });
  server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "/", type: req.headers["cta-event-type"] as string, body: JSON.parse(text) });
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

const CODEOWNERS = "* @acme/core\n/services/cart/ @acme/cart cart-lead@example.com\n";

async function setup(hookPath: string) {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken, alertIds } = await h.newProject(organization.id);
  expect((await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: `${base}${hookPath}` })).status).toBe(201);
  const put = await h.call("PUT", "/uploads/v1/codeowners", {
    key: uploadToken,
    headers: { "content-type": "text/plain" },
    rawBody: CODEOWNERS,
  });
  expect(put.status).toBe(200);
  return { projectId: project.id as string, apiKey, uploadToken, alertIds };
}

type CaseSpec = { name: string; status: "passed" | "failed" };
/** One run on main of `Shop` tests in services/cart (`wobbles`) and web (the rest). */
async function upload(uploadToken: string, cases: CaseSpec[], commit: string) {
  h.clock.advance(60_000);
  const suites = [
    {
      name: "s",
      cases: cases.map((c) => ({
        ...c,
        classname: "Shop",
        file: c.name === "wobbles" ? "services/cart/wobbles.test.ts" : `web/${c.name}.test.ts`,
        failure_message: c.status === "failed" ? "boom" : null,
      })),
    },
  ];
  const done = await h.uploadAndWait(uploadToken, { branch: "main", commit_sha: commit, suites });
  expect(done.status).toBe("processed");
  await h.queue.idle();
}
const stable = (count: number): CaseSpec[] => Array.from({ length: count }, (_, i) => ({ name: `stable_${i}`, status: "passed" }));
const to = (path: string, type: string) => received.filter((r) => r.path === path && r.type === type);

describe("owners in flakiness events", () => {
  it("the event's metadata names the flaky test's owners, and the alert webhook carries them", async () => {
    const { apiKey, uploadToken, alertIds, projectId } = await setup("/hooks/flaky");
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "passed" }], "c0ffee01");
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "failed" }], "c0ffee01");

    const events = (await h.get(`/api/v1/alerts/${alertIds.test_flakiness}/events`, apiKey)).body.data;
    expect(events).toHaveLength(1);
    const wobbles = (await h.get(`/api/v1/projects/${projectId}/tests?q=wobbles`, apiKey)).body.data[0];
    expect(events[0].metadata).toMatchObject({ name: "wobbles", test_id: wobbles.id, owners: ["@acme/cart", "cart-lead@example.com"] });
    expect(wobbles.owners).toEqual(["@acme/cart", "cart-lead@example.com"]);

    const [alertHook] = to("/hooks/flaky", "alert.triggered");
    expect(alertHook!.body.events[0].metadata.owners).toEqual(["@acme/cart", "cart-lead@example.com"]);
    // The health change is a test webhook with the test object, owners included.
    expect(to("/hooks/flaky", "test.health_changed")[0]!.body.test).toMatchObject({
      id: wobbles.id,
      owners: ["@acme/cart", "cart-lead@example.com"],
    });
  });

  it("a test without owners: an empty list", async () => {
    const { apiKey, uploadToken, alertIds } = await setup("/hooks/unowned");
    await h.call("PUT", "/uploads/v1/codeowners", {
      key: uploadToken,
      headers: { "content-type": "text/plain" },
      rawBody: "/web/ @acme/web\n",
    });
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "passed" }], "c0ffee02");
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "failed" }], "c0ffee02");
    const events = (await h.get(`/api/v1/alerts/${alertIds.test_flakiness}/events`, apiKey)).body.data;
    expect(events.map((e: any) => e.metadata.owners)).toEqual([[]]);
  });
});

describe("owners in test webhooks", () => {
  it("test.quarantined carries the test object with its owners", async () => {
    const { apiKey, uploadToken, projectId } = await setup("/hooks/quarantine");
    await upload(uploadToken, [...stable(2), { name: "wobbles", status: "passed" }], "c0ffee03");
    const wobbles = (await h.get(`/api/v1/projects/${projectId}/tests?owner=%40acme%2Fcart`, apiKey)).body.data;
    expect(wobbles.map((t: any) => t.name)).toEqual(["wobbles"]);
    const quarantined = await h.post(`/api/v1/tests/${wobbles[0].id}/quarantine`, apiKey, { reason: "Flaky on CI", duration: "7d" });
    expect(quarantined.status).toBe(200);
    await h.queue.idle();
    const [sent] = to("/hooks/quarantine", "test.quarantined");
    expect(sent!.body.test).toEqual(quarantined.body);
    expect(sent!.body.test.owners).toEqual(["@acme/cart", "cart-lead@example.com"]);
  });
});
