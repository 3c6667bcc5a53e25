/**
 * Test files resolved from the workspace for cases named by classname only (Maven Surefire,
 * Gradle, pytest's xunit2): a temporary workspace of JVM and Python sources, the bundle's resolver
 * (unique → the file; none or several → nothing; inner classes; pytest modules and classes; build
 * output and dependencies skipped; the bounds), the `file` attribute added to JUnit XML in place,
 * JSON cases, and the CLI's upload with and without --no-resolve-files (a fetch plays the service).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
const TOKEN = `ctu_${"t3stF1l3sX".repeat(4)}${"a1b2c3d4e".slice(0, 9)}`;

type Writable = { write(chunk: string): unknown };
type WorkspaceIndex = { entries: number; incomplete: string | null };
type FileResolver = { fileOf(classname: string): string | null; index(): WorkspaceIndex | null };
type ResolverOptions = { maxEntries?: number; budgetMs?: number; now?: () => number };
type CliModule = {
  run(
    argv: string[],
    io: { env: Record<string, string>; cwd: string; stdout: Writable; stderr: Writable; fetch: typeof fetch; baseDelayMs: number },
  ): Promise<number>;
  fileResolver(root: string, options?: ResolverOptions): FileResolver;
  indexWorkspace(root: string, options?: ResolverOptions): WorkspaceIndex;
  addFilesToJUnit(text: string, resolver: FileResolver): { text: string; added: number };
  addFilesToSuites(suites: unknown[], resolver: FileResolver): number;
  MAX_WORKSPACE_ENTRIES: number;
};

let cli: CliModule;
let dir: string;
let count = 0;

beforeAll(async () => {
  cli = (await import(pathToFileURL(BIN).href)) as CliModule;
  dir = mkdtempSync(join(tmpdir(), "cta-cli-test-files-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A workspace folder holding these files (empty unless given). */
function workspace(files: (string | [string, string])[]): string {
  const root = join(dir, `ws${++count}`);
  mkdirSync(root);
  for (const entry of files) {
    const [path, content] = typeof entry === "string" ? [entry, ""] : entry;
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

/** The sources of a Maven project with two modules, a Kotlin module, and a pytest suite. */
const SOURCES = [
  "shop/cart/src/test/java/com/acme/cart/CartTest.java",
  "shop/cart/src/main/java/com/acme/cart/Cart.java",
  "shop/pay/src/test/kotlin/com/acme/pay/PayTest.kt",
  "shop/legacy/src/test/groovy/com/acme/legacy/LegacySpec.groovy",
  "shop/stats/src/test/scala/com/acme/stats/StatsSuite.scala",
  // One class name in two modules: ambiguous.
  "shop/cart/src/test/java/com/acme/common/UtilTest.java",
  "shop/pay/src/test/java/com/acme/common/UtilTest.java",
  // Copies in build output, dependencies and hidden folders are not sources.
  "shop/cart/target/generated-test-sources/com/acme/cart/CartTest.java",
  "shop/pay/build/tmp/com/acme/pay/PayTest.kt",
  "node_modules/pkg/com/acme/cart/CartTest.java",
  ".gradle/cache/com/acme/cart/CartTest.java",
  "py/tests/test_cart.py",
  "py/tests/unit/test_tax.py",
  "py/tests/unit/__pycache__/test_tax.py",
  "py/.venv/lib/tests/test_cart.py",
];

describe("a classname to its file, when exactly one file fits", () => {
  let resolver: FileResolver;
  beforeAll(() => {
    resolver = cli.fileResolver(workspace(SOURCES));
  });

  it("a JVM class: **/com/acme/cart/CartTest.{java,kt,groovy,scala}, ignoring build output, dependencies and hidden folders", () => {
    expect(resolver.fileOf("com.acme.cart.CartTest")).toBe("shop/cart/src/test/java/com/acme/cart/CartTest.java");
    expect(resolver.fileOf("com.acme.pay.PayTest")).toBe("shop/pay/src/test/kotlin/com/acme/pay/PayTest.kt");
    expect(resolver.fileOf("com.acme.legacy.LegacySpec")).toBe("shop/legacy/src/test/groovy/com/acme/legacy/LegacySpec.groovy");
    expect(resolver.fileOf("com.acme.stats.StatsSuite")).toBe("shop/stats/src/test/scala/com/acme/stats/StatsSuite.scala");
  });

  it("an inner class (and Scala's object suffix) is in its outer class's file", () => {
    expect(resolver.fileOf("com.acme.cart.CartTest$Nested")).toBe("shop/cart/src/test/java/com/acme/cart/CartTest.java");
    expect(resolver.fileOf("com.acme.cart.CartTest$Nested$Deeper")).toBe("shop/cart/src/test/java/com/acme/cart/CartTest.java");
    expect(resolver.fileOf("com.acme.stats.StatsSuite$")).toBe("shop/stats/src/test/scala/com/acme/stats/StatsSuite.scala");
  });

  it("ambiguous (one class in two modules) or not found: no file", () => {
    expect(resolver.fileOf("com.acme.common.UtilTest")).toBeNull();
    expect(resolver.fileOf("com.acme.cart.Missing")).toBeNull();
    // The package must match, not only the name.
    expect(resolver.fileOf("org.other.CartTest")).toBeNull();
    expect(resolver.fileOf("acme.cart.CartTest")).toBe("shop/cart/src/test/java/com/acme/cart/CartTest.java");
  });

  it("a pytest module or class: the longest module prefix that is a file", () => {
    expect(resolver.fileOf("tests.test_cart")).toBe("py/tests/test_cart.py");
    expect(resolver.fileOf("tests.test_cart.TestCart")).toBe("py/tests/test_cart.py");
    expect(resolver.fileOf("tests.unit.test_tax.TestTax.TestNested")).toBe("py/tests/unit/test_tax.py");
    expect(resolver.fileOf("py.tests.unit.test_tax")).toBe("py/tests/unit/test_tax.py");
    expect(resolver.fileOf("tests.test_missing.TestX")).toBeNull();
  });

  it("what is no JVM class or Python module is left alone: a Go package path, names with spaces", () => {
    expect(resolver.fileOf("github.com/acme/shop/cart")).toBeNull();
    expect(resolver.fileOf("Cart adds items")).toBeNull();
    expect(resolver.fileOf("")).toBeNull();
  });

  it("a classname that fits a JVM class and a Python module both is ambiguous", () => {
    const both = cli.fileResolver(workspace(["src/app/models/UserTest.java", "app/models.py"]));
    expect(both.fileOf("app.models.UserTest")).toBeNull();
    const jvmOnly = cli.fileResolver(workspace(["src/app/models/UserTest.java"]));
    expect(jvmOnly.fileOf("app.models.UserTest")).toBe("src/app/models/UserTest.java");
  });
});

describe("the workspace is read once, within bounds", () => {
  it("indexed on the first lookup only: a file added later is not seen", () => {
    const root = workspace(["src/test/java/a/FirstTest.java"]);
    const resolver = cli.fileResolver(root);
    expect(resolver.index()).toBeNull();
    expect(resolver.fileOf("a.FirstTest")).toBe("src/test/java/a/FirstTest.java");
    const entries = resolver.index()!.entries;
    writeFileSync(join(root, "src/test/java/a/LaterTest.java"), "");
    expect(resolver.fileOf("a.LaterTest")).toBeNull();
    expect(resolver.index()!.entries).toBe(entries);
  });

  it("past the cap on entries or the time budget nothing is resolved: a file unique in part of the workspace may not be in all of it", () => {
    const root = workspace(["src/test/java/a/OneTest.java", "other/a/OneTest.java"]);
    const capped = cli.fileResolver(root, { maxEntries: 3 });
    expect(capped.fileOf("a.OneTest")).toBeNull();
    expect(capped.index()!.incomplete).toMatch(/more than 3 files and directories/);
    let clock = 0;
    const slow = cli.indexWorkspace(root, { budgetMs: 5, now: () => (clock += 10) });
    expect(slow.incomplete).toMatch(/took more than/);
    expect(cli.indexWorkspace(root).incomplete).toBeNull();
    expect(cli.MAX_WORKSPACE_ENTRIES).toBe(300_000);
  });
});

describe("JUnit XML: file attributes added in place", () => {
  const resolver = () => cli.fileResolver(workspace(SOURCES));

  it("only cases with a classname and no file of their own or of their suite; the rest of the text is kept byte for byte", () => {
    const xml =
      `<?xml version="1.0" encoding="UTF-8"?>\r\n<testsuites>\r\n` +
      `<testsuite name="com.acme.cart.CartTest" tests="4">\r\n` +
      `  <testcase name="adds" classname="com.acme.cart.CartTest" time="0.01"/>\r\n` +
      `  <testcase\n    classname="com.acme.cart.CartTest$Nested" name="nested &amp; more"><failure message="a &#x1B;[31m &gt; b">at x &#27; y <![CDATA[<testcase classname="tests.test_cart">]]></failure><system-out>&lt;testcase classname="com.acme.pay.PayTest"&gt;</system-out></testcase>\r\n` +
      `  <testcase name="own file" classname="com.acme.cart.CartTest" file="given/File.java"/>\r\n` +
      `  <testcase name="empty file attribute" classname="com.acme.cart.CartTest" file=""/>\r\n` +
      `  <testcase name="no classname"/>\r\n` +
      `  <testcase name="ambiguous" classname="com.acme.common.UtilTest"/>\r\n` +
      `</testsuite>\r\n` +
      `<testsuite name="with file" file="suite/file.py"><testsuite name="inner"><testcase name="inherits" classname="tests.test_cart"/></testsuite></testsuite>\r\n` +
      `<testsuite name="py"><testcase classname="tests.test_cart.TestCart" name="pays"></testcase></testsuite>\r\n` +
      `</testsuites>\r\n`;
    const { text, added } = cli.addFilesToJUnit(xml, resolver());
    expect(added).toBe(3);
    const cart = ` file="shop/cart/src/test/java/com/acme/cart/CartTest.java"`;
    expect(text).toBe(
      xml
        .replace(`<testcase name="adds"`, `<testcase${cart} name="adds"`)
        .replace(
          `<testcase\n    classname="com.acme.cart.CartTest$Nested"`,
          `<testcase${cart}\n    classname="com.acme.cart.CartTest$Nested"`,
        )
        .replace(
          `<testcase classname="tests.test_cart.TestCart"`,
          `<testcase file="py/tests/test_cart.py" classname="tests.test_cart.TestCart"`,
        ),
    );
  });

  it("a document saxes cannot read (not well-formed, a DTD) is returned as is", () => {
    const broken = `<testsuite><testcase classname="com.acme.cart.CartTest" name="a"></testsuite>`;
    expect(cli.addFilesToJUnit(broken, resolver())).toEqual({ text: broken, added: 0 });
    const dtd = `<!DOCTYPE x [<!ENTITY e "x">]><testsuite><testcase classname="com.acme.cart.CartTest" name="a"/></testsuite>`;
    expect(cli.addFilesToJUnit(dtd, resolver())).toEqual({ text: dtd, added: 0 });
  });

  it("a path that needs escaping in an attribute is escaped", () => {
    const odd = cli.fileResolver(workspace(["R&D <x>/src/test/java/q/QTest.java"]));
    const { text } = cli.addFilesToJUnit(`<testsuite><testcase classname="q.QTest" name="a"/></testsuite>`, odd);
    expect(text).toBe(
      `<testsuite><testcase file="R&#38;D &#60;x&#62;/src/test/java/q/QTest.java" classname="q.QTest" name="a"/></testsuite>`,
    );
  });
});

describe("JSON reports", () => {
  it("cases with a classname and no file (absent, null or empty) get one; others keep theirs", () => {
    const suites = [
      {
        name: "s",
        cases: [
          { name: "a", classname: "com.acme.cart.CartTest", status: "passed" },
          { name: "b", classname: "tests.test_cart", file: null, status: "passed" },
          { name: "c", classname: "com.acme.pay.PayTest", file: "own.kt", status: "passed" },
          { name: "d", status: "passed" },
        ],
        suites: [{ name: "inner", cases: [{ name: "e", classname: "com.acme.pay.PayTest", file: "", status: "failed" }] }],
      },
    ];
    expect(cli.addFilesToSuites(suites, cli.fileResolver(workspace(SOURCES)))).toBe(3);
    expect(suites[0]!.cases.map((c) => (c as { file?: unknown }).file)).toEqual([
      "shop/cart/src/test/java/com/acme/cart/CartTest.java",
      "py/tests/test_cart.py",
      "own.kt",
      undefined,
    ]);
    expect(suites[0]!.suites[0]!.cases[0]!.file).toBe("shop/pay/src/test/kotlin/com/acme/pay/PayTest.kt");
  });
});

describe("the upload", () => {
  async function upload(root: string, args: string[]) {
    let output = "";
    const bodies: Record<string, unknown>[] = [];
    const fetchFn = (async (_input: string | URL | Request, init?: RequestInit) => {
      bodies.push(JSON.parse(String(init?.body ?? "{}")));
      return new Response(JSON.stringify({ number: 1, status: "pending" }), {
        status: 202,
        headers: { "content-type": "application/json" },
      });
    }) as typeof fetch;
    const code = await cli.run(["upload", "--no-codeowners", ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        CTA_URL: "https://analytics.example.test",
        CTA_UPLOAD_TOKEN: TOKEN,
        GIT_CEILING_DIRECTORIES: tmpdir(),
      },
      cwd: root,
      stdout: { write: (chunk) => (output += chunk) },
      stderr: { write: (chunk) => (output += chunk) },
      fetch: fetchFn,
      baseDelayMs: 0,
    });
    return { code, output, bodies };
  }

  const surefire = `<testsuite name="com.acme.cart.CartTest"><testcase name="adds" classname="com.acme.cart.CartTest"/></testsuite>`;

  it("sends the XML with the resolved file (relative to the working directory outside a repository); --no-resolve-files sends it as read", async () => {
    const root = workspace([...SOURCES, ["shop/cart/target/surefire-reports/TEST-com.acme.cart.CartTest.xml", surefire]]);
    const report = "shop/cart/target/surefire-reports/TEST-com.acme.cart.CartTest.xml";
    const resolved = await upload(root, ["--verbose", report]);
    expect(resolved.code, resolved.output).toBe(0);
    expect(resolved.bodies[0]!.junit_xml).toEqual([
      surefire.replace("<testcase name", `<testcase file="shop/cart/src/test/java/com/acme/cart/CartTest.java" name`),
    ]);
    expect(resolved.output).toMatch(/test files: 1 case\(s\) given their file from the workspace/);
    const asRead = await upload(root, ["--no-resolve-files", report]);
    expect(asRead.bodies[0]!.junit_xml).toEqual([surefire]);
  });

  it("with --run-per-file too: each run's XML gets the file", async () => {
    const root = workspace([...SOURCES, ["r/one.xml", surefire], ["r/two.xml", surefire]]);
    const perFile = await upload(root, ["--run-per-file", "r"]);
    expect(perFile.bodies.map((b) => String(b.junit_xml)).every((x) => x.includes(`file="shop/cart/`))).toBe(true);
    expect(perFile.bodies).toHaveLength(2);
  });
});
