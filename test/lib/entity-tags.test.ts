import { describe, expect, it } from "vitest";
import { ifNoneMatchNames, namesTag, parseIfNoneMatch } from "../../src/lib/entity-tags";

describe("parseIfNoneMatch", () => {
  it("reads `*`, one tag, weak tags and lists with spaces and empty elements", () => {
    expect(parseIfNoneMatch("*")).toEqual({ any: true });
    expect(parseIfNoneMatch(' "abc" ')).toEqual({ any: false, tags: ["abc"] });
    expect(parseIfNoneMatch('W/"abc"')).toEqual({ any: false, tags: ["abc"] });
    expect(parseIfNoneMatch('"a", W/"b",,"c"')).toEqual({ any: false, tags: ["a", "b", "c"] });
    expect(parseIfNoneMatch('"a,b", "c"')).toEqual({ any: false, tags: ["a,b", "c"] });
    expect(parseIfNoneMatch('""')).toEqual({ any: false, tags: [""] });
  });

  it("ignores an absent or unreadable field (null): no quotes, unterminated, junk after a tag, `*` in a list", () => {
    for (const field of [undefined, "", "abc", '"abc', '"abc" junk', 'w/"abc"', '*, "a"', '"a" "b"', ","]) {
      expect(parseIfNoneMatch(field), String(field)).toBeNull();
    }
  });
});

describe("namesTag", () => {
  it("compares weakly", () => {
    expect(namesTag({ any: false, tags: ["x"] }, '"x"')).toBe(true);
    expect(namesTag({ any: false, tags: ["x"] }, 'W/"x"')).toBe(true);
    expect(namesTag({ any: false, tags: ["y", "z"] }, '"x"')).toBe(false);
    // `*` is answered by the caller, which knows whether there is a representation.
    expect(namesTag({ any: true }, '"x"')).toBe(false);
  });
});

describe("ifNoneMatchNames", () => {
  it("a 304 is due when the field names the tag (weakly too) or is *; never for an absent or unreadable field", () => {
    expect(ifNoneMatchNames('"a", W/"x"', '"x"')).toBe(true);
    expect(ifNoneMatchNames("*", '"x"')).toBe(true);
    expect(ifNoneMatchNames('"y"', '"x"')).toBe(false);
    expect(ifNoneMatchNames(undefined, '"x"')).toBe(false);
    expect(ifNoneMatchNames('"x", garbage', '"x"')).toBe(false);
  });
});
