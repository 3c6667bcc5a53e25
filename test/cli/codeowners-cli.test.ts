/**
 * The uploader sends the repository's CODEOWNERS before the reports (`PUT /uploads/v1/codeowners`,
 * text/plain): GitHub's locations in GitHub's order under GITHUB_WORKSPACE or the working
 * directory, or --codeowners PATH, or nothing with --no-codeowners. A failure to send it is a
 * warning that never changes the exit code. The bundle's `run` in process, with a fetch playing
 * the service (quarantine-e2e.test.ts checks owners against the real server).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
const TOKEN = `ctu_${"c0D3oWn3rS".repeat(4)}${"a1b2c3d4e".slice(0, 9)}`;
const URL_BASE = "https://analytics.example.test";

type Writable = { write(chunk: string): unknown };
type CliModule = {
  run(
    argv: string[],
    io: { env: Record<string, string>; cwd: string; stdout: Writable; stderr: Writable; fetch: typeof fetch; baseDelayMs: number },
  ): Promise<number>;
};

let cli: CliModule;
let dir: string;
beforeAll(async () => {
  cli = (await import(pathToFileURL(BIN).href)) as CliModule;
  dir = mkdtempSync(join(tmpdir(), "cta-cli-codeowners-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Seen = { method: string; path: string; contentType: string | null; body: string };
function service(
  codeowners: () => { status: number; body?: unknown } = () => ({
    status: 200,
    body: { rules_count: 2, ignored_lines_count: 0, changed: true, tests_with_owners_count: 1 },
  }),
) {
  const seen: Seen[] = [];
  const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    seen.push({
      method: init?.method ?? "GET",
      path: url.pathname,
      contentType: new Headers(init?.headers).get("content-type"),
      body: typeof init?.body === "string" ? init.body : "",
    });
    const answer =
      url.pathname === "/uploads/v1/codeowners"
        ? codeowners()
        : { status: 202, body: { number: 3, status: "pending", url: "https://app.example.test/r/3" } };
    return new Response(answer.body === undefined ? null : JSON.stringify(answer.body), {
      status: answer.status,
      headers: { "content-type": "application/json" },
    });
  }) as typeof fetch;
  return { fetch: fetchFn, seen };
}

let repoCount = 0;
/** A repository folder with a report and these files. */
function repository(files: Record<string, string>): string {
  const root = join(dir, `repo${++repoCount}`);
  for (const [path, content] of Object.entries({
    "reports/junit.xml": `<testsuite name="s"><testcase classname="a.B" name="ok"/></testsuite>`,
    ...files,
  })) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

async function cta(args: string[], options: { fetch: typeof fetch; cwd: string; env?: Record<string, string> }) {
  let stdout = "";
  let stderr = "";
  const code = await cli.run(args, {
    env: { PATH: process.env.PATH ?? "", CTA_URL: URL_BASE, CTA_UPLOAD_TOKEN: TOKEN, ...options.env },
    cwd: options.cwd,
    stdout: { write: (chunk) => (stdout += chunk) },
    stderr: { write: (chunk) => (stderr += chunk) },
    fetch: options.fetch,
    baseDelayMs: 0,
  });
  return { code, stdout, stderr, output: stdout + stderr };
}

describe("the repository's CODEOWNERS goes with the upload", () => {
  it("sends the first of .github/CODEOWNERS, CODEOWNERS, docs/CODEOWNERS as text/plain, before the report", async () => {
    const root = repository({ ".github/CODEOWNERS": "*.ts @org/web\n", CODEOWNERS: "* @org/root\n", "docs/CODEOWNERS": "* @org/docs\n" });
    const svc = service();
    const result = await cta(["upload", "reports/junit.xml"], { fetch: svc.fetch, cwd: root });
    expect(result.code, result.output).toBe(0);
    expect(svc.seen.map((s) => `${s.method} ${s.path}`)).toEqual(["PUT /uploads/v1/codeowners", "POST /uploads/v1/test_runs"]);
    expect(svc.seen[0]).toMatchObject({ contentType: "text/plain; charset=utf-8", body: "*.ts @org/web\n" });
    expect(result.output).toMatch(/CODEOWNERS: sent \.github\/CODEOWNERS \(2 rules; 1 tests with owners\)/);

    const next = repository({ CODEOWNERS: "* @org/root\n", "docs/CODEOWNERS": "* @org/docs\n" });
    const second = service();
    await cta(["upload", "reports/junit.xml"], { fetch: second.fetch, cwd: next });
    expect(second.seen[0]!.body).toBe("* @org/root\n");
    const last = repository({ "docs/CODEOWNERS": "* @org/docs\n" });
    const third = service();
    await cta(["upload", "reports/junit.xml"], { fetch: third.fetch, cwd: last });
    expect(third.seen[0]!.body).toBe("* @org/docs\n");
  });

  it("warns when test files ran out of the service's matching budget, and still uploads", async () => {
    const root = repository({ CODEOWNERS: "* @org/root\n" });
    const svc = service(() => ({
      status: 200,
      body: { rules_count: 1, ignored_lines_count: 0, changed: true, tests_with_owners_count: 1, files_over_budget_count: 2 },
    }));
    const result = await cta(["upload", "reports/junit.xml"], { fetch: svc.fetch, cwd: root });
    expect(result.code, result.output).toBe(0);
    expect(result.output).toMatch(/CODEOWNERS: 2 test file\(s\) ran out of the matching budget/);
    expect(svc.seen.map((s) => s.path)).toEqual(["/uploads/v1/codeowners", "/uploads/v1/test_runs"]);
  });

  it("looks under GITHUB_WORKSPACE; --codeowners names a file; --no-codeowners and a repository without one send nothing", async () => {
    const root = repository({ CODEOWNERS: "* @org/root\n", "config/OWNERS": "* @org/other\n" });
    const fromWorkspace = service();
    const inSub = join(root, "reports");
    const workspace = await cta(["upload", "junit.xml"], { fetch: fromWorkspace.fetch, cwd: inSub, env: { GITHUB_WORKSPACE: root } });
    expect(workspace.code, workspace.output).toBe(0);
    expect(fromWorkspace.seen[0]).toMatchObject({ method: "PUT", body: "* @org/root\n" });

    const named = service();
    await cta(["upload", "--codeowners", "config/OWNERS", "reports/junit.xml"], { fetch: named.fetch, cwd: root });
    expect(named.seen[0]!.body).toBe("* @org/other\n");

    const off = service();
    await cta(["upload", "--no-codeowners", "reports/junit.xml"], { fetch: off.fetch, cwd: root });
    expect(off.seen.map((s) => s.path)).toEqual(["/uploads/v1/test_runs"]);

    const none = service();
    await cta(["upload", "reports/junit.xml"], { fetch: none.fetch, cwd: repository({}) });
    expect(none.seen.map((s) => s.path)).toEqual(["/uploads/v1/test_runs"]);
  });

  it("a file that cannot be sent is a warning, never the exit code; a missing --codeowners file is a usage error", async () => {
    const root = repository({ CODEOWNERS: "* @org/root\n" });
    const outage = service(() => ({ status: 503, body: { error: { code: "service_unavailable", message: "away" } } }));
    const away = await cta(["upload", "reports/junit.xml"], { fetch: outage.fetch, cwd: root });
    expect(away.code, away.output).toBe(0);
    expect(away.output).toMatch(/CODEOWNERS not sent/);
    // One retry at most, then the report goes.
    expect(outage.seen.filter((s) => s.path === "/uploads/v1/codeowners")).toHaveLength(2);
    expect(outage.seen.at(-1)!.path).toBe("/uploads/v1/test_runs");

    const refused = service(() => ({ status: 413, body: { error: { code: "payload_too_large", message: "too large" } } }));
    const big = await cta(["upload", "--fail-on-upload-error", "reports/junit.xml"], { fetch: refused.fetch, cwd: root });
    expect(big.code, big.output).toBe(0);
    expect(big.output).toMatch(/CODEOWNERS not sent/);

    const missing = await cta(["upload", "--codeowners", "nope/CODEOWNERS", "reports/junit.xml"], { fetch: service().fetch, cwd: root });
    expect(missing.code).toBe(2);
    expect(missing.output).toMatch(/--codeowners: no such file/);
  });
});
