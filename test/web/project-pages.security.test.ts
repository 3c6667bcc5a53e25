/**
 * The project pages' security: a member's forged posts (create, save, rotate, add or remove a
 * webhook) are refused on the server and change nothing; people of another organization get the
 * same 404 page as a missing id, for every page and post; posts from another site are refused;
 * a script payload in a project's name and description is shown as text everywhere.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects, webhookEndpoints } from "../../src/db/schema";
import { createHarness } from "../support/harness";
import { adminAndMember, inputValue } from "../support/project-page-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

async function setUp() {
  const people = await adminAndMember(h);
  const created = await people.admin.postAndFollow("/projects/new", { name: "Guarded", description: "", defaultBranch: "" });
  const token = inputValue(created.text, "upload-token")!;
  const [project] = await h.db.select().from(projects).where(eq(projects.organizationId, people.organizationId));
  await people.admin.post(`/projects/${project!.id}/settings/webhooks`, { url: "http://127.0.0.1:9/hook", description: "" });
  const [webhook] = await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project!.id));
  return { ...people, project: project!, token, webhook: webhook! };
}

describe("role checks on the server", () => {
  it("a member's forged posts are 403 and change nothing", async () => {
    const s = await setUp();
    const before = await h.db.select().from(projects).where(eq(projects.organizationId, s.organizationId));
    const posts: [string, Record<string, string>][] = [
      ["/projects/new", { name: "Sneaky", description: "", defaultBranch: "" }],
      [`/projects/${s.project.id}/settings`, { name: "Renamed", description: "", defaultBranch: "x", autoQuarantineDays: "3" }],
      [`/projects/${s.project.id}/settings/upload-token/rotate`, {}],
      [`/projects/${s.project.id}/settings/webhooks`, { url: "http://127.0.0.1:9/other", description: "" }],
      [`/projects/${s.project.id}/settings/webhooks/${s.webhook.id}/delete`, {}],
    ];
    for (const [path, form] of posts) {
      const answer = await s.member.post(path, form);
      expect(answer.status, path).toBe(403);
      expect(answer.text).toContain("Only an admin of the organization can");
    }
    expect((await s.member.get("/projects/new")).status).toBe(403);
    // Nor do the confirmation pages of the destructive actions open for a member.
    for (const path of [
      `/projects/${s.project.id}/settings/upload-token/rotate`,
      `/projects/${s.project.id}/settings/webhooks/${s.webhook.id}/delete`,
    ]) {
      expect((await s.member.get(path)).status, path).toBe(403);
    }
    expect(await h.db.select().from(projects).where(eq(projects.organizationId, s.organizationId))).toEqual(before);
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, s.project.id))).toEqual([s.webhook]);
    expect((await h.upload(s.token, "<testsuite name='s'/>")).status).toBe(202);
  });
});

describe("other organizations", () => {
  it("every page and post of the project is the same 404 as a missing id, for an admin of another organization", async () => {
    const s = await setUp();
    const outsider = (await adminAndMember(h, "Other Org")).admin;
    const missing = "00000000-0000-4000-8000-000000000000";
    const paths = (id: string) => [
      ["GET", `/projects/${id}`],
      ["GET", `/projects/${id}/settings`],
      ["POST", `/projects/${id}/settings`],
      ["POST", `/projects/${id}/settings/upload-token/reveal`],
      ["POST", `/projects/${id}/settings/upload-token/rotate`],
      ["POST", `/projects/${id}/settings/webhooks`],
      ["POST", `/projects/${id}/settings/webhooks/${s.webhook.id}/delete`],
    ];
    const real = paths(s.project.id);
    const fake = paths(missing);
    for (let i = 0; i < real.length; i++) {
      const form = { name: "x", description: "", defaultBranch: "", autoQuarantineDays: "", url: "http://127.0.0.1:9/x" };
      const send = (method: string, path: string) => (method === "GET" ? outsider.get(path) : outsider.post(path, form));
      const foreign = await send(real[i]![0]!, real[i]![1]!);
      const absent = await send(fake[i]![0]!, fake[i]![1]!);
      expect(foreign.status, real[i]![1]).toBe(404);
      expect(absent.status).toBe(404);
      expect(foreign.text).toBe(absent.text);
      expect(foreign.text).not.toContain(s.token);
    }
    const [after] = await h.db.select().from(projects).where(eq(projects.id, s.project.id));
    expect(after!.name).toBe("Guarded");
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, s.project.id))).toHaveLength(1);
  });

  it("a signed-out visit to the pages redirects to sign-in and back", async () => {
    const s = await setUp();
    const { WebClient } = await import("../support/web-client");
    const stranger = new WebClient(h.app);
    for (const path of [`/projects/${s.project.id}`, `/projects/${s.project.id}/settings`, "/projects/new"]) {
      const answer = await stranger.get(path);
      expect(answer.status).toBe(302);
      expect(answer.location).toBe(`/sign-in?next=${encodeURIComponent(path)}`);
    }
  });
});

describe("CSRF", () => {
  it("posts from another site, or with neither Origin nor Sec-Fetch-Site, are refused and change nothing", async () => {
    const s = await setUp();
    const refused: Record<string, string>[] = [{ origin: "https://evil.example" }, {}, { "sec-fetch-site": "cross-site" }];
    for (const headers of refused) {
      const rotate = await s.admin.post(`/projects/${s.project.id}/settings/upload-token/rotate`, {}, headers);
      expect(rotate.status).toBe(403);
      const create = await s.admin.post("/projects/new", { name: "Forged", description: "", defaultBranch: "" }, headers);
      expect(create.status).toBe(403);
      // Reading the token is a post too: another site cannot make the page reveal it.
      const reveal = await s.admin.post(`/projects/${s.project.id}/settings/upload-token/reveal`, {}, headers);
      expect(reveal.status).toBe(403);
      expect(reveal.text).not.toContain(s.token);
    }
    expect((await h.upload(s.token, "<testsuite name='s'/>")).status).toBe(202);
    expect(await h.db.select().from(projects).where(eq(projects.organizationId, s.organizationId))).toHaveLength(1);
  });
});

describe("escaping", () => {
  it("a script payload in a project's name and description is text on the home page, the overview, the settings and the created page", async () => {
    const s = await setUp();
    const payload = `<script>alert("x")</script><img src=x onerror=alert(1)>`;
    const created = await s.admin.postAndFollow("/projects/new", {
      name: `N ${payload}`,
      description: `D ${payload}`,
      defaultBranch: `b${payload}`.slice(0, 200),
    });
    expect(created.posted.status).toBe(303);
    expect(created.status).toBe(200);
    const [project] = (await h.db.select().from(projects).where(eq(projects.organizationId, s.organizationId))).filter((p) =>
      p.name.startsWith("N "),
    );
    await h.uploadAndWait(
      inputValue(created.text, "upload-token")!,
      `<testsuite name="${"&lt;script&gt;"}"><testcase name="t"/></testsuite>`,
      { query: `branch=${encodeURIComponent(payload)}` },
    );
    for (const page of [
      created,
      await s.member.get("/"),
      await s.member.get(`/projects/${project!.id}`),
      await s.member.get(`/projects/${project!.id}/settings`),
    ]) {
      expect(page.text).not.toContain("<script>");
      expect(page.text).not.toContain("<img src=x");
      expect(page.text).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    }
  });
});
