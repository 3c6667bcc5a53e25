/**
 * Issue 30: a test flaky by evidence on another branch (errored, then passed on a re-run of the same
 * commit on a feature branch: docs/tests.md rule 1) while every default-branch execution passed
 * reads "flaky" with 0 % failure rate, 0 % flip rate and impact 0, as the demo showed. The figures
 * and the label are both right (the figures count the default branch, health every branch), so the
 * pages show the evidence beside the label: the tests list and the test's page say where it turned
 * flaky and that the default branch saw no failure. A flaky test with failures in its window shows
 * no such line.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../support/harness";
import { WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const textOf = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");
type Status = "passed" | "failed" | "errored";
const report = (cases: [string, Status][]) => ({
  suites: [
    {
      name: "unit",
      cases: cases.map(([name, status]) => ({
        name,
        classname: "Shop",
        status,
        durationMs: 10,
        failureMessage: status === "passed" ? null : "boom",
      })),
    },
  ],
});

describe("a flaky test whose default-branch window holds no failure", () => {
  it("the tests list and its page show the evidence that made it flaky; a flaky test failing on main does not", async () => {
    const admin = new WebClient(h.app);
    const email = uniqueEmail("flaky-off-window");
    await admin.signUp({ email, organization: "Flaky Org" });
    const { organizationId } = await signedUpOrganization(h.db, email);
    const { project } = await h.newProject(organizationId, "Shop");
    const run = async (branch: string, commitSha: string, cases: [string, Status][]) => {
      h.clock.advance(60_000);
      return h.newRun(project.id, { meta: { branch, commitSha }, report: report(cases) });
    };
    await run("main", "c0", [
      ["elsewhere", "passed"],
      ["on main", "passed"],
    ]);
    await run("feature/x", "f1", [
      ["elsewhere", "errored"],
      ["on main", "passed"],
    ]);
    await run("feature/x", "f1", [
      ["elsewhere", "passed"],
      ["on main", "passed"],
    ]);
    await run("main", "c1", [
      ["elsewhere", "passed"],
      ["on main", "failed"],
    ]);
    await run("main", "c1", [
      ["elsewhere", "passed"],
      ["on main", "passed"],
    ]);

    const list = (await admin.get(`/projects/${project.id}/tests?health=flaky`)).text;
    const rows = list.split("<tr>").slice(2);
    const elsewhere = textOf(rows.find((row) => row.includes(">elsewhere<"))!);
    const onMain = textOf(rows.find((row) => row.includes(">on main<"))!);
    expect(elsewhere).toContain("Flaky");
    expect(elsewhere).toMatch(
      /Flaky since run #3 on feature\/x: passed in run #3 on commit f1, where it had failed before\. No failure on the default branch in its window\./,
    );
    // Its figures: impact 0, 0 % and 0 %, now explained beside the label.
    expect(elsewhere).toMatch(/ 0 0 % 0 % /);
    expect(onMain).toContain("Flaky");
    expect(onMain).not.toContain("Flaky since");

    const testId = /href="\/projects\/[^/]+\/tests\/([0-9a-f-]{36})">elsewhere</.exec(list)![1]!;
    const page = textOf((await admin.get(`/projects/${project.id}/tests/${testId}`)).text);
    expect(page).toContain("Flaky since run #3 on feature/x: passed in run #3 on commit f1, where it had failed before.");
    expect(page).toContain("Its figures below count the default branch only, where its window holds no failure");
  });
});
