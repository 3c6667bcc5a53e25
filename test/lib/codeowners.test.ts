/**
 * CODEOWNERS rules (src/lib/codeowners.ts, docs/codeowners.md): reading the file (comments, blank
 * lines, inline comments, what GitHub does not apply), matching (the last matching rule wins, a
 * rule without owners, anchoring, directories, wildcards, case), the test path's normalization,
 * the matcher's shortcuts against the plain rule-by-rule reading on random files, and its faster
 * searches and walk against the plain ones they replace (same answers, same steps counted).
 */
import ignore from "ignore";
import { describe, expect, it } from "vitest";
import { MAX_WILDCARD_RULES, OwnersMatcher, isOwner, normalizeTestPath, parseCodeowners } from "../../src/lib/codeowners";
import { NameGrams, gramsOf } from "../../src/lib/codeowners-grams";
import { ANY_RUN, StepBudget, compilePattern, walkGlob } from "../../src/lib/codeowners-pattern";
import { mulberry32 } from "../../src/lib/seeded-random";

/**
 * The plain reading by the `ignore` package (gitignore's rules, a test-only reference): every rule,
 * last to first, each with a matcher of its own; GitHub's `dir/*` as the rule plus its negation for
 * directories.
 */
function reference(rules: readonly { pattern: string; owners: string[] }[], path: string): readonly string[] {
  for (let i = rules.length - 1; i >= 0; i--) {
    const pattern = rules[i]!.pattern;
    const patterns = /\/\*$/.test(pattern) && !pattern.endsWith("**") ? [pattern, `!${pattern}/`] : [pattern];
    if (ignore({ ignorecase: false }).add(patterns).ignores(path)) return rules[i]!.owners;
  }
  return [];
}

const ownersIn = (text: string) => {
  const matcher = new OwnersMatcher(parseCodeowners(text).rules);
  return (file: string | null) => matcher.ownersOf(file);
};

describe("reading the file", () => {
  it("rules in order with their owners; comments, blank lines and inline comments are skipped", () => {
    const parsed = parseCodeowners(
      [
        "# Owners of everything",
        "",
        "*       @acme/core",
        "   ",
        "*.md @docs writer@example.com # docs team",
        "  /build/   @acme/infra\t@ops",
        "/generated/",
        "#/ignored @x",
      ].join("\n"),
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
    const text = [
      "* @all",
      "!keep.ts @x",
      "*.[jt]s @x",
      "\\#notes.md @x",
      "src/ not-an-owner",
      "docs/ @ok @also/ok trailing@",
      "lib/\\",
      "fine/ @fine",
    ].join("\n");
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
  it("random files of anchored and unanchored rules, against random paths", () => {
    const next = mulberry32(14);
    const random = { next, pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]! };
    const names = ["src", "lib", "app", "docs", "test", "e2e", "a", "b", "Cart", "cart"];
    const files = ["x.ts", "y.test.js", "README.md", "z.spec.ts", "cart.test.ts"];
    const segment = () => {
      const roll = random.next();
      return roll < 0.15
        ? "*"
        : roll < 0.22
          ? "**"
          : roll < 0.3
            ? `${random.pick(names).slice(0, 1)}*`
            : roll < 0.36
              ? "*.ts"
              : random.pick(names);
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
        expect(matcher.ownersOf(path), `${path}\n${text}`).toEqual(reference(parseCodeowners(text).rules, path));
      }
    }
  });
});

describe("the matcher's faster searches and walk change nothing", () => {
  const plainReading = (text: string, paths: readonly string[]) => {
    const matcher = new OwnersMatcher(parseCodeowners(text).rules);
    for (const path of paths) expect(matcher.ownersOf(path), path).toEqual(reference(parseCodeowners(text).rules, path));
  };

  it("a rule's literal text is found in the file's directory or in its name (searched per directory, then per file)", () => {
    const text = [
      "* @all",
      "/src/**/*_handler*.py @handler",
      "**/api-*/**/v2*.ts @api-v2",
      "/lib/*/te?t_*.go @go",
      "**/gen-*/*.pb.* @generated",
    ].join("\n");
    const directories = ["src/a", "src/x_handler", "lib/b", "lib/c_handler", "api-1/src", "src/api-2/deep", "", "gen-go", "a/gen-py/x"];
    const names = ["a_handler.py", "b.py", "handler.py", "v2.ts", "v2x.ts", "test_1.go", "tent_2.go", "x_handler.py", "m.pb.go", "pb.go"];
    const paths = directories.flatMap((directory) => names.map((name) => (directory === "" ? name : `${directory}/${name}`)));
    // The files of a directory one after another (as runs send them), then in another order.
    plainReading(text, paths);
    plainReading(text, [...paths].reverse());
    const owners = ownersIn(text);
    expect(owners("src/a/b_handler.py")).toEqual(["@handler"]);
    expect(owners("src/x_handler/b.py")).toEqual(["@all"]);
    expect(owners("lib/b/test_1.go")).toEqual(["@go"]);
    expect(owners("a/gen-py/x/m.pb.go")).toEqual(["@all"]);
    expect(owners("gen-go/m.pb.go")).toEqual(["@generated"]);
  });

  it("rules found by several names of a path are tried latest first, each once", () => {
    const names = ["x", "y", "z", "w", "v"];
    const lines = ["* @all", "/a/*/*.js @js"];
    for (const [i, name] of names.entries()) {
      lines.push(`/a/*/${name}/ @${name}`, `/a/**/${name}?/ @${name}-next`, `/a/*/${name}/*.ts @${name}-ts`);
      // Rules found by lookups between them: a path tries only the rules after the latest found, so in the wrong order it stops too soon.
      if (i === 1) lines.push("/a/ @a");
      if (i === 3) lines.push("y/ @any-y");
    }
    const text = lines.join("\n");
    const paths: string[] = [];
    for (let depth = 1; depth <= names.length; depth++) {
      const directory = ["a", "b", ...names.slice(0, depth)].join("/");
      paths.push(`${directory}/f.js`, `${directory}/f.ts`, `${directory}x/f.ts`, `${directory}/${names[depth - 1]}/f.ts`);
    }
    plainReading(text, [...paths, ...paths.map((path) => path.replace("a/b", "a/b/c"))]);
  });

  it("prefix and suffix rules of several lengths that begin or end alike", () => {
    const text = ["*.ts @ts", "*s.ts @s-ts", "*.tsx @tsx", "te* @te", "test* @test", "tee* @tee", "x* @x", "*x @ends-x"].join("\n");
    const names = ["a.ts", "as.ts", "a.tsx", "s.ts", ".ts", "te", "test", "tee.ts", "t", "x", "xx", "tex", "tests.ts", "e.ts"];
    plainReading(text, [...names, ...names.map((name) => `src/${name}/a.js`)]);
  });

  it("a name's characters and pairs rule a text out only when the text is not in the name", () => {
    const next = mulberry32(31);
    const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
    const pieces = ["a", "b", "ab", "x", "1", "_", ".", "é", "😀", "ā"];
    const grams = new NameGrams();
    let ruledOut = 0;
    for (let round = 0; round < 2_000; round++) {
      const name = Array.from({ length: Math.floor(next() * 12) }, () => pick(pieces)).join("");
      grams.fill(name);
      for (let t = 0; t < 10; t++) {
        const text =
          t === 0
            ? name.slice(Math.floor(next() * name.length))
            : Array.from({ length: 1 + Math.floor(next() * 8) }, () => pick(pieces)).join("");
        const may = grams.mayHave(gramsOf(text));
        if (name.includes(text)) expect(may, `${text} in ${name}`).toBe(true);
        else if (!may) ruledOut++;
      }
    }
    expect(ruledOut).toBeGreaterThan(5_000);
    grams.fill("case_1.test.ts");
    expect(grams.mayHave(gramsOf("x12"))).toBe(false);
    expect(grams.mayHave(gramsOf(".test."))).toBe(true);
  });

  it("the glob walk counts, and spends from the budget, what the walk one position at a time did", () => {
    /** The walk as it was: the two-pointer walk resuming after the last `*`, a step per position tried. */
    const plainWalk = (atoms: Int32Array, name: string, budget: StepBudget) => {
      let [atom, at, starAtom, starAt] = [0, 0, -1, 0];
      while (at < name.length) {
        if (++budget.steps > budget.limit) return false;
        const wanted = atom < atoms.length ? atoms[atom]! : null;
        if (wanted !== null && wanted !== ANY_RUN && (wanted === -1 || wanted === name.charCodeAt(at))) [atom, at] = [atom + 1, at + 1];
        else if (wanted === ANY_RUN) [starAtom, starAt, atom] = [atom, at, atom + 1];
        else if (starAtom >= 0) [atom, at] = [starAtom + 1, ++starAt];
        else return false;
      }
      while (atom < atoms.length && atoms[atom] === ANY_RUN) atom++;
      return atom === atoms.length;
    };
    const next = mulberry32(77);
    const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
    for (let round = 0; round < 20_000; round++) {
      const glob = Array.from({ length: 1 + Math.floor(next() * 10) }, () => pick(["*", "*", "?", "a", "b", "ab", "é"])).join("");
      const segment = compilePattern(`x/${glob}`).segments.at(-1)!;
      if (segment.kind !== "glob") continue;
      const name = Array.from({ length: Math.floor(next() * 40) }, () => pick(["a", "a", "b", "c", "é"])).join("");
      const limit = pick([3, 10, 30, 1_000]);
      const [plain, fast] = [new StepBudget(limit), new StepBudget(limit)];
      const answers = [plainWalk(segment.atoms, name, plain), walkGlob(segment.atoms, name, fast)];
      expect(fast.exhausted, `${glob} ${name}`).toBe(plain.exhausted);
      if (!plain.exhausted) expect([answers[1], fast.steps], `${glob} ${name}`).toEqual([answers[0], plain.steps]);
    }
  });
});

describe("compiling a pattern", () => {
  it("a pattern of names only (split at its slashes) compiles as one read a character at a time", () => {
    const next = mulberry32(5);
    const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
    for (let round = 0; round < 2_000; round++) {
      const pattern = Array.from({ length: 1 + Math.floor(next() * 6) }, () => pick(["a", "src", "/", "/", ".", "é", "x y"])).join("");
      const first = pattern.search(/[^/]/);
      if (first === -1) continue;
      // An escaped letter is that letter, but sends the pattern down the character-by-character reading.
      const escaped = `${pattern.slice(0, first)}\\${pattern.slice(first)}`;
      expect(compilePattern(pattern), pattern).toEqual(compilePattern(escaped));
    }
  });

  it("a rule of names only is placed as it is split, as it would be once compiled", () => {
    const next = mulberry32(8);
    const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
    const names = ["a", "b", "src", "x.y"];
    for (let round = 0; round < 200; round++) {
      const patterns = Array.from({ length: 8 }, () =>
        Array.from({ length: 1 + Math.floor(next() * 5) }, () => pick([...names, "/", "/"])).join(""),
      );
      // The same names with a letter escaped: compiled character by character, then placed.
      const escaped = patterns.map((pattern) => pattern.replace(/[^/]/, (letter) => `\\${letter}`));
      const [plain, compiled] = [patterns, escaped].map((lines) => ownersIn(lines.map((pattern, i) => `${pattern} @o${i}`).join("\n")));
      for (let p = 0; p < 20; p++) {
        const path = Array.from({ length: 1 + Math.floor(next() * 4) }, () => pick(names)).join("/");
        expect(plain!(path), `${path}\n${patterns.join("\n")}`).toEqual(compiled!(path));
      }
    }
  });

  it("the texts a pattern needs: its four longest runs, the first found first among runs of one length", () => {
    expect(compilePattern("/ab/cd*/efg/hi/jk?/lmn/op").needs).toEqual(["efg", "lmn", "ab", "cd"]);
    expect(compilePattern("src/**/a*bb*ccc").needs).toEqual(["src", "ccc"]);
    expect(compilePattern("src/**/a*bb*cccc").needs).toEqual(["cccc", "src"]);
    expect(compilePattern("ab/ab/x/ab").needs).toEqual(["ab"]);
  });
});

describe("matching without regular expressions agrees with gitignore's reading", () => {
  it("random wildcards of every kind (`?`, `*` inside names, `**` anywhere, escapes, trailing slashes)", () => {
    const next = mulberry32(2027);
    const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
    const names = ["src", "a", "ab", "b.ts", "test_x.py", "x.spec.ts", "api", "e2e", "aa", "b"];
    const segments = [
      "*",
      "**",
      "***",
      "?",
      "a*",
      "*b",
      "*.ts",
      "test_*.py",
      "a?",
      "*a*",
      "a**b",
      "\\*",
      "a\\ b",
      "?*",
      "*?*",
      "api",
      "e2e",
      "src",
      "b.ts",
      "ab",
    ];
    for (let round = 0; round < 150; round++) {
      const lines: string[] = [];
      for (let i = 0; i < 12; i++) {
        let pattern = Array.from({ length: 1 + Math.floor(next() * 4) }, () => (next() < 0.5 ? pick(segments) : pick(names))).join("/");
        if (next() < 0.3) pattern = `/${pattern}`;
        if (next() < 0.25) pattern = `${pattern}/`;
        if (next() < 0.1) pattern = `${pattern.replace(/\/$/, "")}/*`;
        lines.push(`${pattern} @o${i}`);
      }
      const { rules } = parseCodeowners(lines.join("\n"));
      const matcher = new OwnersMatcher(rules);
      for (let p = 0; p < 40; p++) {
        const path = Array.from({ length: 1 + Math.floor(next() * 5) }, () => pick(names)).join("/");
        expect(matcher.ownersOf(path), `${path}\n${lines.join("\n")}`).toEqual(reference(rules, path));
      }
    }
  });
});

describe("bounded work on hostile files", () => {
  it("an owner of 300 KB that made the e-mail expression backtrack (quadratic) is read in one pass", () => {
    const owner = `a@${"a.".repeat(150_000)}@`;
    const started = performance.now();
    const { rules, ignoredLines } = parseCodeowners(`* ${owner}\n* a@b.co`);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(ignoredLines).toHaveLength(1);
    expect(rules.map((rule) => rule.owners)).toEqual([["a@b.co"]]);
  });

  it("owners are `@user`, `@org/team` or one e-mail address with a dot in its domain", () => {
    expect(isOwner("@octo-cat_1.x")).toBe(true);
    expect(isOwner("@acme/cart-team")).toBe(true);
    expect(isOwner("dev@acme.io")).toBe(true);
    expect(isOwner("dev@a.b")).toBe(true);
    for (const bad of [
      "dev@.acme",
      "@",
      "@/x",
      "@a/",
      "@a/b/c",
      "@a b",
      "dev@acme",
      "dev@acme.",
      "@dev@acme.io",
      "a@b@c.io",
      "a/b@c.io",
      "@ü",
    ])
      expect(isOwner(bad), bad).toBe(false);
  });

  it("a run of backslashes is read in one pass, and a lone one at the end is reported", () => {
    const { ignoredLines } = parseCodeowners(`${"\\".repeat(200_001)}\n${"\\".repeat(200_000)} @b`);
    expect(ignoredLines).toEqual([{ line: 1, reason: "a pattern cannot end with a lone `\\`" }]);
  });

  it("nested `**` against a deep path that does not match costs a bounded number of steps, not exponential time", () => {
    const matcher = new OwnersMatcher(parseCodeowners(`${Array(8).fill("**/a").join("/")}/**/b @x`).rules);
    const started = performance.now();
    expect(matcher.ownersOf(`${"a/".repeat(40)}c`)).toEqual([]);
    expect(matcher.ownersOf(`${"a/".repeat(40)}b`)).toEqual(["@x"]);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("a glob that would backtrack in a regular expression is a walk of at most glob × name steps", () => {
    const matcher = new OwnersMatcher(parseCodeowners(`${"*a".repeat(100)}*b @x`).rules);
    expect(matcher.ownersOf("a".repeat(500))).toEqual([]);
    expect(matcher.pathsOverBudget).toBe(0);
  });

  it(`at most ${MAX_WILDCARD_RULES} rules that must be tried one by one; later ones are reported, lookups are not limited`, () => {
    const tried = Array.from({ length: MAX_WILDCARD_RULES + 5 }, (_, i) => `src/*-${i}-*/ @t${i}`);
    const looked = Array.from({ length: 5_000 }, (_, i) => `/pkg${i}/ @p${i}`);
    const { rules, ignoredLines } = parseCodeowners([...tried, ...looked, "*.ts @ts"].join("\n"));
    expect(rules).toHaveLength(MAX_WILDCARD_RULES + 5_001);
    expect(ignoredLines.map((line) => line.line)).toEqual([201, 202, 203, 204, 205]);
    expect(ignoredLines[0]!.reason).toContain(`more than ${MAX_WILDCARD_RULES} patterns`);
    const owners = new OwnersMatcher(rules);
    expect(owners.ownersOf("src/x-199-y/a.js")).toEqual(["@t199"]);
    // The earliest of them too: the ones after it cost a path little (their literal text is missing).
    expect(owners.ownersOf("src/x-0-y/a.js")).toEqual(["@t0"]);
    expect(owners.ownersOf("src/x-50-y/a.js")).toEqual(["@t50"]);
    expect(owners.pathsOverBudget).toBe(0);
    expect(owners.ownersOf("src/x-200-y/a.js")).toEqual([]);
    expect(owners.ownersOf("pkg4999/a.js")).toEqual(["@p4999"]);
  });

  it("a path whose tries exceed the step budget keeps the latest rule found before, and is counted", () => {
    const hostile = Array.from({ length: MAX_WILDCARD_RULES }, (_, i) => `**/*${"x".repeat(100)}?y*/** @h${i}`);
    const matcher = new OwnersMatcher(parseCodeowners(["* @all", ...hostile].join("\n")).rules);
    const path = `${"x".repeat(400)}/${"x".repeat(400)}/f.ts`;
    expect(matcher.ownersOf(path)).toEqual(["@all"]);
    expect(matcher.pathsOverBudget).toBe(1);
  });

  it("a path's owners do not depend on which paths came before it (the budget is spent the same way)", () => {
    const text = [
      "* @all",
      ...Array.from({ length: 60 }, (_, i) => `*.spec${i}.* @a${i}`),
      ...Array.from({ length: 60 }, (_, i) => `src/**/c*${i}*/** @d${i}`),
    ].join("\n");
    const paths = Array.from({ length: 40 }, (_, i) => `packages/checkout/src/components/c${i % 7}${i}/item.spec${i % 3}.tsx`);
    const forwards = new OwnersMatcher(parseCodeowners(text).rules);
    const backwards = new OwnersMatcher(parseCodeowners(text).rules);
    const ahead = paths.map((path) => forwards.ownersOf(path));
    const behind = [...paths]
      .reverse()
      .map((path) => backwards.ownersOf(path))
      .reverse();
    expect(behind).toEqual(ahead);
    expect(ahead.map((owners, i) => [paths[i], owners])).toEqual(paths.map((path) => [path, reference(parseCodeowners(text).rules, path)]));
  });
});
