/**
 * GET /api/v1/projects/:id/test_runs/:number/comparison, …/comparison/failures?verdict= and
 * …/comparison/fixed (docs/verdicts.md): the base and counts as processing stored them,
 * `verdict_counts` on the run object, 409 `run_not_processed` before processing, cursor pages,
 * and another organization's run the same 404 as a missing one. Node and workerd.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, WEB_APP_URL, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

type Case = { name: string; status: "passed" | "failed"; message?: string };
const pass = (name: string): Case => ({ name, status: "passed" });
const fail = (name: string, message = "expected 1 to be 2"): Case => ({ name, status: "failed", message });

async function upload(token: string, cases: Case[], meta: Record<string, string>) {
  h.clock.advance(60_000);
  const suites = [{ name: "s", cases: cases.map((c) => ({ ...c, classname: "C", failure_message: c.message ?? null })) }];
  const run = await h.uploadAndWait(token, { ...meta, suites });
  expect(run.status).toBe("processed");
  return run;
}

const MAIN = "28335f0".padEnd(40, "a");

/** A main run (a passes, b fails, c fails, d passes), then a feature run naming it as its base (a fails, b fails, c passes, e fails). */
async function comparedProject() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  await upload(uploadToken, [pass("a"), fail("b"), fail("c"), pass("d")], { branch: "main", commit_sha: MAIN });
  const run = await upload(uploadToken, [fail("a"), fail("b"), pass("c"), fail("e"), pass("d")], {
    branch: "feature",
    commit_sha: "b".repeat(40),
    base_commit_sha: MAIN.slice(0, 7),
  });
  return { organization, apiKey, project, uploadToken, run };
}

describe("GET …/test_runs/:number/comparison", () => {
  it("names the base and how it was chosen, counts per verdict and fixed; the run object carries verdict_counts", async () => {
    const { apiKey, project, run } = await comparedProject();
    const res = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}/comparison`, apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      run_number: 2,
      project_id: project.id,
      base_choice: "base_commit",
      base: { number: 1, branch: "main", commit_sha: MAIN, url: `${WEB_APP_URL}/projects/${project.id}/runs/1` },
      awaited_base_commit: null,
      infrastructure_reason: null,
      verdict_counts: { quarantined: 0, infrastructure: 0, failing_on_base: 1, flaky: 0, new: 2 },
      fixed_count: 1,
      compared_at: expect.any(String),
    });
    const runObject = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}`, apiKey);
    expect(runObject.body.verdict_counts).toEqual(res.body.verdict_counts);
    expect(runObject.body.base_commit_sha).toBe(MAIN.slice(0, 7));
  });

  it("409 run_not_processed for a pending or failed run, verdict_counts null; another organization's run is a 404", async () => {
    const { apiKey, project } = await comparedProject();
    const pending = await h.newRun(project.id, { outcome: "pending" });
    const failed = await h.newRun(project.id, { outcome: "failed" });
    for (const number of [pending.number, failed.number]) {
      for (const path of ["comparison", "comparison/failures", "comparison/fixed"]) {
        const res = await h.get(`/api/v1/projects/${project.id}/test_runs/${number}/${path}`, apiKey);
        expect(res.status).toBe(409);
        expect(res.body.error.code).toBe("run_not_processed");
      }
      const runObject = await h.get(`/api/v1/projects/${project.id}/test_runs/${number}`, apiKey);
      expect(runObject.body.verdict_counts).toBeNull();
    }
    const other = await h.newOrganization();
    for (const path of ["comparison", "comparison/failures", "comparison/fixed"]) {
      const res = await h.get(`/api/v1/projects/${project.id}/test_runs/2/${path}`, other.apiKey);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
  });
});

describe("GET …/comparison/failures and …/comparison/fixed", () => {
  it("lists each failure with its verdict, reason, group and page; filters by verdict; pages with cursors", async () => {
    const { apiKey, project, run } = await comparedProject();
    const path = `/api/v1/projects/${project.id}/test_runs/${run.number}/comparison/failures`;
    const all = await collectAll(h, path, apiKey, 1);
    expect(all.items.map((f: { name: string }) => f.name)).toEqual(["e", "b", "a"]);
    type Failure = { name: string; test_id: string; verdict: string; reason: string };
    const byName: Record<string, Failure> = Object.fromEntries(all.items.map((f: Failure) => [f.name, f]));
    expect(byName.b).toEqual({
      test_id: expect.any(String),
      classname: "C",
      name: "b",
      file: null,
      test_case_id: expect.any(Number),
      status: "failed",
      verdict: "failing_on_base",
      reason: "also failed on main in run #1 (28335f0)",
      failure_signature: expect.any(String),
      failure_message: "expected 1 to be 2",
      url: `${WEB_APP_URL}/projects/${project.id}/tests/${byName.b!.test_id}`,
    });
    expect(byName.a!.verdict).toBe("new");
    expect(byName.a!.reason).toBe("passed on main in run #1 (28335f0)");
    expect(byName.e!.reason).toBe("not in the base, run #1");
    const onlyNew = await h.get(`${path}?verdict=new`, apiKey);
    expect(onlyNew.body.data.map((f: { name: string }) => f.name)).toEqual(["e", "a"]);
    const bad = await h.get(`${path}?verdict=broken`, apiKey);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("invalid_request");

    const fixed = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}/comparison/fixed`, apiKey);
    expect(fixed.status).toBe(200);
    expect(fixed.body.data).toEqual([
      {
        test_id: expect.any(String),
        classname: "C",
        name: "c",
        file: null,
        test_case_id: expect.any(Number),
        base_test_case_id: expect.any(Number),
        url: expect.stringMatching(new RegExp(`^${WEB_APP_URL}/projects/${project.id}/tests/`)),
      },
    ]);
    expect(fixed.body.pagination).toEqual({ next_cursor: null, has_more: false });
  });

  it("a cursor of the failures list is refused on the fixed list and on another verdict", async () => {
    const { apiKey, project, run } = await comparedProject();
    const base = `/api/v1/projects/${project.id}/test_runs/${run.number}/comparison`;
    const first = await h.get(`${base}/failures?verdict=new&limit=1`, apiKey);
    const cursor = first.body.pagination.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));
    expect((await h.get(`${base}/failures?verdict=new&limit=1&cursor=${cursor}`, apiKey)).status).toBe(200);
    expect((await h.get(`${base}/failures?verdict=flaky&cursor=${cursor}`, apiKey)).status).toBe(400);
    expect((await h.get(`${base}/fixed?cursor=${cursor}`, apiKey)).status).toBe(400);
  });
});
