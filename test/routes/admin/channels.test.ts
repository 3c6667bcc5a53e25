/**
 * Notification channels through the admin API (docs/notifications.md#slack-and-teams), in Node
 * and in workerd:
 * - POST /organizations/:id/webhooks with `kind` slack or teams → 201 with the URL whole (the only
 *   time), `signing_secret: null`, the events chosen and the owner filter; every later read masks it;
 * - a kind, events or owner filter that is not one is a 422 naming the field, and nothing is stored;
 * - a signed webhook keeps its whole URL, its signing secret, and every event by default;
 * - POST /webhooks/:id/test → 202 with the queued `test.message` delivery; an unknown id is a 404;
 * - an e-mail channel names members' addresses only (a stranger's is a 422 naming it), shows them
 *   in the admin API, and takes no URL;
 * - POST /projects/:id/digest → 202 with what was queued; an unknown project is a 404.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { members, users } from "../../../src/db/schema";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const SLACK_URL = "http://127.0.0.1:9/services/T0AAAA/B0BBBB/xoxSecretPart";

describe("channels through the admin API", () => {
  it("a Slack channel: the URL whole in the creation's answer only, masked in the list", async () => {
    const { organization } = await h.newOrganization();
    const created = await h.admin("POST", `/organizations/${organization.id}/webhooks`, {
      kind: "slack",
      url: SLACK_URL,
      events: ["quarantine", "alerts"],
      owner_filter: "@acme/payments",
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      webhook: {
        id: expect.any(String),
        organization_id: organization.id,
        project_id: null,
        kind: "slack",
        url: SLACK_URL,
        addresses: null,
        events: ["alerts", "quarantine"],
        owner_filter: "@acme/payments",
        description: null,
        created_at: expect.any(String),
      },
      signing_secret: null,
    });
    const list = await h.admin("GET", `/organizations/${organization.id}/webhooks`);
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([{ ...created.body.webhook, url: "http://127.0.0.1:9/services/T…/…/…••••" }]);
    expect(list.text).not.toContain("xoxSecretPart");
    const log = await h.admin("GET", `/webhooks/${created.body.webhook.id}/deliveries`);
    expect(log.body).toEqual({ data: [] });
  });

  it("a signed webhook keeps its whole URL, a signing secret, and every event", async () => {
    const { organization } = await h.newOrganization();
    const created = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: "http://127.0.0.1:9/plain" });
    expect(created.status).toBe(201);
    expect(created.body.signing_secret).toMatch(/^whsec_/);
    expect(created.body.webhook).toMatchObject({
      kind: "webhook",
      events: ["alerts", "health", "quarantine", "digest"],
      owner_filter: null,
    });
    const list = await h.admin("GET", `/organizations/${organization.id}/webhooks`);
    expect(list.body.data[0].url).toBe("http://127.0.0.1:9/plain");
  });

  it.each([
    [{ kind: "discord" }, "kind"],
    [{ kind: "slack", events: [] }, "events"],
    [{ kind: "slack", events: ["weekly"] }, "events"],
    [{ kind: "slack", addresses: ["someone@example.com"] }, "addresses"],
    [{ kind: "teams", owner_filter: "payments team" }, "owner_filter"],
    [{ kind: "teams", owner_filter: 7 }, "owner_filter"],
  ])("%j is a 422 naming %s, and nothing is stored", async (fields, field) => {
    const { organization } = await h.newOrganization();
    const res = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { url: SLACK_URL, ...fields });
    expect(res.status, res.text).toBe(422);
    expect(res.body.error.code).toBe("validation_failed");
    expect(res.body.error.details.map((detail: { field: string }) => detail.field.split(".")[0])).toContain(field);
    expect((await h.admin("GET", `/organizations/${organization.id}/webhooks`)).body.data).toEqual([]);
  });

  it("POST /webhooks/:id/test queues a test message; an unknown or malformed id is a 404", async () => {
    const { organization } = await h.newOrganization();
    const created = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { kind: "teams", url: "http://127.0.0.1:9/teams" });
    const sent = await h.admin("POST", `/webhooks/${created.body.webhook.id}/test`);
    expect(sent.status, sent.text).toBe(202);
    expect(sent.body).toMatchObject({
      endpoint_id: created.body.webhook.id,
      event_type: "test.message",
      alert_id: null,
      event_ids: [],
      attempts: 0,
    });
    for (const id of [crypto.randomUUID(), "nope"]) {
      const missing = await h.admin("POST", `/webhooks/${id}/test`);
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe("not_found");
    }
  });

  /** A person who is a member of the organization (written directly: the same in Node and workerd). */
  async function newMember(organizationId: string, role: "admin" | "member" = "member") {
    const email = `member-${crypto.randomUUID()}@example.com`;
    const [user] = await h.db.insert(users).values({ name: "Mo Member", email }).returning();
    await h.db.insert(members).values({ organizationId, userId: user!.id, role });
    return email;
  }

  it("an e-mail channel sends to members only: a stranger's address is a 422 naming it; members' addresses are kept, lower-cased", async () => {
    const { organization } = await h.newOrganization();
    const member = await newMember(organization.id);
    const stranger = `stranger-${crypto.randomUUID()}@example.com`;
    const refused = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { kind: "email", addresses: [member, stranger] });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.error.code).toBe("validation_failed");
    expect(refused.body.error.details).toEqual([
      { field: "addresses", message: `${stranger} is not a member of this organization: an e-mail channel sends to members only` },
    ]);
    expect((await h.admin("GET", `/organizations/${organization.id}/webhooks`)).body.data).toEqual([]);

    // A member of another organization is a stranger here too.
    const other = await h.newOrganization();
    const elsewhere = await newMember(other.organization.id);
    const foreign = await h.admin("POST", `/organizations/${organization.id}/webhooks`, { kind: "email", addresses: [elsewhere] });
    expect(foreign.status).toBe(422);
    expect(foreign.body.error.details[0].message).toContain(elsewhere);

    const created = await h.admin("POST", `/organizations/${organization.id}/webhooks`, {
      kind: "email",
      addresses: [member.toUpperCase()],
      events: ["digest", "health"],
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      webhook: expect.objectContaining({ kind: "email", url: `mailto:${member}`, addresses: [member], events: ["health", "digest"] }),
      signing_secret: null,
    });
    const list = await h.admin("GET", `/organizations/${organization.id}/webhooks`);
    expect(list.body.data).toEqual([created.body.webhook]);
  });

  it.each([
    [{ kind: "email" }, "addresses"],
    [{ kind: "email", addresses: [] }, "addresses"],
    [{ kind: "email", addresses: ["not an address"] }, "addresses"],
    [{ kind: "email", addresses: ["a@example.com"], url: "http://127.0.0.1:9/x" }, "url"],
  ])("an e-mail channel with %j is a 422 naming %s", async (fields, field) => {
    const { organization } = await h.newOrganization();
    const res = await h.admin("POST", `/organizations/${organization.id}/webhooks`, fields);
    expect(res.status, res.text).toBe(422);
    expect(res.body.error.details.map((detail: { field: string }) => detail.field)).toContain(field);
  });

  it("POST /projects/:id/digest queues the project's digest now: to the channels that chose it and the members who keep it on", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Digest API");
    await newMember(organization.id, "admin");
    await newMember(organization.id, "member");
    await h.admin("POST", `/organizations/${organization.id}/webhooks`, {
      kind: "teams",
      url: "http://127.0.0.1:9/teams",
      events: ["digest"],
    });
    await h.admin("POST", `/organizations/${organization.id}/webhooks`, {
      kind: "slack",
      url: "http://127.0.0.1:9/slack",
      events: ["alerts"],
    });
    const sent = await h.admin("POST", `/projects/${project.id}/digest`);
    expect(sent.status, sent.text).toBe(202);
    // One channel chose the digest; of the two people, the admin keeps it on by default.
    expect(sent.body).toEqual({
      project_id: project.id,
      week: { from: expect.any(String), to: expect.any(String) },
      deliveries: 1,
      emails: 1,
    });
    for (const id of [crypto.randomUUID(), "nope"]) expect((await h.admin("POST", `/projects/${id}/digest`)).status).toBe(404);
  });
});
