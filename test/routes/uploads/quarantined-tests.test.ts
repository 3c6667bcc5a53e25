/**
 * GET /uploads/v1/quarantined_tests: the list CI reads with the project's upload token
 * (docs/quarantine.md): the quarantines in force now, an ETag that changes whenever the list does
 * (a quarantine ending by itself included), 304 on If-None-Match; an API key is a 401 there.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const DAY = 86_400_000;
const PATH = "/uploads/v1/quarantined_tests";

async function projectWithTests() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  const cases = [
    { name: "adds", classname: "pkg.Math", status: "passed" as const },
    { name: "divides", classname: "pkg.Math", status: "passed" as const },
    { name: "renders", classname: null, file: "ui/button.test.tsx", status: "passed" as const },
  ];
  h.clock.advance(60_000);
  await h.newRun(project.id, { meta: { branch: "main" }, report: { suites: [{ name: "s", cases }] } });
  const tests = (await h.get(`/api/v1/projects/${project.id}/tests?sort=name`, apiKey)).body.data;
  const ids = Object.fromEntries(tests.map((t: any) => [t.name, t.id])) as Record<string, string>;
  return { apiKey, uploadToken, projectId: project.id as string, ids };
}

const quarantine = (apiKey: string, id: string, body: Record<string, unknown> = {}) =>
  h.post(`/api/v1/tests/${id}/quarantine`, apiKey, { reason: "known", duration: "7d", ...body });
const list = (token: string | null, etag?: string) => h.get(PATH, token, etag ? { headers: { "if-none-match": etag } } : {});

describe("the list", () => {
  it("the quarantines in force, with what CI matches on; no other project's", async () => {
    const mine = await projectWithTests();
    const other = await projectWithTests();
    expect((await list(mine.uploadToken)).body).toEqual({ data: [] });

    const now = h.clock.now().getTime();
    await quarantine(mine.apiKey, mine.ids.adds!, { reason: "Flaky on CI", owner: "@acme/math", issue_url: "https://example.com/1" });
    await quarantine(mine.apiKey, mine.ids.renders!, { reason: "Snapshot drift", duration: "1d" });
    await quarantine(other.apiKey, other.ids.divides!);

    const res = await list(mine.uploadToken);
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      data: [
        {
          test_id: mine.ids.renders,
          classname: null,
          name: "renders",
          file: "ui/button.test.tsx",
          variant: "",
          all_variants: false,
          reason: "Snapshot drift",
          expires_at: new Date(now + DAY).toISOString(),
        },
        {
          test_id: mine.ids.adds,
          classname: "pkg.Math",
          name: "adds",
          file: null,
          variant: "",
          all_variants: false,
          reason: "Flaky on CI",
          expires_at: new Date(now + 7 * DAY).toISOString(),
        },
      ],
    });
    expect((await list(other.uploadToken)).body.data.map((t: any) => t.test_id)).toEqual([other.ids.divides]);
  });
});

describe("ETag and If-None-Match", () => {
  it("304 with the ETag and no body while the list is unchanged; a new tag on quarantine, replacement, unquarantine and expiry", async () => {
    const { apiKey, uploadToken, ids } = await projectWithTests();
    const tags = new Set<string>();
    /** Reads the list, checks the 304 round trip, and returns the tag. */
    async function tag() {
      const full = await list(uploadToken);
      expect(full.status).toBe(200);
      const etag = full.headers.get("etag")!;
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(full.headers.get("cache-control")).toBe("private, no-cache");
      const again = await list(uploadToken, etag);
      expect(again.status).toBe(304);
      expect(again.text).toBe("");
      expect(again.headers.get("etag")).toBe(etag);
      return { etag, data: full.body.data as any[] };
    }

    const empty = await tag();
    tags.add(empty.etag);
    // Reading changes nothing.
    expect((await tag()).etag).toBe(empty.etag);

    await quarantine(apiKey, ids.adds!, { duration: "1d" });
    const one = await tag();
    expect(one.data).toHaveLength(1);
    expect((await list(uploadToken, empty.etag)).status).toBe(200);
    tags.add(one.etag);

    await quarantine(apiKey, ids.divides!, { duration: "7d" });
    const two = await tag();
    tags.add(two.etag);

    // A replacement changes the list (its reason, its end): a new tag.
    await quarantine(apiKey, ids.divides!, { reason: "still known", duration: "7d" });
    const replaced = await tag();
    expect(replaced.data.find((t) => t.name === "divides").reason).toBe("still known");
    tags.add(replaced.etag);

    // An unquarantine of a test that is not quarantined changes nothing.
    await h.post(`/api/v1/tests/${ids.renders}/unquarantine`, apiKey);
    expect((await list(uploadToken, replaced.etag)).status).toBe(304);

    // Expiry: one second before, the same list; at the end, a new one without it.
    h.clock.advance(DAY - 61_000);
    expect((await list(uploadToken, replaced.etag)).status).toBe(304);
    h.clock.advance(61_000);
    const expired = await tag();
    expect(expired.data.map((t) => t.name)).toEqual(["divides"]);
    tags.add(expired.etag);
    expect((await list(uploadToken, replaced.etag)).status).toBe(200);
    // Time passing without another expiry keeps the tag.
    h.clock.advance(DAY);
    expect((await list(uploadToken, expired.etag)).status).toBe(304);

    await h.post(`/api/v1/tests/${ids.divides}/unquarantine`, apiKey);
    const none = await tag();
    expect(none.data).toEqual([]);
    tags.add(none.etag);

    // Every list had its own tag, the two empty ones included.
    expect(tags.size).toBe(6);
  });

  it("If-None-Match: a list of tags, weak tags and * match; another tag does not", async () => {
    const { uploadToken } = await projectWithTests();
    const etag = (await list(uploadToken)).headers.get("etag")!;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) expect((await list(uploadToken, header)).status, header).toBe(304);
    for (const header of ['"other"', etag.slice(0, -2) + '"', ""]) expect((await list(uploadToken, header)).status, header).toBe(200);
  });

  it("another project's tag does not match, even with the same history", async () => {
    const a = await projectWithTests();
    const b = await projectWithTests();
    const tagA = (await list(a.uploadToken)).headers.get("etag")!;
    expect((await list(b.uploadToken, tagA)).status).toBe(200);
  });
});

describe("authentication (security)", () => {
  it("an API key, no token, or a malformed one: 401, with nothing listed", async () => {
    const { apiKey, uploadToken, ids } = await projectWithTests();
    await quarantine(apiKey, ids.adds!);
    for (const token of [apiKey, null, "ctu_nope", uploadToken.slice(0, -1)]) {
      const res = await list(token);
      expect(res.status, String(token)).toBe(401);
      expect(res.body.error.code).toBe("unauthorized");
      expect(res.text).not.toContain("adds");
    }
  });

  it("a wrong method is a 405", async () => {
    const { uploadToken } = await projectWithTests();
    expect((await h.post(PATH, uploadToken, {})).status).toBe(405);
  });
});
