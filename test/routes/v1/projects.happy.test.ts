import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completeTestRun } from "../../../src/services/runs/test-runs";
import { type Harness, WEB_APP_URL, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function expectIsoUtc(value: unknown) {
  expect(typeof value).toBe("string");
  expect(value).toMatch(ISO_UTC);
  expect(new Date(value as string).toISOString()).toBe(value);
}

const now = () => h.clock.now().toISOString();

const passedReport = { suites: [{ name: "s", cases: [{ name: "a", status: "passed" as const, durationMs: 1 }] }] };
const failedReport = {
  suites: [
    {
      name: "s",
      cases: [
        { name: "a", status: "passed" as const },
        { name: "b", status: "failed" as const, failureMessage: "expected 1 to be 2" },
        { name: "c", status: "skipped" as const },
      ],
    },
  ],
};
const erroredReport = {
  suites: [
    {
      name: "s",
      cases: [
        { name: "a", status: "failed" as const },
        { name: "b", status: "errored" as const },
        { name: "c", status: "passed" as const },
      ],
    },
  ],
};

async function getProject(key: string, id: string) {
  const res = await h.get(`/api/v1/projects/${id}`, key);
  expect(res.status).toBe(200);
  return res.body;
}

describe("GET /projects", () => {
  it("lists the organization's projects newest first, wrapped in data and pagination", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const created: string[] = [];
    for (const name of ["first", "second", "third"]) {
      const { project } = await h.newProject(organization.id, name);
      created.push(project.id);
      h.clock.advance(1000);
    }
    const res = await h.get("/api/v1/projects", apiKey);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["data", "pagination"]);
    expect(res.body.data.map((p: any) => p.id)).toEqual([...created].reverse());
    expect(res.body.data.map((p: any) => p.name)).toEqual(["third", "second", "first"]);
    expect(res.body.pagination).toEqual({ next_cursor: null, has_more: false });
  });

  it("orders by creation time, not by name or id, and follows the clock even when one millisecond apart", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const ids: string[] = [];
    for (const name of ["zz", "aa", "mm", "bb"]) {
      ids.push((await h.newProject(organization.id, name)).project.id);
      h.clock.advance(1);
    }
    const res = await h.get("/api/v1/projects", apiKey);
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: any) => p.id)).toEqual([...ids].reverse());
    const createdAts = res.body.data.map((p: any) => Date.parse(p.created_at));
    expect([...createdAts].sort((a, b) => b - a)).toEqual(createdAts);
  });

  it("returns only the caller's organization's projects", async () => {
    const mine = await h.newOrganization("Mine");
    const other = await h.newOrganization("Other");
    const a = await h.newProject(mine.organization.id, "mine-a");
    h.clock.advance(1000);
    await h.newProject(other.organization.id, "theirs");
    h.clock.advance(1000);
    const b = await h.newProject(mine.organization.id, "mine-b");

    const res = await h.get("/api/v1/projects", mine.apiKey);
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: any) => p.id)).toEqual([b.project.id, a.project.id]);

    const theirs = await h.get("/api/v1/projects", other.apiKey);
    expect(theirs.body.data.map((p: any) => p.name)).toEqual(["theirs"]);
  });

  it("returns an empty list for an organization without projects", async () => {
    const { apiKey } = await h.newOrganization();
    const res = await h.get("/api/v1/projects", apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
  });

  it("pages with limit and cursor without gaps or duplicates", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await h.newProject(organization.id, `p${i}`)).project.id);
      h.clock.advance(1000);
    }
    const first = await h.get("/api/v1/projects?limit=2", apiKey);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.pagination.has_more).toBe(true);
    expect(typeof first.body.pagination.next_cursor).toBe("string");
    const second = await h.get(`/api/v1/projects?limit=2&cursor=${encodeURIComponent(first.body.pagination.next_cursor)}`, apiKey);
    expect(second.status).toBe(200);
    expect(second.body.data).toHaveLength(2);
    const third = await h.get(`/api/v1/projects?limit=2&cursor=${encodeURIComponent(second.body.pagination.next_cursor)}`, apiKey);
    expect(third.status).toBe(200);
    expect(third.body.data).toHaveLength(1);
    expect(third.body.pagination).toEqual({ next_cursor: null, has_more: false });
    const all = [...first.body.data, ...second.body.data, ...third.body.data].map((p: any) => p.id);
    expect(all).toEqual([...ids].reverse());
  });

  it("list items are the same objects GET /projects/:id returns", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Same", "desc");
    await h.newRun(project.id);
    const list = await h.get("/api/v1/projects", apiKey);
    expect(list.body.data).toEqual([await getProject(apiKey, project.id)]);
  });
});

describe("GET /projects/:id", () => {
  it("returns every field of the project object with exact types and values", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const createdAt = now();
    const { project } = await h.newProject(organization.id, "Checkout service", "Runs on every push");
    const res = await h.get(`/api/v1/projects/${project.id}`, apiKey);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      id: project.id,
      name: "Checkout service",
      description: "Runs on every push",
      test_runs_count: 0,
      latest_result: null,
      last_test_run_at: null,
      tests_count: 0,
      flaky_tests_count: 0,
      broken_tests_count: 0,
      created_at: createdAt,
      updated_at: createdAt,
      url: `${WEB_APP_URL}/projects/${project.id}`,
    });
    expect(res.body.id).toMatch(UUID);
    expectIsoUtc(res.body.created_at);
    expectIsoUtc(res.body.updated_at);
    expect(Number.isInteger(res.body.test_runs_count)).toBe(true);
  });

  it("returns null description for a project created without one", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "No description");
    const body = await getProject(apiKey, project.id);
    expect(body.description).toBeNull();
    expect(body).toHaveProperty("description");
  });

  it("never returns the upload token", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project, uploadToken } = await h.newProject(organization.id);
    const res = await h.get(`/api/v1/projects/${project.id}`, apiKey);
    expect(res.text).not.toContain(uploadToken);
    const list = await h.get("/api/v1/projects", apiKey);
    expect(list.text).not.toContain(uploadToken);
  });
});

describe("PATCH /projects/:id", () => {
  it("changes the name and returns the updated project", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Old", "keep me");
    const res = await h.patch(`/api/v1/projects/${project.id}`, apiKey, { name: "New name" });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("New name");
    expect(res.body.description).toBe("keep me");
    expect(res.body).toEqual(await getProject(apiKey, project.id));
  });

  it("changes the description and leaves the name alone", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Name", "old");
    const res = await h.patch(`/api/v1/projects/${project.id}`, apiKey, { description: "new description" });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("Name");
    expect(res.body.description).toBe("new description");
    expect((await getProject(apiKey, project.id)).description).toBe("new description");
  });

  it("changes both fields at once", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "A", "a");
    const res = await h.patch(`/api/v1/projects/${project.id}`, apiKey, { name: "B", description: "b" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: "B", description: "b" });
  });

  it("clears the description with an empty string (null in the response)", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Name", "to be cleared");
    const res = await h.patch(`/api/v1/projects/${project.id}`, apiKey, { description: "" });
    expect(res.status).toBe(200);
    expect(res.body.description).toBeNull();
    expect((await getProject(apiKey, project.id)).description).toBeNull();
  });

  it("clears the description with null", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Name", "to be cleared");
    const res = await h.patch(`/api/v1/projects/${project.id}`, apiKey, { description: null });
    expect(res.status).toBe(200);
    expect(res.body.description).toBeNull();
    expect((await getProject(apiKey, project.id)).description).toBeNull();
  });

  it("keeps a name with surrounding spaces that is not blank", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Name");
    const res = await h.patch(`/api/v1/projects/${project.id}`, apiKey, { name: " x " });
    expect(res.status).toBe(200);
    expect(typeof res.body.name).toBe("string");
    expect(res.body.name.trim()).toBe("x");
  });

  it("ignores unrecognized fields, including read-only ones", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Name", "d");
    const other = (await h.newProject(organization.id, "Other")).project;
    const before = await getProject(apiKey, project.id);
    const res = await h.patch(`/api/v1/projects/${project.id}`, apiKey, {
      name: "Renamed",
      id: other.id,
      test_runs_count: 99,
      latest_result: "tests_failed",
      last_test_run_at: "2001-01-01T00:00:00.000Z",
      created_at: "2001-01-01T00:00:00.000Z",
      url: "https://evil.example/",
      upload_token: "x",
      organization_id: "00000000-0000-4000-8000-000000000000",
      alerts: [],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...before, name: "Renamed", updated_at: res.body.updated_at });
    expect(res.body.id).toBe(project.id);
    expect(res.body.test_runs_count).toBe(0);
    expect(res.body.latest_result).toBeNull();
    expect(res.body.last_test_run_at).toBeNull();
    expect(await getProject(apiKey, project.id)).toEqual(res.body);
    // The other project is untouched and the project stays in its organization.
    expect((await getProject(apiKey, other.id)).name).toBe("Other");
    const list = await h.get("/api/v1/projects", apiKey);
    expect(list.body.data.map((p: any) => p.id).sort()).toEqual([project.id, other.id].sort());
  });

  it("moves updated_at to the time of the change and keeps created_at", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const createdAt = now();
    const { project } = await h.newProject(organization.id, "Name");
    h.clock.advance(90_000);
    const changedAt = now();
    const res = await h.patch(`/api/v1/projects/${project.id}`, apiKey, { description: "x" });
    expect(res.status).toBe(200);
    expect(res.body.created_at).toBe(createdAt);
    expect(res.body.updated_at).toBe(changedAt);
    expect(res.body.updated_at).not.toBe(createdAt);
    expectIsoUtc(res.body.updated_at);
    expect((await getProject(apiKey, project.id)).updated_at).toBe(changedAt);
  });

  it("shows the change in the project list", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id, "Before");
    await h.patch(`/api/v1/projects/${project.id}`, apiKey, { name: "After" });
    const list = await h.get("/api/v1/projects", apiKey);
    expect(list.body.data.map((p: any) => p.name)).toEqual(["After"]);
  });

  it("does not change the project's position in the list (ordered by creation, not update)", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const older = (await h.newProject(organization.id, "older")).project;
    h.clock.advance(1000);
    const newer = (await h.newProject(organization.id, "newer")).project;
    h.clock.advance(1000);
    await h.patch(`/api/v1/projects/${older.id}`, apiKey, { name: "older, renamed" });
    const list = await h.get("/api/v1/projects", apiKey);
    expect(list.body.data.map((p: any) => p.id)).toEqual([newer.id, older.id]);
  });
});

describe("project test run statistics", () => {
  it("counts every run that arrived, including pending and failed ones", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    await h.newRun(project.id, { report: passedReport });
    await h.newRun(project.id, { outcome: "pending" });
    await h.newRun(project.id, { outcome: "failed" });
    const body = await getProject(apiKey, project.id);
    expect(body.test_runs_count).toBe(3);
    expect(Number.isInteger(body.test_runs_count)).toBe(true);
  });

  it("counts runs per project", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const a = (await h.newProject(organization.id, "a")).project;
    const b = (await h.newProject(organization.id, "b")).project;
    await h.newRun(a.id);
    await h.newRun(a.id);
    await h.newRun(b.id);
    expect((await getProject(apiKey, a.id)).test_runs_count).toBe(2);
    expect((await getProject(apiKey, b.id)).test_runs_count).toBe(1);
  });

  it("sets last_test_run_at to the arrival time of the latest run", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    h.clock.advance(60_000);
    await h.newRun(project.id);
    h.clock.advance(60_000);
    const secondArrival = now();
    await h.newRun(project.id, { outcome: "failed" });
    const body = await getProject(apiKey, project.id);
    expect(body.last_test_run_at).toBe(secondArrival);
    expectIsoUtc(body.last_test_run_at);
  });

  it("last_test_run_at is the arrival time, not the processing time", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    h.clock.advance(10_000);
    const arrival = now();
    const run = await h.newRun(project.id, { outcome: "pending" });
    expect((await getProject(apiKey, project.id)).last_test_run_at).toBe(arrival);
    h.clock.advance(45_000);
    await completeTestRun(h.storeDeps, run.id, failedReport);
    const body = await getProject(apiKey, project.id);
    expect(body.last_test_run_at).toBe(arrival);
    expect(body.latest_result).toBe("tests_failed");
    expect(body.test_runs_count).toBe(1);
  });

  it("latest_result stays null while runs are pending or failed", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    await h.newRun(project.id, { outcome: "pending" });
    expect((await getProject(apiKey, project.id)).latest_result).toBeNull();
    await h.newRun(project.id, { outcome: "failed" });
    const body = await getProject(apiKey, project.id);
    expect(body.latest_result).toBeNull();
    expect(body.test_runs_count).toBe(2);
    expect(body.last_test_run_at).not.toBeNull();
  });

  it("latest_result becomes the result once a pending run finishes processing", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const run = await h.newRun(project.id, { outcome: "pending" });
    expect((await getProject(apiKey, project.id)).latest_result).toBeNull();
    await completeTestRun(h.storeDeps, run.id, passedReport);
    expect((await getProject(apiKey, project.id)).latest_result).toBe("tests_passed");
  });

  it("latest_result follows the most recent processed run", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const sequence: [object, string][] = [
      [passedReport, "tests_passed"],
      [failedReport, "tests_failed"],
      [erroredReport, "tests_errored"],
      [passedReport, "tests_passed"],
      [erroredReport, "tests_errored"],
      [failedReport, "tests_failed"],
    ];
    for (const [report, expected] of sequence) {
      h.clock.advance(1000);
      await h.newRun(project.id, { report: report as typeof passedReport });
      expect((await getProject(apiKey, project.id)).latest_result).toBe(expected);
    }
    expect((await getProject(apiKey, project.id)).test_runs_count).toBe(sequence.length);
  });

  it("tests_errored wins over failures, tests_failed over skips and passes", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const cases: [object, string][] = [
      [{ suites: [{ name: "s", cases: [{ name: "e", status: "errored" }] }] }, "tests_errored"],
      [erroredReport, "tests_errored"],
      [
        {
          suites: [
            {
              name: "outer",
              cases: [{ name: "p", status: "passed" }],
              suites: [{ name: "inner", cases: [{ name: "e", status: "errored" }] }],
            },
          ],
        },
        "tests_errored",
      ],
      [failedReport, "tests_failed"],
      [
        {
          suites: [
            { name: "a", cases: [{ name: "p", status: "passed" }] },
            { name: "b", cases: [{ name: "f", status: "failed" }] },
          ],
        },
        "tests_failed",
      ],
      [{ suites: [{ name: "s", cases: [{ name: "k", status: "skipped" }] }] }, "tests_passed"],
      [
        {
          suites: [
            {
              name: "s",
              cases: [
                { name: "p", status: "passed" },
                { name: "k", status: "skipped" },
              ],
            },
          ],
        },
        "tests_passed",
      ],
    ];
    for (const [report, expected] of cases) {
      const { project } = await h.newProject(organization.id);
      await h.newRun(project.id, { report: report as typeof passedReport });
      expect((await getProject(apiKey, project.id)).latest_result, JSON.stringify(report)).toBe(expected);
    }
  });

  it("a report with zero test cases is tests_passed", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const empty = (await h.newProject(organization.id, "empty")).project;
    await h.newRun(empty.id, { report: { suites: [] } });
    expect((await getProject(apiKey, empty.id)).latest_result).toBe("tests_passed");

    const emptySuite = (await h.newProject(organization.id, "empty suite")).project;
    await h.newRun(emptySuite.id, { report: { suites: [{ name: "nothing", cases: [] }] } });
    expect((await getProject(apiKey, emptySuite.id)).latest_result).toBe("tests_passed");
  });

  it("a failed run does not change latest_result", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    await h.newRun(project.id, { report: failedReport });
    h.clock.advance(1000);
    const failedArrival = now();
    await h.newRun(project.id, { outcome: "failed" });
    const body = await getProject(apiKey, project.id);
    expect(body.latest_result).toBe("tests_failed");
    expect(body.test_runs_count).toBe(2);
    expect(body.last_test_run_at).toBe(failedArrival);
  });

  it("a pending run does not change latest_result", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    await h.newRun(project.id, { report: erroredReport });
    h.clock.advance(1000);
    await h.newRun(project.id, { outcome: "pending" });
    const body = await getProject(apiKey, project.id);
    expect(body.latest_result).toBe("tests_errored");
    expect(body.test_runs_count).toBe(2);
  });

  it("statistics appear identically in the list", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    await h.newRun(project.id, { report: failedReport });
    await h.newRun(project.id, { outcome: "failed" });
    const list = await h.get("/api/v1/projects", apiKey);
    expect(list.body.data[0]).toMatchObject({ id: project.id, test_runs_count: 2, latest_result: "tests_failed" });
    expect(list.body.data[0]).toEqual(await getProject(apiKey, project.id));
  });
});
