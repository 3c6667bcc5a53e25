/**
 * Auto-quarantine (docs/quarantine.md), end to end through uploads, processing and the checks: a
 * project with `auto_quarantine_days` quarantines a test that turns flaky, by run processing's
 * health rule (a pass and a failure on one commit) or by the flakiness check's flag (a test
 * alternating over many commits), with source `auto`, a reason naming the run and the evidence,
 * and an end that many days from the run's processing. The run keeps its flakiness event; the CI
 * list's ETag changes. Broken tests, tests already quarantined and projects with the setting off
 * are left alone. Node only: it waits for the checks on the in-process queue.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness } from "../../support/harness";
import { uploadMainRun } from "../../support/upload-main-run";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const DAY = 86_400_000;
type Status = "passed" | "failed";
type CaseSpec = { name: string; status: Status };

async function newProject(autoQuarantineDays: number | null) {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken, alertIds } = await h.newProject(organization.id);
  if (autoQuarantineDays !== null) {
    const set = await h.admin("PATCH", `/projects/${project.id}/check_settings`, { auto_quarantine_days: autoQuarantineDays });
    expect(set.status).toBe(200);
  }
  return { projectId: project.id as string, apiKey, uploadToken, alertIds };
}

const upload = (uploadToken: string, cases: CaseSpec[], commit: string) => uploadMainRun(h, uploadToken, cases, commit);

const stable = (count: number): CaseSpec[] => Array.from({ length: count }, (_, i) => ({ name: `stable_${i}`, status: "passed" }));
const testNamed = async (apiKey: string, projectId: string, name: string) =>
  (await h.get(`/api/v1/projects/${projectId}/tests?q=${name}`, apiKey)).body.data.find((t: any) => t.name === name);
const ciList = (uploadToken: string) => h.get("/uploads/v1/quarantined_tests", uploadToken);
const eventsOf = async (apiKey: string, alertId: string) =>
  (await h.get(`/api/v1/alerts/${alertId}/events?limit=100`, apiKey)).body.data as any[];

/** A pass, then a failure on the same commit: run processing's own rule turns the test flaky at run 3. */
async function sameCommitFlake(uploadToken: string) {
  await upload(uploadToken, [...stable(5), { name: "wobbles", status: "passed" }], "c0000001");
  await upload(uploadToken, [...stable(5), { name: "wobbles", status: "passed" }], "c0000002");
  return upload(uploadToken, [...stable(5), { name: "wobbles", status: "failed" }], "c0000002");
}

describe("from run processing's health rule", () => {
  it("quarantines the test with source auto, a reason naming the run and the evidence, an end N days from the run's processing", async () => {
    const { projectId, apiKey, uploadToken } = await newProject(14);
    const before = await ciList(uploadToken);
    expect(before.body.data).toEqual([]);
    const run = await sameCommitFlake(uploadToken);

    const test = await testNamed(apiKey, projectId, "wobbles");
    expect(test).toMatchObject({ health: "flaky", quarantined: true });
    expect(test.quarantine).toMatchObject({ source: "auto", owner: null, issue_url: null });
    expect(test.quarantine.reason).toContain(`run #${run.number}`);
    expect(test.quarantine.reason).toContain("where it had passed before");
    expect(Date.parse(test.quarantine.expires_at)).toBe(Date.parse(run.processed_at) + 14 * DAY);
    const transitions = (await h.get(`/api/v1/tests/${test.id}/health_transitions`, apiKey)).body.data;
    expect(transitions.at(-1)).toMatchObject({ to: "flaky", test_run: { number: run.number } });

    // The CI list has it, under a new ETag.
    const after = await ciList(uploadToken);
    expect(after.body.data.map((q: any) => q.test_id)).toEqual([test.id]);
    expect(after.headers.get("etag")).not.toBe(before.headers.get("etag"));
    // Its cases of that run were processed before it was quarantined: not flagged, counted as usual.
    expect(run.quarantined_failures_count).toBe(0);
  });

  it("the run that made it flaky keeps its flakiness event; later runs record none for it", async () => {
    const { projectId, apiKey, uploadToken, alertIds } = await newProject(7);
    const run = await sameCommitFlake(uploadToken);
    const test = await testNamed(apiKey, projectId, "wobbles");
    expect(test.quarantined).toBe(true);
    const named = (await eventsOf(apiKey, alertIds.test_flakiness!)).filter((e) => e.metadata.test_id === test.id);
    expect(named.map((e) => e.test_run.number)).toEqual([run.number]);
    // Its next failure is a quarantined one, known: counted apart, no new event.
    const next = await upload(uploadToken, [...stable(5), { name: "wobbles", status: "failed" }], "c0000003");
    expect(next.quarantined_failures_count).toBe(1);
    expect((await eventsOf(apiKey, alertIds.test_flakiness!)).filter((e) => e.metadata.test_id === test.id)).toHaveLength(1);
  });

  it("is off by default: the same history quarantines nothing", async () => {
    const { projectId, apiKey, uploadToken } = await newProject(null);
    const settings = await h.admin("PATCH", `/projects/${projectId}/check_settings`, { default_branch: null });
    expect(settings.body.auto_quarantine_days).toBeNull();
    await sameCommitFlake(uploadToken);
    expect(await testNamed(apiKey, projectId, "wobbles")).toMatchObject({ health: "flaky", quarantined: false, quarantine: null });
  });

  it("null turns it off again", async () => {
    const { projectId, apiKey, uploadToken } = await newProject(7);
    expect(
      (await h.admin("PATCH", `/projects/${projectId}/check_settings`, { auto_quarantine_days: null })).body.auto_quarantine_days,
    ).toBeNull();
    await sameCommitFlake(uploadToken);
    expect(await testNamed(apiKey, projectId, "wobbles")).toMatchObject({ health: "flaky", quarantined: false });
  });

  it("a test quarantined by hand keeps its quarantine", async () => {
    const { projectId, apiKey, uploadToken } = await newProject(30);
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "passed" }], "c0000001");
    const id = (await testNamed(apiKey, projectId, "wobbles")).id;
    const manual = await h.post(`/api/v1/tests/${id}/quarantine`, apiKey, { reason: "on it", duration: "1d", owner: "@shop/checkout" });
    expect(manual.status).toBe(200);
    const etag = (await ciList(uploadToken)).headers.get("etag");
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "passed" }], "c0000002");
    await upload(uploadToken, [...stable(5), { name: "wobbles", status: "failed" }], "c0000002");
    const test = await testNamed(apiKey, projectId, "wobbles");
    expect(test.health).toBe("flaky");
    expect(test.quarantine).toEqual(manual.body.quarantine);
    expect((await ciList(uploadToken)).headers.get("etag")).toBe(etag);
  });

  it("a test that turns broken is never auto-quarantined", async () => {
    const { projectId, apiKey, uploadToken } = await newProject(14);
    await upload(uploadToken, [...stable(5), { name: "breaks", status: "passed" }], "b0");
    for (let i = 1; i <= 10; i++) await upload(uploadToken, [...stable(5), { name: "breaks", status: "failed" }], `b${i}`);
    expect(await testNamed(apiKey, projectId, "breaks")).toMatchObject({ health: "broken", quarantined: false });
    // A broken test that then passes and fails on one commit turns flaky from broken: still not quarantined.
    await upload(uploadToken, [...stable(5), { name: "breaks", status: "passed" }], "b10");
    const after = await testNamed(apiKey, projectId, "breaks");
    expect(after).toMatchObject({ health: "flaky", quarantined: false });
    expect((await ciList(uploadToken)).body.data).toEqual([]);
  });
});

describe("from the flakiness check's flag", () => {
  it("a test alternating over 26 commits is quarantined at the run the check flags it, and that run keeps its event", async () => {
    const { projectId, apiKey, uploadToken, alertIds } = await newProject(3);
    const caseOf = (i: number): CaseSpec[] => [...stable(5), { name: "alternates", status: i % 2 === 0 ? "passed" : "failed" }];
    let etag: string | null = null;
    for (let i = 0; i < 26; i++) {
      await upload(uploadToken, caseOf(i), `alt${String(i).padStart(5, "0")}`);
      const test = await testNamed(apiKey, projectId, "alternates");
      if (!test.quarantined) etag = (await ciList(uploadToken)).headers.get("etag");
    }
    const test = await testNamed(apiKey, projectId, "alternates");
    expect(test).toMatchObject({ health: "flaky", quarantined: true, quarantine: { source: "auto" } });
    const transition = (await h.get(`/api/v1/tests/${test.id}/health_transitions`, apiKey)).body.data.at(-1);
    expect(transition.reason).toContain("flakiness check");
    const number = transition.test_run.number as number;
    expect(test.quarantine.reason).toContain(`run #${number}`);
    expect(test.quarantine.reason).toContain("flakiness check");
    const run = (await h.get(`/api/v1/projects/${projectId}/test_runs/${number}`, apiKey)).body;
    expect(Date.parse(test.quarantine.expires_at)).toBe(Date.parse(run.processed_at) + 3 * DAY);
    const named = (await eventsOf(apiKey, alertIds.test_flakiness!)).filter((e) => e.metadata.test_id === test.id);
    expect(named.map((e) => e.test_run.number)).toEqual([number]);
    expect((await ciList(uploadToken)).headers.get("etag")).not.toBe(etag);
  });
});
