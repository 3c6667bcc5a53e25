/**
 * The uploader CLI (packages/uploader/bin/ci-test-analytics.mjs): CI metadata detection and retry helpers in
 * process, and the command itself as a child process against a local node:http server playing
 * the service (127.0.0.1, port 0). CTA_RETRY_BASE_MS=1 keeps backoff waits out of the run time.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
const TOKEN = `ctu_${"a1B2c3D4e5".repeat(4)}${"Z9y8x7w6v".slice(0, 9)}`; // ctu_ + 49 base62
const RUN_URL = "https://app.example.test/projects/p1/runs/12";

type CiMetadata = {
  provider: string | null;
  branch?: string;
  commit_sha?: string;
  build_id?: string;
  build_url?: string;
};
type HttpResult =
  | { kind: "response"; status: number; json: any; text: string; attempts: number }
  | { kind: "network-error"; message: string; attempts: number };
type RetryOptions = {
  fetch?: typeof fetch;
  retries?: number;
  baseDelayMs?: number;
  sleep?: (ms: number) => Promise<unknown>;
  random?: () => number;
  now?: () => number;
};
/** The bin is plain JS; its exports are typed here rather than through allowJs. */
type CliModule = {
  detectCiMetadata(env: Record<string, string | undefined>, options?: { readEvent?: (path: string) => unknown }): CiMetadata;
  parseRetryAfter(value: string | null | undefined, nowMs?: number, maxMs?: number): number | null;
  backoffDelay(retry: number, options?: { baseMs?: number; capMs?: number; random?: () => number }): number;
  requestWithRetry(url: string, init: RequestInit, options?: RetryOptions): Promise<HttpResult>;
  expandFiles(patterns: string[], options?: { cwd?: string }): Promise<{ files: string[]; unmatched: string[] }>;
  buildUpload(
    files: string[],
    metadata: Record<string, unknown>,
    options?: { cwd?: string },
  ): Promise<{ envelope: { junit_xml?: string[] }; body: string; bytes: number }>;
};

let cli: CliModule;
let dir: string;

beforeAll(async () => {
  cli = (await import(pathToFileURL(BIN).href)) as CliModule;
  dir = mkdtempSync(join(tmpdir(), "cta-cli-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// ---------------------------------------------------------------------------------------------
// Helpers

type Recorded = { method: string; path: string; headers: IncomingMessage["headers"]; body: string; raw: Buffer };
type Reply = { status: number; headers?: Record<string, string>; body?: unknown };
type Handler = (req: Recorded) => Reply;

/** A fake service: answers requests with `handler` and records them. */
async function fakeService(handler: Handler) {
  const requests: Recorded[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const recorded = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        raw: Buffer.concat(chunks),
      };
      requests.push(recorded);
      const reply = handler(recorded);
      const body = reply.body === undefined ? "" : JSON.stringify(reply.body);
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      res.end(body);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** Replies in order; the last one repeats. */
function sequence(...replies: Reply[]): Handler {
  let i = 0;
  return () => replies[Math.min(i++, replies.length - 1)]!;
}

const accepted: Reply = {
  status: 202,
  body: {
    number: 12,
    project_id: "p1",
    status: "pending",
    url: RUN_URL,
    api_url: "https://api.example.test/api/v1/projects/p1/test_runs/12",
  },
};
const errorReply = (status: number, code: string, message: string, headers?: Record<string, string>): Reply => ({
  status,
  headers,
  body: { error: { code, message } },
});

type CliResult = { code: number | null; stdout: string; stderr: string; ms: number };
const allOutputs: string[] = [];

/** Runs the bin as a child process with a clean environment (no CI variables of the host). */
function runCli(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> {
  const started = Date.now();
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? dir,
      env: { PATH: process.env.PATH ?? "", CTA_RETRY_BASE_MS: "1", ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", fail);
    child.on("close", (code) => {
      allOutputs.push(stdout, stderr);
      done({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

function makeFiles(base: string, files: Record<string, string | Buffer>) {
  for (const [name, content] of Object.entries(files)) {
    const path = join(base, name);
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, content);
  }
}

const xmlDoc = (name: string) =>
  `<?xml version="1.0"?>\n<testsuite name="${name}" tests="1"><testcase name="t" classname="${name}"/></testsuite>\n`;

/** A folder with one JUnit file, for the tests that are about the transport. */
function oneReport(): string {
  const base = mkdtempSync(join(dir, "one-"));
  makeFiles(base, { "junit.xml": xmlDoc("one") });
  return base;
}

// ---------------------------------------------------------------------------------------------

describe("CI metadata detection", () => {
  it("GitHub Actions push: ref name, sha, run id with attempt, run URL", () => {
    expect(
      cli.detectCiMetadata({
        GITHUB_ACTIONS: "true",
        GITHUB_REF_NAME: "main",
        GITHUB_HEAD_REF: "",
        GITHUB_SHA: "a".repeat(40),
        GITHUB_RUN_ID: "1658821493",
        GITHUB_RUN_ATTEMPT: "2",
        GITHUB_SERVER_URL: "https://github.com",
        GITHUB_REPOSITORY: "acme/app",
        GITHUB_EVENT_NAME: "push",
      }),
    ).toEqual({
      provider: "github-actions",
      branch: "main",
      commit_sha: "a".repeat(40),
      build_id: "1658821493-2",
      build_url: "https://github.com/acme/app/actions/runs/1658821493",
    });
  });

  it("GitHub Actions pull_request: head ref, and the head SHA from the event payload (not the merge commit)", () => {
    const env = {
      GITHUB_ACTIONS: "true",
      GITHUB_REF_NAME: "42/merge",
      GITHUB_HEAD_REF: "feature/x",
      GITHUB_SHA: "m".repeat(40),
      GITHUB_RUN_ID: "7",
      GITHUB_EVENT_NAME: "pull_request",
      GITHUB_EVENT_PATH: "/tmp/event.json",
    };
    const readEvent = (path: string) => {
      expect(path).toBe("/tmp/event.json");
      return { pull_request: { head: { sha: "h".repeat(40) } } };
    };
    expect(cli.detectCiMetadata(env, { readEvent })).toMatchObject({ branch: "feature/x", commit_sha: "h".repeat(40), build_id: "7" });
    // Without a readable payload it falls back to GITHUB_SHA.
    const unreadable = () => {
      throw new Error("ENOENT");
    };
    expect(cli.detectCiMetadata(env, { readEvent: unreadable }).commit_sha).toBe("m".repeat(40));
    expect(cli.detectCiMetadata(env).build_url).toBeUndefined();
  });

  it("GitLab CI: merge request source branch and source SHA first, then branch / ref name", () => {
    const base = {
      GITLAB_CI: "true",
      CI_COMMIT_SHA: "c".repeat(40),
      CI_JOB_ID: "555",
      CI_JOB_URL: "https://gitlab.com/acme/app/-/jobs/555",
    };
    expect(cli.detectCiMetadata({ ...base, CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "main" })).toEqual({
      provider: "gitlab-ci",
      branch: "main",
      commit_sha: "c".repeat(40),
      build_id: "555",
      build_url: "https://gitlab.com/acme/app/-/jobs/555",
    });
    expect(
      cli.detectCiMetadata({
        ...base,
        CI_COMMIT_REF_NAME: "feature-y",
        CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: "feature-y",
        CI_MERGE_REQUEST_SOURCE_BRANCH_SHA: "s".repeat(40),
      }),
    ).toMatchObject({ branch: "feature-y", commit_sha: "s".repeat(40) });
    expect(cli.detectCiMetadata({ ...base, CI_COMMIT_REF_NAME: "v1.2.0" }).branch).toBe("v1.2.0");
  });

  it("Buildkite", () => {
    expect(
      cli.detectCiMetadata({
        BUILDKITE: "true",
        BUILDKITE_BRANCH: "main",
        BUILDKITE_COMMIT: "b".repeat(40),
        BUILDKITE_BUILD_ID: "9e08ef3c-d6e6-4a86-91dd-577ce5205b8e",
        BUILDKITE_BUILD_URL: "https://buildkite.com/acme/app/builds/1514",
      }),
    ).toEqual({
      provider: "buildkite",
      branch: "main",
      commit_sha: "b".repeat(40),
      build_id: "9e08ef3c-d6e6-4a86-91dd-577ce5205b8e",
      build_url: "https://buildkite.com/acme/app/builds/1514",
    });
  });

  it("CircleCI: workflow id, else the job number", () => {
    const env = {
      CIRCLECI: "true",
      CIRCLE_BRANCH: "dev",
      CIRCLE_SHA1: "d".repeat(40),
      CIRCLE_BUILD_NUM: "88",
      CIRCLE_BUILD_URL: "https://circleci.com/gh/acme/app/88",
    };
    expect(cli.detectCiMetadata({ ...env, CIRCLE_WORKFLOW_ID: "wf-uuid" })).toEqual({
      provider: "circleci",
      branch: "dev",
      commit_sha: "d".repeat(40),
      build_id: "wf-uuid",
      build_url: "https://circleci.com/gh/acme/app/88",
    });
    expect(cli.detectCiMetadata(env).build_id).toBe("88");
  });

  it("Jenkins: CHANGE_BRANCH over BRANCH_NAME (PR-n), GIT_BRANCH without origin/, JENKINS_HOME fallback", () => {
    const base = {
      JENKINS_URL: "https://ci.example.test/",
      GIT_COMMIT: "e".repeat(40),
      BUILD_ID: "153",
      BUILD_NUMBER: "153",
      BUILD_URL: "https://ci.example.test/job/app/153/",
    };
    expect(cli.detectCiMetadata({ ...base, BRANCH_NAME: "PR-24", CHANGE_BRANCH: "feature/z" })).toEqual({
      provider: "jenkins",
      branch: "feature/z",
      commit_sha: "e".repeat(40),
      build_id: "153",
      build_url: "https://ci.example.test/job/app/153/",
    });
    expect(cli.detectCiMetadata({ ...base, BRANCH_NAME: "main" }).branch).toBe("main");
    expect(cli.detectCiMetadata({ ...base, GIT_BRANCH: "origin/release/2.x" }).branch).toBe("release/2.x");
    expect(cli.detectCiMetadata({ JENKINS_HOME: "/var/jenkins_home", BUILD_NUMBER: "9" })).toMatchObject({
      provider: "jenkins",
      build_id: "9",
    });
  });

  it("no CI: nothing detected", () => {
    expect(cli.detectCiMetadata({ HOME: "/home/me", CI: "true" })).toEqual({ provider: null });
  });
});

describe("retry helpers", () => {
  it("parses Retry-After as seconds or an HTTP date, capped at 120 s", () => {
    const now = Date.parse("2025-01-01T00:00:00Z");
    expect(cli.parseRetryAfter("3", now)).toBe(3000);
    expect(cli.parseRetryAfter("Wed, 01 Jan 2025 00:00:10 GMT", now)).toBe(10_000);
    expect(cli.parseRetryAfter("Tue, 31 Dec 2024 23:00:00 GMT", now)).toBe(0);
    expect(cli.parseRetryAfter("3600", now)).toBe(120_000);
    expect(cli.parseRetryAfter("soon", now)).toBeNull();
    expect(cli.parseRetryAfter(null, now)).toBeNull();
  });

  it("backs off exponentially with full jitter under a 30 s cap", () => {
    expect(cli.backoffDelay(1, { baseMs: 1000, random: () => 0.999 })).toBe(999);
    expect(cli.backoffDelay(3, { baseMs: 1000, random: () => 0.5 })).toBe(2000);
    expect(cli.backoffDelay(10, { baseMs: 1000, random: () => 0.999 })).toBeLessThan(30_000);
    expect(cli.backoffDelay(2, { baseMs: 1000, random: () => 0 })).toBe(0);
  });

  it("retries 429 (honouring Retry-After) and 503 with an injected sleep, then succeeds", async () => {
    const replies = [
      new Response('{"error":{"code":"rate_limited","message":"slow down"}}', { status: 429, headers: { "retry-after": "7" } }),
      new Response('{"error":{"code":"service_unavailable","message":"later"}}', { status: 503 }),
      new Response('{"number":3,"status":"pending"}', { status: 202 }),
    ];
    const slept: number[] = [];
    const result = await cli.requestWithRetry(
      "http://svc.test/x",
      { method: "POST" },
      {
        fetch: (async () => replies.shift()!) as typeof fetch,
        sleep: async (ms) => void slept.push(ms),
        random: () => 0.5,
        baseDelayMs: 100,
      },
    );
    expect(result).toMatchObject({ kind: "response", status: 202, attempts: 3 });
    expect(slept).toEqual([7000, 100]); // Retry-After 7 s; then 0.5 × 100 ms × 2^1
  });

  it("does not retry other 4xx, and gives up on network errors after 5 attempts", async () => {
    let calls = 0;
    const unauthorized = await cli.requestWithRetry(
      "http://svc.test/x",
      {},
      {
        fetch: (async () => {
          calls++;
          return new Response("{}", { status: 401 });
        }) as typeof fetch,
        sleep: async () => {},
      },
    );
    expect(unauthorized).toMatchObject({ kind: "response", status: 401, attempts: 1 });
    expect(calls).toBe(1);

    const slept: number[] = [];
    const refused = await cli.requestWithRetry(
      "http://svc.test/x",
      {},
      {
        fetch: (async () => {
          throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
        }) as typeof fetch,
        sleep: async (ms) => void slept.push(ms),
        random: () => 1,
        baseDelayMs: 1000,
      },
    );
    expect(refused).toMatchObject({ kind: "network-error", attempts: 5 });
    expect(refused.kind === "network-error" && refused.message).toContain("ECONNREFUSED");
    expect(slept).toEqual([1000, 2000, 4000, 8000]);
  });
});

describe("file expansion", () => {
  it("expands globs and directories, deduplicated and sorted; reports patterns that match nothing", async () => {
    const base = mkdtempSync(join(dir, "glob-"));
    makeFiles(base, {
      "a/one.xml": xmlDoc("one"),
      "a/b/two.xml": xmlDoc("two"),
      "c.json": "{}",
      "notes.txt": "x",
      "d/three.json": "{}",
    });
    const { files, unmatched } = await cli.expandFiles(["**/*.xml", "a/one.xml", "d", "nothing/*.xml"], { cwd: base });
    expect(files).toEqual([join(base, "a/b/two.xml"), join(base, "a/one.xml"), join(base, "d/three.json")]);
    expect(unmatched).toEqual(["nothing/*.xml"]);
  });
});

describe("reading report files", () => {
  it("decodes XML as the service would: byte-order mark, else the declared encoding, else UTF-8", async () => {
    const base = mkdtempSync(join(dir, "enc-"));
    const utf16 = join(base, "utf16.xml");
    writeFileSync(utf16, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<testsuite name="caf\u00e9 \u2713"/>', "utf16le")]));
    const latin1 = join(base, "latin1.xml");
    writeFileSync(latin1, Buffer.from('<?xml version="1.0" encoding="ISO-8859-1"?><testsuite name="cr\u00e8me"/>', "latin1"));
    const utf8Bom = join(base, "bom.xml");
    writeFileSync(utf8Bom, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('<testsuite name="na\u00efve"/>', "utf8")]));
    const { envelope } = await cli.buildUpload([utf16, latin1, utf8Bom], {}, { cwd: base });
    expect(envelope.junit_xml).toEqual([
      '<testsuite name="caf\u00e9 \u2713"/>',
      '<?xml version="1.0" encoding="ISO-8859-1"?><testsuite name="cr\u00e8me"/>',
      '<testsuite name="na\u00efve"/>',
    ]);
  });

  it("bytes invalid in the file's encoding are an error (exit 2), never replaced", async () => {
    const base = mkdtempSync(join(dir, "bad-enc-"));
    const broken = join(base, "broken.xml");
    writeFileSync(broken, Buffer.from([...Buffer.from('<testsuite name="'), 0xe9, ...Buffer.from('"/>')]));
    await expect(cli.buildUpload([broken], {}, { cwd: base })).rejects.toThrow(/broken\.xml: not valid UTF-8 text/);
    const unknown = join(base, "unknown.xml");
    writeFileSync(unknown, '<?xml version="1.0" encoding="x-no-such"?><testsuite/>');
    await expect(cli.buildUpload([unknown], {}, { cwd: base })).rejects.toThrow(/declares encoding 'x-no-such'/);
  });
});

describe("ci-test-analytics upload (child process)", () => {
  it("--help documents the exit codes; --version prints the version", async () => {
    const help = await runCli(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Exit codes:");
    expect(help.stdout).toMatch(/4\s+the run was processed as failed/);
    expect(help.stdout).toContain("--fail-on-upload-error");
    expect(help.stdout).toContain("--quarantine");
    const version = await runCli(["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("argument errors exit 2 before anything is sent", async () => {
    const service = await fakeService(() => accepted);
    const cwd = oneReport();
    const ok = ["--url", service.url, "--token", TOKEN];
    const cases: [string[], Record<string, string>, RegExp][] = [
      [[], {}, /missing command/],
      [["publish", "x.xml"], {}, /unknown command/],
      [["upload", "--bogus", "junit.xml", ...ok], {}, /Unknown option '--bogus'/],
      [["upload", "--token", TOKEN, "junit.xml"], {}, /missing service URL/],
      [["upload", "--url", service.url, "junit.xml"], {}, /missing upload token/],
      [["upload", ...ok], {}, /no report files given/],
      [["upload", ...ok, "nothing/**/*.xml"], {}, /no report files matched/],
      [["upload", ...ok, "--retries", "many", "junit.xml"], {}, /--retries must be an integer/],
      [["upload", ...ok, "--timeout=-1", "junit.xml"], {}, /--timeout must be a number/],
      [["upload", ...ok, "--started-at", "yesterday", "junit.xml"], {}, /RFC 3339/],
      [["upload", "--url", "ftp://x", "--token", TOKEN, "junit.xml"], {}, /http\(s\) URL/],
      [["upload", ...ok, "--shard", "1/2", "junit.xml"], {}, /--shard needs --run-key/],
      [["upload", ...ok, "--retry", "junit.xml"], {}, /--retry needs --run-key/],
      [["upload", ...ok, "--run-key", "k", "--shard", "3/2", "junit.xml"], {}, /--shard must be I\/N/],
      [["upload", ...ok, "--run-key", "k", "--shard", "1/1001", "junit.xml"], {}, /--shard must be I\/N/],
      [["upload", ...ok, "--run-key", "x".repeat(256), "junit.xml"], {}, /--run-key must be 1 to 255 characters/],
      [["upload", ...ok, "--run-key", "k", "--no-run-key", "junit.xml"], {}, /--run-key and --no-run-key exclude each other/],
      [["upload", ...ok, "--run-key", "k", "--run-per-file", "junit.xml"], {}, /--run-key and --run-per-file exclude each other/],
      [["upload", "junit.xml"], { CTA_URL: service.url, CTA_UPLOAD_TOKEN: TOKEN, CTA_RETRY_BASE_MS: "fast" }, /CTA_RETRY_BASE_MS/],
    ];
    for (const [args, env, message] of cases) {
      const result = await runCli(args, { cwd, env });
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe("");
    }
    expect(service.requests).toHaveLength(0);
    await service.close();
  });

  it("an invalid JSON report, an unsupported file and reports above 256 MiB exit 2 without a request", async () => {
    const service = await fakeService(() => accepted);
    const base = mkdtempSync(join(dir, "bad-"));
    makeFiles(base, {
      "broken.json": "{ not json",
      "array.json": "[]",
      "report.txt": "x",
      "big.xml": "",
    });
    // Sparse: its size is what is checked, before it is read.
    truncateSync(join(base, "big.xml"), 256 * 1024 * 1024 + 1);
    const ok = ["upload", "--url", service.url, "--token", TOKEN];
    const broken = await runCli([...ok, "broken.json"], { cwd: base });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain("broken.json: not valid JSON");
    const array = await runCli([...ok, "array.json"], { cwd: base });
    expect(array.stderr).toContain('expected an object with a "suites" array');
    const txt = await runCli([...ok, "report.txt"], { cwd: base });
    expect(txt.code).toBe(2);
    expect(txt.stderr).toContain("unsupported file type");
    const big = await runCli([...ok, "big.xml"], { cwd: base });
    expect(big.code).toBe(2);
    expect(big.stderr).toMatch(/above the service's 256\.0 MiB report limit/);
    expect(service.requests).toHaveLength(0);
    await service.close();
  });

  it("a request above 32 MiB is sent gzip-compressed (Content-Encoding: gzip); one at most 32 MiB as it is", async () => {
    const service = await fakeService(() => accepted);
    const base = mkdtempSync(join(dir, "large-"));
    const cases = (n: number) => `<testsuite name="big">${'<testcase classname="c" name="t"/>'.repeat(n)}</testsuite>`;
    makeFiles(base, { "large.xml": cases(1_000_000), "small.xml": cases(10) });
    const ok = ["upload", "--url", service.url, "--token", TOKEN];
    expect((await runCli([...ok, "large.xml"], { cwd: base })).code).toBe(0);
    expect((await runCli([...ok, "small.xml"], { cwd: base })).code).toBe(0);
    const [large, small] = service.requests;
    expect(large!.headers["content-encoding"]).toBe("gzip");
    expect(large!.raw.byteLength).toBeLessThan(1024 * 1024);
    const inflated = gunzipSync(large!.raw);
    expect(inflated.byteLength).toBeGreaterThan(32 * 1024 * 1024);
    expect(JSON.parse(inflated.toString("utf8")).junit_xml).toEqual([cases(1_000_000)]);
    expect(small!.headers["content-encoding"]).toBeUndefined();
    expect(JSON.parse(small!.body).junit_xml).toEqual([cases(10)]);
    await service.close();
  });

  it("sends every matched file as ONE run: junit_xml array, merged suites, flags as metadata", async () => {
    const service = await fakeService(() => accepted);
    const base = mkdtempSync(join(dir, "one-run-"));
    makeFiles(base, {
      "reports/b.xml": xmlDoc("b"),
      "reports/sub/a.xml": xmlDoc("a"),
      "reports/extra.json": JSON.stringify({
        suites: [
          { name: "s1", cases: [] },
          { name: "s2", cases: [] },
        ],
      }),
      "other.json": JSON.stringify({ suites: [{ name: "s3", cases: [] }], branch: "from-file" }),
    });
    const result = await runCli(
      [
        "upload",
        "--url",
        `${service.url}/`,
        "--token",
        TOKEN,
        "--branch",
        "main",
        "--commit-sha",
        "abc123",
        "--build-id",
        "b-1",
        "--build-url",
        "https://ci.test/b/1",
        "--tag",
        "unit",
        "--tag",
        "linux",
        "--started-at",
        "2025-01-31T12:00:00Z",
        "--run-key",
        "run-77/test",
        "--shard",
        "02/4",
        "--retry",
        "reports/**/*.xml",
        "reports/**/*.json",
        "other.json",
        "reports/b.xml",
      ],
      { cwd: base },
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`Uploaded 4 files as test run #12 (pending): ${RUN_URL}\n`);
    expect(service.requests).toHaveLength(1);
    const [request] = service.requests;
    expect(request!.method).toBe("POST");
    expect(request!.path).toBe("/uploads/v1/test_runs");
    expect(request!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(request!.headers["content-type"]).toBe("application/json");
    const body = JSON.parse(request!.body);
    expect(body).toEqual({
      branch: "main",
      commit_sha: "abc123",
      build_id: "b-1",
      build_url: "https://ci.test/b/1",
      started_at: "2025-01-31T12:00:00Z",
      run_key: "run-77/test",
      shard: "2/4",
      retry: true,
      tags: ["unit", "linux"],
      // sorted by path: other.json, reports/b.xml, reports/extra.json, reports/sub/a.xml
      junit_xml: [xmlDoc("b"), xmlDoc("a")],
      suites: [
        { name: "s3", cases: [] },
        { name: "s1", cases: [] },
        { name: "s2", cases: [] },
      ],
    });
    await service.close();
  });

  it("takes URL and token from the environment and metadata from the CI variables", async () => {
    const service = await fakeService(() => accepted);
    const result = await runCli(["upload", "junit.xml"], {
      cwd: oneReport(),
      env: {
        CTA_URL: service.url,
        CTA_UPLOAD_TOKEN: TOKEN,
        BUILDKITE: "true",
        BUILDKITE_BRANCH: "main",
        BUILDKITE_COMMIT: "f".repeat(40),
        BUILDKITE_BUILD_ID: "bk-uuid",
        BUILDKITE_BUILD_URL: "https://buildkite.com/acme/app/builds/3",
      },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`Uploaded 1 file as test run #12 (pending): ${RUN_URL}\n`);
    expect(service.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(JSON.parse(service.requests[0]!.body)).toMatchObject({
      branch: "main",
      commit_sha: "f".repeat(40),
      build_id: "bk-uuid",
      build_url: "https://buildkite.com/acme/app/builds/3",
      junit_xml: [xmlDoc("one")],
    });
    await service.close();
  });

  it("--run-per-file: one request per file, one line each, progress on stderr", async () => {
    let n = 0;
    const service = await fakeService(() => ({ status: 202, body: { number: ++n, status: "pending", url: `${RUN_URL}-${n}` } }));
    const base = mkdtempSync(join(dir, "per-file-"));
    makeFiles(base, { "r/1.xml": xmlDoc("1"), "r/2.xml": xmlDoc("2"), "r/3.json": JSON.stringify({ suites: [] }) });
    const result = await runCli(["upload", "--url", service.url, "--token", TOKEN, "--run-per-file", "r"], { cwd: base });
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split("\n")).toEqual([
      `Uploaded 1 file as test run #1 (pending): ${RUN_URL}-1`,
      `Uploaded 1 file as test run #2 (pending): ${RUN_URL}-2`,
      `Uploaded 1 file as test run #3 (pending): ${RUN_URL}-3`,
    ]);
    expect(service.requests.map((r) => Object.keys(JSON.parse(r.body)))).toEqual([["junit_xml"], ["junit_xml"], ["suites"]]);
    expect(result.stderr).toContain("Uploading 3/3 (100%)");
    const quiet = await runCli(["upload", "--url", service.url, "--token", TOKEN, "--run-per-file", "--quiet", "r"], { cwd: base });
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe("");
    await service.close();

    // A rejected token stops the remaining uploads: a loud warning, but not a red build…
    const denied = await fakeService(() => errorReply(401, "unauthorized", "Invalid upload token"));
    const stopped = await runCli(["upload", "--url", denied.url, "--token", TOKEN, "--run-per-file", "r"], { cwd: base });
    expect(stopped.code).toBe(0);
    expect(denied.requests).toHaveLength(1);
    expect(stopped.stderr).toContain("warning: upload of r/1.xml rejected by the service: 401 unauthorized: Invalid upload token");
    expect(stopped.stderr).toContain("nothing is recorded until it is fixed");
    expect(stopped.stderr).toContain("warning: stopping: the token was rejected; 2 file(s) not uploaded");
    // …and in GitHub Actions an error annotation on the run's page.
    const inActions = await runCli(["upload", "--url", denied.url, "--token", TOKEN, "--run-per-file", "r"], {
      cwd: base,
      env: { GITHUB_ACTIONS: "true" },
    });
    expect(inActions.code).toBe(0);
    expect(inActions.stdout).toMatch(
      /^::error title=CI test analytics%3A upload token rejected::upload of r\/1\.xml rejected by the service: 401/m,
    );
    // With --fail-on-upload-error it is exit 3, as a rejection.
    const strict = await runCli(["upload", "--url", denied.url, "--token", TOKEN, "--run-per-file", "--fail-on-upload-error", "r"], {
      cwd: base,
    });
    expect(strict.code).toBe(3);
    expect(strict.stderr).toContain("error: stopping: the token was rejected; 2 file(s) not uploaded");
    await denied.close();
  });

  it("shows reading progress for more than 20 files, one line per 10 % off a TTY", async () => {
    const service = await fakeService(() => accepted);
    const base = mkdtempSync(join(dir, "many-"));
    makeFiles(base, Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`r/${String(i).padStart(2, "0")}.xml`, xmlDoc(`s${i}`)])));
    const result = await runCli(["upload", "--url", service.url, "--token", TOKEN, "r/*.xml"], { cwd: base });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Uploaded 25 files as test run #12");
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(10);
    expect(lines.at(-1)).toBe("Reading reports 25/25 (100%)");
    expect(JSON.parse(service.requests[0]!.body).junit_xml).toHaveLength(25);
    await service.close();
  });

  it("retries a 429 after its Retry-After, then succeeds", async () => {
    const service = await fakeService(sequence(errorReply(429, "rate_limited", "Too many requests", { "retry-after": "1" }), accepted));
    const result = await runCli(["upload", "--url", service.url, "--token", TOKEN, "junit.xml"], { cwd: oneReport() });
    expect(result.code).toBe(0);
    expect(service.requests).toHaveLength(2);
    expect(result.ms).toBeGreaterThanOrEqual(950);
    expect(result.stderr).toContain("attempt 1/5 failed (429 rate_limited: Too many requests); retrying in 1.0 s");
    // The same logical upload: the same idempotency key on both attempts.
    expect(service.requests[1]!.headers["idempotency-key"]).toBe(service.requests[0]!.headers["idempotency-key"]);
    expect(service.requests[1]!.body).toBe(service.requests[0]!.body);
    await service.close();
  });

  it("does not retry a 429 quota_exceeded: one request, a clear warning (exit 0), exit 1 with --fail-on-upload-error", async () => {
    const service = await fakeService(() => errorReply(429, "quota_exceeded", "This organization already has 1000 projects"));
    const result = await runCli(["upload", "--url", service.url, "--token", TOKEN, "junit.xml"], { cwd: oneReport() });
    expect(result.code).toBe(0);
    expect(service.requests).toHaveLength(1);
    expect(result.stderr).not.toContain("retrying");
    expect(result.stderr).toContain(
      "warning: upload of junit.xml refused: the organization's quota is used up (429 quota_exceeded: This organization already has 1000 projects); not retried",
    );
    const strict = await runCli(["upload", "--url", service.url, "--token", TOKEN, "--fail-on-upload-error", "junit.xml"], {
      cwd: oneReport(),
    });
    expect(strict.code).toBe(1);
    expect(service.requests).toHaveLength(2);
    expect(strict.stderr).toContain("error: upload of junit.xml refused: the organization's quota is used up");
    await service.close();
  });

  it("retries 503s then succeeds; exhausting --retries on 5xx is a warning (exit 0), exit 1 with --fail-on-upload-error", async () => {
    const flaky = await fakeService(sequence(errorReply(503, "service_unavailable", "busy"), { status: 502 }, accepted));
    const recovered = await runCli(["upload", "--url", flaky.url, "--token", TOKEN, "junit.xml"], { cwd: oneReport() });
    expect(recovered.code).toBe(0);
    expect(flaky.requests).toHaveLength(3);
    expect(recovered.stdout).toContain("as test run #12 (pending)");
    await flaky.close();

    const down = await fakeService(() => errorReply(500, "internal_error", "boom"));
    const exhausted = await runCli(["upload", "--url", down.url, "--token", TOKEN, "--retries", "2", "junit.xml"], { cwd: oneReport() });
    expect(exhausted.code).toBe(0);
    expect(down.requests).toHaveLength(3);
    expect(exhausted.stderr).toContain(
      "warning: upload of junit.xml failed after 3 attempt(s): 500 internal_error: boom; the build does not fail for it",
    );
    expect(exhausted.stdout).toBe("");
    const strict = await runCli(["upload", "--url", down.url, "--token", TOKEN, "--retries", "2", "--fail-on-upload-error", "junit.xml"], {
      cwd: oneReport(),
    });
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain("error: upload of junit.xml failed after 3 attempt(s): 500 internal_error: boom");
    await down.close();
  });

  it("does not retry a 401 or 403: a warning (exit 0), exit 3 with --fail-on-upload-error; 413 and 422 are rejections (exit 3)", async () => {
    const service = await fakeService(() => errorReply(401, "unauthorized", "Invalid or missing upload token"));
    const result = await runCli(["upload", "--url", service.url, "--token", TOKEN, "junit.xml"], { cwd: oneReport() });
    expect(result.code).toBe(0);
    expect(service.requests).toHaveLength(1);
    expect(result.stderr).toContain(
      "warning: upload of junit.xml rejected by the service: 401 unauthorized: Invalid or missing upload token",
    );
    const strict = await runCli(["upload", "--url", service.url, "--token", TOKEN, "--fail-on-upload-error", "junit.xml"], {
      cwd: oneReport(),
    });
    expect(strict.code).toBe(3);
    expect(strict.stderr).toContain("error: upload of junit.xml rejected by the service: 401 unauthorized");
    await service.close();

    const forbidden = await fakeService(() => errorReply(403, "forbidden", "Not allowed"));
    expect((await runCli(["upload", "--url", forbidden.url, "--token", TOKEN, "junit.xml"], { cwd: oneReport() })).code).toBe(0);
    expect(
      (await runCli(["upload", "--url", forbidden.url, "--token", TOKEN, "--fail-on-upload-error", "junit.xml"], { cwd: oneReport() }))
        .code,
    ).toBe(3);
    expect(forbidden.requests).toHaveLength(2);
    await forbidden.close();

    const invalid = await fakeService(() => ({
      status: 422,
      body: {
        error: { code: "validation_failed", message: "Invalid run", details: [{ field: "started_at", message: "must be RFC 3339" }] },
      },
    }));
    const rejected = await runCli(["upload", "--url", invalid.url, "--token", TOKEN, "junit.xml"], { cwd: oneReport() });
    expect(rejected.code).toBe(3);
    expect(rejected.stderr).toContain("started_at: must be RFC 3339");
    await invalid.close();

    const tooLarge = await fakeService(() => errorReply(413, "payload_too_large", "Body too large"));
    expect((await runCli(["upload", "--url", tooLarge.url, "--token", TOKEN, "junit.xml"], { cwd: oneReport() })).code).toBe(3);
    expect(tooLarge.requests).toHaveLength(1);
    await tooLarge.close();
  });

  it("retries network errors, then warns (exit 0); exit 1 with --fail-on-upload-error", async () => {
    const gone = await fakeService(() => accepted);
    const url = gone.url;
    await gone.close(); // nothing listens there any more: connection refused
    const result = await runCli(["upload", "--url", url, "--token", TOKEN, "junit.xml"], { cwd: oneReport() });
    expect(result.code).toBe(0);
    expect(result.stderr.match(/retrying in/g)).toHaveLength(4);
    expect(result.stderr).toMatch(/warning: upload of junit\.xml failed after 5 attempt\(s\): .*ECONNREFUSED/);
    const inActions = await runCli(["upload", "--url", url, "--token", TOKEN, "--retries", "0", "junit.xml"], {
      cwd: oneReport(),
      env: { GITHUB_ACTIONS: "true" },
    });
    expect(inActions.code).toBe(0);
    expect(inActions.stdout).toMatch(
      /^::warning title=CI test analytics%3A upload failed::upload of junit\.xml failed after 1 attempt\(s\): .*ECONNREFUSED/m,
    );
    const strict = await runCli(["upload", "--url", url, "--token", TOKEN, "--retries", "0", "--fail-on-upload-error", "junit.xml"], {
      cwd: oneReport(),
    });
    expect(strict.code).toBe(1);
    expect(strict.stderr).toMatch(/error: upload of junit\.xml failed after 1 attempt\(s\): .*ECONNREFUSED/);
  });

  it("--wait polls until processed (exit 0)", async () => {
    let polls = 0;
    const service = await fakeService((req) => {
      if (req.method === "POST") return accepted;
      polls += 1;
      return { status: 200, body: { ...(accepted.body as object), status: polls < 2 ? "pending" : "processed" } };
    });
    const result = await runCli(["upload", "--url", service.url, "--token", TOKEN, "--wait", "junit.xml"], { cwd: oneReport() });
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split("\n")).toEqual([
      `Uploaded 1 file as test run #12 (pending): ${RUN_URL}`,
      `Test run #12 processed: ${RUN_URL}`,
    ]);
    const gets = service.requests.filter((r) => r.method === "GET");
    expect(gets.map((r) => r.path)).toEqual([
      "/uploads/v1/test_runs/12",
      "/uploads/v1/test_runs/12",
      "/uploads/v1/test_runs/12/comparison",
    ]);
    expect(gets[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    // This service has no comparison to give: said, and no exit code changes for it.
    expect(result.stderr).toContain("could not read the verdicts of test run #12: the service's answer is not a comparison");
    await service.close();
  });

  it("--wait exits 4 when the run failed, printing the reason; timing out is a warning (exit 1 with --fail-on-upload-error)", async () => {
    const failing = await fakeService((req) =>
      req.method === "POST"
        ? accepted
        : { status: 200, body: { ...(accepted.body as object), status: "failed", failure_reason: "XML parse error at line 3" } },
    );
    const failed = await runCli(["upload", "--url", failing.url, "--token", TOKEN, "--wait", "junit.xml"], { cwd: oneReport() });
    expect(failed.code).toBe(4);
    expect(failed.stderr).toContain("test run #12 failed processing: XML parse error at line 3");
    await failing.close();

    const stuck = await fakeService((req) => (req.method === "POST" ? accepted : { status: 200, body: accepted.body }));
    const timedOut = await runCli(["upload", "--url", stuck.url, "--token", TOKEN, "--wait", "--timeout", "0.6", "junit.xml"], {
      cwd: oneReport(),
    });
    expect(timedOut.code).toBe(0);
    expect(timedOut.stderr).toContain("warning: timed out waiting for test run #12 (still pending)");
    const strict = await runCli(
      ["upload", "--url", stuck.url, "--token", TOKEN, "--wait", "--timeout", "0.3", "--fail-on-upload-error", "junit.xml"],
      {
        cwd: oneReport(),
      },
    );
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain("error: timed out waiting for test run #12 (still pending)");
    await stuck.close();
  });

  it("never prints the token, even in --verbose output or when the service echoes it", async () => {
    const service = await fakeService(() => errorReply(400, "invalid_request", `bad header: Bearer ${TOKEN}`));
    const flagged = await runCli(["upload", "--verbose", "--url", service.url, "--token", TOKEN, "junit.xml"], { cwd: oneReport() });
    expect(flagged.code).toBe(3);
    expect(flagged.stderr).toContain("debug: POST");
    expect(flagged.stderr).toContain("bad header: Bearer ***");
    const fromEnv = await runCli(["upload", "--verbose", "--url", service.url, "junit.xml"], {
      cwd: oneReport(),
      env: { CTA_UPLOAD_TOKEN: TOKEN },
    });
    expect(fromEnv.code).toBe(3);
    const typo = await runCli(["upload", `--tokn=${TOKEN}`, "junit.xml"], { cwd: oneReport() });
    expect(typo.code).toBe(2);
    await service.close();

    expect(allOutputs.length).toBeGreaterThan(20);
    for (const output of allOutputs) expect(output).not.toContain(TOKEN.slice(4));
  });
});
