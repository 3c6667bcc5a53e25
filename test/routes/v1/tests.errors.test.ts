/**
 * Tests as resources: what is refused. Unknown or other organizations' projects and tests are
 * the same 404; unknown filter values and sorts are 400s; a cursor works only with the sort and
 * the filters that issued it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
let apiKey: string;
let projectId: string;
let testId: string;
let otherKey: string;

beforeAll(async () => {
  h = await createHarness();
  const mine = await h.newOrganization("Mine");
  apiKey = mine.apiKey;
  projectId = (await h.newProject(mine.organization.id)).project.id;
  const cases = Array.from({ length: 3 }, (_, i) => ({ name: `t${i}`, classname: "C", status: "passed" as const, durationMs: i }));
  await h.newRun(projectId, { meta: { branch: "main", commitSha: "a" }, report: { suites: [{ name: "s", cases }] } });
  const list = await h.get(`/api/v1/projects/${projectId}/tests`, apiKey);
  testId = list.body.data[0].id;
  otherKey = (await h.newOrganization("Other")).apiKey;
});
afterAll(() => h.close());

const notFound = { error: { code: "not_found", message: expect.any(String) } };

describe("404 for unknown, malformed and other organizations' ids (security)", () => {
  it("on every tests route", async () => {
    const paths = [
      `/api/v1/projects/${projectId}/tests`,
      `/api/v1/tests/${testId}`,
      `/api/v1/tests/${testId}/executions`,
      `/api/v1/tests/${testId}/health_transitions`,
    ];
    for (const path of paths) {
      expect((await h.get(path, apiKey)).status, path).toBe(200);
      const foreign = await h.get(path, otherKey);
      expect(foreign.status, path).toBe(404);
      expect(foreign.body).toEqual(notFound);
    }
    for (const id of ["00000000-0000-4000-8000-000000000000", "not-a-uuid", "1"]) {
      for (const path of [
        `/api/v1/projects/${id}/tests`,
        `/api/v1/tests/${id}`,
        `/api/v1/tests/${id}/executions`,
        `/api/v1/tests/${id}/health_transitions`,
      ]) {
        const res = await h.get(path, apiKey);
        expect(res.status, path).toBe(404);
        expect(res.body).toEqual(notFound);
      }
    }
  });

  it("without an API key: 401", async () => {
    expect((await h.get(`/api/v1/tests/${testId}`, null)).status).toBe(401);
  });
});

describe("400 for unknown filter values and sorts", () => {
  it("health, sort, status and limit", async () => {
    for (const query of ["health=sick", "sort=random", "sort=", "limit=0", "limit=x"]) {
      const res = await h.get(`/api/v1/projects/${projectId}/tests?${query}`, apiKey);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    const status = await h.get(`/api/v1/tests/${testId}/executions?status=flaky`, apiKey);
    expect(status.status).toBe(400);
  });
});

describe("cursors are bound to the project, the filters and the sort", () => {
  it("a cursor of one sort, q or health is refused by another", async () => {
    const first = await h.get(`/api/v1/projects/${projectId}/tests?sort=duration&limit=1`, apiKey);
    const cursor = encodeURIComponent(first.body.pagination.next_cursor);
    expect((await h.get(`/api/v1/projects/${projectId}/tests?sort=duration&limit=1&cursor=${cursor}`, apiKey)).status).toBe(200);
    for (const query of ["sort=impact", "sort=name", "sort=duration&q=t", "sort=duration&health=flaky"]) {
      const res = await h.get(`/api/v1/projects/${projectId}/tests?${query}&cursor=${cursor}`, apiKey);
      expect(res.status, query).toBe(400);
      expect(res.body.error.details).toEqual([{ field: "cursor", message: expect.any(String) }]);
    }
    // Nor does it work on another organization's project (404 before the cursor is read would leak nothing either way).
    expect((await h.get(`/api/v1/projects/${projectId}/tests?sort=duration&cursor=${cursor}`, otherKey)).status).toBe(400);
  });
});
