/**
 * GET /uploads/v1/test_runs/:number/comparison and …/comparison/failures (docs/verdicts.md): the
 * comparison of a run of the upload token's project, read with that token, exactly as /api/v1
 * answers it with an API key; another project's run is a 404, a pending run a 409, and the two
 * operations are in both OpenAPI documents. Node and workerd.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

type Case = { name: string; status: "passed" | "failed" };
const pass = (name: string): Case => ({ name, status: "passed" });
const fail = (name: string): Case => ({ name, status: "failed" });
const MAIN = "5eed1e5".padEnd(40, "0");

async function upload(token: string, cases: Case[], meta: Record<string, string>) {
  h.clock.advance(60_000);
  const suites = [
    { name: "s", cases: cases.map((c) => ({ ...c, classname: "C", failure_message: c.status === "failed" ? "boom" : null })) },
  ];
  const run = await h.uploadAndWait(token, { ...meta, suites });
  expect(run.status).toBe("processed");
  return run;
}

/** A main run (a passes, b fails), then a feature run on its commit (a fails, b fails, c fails). */
async function comparedProject() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  await upload(uploadToken, [pass("a"), fail("b")], { branch: "main", commit_sha: MAIN });
  const run = await upload(uploadToken, [fail("a"), fail("b"), fail("c")], {
    branch: "feature",
    commit_sha: "f".repeat(40),
    base_commit_sha: MAIN.slice(0, 7),
  });
  return { organization, apiKey, project, uploadToken, run };
}

describe("the comparison read with the upload token", () => {
  it("answers what /api/v1 answers with an API key, for the comparison and every page of the failures", async () => {
    const { apiKey, project, uploadToken, run } = await comparedProject();
    const own = await h.get(`/uploads/v1/test_runs/${run.number}/comparison`, uploadToken);
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({
      run_number: run.number,
      project_id: project.id,
      base_choice: "base_commit",
      verdict_counts: { quarantined: 0, infrastructure: 0, failing_on_base: 1, flaky: 0, new: 2 },
      fixed_count: 0,
    });
    const api = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}/comparison`, apiKey);
    expect(own.body).toEqual(api.body);

    const path = `/uploads/v1/test_runs/${run.number}/comparison/failures`;
    const all = await collectAll(h, path, uploadToken, 1);
    expect(all.items.map((f: { name: string; verdict: string }) => `${f.name}:${f.verdict}`)).toEqual([
      "c:new",
      "b:failing_on_base",
      "a:new",
    ]);
    const apiAll = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}/comparison/failures`, apiKey);
    expect(all.items).toEqual(apiAll.body.data);
    const onlyNew = await h.get(`${path}?verdict=new`, uploadToken);
    expect(onlyNew.body.data.map((f: { name: string }) => f.name)).toEqual(["c", "a"]);
    expect(onlyNew.body.data[0].reason).toBe("not in the base, run #1");
    expect((await h.get(`${path}?verdict=broken`, uploadToken)).status).toBe(400);
    // A cursor is bound to its filter, as in /api/v1.
    const first = await h.get(`${path}?verdict=new&limit=1`, uploadToken);
    expect((await h.get(`${path}?verdict=flaky&cursor=${first.body.pagination.next_cursor}`, uploadToken)).status).toBe(400);
  });

  it("another project's token (even of the same organization) gets a 404; a bad token a 401; a pending run a 409", async () => {
    const { organization, project, uploadToken, run } = await comparedProject();
    const sibling = await h.newProject(organization.id, "Sibling");
    const stranger = await h.newProject((await h.newOrganization()).organization.id);
    for (const token of [sibling.uploadToken, stranger.uploadToken]) {
      for (const path of ["comparison", "comparison/failures"]) {
        const res = await h.get(`/uploads/v1/test_runs/${run.number}/${path}`, token);
        expect(res.status, path).toBe(404);
        expect(res.body.error.code).toBe("not_found");
      }
    }
    expect((await h.get(`/uploads/v1/test_runs/${run.number}/comparison`, `ctu_${"x".repeat(49)}`)).status).toBe(401);
    const pending = await h.newRun(project.id, { outcome: "pending" });
    const res = await h.get(`/uploads/v1/test_runs/${pending.number}/comparison`, uploadToken);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("run_not_processed");
  });

  it("is documented in /uploads/v1/openapi.json and in /api/v1/openapi.json under its full path", async () => {
    const uploads = (await h.get("/uploads/v1/openapi.json")).body;
    const comparison = uploads.paths["/test_runs/{number}/comparison"].get;
    expect(comparison.operationId).toBe("getUploadedTestRunComparison");
    expect(comparison.security).toEqual([{ uploadToken: [] }]);
    expect(Object.keys(comparison.responses).sort()).toEqual(["200", "401", "404", "409", "429", "500", "503"]);
    const failures = uploads.paths["/test_runs/{number}/comparison/failures"].get;
    expect(failures.operationId).toBe("listUploadedTestRunComparisonFailures");
    expect(failures.parameters.map((p: { name: string }) => p.name).sort()).toEqual(["cursor", "limit", "number", "verdict"]);
    const v1 = (await h.get("/api/v1/openapi.json")).body;
    expect(v1.paths["/uploads/v1/test_runs/{number}/comparison"].get).toEqual(comparison);
    expect(v1.paths["/uploads/v1/test_runs/{number}/comparison/failures"].get).toEqual(failures);
  });
});
