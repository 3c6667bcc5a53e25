/**
 * Webhook URLs often carry the receiver's credential (Slack's `/services/T…/B…/<secret>`, Teams' and
 * Discord's tokens): a member of the organization reads the project's webhooks with the URL
 * redacted to its scheme and host, on the settings page and from the service behind it; only an
 * admin is given the whole URL (listProjectWebhooks with `{ admin: true }`, and the admin API).
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects } from "../../src/db/schema";
import { listProjectWebhooks } from "../../src/services/notifications/project-settings";
import { createHarness } from "../support/harness";
import { adminAndMember } from "../support/project-page-fixtures";

const SECRET_PATH = "/services/T0000/B0000/XXXXsecretXXXX";
const SLACK_URL = `https://hooks.slack.com${SECRET_PATH}?channel=ci`;

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe("webhook URLs and members", () => {
  it("a member sees the webhook's scheme and host only, never its path or query", async () => {
    const people = await adminAndMember(h);
    await people.admin.post("/projects/new", { name: "Redacted", description: "", defaultBranch: "" });
    const [project] = await h.db.select().from(projects).where(eq(projects.organizationId, people.organizationId));
    const added = await people.admin.postAndFollow(`/projects/${project!.id}/settings/webhooks`, { url: SLACK_URL, description: "Chat" });
    expect(added.status).toBe(200);
    const wide = await h.admin("POST", `/organizations/${people.organizationId}/webhooks`, {
      url: "https://example.webhook.office.com/webhookb2/abc/IncomingWebhook/def",
    });
    expect(wide.status).toBe(201);

    const page = await people.member.get(`/projects/${project!.id}/settings`);
    expect(page.status).toBe(200);
    expect(page.text).toContain("https://hooks.slack.com/…");
    expect(page.text).toContain("https://example.webhook.office.com/…");
    for (const secret of ["XXXXsecretXXXX", SECRET_PATH, "channel=ci", "IncomingWebhook"]) expect(page.text).not.toContain(secret);

    const asMember = await listProjectWebhooks(h, people.organizationId, project!.id);
    expect(asMember.map((webhook) => webhook.url).sort()).toEqual(["https://example.webhook.office.com/…", "https://hooks.slack.com/…"]);
    const asAdmin = await listProjectWebhooks(h, people.organizationId, project!.id, { admin: true });
    expect(asAdmin.map((webhook) => webhook.url)).toContain(SLACK_URL);
    // The admin API (the operator's token) keeps returning whole URLs.
    const listed = await h.admin("GET", `/organizations/${people.organizationId}/webhooks`);
    expect(listed.body.data.map((webhook: { url: string }) => webhook.url)).toContain(SLACK_URL);
  });
});
