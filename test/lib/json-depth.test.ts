import { describe, expect, it } from "vitest";
import { jsonTextDepth } from "../../src/lib/json-depth";

describe("jsonTextDepth", () => {
  it.each([
    ["1", 0],
    ['"x"', 0],
    ["{}", 1],
    ["[]", 1],
    ['{"a":[1,{"b":[]}]}', 4],
    ["[[],[[]],[]]", 3],
    ['{"a":"[[[{{{"}', 1],
    ['{"a":"\\"[[["}', 1],
    ['{"a":"\\\\","b":[[]]}', 3],
    ['["\\\\\\"[", []]', 2],
  ])("%s nests %i deep", (text, depth) => {
    expect(jsonTextDepth(text, 100)).toBe(depth);
    expect(JSON.parse(text)).toBeDefined();
  });

  it("stops one past the limit", () => {
    expect(jsonTextDepth("[".repeat(1_000_000), 64)).toBe(65);
    expect(jsonTextDepth(`${"[".repeat(64)}${"]".repeat(64)}`, 64)).toBe(64);
  });

  it("is linear: a 32 MiB text is scanned in well under a second", () => {
    const text = `{"a":"${'x\\"['.repeat(4 * 1024 * 1024)}","b":${"[1],".repeat(2 * 1024 * 1024)}0}`;
    const started = performance.now();
    expect(jsonTextDepth(text, 136)).toBe(2);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("does not judge malformed text (the parser does): an unclosed string hides what follows", () => {
    expect(jsonTextDepth('{"a":"[[[[', 2)).toBe(1);
    expect(jsonTextDepth("]]]][[", 5)).toBe(2);
  });
});
