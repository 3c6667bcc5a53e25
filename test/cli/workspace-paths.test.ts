/** src/cli/workspace-paths.ts: absolute test file paths under the workspace become relative; nothing else changes. */
import { describe, expect, it } from "vitest";
import { relativeToWorkspace, relativizeJUnitFiles, relativizeSuiteFiles } from "../../src/cli/workspace-paths";

describe("relativeToWorkspace", () => {
  it("makes a path below the root relative, with forward slashes, on POSIX and Windows", () => {
    expect(relativeToWorkspace("/home/runner/work/app/app/src/cart.test.ts", "/home/runner/work/app/app")).toBe("src/cart.test.ts");
    expect(relativeToWorkspace("D:\\a\\app\\app\\src\\cart.test.ts", "D:\\a\\app\\app")).toBe("src/cart.test.ts");
  });

  it("keeps what is relative already, outside the root, the root itself or a sibling sharing its prefix", () => {
    expect(relativeToWorkspace("src/cart.test.ts", "/repo")).toBeNull();
    expect(relativeToWorkspace("/opt/shared/x.test.ts", "/repo")).toBeNull();
    expect(relativeToWorkspace("/repo", "/repo")).toBeNull();
    expect(relativeToWorkspace("/repo-other/x.test.ts", "/repo")).toBeNull();
    expect(relativeToWorkspace("/repo/x.test.ts", "relative/root")).toBeNull();
  });
});

describe("relativizeJUnitFiles", () => {
  it("rewrites only the file attributes of suites and cases, byte for byte elsewhere", () => {
    const xml =
      `<?xml version="1.0"?>\n<testsuites>\n  <testsuite name="s" file='/repo/a &amp; b/s.test.ts' tests="2">\n` +
      `    <testcase name="one" classname="c" file = "/repo/a &amp; b/s.test.ts" time="1"/>\n` +
      `    <testcase name="file=/repo/x" file="/elsewhere/t.ts"><properties><property name="file" value="/repo/p.ts"/></properties></testcase>\n` +
      `  </testsuite>\n</testsuites>\n`;
    const { text, changed } = relativizeJUnitFiles(xml, "/repo");
    expect(changed).toBe(2);
    expect(text).toBe(
      `<?xml version="1.0"?>\n<testsuites>\n  <testsuite name="s" file='a &#38; b/s.test.ts' tests="2">\n` +
        `    <testcase name="one" classname="c" file = "a &#38; b/s.test.ts" time="1"/>\n` +
        `    <testcase name="file=/repo/x" file="/elsewhere/t.ts"><properties><property name="file" value="/repo/p.ts"/></properties></testcase>\n` +
        `  </testsuite>\n</testsuites>\n`,
    );
  });

  it("returns a document it cannot read unchanged", () => {
    const broken = `<testsuite file="/repo/a.ts"><testcase`;
    expect(relativizeJUnitFiles(broken, "/repo")).toEqual({ text: broken, changed: 0 });
  });

  it("reads a large document in one linear pass", () => {
    const cases = Array.from({ length: 20_000 }, (_, i) => `<testcase name="t${i}" file="/repo/dir/f${i % 50}.test.ts"/>`).join("");
    const { changed, text } = relativizeJUnitFiles(`<testsuite name="big">${cases}</testsuite>`, "/repo");
    expect(changed).toBe(20_000);
    expect(text).not.toContain("/repo/");
  });
});

describe("relativizeSuiteFiles", () => {
  it("rewrites suites' and cases' file fields in place, nested suites included", () => {
    const suites = [
      { name: "s", file: "/repo/s.test.ts", cases: [{ name: "a", file: "/repo/s.test.ts" }, { name: "b", file: "/other/b.ts" }, null] },
      { name: "outer", suites: [{ name: "inner", cases: [{ name: "c", file: "/repo/deep/c.test.ts" }] }] },
    ];
    expect(relativizeSuiteFiles(suites, "/repo")).toBe(3);
    expect(suites[0]).toMatchObject({ file: "s.test.ts", cases: [{ file: "s.test.ts" }, { file: "/other/b.ts" }, null] });
    expect(suites[1]!.suites![0]!.cases[0]!.file).toBe("deep/c.test.ts");
  });
});
