/**
 * The uploader's --quarantine, its cache and the GitHub step summary, in detail: the bundle's
 * `run` in process with a fetch playing the service and a clock of the test's own
 * (quarantine-e2e.test.ts runs the same against the real server). What is checked: the ETag
 * round trip and the cache's time, the 24 h rule and expired quarantines, matching by the
 * service's identity (classname and name, else file and name), unreadable reports, upload
 * failures and rejections beside the verdict, the cache folder's defaults, and the summary's
 * content and escaping.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
const TOKEN = `ctu_${"q1W2e3R4t5".repeat(4)}${"Y6u7I8o9p".slice(0, 9)}`;
const URL_BASE = "https://analytics.example.test";
const RUN_URL = "https://app.example.test/projects/p1/runs/7";
const HOUR = 3_600_000;
const T0 = Date.parse("2026-03-01T12:00:00Z");

type Writable = { write(chunk: string): unknown };
type CliModule = {
  run(
    argv: string[],
    io: {
      env: Record<string, string>;
      cwd: string;
      stdout: Writable;
      stderr: Writable;
      fetch: typeof fetch;
      now: () => number;
      baseDelayMs: number;
      homedir?: string;
      platform?: string;
      pollBaseMs?: number;
    },
  ): Promise<number>;
  defaultCacheDir(env: Record<string, string>, platform: string, homedir: string): string;
  cacheFilePath(cacheDir: string, listUrl: string, token: string): string;
};

let cli: CliModule;
let dir: string;
beforeAll(async () => {
  cli = (await import(pathToFileURL(BIN).href)) as CliModule;
  dir = mkdtempSync(join(tmpdir(), "cta-cli-quarantine-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Entry = { test_id: string; classname: string | null; name: string; file: string | null; reason: string; expires_at: string };
const entry = (classname: string | null, name: string, file: string | null = null, expiresAt = T0 + 7 * 24 * HOUR): Entry => ({
  test_id: `00000000-0000-4000-8000-${String(Math.abs(hash(`${classname}${name}${file}`)))
    .padStart(12, "0")
    .slice(0, 12)}`,
  classname,
  name,
  file,
  reason: `known: ${name}`,
  expires_at: new Date(expiresAt).toISOString(),
});
function hash(text: string): number {
  let h = 0;
  for (const c of text) h = (h * 31 + c.charCodeAt(0)) | 0;
  return h;
}

type Request = { method: string; path: string; headers: Headers };
type Answer = { status: number; body?: unknown; headers?: Record<string, string> };
/** The service: POST test_runs, GET test_runs/{n}, GET quarantined_tests, each answered by its function. */
function service(answers: { upload?: () => Answer; poll?: (url: URL) => Answer; list?: (req: Request) => Answer }) {
  const requests: Request[] = [];
  const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const req = { method: init?.method ?? "GET", path: `${url.pathname}${url.search}`, headers: new Headers(init?.headers) };
    requests.push(req);
    let answer: Answer;
    if (url.pathname === "/uploads/v1/quarantined_tests")
      answer = answers.list?.(req) ?? { status: 200, body: { data: [] }, headers: { etag: '"q-empty"' } };
    else if (req.method === "POST") answer = answers.upload?.() ?? { status: 202, body: { number: 7, status: "pending", url: RUN_URL } };
    else answer = answers.poll?.(url) ?? { status: 200, body: { number: 7, status: "processed", url: RUN_URL } };
    const body = answer.body === undefined ? null : JSON.stringify(answer.body);
    return new Response(body, { status: answer.status, headers: { "content-type": "application/json", ...answer.headers } });
  }) as typeof fetch;
  return { fetch: fetchFn, requests, lists: () => requests.filter((r) => r.path.startsWith("/uploads/v1/quarantined_tests")) };
}

/** Runs the CLI in process at time `now`; the cache folder is `cacheDir`. */
async function cta(args: string[], options: { fetch: typeof fetch; now?: number; env?: Record<string, string>; cwd?: string }) {
  let stdout = "";
  let stderr = "";
  const code = await cli.run(args, {
    env: { PATH: process.env.PATH ?? "", CTA_URL: URL_BASE, CTA_UPLOAD_TOKEN: TOKEN, ...options.env },
    cwd: options.cwd ?? dir,
    stdout: { write: (chunk) => (stdout += chunk) },
    stderr: { write: (chunk) => (stderr += chunk) },
    fetch: options.fetch,
    now: () => options.now ?? T0,
    baseDelayMs: 0,
    pollBaseMs: 1,
  });
  return { code, stdout, stderr };
}

let reportCount = 0;
/** A folder with a JUnit file of these cases (`fail` marks a failure) and a fresh cache folder. */
function setup(
  cases: { classname?: string; name: string; file?: string; fail?: boolean; error?: boolean }[],
  options: { json?: boolean } = {},
) {
  const base = join(dir, `r${++reportCount}`);
  mkdirSync(base);
  if (options.json) {
    const jsonCases = cases.map((c) => ({
      name: c.name,
      classname: c.classname,
      file: c.file,
      status: c.error ? "errored" : c.fail ? "failed" : "passed",
      failure_message: c.fail ? "boom" : undefined,
    }));
    writeFileSync(join(base, "report.json"), JSON.stringify({ suites: [{ name: "s", cases: jsonCases }] }));
  } else {
    const body = cases
      .map((c) => {
        const esc = (text: string) => text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll('"', "&quot;");
        const attrs = `${c.classname !== undefined ? ` classname="${esc(c.classname)}"` : ""} name="${esc(c.name)}"${c.file ? ` file="${esc(c.file)}"` : ""}`;
        if (c.error) return `<testcase${attrs}><error message="crashed"/></testcase>`;
        return c.fail ? `<testcase${attrs}><failure message="boom"/></testcase>` : `<testcase${attrs}/>`;
      })
      .join("");
    writeFileSync(join(base, "report.xml"), `<testsuites><testsuite name="s">${body}</testsuite></testsuites>`);
  }
  return { cwd: base, cacheDir: join(base, "cache"), file: options.json ? "report.json" : "report.xml" };
}

const listOf = (entries: Entry[], etag = '"q-1"'): Answer => ({ status: 200, body: { data: entries }, headers: { etag } });

describe("the list, its ETag and the cache", () => {
  it("revalidates with If-None-Match: a 304 keeps the cached list and refreshes its time; a 200 replaces it", async () => {
    const { cwd, cacheDir, file } = setup([{ classname: "a.B", name: "flaky", fail: true }]);
    let current = listOf([entry("a.B", "flaky")], '"q-1"');
    const svc = service({
      list: (req) =>
        req.headers.get("if-none-match") === current.headers!.etag ? { status: 304, headers: { etag: current.headers!.etag! } } : current,
    });
    const args = ["upload", "--quarantine", "--cache-dir", cacheDir, file];

    const first = await cta(args, { fetch: svc.fetch, cwd });
    expect(first.code, first.stderr).toBe(0);
    expect(svc.lists()[0]!.headers.get("if-none-match")).toBeNull();
    expect(svc.lists()[0]!.headers.get("authorization")).toBe(`Bearer ${TOKEN}`);
    const path = cli.cacheFilePath(cacheDir, `${URL_BASE}/uploads/v1/quarantined_tests`, TOKEN);
    expect(readdirSync(cacheDir)).toEqual([path.slice(cacheDir.length + 1)]);
    const cached = JSON.parse(readFileSync(path, "utf8"));
    expect(cached).toMatchObject({
      etag: '"q-1"',
      checked_at: new Date(T0).toISOString(),
      url: `${URL_BASE}/uploads/v1/quarantined_tests`,
    });
    expect(readFileSync(path, "utf8")).not.toContain(TOKEN.slice(4, 20));

    const second = await cta(args, { fetch: svc.fetch, cwd, now: T0 + 5 * HOUR });
    expect(second.code).toBe(0);
    expect(svc.lists()[1]!.headers.get("if-none-match")).toBe('"q-1"');
    expect(second.stderr).toContain("the quarantine list from the cache, unchanged on the service (1 test(s))");
    expect(JSON.parse(readFileSync(path, "utf8")).checked_at).toBe(new Date(T0 + 5 * HOUR).toISOString());

    // The quarantine ends: a new list (and tag) replaces the cached one, and the failure counts again.
    current = listOf([], '"q-2"');
    const third = await cta(args, { fetch: svc.fetch, cwd, now: T0 + 6 * HOUR });
    expect(third.code).toBe(1);
    expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({ etag: '"q-2"', data: [] });
  });

  it("the service failing (5xx after retries, or a rejected token): a list confirmed < 24 h ago is used, an older one is not", async () => {
    const { cwd, cacheDir, file } = setup([{ classname: "a.B", name: "flaky", fail: true }]);
    const args = ["upload", "--quarantine", "--cache-dir", cacheDir, "--retries", "1", file];
    expect((await cta(args, { fetch: service({ list: () => listOf([entry("a.B", "flaky")]) }).fetch, cwd })).code).toBe(0);

    const down = service({
      upload: () => ({ status: 503, body: { error: { code: "service_unavailable", message: "down" } } }),
      list: () => ({ status: 503 }),
    });
    const fresh = await cta(args, { fetch: down.fetch, cwd, now: T0 + 23 * HOUR });
    expect(fresh.code, fresh.stderr).toBe(0);
    // The upload already gave up after its retries: the list gets one attempt, not another round.
    expect(down.lists()).toHaveLength(1);
    expect(fresh.stderr).toContain(
      "could not fetch the quarantine list: the service is failing (HTTP 503, after 1 attempt(s)); using the cached list, confirmed 23 h ago",
    );
    expect(fresh.stdout).toContain("Passing: every failed or errored test is quarantined");

    const rejected = service({ list: () => ({ status: 401, body: { error: { code: "unauthorized", message: "Invalid upload token" } } }) });
    const withToken = await cta(args, { fetch: rejected.fetch, cwd, now: T0 + 23 * HOUR });
    expect(withToken.code).toBe(0);
    expect(withToken.stderr).toContain(
      "could not fetch the quarantine list: the service rejected the token (401 unauthorized: Invalid upload token); using the cached list",
    );

    const stale = await cta(args, { fetch: down.fetch, cwd, now: T0 + 24 * HOUR + 1000 });
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("the cached list is too old to use (confirmed 24 h ago, at most 24 h): no failure is masked");

    // A cache dated in the future (a clock problem) is not fresh either.
    const skewed = await cta(args, { fetch: down.fetch, cwd, now: T0 - HOUR });
    expect(skewed.code).toBe(1);
  });

  it("a quarantine that has expired masks nothing, even from the cache", async () => {
    const { cwd, cacheDir, file } = setup([
      { classname: "a.B", name: "soon", fail: true },
      { classname: "a.B", name: "later", fail: true },
    ]);
    const list = listOf([entry("a.B", "soon", null, T0 + HOUR), entry("a.B", "later", null, T0 + 48 * HOUR)]);
    const args = ["upload", "--quarantine", "--cache-dir", cacheDir, file];
    expect((await cta(args, { fetch: service({ list: () => list }).fetch, cwd })).code).toBe(0);
    const offline = service({ upload: () => ({ status: 502 }), list: () => ({ status: 502 }) });
    const later = await cta(args, { fetch: offline.fetch, cwd, now: T0 + 2 * HOUR });
    expect(later.code).toBe(1);
    expect(later.stdout).toMatch(/^ {2}not quarantined {2}a\.B › soon \(failed\)$/m);
    expect(later.stdout).toMatch(/^ {2}quarantined {6}a\.B › later \(failed\): known: later/m);
  });

  it("an answer that is not a list, or a cache file that is not one, counts as no list", async () => {
    const { cwd, cacheDir, file } = setup([{ classname: "a.B", name: "flaky", fail: true }]);
    mkdirSync(cacheDir);
    writeFileSync(cli.cacheFilePath(cacheDir, `${URL_BASE}/uploads/v1/quarantined_tests`, TOKEN), "{ not json");
    const odd = await cta(["upload", "--quarantine", "--cache-dir", cacheDir, file], {
      fetch: service({ list: () => ({ status: 200, body: { items: [] } }) }).fetch,
      cwd,
    });
    expect(odd.code).toBe(1);
    expect(odd.stderr).toContain("the service's answer is not a quarantine list; no cached list in");
  });

  it("a cache that cannot be written is a warning; the verdict stands", async () => {
    const { cwd, file } = setup([{ classname: "a.B", name: "flaky", fail: true }]);
    const blocker = join(cwd, "not-a-folder");
    writeFileSync(blocker, "x");
    const result = await cta(["upload", "--quarantine", "--cache-dir", blocker, file], {
      fetch: service({ list: () => listOf([entry("a.B", "flaky")]) }).fetch,
      cwd,
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/warning: could not write the quarantine list cache .*not-a-folder/);
  });

  it("the cache folder: --cache-dir (relative to the working directory), else CTA_CACHE_DIR, $XDG_CACHE_HOME, %LOCALAPPDATA% on Windows, ~/.cache", async () => {
    expect(cli.defaultCacheDir({}, "linux", "/home/me")).toBe("/home/me/.cache/ci-test-analytics");
    expect(cli.defaultCacheDir({ XDG_CACHE_HOME: "/xdg" }, "linux", "/home/me")).toBe("/xdg/ci-test-analytics");
    expect(cli.defaultCacheDir({ CTA_CACHE_DIR: "/ci/cache", XDG_CACHE_HOME: "/xdg" }, "linux", "/home/me")).toBe("/ci/cache");
    expect(cli.defaultCacheDir({ LOCALAPPDATA: "/appdata" }, "win32", "/home/me")).toBe(join("/appdata", "ci-test-analytics"));
    expect(cli.defaultCacheDir({ LOCALAPPDATA: "/appdata" }, "linux", "/home/me")).toBe("/home/me/.cache/ci-test-analytics");

    const { cwd, file } = setup([{ classname: "a.B", name: "t" }]);
    const svc = service({});
    await cta(["upload", "--quarantine", "--cache-dir", "rel-cache", file], { fetch: svc.fetch, cwd });
    expect(readdirSync(join(cwd, "rel-cache"))).toHaveLength(1);
    await cta(["upload", "--quarantine", file], { fetch: svc.fetch, cwd, env: { XDG_CACHE_HOME: join(cwd, "xdg") } });
    expect(readdirSync(join(cwd, "xdg", "ci-test-analytics"))).toHaveLength(1);
    const home = join(cwd, "home");
    let stdout = "";
    await cli.run(["upload", "--quarantine", file], {
      env: { CTA_URL: URL_BASE, CTA_UPLOAD_TOKEN: TOKEN },
      cwd,
      stdout: { write: (c) => (stdout += c) },
      stderr: { write: () => true },
      fetch: svc.fetch,
      now: () => T0,
      baseDelayMs: 0,
      homedir: home,
      platform: "linux",
    });
    expect(readdirSync(join(home, ".cache", "ci-test-analytics"))).toHaveLength(1);
    expect(stdout).toContain("Passing: no failed or errored tests");
  });
});

describe("the verdict", () => {
  it("matches as the service identifies tests: classname and name; file and name when there is no classname", async () => {
    const list = listOf([entry("a.B", "same"), entry(null, "renders", "ui/button.test.tsx"), entry(null, "other file", "ui/x.test.tsx")]);
    const svc = service({ list: () => list });
    const xml = setup([
      { classname: "a.B", name: "same", fail: true },
      { classname: "a.C", name: "same", fail: true }, // another class: another test
    ]);
    const fromXml = await cta(["upload", "--quarantine", "--cache-dir", xml.cacheDir, xml.file], { fetch: svc.fetch, cwd: xml.cwd });
    expect(fromXml.code).toBe(1);
    expect(fromXml.stdout).toMatch(/^ {2}quarantined {6}a\.B › same/m);
    expect(fromXml.stdout).toMatch(/^ {2}not quarantined {2}a\.C › same \(failed\)$/m);

    const json = setup(
      [
        { name: "renders", file: "ui/button.test.tsx", fail: true },
        { name: "other file", file: "ui/y.test.tsx", error: true },
        { name: "passes", file: "ui/y.test.tsx" },
      ],
      { json: true },
    );
    const fromJson = await cta(["upload", "--quarantine", "--cache-dir", json.cacheDir, json.file], { fetch: svc.fetch, cwd: json.cwd });
    expect(fromJson.code).toBe(1);
    expect(fromJson.stdout).toContain(
      "Tests: 3 in all, 1 passed, 1 failed, 1 errored, 0 skipped; 1 of the 2 failed or errored quarantined",
    );
    expect(fromJson.stdout).toMatch(/^ {2}quarantined {6}ui\/button\.test\.tsx › renders \(failed\)/m);
    expect(fromJson.stdout).toMatch(/^ {2}not quarantined {2}ui\/y\.test\.tsx › other file \(errored\)$/m);
  });

  it("retries in one JUnit file are merged as the service merges them: a failure then a pass is no failure", async () => {
    const base = join(dir, "retries");
    mkdirSync(base);
    writeFileSync(
      join(base, "r.xml"),
      `<testsuite name="s"><testcase classname="a.B" name="t"><failure message="x"/></testcase><testcase classname="a.B" name="t"/></testsuite>`,
    );
    const result = await cta(["upload", "--quarantine", "--cache-dir", join(base, "c"), "r.xml"], { fetch: service({}).fetch, cwd: base });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Tests: 1 in all, 1 passed, 0 failed");
  });

  it("a report whose tests cannot be read fails the verdict (its results are unknown), though it was uploaded", async () => {
    const base = join(dir, "unreadable");
    mkdirSync(base);
    writeFileSync(join(base, "broken.xml"), "<testsuite><testcase name='x'>");
    writeFileSync(join(base, "bad.json"), JSON.stringify({ suites: [{ name: "s", cases: [{ name: "x", status: "exploded" }] }] }));
    const svc = service({});
    const result = await cta(["upload", "--quarantine", "--cache-dir", join(base, "c"), "broken.xml", "bad.json"], {
      fetch: svc.fetch,
      cwd: base,
    });
    expect(result.code).toBe(1);
    expect(svc.requests.filter((r) => r.method === "POST")).toHaveLength(1);
    expect(result.stderr).toContain("error: cannot read the tests of broken.xml: The XML is not well-formed");
    expect(result.stderr).toContain(
      "error: cannot read the tests of bad.json: suites[0].cases[0].status must be one of passed, failed, errored, skipped",
    );
    expect(result.stdout).toContain("Failing: 2 report(s) could not be read");
  });

  it("beside a failed upload the tests decide (exit 0 when all failures are quarantined); --fail-on-upload-error still fails; a rejection is exit 3", async () => {
    const { cwd, cacheDir, file } = setup([{ classname: "a.B", name: "flaky", fail: true }]);
    const list = () => listOf([entry("a.B", "flaky")]);
    const failing = service({ upload: () => ({ status: 500, body: { error: { code: "internal_error", message: "boom" } } }), list });
    const args = ["upload", "--quarantine", "--cache-dir", cacheDir, "--retries", "0", file];
    const lenient = await cta(args, { fetch: failing.fetch, cwd });
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toContain("warning: upload of report.xml failed after 1 attempt(s): 500 internal_error: boom");
    expect(lenient.stdout).toContain("Passing: every failed or errored test is quarantined");
    expect((await cta([...args, "--fail-on-upload-error"], { fetch: failing.fetch, cwd })).code).toBe(1);

    const invalid = service({ upload: () => ({ status: 422, body: { error: { code: "validation_failed", message: "Invalid" } } }), list });
    expect((await cta(args, { fetch: invalid.fetch, cwd })).code).toBe(3);
  });

  it("--run-per-file: files not uploaded after the service gave up still count", async () => {
    const base = join(dir, "per-file");
    mkdirSync(base);
    writeFileSync(join(base, "1.xml"), `<testsuite name="s"><testcase classname="a.B" name="one"/></testsuite>`);
    writeFileSync(join(base, "2.xml"), `<testsuite name="s"><testcase classname="a.B" name="two"><failure/></testcase></testsuite>`);
    const down = service({ upload: () => ({ status: 503 }), list: () => listOf([]) });
    const result = await cta(
      ["upload", "--quarantine", "--run-per-file", "--retries", "0", "--cache-dir", join(base, "c"), "1.xml", "2.xml"],
      { fetch: down.fetch, cwd: base },
    );
    expect(down.requests.filter((r) => r.method === "POST")).toHaveLength(1);
    expect(result.stderr).toContain("warning: stopping: the service is unreachable or failing; 1 file(s) not uploaded");
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^ {2}not quarantined {2}a\.B › two \(failed\)$/m);
  });
});

describe("GITHUB_STEP_SUMMARY", () => {
  it("appends counts, the run's page, the failures with their test pages from the processed run, escaped", async () => {
    const nasty = "pipes | and `ticks` <img src=x onerror=alert(1)>";
    const { cwd, cacheDir, file } = setup([
      { classname: "a.B", name: nasty, fail: true },
      { classname: "a.B", name: "quarantined one", fail: true },
      { classname: "a.B", name: "passes" },
    ]);
    const summary = join(cwd, "summary.md");
    const pages = [
      {
        test_id: "t1",
        classname: "a.B",
        name: nasty,
        file: null,
        status: "failed",
        quarantined: false,
        url: "https://app.example.test/projects/p1/tests/t1",
      },
      {
        test_id: "t2",
        classname: "a.B",
        name: "quarantined one",
        file: null,
        status: "failed",
        quarantined: true,
        url: "https://app.example.test/projects/p1/tests/t2",
      },
    ];
    const svc = service({
      list: () => listOf([entry("a.B", "quarantined one")]),
      poll: (url) => ({
        status: 200,
        body: {
          number: 7,
          status: "processed",
          url: RUN_URL,
          ...(url.searchParams.get("include") === "failed_tests" ? { failed_tests: pages } : {}),
        },
      }),
    });
    const result = await cta(["upload", "--quarantine", "--wait", "--cache-dir", cacheDir, file], {
      fetch: svc.fetch,
      cwd,
      env: { GITHUB_STEP_SUMMARY: summary },
    });
    expect(result.code).toBe(1);
    expect(svc.requests.find((r) => r.method === "GET" && r.path.startsWith("/uploads/v1/test_runs/7"))!.path).toBe(
      "/uploads/v1/test_runs/7?include=failed_tests",
    );
    expect(readFileSync(summary, "utf8")).toBe(
      [
        "### CI test analytics: ❌ 1 failed test not quarantined",
        "",
        "| Tests | Passed | Failed | Errored | Skipped |",
        "| ---: | ---: | ---: | ---: | ---: |",
        "| 3 | 1 | 2 | 0 | 0 |",
        "",
        `- Test run [#7](${RUN_URL}) (processed)`,
        "- Quarantine: the quarantine list from the service \\(1 test\\(s\\)\\)",
        "",
        "#### Failures not quarantined (1)",
        "",
        "- `` a.B › pipes | and `ticks` <img src=x onerror=alert(1)> `` (failed) — boom — [test page](https://app.example.test/projects/p1/tests/t1)",
        "",
        "#### Quarantined failures (1)",
        "",
        "- `a.B › quarantined one` (failed) — quarantined: known: quarantined one, until 2026-03-08 — [test page](https://app.example.test/projects/p1/tests/t2)",
        "",
        "",
      ].join("\n"),
    );
  });

  it("without --quarantine: the failures in one list, the upload problem; long lists are cut at 100", async () => {
    const cases = Array.from({ length: 105 }, (_, i) => ({ classname: "many", name: `t${String(i).padStart(3, "0")}`, fail: true }));
    const { cwd, file } = setup(cases);
    const summary = join(cwd, "summary.md");
    const svc = service({ upload: () => ({ status: 503, body: { error: { code: "service_unavailable", message: "Try later" } } }) });
    const result = await cta(["upload", "--retries", "0", file], { fetch: svc.fetch, cwd, env: { GITHUB_STEP_SUMMARY: summary } });
    expect(result.code).toBe(0);
    const text = readFileSync(summary, "utf8");
    expect(text).toContain("### CI test analytics: ❌ 105 failed tests\n");
    expect(text).toContain("| 105 | 0 | 105 | 0 | 0 |");
    expect(text).toContain("- ⚠️ upload of report.xml failed after 1 attempt\\(s\\): 503 service\\_unavailable: Try later");
    expect(text).toContain("#### Failures (105)");
    expect(text).toContain("- `many › t099` (failed) — boom\n- … and 5 more\n");
    expect(text).not.toContain("t100");
    expect(text).not.toContain("Test run [");
  });
});
