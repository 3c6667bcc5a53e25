/**
 * The upload's `base_commit_sha`: the pull request's merge base computed with git (a shallow clone
 * deepened through a file:// remote), else the base commit the CI names, else nothing; the
 * --base-commit / --no-base-commit flags; and the pull request base each CI gives. The bundle's
 * `run` in process, with a fetch playing the service; git for real in temporary repositories,
 * every call bounded by a timeout.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
const TOKEN = `ctu_${"b4sEc0mm1t".repeat(4)}${"a1b2c3d4e".slice(0, 9)}`;
const URL_BASE = "https://analytics.example.test";

type Writable = { write(chunk: string): unknown };
type PullRequestBase = { sha?: string; ref?: string; isMergeBase: boolean };
type CliModule = {
  run(
    argv: string[],
    io: {
      env: Record<string, string>;
      cwd: string;
      stdout: Writable;
      stderr: Writable;
      fetch: typeof fetch;
      baseDelayMs: number;
      readEvent?: (path: string) => unknown;
    },
  ): Promise<number>;
  detectPullRequestBase(env: Record<string, string>, options?: { readEvent?: (path: string) => unknown }): PullRequestBase | null;
  DEEPEN_STEPS: readonly number[];
};

let cli: CliModule;
let dir: string;
/** A bare-ish origin: main with 10 commits, then feature (60 commits) and main (10 more) apart. */
let origin: string;
let branchPoint: string;
let mainTip: string;
let featureTip: string;

/** Git for the fixtures: no host or user configuration, bounded in time. */
function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.email=t@example.test", "-c", "user.name=t", "-c", "commit.gpgsign=false", ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: dir, GIT_CONFIG_NOSYSTEM: "1" },
    encoding: "utf8",
    timeout: 10_000,
    stdio: ["ignore", "pipe", "pipe"],
  }).trim();
}

function commits(cwd: string, prefix: string, count: number): void {
  for (let i = 0; i < count; i++) {
    writeFileSync(join(cwd, `${prefix}${i}.txt`), `${i}\n`);
    git(cwd, "add", "-A");
    git(cwd, "commit", "-q", "-m", `${prefix}${i}`);
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cta-cli-base-"));
  origin = join(dir, "origin");
  mkdirSync(origin);
  git(origin, "init", "-q", "-b", "main");
  commits(origin, "m", 10);
  branchPoint = git(origin, "rev-parse", "HEAD");
  git(origin, "checkout", "-q", "-b", "feature");
  commits(origin, "f", 60);
  featureTip = git(origin, "rev-parse", "HEAD");
  git(origin, "checkout", "-q", "main");
  commits(origin, "n", 10);
  mainTip = git(origin, "rev-parse", "HEAD");
}, 60_000);
beforeAll(async () => {
  cli = (await import(pathToFileURL(BIN).href)) as CliModule;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let cloneCount = 0;
/** A clone of the feature branch (`--depth N` through a file:// URL, which git's --depth needs), with a report. */
function clone(depth?: number): string {
  const target = join(dir, `clone${++cloneCount}`);
  git(dir, "clone", "-q", "--branch", "feature", ...(depth ? ["--depth", String(depth)] : []), `file://${origin}`, target);
  reportIn(target);
  return target;
}

function reportIn(folder: string): string {
  mkdirSync(join(folder, "reports"), { recursive: true });
  writeFileSync(join(folder, "reports", "junit.xml"), `<testsuite name="s"><testcase classname="a.B" name="ok"/></testsuite>`);
  return folder;
}

/** GitHub Actions on a pull_request event whose payload names `base` (the event file is read through readEvent). */
function githubPullRequest(base: { sha?: string; ref?: string } = { sha: mainTip, ref: "main" }) {
  return {
    env: {
      GITHUB_ACTIONS: "true",
      GITHUB_EVENT_NAME: "pull_request",
      GITHUB_EVENT_PATH: "/event.json",
      GITHUB_HEAD_REF: "feature",
      GITHUB_SHA: "f".repeat(40),
    },
    readEvent: () => ({ pull_request: { head: { sha: featureTip, ref: "feature" }, base } }),
  };
}

type Sent = { path: string; body: Record<string, unknown> };
async function cta(
  args: string[],
  options: { cwd: string; env?: Record<string, string>; readEvent?: (path: string) => unknown },
): Promise<{ code: number; output: string; sent: Sent[] }> {
  let output = "";
  const sent: Sent[] = [];
  const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
    sent.push({ path: new URL(String(input)).pathname, body: JSON.parse(String(init?.body ?? "{}")) });
    return new Response(JSON.stringify({ number: 3, status: "pending", url: "https://app.example.test/r/3" }), {
      status: 202,
      headers: { "content-type": "application/json" },
    });
  }) as typeof fetch;
  const code = await cli.run(["upload", "--no-codeowners", "--verbose", ...args, "reports/junit.xml"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: dir,
      GIT_CONFIG_NOSYSTEM: "1",
      // No repository above the test's folders.
      GIT_CEILING_DIRECTORIES: tmpdir(),
      CTA_URL: URL_BASE,
      CTA_UPLOAD_TOKEN: TOKEN,
      ...options.env,
    },
    cwd: options.cwd,
    stdout: { write: (chunk) => (output += chunk) },
    stderr: { write: (chunk) => (output += chunk) },
    fetch: fetchFn,
    baseDelayMs: 0,
    readEvent: options.readEvent,
  });
  return { code, output, sent };
}

describe("the merge base, computed with git", () => {
  it("a full clone: the merge base of the pull request's head and base, not the base branch's tip", async () => {
    const pr = githubPullRequest();
    const result = await cta([], { cwd: clone(), env: pr.env, readEvent: pr.readEvent });
    expect(result.code, result.output).toBe(0);
    expect(result.sent[0]!.body).toMatchObject({ commit_sha: featureTip, base_commit_sha: branchPoint });
    expect(result.output).toContain(`base commit: ${branchPoint} (the merge base of ${featureTip} and ${mainTip})`);
    expect(result.output).not.toMatch(/notice|warning/);
  });

  it("a --depth 1 clone is deepened (by 50, then 200 commits) until git finds it", async () => {
    expect(cli.DEEPEN_STEPS).toEqual([50, 200]);
    const cwd = clone(1);
    expect(git(cwd, "rev-parse", "--is-shallow-repository")).toBe("true");
    const pr = githubPullRequest();
    const result = await cta([], { cwd, env: pr.env, readEvent: pr.readEvent });
    expect(result.code, result.output).toBe(0);
    expect(result.sent[0]!.body).toMatchObject({ base_commit_sha: branchPoint });
    // 60 commits on the branch: the first deepening (50) was not enough, the second was.
    expect(Number(git(cwd, "rev-list", "--count", "HEAD"))).toBeGreaterThan(60);
  }, 30_000);

  it("a branch name only (Jenkins CHANGE_TARGET): the merge base with origin/<branch>, fetched into a shallow clone", async () => {
    const env = { JENKINS_URL: "https://ci.example.test/", GIT_COMMIT: featureTip, CHANGE_BRANCH: "feature", CHANGE_TARGET: "main" };
    const full = await cta([], { cwd: clone(), env });
    expect(full.sent[0]!.body.base_commit_sha, full.output).toBe(branchPoint);
    const shallow = await cta([], { cwd: clone(1), env });
    expect(shallow.sent[0]!.body.base_commit_sha, shallow.output).toBe(branchPoint);
  }, 30_000);
});

describe("when git cannot: the base commit the CI names, or nothing", () => {
  it("no repository: the payload's base commit, with a one-line notice", async () => {
    const pr = githubPullRequest();
    const cwd = reportIn(join(dir, "not-a-repo"));
    const result = await cta([], { cwd, env: pr.env, readEvent: pr.readEvent });
    expect(result.code, result.output).toBe(0);
    expect(result.sent[0]!.body.base_commit_sha).toBe(mainTip);
    const notices = result.output.split("\n").filter((l) => l.startsWith("base commit:"));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^base commit: no merge base \(.*not a git repository.*\); sending the pull request's base commit from the CI instead$/,
    );
  });

  it("unrelated histories (not shallow, so no fetch): the payload's base commit", async () => {
    const unrelated = join(dir, "unrelated");
    mkdirSync(unrelated);
    git(unrelated, "init", "-q", "-b", "main");
    commits(unrelated, "u", 2);
    // The base commit is there, but the histories have no commit in common.
    git(unrelated, "fetch", "-q", `file://${origin}`, "main");
    reportIn(unrelated);
    const pr = githubPullRequest({ sha: mainTip, ref: "main" });
    const result = await cta([], { cwd: unrelated, env: pr.env, readEvent: pr.readEvent });
    expect(result.code, result.output).toBe(0);
    expect(result.sent[0]!.body.base_commit_sha).toBe(mainTip);
    expect(result.output).toContain(`base commit: no merge base (git merge-base found no common commit of HEAD and ${mainTip})`);
  });

  it("a branch name only and no repository: nothing sent, a notice, exit 0", async () => {
    const cwd = reportIn(join(dir, "not-a-repo-either"));
    const result = await cta([], {
      cwd,
      env: { BUILDKITE: "true", BUILDKITE_PULL_REQUEST: "12", BUILDKITE_PULL_REQUEST_BASE_BRANCH: "main" },
    });
    expect(result.code, result.output).toBe(0);
    expect(result.sent[0]!.body).not.toHaveProperty("base_commit_sha");
    expect(result.output).toMatch(/^base commit: none sent \(no merge base with origin\/main: /m);
  });

  it("a push (no pull request): nothing sent and no git, no notice", async () => {
    const cwd = clone();
    const env = { GITHUB_ACTIONS: "true", GITHUB_EVENT_NAME: "push", GITHUB_EVENT_PATH: "/event.json", GITHUB_SHA: featureTip };
    const result = await cta([], { cwd, env, readEvent: () => ({ pull_request: { base: { sha: mainTip, ref: "main" } } }) });
    expect(result.code, result.output).toBe(0);
    expect(result.sent[0]!.body).not.toHaveProperty("base_commit_sha");
    expect(result.output).toContain("base commit: none (not a pull request build)");
  });

  it("GitLab's diff base is already the merge base: sent as is", async () => {
    const cwd = reportIn(join(dir, "gitlab"));
    const diffBase = "d".repeat(40);
    const result = await cta([], {
      cwd,
      env: {
        GITLAB_CI: "true",
        CI_MERGE_REQUEST_IID: "7",
        CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
        CI_MERGE_REQUEST_DIFF_BASE_SHA: diffBase,
        CI_COMMIT_SHA: "c".repeat(40),
      },
    });
    expect(result.sent[0]!.body.base_commit_sha).toBe(diffBase);
    expect(result.output).not.toMatch(/^base commit: no/m);
  });
});

describe("--base-commit and --no-base-commit", () => {
  it("--base-commit SHA is sent as given (lower case), without git", async () => {
    const pr = githubPullRequest();
    const cwd = reportIn(join(dir, "flag"));
    const result = await cta(["--base-commit", "ABCDEF1"], { cwd, env: pr.env, readEvent: pr.readEvent });
    expect(result.code, result.output).toBe(0);
    expect(result.sent[0]!.body.base_commit_sha).toBe("abcdef1");
    expect(result.output).toContain("base commit: abcdef1 (--base-commit)");
  });

  it("--no-base-commit sends none on a pull request", async () => {
    const pr = githubPullRequest();
    const result = await cta(["--no-base-commit"], { cwd: clone(), env: pr.env, readEvent: pr.readEvent });
    expect(result.code, result.output).toBe(0);
    expect(result.sent[0]!.body).not.toHaveProperty("base_commit_sha");
  });

  it.each([["abc"], ["g".repeat(40)], ["a".repeat(65)], [""], ["--verbose"]])(
    "--base-commit %j is a usage error (exit 2), nothing sent",
    async (value) => {
      const result = await cta([`--base-commit=${value}`], { cwd: reportIn(join(dir, "bad")) });
      expect(result.code, result.output).toBe(2);
      expect(result.output).toContain(`error: --base-commit must be a commit SHA of 7 to 64 hexadecimal digits (got "${value}")`);
      expect(result.sent).toEqual([]);
    },
  );

  it("both flags exclude each other", async () => {
    const result = await cta(["--base-commit", "a".repeat(40), "--no-base-commit"], { cwd: reportIn(join(dir, "both")) });
    expect(result.code).toBe(2);
    expect(result.output).toContain("--base-commit and --no-base-commit exclude each other");
  });
});

describe("the pull request's base each CI names", () => {
  const sha = "a".repeat(40);
  it("GitHub Actions: pull_request and pull_request_target payloads; other events none", () => {
    const readEvent = () => ({ pull_request: { base: { sha, ref: "release/2.x" }, head: { sha: "b".repeat(40) } } });
    for (const event of ["pull_request", "pull_request_target"]) {
      const env = { GITHUB_ACTIONS: "true", GITHUB_EVENT_NAME: event, GITHUB_EVENT_PATH: "/e.json" };
      expect(cli.detectPullRequestBase(env, { readEvent })).toEqual({ sha, ref: "release/2.x", isMergeBase: false });
    }
    expect(
      cli.detectPullRequestBase({ GITHUB_ACTIONS: "true", GITHUB_EVENT_NAME: "push", GITHUB_EVENT_PATH: "/e.json" }, { readEvent }),
    ).toBeNull();
    const unreadable = () => {
      throw new Error("ENOENT");
    };
    const env = { GITHUB_ACTIONS: "true", GITHUB_EVENT_NAME: "pull_request", GITHUB_EVENT_PATH: "/e.json" };
    expect(cli.detectPullRequestBase(env, { readEvent: unreadable })).toBeNull();
    // A base that is not a SHA or a plain branch name is left out.
    const odd = () => ({ pull_request: { base: { sha: "not-a-sha", ref: "--upload-pack=x" } } });
    expect(cli.detectPullRequestBase(env, { readEvent: odd })).toBeNull();
  });

  it("GitLab: the diff base (the merge base), else the target branch's SHA; none outside merge requests", () => {
    const mr = { GITLAB_CI: "true", CI_MERGE_REQUEST_IID: "7", CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main" };
    expect(
      cli.detectPullRequestBase({ ...mr, CI_MERGE_REQUEST_DIFF_BASE_SHA: sha, CI_MERGE_REQUEST_TARGET_BRANCH_SHA: "c".repeat(40) }),
    ).toEqual({
      sha,
      ref: "main",
      isMergeBase: true,
    });
    expect(cli.detectPullRequestBase({ ...mr, CI_MERGE_REQUEST_TARGET_BRANCH_SHA: sha })).toEqual({ sha, ref: "main", isMergeBase: false });
    expect(cli.detectPullRequestBase({ GITLAB_CI: "true", CI_COMMIT_BRANCH: "main", CI_COMMIT_SHA: sha })).toBeNull();
  });

  it("Buildkite and Jenkins: the base branch only; CircleCI: none", () => {
    expect(
      cli.detectPullRequestBase({ BUILDKITE: "true", BUILDKITE_PULL_REQUEST: "12", BUILDKITE_PULL_REQUEST_BASE_BRANCH: "main" }),
    ).toEqual({
      ref: "main",
      isMergeBase: false,
    });
    expect(
      cli.detectPullRequestBase({ BUILDKITE: "true", BUILDKITE_PULL_REQUEST: "false", BUILDKITE_PULL_REQUEST_BASE_BRANCH: "" }),
    ).toBeNull();
    expect(cli.detectPullRequestBase({ JENKINS_URL: "https://ci/", CHANGE_ID: "24", CHANGE_TARGET: "main" })).toEqual({
      ref: "main",
      isMergeBase: false,
    });
    expect(cli.detectPullRequestBase({ JENKINS_URL: "https://ci/", BRANCH_NAME: "main" })).toBeNull();
    expect(cli.detectPullRequestBase({ CIRCLECI: "true", CIRCLE_PULL_REQUEST: "https://github.com/a/b/pull/1" })).toBeNull();
  });
});
