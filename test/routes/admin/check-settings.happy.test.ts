/**
 * PATCH /admin/v1/projects/:id/check_settings, what it sets (docs/quarantine.md, docs/alert-checks.md):
 * `default_branch` and `auto_quarantine_days`, each kept when left out, both returned every time;
 * auto-quarantine is off (null) for a new project, and null turns it off again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

async function newProjectId() {
  const { organization } = await h.newOrganization();
  return (await h.newProject(organization.id)).project.id as string;
}
const patch = (projectId: string, body: unknown) => h.admin("PATCH", `/projects/${projectId}/check_settings`, body);

describe("auto_quarantine_days", () => {
  it("is off by default, set from 1 to 90 days, kept when another field is set, and cleared by null", async () => {
    const id = await newProjectId();
    expect((await patch(id, { default_branch: "trunk" })).body).toEqual({
      project_id: id,
      default_branch: "trunk",
      auto_quarantine_days: null,
    });
    for (const days of [1, 14, 90]) {
      const res = await patch(id, { auto_quarantine_days: days });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ project_id: id, default_branch: "trunk", auto_quarantine_days: days });
    }
    expect((await patch(id, { default_branch: null })).body).toEqual({ project_id: id, default_branch: null, auto_quarantine_days: 90 });
    expect((await patch(id, { auto_quarantine_days: null })).body).toEqual({
      project_id: id,
      default_branch: null,
      auto_quarantine_days: null,
    });
    expect((await patch(id, { default_branch: "main", auto_quarantine_days: 7 })).body).toEqual({
      project_id: id,
      default_branch: "main",
      auto_quarantine_days: 7,
    });
  });
});
