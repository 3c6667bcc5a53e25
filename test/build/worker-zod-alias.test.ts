/**
 * The Worker's bundle aliases "zod" and its subpaths to src/worker/zod/ (wrangler.toml `[alias]`),
 * zod's own entries with English as its only locale. It must export exactly what zod exports, so that
 * nothing in the Worker sees a different zod than Node and the tests do.
 */
import { describe, expect, it } from "vitest";
import * as zod from "zod";
import * as zodV3 from "zod/v3";
import * as zodV4 from "zod/v4";
import * as zodV4Core from "zod/v4/core";
import * as zodV4Mini from "zod/v4-mini";
import * as workerZod from "../../src/worker/zod/index";
import * as workerZodV3 from "../../src/worker/zod/v3/index";
import * as workerZodV4Core from "../../src/worker/zod/v4/core/index";
import * as workerZodV4 from "../../src/worker/zod/v4/index";
import * as workerZodV4Mini from "../../src/worker/zod/v4-mini/index";

const names = (module: object) => Object.keys(module).sort();

describe("the Worker's zod without locales", () => {
  it("exports the names zod exports, and its z namespace holds the same names", () => {
    expect(names(workerZod)).toEqual(names(zod));
    expect(names(workerZod.z)).toEqual(names(zod.z));
    expect(names(workerZod.core)).toEqual(names(zod.core));
  });

  it("covers the subpaths the MCP SDK imports (zod/v4, zod/v4/core, zod/v4-mini, zod/v3) with the same names", () => {
    expect(names(workerZodV4)).toEqual(names(zodV4));
    expect(workerZodV4.default.ZodObject).toBe(zodV4.default.ZodObject);
    expect(names(workerZodV4Core)).toEqual(names(zodV4Core));
    expect(names(workerZodV4Mini)).toEqual(names(zodV4Mini));
    expect(names(workerZodV3)).toEqual(names(zodV3));
  });

  it("keeps English only, and it is the same English", () => {
    expect(names(workerZod.locales)).toEqual(["en"]);
    expect(names(workerZod.core.locales)).toEqual(["en"]);
    expect(workerZod.locales.en).toBe(zod.locales.en);
  });

  it("validates and reports errors in English, as zod does", () => {
    const result = workerZod.z.object({ limit: workerZod.z.number().int().max(100) }).safeParse({ limit: 101 });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe(zod.z.number().max(100).safeParse(101).error?.issues[0]?.message);
  });

  it("shares zod's classes, so schemas made by either are recognised by both", () => {
    expect(workerZod.ZodObject).toBe(zod.ZodObject);
    expect(workerZod.z.string()).toBeInstanceOf(zod.ZodString);
  });
});
