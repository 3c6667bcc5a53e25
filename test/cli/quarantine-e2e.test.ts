/**
 * The uploader against the real service, end to end (issue 14's "Done when"): the Node server as a
 * child process (src/node/server.ts on an in-memory PGlite), the CLI as the built bundle run with
 * node, and later the packed tarball installed into an empty folder.
 *
 * A test turns flaky through two uploads of one commit, is quarantined through
 * POST /api/v1/tests/:id/quarantine, and then:
 * - `upload --quarantine` on a report where only that test failed exits 0; with another failure
 *   it exits 1 and names it; the GitHub step summary links the run and each failure's test page;
 * - the tarball `npm pack` makes of packages/uploader (at most 200 KB) installs into an empty
 *   folder and runs there;
 * - with the service stopped: a list cached less than 24 h ago still masks (exit 0); an empty
 *   cache folder masks nothing (exit 1, saying why), and so does a cache older than 24 h.
 * The tests run in order: the last ones stop the service.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "packages/uploader/bin/ci-test-analytics.mjs");
const ADMIN_TOKEN = "cli-e2e-admin-token-0123456789";
const WEB_APP_URL = "https://app.cli-e2e.test";
const TARBALL_LIMIT = 200 * 1024;
const run = promisify(execFile);

let server: ServerProcess;
let dir: string;
let apiKey: string;
let uploadToken: string;
let projectId: string;
/** The cache folder of the CI job being simulated (kept between its steps). */
let cacheDir: string;

const json = { "content-type": "application/json" };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cta-cli-e2e-"));
  cacheDir = join(dir, "cache");
  server = await startServerProcess({
    DATABASE_URL: "memory://",
    ADMIN_TOKEN,
    WEB_APP_URL,
    SECRETS_KEY: "cli-e2e-secrets-key-0123456789abcdefghij",
  });
  const organization = await server.call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "CLI e2e" }), json);
  expect(organization.status).toBe(201);
  apiKey = organization.body.api_key.secret;
  const project = await server.call(
    "POST",
    `/admin/v1/organizations/${organization.body.organization.id}/projects`,
    ADMIN_TOKEN,
    JSON.stringify({ name: "App" }),
    json,
  );
  expect(project.status).toBe(201);
  uploadToken = project.body.upload_token;
  projectId = project.body.project.id;
});

afterAll(() => {
  if (server && server.child.exitCode === null) server.child.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

type CliResult = { code: number | null; stdout: string; stderr: string };

/** Runs `command` (the bundle with node by default) with a clean environment: no CI variables of the host. */
function runCli(args: string[], options: { env?: Record<string, string>; cwd?: string; command?: string[] } = {}): Promise<CliResult> {
  const command = options.command ?? [process.execPath, BIN];
  return new Promise((done, fail) => {
    const child: ChildProcess = spawn(command[0]!, [...command.slice(1), ...args], {
      cwd: options.cwd ?? dir,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        CTA_RETRY_BASE_MS: "1",
        CTA_URL: server.base,
        CTA_UPLOAD_TOKEN: uploadToken,
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

/** A JUnit report: `Checkout › pays` and `Cart › adds items` with the given outcomes. */
function report(name: string, outcomes: { pays: "pass" | "fail"; adds: "pass" | "fail" }): string {
  const testcase = (classname: string, test: string, outcome: "pass" | "fail") =>
    outcome === "pass"
      ? `<testcase classname="${classname}" name="${test}" time="0.1"/>`
      : `<testcase classname="${classname}" name="${test}" time="0.1"><failure message="expected true">at ${test}</failure></testcase>`;
  const xml = `<?xml version="1.0"?>\n<testsuite name="unit">${testcase("Checkout", "pays", outcomes.pays)}${testcase("Cart", "adds items", outcomes.adds)}<testcase classname="Cart" name="empties" time="0.1"/></testsuite>\n`;
  const path = join(dir, name);
  writeFileSync(path, xml);
  return path;
}

async function testNamed(name: string) {
  const res = await server.call("GET", `/api/v1/projects/${projectId}/tests?sort=name`, apiKey);
  expect(res.status).toBe(200);
  return res.body.data.find((t: { name: string }) => t.name === name);
}

describe("a flaky test quarantined through the API, and the CLI's --quarantine", () => {
  it("the test turns flaky (a pass and a failure on one commit) and is quarantined through the API", async () => {
    const green = await runCli([
      "upload",
      "--commit-sha",
      "c0ffee1",
      "--branch",
      "main",
      "--wait",
      report("green.xml", { pays: "pass", adds: "pass" }),
    ]);
    expect(green.code, green.stderr).toBe(0);
    const red = await runCli([
      "upload",
      "--commit-sha",
      "c0ffee1",
      "--branch",
      "main",
      "--wait",
      report("red.xml", { pays: "fail", adds: "pass" }),
    ]);
    expect(red.code, red.stderr).toBe(0); // without --quarantine, failed tests do not decide the exit code
    const pays = await testNamed("pays");
    expect(pays.health).toBe("flaky");

    const quarantined = await server.call(
      "POST",
      `/api/v1/tests/${pays.id}/quarantine`,
      apiKey,
      JSON.stringify({ reason: "Times out on ARM runners", duration: "7d", owner: "@acme/payments" }),
      json,
    );
    expect(quarantined.status).toBe(200);
    expect(quarantined.body.quarantined).toBe(true);
  });

  it("only the quarantined test failed: exit 0, the failure printed as quarantined, the list cached", async () => {
    const result = await runCli([
      "upload",
      "--quarantine",
      "--cache-dir",
      cacheDir,
      report("only-flaky.xml", { pays: "fail", adds: "pass" }),
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("Tests: 3 in all, 2 passed, 1 failed, 0 errored, 0 skipped; 1 of the 1 failed or errored quarantined");
    expect(result.stdout).toMatch(/^ {2}quarantined {6}Checkout › pays \(failed\): Times out on ARM runners, until \d{4}-/m);
    expect(result.stdout).toContain("Passing: every failed or errored test is quarantined");
    expect(result.stderr).toContain("Quarantine: the quarantine list from the service (1 test(s))");
    const files = readdirSync(cacheDir);
    expect(files).toHaveLength(1);
    const cached = JSON.parse(readFileSync(join(cacheDir, files[0]!), "utf8"));
    expect(cached.data.map((t: { name: string }) => t.name)).toEqual(["pays"]);
    expect(cached.etag).toMatch(/^"q-/);
    expect(readFileSync(join(cacheDir, files[0]!), "utf8")).not.toContain(uploadToken.slice(4));
  });

  it("another test failed too: exit 1, naming it; the list revalidated with its ETag (304) and the cache's time refreshed", async () => {
    const [file] = readdirSync(cacheDir);
    const before = JSON.parse(readFileSync(join(cacheDir, file!), "utf8")).checked_at;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const result = await runCli([
      "upload",
      "--quarantine",
      "--cache-dir",
      cacheDir,
      report("two-failures.xml", { pays: "fail", adds: "fail" }),
    ]);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/^ {2}not quarantined {2}Cart › adds items \(failed\)$/m);
    expect(result.stdout).toMatch(/^ {2}quarantined {6}Checkout › pays \(failed\)/m);
    expect(result.stdout).toContain("Failing: 1 failed or errored test(s) not quarantined: Cart › adds items");
    expect(result.stderr).toContain("unchanged on the service");
    const after = JSON.parse(readFileSync(join(cacheDir, file!), "utf8")).checked_at;
    expect(Date.parse(after)).toBeGreaterThan(Date.parse(before));
  });

  it("GITHUB_STEP_SUMMARY: counts, the run's page and base, the failures grouped by verdict, each with its reason and test page (processed within --wait)", async () => {
    const summary = join(dir, "summary.md");
    writeFileSync(summary, "earlier step\n");
    const result = await runCli(
      ["upload", "--quarantine", "--wait", "--cache-dir", cacheDir, report("summary.xml", { pays: "fail", adds: "fail" })],
      {
        env: { GITHUB_STEP_SUMMARY: summary },
      },
    );
    expect(result.code, result.stderr).toBe(1);
    const number = /test run #(\d+) \(pending\)/.exec(result.stdout)![1];
    const text = readFileSync(summary, "utf8");
    expect(text.startsWith("earlier step\n### CI test analytics: ❌ 1 failed test not quarantined\n")).toBe(true);
    expect(text).toContain("| 3 | 1 | 2 | 0 | 0 |");
    const runPage = (n: number | string) => `[#${n}](${WEB_APP_URL}/projects/${projectId}/runs/${n})`;
    expect(text).toContain(
      `- Test run ${runPage(number!)} (processed), compared with run ${runPage(Number(number) - 1)}, the previous default-branch run`,
    );
    const pays = await testNamed("pays");
    const adds = await testNamed("adds items");
    // The run before failed `adds items` too; `pays` was quarantined when the run arrived.
    expect(text).toContain("| 0 | 1 | 0 | 1 | 0 | 0 |");
    expect(text).toContain(
      `#### Failing on the base too (1)\n\n- \`Cart › adds items\` (failed) — also failed on the default branch in run #${Number(number) - 1} — [test page](${WEB_APP_URL}/projects/${projectId}/tests/${adds.id})`,
    );
    expect(text).toContain(
      `#### Quarantined (1)\n\n- \`Checkout › pays\` (failed) — quarantined when the run arrived: Times out on ARM runners — [test page](${WEB_APP_URL}/projects/${projectId}/tests/${pays.id})`,
    );
    expect(text.indexOf("#### Failing on the base too")).toBeLessThan(text.indexOf("#### Quarantined"));
  });
});

describe("owners from the repository's CODEOWNERS", () => {
  it("the CLI sends .github/CODEOWNERS with the upload: the run's tests get their owners from their files", async () => {
    const repo = join(dir, "owned-repo");
    mkdirSync(join(repo, ".github"), { recursive: true });
    writeFileSync(join(repo, ".github", "CODEOWNERS"), "*.ts @acme/web\n/src/checkout/ @acme/payments team@acme.example\n");
    writeFileSync(
      join(repo, "junit.xml"),
      `<testsuite name="owned"><testcase classname="Owned" name="charges" file="src/checkout/charge.test.ts"/><testcase classname="Owned" name="renders" file="./src/web/page.test.ts"/><testcase classname="Owned" name="unfiled"/></testsuite>`,
    );
    const result = await runCli(["upload", "--wait", "junit.xml"], { cwd: repo });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout + result.stderr).toMatch(/CODEOWNERS: sent \.github\/CODEOWNERS \(2 rules/);
    expect((await testNamed("charges")).owners).toEqual(["@acme/payments", "team@acme.example"]);
    expect((await testNamed("renders")).owners).toEqual(["@acme/web"]);
    expect((await testNamed("unfiled")).owners).toEqual([]);
  });
});

describe("the packed package", () => {
  it("`npm pack` of packages/uploader is at most 200 KB, installs into an empty folder with no dependencies and runs there", async () => {
    const packDir = join(dir, "pack");
    const npmCache = join(dir, "npm-cache");
    mkdirSync(packDir);
    const npmEnv = {
      ...process.env,
      npm_config_cache: npmCache,
      npm_config_update_notifier: "false",
      npm_config_fund: "false",
      npm_config_audit: "false",
    };
    const packed = await run("npm", ["pack", "--json", "--pack-destination", packDir], {
      cwd: join(ROOT, "packages/uploader"),
      env: npmEnv,
    });
    const [info] = JSON.parse(packed.stdout) as { filename: string; size: number; files: { path: string }[] }[];
    const tarball = join(packDir, info!.filename);
    expect(statSync(tarball).size).toBe(info!.size);
    expect(info!.size, `the tarball is ${info!.size} bytes`).toBeLessThanOrEqual(TARBALL_LIMIT);
    expect(info!.files.map((f) => f.path).sort()).toEqual([
      "README.md",
      "THIRD-PARTY-NOTICES.md",
      "bin/ci-test-analytics.mjs",
      "package.json",
    ]);

    const project = join(dir, "elsewhere");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), '{"name": "elsewhere", "private": true}\n');
    await run("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], { cwd: project, env: npmEnv });
    expect(readdirSync(join(project, "node_modules")).filter((name) => !name.startsWith("."))).toEqual(["ci-test-analytics-uploader"]);

    const version = await runCli(["--version"], {
      cwd: project,
      command: ["npx", "--offline", "ci-test-analytics"],
      env: { npm_config_cache: npmCache },
    });
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(join(ROOT, "packages/uploader/package.json"), "utf8")).version);

    writeFileSync(join(project, "junit.xml"), readFileSync(report("packed.xml", { pays: "fail", adds: "pass" })));
    const result = await runCli(["upload", "--quarantine", "--wait", "--cache-dir", join(project, ".cache"), "junit.xml"], {
      cwd: project,
      command: ["npx", "--offline", "ci-test-analytics"],
      env: { npm_config_cache: npmCache },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Uploaded 1 file as test run #\d+ \(pending\)/);
    expect(result.stdout).toMatch(/Test run #\d+ processed/);
    expect(result.stdout).toContain("Passing: every failed or errored test is quarantined");

    // Or without installing: npx straight from the tarball, in a folder with nothing in it.
    const bare = join(dir, "bare");
    mkdirSync(bare);
    writeFileSync(join(bare, "junit.xml"), readFileSync(report("bare.xml", { pays: "pass", adds: "fail" })));
    const direct = await runCli(["upload", "--quarantine", "--cache-dir", join(bare, ".cache"), "junit.xml"], {
      cwd: bare,
      command: ["npx", "--yes", "--offline", `--package=${tarball}`, "ci-test-analytics"],
      env: { npm_config_cache: npmCache },
    });
    expect(direct.code, direct.stderr).toBe(1);
    expect(direct.stdout).toContain("Failing: 1 failed or errored test(s) not quarantined: Cart › adds items");
  });
});

describe("with the service stopped", () => {
  it("a list cached less than 24 h ago still masks the quarantined failure: exit 0, saying where the list came from", async () => {
    server.child.kill("SIGTERM");
    await new Promise((resolve) => server.child.once("exit", resolve));
    const result = await runCli(["upload", "--quarantine", "--cache-dir", cacheDir, report("offline.xml", { pays: "fail", adds: "pass" })]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(
      /warning: upload of offline\.xml failed after 5 attempt\(s\): .*ECONNREFUSED.*; the build does not fail for it/,
    );
    expect(result.stderr).toMatch(
      /warning: could not fetch the quarantine list: the service is unreachable \(.*ECONNREFUSED.*after 1 attempt\(s\)\); using the cached list, confirmed \d+ s ago/,
    );
    expect(result.stdout).toMatch(/^ {2}quarantined {6}Checkout › pays \(failed\)/m);

    // Another failure is still a failure.
    const other = await runCli([
      "upload",
      "--quarantine",
      "--cache-dir",
      cacheDir,
      report("offline-2.xml", { pays: "fail", adds: "fail" }),
    ]);
    expect(other.code).toBe(1);
    expect(other.stdout).toContain("not quarantined: Cart › adds items");
  });

  it("no cache (an empty folder): nothing is masked, exit 1, and the CLI says why", async () => {
    const empty = join(dir, "empty-cache");
    mkdirSync(empty);
    const result = await runCli(["upload", "--quarantine", report("no-cache.xml", { pays: "fail", adds: "pass" })], {
      env: { CTA_CACHE_DIR: empty },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`could not fetch the quarantine list: the service is unreachable`);
    expect(result.stderr).toContain(`no cached list in ${empty}: no failure is masked`);
    expect(result.stdout).toMatch(/^ {2}not quarantined {2}Checkout › pays \(failed\)$/m);
    expect(result.stdout).toContain("Failing: 1 failed or errored test(s) not quarantined: Checkout › pays");
    // Tests that all passed still pass without the service.
    const green = await runCli(["upload", "--quarantine", report("no-cache-green.xml", { pays: "pass", adds: "pass" })], {
      env: { CTA_CACHE_DIR: empty },
    });
    expect(green.code).toBe(0);
    expect(green.stdout).toContain("Passing: no failed or errored tests");
  });

  it("a cache the service last confirmed more than 24 h ago is not used: exit 1", async () => {
    const [file] = readdirSync(cacheDir);
    const path = join(cacheDir, file!);
    const cached = JSON.parse(readFileSync(path, "utf8"));
    writeFileSync(path, JSON.stringify({ ...cached, checked_at: new Date(Date.now() - 25 * 3_600_000).toISOString() }));
    const result = await runCli(["upload", "--quarantine", "--cache-dir", cacheDir, report("stale.xml", { pays: "fail", adds: "pass" })]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("the cached list is too old to use (confirmed 25 h ago, at most 24 h): no failure is masked");
  });
});
