/**
 * The run, test and alert pages' refusals (Node, in process): missing ids, bad filters and
 * cursors, invalid quarantine and snooze forms. Each is a page with a clear message, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness } from "../support/harness";
import { resultPagesFixture } from "../support/result-pages-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
let f: Awaited<ReturnType<typeof resultPagesFixture>>;
beforeAll(async () => {
  h = await createHarness();
  f = await resultPagesFixture(h);
});
afterAll(async () => h?.close());

describe("missing resources: the 404 page", () => {
  const missing = () => [
    `/projects/00000000-0000-4000-8000-000000000000/runs`,
    `/projects/not-a-uuid/runs`,
    `/projects/${f.project.id}/runs/99`,
    `/projects/${f.project.id}/runs/0`,
    `/projects/${f.project.id}/runs/abc`,
    `/projects/${f.project.id}/runs/99999999999999`,
    `/projects/00000000-0000-4000-8000-000000000000/tests`,
    `/projects/${f.project.id}/tests/00000000-0000-4000-8000-000000000000`,
    `/projects/${f.project.id}/tests/nope`,
    // A test of the organization under another project's path.
    `/projects/00000000-0000-4000-8000-000000000000/tests/${f.paysTestId}`,
    `/alerts/00000000-0000-4000-8000-000000000000`,
    `/alerts/nope`,
  ];

  it("answers 404 with the not-found page", async () => {
    for (const path of missing()) {
      const answer = await f.admin.get(path);
      expect(answer.status, path).toBe(404);
      expect(answer.text, path).toContain("<h1>Not found</h1>");
    }
  });

  it("a test of the organization under the path of another of its projects is a 404 (page and posts), the same page as a missing one", async () => {
    const { project: other } = await h.newProject(f.organizationId, "Other shop");
    const missingPage = await f.admin.get(`/projects/${f.project.id}/tests/00000000-0000-4000-8000-000000000000`);
    const page = await f.admin.get(`/projects/${other.id}/tests/${f.paysTestId}`);
    expect(page.status).toBe(404);
    expect(page.text).toBe(missingPage.text);
    for (const action of ["quarantine", "unquarantine"]) {
      expect(
        (await f.admin.post(`/projects/${other.id}/tests/${f.paysTestId}/${action}`, { duration: "1d", reason: "x" })).status,
        action,
      ).toBe(404);
    }
    expect((await f.admin.get(`/projects/${f.project.id}/tests/${f.paysTestId}`)).text).not.toContain("badge quarantined");
  });

  it("posts to missing alerts and tests are 404s too, and change nothing", async () => {
    for (const path of [
      "/alerts/00000000-0000-4000-8000-000000000000/snooze",
      "/alerts/00000000-0000-4000-8000-000000000000/disable",
      `/projects/${f.project.id}/tests/00000000-0000-4000-8000-000000000000/quarantine`,
    ]) {
      expect((await f.admin.post(path, { duration: "1h", reason: "x" })).status, path).toBe(404);
    }
  });
});

describe("bad filters and cursors: 400 pages that say why", () => {
  it.each([
    ["runs: an unknown result", (p: string) => `/projects/${p}/runs?result=green`, "result"],
    ["runs: a cursor not issued by the list", (p: string) => `/projects/${p}/runs?cursor=abc.def`, "cursor"],
    ["tests: an unknown health", (p: string) => `/projects/${p}/tests?health=sick`, "health"],
    ["tests: an unknown sort", (p: string) => `/projects/${p}/tests?sort=random`, "sort"],
    ["tests: a search of more than 255 characters", (p: string) => `/projects/${p}/tests?q=${"x".repeat(256)}`, "q"],
    ["alerts: an unknown status", () => `/alerts?status=open`, "status"],
    ["alerts: a limit of 0", () => `/alerts?limit=0`, "limit"],
  ])("%s", async (_label, pathOf, field) => {
    const answer = await f.admin.get(pathOf(f.project.id));
    expect(answer.status).toBe(400);
    expect(answer.text).toContain("Not accepted");
    expect(answer.text).toContain(field);
  });

  it("a cursor of the runs list is refused by the tests list (the cursor names its list and filters)", async () => {
    const runs = await f.admin.get(`/projects/${f.project.id}/runs?limit=1`);
    const cursor = /cursor=([^"&]+)/.exec(runs.text)![1]!;
    expect((await f.admin.get(`/projects/${f.project.id}/tests?cursor=${cursor}`)).status).toBe(400);
    // …and by the same list with other filters.
    expect((await f.admin.get(`/projects/${f.project.id}/runs?branch=other&cursor=${cursor}`)).status).toBe(400);
  });
});

describe("forms", () => {
  it("a quarantine without a reason, with a bad duration, owner or issue URL: 422, the page says why, nothing is saved", async () => {
    const path = `/projects/${f.project.id}/tests/${f.paysTestId}`;
    const answer = await f.member.post(`${path}/quarantine`, { reason: "  ", duration: "5y", owner: "not an owner", issue_url: "ftp://x" });
    expect(answer.status).toBe(422);
    expect(answer.text).toContain("The quarantine was not saved");
    expect(answer.text).toContain("reason can&#39;t be blank");
    expect(answer.text).toContain("duration must be one of 1d, 7d, 14d, 30d, 90d");
    expect(answer.text).toContain("owner must be an e-mail address or a @org/team handle");
    expect(answer.text).toContain("issue url must be an http or https URL");
    // What was typed is kept in the form.
    expect(answer.text).toContain('value="not an owner"');
    const row = await h.db.query.tests.findFirst({ where: (t, { eq }) => eq(t.id, f.paysTestId) });
    expect(row!.quarantineExpiresAt).toBeNull();
  });

  it("a snooze without a known duration: 400, the alert is not snoozed", async () => {
    const id = f.alertIds.test_flakiness!;
    for (const duration of ["", "2h", "__proto__"]) {
      const answer = await f.member.post(`/alerts/${id}/snooze`, { duration });
      expect(answer.status, duration).toBe(400);
      expect(answer.text).toContain("Choose how long to snooze: 1 hour, 4 hours, 24 hours, 1 week.");
    }
    const row = await h.db.query.alerts.findFirst({ where: (a, { eq }) => eq(a.id, id) });
    expect(row!.snoozedUntil).toBeNull();
  });

  it("unsnoozing an alert that is not snoozed and unquarantining a test that is not quarantined are harmless no-ops", async () => {
    expect((await f.member.post(`/alerts/${f.alertIds.performance_regression}/unsnooze`, {})).status).toBe(303);
    expect((await f.member.post(`/projects/${f.project.id}/tests/${f.paysTestId}/unquarantine`, {})).status).toBe(303);
  });
});
