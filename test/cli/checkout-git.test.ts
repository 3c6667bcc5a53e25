/**
 * Branch and commit from git in the working directory, where neither a flag nor the CI's variables
 * give them: a real repository in a temporary folder (init, commit, a branch, a detached HEAD), the
 * bundle's `run` in process with a fetch playing the service, and the order: flags, then the CI,
 * then a JSON report's own, then git. No git, or no repository, gives nothing and says nothing.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
const TOKEN = `ctu_${"cH3ck0uTgt".repeat(4)}${"a1b2c3d4e".slice(0, 9)}`;
const URL_BASE = "https://analytics.example.test";

type Writable = { write(chunk: string): unknown };
type Checkout = { root?: string; branch?: string; commit_sha?: string };
type CliModule = {
  run(
    argv: string[],
    io: { env: Record<string, string>; cwd: string; stdout: Writable; stderr: Writable; fetch: typeof fetch; baseDelayMs: number },
  ): Promise<number>;
  readCheckout(input: { cwd: string; env: Record<string, string>; head: boolean; root: boolean }): Promise<Checkout>;
};

let cli: CliModule;
let dir: string;
/** The repository: main with two commits, then feature with one more. */
let repo: string;
let mainTip: string;
let featureTip: string;

const gitEnv = () => ({ PATH: process.env.PATH ?? "", HOME: dir, GIT_CONFIG_NOSYSTEM: "1", GIT_CEILING_DIRECTORIES: tmpdir() });

/** Git for the fixtures: no host or user configuration, bounded in time. */
function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.email=t@example.test", "-c", "user.name=t", "-c", "commit.gpgsign=false", ...args], {
    cwd,
    env: gitEnv(),
    encoding: "utf8",
    timeout: 10_000,
    stdio: ["ignore", "pipe", "pipe"],
  }).trim();
}

function commit(message: string): string {
  writeFileSync(join(repo, `${message}.txt`), `${message}\n`);
  git(repo, "add", "-A");
  git(repo, "commit", "-q", "-m", message);
  return git(repo, "rev-parse", "HEAD");
}

beforeAll(async () => {
  cli = (await import(pathToFileURL(BIN).href)) as CliModule;
  dir = mkdtempSync(join(tmpdir(), "cta-cli-checkout-"));
  repo = join(dir, "repo");
  mkdirSync(join(repo, "reports"), { recursive: true });
  writeFileSync(join(repo, "reports", "junit.xml"), `<testsuite name="s"><testcase classname="a.B" name="ok"/></testsuite>`);
  git(repo, "init", "-q", "-b", "main");
  commit("one");
  mainTip = commit("two");
  git(repo, "checkout", "-q", "-b", "feature/cart");
  featureTip = commit("three");
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Sent = Record<string, unknown>;
async function cta(args: string[], options: { cwd?: string; env?: Record<string, string>; report?: string } = {}) {
  let output = "";
  const sent: Sent[] = [];
  const fetchFn = (async (_input: string | URL | Request, init?: RequestInit) => {
    sent.push(JSON.parse(String(init?.body ?? "{}")));
    return new Response(JSON.stringify({ number: 1, status: "pending" }), { status: 202, headers: { "content-type": "application/json" } });
  }) as typeof fetch;
  const code = await cli.run(["upload", "--no-codeowners", ...args, options.report ?? "reports/junit.xml"], {
    env: { ...gitEnv(), CTA_URL: URL_BASE, CTA_UPLOAD_TOKEN: TOKEN, ...options.env },
    cwd: options.cwd ?? repo,
    stdout: { write: (chunk) => (output += chunk) },
    stderr: { write: (chunk) => (output += chunk) },
    fetch: fetchFn,
    baseDelayMs: 0,
  });
  return { code, output, body: sent[0] ?? {} };
}

describe("outside a CI: branch and commit from git", () => {
  it("on a branch: its name and HEAD's commit", async () => {
    git(repo, "checkout", "-q", "feature/cart");
    const result = await cta([]);
    expect(result.code, result.output).toBe(0);
    expect(result.body).toMatchObject({ branch: "feature/cart", commit_sha: featureTip });
    git(repo, "checkout", "-q", "main");
    expect((await cta([])).body).toMatchObject({ branch: "main", commit_sha: mainTip });
  });

  it("a detached HEAD: the commit, and no branch", async () => {
    git(repo, "checkout", "-q", "--detach", mainTip);
    try {
      const result = await cta([]);
      expect(result.body.commit_sha).toBe(mainTip);
      expect(result.body).not.toHaveProperty("branch");
      expect(await cli.readCheckout({ cwd: repo, env: gitEnv(), head: true, root: true })).toEqual({ root: repo, commit_sha: mainTip });
    } finally {
      git(repo, "checkout", "-q", "main");
    }
  });

  it("from a subdirectory: the same repository, whose top level is the root", async () => {
    const checkout = await cli.readCheckout({ cwd: join(repo, "reports"), env: gitEnv(), head: true, root: true });
    expect(checkout).toEqual({ root: repo, branch: "main", commit_sha: mainTip });
    expect(await cli.readCheckout({ cwd: repo, env: gitEnv(), head: false, root: false })).toEqual({});
  });
});

describe("the order: flags, the CI, a JSON report's own, then git", () => {
  it("flags win, and git is not asked for what they give", async () => {
    const given = "c".repeat(40);
    const result = await cta(["--branch", "given", "--commit-sha", given]);
    expect(result.body).toMatchObject({ branch: "given", commit_sha: given });
  });

  it("a CI that names the commit but not the branch (TeamCity): the CI's commit, git's branch", async () => {
    const ci = "d".repeat(40);
    const result = await cta(["--verbose"], { env: { TEAMCITY_VERSION: "2025.07", BUILD_VCS_NUMBER: ci, BUILD_NUMBER: "12" } });
    expect(result.body).toMatchObject({ branch: "main", commit_sha: ci, build_id: "12" });
    expect(result.output).toMatch(/from git: \{"branch":"main"\}/);
  });

  it("a JSON report's branch and commit come before git's", async () => {
    const own = "e".repeat(40);
    writeFileSync(
      join(repo, "reports", "run.json"),
      JSON.stringify({ branch: "from-report", commit_sha: own, suites: [{ name: "s", cases: [{ name: "t", status: "passed" }] }] }),
    );
    try {
      const result = await cta([], { report: "reports/run.json" });
      expect(result.body).toMatchObject({ branch: "from-report", commit_sha: own });
      // A report that names only its branch: git gives the commit.
      writeFileSync(join(repo, "reports", "run.json"), JSON.stringify({ branch: "from-report", suites: [] }));
      expect((await cta([], { report: "reports/run.json" })).body).toMatchObject({ branch: "from-report", commit_sha: mainTip });
    } finally {
      rmSync(join(repo, "reports", "run.json"));
    }
  });
});

describe("when git cannot say", () => {
  it("not a repository: no branch or commit, exit 0, nothing printed about it", async () => {
    const outside = join(dir, "plain");
    mkdirSync(join(outside, "reports"), { recursive: true });
    writeFileSync(join(outside, "reports", "junit.xml"), `<testsuite name="s"><testcase classname="a.B" name="ok"/></testsuite>`);
    const result = await cta([], { cwd: outside });
    expect(result.code, result.output).toBe(0);
    expect(result.body).not.toHaveProperty("branch");
    expect(result.body).not.toHaveProperty("commit_sha");
    expect(result.output).not.toMatch(/git/i);
  });

  it("no git on PATH: the same", async () => {
    const result = await cta([], { env: { PATH: join(dir, "no-such-bin") } });
    expect(result.code, result.output).toBe(0);
    expect(result.body).not.toHaveProperty("commit_sha");
    expect(result.output).not.toMatch(/git/i);
  });

  it("a repository with no commit yet: its branch, no commit", async () => {
    const empty = join(dir, "empty");
    mkdirSync(empty);
    git(empty, "init", "-q", "-b", "trunk");
    expect(await cli.readCheckout({ cwd: empty, env: gitEnv(), head: true, root: false })).toEqual({ branch: "trunk" });
  });
});
