/**
 * A run of more cases than one chunk through the upload path: its tests are advanced in chunks
 * from its stored cases (advanceRunTestsInChunks), the next chunk read and a chunk's write done
 * while another is advanced, on each runtime's driver (node-postgres or PGlite in Node, the Neon
 * driver in workerd). Every test is advanced exactly once per run, and a failure lands on its test.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TESTS_PER_CHUNK } from "../../../src/services/tests/tests-state";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const COUNT = TESTS_PER_CHUNK * 2 + 5;
const report = (failing: number | null) =>
  `<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="many">${Array.from({ length: COUNT }, (_, i) =>
    i === failing
      ? `<testcase classname="app.Spec" name="t${i}" time="0.02"><failure message="expected 1 to be 2" type="AssertionError">stack</failure></testcase>`
      : `<testcase classname="app.Spec" name="t${i}" time="0.01"/>`,
  ).join("")}</testsuite></testsuites>`;

describe("a run larger than one chunk", () => {
  it("advances each of its tests once per run, its failure on its own test", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project, uploadToken } = await h.newProject(organization.id);
    expect((await h.uploadAndWait(uploadToken, report(null), { contentType: "application/xml" })).status).toBe("processed");
    const second = await h.uploadAndWait(uploadToken, report(COUNT - 3), { contentType: "application/xml" });
    expect(second).toMatchObject({ status: "processed", tests_count: COUNT, failed_count: 1 });

    expect((await h.get(`/api/v1/projects/${project.id}`, apiKey)).body).toMatchObject({ tests_count: COUNT });
    const failing = (await h.get(`/api/v1/projects/${project.id}/tests?q=t${COUNT - 3}`, apiKey)).body.data;
    expect(failing).toEqual([expect.objectContaining({ name: `t${COUNT - 3}`, executions_count: 2, last_status: "failed" })]);
    // `q` matches names by substring: no other name contains one of the highest numbers.
    const passing = (await h.get(`/api/v1/projects/${project.id}/tests?q=t${COUNT - 1}`, apiKey)).body.data;
    expect(passing).toEqual([expect.objectContaining({ name: `t${COUNT - 1}`, executions_count: 2, last_status: "passed" })]);
  });
});
