/**
 * The project pages' refusals of bad input: each problem named on the page (400), nothing stored;
 * a token made before tokens were kept cannot be revealed until rotated; an unknown webhook is a 404.
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

async function projectOf(organizationId: string) {
  const rows = await h.db.select().from(projects).where(eq(projects.organizationId, organizationId));
  return rows;
}

describe("bad input", () => {
  it("/projects/new: a blank name and an over-long default branch are named, nothing is created, the fields are kept", async () => {
    const people = await adminAndMember(h);
    const answer = await people.admin.post("/projects/new", {
      name: "  ",
      description: "kept <b>text</b>",
      defaultBranch: "x".repeat(256),
    });
    expect(answer.status).toBe(400);
    expect(answer.text).toContain("Name can&#39;t be blank.");
    expect(answer.text).toContain("Default branch is too long (maximum is 255 characters).");
    expect(answer.text).toContain("kept &lt;b&gt;text&lt;/b&gt;");
    expect(await projectOf(people.organizationId)).toEqual([]);
  });

  it("settings: auto-quarantine out of range or not a number is refused and nothing changes", async () => {
    const people = await adminAndMember(h);
    await people.admin.post("/projects/new", { name: "P", description: "", defaultBranch: "" });
    const [project] = await projectOf(people.organizationId);
    for (const days of ["0", "91", "1.5", "ten", "-3"]) {
      const answer = await people.admin.post(`/projects/${project!.id}/settings`, {
        name: "Renamed",
        description: "",
        defaultBranch: "",
        autoQuarantineDays: days,
      });
      expect(answer.status).toBe(400);
      expect(answer.text).toContain("Auto-quarantine must be a whole number of days from 1 to 90");
      expect(answer.text).toContain('value="Renamed"');
    }
    const [after] = await projectOf(people.organizationId);
    expect(after).toMatchObject({ name: "P", autoQuarantineDays: null });
  });

  it("settings: a retention out of 1 to SUMMARY_RETENTION_DAYS or not a number is refused and nothing changes", async () => {
    const people = await adminAndMember(h);
    await people.admin.post("/projects/new", { name: "P", description: "", defaultBranch: "" });
    const [project] = await projectOf(people.organizationId);
    for (const days of ["0", "401", "1.5", "ninety"]) {
      const answer = await people.admin.post(`/projects/${project!.id}/settings`, {
        name: "Renamed",
        description: "",
        defaultBranch: "",
        autoQuarantineDays: "",
        retentionDays: days,
      });
      expect(answer.status).toBe(400);
      expect(answer.text).toContain("Retention must be a whole number of days from 1 to 400");
    }
    const [after] = await projectOf(people.organizationId);
    expect(after).toMatchObject({ name: "P", retentionDays: null });
  });

  it("webhooks: a URL the policy refuses is named and nothing is stored", async () => {
    const people = await adminAndMember(h);
    await people.admin.post("/projects/new", { name: "P", description: "", defaultBranch: "" });
    const [project] = await projectOf(people.organizationId);
    for (const url of ["ftp://example.com/hook", "not a url", "http://10.0.0.1/hook"]) {
      const answer = await people.admin.post(`/projects/${project!.id}/settings/webhooks`, { url, description: "" });
      expect(answer.status).toBe(400);
      expect(answer.text).toMatch(/<div class="notice" role="alert"><ul class="plain"><li>URL [^<]+<\/li>/);
    }
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project!.id))).toEqual([]);
  });

  it("removing a webhook that is not the project's own (unknown, another project's, organization-wide) is a 404", async () => {
    const people = await adminAndMember(h);
    await people.admin.post("/projects/new", { name: "A", description: "", defaultBranch: "" });
    await people.admin.post("/projects/new", { name: "B", description: "", defaultBranch: "" });
    const [a, b] = (await projectOf(people.organizationId)).sort((x, y) => x.name.localeCompare(y.name));
    await people.admin.post(`/projects/${b!.id}/settings/webhooks`, { url: "http://127.0.0.1:9/b", description: "" });
    const [ofB] = await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, b!.id));
    const wide = await h.admin("POST", `/organizations/${people.organizationId}/webhooks`, { url: "http://127.0.0.1:9/all" });
    for (const id of ["00000000-0000-4000-8000-000000000000", "nope", ofB!.id, wide.body.webhook.id]) {
      const answer = await people.admin.post(`/projects/${a!.id}/settings/webhooks/${id}/delete`, {});
      expect(answer.status).toBe(404);
      // Nor is there a confirmation page for it.
      expect((await people.admin.get(`/projects/${a!.id}/settings/webhooks/${id}/delete`)).status).toBe(404);
    }
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, b!.id))).toHaveLength(1);
  });
});

describe("tokens made before they were kept", () => {
  it("cannot be revealed (the page says so) until an admin rotates the token", async () => {
    const people = await adminAndMember(h);
    await people.admin.post("/projects/new", { name: "Old", description: "", defaultBranch: "" });
    const [project] = await projectOf(people.organizationId);
    await h.db.update(projects).set({ uploadTokenEncrypted: null }).where(eq(projects.id, project!.id));
    const page = await people.member.get(`/projects/${project!.id}/settings`);
    expect(page.text).toContain("cannot be shown until it is rotated");
    expect(page.text).not.toContain("Reveal the upload token");
    const forced = await people.member.postAndFollow(`/projects/${project!.id}/settings/upload-token/reveal`, {});
    expect(forced.status).toBe(200);
    expect(forced.text).toContain("cannot be shown. Rotate it");
    expect(inputValue(forced.text, "upload-token")).toBeNull();
    const rotated = await people.admin.postAndFollow(`/projects/${project!.id}/settings/upload-token/rotate`, {});
    const token = inputValue(rotated.text, "upload-token");
    expect(token).toMatch(/^ctu_/);
    expect(
      inputValue((await people.member.postAndFollow(`/projects/${project!.id}/settings/upload-token/reveal`, {})).text, "upload-token"),
    ).toBe(token);
  });
});
