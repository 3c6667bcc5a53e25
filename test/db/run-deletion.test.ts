/**
 * test_cases has no foreign key to test_runs (for insert speed); a statement-level trigger keeps
 * ON DELETE CASCADE's meaning. Deleting a run, or its project, deletes its cases and nothing else.
 */
import { eq, inArray } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { projects, testCases, testRuns } from "../../src/db/schema";
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
