/**
 * test_cases has no foreign key to test_runs (for insert speed); a statement-level trigger keeps
 * ON DELETE CASCADE's meaning. Deleting a run, or its project, deletes its cases and nothing else.
 * Whatever deletes cases, another trigger takes them off their project's `stored_cases_count` (what
 * QUOTA_STORED_CASES caps: drizzle/0027_stored_cases_quota.sql) in the same transaction.
 */
import { eq, inArray, sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { organizations, projects, testCases, testRuns } from "../../src/db/schema";
import { type Harness, createHarness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const report = {
  suites: [
    {
      name: "s",
      cases: [
        { name: "a", status: "passed" as const },
        { name: "b", status: "failed" as const },
      ],
    },
  ],
};

it("deleting runs or their project deletes their cases, and only theirs", async () => {
  const { organization } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  const { project: other } = await h.newProject(organization.id, "Other");
  const kept = await h.newRun(other.id, { report });
  const first = await h.newRun(project.id, { report });
  const second = await h.newRun(project.id, { report });
  const casesOf = async (ids: number[]) =>
    (await h.db.select({ id: testCases.id }).from(testCases).where(inArray(testCases.testRunId, ids))).length;
  expect(await casesOf([first.id, second.id, kept.id])).toBe(6);

  await h.db.delete(testRuns).where(eq(testRuns.id, first.id));
  expect(await casesOf([first.id])).toBe(0);
  expect(await casesOf([second.id, kept.id])).toBe(4);

  await h.db.delete(projects).where(eq(projects.id, project.id));
  expect(await casesOf([second.id])).toBe(0);
  expect(await casesOf([kept.id])).toBe(2);
});

it("the projects' stored-case counters follow every deletion of cases: a run, cases alone, a project, an organization", async () => {
  const { organization } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  const { project: other } = await h.newProject(organization.id, "Other");
  await h.newRun(other.id, { report });
  const first = await h.newRun(project.id, { report });
  const second = await h.newRun(project.id, { report });
  const third = await h.newRun(project.id, { report });
  /** Each project's counter, and its cases' rows. */
  const stored = async (projectId: string) => {
    const [row] = await h.db.select({ counted: projects.storedCasesCount }).from(projects).where(eq(projects.id, projectId));
    const rows = (await h.db.select({ id: testCases.id }).from(testCases).where(eq(testCases.projectId, projectId))).length;
    return { counted: row?.counted ?? null, rows };
  };
  expect(await stored(project.id)).toEqual({ counted: 6, rows: 6 });

  await h.db.delete(testRuns).where(eq(testRuns.id, first.id));
  expect(await stored(project.id)).toEqual({ counted: 4, rows: 4 });

  // Cases deleted without their run (one statement, cases of two runs).
  await h.db.execute(sql`delete from test_cases where test_run_id in (${second.id}, ${third.id}) and name = 'a'`);
  expect(await stored(project.id)).toEqual({ counted: 2, rows: 2 });

  // A deletion that rolls back takes nothing off.
  await expect(
    h.db.transaction(async (tx) => {
      await tx.delete(testRuns).where(eq(testRuns.id, second.id));
      throw new Error("rolled back");
    }),
  ).rejects.toThrow("rolled back");
  expect(await stored(project.id)).toEqual({ counted: 2, rows: 2 });

  // The project's deletion takes its cases and leaves the other project's counter as it was.
  await h.db.delete(projects).where(eq(projects.id, project.id));
  expect(await stored(project.id)).toEqual({ counted: null, rows: 0 });
  expect(await stored(other.id)).toEqual({ counted: 2, rows: 2 });

  // The organization's deletion takes everything, its last project included.
  await h.db.delete(organizations).where(eq(organizations.id, organization.id));
  expect(await stored(other.id)).toEqual({ counted: null, rows: 0 });
});
