/**
 * The uploader outside any CI, against the real service (the Node server as a child process on an
 * in-memory PGlite, the CLI as the built bundle run with node): in a git repository of JVM and
 * Python sources with a CODEOWNERS, a Gradle report whose cases name only their classname is
 * stored with each test's file resolved from the workspace, so CODEOWNERS gives those tests their
 * owners; an ambiguous class gets neither. The run carries git's branch and commit. Uploading the
 * report again without resolving files finds the same tests: the identity uses the classname, and
 * the file only when there is none.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
const ADMIN_TOKEN = "test-files-e2e-admin-token-0123456789";
const json = { "content-type": "application/json" };

let server: ServerProcess;
let dir: string;
let repo: string;
let head: string;
let apiKey: string;
let uploadToken: string;
let projectId: string;

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.email=t@example.test", "-c", "user.name=t", "-c", "commit.gpgsign=false", ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: dir, GIT_CONFIG_NOSYSTEM: "1" },
    encoding: "utf8",
    timeout: 10_000,
    stdio: ["ignore", "pipe", "pipe"],
  }).trim();
}

function write(path: string, content = ""): void {
  mkdirSync(join(repo, path, ".."), { recursive: true });
  writeFileSync(join(repo, path), content);
}

/** Gradle's report of three classes (one with an inner class), none with a file. */
const GRADLE_REPORT =
  `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n` +
  `<testsuite name="com.acme.cart.CartTest" tests="2"><testcase name="adds an item" classname="com.acme.cart.CartTest" time="0.01"/>` +
  `<testcase name="is empty at first" classname="com.acme.cart.CartTest$WhenNew" time="0.01"/></testsuite>\n` +
  `<testsuite name="com.acme.pay.PayTest" tests="1"><testcase name="charges the card" classname="com.acme.pay.PayTest" time="0.02"><failure message="declined">at PayTest.kt:12</failure></testcase></testsuite>\n` +
  `<testsuite name="com.acme.common.UtilTest" tests="1"><testcase name="formats money" classname="com.acme.common.UtilTest" time="0.01"/></testsuite>\n` +
  `</testsuites>\n`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cta-cli-files-e2e-"));
  repo = join(dir, "shop");
  mkdirSync(repo);
  write(".github/CODEOWNERS", "/cart/ @acme/cart\n*.kt @acme/payments\n/py/ @acme/python\n");
  write("cart/src/test/java/com/acme/cart/CartTest.java", "class CartTest {}\n");
  write("cart/src/main/java/com/acme/cart/Cart.java", "class Cart {}\n");
  write("pay/src/test/kotlin/com/acme/pay/PayTest.kt", "class PayTest\n");
  // One class in two modules: which one ran is unknown.
  write("cart/src/test/java/com/acme/common/UtilTest.java", "class UtilTest {}\n");
  write("pay/src/test/java/com/acme/common/UtilTest.java", "class UtilTest {}\n");
  write("py/tests/test_cart.py", "class TestCart: pass\n");
  write("build/test-results/test/TEST-all.xml", GRADLE_REPORT);
  write(
    "py/report.xml",
    `<testsuites><testsuite name="pytest"><testcase classname="tests.test_cart.TestCart" name="test_total" time="0.003"/></testsuite></testsuites>`,
  );
  git(repo, "init", "-q", "-b", "main");
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", "sources");
  git(repo, "checkout", "-q", "-b", "feature/owners");
  head = git(repo, "rev-parse", "HEAD");

  server = await startServerProcess({ DATABASE_URL: "memory://", ADMIN_TOKEN, SECRETS_KEY: "test-files-e2e-secrets-key-0123456789abc" });
  const organization = await server.call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Files e2e" }), json);
  expect(organization.status).toBe(201);
  apiKey = organization.body.api_key.secret;
  const project = await server.call(
    "POST",
    `/admin/v1/organizations/${organization.body.organization.id}/projects`,
    ADMIN_TOKEN,
    JSON.stringify({ name: "Shop" }),
    json,
  );
  expect(project.status).toBe(201);
  uploadToken = project.body.upload_token;
  projectId = project.body.project.id;
}, 60_000);

afterAll(async () => {
  if (server && server.child.exitCode === null) await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The bundle with node, in `cwd`, with no CI variable of the host. */
function runCli(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child: ChildProcess = spawn(process.execPath, [BIN, ...args], {
      cwd,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        GIT_CONFIG_NOSYSTEM: "1",
        CTA_RETRY_BASE_MS: "1",
        CTA_URL: server.base,
        CTA_UPLOAD_TOKEN: uploadToken,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    child.on("error", fail);
    child.on("close", (code) => done({ code, output }));
  });
}

type TestRow = { id: string; name: string; classname: string | null; file: string | null; owners: string[] };
async function tests(): Promise<TestRow[]> {
  const res = await server.call("GET", `/api/v1/projects/${projectId}/tests?sort=name&limit=100`, apiKey);
  expect(res.status).toBe(200);
  return res.body.data;
}
const named = (rows: TestRow[], name: string) => rows.find((t) => t.name === name);

describe("a Gradle report outside any CI, in a git repository", () => {
  it("each test's file comes from the workspace and its owners from CODEOWNERS; the run has git's branch and commit", async () => {
    const result = await runCli(["upload", "--wait", "build/test-results/test/TEST-all.xml"], repo);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toMatch(/CODEOWNERS: sent \.github\/CODEOWNERS \(3 rules/);
    const rows = await tests();
    expect(named(rows, "adds an item")).toMatchObject({
      classname: "com.acme.cart.CartTest",
      file: "cart/src/test/java/com/acme/cart/CartTest.java",
      owners: ["@acme/cart"],
    });
    expect(named(rows, "is empty at first")).toMatchObject({
      classname: "com.acme.cart.CartTest$WhenNew",
      file: "cart/src/test/java/com/acme/cart/CartTest.java",
      owners: ["@acme/cart"],
    });
    expect(named(rows, "charges the card")).toMatchObject({
      file: "pay/src/test/kotlin/com/acme/pay/PayTest.kt",
      owners: ["@acme/payments"],
    });
    // Two modules hold com.acme.common.UtilTest: no file, so no owners.
    expect(named(rows, "formats money")).toMatchObject({ file: null, owners: [] });

    const number = /test run #(\d+)/.exec(result.output)?.[1];
    const run = await server.call("GET", `/api/v1/projects/${projectId}/test_runs/${number}`, apiKey);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ branch: "feature/owners", commit_sha: head });
  });

  it("from a subdirectory: the file is relative to the repository's top level, not the working directory", async () => {
    const result = await runCli(["upload", "--wait", "report.xml"], join(repo, "py"));
    expect(result.code, result.output).toBe(0);
    // No CODEOWNERS below py/: the project's latest one applies.
    expect(named(await tests(), "test_total")).toMatchObject({
      classname: "tests.test_cart.TestCart",
      file: "py/tests/test_cart.py",
      owners: ["@acme/python"],
    });
  });

  it("absolute test file paths under the checkout are sent relative to it, so the runner's folder is not part of a test's identity", async () => {
    // Jest and Vitest write each case's absolute file and no classname: the file names the test.
    const report = (root: string) =>
      `<testsuites><testsuite name="web" file="${root}/web/cart.test.ts"><testcase name="totals the cart" file="${root}/web/cart.test.ts" time="0.004"/>` +
      `<testcase name="reads the shared fixture" file="/opt/fixtures/shared.test.ts" time="0.001"/></testsuite></testsuites>`;
    write("web/report.xml", report(repo));
    const first = await runCli(["upload", "--wait", "web/report.xml"], repo);
    expect(first.code, first.output).toBe(0);
    const rows = await tests();
    // Below the checkout: relative; elsewhere: as written.
    expect(named(rows, "totals the cart")).toMatchObject({ classname: null, file: "web/cart.test.ts" });
    expect(named(rows, "reads the shared fixture")).toMatchObject({ file: "/opt/fixtures/shared.test.ts" });

    // The same repository checked out elsewhere (another runner): the same test.
    const elsewhere = join(dir, "elsewhere", "shop");
    git(dir, "clone", "-q", repo, elsewhere);
    mkdirSync(join(elsewhere, "web"), { recursive: true });
    writeFileSync(join(elsewhere, "web", "report.xml"), report(elsewhere));
    const second = await runCli(["upload", "--wait", "web/report.xml"], elsewhere);
    expect(second.code, second.output).toBe(0);
    const again = (await tests()).filter((t) => t.name === "totals the cart");
    expect(again.map((t) => t.id)).toEqual([named(rows, "totals the cart")!.id]);
  });

  it("the same report with --no-resolve-files finds the same tests: identity does not depend on the file when there is a classname", async () => {
    const before = await tests();
    const result = await runCli(["upload", "--wait", "--no-resolve-files", "build/test-results/test/TEST-all.xml"], repo);
    expect(result.code, result.output).toBe(0);
    const after = await tests();
    expect(after.map((t) => t.id).sort()).toEqual(before.map((t) => t.id).sort());
    expect(named(after, "adds an item")).toMatchObject({ file: "cart/src/test/java/com/acme/cart/CartTest.java", owners: ["@acme/cart"] });
  });
});
