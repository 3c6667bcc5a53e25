/**
 * PUT /uploads/v1/codeowners, who may (docs/codeowners.md): only the project's upload token, and
 * only for its own project. An API key, no token or a wrong one is a 401 that stores nothing; a
 * project's token cannot reach another project's tests, and the owners filter does not cross
 * organizations.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const PATH = "/uploads/v1/codeowners";
const put = (token: string | null, text: string) =>
  h.call("PUT", PATH, { key: token, headers: { "content-type": "text/plain" }, rawBody: text });

async function projectWithTest() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  h.clock.advance(60_000);
  await h.newRun(project.id, {
    meta: { branch: "main" },
    report: { suites: [{ name: "s", cases: [{ name: "a", file: "src/a.test.ts", status: "passed" }] }] },
  });
  const test = async () => (await h.get(`/api/v1/projects/${project.id}/tests`, apiKey)).body.data[0];
  return { apiKey, uploadToken, projectId: project.id as string, test };
}

describe("authentication", () => {
  it("an API key, no token, a malformed or unknown one: 401, nothing stored", async () => {
    const { apiKey, uploadToken, test } = await projectWithTest();
    for (const token of [apiKey, null, "ctu_nope", uploadToken.slice(0, -1), `${uploadToken}x`]) {
      const res = await put(token, "* @intruder\n");
      expect(res.status, String(token)).toBe(401);
      expect(res.body.error.code).toBe("unauthorized");
    }
    expect((await test()).owners).toEqual([]);
  });

  it("a replaced token no longer works", async () => {
    const { uploadToken, projectId, test } = await projectWithTest();
    const regenerated = await h.admin("POST", `/projects/${projectId}/upload_token/regenerate`);
    expect(regenerated.status).toBe(200);
    expect((await put(uploadToken, "* @old-token\n")).status).toBe(401);
    expect((await put(regenerated.body.upload_token, "* @new-token\n")).status).toBe(200);
    expect((await test()).owners).toEqual(["@new-token"]);
  });
});

describe("one project's token, one project's owners", () => {
  it("another project's token stores that project's file and changes nothing here, in the same organization or not", async () => {
    const mine = await projectWithTest();
    const foreign = await projectWithTest();
    expect((await put(mine.uploadToken, "* @mine\n")).body.tests_with_owners_count).toBe(1);

    const res = await put(foreign.uploadToken, "* @foreign\n");
    expect(res.status).toBe(200);
    // It counts its own project's tests only.
    expect(res.body).toMatchObject({ tests_count: 1, tests_with_owners_count: 1 });
    expect((await mine.test()).owners).toEqual(["@mine"]);
    expect((await foreign.test()).owners).toEqual(["@foreign"]);

    // A sibling project of the same organization: its token reaches only its own tests.
    const sibling = await h.newProject((await h.get("/api/v1/organization", mine.apiKey)).body.id, "Sibling");
    expect((await put(sibling.uploadToken, "* @sibling\n")).body).toMatchObject({ tests_count: 0 });
    expect((await mine.test()).owners).toEqual(["@mine"]);
  });

  it("the owner filter of another organization's project is a 404, not its tests", async () => {
    const mine = await projectWithTest();
    const foreign = await projectWithTest();
    await put(foreign.uploadToken, "* @foreign\n");
    const res = await h.get(`/api/v1/projects/${foreign.projectId}/tests?owner=%40foreign`, mine.apiKey);
    expect(res.status).toBe(404);
    expect(res.text).not.toContain("@foreign");
  });
});
