/**
 * A run compared with its base at processing time (docs/verdicts.md): the base chosen (named
 * commit, fallback, previous default-branch run), each failure's verdict in the documented order,
 * the fixed tests, and the comparison made again when the named base commit's run arrives late.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, asc, eq } from "drizzle-orm";
import { runComparisons, runFixedTests, runVerdicts, testRuns, tests } from "../../../src/db/schema";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

type Case = { name: string; status: "passed" | "failed" | "errored" | "skipped"; message?: string; retried?: boolean };
const pass = (name: string): Case => ({ name, status: "passed" });
const fail = (name: string, message = "expected 1 to be 2"): Case => ({ name, status: "failed", message });

async function newProject() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  return { project, apiKey, uploadToken };
}

async function upload(token: string, cases: Case[], meta: { branch: string; commit_sha?: string; base_commit_sha?: string }) {
  h.clock.advance(60_000);
  const suites = [
    {
      name: "s",
      cases: cases.map((c) => ({
        name: c.name,
        classname: "C",
        status: c.status,
        failure_message: c.message ?? null,
        ...(c.retried ? { attempts: [{ status: "failed", failure_message: "flaked" }] } : {}),
      })),
    },
  ];
  const run = await h.uploadAndWait(token, { ...meta, suites });
  expect(run.status).toBe("processed");
  return run;
}

async function comparisonOf(projectId: string, number: number) {
  const [run] = await h.db
    .select()
    .from(testRuns)
    .where(and(eq(testRuns.projectId, projectId), eq(testRuns.number, number)));
  const [comparison] = await h.db.select().from(runComparisons).where(eq(runComparisons.testRunId, run!.id));
  const base = comparison?.baseRunId ? (await h.db.select().from(testRuns).where(eq(testRuns.id, comparison.baseRunId)))[0] : null;
  const verdicts = await h.db
    .select({ verdict: runVerdicts.verdict, reason: runVerdicts.reason, name: tests.name })
    .from(runVerdicts)
    .leftJoin(tests, eq(tests.id, runVerdicts.testId))
    .where(eq(runVerdicts.testRunId, run!.id))
    .orderBy(asc(runVerdicts.testCaseId));
  const fixed = await h.db
    .select({ name: tests.name })
    .from(runFixedTests)
    .leftJoin(tests, eq(tests.id, runFixedTests.testId))
    .where(eq(runFixedTests.testRunId, run!.id));
  return { run: run!, comparison: comparison!, baseNumber: base?.number ?? null, verdicts, fixed: fixed.map((f) => f.name) };
}

const sha = (c: string) => c.repeat(40);

describe("the base", () => {
  it("a default-branch run: the previous default-branch run; the first one has none", async () => {
    const { project, uploadToken } = await newProject();
    await upload(uploadToken, [pass("a")], { branch: "main", commit_sha: sha("1") });
    await upload(uploadToken, [pass("a")], { branch: "feature", commit_sha: sha("2") });
    await upload(uploadToken, [fail("a")], { branch: "main", commit_sha: sha("3") });
    const first = await comparisonOf(project.id, 1);
    expect(first.comparison).toMatchObject({ baseChoice: "none", baseRunId: null });
    expect(first.run.verdictCounts).toEqual({ quarantined: 0, infrastructure: 0, failing_on_base: 0, flaky: 0, new: 0 });
    const third = await comparisonOf(project.id, 3);
    expect(third.comparison.baseChoice).toBe("previous_default");
    expect(third.baseNumber).toBe(1);
    expect(third.verdicts).toEqual([{ verdict: "new", reason: "passed on main in run #1 (1111111)", name: "a" }]);
  });

  it("a branch run names its base commit; without one (or while it has no run), the latest default-branch run before it", async () => {
    const { project, uploadToken } = await newProject();
    await upload(uploadToken, [fail("a")], { branch: "main", commit_sha: sha("a") });
    await upload(uploadToken, [pass("a")], { branch: "main", commit_sha: sha("b") });
    await upload(uploadToken, [fail("a")], { branch: "feature", commit_sha: sha("c"), base_commit_sha: "aaaaaaa" });
    await upload(uploadToken, [fail("a")], { branch: "feature", commit_sha: sha("c") });
    const named = await comparisonOf(project.id, 3);
    expect([named.comparison.baseChoice, named.baseNumber, named.comparison.awaitedBaseCommit]).toEqual(["base_commit", 1, null]);
    expect(named.verdicts).toEqual([{ verdict: "failing_on_base", reason: "also failed on main in run #1 (aaaaaaa)", name: "a" }]);
    const fallback = await comparisonOf(project.id, 4);
    expect([fallback.comparison.baseChoice, fallback.baseNumber]).toEqual(["latest_default_before", 2]);
    expect(fallback.verdicts.map((v) => v.verdict)).toEqual(["new"]);
  });

  it("compared again when the named base commit's run is processed later (a fallback was used until then)", async () => {
    const { project, uploadToken } = await newProject();
    await upload(uploadToken, [pass("a"), pass("b")], { branch: "main", commit_sha: sha("1") });
    await upload(uploadToken, [fail("a"), pass("b")], { branch: "feature", commit_sha: sha("f"), base_commit_sha: sha("2") });
    const before = await comparisonOf(project.id, 2);
    expect([before.comparison.baseChoice, before.baseNumber, before.comparison.awaitedBaseCommit]).toEqual([
      "latest_default_before",
      1,
      sha("2"),
    ]);
    expect(before.verdicts.map((v) => v.verdict)).toEqual(["new"]);
    await upload(uploadToken, [fail("a"), fail("b")], { branch: "main", commit_sha: sha("2") });
    const after = await comparisonOf(project.id, 2);
    expect([after.comparison.baseChoice, after.baseNumber, after.comparison.awaitedBaseCommit]).toEqual(["base_commit", 3, null]);
    expect(after.verdicts).toEqual([{ verdict: "failing_on_base", reason: "also failed on main in run #3 (2222222)", name: "a" }]);
    expect(after.fixed).toEqual(["b"]);
    expect(after.run.verdictCounts).toMatchObject({ failing_on_base: 1, new: 0 });
  });

  it("a mass failure is never a base: the runs after it, and a branch naming its commit, compare with the run before it", async () => {
    const { project, uploadToken } = await newProject();
    const all = Array.from({ length: 30 }, (_, i) => `t${i}`);
    await upload(uploadToken, all.map(pass), { branch: "main", commit_sha: sha("1") });
    await upload(
      uploadToken,
      all.map((n, i) => (i < 25 ? fail(n, "ECONNREFUSED 127.0.0.1:5432") : pass(n))),
      { branch: "main", commit_sha: sha("2") },
    );
    await upload(
      uploadToken,
      all.map((n, i) => (i === 0 ? fail(n) : pass(n))),
      { branch: "main", commit_sha: sha("3") },
    );
    await upload(
      uploadToken,
      all.map((n, i) => (i === 1 ? fail(n) : pass(n))),
      { branch: "f", commit_sha: sha("4"), base_commit_sha: sha("2") },
    );
    const afterOutage = await comparisonOf(project.id, 3);
    expect([afterOutage.comparison.baseChoice, afterOutage.baseNumber, afterOutage.fixed]).toEqual(["previous_default", 1, []]);
    expect(afterOutage.verdicts).toEqual([{ verdict: "new", reason: "passed on main in run #1 (1111111)", name: "t0" }]);
    const branch = await comparisonOf(project.id, 4);
    expect([branch.comparison.baseChoice, branch.baseNumber, branch.comparison.awaitedBaseCommit]).toEqual([
      "latest_default_before",
      1,
      sha("2"),
    ]);
    expect(branch.verdicts.map((v) => v.verdict)).toEqual(["new"]);
    // A re-run of the named commit that is not a mass failure: the branch is compared again with it.
    await upload(uploadToken, all.map(pass), { branch: "main", commit_sha: sha("2") });
    const again = await comparisonOf(project.id, 4);
    expect([again.comparison.baseChoice, again.baseNumber, again.comparison.awaitedBaseCommit]).toEqual(["base_commit", 5, null]);
  });
});

describe("verdicts", () => {
  it("new, failing on base, fixed, passed on retry, flaky health, quarantined, each once, first that applies", async () => {
    const { project, apiKey, uploadToken } = await newProject();
    await upload(uploadToken, [pass("newly"), fail("already"), fail("fixes"), pass("retried"), pass("flaky"), fail("quarantined")], {
      branch: "main",
      commit_sha: sha("1"),
    });
    const rows = await h.db.select({ id: tests.id, name: tests.name }).from(tests).where(eq(tests.projectId, project.id));
    const id = (name: string) => rows.find((r) => r.name === name)!.id;
    await h.db
      .update(tests)
      .set({ health: "flaky", healthChangedAt: new Date("2026-11-30T12:00:00Z"), windowOutcomes: `${"p".repeat(34)}${"f".repeat(9)}` })
      .where(eq(tests.id, id("flaky")));
    const quarantined = await h.post(`/api/v1/tests/${id("quarantined")}/quarantine`, apiKey, { reason: "known flake", duration: "7d" });
    expect(quarantined.status).toBe(200);
    await upload(
      uploadToken,
      [fail("newly"), fail("already"), pass("fixes"), { ...pass("retried"), retried: true }, fail("flaky"), fail("quarantined")],
      { branch: "feature", commit_sha: sha("2"), base_commit_sha: sha("1") },
    );
    const { comparison, verdicts, fixed, run } = await comparisonOf(project.id, 2);
    expect(Object.fromEntries(verdicts.map((v) => [v.name, [v.verdict, v.reason]]))).toEqual({
      newly: ["new", "passed on main in run #1 (1111111)"],
      already: ["failing_on_base", "also failed on main in run #1 (1111111)"],
      retried: ["flaky", "failed, then passed on retry in this run"],
      flaky: ["flaky", "flaky since 30 Nov: 9 of its last 43 runs failed"],
      quarantined: ["quarantined", "quarantined when the run arrived: known flake"],
    });
    expect(fixed).toEqual(["fixes"]);
    expect(comparison).toMatchObject({ newCount: 1, failingOnBaseCount: 1, flakyCount: 2, quarantinedCount: 1, fixedCount: 1 });
    expect(run.verdictCounts).toEqual({ quarantined: 1, infrastructure: 0, failing_on_base: 1, flaky: 2, new: 1 });
  });

  it("a run where most tests fail with one error is infrastructure", async () => {
    const { project, uploadToken } = await newProject();
    const all = Array.from({ length: 40 }, (_, i) => `t${i}`);
    await upload(uploadToken, all.map(pass), { branch: "main", commit_sha: sha("1") });
    await upload(
      uploadToken,
      all.map((n, i) => (i < 30 ? fail(n, "ECONNREFUSED 127.0.0.1:5432") : pass(n))),
      {
        branch: "feature",
        commit_sha: sha("2"),
      },
    );
    const { comparison, verdicts } = await comparisonOf(project.id, 2);
    expect(comparison.infrastructureReason).toBe("mass failure: 30 of the run's 40 tests failed (usually 0%)");
    expect(comparison.infrastructureCount).toBe(30);
    expect(new Set(verdicts.map((v) => v.verdict))).toEqual(new Set(["infrastructure"]));
  });

  it("one cause across most failures, though a small share of the run, is infrastructure too; 19 are not", async () => {
    const { project, uploadToken } = await newProject();
    const all = Array.from({ length: 100 }, (_, i) => `t${i}`);
    await upload(uploadToken, all.map(pass), { branch: "main", commit_sha: sha("1") });
    await upload(
      uploadToken,
      all.map((n, i) => (i < 20 ? fail(n, "Timeout connecting to selenium") : pass(n))),
      { branch: "feature" },
    );
    await upload(
      uploadToken,
      all.map((n, i) => (i < 19 ? fail(n, "Timeout connecting to selenium") : pass(n))),
      { branch: "feature" },
    );
    const grouped = await comparisonOf(project.id, 2);
    expect(grouped.comparison.infrastructureReason).toMatch(/^one cause across 20 of the run's 20 failing tests: /);
    const fewer = await comparisonOf(project.id, 3);
    expect(fewer.comparison.infrastructureReason).toBeNull();
    expect(fewer.comparison.newCount).toBe(19);
    // Scoped to this project: its runs' comparisons only.
    const count = await h.db.$count(runComparisons, eq(runComparisons.projectId, project.id));
    expect(count).toBe(3);
  });

  it("a burst on the default branch (many tests at once, far above usual) is infrastructure; the same on a branch is new", async () => {
    const { project, uploadToken } = await newProject();
    const all = Array.from({ length: 100 }, (_, i) => `t${i}`);
    const burst = all.map((n, i) => (i < 12 ? fail(n, `assertion ${i} failed`) : pass(n)));
    await upload(uploadToken, all.map(pass), { branch: "main", commit_sha: sha("1") });
    await upload(uploadToken, burst, { branch: "main", commit_sha: sha("2") });
    await upload(uploadToken, burst, { branch: "feature", commit_sha: sha("3") });
    await upload(
      uploadToken,
      all.map((n, i) => (i < 9 ? fail(n, `assertion ${i} failed`) : pass(n))),
      { branch: "main", commit_sha: sha("4") },
    );
    const onMain = await comparisonOf(project.id, 2);
    expect(onMain.comparison.infrastructureReason).toBe(
      "burst on the default branch: 12 of the run's 100 tests failed at once (usually 0%)",
    );
    expect(onMain.comparison.infrastructureCount).toBe(12);
    // The burst run is no base: the branch compares with run #1 and its failures are its own.
    const onBranch = await comparisonOf(project.id, 3);
    expect(onBranch.comparison.infrastructureReason).toBeNull();
    expect(onBranch.comparison.baseRunId).toBe(onMain.comparison.baseRunId);
    expect(onBranch.comparison.newCount).toBe(12);
    // 9 failing tests are fewer than 10: the run's failures are judged one by one.
    const fewer = await comparisonOf(project.id, 4);
    expect(fewer.comparison.infrastructureReason).toBeNull();
    expect(fewer.comparison.newCount).toBe(9);
  });
});
