/**
 * Variants (docs/tests.md, "Variants"): an upload's `variant` is normalized and becomes part of
 * its tests' identity; the tests list filters by it; health, the comparison's base, run keys, the
 * CI quarantine list and quarantines (one variant, or all) are per variant; alert events name it;
 * runs without a variant keep the variant "". Node and workerd.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const WINDOWS = "os=windows";
const LINUX = "os=linux";

/** A report of the same three tests; `failing` names those that fail. */
const report = (failing: string[] = []) =>
  `<testsuite name="matrix">${["adds", "renders", "saves"]
    .map((name) =>
      failing.includes(name)
        ? `<testcase classname="app.Cart" name="${name}"><failure message="boom">at x</failure></testcase>`
        : `<testcase classname="app.Cart" name="${name}" time="0.01"/>`,
    )
    .join("")}</testsuite>`;

const query = (fields: Record<string, string>) => new URLSearchParams({ branch: "main", commit_sha: "c0ffee1234", ...fields }).toString();

async function newProject() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  return { apiKey, projectId: project.id as string, token: uploadToken as string };
}

async function uploaded(token: string, failing: string[], fields: Record<string, string>) {
  h.clock.advance(60_000);
  return h.uploadAndWait(token, report(failing), { query: query(fields) });
}

const testsOf = async (apiKey: string, projectId: string, filter = "") =>
  (await collectAll(h, `/api/v1/projects/${projectId}/tests?sort=name${filter}`, apiKey, 100)).items as any[];

describe("identity", () => {
  it("the variant is normalized, carried by the run and its tests, and splits a test from its siblings", async () => {
    const { apiKey, projectId, token } = await newProject();
    const windows = await uploaded(token, ["adds"], { variant: " os = windows " });
    expect(windows.variant).toBe(WINDOWS);
    const both = await uploaded(token, [], { variant: "node=22, os=windows,node=22" });
    expect(both.variant).toBe("node=22,os=windows");
    const plain = await uploaded(token, [], {});
    expect(plain.variant).toBe("");

    const all = await testsOf(apiKey, projectId);
    expect(all).toHaveLength(9);
    expect(
      all
        .filter((t) => t.name === "adds")
        .map((t) => t.variant)
        .sort(),
    ).toEqual(["", "node=22,os=windows", WINDOWS]);
    expect(new Set(all.map((t) => t.id)).size).toBe(9);

    const onWindows = await testsOf(apiKey, projectId, `&variant=${encodeURIComponent("os=windows ,")}`);
    expect(onWindows.map((t) => [t.name, t.variant, t.last_status])).toEqual([
      ["adds", WINDOWS, "failed"],
      ["renders", WINDOWS, "passed"],
      ["saves", WINDOWS, "passed"],
    ]);
    const withoutVariant = await testsOf(apiKey, projectId, "&variant=");
    expect(withoutVariant.map((t) => t.variant)).toEqual(["", "", ""]);
    expect(withoutVariant.every((t) => t.last_status === "passed")).toBe(true);
  });

  it("bad variants are a 422 naming the field, and nothing is recorded", async () => {
    const { apiKey, projectId, token } = await newProject();
    for (const variant of ["x".repeat(101), "os=linux\u0001", `${"a=1,".repeat(120)}`]) {
      const res = await h.upload(token, report(), { query: query({ variant }) });
      expect(res.status, variant).toBe(422);
      expect(res.body.error.details.map((d: any) => d.field)).toEqual(["variant"]);
    }
    expect((await h.get(`/api/v1/projects/${projectId}/test_runs`, apiKey)).body.data).toEqual([]);
    const filter = await h.get(`/api/v1/projects/${projectId}/tests?variant=${"y".repeat(101)}`, apiKey);
    expect(filter.status).toBe(400);
  });
});

describe("per variant", () => {
  it("a test that always fails on Windows and passes on Linux is broken there and healthy here, never flaky", async () => {
    const { apiKey, projectId, token } = await newProject();
    // Broken: its last 10 default-branch executions failed (docs/tests.md, "Health").
    for (let i = 0; i < 10; i++) {
      await uploaded(token, ["renders"], { variant: WINDOWS, commit_sha: `c0ffee${i}000` });
      await uploaded(token, [], { variant: LINUX, commit_sha: `c0ffee${i}000` });
    }
    const renders = (await testsOf(apiKey, projectId, "&q=renders"))
      .map((t) => [t.variant, t.health, t.failure_rate])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(renders).toEqual([
      [LINUX, "healthy", 0],
      [WINDOWS, "broken", 1],
    ]);
  });

  it("a run key names one run per variant", async () => {
    const { token } = await newProject();
    const numbers = [];
    for (const variant of [WINDOWS, LINUX]) {
      const res = await h.upload(token, report(), { query: query({ run_key: "build-9:test", shard: "1/1", variant }) });
      expect(res.status, res.text).toBe(202);
      numbers.push(res.body.number);
    }
    expect(numbers[0]).not.toBe(numbers[1]);
    const runs = await Promise.all(numbers.map((number) => h.waitForRun(token, number)));
    expect(runs.map((run) => [run.variant, run.status, run.tests_count])).toEqual([
      [WINDOWS, "processed", 3],
      [LINUX, "processed", 3],
    ]);
  });

  it("the comparison's base is the default branch's run of the same variant", async () => {
    const { apiKey, projectId, token } = await newProject();
    const baseWindows = await uploaded(token, ["adds"], { variant: WINDOWS });
    await uploaded(token, [], { variant: LINUX });
    const pr = await uploaded(token, ["adds"], { variant: WINDOWS, branch: "feature", commit_sha: "fee1dead00" });
    const comparison = await h.get(`/api/v1/projects/${projectId}/test_runs/${pr.number}/comparison`, apiKey);
    expect(comparison.body.base.number).toBe(baseWindows.number);
    expect(comparison.body.verdict_counts.failing_on_base).toBe(1);
    const linuxPr = await uploaded(token, ["adds"], { variant: LINUX, branch: "feature", commit_sha: "fee1dead00" });
    const linux = await h.get(`/api/v1/projects/${projectId}/test_runs/${linuxPr.number}/comparison`, apiKey);
    expect(linux.body.base.number).toBe(baseWindows.number + 1);
    expect(linux.body.verdict_counts.new).toBe(1);
  });

  it("the flakiness event names the variant of the run it judged", async () => {
    const { apiKey, projectId, token } = await newProject();
    for (let i = 0; i < 3; i++) {
      await uploaded(token, ["saves"], { variant: WINDOWS, commit_sha: `abc${i}000` });
      await uploaded(token, [], { variant: WINDOWS, commit_sha: `abc${i}000` });
    }
    const [saves] = await testsOf(apiKey, projectId, `&q=saves&variant=${WINDOWS}`);
    expect(saves.health).toBe("flaky");
    const alerts = (await h.get(`/api/v1/alerts?alert_type=test_flakiness`, apiKey)).body.data;
    const alert = alerts.find((a: any) => a.project_id === projectId);
    const events = (await h.get(`/api/v1/alerts/${alert.id}/events`, apiKey)).body.data;
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((event: any) => event.metadata.variant === WINDOWS)).toBe(true);
  });
});

describe("quarantine", () => {
  const list = (token: string, variant?: string, etag?: string) =>
    h.get(`/uploads/v1/quarantined_tests${variant === undefined ? "" : `?variant=${encodeURIComponent(variant)}`}`, token, {
      headers: etag ? { "if-none-match": etag } : {},
    });
  const quarantine = (apiKey: string, id: string, body: Record<string, unknown> = {}) =>
    h.post(`/api/v1/tests/${id}/quarantine`, apiKey, { reason: "known", duration: "7d", ...body });

  it("one variant's quarantine is in that variant's CI list only; each list has its own tag", async () => {
    const { apiKey, projectId, token } = await newProject();
    await uploaded(token, ["adds"], { variant: WINDOWS });
    await uploaded(token, [], { variant: LINUX });
    const [adds] = await testsOf(apiKey, projectId, `&q=adds&variant=${WINDOWS}`);
    const res = await quarantine(apiKey, adds.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.quarantine.all_variants).toBe(false);

    const windows = await list(token, " os=windows");
    expect(windows.body.data.map((t: any) => [t.test_id, t.name, t.variant, t.all_variants])).toEqual([[adds.id, "adds", WINDOWS, false]]);
    expect((await list(token, LINUX)).body.data).toEqual([]);
    expect((await list(token)).body.data).toEqual([]);
    const linuxTag = (await list(token, LINUX)).headers.get("etag")!;
    expect(windows.headers.get("etag")).not.toBe(linuxTag);
    expect((await list(token, WINDOWS, windows.headers.get("etag")!)).status).toBe(304);
    expect((await list(token, WINDOWS, linuxTag)).status).toBe(200);

    const run = await uploaded(token, ["adds"], { variant: LINUX });
    expect(run.quarantined_failures_count).toBe(0);
  });

  it("all_variants: every sibling, new variants too, and ending it on one ends it on all", async () => {
    const { apiKey, projectId, token } = await newProject();
    await uploaded(token, [], { variant: WINDOWS });
    await uploaded(token, [], { variant: LINUX });
    const [linuxAdds] = await testsOf(apiKey, projectId, `&q=adds&variant=${LINUX}`);
    const [windowsAdds] = await testsOf(apiKey, projectId, `&q=adds&variant=${WINDOWS}`);
    const res = await quarantine(apiKey, linuxAdds.id, { all_variants: true });
    expect(res.status, res.text).toBe(200);
    const sibling = (await h.get(`/api/v1/tests/${windowsAdds.id}`, apiKey)).body;
    expect(sibling.quarantine).toMatchObject({ reason: "known", all_variants: true });

    // A variant the project has never run: its list holds the quarantine, with the test's id there.
    const mac = await list(token, "os=mac");
    expect(mac.body.data.map((t: any) => [t.name, t.variant, t.all_variants])).toEqual([["adds", "os=mac", true]]);
    const macRun = await uploaded(token, ["adds"], { variant: "os=mac" });
    expect(macRun.quarantined_failures_count).toBe(1);
    const [macAdds] = await testsOf(apiKey, projectId, `&q=adds&variant=os=mac`);
    expect(macAdds.id).toBe(mac.body.data[0].test_id);

    const ended = await h.post(`/api/v1/tests/${windowsAdds.id}/unquarantine`, apiKey, {});
    expect(ended.status, ended.text).toBe(200);
    for (const id of [linuxAdds.id, windowsAdds.id]) expect((await h.get(`/api/v1/tests/${id}`, apiKey)).body.quarantined).toBe(false);
    expect((await list(token, "os=mac")).body.data).toEqual([]);
  });
});
