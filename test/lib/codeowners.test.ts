/**
 * CODEOWNERS rules (src/lib/codeowners.ts, docs/codeowners.md): reading the file (comments, blank
 * lines, inline comments, what GitHub does not apply), matching (the last matching rule wins, a
 * rule without owners, anchoring, directories, wildcards, case), the test path's normalization,
 * and the matcher's shortcuts against the plain rule-by-rule reading on random files.
 */
import ignore from "ignore";
import { describe, expect, it } from "vitest";
import { OwnersMatcher, normalizeTestPath, parseCodeowners } from "../../src/lib/codeowners";
import { mulberry32 } from "../../src/lib/seeded-random";

const ownersIn = (text: string) => {
  const matcher = new OwnersMatcher(parseCodeowners(text).rules);
  return (file: string | null) => matcher.ownersOf(file);
};

describe("reading the file", () => {
  it("rules in order with their owners; comments, blank lines and inline comments are skipped", () => {
    const parsed = parseCodeowners(
      ["# Owners of everything", "", "*       @acme/core", "   ", "*.md @docs writer@example.com # docs team", "  /build/   @acme/infra\t@ops", "/generated/", "#/ignored @x"].join("\n"),
    );
    expect(parsed.rules).toEqual([
      { line: 3, pattern: "*", owners: ["@acme/core"] },
      { line: 5, pattern: "*.md", owners: ["@docs", "writer@example.com"] },
      { line: 6, pattern: "/build/", owners: ["@acme/infra", "@ops"] },
      { line: 7, pattern: "/generated/", owners: [] },
    ]);
    expect(parsed.ignoredLines).toEqual([]);
  });

  it("CRLF line ends, a byte-order mark and repeated owners", () => {
    expect(parseCodeowners("\uFEFF* @a @b @a\r\n/x @c\r\n").rules).toEqual([
      { line: 1, pattern: "*", owners: ["@a", "@b"] },
      { line: 2, pattern: "/x", owners: ["@c"] },
    ]);
  });

  it("lines GitHub does not apply are reported with their number and reason, and match nothing", () => {
    const text = ["* @all", "!keep.ts @x", "*.[jt]s @x", "\\#notes.md @x", "src/ not-an-owner", "docs/ @ok @also/ok trailing@", "lib/\\", "fine/ @fine"].join("\n");
    const parsed = parseCodeowners(text);
    expect(parsed.rules.map((r) => r.line)).toEqual([1, 8]);
    expect(parsed.ignoredLines).toEqual([
      { line: 2, reason: "GitHub does not support `!` (negation) in CODEOWNERS" },
      { line: 3, reason: "GitHub does not support `[ ]` character ranges in CODEOWNERS" },
      { line: 4, reason: "GitHub does not support escaping a leading `#` in CODEOWNERS" },
      { line: 5, reason: "`not-an-owner` is not an owner: use @user, @org/team or an e-mail address" },
      { line: 6, reason: "`trailing@` is not an owner: use @user, @org/team or an e-mail address" },
      { line: 7, reason: "a pattern cannot end with a lone `\\`" },
    ]);
    const owners = ownersIn(text);
    // Not negated, not ranged, not a file named `#notes.md`: the catch-all still owns them.
    for (const file of ["keep.ts", "a.js", "#notes.md", "\\#notes.md", "src/a.ts"]) expect(owners(file), file).toEqual(["@all"]);
  });

  it("an escaped bracket is a literal one, not a range", () => {
    const parsed = parseCodeowners("docs/\\[draft\\]/ @drafts");
    expect(parsed.ignoredLines).toEqual([]);
    expect(ownersIn("docs/\\[draft\\]/ @drafts")("docs/[draft]/a.md")).toEqual(["@drafts"]);
  });

  it("an escaped space belongs to the pattern", () => {
    const owners = ownersIn("path\\ with\\ spaces/ @spaces");
    expect(owners("path with spaces/a.test.ts")).toEqual(["@spaces"]);
    expect(owners("path/a.test.ts")).toEqual([]);
  });
});

describe("matching", () => {
  it("the last matching rule wins, whatever matched before", () => {
    const owners = ownersIn(["* @all", "*.ts @ts", "/src/ @src", "/src/legacy/ @legacy", "*.ts @ts-again"].join("\n"));
    expect(owners("README")).toEqual(["@all"]);
    expect(owners("src/a.js")).toEqual(["@src"]);
    expect(owners("src/legacy/old.js")).toEqual(["@legacy"]);
    // A later file pattern beats an earlier directory one, at any depth.
    expect(owners("src/legacy/old.ts")).toEqual(["@ts-again"]);
  });

  it("a matching rule with no owners means none, until a later rule names some", () => {
    const owners = ownersIn(["* @all", "/vendor/", "/vendor/ours/ @ours"].join("\n"));
    expect(owners("vendor/lib/x.js")).toEqual([]);
    expect(owners("vendor/ours/y.js")).toEqual(["@ours"]);
    expect(owners("app/z.js")).toEqual(["@all"]);
  });

  it("a leading slash anchors to the root; an inner slash too; a bare name matches at any depth", () => {
    const anchored = ownersIn("/build @root-build");
    expect(anchored("build/x.test.ts")).toEqual(["@root-build"]);
    expect(anchored("build")).toEqual(["@root-build"]);
    expect(anchored("app/build/x.test.ts")).toEqual([]);
    const inner = ownersIn("app/models @models");
    expect(inner("app/models/user.test.rb")).toEqual(["@models"]);
    expect(inner("lib/app/models/user.test.rb")).toEqual([]);
    const bare = ownersIn("models @models");
    expect(bare("lib/app/models/user.test.rb")).toEqual(["@models"]);
    expect(bare("models.test.rb")).toEqual([]);
  });

  it("`dir/` owns everything under any directory of that name, not a file of that name", () => {
    const owners = ownersIn("e2e/ @qa");
    expect(owners("e2e/login.spec.ts")).toEqual(["@qa"]);
    expect(owners("apps/web/e2e/deep/cart.spec.ts")).toEqual(["@qa"]);
    expect(owners("e2e")).toEqual([]);
    expect(owners("e2e.spec.ts")).toEqual([]);
  });

  it("`*` does not cross a slash but a bare `*` matches every file; `dir/*` only the files directly in it", () => {
    expect(ownersIn("* @all")("a/b/c/d.test.js")).toEqual(["@all"]);
    const ext = ownersIn("*.spec.ts @specs");
    expect(ext("a/b/c.spec.ts")).toEqual(["@specs"]);
    expect(ext("a/b/c.test.ts")).toEqual([]);
    const direct = ownersIn("docs/* @docs");
    expect(direct("docs/getting-started.md")).toEqual(["@docs"]);
    expect(direct("docs/build-app/troubleshooting.md")).toEqual([]);
    const rootFiles = ownersIn("/* @root");
    expect(rootFiles("setup.test.js")).toEqual(["@root"]);
    expect(rootFiles("src/setup.test.js")).toEqual([]);
  });

  it("`**` matches any number of directories", () => {
    const leading = ownersIn("**/fixtures/ @fixtures");
    expect(leading("fixtures/a.json")).toEqual(["@fixtures"]);
    expect(leading("a/b/fixtures/c/d.json")).toEqual(["@fixtures"]);
    const middle = ownersIn("src/**/api/*.test.ts @api");
    expect(middle("src/api/a.test.ts")).toEqual(["@api"]);
    expect(middle("src/x/y/api/a.test.ts")).toEqual(["@api"]);
    expect(middle("lib/src/api/a.test.ts")).toEqual([]);
    const trailing = ownersIn("/packages/cart/** @cart");
    expect(trailing("packages/cart/src/deep/x.test.ts")).toEqual(["@cart"]);
    expect(trailing("packages/cartography/x.test.ts")).toEqual([]);
    expect(ownersIn("** @everyone")("any/where.js")).toEqual(["@everyone"]);
  });

  it("`?` is one character other than a slash", () => {
    const owners = ownersIn("/test?/ @t");
    expect(owners("test1/a.js")).toEqual(["@t"]);
    expect(owners("test12/a.js")).toEqual([]);
  });

  it("paths are case-sensitive", () => {
    const owners = ownersIn(["/Docs/ @upper", "*.MD @md"].join("\n"));
    expect(owners("Docs/a.txt")).toEqual(["@upper"]);
    expect(owners("docs/a.txt")).toEqual([]);
    expect(owners("notes.md")).toEqual([]);
    expect(owners("notes.MD")).toEqual(["@md"]);
  });

  it("no rules, no file, a file outside the repository: no owners", () => {
    expect(ownersIn("")("a.js")).toEqual([]);
    expect(ownersIn("# only a comment")("a.js")).toEqual([]);
    expect(ownersIn("* @all")(null)).toEqual([]);
    expect(ownersIn("* @all")("../elsewhere/a.js")).toEqual([]);
  });
});

describe("the test's file", () => {
  it("backslashes become slashes, a leading ./ and repeated slashes go", () => {
    expect(normalizeTestPath("src\\cart\\cart.test.ts")).toBe("src/cart/cart.test.ts");
    expect(normalizeTestPath("./src/cart.test.ts")).toBe("src/cart.test.ts");
    expect(normalizeTestPath(".\\src\\cart.test.ts")).toBe("src/cart.test.ts");
    expect(normalizeTestPath("././src//cart.test.ts")).toBe("src/cart.test.ts");
    expect(normalizeTestPath("cart.test.ts")).toBe("cart.test.ts");
    expect(normalizeTestPath("..hidden/a.ts")).toBe("..hidden/a.ts");
  });

  it("an absolute path is read from its root; one that leaves the root, or nothing, has no path", () => {
    expect(normalizeTestPath("/home/runner/work/shop/src/a.test.ts")).toBe("home/runner/work/shop/src/a.test.ts");
    expect(normalizeTestPath("C:\\build\\src\\a.test.ts")).toBe("build/src/a.test.ts");
    for (const file of [null, "", ".", "./", "/", "..", "../a.ts", "./../a.ts"]) expect(normalizeTestPath(file), String(file)).toBeNull();
  });

  it("so unanchored patterns match an absolute path, anchored ones do not", () => {
    const owners = ownersIn(["* @all", "/src/ @src", "*.test.ts @ts-tests"].join("\n"));
    expect(owners("/home/ci/shop/src/a.test.ts")).toEqual(["@ts-tests"]);
    expect(owners("/home/ci/shop/src/a.js")).toEqual(["@all"]);
    expect(owners("src\\a.js")).toEqual(["@src"]);
  });
});

describe("the matcher's shortcuts change nothing", () => {
  /** The plain reading: every rule, last to first, each with a matcher of its own. */
  function reference(text: string, file: string): readonly string[] {
    const path = normalizeTestPath(file);
    if (path === null) return [];
    const { rules } = parseCodeowners(text);
    for (let i = rules.length - 1; i >= 0; i--) {
      const pattern = rules[i]!.pattern;
      const patterns = /\/\*$/.test(pattern) && !pattern.endsWith("**") ? [pattern, `!${pattern}/`] : [pattern];
      if (ignore({ ignorecase: false }).add(patterns).ignores(path)) return rules[i]!.owners;
    }
    return [];
  }

  it("random files of anchored and unanchored rules, against random paths", () => {
    const next = mulberry32(14);
    const random = { next, pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]! };
    const names = ["src", "lib", "app", "docs", "test", "e2e", "a", "b", "Cart", "cart"];
    const files = ["x.ts", "y.test.js", "README.md", "z.spec.ts", "cart.test.ts"];
    const segment = () => {
      const roll = random.next();
      return roll < 0.15 ? "*" : roll < 0.22 ? "**" : roll < 0.3 ? `${random.pick(names).slice(0, 1)}*` : roll < 0.36 ? "*.ts" : random.pick(names);
    };
    for (let round = 0; round < 40; round++) {
      const lines: string[] = [];
      for (let i = 0; i < 25; i++) {
        const depth = 1 + Math.floor(random.next() * 3);
        let pattern = Array.from({ length: depth }, segment).join("/");
        if (random.next() < 0.3) pattern = `/${pattern}`;
        if (random.next() < 0.2) pattern = `${pattern}/`;
        if (random.next() < 0.1) pattern = random.pick(files);
        lines.push(random.next() < 0.15 ? pattern : `${pattern} @o${i}`);
      }
      const text = lines.join("\n");
      const matcher = new OwnersMatcher(parseCodeowners(text).rules);
      for (let p = 0; p < 60; p++) {
        const depth = Math.floor(random.next() * 4);
        const path = [...Array.from({ length: depth }, () => random.pick(names)), random.pick(files)].join("/");
        expect(matcher.ownersOf(path), `${path}\n${text}`).toEqual(reference(text, path));
      }
    }
  });
});
