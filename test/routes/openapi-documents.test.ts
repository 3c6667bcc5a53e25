/**
 * The OpenAPI documents (/api/v1, /uploads/v1, /admin/v1) answer like every other GET: a strong
 * ETag (a hash of the bytes, the same for every caller), `Cache-Control: no-cache` (`private` for
 * the admin's), and a 304 with no body when If-None-Match names the tag (weakly, in a list, or
 * `*`). That each is built once per app: test/app/openapi-documents-once.test.ts (in process only).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, type CallResult, type Harness, createHarness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const DOCUMENTS = [
  { path: "/api/v1/openapi.json", headers: {}, cacheControl: "no-cache", title: "CI test analytics API" },
  { path: "/uploads/v1/openapi.json", headers: {}, cacheControl: "no-cache", title: "CI test analytics uploads API" },
  {
    path: "/admin/v1/openapi.json",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    cacheControl: "private, no-cache",
    title: "CI test analytics admin API",
  },
] as const;

const STRONG_TAG = /^"[0-9a-f]{32}"$/;

const get = (path: string, headers: Record<string, string>) => h.call("GET", path, { headers });

function expectNotModified(res: CallResult, etag: string, cacheControl: string) {
  expect(res.status, res.text).toBe(304);
  expect(res.text).toBe("");
  expect(res.headers.get("etag")).toBe(etag);
  expect(res.headers.get("cache-control")).toBe(cacheControl);
}

describe.each(DOCUMENTS)("GET $path", ({ path, headers, cacheControl, title }) => {
  let etag: string;
  let text: string;
  beforeAll(async () => {
    const res = await get(path, headers);
    expect(res.status, res.text).toBe(200);
    etag = res.headers.get("etag")!;
    text = res.text;
  });

  it("answers 200 with the document, a strong ETag and Cache-Control: no-cache", async () => {
    const res = await get(path, headers);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.body).toMatchObject({ openapi: "3.1.0", info: { title } });
    expect(res.headers.get("etag")).toMatch(STRONG_TAG);
    expect(res.headers.get("etag")).toBe(etag);
    expect(res.headers.get("cache-control")).toBe(cacheControl);
    // The same bytes under the same tag.
    expect(res.text).toBe(text);
  });

  it("If-None-Match naming the tag (strong, weak, in a list) or * gets a 304 with no body", async () => {
    for (const condition of [etag, `W/${etag}`, `"other", ${etag}`, `, W/"x" ,${etag}`, "*"])
      expectNotModified(await get(path, { ...headers, "if-none-match": condition }), etag, cacheControl);
  });

  it("another tag, or a field that cannot be parsed, gets the 200", async () => {
    for (const condition of ['"other"', `W/"${etag.slice(2)}`, etag.slice(1, -1), `${etag} junk`]) {
      const res = await get(path, { ...headers, "if-none-match": condition });
      expect(res.status, condition).toBe(200);
      expect(res.text).toBe(text);
      expect(res.headers.get("etag")).toBe(etag);
    }
  });

  it("HEAD answers the same headers without the body, and its 304", async () => {
    const head = await h.call("HEAD", path, { headers });
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    expect(head.headers.get("etag")).toBe(etag);
    expectNotModified(await h.call("HEAD", path, { headers: { ...headers, "if-none-match": etag } }), etag, cacheControl);
  });
});

describe("the documents' tags", () => {
  it("differ between documents, and the /api/v1 document stays readable from any origin on its 304", async () => {
    const tags = await Promise.all(DOCUMENTS.map(async ({ path, headers }) => (await get(path, headers)).headers.get("etag")));
    expect(new Set(tags).size).toBe(DOCUMENTS.length);
    const notModified = await get("/api/v1/openapi.json", { "if-none-match": tags[0]! });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("the admin document still needs the admin token, whatever If-None-Match says", async () => {
    const { headers } = await get("/admin/v1/openapi.json", { authorization: `Bearer ${ADMIN_TOKEN}` });
    const res = await get("/admin/v1/openapi.json", { "if-none-match": headers.get("etag")! });
    expect(res.status).toBe(401);
  });
});
