/**
 * PATCH /admin/v1/projects/:id/check_settings, what it sets (docs/quarantine.md, docs/alert-checks.md):
 * `default_branch` and `auto_quarantine_days`, each kept when left out, both returned every time;
 * auto-quarantine is off (null) for a new project, and null turns it off again; `retention_days`
 * (docs/retention.md) from 1 to SUMMARY_RETENTION_DAYS, null for the deployment's.
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
      retention_days: null,
    });
    for (const days of [1, 14, 90]) {
      const res = await patch(id, { auto_quarantine_days: days, retention_days: null });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ project_id: id, default_branch: "trunk", auto_quarantine_days: days, retention_days: null });
    }
    expect((await patch(id, { default_branch: null })).body).toEqual({
      project_id: id,
      default_branch: null,
      auto_quarantine_days: 90,
      retention_days: null,
    });
    expect((await patch(id, { auto_quarantine_days: null, retention_days: null })).body).toEqual({
      project_id: id,
      default_branch: null,
      auto_quarantine_days: null,
      retention_days: null,
    });
    expect((await patch(id, { default_branch: "main", auto_quarantine_days: 7, retention_days: null })).body).toEqual({
      project_id: id,
      default_branch: "main",
      auto_quarantine_days: 7,
      retention_days: null,
    });
  });
});

describe("retention_days", () => {
  it("is the deployment's (null) by default, set from 1 to SUMMARY_RETENTION_DAYS, and refused above it with a 422 naming the field", async () => {
    const id = await newProjectId();
    for (const days of [1, 30, 400]) {
      const res = await patch(id, { retention_days: days });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ project_id: id, retention_days: days, auto_quarantine_days: null });
    }
    const over = await patch(id, { retention_days: 401 });
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe("validation_failed");
    expect(JSON.stringify(over.body.error.details)).toContain("retention_days");
    for (const bad of [0, 1.5, "30", -3]) expect((await patch(id, { retention_days: bad })).status).toBe(422);
    expect((await patch(id, { default_branch: "main" })).body.retention_days).toBe(400);
    expect((await patch(id, { retention_days: null })).body.retention_days).toBeNull();
  });
});
