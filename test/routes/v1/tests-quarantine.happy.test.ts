/**
 * Quarantine (/api/v1, docs/quarantine.md): quarantining and unquarantining a test, the test's
 * `quarantined` and `quarantine`, expiry at read time, the `quarantined` filter of the tests list,
 * and what run processing does with a quarantined test's cases. Happy paths; what is refused is in
 * tests-quarantine.errors.test.ts, the CI's list in test/routes/uploads/quarantined-tests.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Report } from "../../../src/services/runs/test-runs";
import { type Harness, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const DAY = 86_400_000;

type CaseSpec = { name: string; status?: "passed" | "failed" | "errored" | "skipped" };
const report = (cases: CaseSpec[]): Report => ({
  suites: [
    {
      name: "suite",
      cases: cases.map((c) => ({
        name: c.name,
        classname: "pkg.Tests",
        status: c.status ?? "passed",
        durationMs: 10,
        failureMessage: c.status === "failed" ? "boom" : null,
      })),
    },
  ],
});

async function run(projectId: string, cases: CaseSpec[]) {
  h.clock.advance(60_000);
  return h.newRun(projectId, { meta: { branch: "main", commitSha: `sha-${Math.random().toString(16).slice(2)}` }, report: report(cases) });
}

/** A project with the named tests (one passing run), their ids by name. */
async function projectWithTests(names: string[]) {
  const { organization, apiKey } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  await run(
    project.id,
    names.map((name) => ({ name })),
  );
  const list = (await h.get(`/api/v1/projects/${project.id}/tests?sort=name&limit=100`, apiKey)).body.data;
  const ids = Object.fromEntries(list.map((t: any) => [t.name, t.id])) as Record<string, string>;
  return { apiKey, projectId: project.id as string, ids };
}

const quarantine = (apiKey: string, testId: string, body: unknown) => h.post(`/api/v1/tests/${testId}/quarantine`, apiKey, body);
const iso = (ms: number) => new Date(ms).toISOString();

describe("POST /tests/:id/quarantine", () => {
  it("with a duration: the test is quarantined from now for that long, and reads so everywhere", async () => {
    const { apiKey, projectId, ids } = await projectWithTests(["a", "b"]);
    const now = h.clock.now().getTime();
    const res = await quarantine(apiKey, ids.a!, {
      reason: "Times out on ARM runners",
      duration: "7d",
      owner: "@acme/checkout",
      issue_url: "https://github.com/acme/shop/issues/42",
    });
    expect(res.status, res.text).toBe(200);
    // Who: the request's API key, named as it was (docs/quarantine.md, "Who quarantined it").
    const key = (await h.get("/api/v1/organization", apiKey)).body.api_key;
    const expected = {
      quarantined: true,
      quarantine: {
        reason: "Times out on ARM runners",
        owner: "@acme/checkout",
        issue_url: "https://github.com/acme/shop/issues/42",
        created_at: iso(now),
        expires_at: iso(now + 7 * DAY),
        source: "manual",
        all_variants: false,
        quarantined_by: { via: "api", id: key.id, name: key.name, email: null },
      },
    };
    expect(res.body).toMatchObject({ id: ids.a, name: "a", ...expected });
    expect((await h.get(`/api/v1/tests/${ids.a}`, apiKey)).body).toEqual(res.body);
    const listed = (await h.get(`/api/v1/projects/${projectId}/tests?sort=name`, apiKey)).body.data;
    expect(listed.map((t: any) => [t.name, t.quarantined, t.quarantine])).toEqual([
      ["a", true, expected.quarantine],
      ["b", false, null],
    ]);
  });

  it("every duration; an expires_at with an offset is kept to the millisecond, in UTC; up to exactly 90 days ahead", async () => {
    const { apiKey, ids } = await projectWithTests(["a"]);
    const now = h.clock.now().getTime();
    for (const [duration, days] of [
      ["1d", 1],
      ["7d", 7],
      ["14d", 14],
      ["30d", 30],
      ["90d", 90],
    ] as const) {
      const res = await quarantine(apiKey, ids.a!, { reason: "r", duration });
      expect(res.status, res.text).toBe(200);
      expect(res.body.quarantine.expires_at).toBe(iso(now + days * DAY));
    }
    const withOffset = await quarantine(apiKey, ids.a!, { reason: "r", expires_at: "2099-01-01T02:00:00.1234+02:00" });
    // 2099 is more than 90 days ahead: the offset form is read, then refused on the rule, not the shape.
    expect(withOffset.status).toBe(422);
    const target = new Date(now + 3 * DAY + 123);
    const offset = `${new Date(target.getTime() + 2 * 3_600_000).toISOString().slice(0, 23)}+02:00`;
    const ok = await quarantine(apiKey, ids.a!, { reason: "r", expires_at: offset });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.quarantine.expires_at).toBe(target.toISOString());
    const furthest = await quarantine(apiKey, ids.a!, { reason: "r", expires_at: iso(now + 90 * DAY) });
    expect(furthest.status, furthest.text).toBe(200);
    expect(furthest.body.quarantine.expires_at).toBe(iso(now + 90 * DAY));
  });

  it("null is the same as absent: owner, issue_url and the unused one of expires_at and duration", async () => {
    const { apiKey, ids } = await projectWithTests(["a"]);
    const now = h.clock.now().getTime();
    const res = await quarantine(apiKey, ids.a!, { reason: "r", duration: "1d", expires_at: null, owner: null, issue_url: null });
    expect(res.status, res.text).toBe(200);
    expect(res.body.quarantine).toEqual({
      reason: "r",
      owner: null,
      issue_url: null,
      created_at: iso(now),
      expires_at: iso(now + DAY),
      source: "manual",
      all_variants: false,
      quarantined_by: expect.objectContaining({ via: "api" }),
    });
    const byDate = await quarantine(apiKey, ids.a!, { reason: "r", duration: null, expires_at: iso(now + 2 * DAY) });
    expect(byDate.status, byDate.text).toBe(200);
    expect(byDate.body.quarantine.expires_at).toBe(iso(now + 2 * DAY));
  });

  it("owners: an e-mail address or a @org/team handle", async () => {
    const { apiKey, ids } = await projectWithTests(["a"]);
    for (const owner of ["dev@example.com", "first.last+ci@sub.example.co.uk", "@acme/checkout", "@Acme-Inc/team.core_2"]) {
      const res = await quarantine(apiKey, ids.a!, { reason: "r", duration: "1d", owner });
      expect(res.status, `${owner}: ${res.text}`).toBe(200);
      expect(res.body.quarantine.owner).toBe(owner);
    }
  });

  it("quarantining a quarantined test replaces its quarantine whole", async () => {
    const { apiKey, ids } = await projectWithTests(["a"]);
    const first = await quarantine(apiKey, ids.a!, {
      reason: "first",
      duration: "30d",
      owner: "dev@example.com",
      issue_url: "http://issues.example.com/1",
    });
    expect(first.status).toBe(200);
    h.clock.advance(3_600_000);
    const now = h.clock.now().getTime();
    const second = await quarantine(apiKey, ids.a!, { reason: "second", duration: "1d" });
    expect(second.status).toBe(200);
    // Nothing of the first is kept: no owner, no issue, a new start and a shorter end.
    expect(second.body.quarantine).toEqual({
      reason: "second",
      owner: null,
      issue_url: null,
      created_at: iso(now),
      expires_at: iso(now + DAY),
      source: "manual",
      all_variants: false,
      quarantined_by: expect.objectContaining({ via: "api" }),
    });
  });
});

describe("expiry", () => {
  it("a quarantine ends by itself at expires_at, judged at read time; a new one can follow", async () => {
    const { apiKey, projectId, ids } = await projectWithTests(["a"]);
    const res = await quarantine(apiKey, ids.a!, { reason: "r", duration: "1d" });
    const expiresAt = new Date(res.body.quarantine.expires_at).getTime();

    h.clock.set(expiresAt - 1);
    expect((await h.get(`/api/v1/tests/${ids.a}`, apiKey)).body.quarantined).toBe(true);
    h.clock.set(expiresAt);
    const expired = (await h.get(`/api/v1/tests/${ids.a}`, apiKey)).body;
    expect(expired).toMatchObject({ quarantined: false, quarantine: null });
    expect((await h.get(`/api/v1/projects/${projectId}/tests?quarantined=true`, apiKey)).body.data).toEqual([]);

    const again = await quarantine(apiKey, ids.a!, { reason: "again", duration: "1d" });
    expect(again.body).toMatchObject({ quarantined: true, quarantine: { reason: "again" } });
  });
});

describe("POST /tests/:id/unquarantine", () => {
  it("ends the quarantine now; a test that is not quarantined is returned unchanged", async () => {
    const { apiKey, ids } = await projectWithTests(["a", "b"]);
    await quarantine(apiKey, ids.a!, { reason: "r", duration: "7d" });
    const ended = await h.post(`/api/v1/tests/${ids.a}/unquarantine`, apiKey);
    expect(ended.status, ended.text).toBe(200);
    expect(ended.body).toMatchObject({ id: ids.a, quarantined: false, quarantine: null });
    const again = await h.post(`/api/v1/tests/${ids.a}/unquarantine`, apiKey);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(ended.body);
    const never = await h.post(`/api/v1/tests/${ids.b}/unquarantine`, apiKey);
    expect(never.status).toBe(200);
    expect(never.body).toEqual((await h.get(`/api/v1/tests/${ids.b}`, apiKey)).body);
  });

  it("an expired quarantine: unchanged too", async () => {
    const { apiKey, ids } = await projectWithTests(["a"]);
    await quarantine(apiKey, ids.a!, { reason: "r", duration: "1d" });
    h.clock.advance(DAY);
    const res = await h.post(`/api/v1/tests/${ids.a}/unquarantine`, apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ quarantined: false, quarantine: null });
  });
});

describe("GET /projects/:id/tests?quarantined=", () => {
  it("true: the tests quarantined now; false: the others (expired quarantines included); walked with cursors, each once", async () => {
    const names = ["t1", "t2", "t3", "t4", "t5", "t6"];
    const { apiKey, projectId, ids } = await projectWithTests(names);
    await quarantine(apiKey, ids.t1!, { reason: "r", duration: "7d" });
    await quarantine(apiKey, ids.t3!, { reason: "r", duration: "7d" });
    await quarantine(apiKey, ids.t5!, { reason: "r", duration: "1d" });
    await quarantine(apiKey, ids.t6!, { reason: "r", duration: "1d" });
    await h.post(`/api/v1/tests/${ids.t6}/unquarantine`, apiKey);

    const names_ = (items: any[]) => items.map((t) => t.name).sort();
    const path = (query: string) => `/api/v1/projects/${projectId}/tests?${query}`;
    for (const sort of ["impact", "name", "failure_rate", "duration", "last_failed"]) {
      expect(names_((await collectAll(h, path(`quarantined=true&sort=${sort}`), apiKey, 1)).items), sort).toEqual(["t1", "t3", "t5"]);
      expect(names_((await collectAll(h, path(`quarantined=false&sort=${sort}`), apiKey, 1)).items), sort).toEqual(["t2", "t4", "t6"]);
    }
    expect(names_((await collectAll(h, path("sort=name"), apiKey, 2)).items)).toEqual(names);

    h.clock.advance(DAY);
    expect(names_((await collectAll(h, path("quarantined=true"), apiKey, 2)).items)).toEqual(["t1", "t3"]);
    expect(names_((await collectAll(h, path("quarantined=false"), apiKey, 2)).items)).toEqual(["t2", "t4", "t5", "t6"]);
    // Combined with the other filters.
    expect(names_((await h.get(path("quarantined=true&q=t3&health=healthy"), apiKey)).body.data)).toEqual(["t3"]);
  });
});

describe("run processing", () => {
  it("cases of a test quarantined when their run is processed say so; the run counts their failures apart; history and health keep them", async () => {
    const { apiKey, projectId, ids } = await projectWithTests(["q", "ok", "broken"]);
    await quarantine(apiKey, ids.q!, { reason: "r", duration: "1d" });
    const processed = await run(projectId, [{ name: "q", status: "failed" }, { name: "ok" }, { name: "broken", status: "errored" }]);
    const runBody = (await h.get(`/api/v1/projects/${projectId}/test_runs/${processed.number}`, apiKey)).body;
    // The result keeps the spec's rule: every failure counts in it.
    expect(runBody).toMatchObject({ result: "tests_errored", failed_count: 1, errored_count: 1, quarantined_failures_count: 1 });
    const cases = (await h.get(`/api/v1/projects/${projectId}/test_runs/${processed.number}/test_suites/1/test_cases`, apiKey)).body.data;
    expect(Object.fromEntries(cases.map((c: any) => [c.name, c.quarantined]))).toEqual({ q: true, ok: false, broken: false });

    // The failure is in the test's history and rates.
    const q = (await h.get(`/api/v1/tests/${ids.q}`, apiKey)).body;
    expect(q).toMatchObject({ last_status: "failed", impact: 1, failure_rate: 0.5, quarantined: true });
    expect(q.last_failed_at).not.toBeNull();
    const executions = (await h.get(`/api/v1/tests/${ids.q}/executions`, apiKey)).body.data;
    expect(executions.map((e: any) => [e.status, e.quarantined])).toEqual([
      ["failed", true],
      ["passed", false],
    ]);

    // An errored quarantined case counts too; a passing one is flagged but not counted.
    await quarantine(apiKey, ids.broken!, { reason: "r", duration: "1d" });
    const second = await run(projectId, [
      { name: "q", status: "passed" },
      { name: "broken", status: "errored" },
    ]);
    expect((await h.get(`/api/v1/projects/${projectId}/test_runs/${second.number}`, apiKey)).body.quarantined_failures_count).toBe(1);

    // After the quarantine ends, cases are no longer flagged; the earlier ones keep their flag.
    h.clock.advance(DAY);
    const later = await run(projectId, [{ name: "q", status: "failed" }]);
    expect((await h.get(`/api/v1/projects/${projectId}/test_runs/${later.number}`, apiKey)).body).toMatchObject({
      result: "tests_failed",
      quarantined_failures_count: 0,
    });
    const latest = (await h.get(`/api/v1/tests/${ids.q}/executions`, apiKey)).body.data;
    expect(latest.map((e: any) => e.quarantined)).toEqual([false, true, true, false]);
  });
});
