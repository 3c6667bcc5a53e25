/**
 * The uploader's verdicts end to end (issue 28): the Node server as a child process (in-memory
 * PGlite), the CLI as the built bundle, and a local node:http server speaking GitHub's REST API
 * for issue comments (list with Link pagination, create, update; checking the token, the headers
 * and the paths; able to refuse writes with 403 as a fork's read-only token does).
 *
 * Verdicts come from real uploads: a default-branch run, then feature-branch runs naming its
 * commit as their base. Then:
 * - `--wait` prints the failures grouped by verdict, new first, each with its reason, and the
 *   fixed count; the step summary does the same with test pages;
 * - `--fail-on new`: known failures only → 0, a new failure → 1, a mass failure → 1, the service
 *   unreachable or the run not processed in time → the exit code without --fail-on;
 * - `--pr-comment`: one comment per project and job, created then updated, another job's its own,
 *   another person's comment left alone, 403 a warning, and GitHub Enterprise's `/api/v3` prefix.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "packages/uploader/bin/ci-test-analytics.mjs");
const ADMIN_TOKEN = "verdicts-e2e-admin-token-0123456789";
const WEB_APP_URL = "https://app.verdicts-e2e.test";
const MAIN_SHA = "5ba5e00".padEnd(40, "1");
const GITHUB_TOKEN = "ghs_verdictsE2eToken0123456789";
const PR_NUMBER = 7;

let server: ServerProcess;
let github: FakeGitHub;
let dir: string;
let uploadToken: string;
let projectId: string;

const json = { "content-type": "application/json" };

// ---------------------------------------------------------------------------------------------
// GitHub's issue comments, as its REST API serves them.

type Comment = { id: number; body: string; user: { login: string } };
type Recorded = { method: string; path: string; headers: IncomingMessage["headers"] };
type FakeGitHub = {
  url: string;
  comments: Comment[];
  requests: Recorded[];
  /** "read-only": writes are refused with 403, as a fork pull request's token is. */
  mode: "read-write" | "read-only";
  close(): Promise<void>;
};

/** Serves /repos/acme/app/issues/7/comments under `prefix` ("" like api.github.com, "/api/v3" like GitHub Enterprise Server). */
async function fakeGitHub(): Promise<FakeGitHub> {
  const state = { comments: [] as Comment[], requests: [] as Recorded[], mode: "read-write" as FakeGitHub["mode"] };
  let nextId = 1000;
  const reply = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers }).end(JSON.stringify(body));
  };
  const server: Server = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => (text += c.toString()));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://github.test");
      state.requests.push({ method: req.method ?? "", path: url.pathname + url.search, headers: req.headers });
      if (req.headers.authorization !== `Bearer ${GITHUB_TOKEN}`) return reply(res, 401, { message: "Bad credentials" });
      if (req.headers.accept !== "application/vnd.github+json" || req.headers["x-github-api-version"] !== "2022-11-28") {
        return reply(res, 400, { message: "unexpected Accept or X-GitHub-Api-Version" });
      }
      const prefix = url.pathname.startsWith("/api/v3/") ? "/api/v3" : "";
      const path = url.pathname.slice(prefix.length);
      const base = `http://${req.headers.host}${prefix}`;
      if (path === `/repos/acme/app/issues/${PR_NUMBER}/comments` && req.method === "GET") {
        const perPage = Number(url.searchParams.get("per_page") ?? 30);
        const page = Number(url.searchParams.get("page") ?? 1);
        const last = Math.max(1, Math.ceil(state.comments.length / perPage));
        const links: Record<string, string> =
          page < last
            ? {
                link: `<${base}${path}?per_page=${perPage}&page=${page + 1}>; rel="next", <${base}${path}?per_page=${perPage}&page=${last}>; rel="last"`,
              }
            : {};
        return reply(res, 200, state.comments.slice((page - 1) * perPage, page * perPage), links);
      }
      const write = req.method === "POST" || req.method === "PATCH";
      if (write && state.mode === "read-only") {
        return reply(res, 403, { message: "Resource not accessible by integration", documentation_url: "https://docs.github.com/rest" });
      }
      if (path === `/repos/acme/app/issues/${PR_NUMBER}/comments` && req.method === "POST") {
        const comment = { id: nextId++, body: JSON.parse(text).body as string, user: { login: "github-actions[bot]" } };
        state.comments.push(comment);
        return reply(res, 201, { ...comment, html_url: `https://github.test/acme/app/pull/${PR_NUMBER}#issuecomment-${comment.id}` });
      }
      const patch = /^\/repos\/acme\/app\/issues\/comments\/(\d+)$/.exec(path);
      const comment = patch ? state.comments.find((c) => c.id === Number(patch[1])) : undefined;
      if (comment && req.method === "PATCH") {
        comment.body = JSON.parse(text).body;
        return reply(res, 200, { ...comment, html_url: `https://github.test/acme/app/pull/${PR_NUMBER}#issuecomment-${comment.id}` });
      }
      return reply(res, 404, { message: "Not Found" });
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return Object.assign(state, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((done) => server.close(() => done())),
  }) as FakeGitHub;
}

// ---------------------------------------------------------------------------------------------
// Reports and the CLI

type Outcome = "pass" | "fail" | "retried";
const FILLER = Array.from({ length: 26 }, (_, i) => `p${String(i + 1).padStart(2, "0")}`);

/** A JUnit report of class `Shop`: the named tests with their outcomes, then the 26 fillers (passing unless told). */
function report(name: string, outcomes: Record<string, Outcome>, fillers: "pass" | "fail" = "pass"): string {
  const testcase = (test: string, outcome: Outcome) => {
    if (outcome === "pass") return `<testcase classname="Shop" name="${test}" time="0.01"/>`;
    if (outcome === "retried")
      return `<testcase classname="Shop" name="${test}" time="0.01"><flakyFailure message="timed out"/></testcase>`;
    return `<testcase classname="Shop" name="${test}" time="0.01"><failure message="expected 1 to be 2">at ${test}</failure></testcase>`;
  };
  const cases = [...Object.entries(outcomes).map(([test, outcome]) => testcase(test, outcome)), ...FILLER.map((t) => testcase(t, fillers))];
  const path = join(dir, name);
  writeFileSync(path, `<?xml version="1.0"?>\n<testsuite name="shop">${cases.join("")}</testsuite>\n`);
  return path;
}

type CliResult = { code: number | null; stdout: string; stderr: string };

function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child: ChildProcess = spawn(process.execPath, [BIN, ...args], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        CTA_RETRY_BASE_MS: "1",
        CTA_URL: server.base,
        CTA_UPLOAD_TOKEN: uploadToken,
        ...env,
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

/** A feature-branch upload of `file` naming the main run's commit as its base. */
const feature = (file: string, ...flags: string[]) => [
  "upload",
  "--branch",
  "feature",
  "--commit-sha",
  "fea7".padEnd(40, "2"),
  "--base-commit",
  MAIN_SHA,
  "--no-codeowners",
  ...flags,
  file,
];

/** The environment of a GitHub Actions job on pull request #7 (event payload written to disk). */
function pullRequestEnv(overrides: Record<string, string> = {}): Record<string, string> {
  const eventPath = join(dir, "event.json");
  const payload = { pull_request: { number: PR_NUMBER, head: { sha: "fea7".padEnd(40, "2") }, base: { sha: MAIN_SHA, ref: "main" } } };
  writeFileSync(eventPath, JSON.stringify({ ...payload, repository: { full_name: "acme/app" } }));
  return {
    GITHUB_ACTIONS: "true",
    GITHUB_EVENT_NAME: "pull_request",
    GITHUB_EVENT_PATH: eventPath,
    GITHUB_REPOSITORY: "acme/app",
    GITHUB_JOB: "test",
    GITHUB_TOKEN,
    GITHUB_API_URL: github.url,
    ...overrides,
  };
}

const ours = () => github.comments.filter((c) => c.body.startsWith("<!-- ci-test-analytics:pr-comment"));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cta-verdicts-e2e-"));
  [server, github] = await Promise.all([
    startServerProcess({ DATABASE_URL: "memory://", ADMIN_TOKEN, WEB_APP_URL, SECRETS_KEY: "verdicts-e2e-secrets-key-0123456789abcdef" }),
    fakeGitHub(),
  ]);
  const organization = await server.call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Verdicts" }), json);
  expect(organization.status).toBe(201);
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
  // The base: on main, `checkout` and `search` fail; 28 of 30 pass (a normal failing share of 7 %).
  const base = await runCli([
    "upload",
    "--branch",
    "main",
    "--commit-sha",
    MAIN_SHA,
    "--no-codeowners",
    "--wait",
    report("main.xml", { pays: "pass", checkout: "fail", search: "fail", cart: "pass" }),
  ]);
  expect(base.code, base.stderr).toBe(0);
});

afterAll(async () => {
  if (server && server.child.exitCode === null) await server.stop();
  await github?.close();
  rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------

describe("--wait and the step summary: the failures grouped by verdict, new first", () => {
  it("prints each failure with its verdict and reason, new first, then failing on the base and flaky, and the fixed count", async () => {
    const summary = join(dir, "summary.md");
    writeFileSync(summary, "");
    const result = await runCli(
      feature(report("mixed.xml", { pays: "fail", checkout: "fail", search: "pass", cart: "retried", wishlist: "fail" }), "--wait"),
      { GITHUB_STEP_SUMMARY: summary },
    );
    expect(result.code, result.stderr).toBe(0); // without --fail-on, verdicts decide nothing
    const lines = result.stdout.trim().split("\n");
    const number = /test run #(\d+) \(pending\)/.exec(lines[0]!)![1]!;
    expect(lines[2]).toBe(
      `Verdicts of test run #${number} against run #1 (main, 5ba5e00), the pull request's base commit: 2 new, 1 failing on the base, 1 flaky, 0 quarantined, 0 infrastructure; 1 fixed`,
    );
    // New first (among them, newest case first: the service's order), then failing on the base, then flaky.
    expect(lines.slice(3)).toEqual([
      "  new              Shop › wishlist (failed): not in the base, run #1",
      "  new              Shop › pays (failed): passed on main in run #1 (5ba5e00)",
      "  failing_on_base  Shop › checkout (failed): also failed on main in run #1 (5ba5e00)",
      "  flaky            Shop › cart (passed): failed, then passed on retry in this run",
    ]);

    const text = readFileSync(summary, "utf8");
    const runs = `${WEB_APP_URL}/projects/${projectId}/runs`;
    expect(text).toContain("### CI test analytics: ❌ 2 new failures\n");
    expect(text).toContain(
      `- Test run [#${number}](${runs}/${number}) (processed), compared with run [#1](${runs}/1) \\(main, 5ba5e00\\), the pull request's base commit`,
    );
    expect(text).toContain("| 2 | 1 | 1 | 0 | 0 | 1 |");
    const newAt = text.indexOf("#### New failures (2)");
    const baseAt = text.indexOf("#### Failing on the base too (1)");
    const flakyAt = text.indexOf("#### Flaky (1)");
    expect(newAt).toBeGreaterThan(0);
    expect(newAt).toBeLessThan(baseAt);
    expect(baseAt).toBeLessThan(flakyAt);
    expect(text).toMatch(
      new RegExp(
        `- \`Shop › pays\` \\(failed\\) — passed on main in run #1 \\\\\\(5ba5e00\\\\\\) — \\[test page\\]\\(${WEB_APP_URL.replaceAll(".", "\\.")}/projects/${projectId}/tests/[0-9a-f-]{36}\\)`,
      ),
    );
  });
});

describe("--fail-on new: the merge gate", () => {
  it("only known failures (failing on the base, flaky) → 0; a new failure → 1", async () => {
    const known = await runCli(feature(report("known.xml", { checkout: "fail", cart: "retried" }), "--fail-on", "new"));
    expect(known.code, known.stderr).toBe(0);
    expect(known.stdout).toContain("Merge gate (--fail-on new): passes: no new failure (2 known)");
    const fresh = await runCli(feature(report("fresh.xml", { checkout: "fail", pays: "fail" }), "--fail-on", "new"));
    expect(fresh.code, fresh.stderr).toBe(1);
    expect(fresh.stdout).toMatch(/Merge gate \(--fail-on new\): fails the build: test run #\d+ has 1 new failure\(s\)/);
    expect(fresh.stdout).toContain("  new              Shop › pays (failed): passed on main in run #1 (5ba5e00)");
  });

  it("a mass failure (26 of 30 tests failing with one message) → 1, whatever else the verdicts say", async () => {
    const result = await runCli(
      feature(report("mass.xml", { checkout: "fail", pays: "pass", cart: "pass", search: "pass" }, "fail"), "--fail-on", "new"),
    );
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/0 new, 0 failing on the base, 0 flaky, 0 quarantined, 27 infrastructure/);
    expect(result.stdout).toMatch(/Merge gate \(--fail-on new\): fails the build: test run #\d+ is a mass failure \(.+\): re-run it/);
  });

  it("unknown values of --fail-on are a usage error (exit 2), before anything is sent", async () => {
    const result = await runCli(feature(report("usage.xml", {}), "--fail-on", "flaky"));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--fail-on must be one of: new (got "flaky")');
  });

  it("the service unreachable, or the run not processed in time → the exit code without --fail-on", async () => {
    const failing = report("offline.xml", { pays: "fail" });
    const offline = { CTA_URL: "http://127.0.0.1:9" };
    const unreachable = await runCli(feature(failing, "--fail-on", "new", "--retries", "0"), offline);
    expect(unreachable.code, unreachable.stderr).toBe(0);
    expect(unreachable.stderr).toMatch(
      /warning: Merge gate \(--fail-on new\): cannot decide \(the verdicts of 1 of 1 run\(s\) could not be read\)/,
    );
    // The default exit code is what stands: with --quarantine (no list, no cache) a failure fails.
    const quarantine = await runCli(
      feature(failing, "--fail-on", "new", "--retries", "0", "--quarantine", "--cache-dir", join(dir, "none")),
      offline,
    );
    expect(quarantine.code, quarantine.stderr).toBe(1);

    // A service that accepts the run and never processes it: --timeout passes.
    const stuck = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on("end", () => {
        const run = { number: 41, project_id: projectId, status: "pending", url: `${WEB_APP_URL}/projects/${projectId}/runs/41` };
        res.writeHead(req.method === "POST" ? 202 : 200, json).end(JSON.stringify(run));
      });
    });
    await new Promise<void>((done) => stuck.listen(0, "127.0.0.1", done));
    const slow = await runCli(feature(failing, "--fail-on", "new", "--timeout", "0.3"), {
      CTA_URL: `http://127.0.0.1:${(stuck.address() as AddressInfo).port}`,
    });
    await new Promise<void>((done) => stuck.close(() => done()));
    expect(slow.code, slow.stderr).toBe(0);
    expect(slow.stderr).toContain("timed out waiting for test run #41 (still pending)");
    expect(slow.stderr).toContain("cannot decide");
  });
});

describe("--pr-comment: one comment per project and job on the pull request", () => {
  it("the first upload creates it (after reading every page of comments); another person's comments stay as they are", async () => {
    // 120 comments by people: ours goes after them, so finding it takes the second page.
    for (let i = 0; i < 120; i++) github.comments.push({ id: i + 1, body: `LGTM ${i}`, user: { login: "reviewer" } });
    const result = await runCli(
      feature(report("pr-1.xml", { pays: "fail", checkout: "fail", search: "pass" }), "--pr-comment"),
      pullRequestEnv(),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Pull request #7: comment created: https:\/\/github\.test\/acme\/app\/pull\/7#issuecomment-\d+/);
    expect(ours()).toHaveLength(1);
    const body = ours()[0]!.body;
    expect(body.split("\n")[0]).toBe(`<!-- ci-test-analytics:pr-comment project=${projectId} job=test variant= -->`);
    expect(body).toContain("### CI test analytics: ❌ 1 new failure\n");
    expect(body).toContain("| 1 | 1 | 0 | 0 | 0 | 1 |");
    expect(body).toMatch(
      /#### New failures \(1\)\n\n- `Shop › pays` \(failed\) — passed on main in run #1 \\\(5ba5e00\\\) — \[test page\]\(https:\/\/app\.verdicts-e2e\.test\/projects\/[0-9a-f-]+\/tests\/[0-9a-f-]+\)/,
    );
    expect(body).toContain("<details><summary>Failing on the base too (1)</summary>");
    expect(body).toMatch(
      new RegExp(
        `- Test run \\[#\\d+\\]\\(${WEB_APP_URL.replaceAll(".", "\\.")}/projects/${projectId}/runs/\\d+\\), compared with run \\[#1\\]`,
      ),
    );
    const paths = github.requests.map((r) => `${r.method} ${r.path}`);
    expect(paths).toEqual([
      "GET /repos/acme/app/issues/7/comments?per_page=100",
      "GET /repos/acme/app/issues/7/comments?per_page=100&page=2",
      "POST /repos/acme/app/issues/7/comments",
    ]);
    expect(github.comments.filter((c) => c.user.login === "reviewer").map((c) => c.body)).toEqual(
      Array.from({ length: 120 }, (_, i) => `LGTM ${i}`),
    );
  });

  it("a second upload of the same project and job updates it (still one); another job on the pull request gets its own", async () => {
    github.requests.length = 0;
    const again = await runCli(feature(report("pr-2.xml", { checkout: "fail" }), "--pr-comment"), pullRequestEnv());
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/Pull request #7: comment updated/);
    expect(ours()).toHaveLength(1);
    expect(ours()[0]!.body).toContain("### CI test analytics: ✅ no new failures (1 known)\n");
    expect(github.requests.at(-1)!.method).toBe("PATCH");
    expect(github.requests.at(-1)!.path).toBe(`/repos/acme/app/issues/comments/${ours()[0]!.id}`);

    const lint = await runCli(feature(report("pr-lint.xml", { pays: "fail" }), "--pr-comment"), pullRequestEnv({ GITHUB_JOB: "lint" }));
    expect(lint.code, lint.stderr).toBe(0);
    expect(lint.stdout).toMatch(/comment created/);
    expect(ours().map((c) => c.body.split("\n")[0])).toEqual([
      `<!-- ci-test-analytics:pr-comment project=${projectId} job=test variant= -->`,
      `<!-- ci-test-analytics:pr-comment project=${projectId} job=lint variant= -->`,
    ]);
    expect(ours()[0]!.body).toContain("no new failures"); // the test job's comment is left as it was
    expect(ours()[1]!.body).toContain("1 new failure");
  });

  it("a read-only token (a fork's pull request) is a warning: the exit code is the one without --pr-comment", async () => {
    github.mode = "read-only";
    try {
      const before = ours().map((c) => c.body);
      const passing = await runCli(
        feature(report("pr-fork.xml", { checkout: "fail" }), "--pr-comment", "--fail-on", "new"),
        pullRequestEnv(),
      );
      expect(passing.code, passing.stderr).toBe(0);
      expect(passing.stderr).toContain(
        "warning: could not post the pull request comment: updating the comment on pull request #7: GitHub answered 403: Resource not accessible by integration (the token needs `pull-requests: write`; a pull request from a fork gets a read-only token); the build does not fail for it",
      );
      expect(passing.stdout).toContain("::warning title=CI test analytics%3A pull request comment::");
      const failing = await runCli(
        feature(report("pr-fork-2.xml", { pays: "fail" }), "--pr-comment", "--fail-on", "new"),
        pullRequestEnv(),
      );
      expect(failing.code).toBe(1); // --fail-on new's own decision, untouched
      expect(ours().map((c) => c.body)).toEqual(before);
    } finally {
      github.mode = "read-write";
    }
  });

  it("GitHub Enterprise Server: GITHUB_API_URL with a path prefix (/api/v3) is kept on every request, the Link pages included", async () => {
    github.requests.length = 0;
    const result = await runCli(
      feature(report("pr-ghes.xml", { cart: "retried" }), "--pr-comment"),
      pullRequestEnv({ GITHUB_API_URL: `${github.url}/api/v3/`, GITHUB_JOB: "enterprise" }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/comment created/);
    expect(github.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "GET /api/v3/repos/acme/app/issues/7/comments?per_page=100",
      "GET /api/v3/repos/acme/app/issues/7/comments?per_page=100&page=2",
      "POST /api/v3/repos/acme/app/issues/7/comments",
    ]);
    expect(ours().at(-1)!.body).toContain("job=enterprise");
    expect(ours().at(-1)!.body).toContain("✅ no new failures (1 known)");
  });

  it("not a pull request event: a notice, nothing posted; the GitHub token is never printed", async () => {
    github.requests.length = 0;
    const result = await runCli(
      feature(report("push.xml", { pays: "fail" }), "--pr-comment", "--verbose"),
      pullRequestEnv({ GITHUB_EVENT_NAME: "push" }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("--pr-comment: not a pull request event (push); no comment posted");
    expect(github.requests).toEqual([]);
    expect(result.stdout + result.stderr).not.toContain(GITHUB_TOKEN);
  });
});
