/**
 * action.yml, the GitHub Action: its composite step's script run with bash the way the runner runs
 * it (inputs turned into the step's environment as its `env:` block says, GITHUB_ACTION_PATH at
 * the repository root), against a local server playing the service. Checks that the inputs
 * become the CLI's options, that globs reach the CLI unexpanded, and that bad inputs are refused.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const TOKEN = `ctu_${"a1B2c3D4e5".repeat(4)}${"Z9y8x7w6v".slice(0, 9)}`;

/** The parts of action.yml a runner uses: the inputs with their defaults, the step's env and script. */
function readAction() {
  const text = readFileSync(join(ROOT, "action.yml"), "utf8");
  const inputsBlock = /^inputs:\n([\s\S]*?)^runs:/m.exec(text)![1]!;
  const inputs: Record<string, { required: boolean; default: string }> = {};
  for (const [, name, body] of inputsBlock.matchAll(/^ {2}([a-z-]+):\n((?: {4}.*\n)+)/gm)) {
    const fallback = /^ {4}default: "(.*)"$/m.exec(body!)?.[1] ?? "";
    inputs[name!] = { required: /^ {4}required: true$/m.test(body!), default: fallback };
  }
  const envBlock = /^ {6}env:\n((?: {8}.*\n)+)/m.exec(text)![1]!;
  const env = [...envBlock.matchAll(/^ {8}([A-Z_]+): \$\{\{ inputs\.([a-z-]+) \}\}$/gm)].map(([, key, input]) => ({
    key: key!,
    input: input!,
  }));
  const script = /^ {6}run: \|\n((?: {8}.*\n|\n)+)/m.exec(text)![1]!.replace(/^ {8}/gm, "");
  return { inputs, env, script };
}

/** Run #3's comparison: `a.B › flaky` is a new failure (the quarantine list still masks it for --quarantine). */
const COMPARISON = {
  run_number: 3,
  base_choice: "previous_default",
  base: { number: 2, branch: "main", commit_sha: "2".repeat(40), url: "https://app.test/p/runs/2" },
  awaited_base_commit: null,
  infrastructure_reason: null,
  verdict_counts: { quarantined: 0, infrastructure: 0, failing_on_base: 0, flaky: 0, new: 1 },
  fixed_count: 0,
};
const NEW_FAILURE = {
  classname: "a.B",
  name: "flaky",
  file: null,
  status: "failed",
  verdict: "new",
  reason: "passed on main in run #2",
  url: "https://app.test/p/tests/t",
};

type Recorded = { method: string; path: string; body: string; authorization: string | undefined };
let server: Server;
let base: string;
let requests: Recorded[] = [];
let uploadStatus = 202;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cta-action-"));
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", path: req.url ?? "", body, authorization: req.headers.authorization });
      const path = req.url ?? "";
      res.setHeader("content-type", "application/json");
      // GitHub's issue comments (GITHUB_API_URL points here too): none yet, then the one created.
      if (path.startsWith("/repos/acme/app/issues/7/comments")) {
        res
          .writeHead(req.method === "POST" ? 201 : 200)
          .end(req.method === "POST" ? JSON.stringify({ id: 1, html_url: "https://github.test/c/1" }) : "[]");
      } else if (path === "/uploads/v1/test_runs/3/comparison") {
        res.writeHead(200).end(JSON.stringify(COMPARISON));
      } else if (path.startsWith("/uploads/v1/test_runs/3/comparison/failures?verdict=new")) {
        res.writeHead(200).end(JSON.stringify({ data: [NEW_FAILURE], pagination: { next_cursor: null, has_more: false } }));
      } else if (path === "/uploads/v1/split_plans") {
        const shards = [
          { shard: 1, items: ["test/b.test.ts"], expected_ms: 9 },
          { shard: 2, items: ["test/a.test.ts", "test/c.test.ts"], expected_ms: 8 },
        ];
        res.writeHead(200).end(JSON.stringify({ key: "k", shards }));
      } else if (path.startsWith("/uploads/v1/quarantined_tests")) {
        res.writeHead(200, { etag: '"q-1"' }).end(
          JSON.stringify({
            data: [{ test_id: "t", classname: "a.B", name: "flaky", file: null, reason: "known", expires_at: "2999-01-01T00:00:00.000Z" }],
          }),
        );
      } else if (req.method === "POST") {
        res
          .writeHead(uploadStatus)
          .end(
            JSON.stringify(
              uploadStatus === 202
                ? { number: 3, project_id: "p1", status: "pending", url: "https://app.test/p/runs/3" }
                : { error: { code: "service_unavailable", message: "down" } },
            ),
          );
      } else {
        res.writeHead(200).end(JSON.stringify({ number: 3, status: "processed", url: "https://app.test/p/runs/3" }));
      }
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((done) => server.close(done));
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the action's step as the runner would, with `given` inputs over the defaults. */
function runAction(
  given: Record<string, string>,
  cwd: string,
  runnerEnv: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { inputs, env, script } = readAction();
  const values = Object.fromEntries(Object.entries(inputs).map(([name, input]) => [name, given[name] ?? input.default]));
  const stepEnv = Object.fromEntries(env.map(({ key, input }) => [key, values[input] ?? ""]));
  return new Promise((done, fail) => {
    // As the runner runs a `shell: bash` step.
    const child = spawn("bash", ["--noprofile", "--norc", "-eo", "pipefail", "-c", script], {
      cwd,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        CTA_RETRY_BASE_MS: "1",
        GITHUB_ACTIONS: "true",
        GITHUB_ACTION_PATH: ROOT,
        ...runnerEnv,
        ...stepEnv,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

function workspace(): string {
  const cwd = mkdtempSync(join(dir, "ws-"));
  mkdirSync(join(cwd, "reports/sub"), { recursive: true });
  writeFileSync(
    join(cwd, "reports/top.xml"),
    `<testsuite name="top"><testcase classname="a.B" name="flaky"><failure/></testcase></testsuite>`,
  );
  writeFileSync(join(cwd, "reports/sub/one.xml"), `<testsuite name="one"><testcase classname="a.B" name="ok"/></testsuite>`);
  writeFileSync(join(cwd, "extra.json"), JSON.stringify({ suites: [{ name: "json", cases: [{ name: "j", status: "passed" }] }] }));
  return cwd;
}

describe("action.yml", () => {
  it("declares the documented inputs: url, token and files required; the switches default to false", () => {
    const { inputs, env } = readAction();
    expect(Object.keys(inputs).sort()).toEqual([
      "args",
      "base-commit",
      "fail-on",
      "fail-on-upload-error",
      "files",
      "github-token",
      "mode",
      "pr-comment",
      "quarantine",
      "retry",
      "run-key",
      "shard",
      "split-by",
      "split-format",
      "token",
      "url",
      "variant",
      "wait",
    ]);
    expect(
      Object.entries(inputs)
        .filter(([, i]) => i.required)
        .map(([name]) => name)
        .sort(),
    ).toEqual(["files", "token", "url"]);
    expect([
      inputs.quarantine!.default,
      inputs.wait!.default,
      inputs["fail-on-upload-error"]!.default,
      inputs["pr-comment"]!.default,
    ]).toEqual(["false", "false", "false", "false"]);
    expect(inputs["fail-on"]!.default).toBe("");
    expect(inputs["github-token"]!.default).toBe("${{ github.token }}");
    // Every input reaches the script through the environment.
    expect(env.map((e) => e.input).sort()).toEqual(Object.keys(inputs).sort());
  });

  it("runs the bundled CLI: inputs become options, globs on several lines reach the CLI unexpanded, extra args are split", async () => {
    requests = [];
    uploadStatus = 202;
    const cwd = workspace();
    const result = await runAction(
      {
        url: base,
        token: TOKEN,
        files: "reports/**/*.xml\n  extra.json",
        quarantine: "true",
        wait: "true",
        args: "--tag unit --tag linux  --cache-dir .cta-cache",
      },
      cwd,
    );
    expect(result.code, result.stderr).toBe(0);
    const post = requests.find((r) => r.method === "POST")!;
    const body = JSON.parse(post.body);
    // bash would have turned reports/**/*.xml into reports/sub/one.xml only; the CLI's glob finds both.
    expect(body.junit_xml).toHaveLength(2);
    expect(body.suites).toEqual([{ name: "json", cases: [{ name: "j", status: "passed" }] }]);
    expect(body.tags).toEqual(["unit", "linux"]);
    expect(requests.some((r) => r.path.startsWith("/uploads/v1/test_runs/3"))).toBe(true); // --wait
    expect(requests.some((r) => r.path === "/uploads/v1/quarantined_tests")).toBe(true); // --quarantine
    expect(result.stdout).toContain("Passing: every failed or errored test is quarantined");
    expect(JSON.parse(readFileSync(join(cwd, ".cta-cache", readdirSync(join(cwd, ".cta-cache"))[0]!), "utf8")).etag).toBe('"q-1"');
    expect(result.stdout + result.stderr).not.toContain(TOKEN.slice(4));
  });

  it("without quarantine the failure does not decide; fail-on-upload-error makes an outage fail the step", async () => {
    const cwd = workspace();
    uploadStatus = 503;
    const lenient = await runAction({ url: base, token: TOKEN, files: "reports", args: "--retries 0" }, cwd);
    expect(lenient.code).toBe(0);
    expect(lenient.stdout).toMatch(/^::warning title=CI test analytics%3A upload failed::/m);
    const strict = await runAction({ url: base, token: TOKEN, files: "reports", args: "--retries 0", "fail-on-upload-error": "true" }, cwd);
    expect(strict.code).toBe(1);
    uploadStatus = 202;
  });

  it("base-commit: a SHA becomes --base-commit, false --no-base-commit, an invalid one exit 2", async () => {
    const cwd = workspace();
    uploadStatus = 202;
    requests = [];
    const given = await runAction({ url: base, token: TOKEN, files: "reports", "base-commit": "0123abc" }, cwd);
    expect(given.code, given.stderr).toBe(0);
    expect(JSON.parse(requests.find((r) => r.method === "POST")!.body).base_commit_sha).toBe("0123abc");
    requests = [];
    const off = await runAction({ url: base, token: TOKEN, files: "reports", "base-commit": "false", args: "--verbose" }, cwd);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stderr).toContain("base commit: none (--no-base-commit)");
    expect(JSON.parse(requests.find((r) => r.method === "POST")!.body)).not.toHaveProperty("base_commit_sha");
    const bad = await runAction({ url: base, token: TOKEN, files: "reports", "base-commit": "main" }, cwd);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--base-commit must be a commit SHA of 7 to 64 hexadecimal digits (got "main")');
  });

  it("run-key, shard and retry become --run-key, --shard and --retry; a shard without a run key is exit 2", async () => {
    const cwd = workspace();
    uploadStatus = 202;
    requests = [];
    const part = await runAction({ url: base, token: TOKEN, files: "reports", "run-key": "run 5 / test", shard: "3/4" }, cwd);
    expect(part.code, part.stderr).toBe(0);
    expect(JSON.parse(requests.find((r) => r.method === "POST")!.body)).toMatchObject({ run_key: "run 5 / test", shard: "3/4" });
    requests = [];
    const retry = await runAction({ url: base, token: TOKEN, files: "reports", "run-key": "run 5 / test", retry: "true" }, cwd);
    expect(retry.code, retry.stderr).toBe(0);
    expect(JSON.parse(requests.find((r) => r.method === "POST")!.body)).toMatchObject({ run_key: "run 5 / test", retry: true });
    const alone = await runAction({ url: base, token: TOKEN, files: "reports", shard: "3/4" }, cwd);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain("--shard needs --run-key");
  });

  it("fail-on and pr-comment become --fail-on and --pr-comment (the token from github-token); an unknown fail-on is exit 2", async () => {
    const cwd = workspace();
    writeFileSync(join(cwd, "event.json"), JSON.stringify({ pull_request: { number: 7 } }));
    const runner = {
      GITHUB_EVENT_NAME: "pull_request",
      GITHUB_EVENT_PATH: join(cwd, "event.json"),
      GITHUB_REPOSITORY: "acme/app",
      GITHUB_JOB: "test",
      GITHUB_API_URL: base,
    };
    requests = [];
    // Both gates at once: the quarantine list masks the failure, but --fail-on new decides, and it is new.
    const gated = await runAction(
      {
        url: base,
        token: TOKEN,
        files: "reports",
        quarantine: "true",
        "fail-on": "new",
        "pr-comment": "true",
        "github-token": "ghs_actionTest",
      },
      cwd,
      runner,
    );
    expect(gated.code, gated.stderr).toBe(1);
    expect(gated.stdout).toMatch(/Merge gate \(--fail-on new\): fails the build: test run #3 has 1 new failure/);
    const comment = requests.find((r) => r.method === "POST" && r.path === "/repos/acme/app/issues/7/comments")!;
    expect(comment.authorization).toBe("Bearer ghs_actionTest");
    expect(JSON.parse(comment.body).body).toContain(
      "<!-- ci-test-analytics:pr-comment project=p1 job=test variant= -->\n### CI test analytics: ❌ 1 new failure",
    );
    const unknown = await runAction({ url: base, token: TOKEN, files: "reports", "fail-on": "new,flaky" }, cwd);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--fail-on must be one of: new (got "new,flaky")');
  });

  it("split mode: this shard's files of the plan in the output `items`; the service down, the fallback", async () => {
    const cwd = mkdtempSync(join(dir, "split-"));
    mkdirSync(join(cwd, "test"));
    for (const name of ["a", "b", "c"]) writeFileSync(join(cwd, `test/${name}.test.ts`), "");
    const output = join(cwd, "github-output");
    writeFileSync(output, "");
    requests = [];
    const result = await runAction(
      { url: base, token: "ctu_x", mode: "split", files: "test/**/*.test.ts", shard: "2/2", "run-key": "k" },
      cwd,
      {
        GITHUB_OUTPUT: output,
      },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(output, "utf8")).toMatch(/^items<<(CTA_ITEMS_\d+)\ntest\/a\.test\.ts test\/c\.test\.ts\n\1\n$/);
    const sent = JSON.parse(requests.find((r) => r.path === "/uploads/v1/split_plans")!.body);
    expect(sent).toMatchObject({ key: "k", shards: 2, by: "file", items: ["test/a.test.ts", "test/b.test.ts", "test/c.test.ts"] });

    writeFileSync(output, "");
    const down = await runAction(
      { url: "http://127.0.0.1:9", token: "ctu_x", mode: "split", files: "test/**/*.test.ts", shard: "2/2", "run-key": "k" },
      cwd,
      {
        GITHUB_OUTPUT: output,
      },
    );
    expect(down.code).toBe(0);
    expect(down.stderr).toContain("falling back");
    expect(readFileSync(output, "utf8")).toContain("\ntest/b.test.ts\n");
  });

  it("refuses a switch that is not true or false, and empty files, with exit 2", async () => {
    const cwd = workspace();
    const yes = await runAction({ url: base, token: TOKEN, files: "reports", quarantine: "yes" }, cwd);
    expect(yes.code).toBe(2);
    expect(yes.stdout).toContain('::error title=CI test analytics::input quarantine must be true or false (got "yes")');
    const none = await runAction({ url: base, token: TOKEN, files: "  \n " }, cwd);
    expect(none.code).toBe(2);
    expect(none.stdout).toContain("input files is empty");
  });
});
