/**
 * The quarantine service's limit (src/services/quarantine.ts): a project holds at most 10,000
 * quarantines in force, so the CI's list (not paginated) is always whole. Node only: it writes
 * 10,000 quarantined tests straight into the database.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_QUARANTINED_TESTS } from "../../../src/services/tests/quarantine";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

describe("at most 10,000 quarantines in force per project", () => {
  it("one more is a 422 on id; replacing one of them is not; an expired or ended one frees a place; the CI list holds them all", async () => {
    expect(MAX_QUARANTINED_TESTS).toBe(10_000);
    const { organization, apiKey } = await h.newOrganization();
    const { project, uploadToken } = await h.newProject(organization.id);
    await h.newRun(project.id, { report: { suites: [{ name: "s", cases: [{ name: "late", classname: "C", status: "passed" }] }] } });
    const late = (await h.get(`/api/v1/projects/${project.id}/tests`, apiKey)).body.data[0].id as string;

    const now = h.clock.now();
    const inADay = new Date(now.getTime() + 86_400_000);
    // 9,999 for a week and one for a day: 10,000 in force.
    await h.db.execute(sql`
      insert into tests (id, project_id, name, classname, first_seen_at, quarantine_reason, quarantine_created_at, quarantine_expires_at, quarantine_source)
      select gen_random_uuid(), ${project.id}::uuid, 'bulk_' || lpad(g::text, 5, '0'), 'Bulk', ${now.toISOString()}::timestamptz, 'bulk',
        ${now.toISOString()}::timestamptz, case when g = 1 then ${inADay.toISOString()}::timestamptz else ${new Date(now.getTime() + 7 * 86_400_000).toISOString()}::timestamptz end, 'manual'
      from generate_series(1, ${MAX_QUARANTINED_TESTS}) g`);

    const refused = await h.post(`/api/v1/tests/${late}/quarantine`, apiKey, { reason: "r", duration: "1d" });
    expect(refused.status).toBe(422);
    expect(refused.body.error.details).toEqual([{ field: "id", message: expect.stringContaining("10000 quarantined tests") }]);
    expect((await h.get(`/api/v1/tests/${late}`, apiKey)).body.quarantined).toBe(false);

    const listed = await h.get("/uploads/v1/quarantined_tests", uploadToken);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(MAX_QUARANTINED_TESTS);
    expect(listed.body.data[0]).toMatchObject({ classname: "Bulk", name: "bulk_00001", reason: "bulk", expires_at: inADay.toISOString() });

    const first = (await h.get(`/api/v1/projects/${project.id}/tests?quarantined=true&sort=name&limit=1`, apiKey)).body.data[0];
    expect(first.name).toBe("bulk_00001");
    const replaced = await h.post(`/api/v1/tests/${first.id}/quarantine`, apiKey, { reason: "replaced", duration: "1d" });
    expect(replaced.status, replaced.text).toBe(200);

    // The day passes: bulk_00001's replacement has ended, and there is room for one.
    h.clock.advance(86_400_000);
    const accepted = await h.post(`/api/v1/tests/${late}/quarantine`, apiKey, { reason: "r", duration: "1d" });
    expect(accepted.status, accepted.text).toBe(200);
    expect((await h.post(`/api/v1/tests/${first.id}/quarantine`, apiKey, { reason: "r", duration: "1d" })).status).toBe(422);
    expect((await h.post(`/api/v1/tests/${late}/unquarantine`, apiKey)).status).toBe(200);
    expect((await h.post(`/api/v1/tests/${first.id}/quarantine`, apiKey, { reason: "r", duration: "1d" })).status).toBe(200);
  });
});
