/**
 * Failures grouped by cause (/api/v1): a project's groups, a test's groups and a run's failures
 * grouped, kept by run processing; plus the 404s of other organizations and unknown ids.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Report } from "../../../src/services/runs/test-runs";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const refused = (at: string, port: number) => `Connection to db.internal:${port} refused at ${at}`;
const trace = (line: number) =>
  `org.postgresql.util.PSQLException: boom\n\tat com.acme.Repo.load(Repo.java:${line})\n\tat com.acme.RepoTest.loads(RepoTest.java:${line + 10})`;

function failing(cases: { name: string; message: string; text?: string; status?: "failed" | "errored" }[], passing: string[] = []): Report {
  return {
    suites: [
      {
        name: "suite",
        cases: [
          ...cases.map((c) => ({
            name: c.name,
            classname: "com.acme.RepoTest",
            status: c.status ?? ("errored" as const),
            durationMs: 5,
            failureType: "org.postgresql.util.PSQLException",
            failureMessage: c.message,
            failureText: c.text ?? null,
          })),
          ...passing.map((name) => ({ name, classname: "com.acme.RepoTest", status: "passed" as const, durationMs: 5 })),
        ],
      },
    ],
  };
}

async function setup() {
  const { organization, apiKey } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  return { apiKey, projectId: project.id as string };
}

describe("failure groups", () => {
  it("one cause across tests and runs is one group, another cause another; the run's groups list its cases, the sample is the latest failure as written", async () => {
    const { apiKey, projectId } = await setup();
    h.clock.advance(1000);
    await h.newRun(projectId, {
      meta: { branch: "main", commitSha: "a1" },
      report: failing(
        [
          { name: "loads", message: refused("2026-11-20T10:00:00Z", 5432), text: trace(40) },
          { name: "saves", message: refused("2026-11-20T10:00:01Z", 5432), text: trace(40) },
          { name: "asserts", message: "expected status ACTIVE but was DISABLED", status: "failed" },
        ],
        ["ok"],
      ),
    });
    h.clock.advance(60_000);
    const second = await h.newRun(projectId, {
      meta: { branch: "main", commitSha: "a2" },
      report: failing([{ name: "loads", message: refused("2026-11-21T08:30:00Z", 5432), text: trace(40) }]),
    });

    const groups = await h.get(`/api/v1/projects/${projectId}/failure_groups`, apiKey);
    expect(groups.status).toBe(200);
    expect(groups.body.data).toHaveLength(2);
    const [refusedGroup, assertGroup] = groups.body.data;
    expect(refusedGroup).toMatchObject({
      occurrences: 3,
      tests_count: 2,
      sample: { message: refused("2026-11-21T08:30:00Z", 5432), text: trace(40) },
    });
    expect(refusedGroup.message).not.toContain("2026-11-21");
    expect(refusedGroup.signature).toMatch(/^[0-9a-f]+$/);
    expect(new Date(refusedGroup.last_seen_at).getTime()).toBeGreaterThan(new Date(refusedGroup.first_seen_at).getTime());
    expect(assertGroup).toMatchObject({ occurrences: 1, tests_count: 1 });
    expect(refusedGroup.signature).not.toBe(assertGroup.signature);

    const sample = await h.get(`/api/v1/test_cases/${refusedGroup.sample.test_case_id}`, apiKey);
    expect(sample.body).toMatchObject({ name: "loads", test_run_number: second.number });

    const runGroups = await h.get(`/api/v1/projects/${projectId}/test_runs/1/failure_groups`, apiKey);
    expect(runGroups.status).toBe(200);
    expect(runGroups.body.data.map((g: any) => [g.signature, g.run_occurrences, g.run_tests_count, g.test_case_ids.length])).toEqual([
      [refusedGroup.signature, 2, 2, 2],
      [assertGroup.signature, 1, 1, 1],
    ]);
    const firstPage = await h.get(`/api/v1/projects/${projectId}/test_runs/1/failure_groups?limit=1`, apiKey);
    expect(firstPage.body.data.map((g: any) => g.signature)).toEqual([refusedGroup.signature]);
    const secondPage = await h.get(
      `/api/v1/projects/${projectId}/test_runs/1/failure_groups?limit=1&cursor=${encodeURIComponent(firstPage.body.pagination.next_cursor)}`,
      apiKey,
    );
    expect(secondPage.body.data.map((g: any) => g.signature)).toEqual([assertGroup.signature]);
    expect(secondPage.body.pagination.has_more).toBe(false);

    const tests = (await h.get(`/api/v1/projects/${projectId}/tests?q=loads`, apiKey)).body.data;
    const testGroups = await h.get(`/api/v1/tests/${tests[0].id}/failure_groups`, apiKey);
    expect(testGroups.body.data).toEqual([expect.objectContaining({ signature: refusedGroup.signature, occurrences: 2, tests_count: 1 })]);

    // A passing run has no groups.
    h.clock.advance(60_000);
    const green = await h.newRun(projectId, { meta: { branch: "main" } });
    expect((await h.get(`/api/v1/projects/${projectId}/test_runs/${green.number}/failure_groups`, apiKey)).body).toEqual({
      data: [],
      pagination: { next_cursor: null, has_more: false },
    });
  });

  it("other organizations' and unknown projects, runs and tests are 404", async () => {
    const { apiKey, projectId } = await setup();
    await h.newRun(projectId, { report: failing([{ name: "x", message: "boom" }]) });
    const other = (await h.newOrganization("Other")).apiKey;
    const testId = (await h.get(`/api/v1/projects/${projectId}/tests`, apiKey)).body.data[0].id;
    for (const path of [
      `/api/v1/projects/${projectId}/failure_groups`,
      `/api/v1/projects/${projectId}/test_runs/1/failure_groups`,
      `/api/v1/tests/${testId}/failure_groups`,
    ]) {
      expect((await h.get(path, apiKey)).status, path).toBe(200);
      expect((await h.get(path, other)).status, path).toBe(404);
    }
    for (const path of [
      "/api/v1/projects/nope/failure_groups",
      `/api/v1/projects/${projectId}/test_runs/99/failure_groups`,
      "/api/v1/tests/00000000-0000-4000-8000-000000000000/failure_groups",
    ]) {
      expect((await h.get(path, apiKey)).status, path).toBe(404);
    }
  });
});
