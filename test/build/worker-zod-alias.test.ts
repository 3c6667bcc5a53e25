/**
 * The Worker's bundle aliases "zod" to src/worker/zod/index.ts (wrangler.toml `[alias]`), zod's
 * own entry with English as its only locale. It must export exactly what zod exports, so that
 * nothing in the Worker sees a different zod than Node and the tests do.
 */
import { describe, expect, it } from "vitest";
import * as zod from "zod";
import * as workerZod from "../../src/worker/zod/index";

const names = (module: object) => Object.keys(module).sort();

describe("the Worker's zod without locales", () => {
  it("exports the names zod exports, and its z namespace holds the same names", () => {
    expect(names(workerZod)).toEqual(names(zod));
    expect(names(workerZod.z)).toEqual(names(zod.z));
    expect(names(workerZod.core)).toEqual(names(zod.core));
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
