/**
 * Conditional GETs and organizations: a tag of one organization never revalidates another's
 * request (same path, same data version, or its ids), and a tag cannot be made up from what a
 * client knows (it is keyed with the server's secret).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";
import { conditionalGet, etagFixture, everyGet, expectUnchanged, tagsOf } from "./etags.support";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

describe("tags and organizations", () => {
  it("organization A's tags never get a 304 for organization B, on B's own lists or on A's ids", async () => {
    const a = await etagFixture(h);
    const b = await etagFixture(h);
    const tagsOfA = await tagsOf(h, everyGet(a), a.apiKey);
    for (const [path, etag] of tagsOfA) {
      const res = await conditionalGet(h, path, b.apiKey, etag);
      // B's own lists answer 200 with B's tag; A's ids answer 404, as without the header.
      expect([200, 404], path).toContain(res.status);
      if (
        ["/organization", "/projects", "/alerts"].some(
          (list) => path.startsWith(list) && !path.includes(a.projectId) && !path.includes(a.alertId),
        )
      ) {
        expect(res.status, path).toBe(200);
      }
      expect(res.headers.get("etag"), path).not.toBe(etag);
    }
    // Same fixtures, so the two organizations' data versions are alike; still different tags.
    const tagsOfB = await tagsOf(h, ["/projects", "/alerts", "/organization"], b.apiKey);
    for (const [path, etag] of tagsOfB) expect(etag, path).not.toBe(tagsOfA.get(path));
  });

  it("a write in organization B leaves organization A's tags current", async () => {
    const a = await etagFixture(h);
    const b = await etagFixture(h);
    const tags = await tagsOf(h, everyGet(a), a.apiKey);
    expect((await h.patch(`/api/v1/projects/${b.projectId}`, b.apiKey, { description: "B only" })).status).toBe(200);
    await expectUnchanged(h, tags, a.apiKey);
  });

  it("a tag made up from the organization, the path and a version number is refused", async () => {
    const f = await etagFixture(h);
    const guesses: string[] = [];
    for (let version = 0; version < 50; version++) {
      for (const input of [`${f.organizationId}:${version}:/api/v1/projects`, `${version}`, `${f.organizationId}:${version}`]) {
        const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(input)));
        const base64url = btoa(String.fromCharCode(...digest))
          .replace(/\+/g, "-")
          .replace(/\//g, "_");
        guesses.push(`"${base64url.slice(0, 24)}"`, `"${version}"`);
      }
    }
    const res = await conditionalGet(h, "/projects", f.apiKey, guesses.join(", "));
    expect(res.status).toBe(200);
  });
});
