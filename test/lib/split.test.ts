import { describe, expect, it } from "vitest";
import { SuffixMatcher, fallbackShard, median, planShards } from "../../src/lib/split";

describe("planShards (longest processing time first)", () => {
  it("places the longest first on the least loaded shard, ties by name then by shard index", () => {
    const plan = planShards(
      [
        { item: "b", expectedMs: 5 },
        { item: "a", expectedMs: 5 },
        { item: "c", expectedMs: 8 },
        { item: "d", expectedMs: 1 },
      ],
      2,
    );
    expect(plan).toEqual([
      { items: ["c", "d"], expectedMs: 9 },
      { items: ["a", "b"], expectedMs: 10 },
    ]);
  });

  it("more shards than items leaves some empty", () => {
    expect(planShards([{ item: "a", expectedMs: 1 }], 3).map((s) => s.items)).toEqual([["a"], [], []]);
  });
});

describe("fallbackShard", () => {
  it("sorted, distinct, round-robin from shard 1", () => {
    const items = ["d", "a", "c", "b", "e", "a"];
    expect(fallbackShard(items, 1, 2)).toEqual(["a", "c", "e"]);
    expect(fallbackShard(items, 2, 2)).toEqual(["b", "d"]);
  });
});

describe("SuffixMatcher", () => {
  const files = new SuffixMatcher(["/home/runner/work/app/src/a.test.ts", "src/b/index.test.ts", "pkg/c_test.go"], "file");
  it("matches either way round when one has a leading prefix", () => {
    expect(files.match("src/a.test.ts")).toBe("/home/runner/work/app/src/a.test.ts");
    expect(files.match("./src/a.test.ts")).toBe("/home/runner/work/app/src/a.test.ts");
    expect(files.match("/builds/x/pkg/c_test.go")).toBe("pkg/c_test.go");
    expect(files.match("src\\b\\index.test.ts")).toBe("src/b/index.test.ts");
  });
  it("never matches two different files that share only a name", () => {
    expect(files.match("src/other/index.test.ts")).toBeUndefined();
    expect(files.match("nothing.ts")).toBeUndefined();
  });
  it("classes by their dotted parts", () => {
    const classes = new SuffixMatcher(["com.acme.CartTest"], "classname");
    expect(classes.match("CartTest")).toBe("com.acme.CartTest");
    expect(classes.match("org.acme.CartTest")).toBeUndefined();
  });
});

describe("median", () => {
  it("odd, even, none", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([1, 2, 3, 10])).toBe(3);
    expect(median([])).toBe(0);
  });
});
