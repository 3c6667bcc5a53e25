/**
 * Conditional GETs on /api/v1, what is refused or ignored: a tag that is not current, a field
 * that cannot be parsed (ignored, as RFC 9110 says), error answers (no ETag, never a 304), and
 * methods other than GET (If-None-Match changes nothing).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";
import { ETAG, conditionalGet, etagFixture, tagsOf } from "./etags.support";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

describe("conditional GETs that do not match", () => {
  it("a tag that is not current, or an unreadable field, gets the full 200 with the current tag", async () => {
    const f = await etagFixture(h);
    const etag = (await tagsOf(h, ["/projects"], f.apiKey)).get("/projects")!;
    for (const field of ['"stale"', 'W/"stale"', "no-quotes", `${etag.slice(0, -1)}`, '"unterminated', ",", "", `${etag}; junk`]) {
      const res = await conditionalGet(h, "/projects", f.apiKey, field);
      expect(res.status, field).toBe(200);
      expect(res.body.data.length, field).toBe(1);
      expect(res.headers.get("etag"), field).toBe(etag);
    }
  });

  it("errors carry no ETag and are never 304: 404, 400 (bad cursor or filter), 401", async () => {
    const f = await etagFixture(h);
    const missing = "00000000-0000-4000-8000-000000000000";
    for (const [path, status] of [
      [`/projects/${missing}`, 404],
      [`/alerts/${missing}/events`, 404],
      [`/tests/${missing}`, 404],
      ["/projects?cursor=bogus", 400],
      ["/projects?limit=0", 400],
      ["/alerts?status=bogus", 400],
    ] as const) {
      for (const field of [undefined, "*", '"anything"']) {
        const res = await conditionalGet(h, path, f.apiKey, field);
        expect(res.status, `${path} ${field}`).toBe(status);
        expect(res.headers.get("etag"), path).toBeNull();
        expect(res.headers.get("cache-control"), path).toBe("no-store");
      }
    }
    const etag = (await tagsOf(h, ["/projects"], f.apiKey)).get("/projects")!;
    const anonymous = await h.get("/api/v1/projects", null, { headers: { "if-none-match": etag } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("etag")).toBeNull();
  });

  it("If-None-Match on PATCH and POST changes nothing: the write is made and answered 200, with no ETag", async () => {
    const f = await etagFixture(h);
    const etag = (await tagsOf(h, [`/projects/${f.projectId}`], f.apiKey)).get(`/projects/${f.projectId}`)!;
    const patched = await h.patch(`/api/v1/projects/${f.projectId}`, f.apiKey, { name: "renamed" }, { headers: { "if-none-match": etag } });
    expect(patched.status).toBe(200);
    expect(patched.body.name).toBe("renamed");
    expect(patched.headers.get("etag")).toBeNull();
    const snoozed = await h.post(`/api/v1/alerts/${f.alertId}/snooze`, f.apiKey, { duration: "1h" }, { headers: { "if-none-match": "*" } });
    expect(snoozed.status).toBe(200);
    expect(snoozed.body.snoozed).toBe(true);
  });

  it("the OpenAPI document stays public: its tag is the document's own, and an API answer's tag revalidates nothing there", async () => {
    const f = await etagFixture(h);
    const listed = await h.get(`/api/v1/projects`, f.apiKey);
    const apiTag = listed.headers.get("etag")!;
    expect(apiTag).toMatch(/^(W\/)?"/);
    const res = await h.get("/api/v1/openapi.json", null, { headers: { "if-none-match": apiTag } });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toMatch(/^"[0-9a-f]{32}"$/);
    expect(res.headers.get("etag")).not.toBe(apiTag);
  });

  it("a tag's page: the tag of one page never revalidates another page of the same list", async () => {
    const f = await etagFixture(h);
    await h.newProject(f.organizationId, "second");
    const first = await conditionalGet(h, "/projects?limit=1", f.apiKey);
    const cursor = first.body.pagination.next_cursor as string;
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(ETAG);
    const second = await conditionalGet(h, `/projects?limit=1&cursor=${encodeURIComponent(cursor)}`, f.apiKey, etag);
    expect(second.status).toBe(200);
    expect(second.headers.get("etag")).not.toBe(etag);
  });
});
