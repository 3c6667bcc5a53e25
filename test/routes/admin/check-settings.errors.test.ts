/**
 * PATCH /admin/v1/projects/:id/check_settings, what it refuses: an `auto_quarantine_days` that is
 * not a whole number of days from 1 to 90 (or null) is a 422 `validation_failed` with a detail on
 * the field, and changes nothing; an empty body is a 422; an unknown project a 404.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const patch = (projectId: string, body: unknown) => h.admin("PATCH", `/projects/${projectId}/check_settings`, body);

describe("auto_quarantine_days", () => {
  it.each([
    [0, "must be at least 1"],
    [91, "must be at most 90"],
    [-3, "must be at least 1"],
    [1.5, "must be a whole number of days from 1 to 90, or null"],
    ["7", "must be a whole number of days from 1 to 90, or null"],
    [true, "must be a whole number of days from 1 to 90, or null"],
  ])("%j is a 422 with a detail on auto_quarantine_days, and changes nothing", async (value, message) => {
    const { organization } = await h.newOrganization();
    const id = (await h.newProject(organization.id)).project.id as string;
    expect((await patch(id, { auto_quarantine_days: 5 })).status).toBe(200);
    const res = await patch(id, { auto_quarantine_days: value, default_branch: "trunk" });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("validation_failed");
    expect(res.body.error.details).toEqual([{ field: "auto_quarantine_days", message }]);
    expect((await patch(id, { default_branch: null })).body.auto_quarantine_days).toBe(5);
  });

  it("an empty body sets nothing: 422; an unknown project is a 404", async () => {
    const { organization } = await h.newOrganization();
    const id = (await h.newProject(organization.id)).project.id as string;
    const empty = await patch(id, {});
    expect(empty.status).toBe(422);
    expect(empty.body.error.details[0].field).toBe("default_branch");
    expect((await patch("00000000-0000-4000-8000-000000000000", { auto_quarantine_days: 7 })).status).toBe(404);
  });
});
