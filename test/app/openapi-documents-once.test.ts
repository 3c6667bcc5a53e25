/**
 * Each OpenAPI document (/api/v1, /uploads/v1, /admin/v1) is generated once per app (a process, or
 * a Worker isolate), at its first request, not at every request (src/routes/openapi-document.ts,
 * servedOnce). In process only: in workerd the app runs in another module graph than the spy's.
 * Their ETags and 304s: test/routes/openapi-documents.test.ts.
 */
import { OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import { expect, it, vi } from "vitest";
import { ADMIN_TOKEN, createHarness } from "../support/harness";

const DOCUMENTS: { path: string; headers: Record<string, string> }[] = [
  { path: "/api/v1/openapi.json", headers: {} },
  { path: "/uploads/v1/openapi.json", headers: {} },
  { path: "/admin/v1/openapi.json", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
];

it("each document is built once per app, not per request", async () => {
  const h = await createHarness();
  const build = vi.spyOn(OpenApiGeneratorV31.prototype, "generateDocument");
  try {
    for (let i = 0; i < 3; i++)
      for (const { path, headers } of DOCUMENTS) {
        expect((await h.call("GET", path, { headers })).status).toBe(200);
        expect((await h.call("GET", path, { headers: { ...headers, "if-none-match": "*" } })).status).toBe(304);
      }
    // /api/v1's includes the uploads' part: one more generation, of the uploads API's operations.
    expect(build).toHaveBeenCalledTimes(DOCUMENTS.length + 1);
  } finally {
    build.mockRestore();
    await h.close();
  }
});
