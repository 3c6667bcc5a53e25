/**
 * The OpenAPI document declares the conditional GETs (src/routes/conditional-gets.ts): on every
 * GET of /api/v1 that needs a key, the If-None-Match parameter (saying that a 304 counts toward
 * the rate limit), the 200's ETag and Cache-Control, and the 304 with its headers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../support/harness";

let h: Harness;
let paths: Record<string, Record<string, any>>;
beforeAll(async () => {
  h = await createHarness();
  paths = (await h.get("/api/v1/openapi.json")).body.paths;
});
afterAll(() => h.close());

describe("the OpenAPI document", () => {
  it("declares If-None-Match, the ETag and the 304 on every GET of /api/v1, and on nothing else", () => {
    const gets = Object.entries(paths).filter(([path, item]) => item.get && !path.startsWith("/uploads/") && !path.includes("/exports/"));
    expect(gets.length).toBeGreaterThanOrEqual(18);
    for (const [path, item] of gets) {
      const get = item.get;
      const parameter = get.parameters.find((p: any) => p.name === "If-None-Match");
      expect(parameter, path).toMatchObject({ in: "header", required: false, schema: { type: "string" } });
      expect(parameter.description, path).toMatch(/counts toward the rate limit/);
      expect(Object.keys(get.responses["200"].headers), path).toEqual(
        expect.arrayContaining(["ETag", "Cache-Control", "RateLimit", "RateLimit-Policy"]),
      );
      expect(get.responses["304"], path).toMatchObject({ description: expect.stringMatching(/no body/i) });
      expect(Object.keys(get.responses["304"].headers), path).toEqual(
        expect.arrayContaining(["ETag", "Cache-Control", "RateLimit", "RateLimit-Policy"]),
      );
      expect(get.responses["304"].content, path).toBeUndefined();
    }
    for (const [path, item] of Object.entries(paths)) {
      for (const method of ["post", "patch", "put", "delete"]) {
        if (item[method]) expect(item[method].responses["304"], `${method} ${path}`).toBeUndefined();
      }
    }
  });
});
