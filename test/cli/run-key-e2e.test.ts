/**
 * The uploader's default run key (docs/uploader-cli.md, "Default run key") end to end: the Node
 * server as a child process (in-memory PGlite), the CLI as the built bundle in a GitHub Actions
 * environment. A job's upload is one run keyed by the CI's run and job, complete at once (shard
 * 1/1); its re-run attempt is a retry merged into that run as attempts; a second job with the same
 * key (a matrix without a key of its own) is uploaded again as a run of its own, with a warning;
 * --no-run-key and --run-key "" send none; an explicit key keeps the 409. The per-CI rules of the
 * key, the re-run attempt and the parallel shard, through the bundle's pure functions.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "packages/uploader/bin/ci-test-analytics.mjs");
const ADMIN_TOKEN = "run-key-e2e-admin-token-0123456789";
const SHA = "c0ffee".padEnd(40, "3");

type Env = Record<string, string | undefined>;
type CliModule = {
  defaultRunKey(input: { ci: string | null; env: Env; variant?: string }): string | undefined;
  isRerunAttempt(ci: string | null, env: Env): boolean;
  parallelShard(ci: string | null, env: Env): string | undefined;
};

let server: ServerProcess;
let dir: string;
let uploadToken: string;
let apiKey: string;
let cli: CliModule;

const json = { "content-type": "application/json" };

function report(name: string, outcomes: Record<string, "pass" | "fail">): string {
  const cases = Object.entries(outcomes).map(([test, outcome]) =>
    outcome === "pass"
      ? `<testcase classname="Cart" name="${test}" time="0.01"/>`
      : `<testcase classname="Cart" name="${test}" time="0.02"><failure message="boom">at ${test}</failure></testcase>`,
  );
  const path = join(dir, name);
  writeFileSync(path, `<?xml version="1.0"?>\n<testsuite name="cart">${cases.join("")}</testsuite>\n`);
  return path;
}

type CliResult = { code: number | null; stdout: string; stderr: string };

function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", HOME: dir, CTA_RETRY_BASE_MS: "1", CTA_URL: server.base, CTA_UPLOAD_TOKEN: uploadToken, ...env },
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

/** A GitHub Actions job: run `runId`, job `test`, attempt 1 unless told. */
const github = (runId: string, overrides: Record<string, string> = {}) => ({
  GITHUB_ACTIONS: "true",
  GITHUB_RUN_ID: runId,
  GITHUB_RUN_ATTEMPT: "1",
  GITHUB_JOB: "test",
  GITHUB_REF_NAME: "main",
  GITHUB_SHA: SHA,
  GITHUB_REPOSITORY: "acme/app",
  GITHUB_SERVER_URL: "https://github.com",
  ...overrides,
});

const upload = (file: string, ...flags: string[]) => ["upload", "--no-codeowners", "--no-base-commit", ...flags, file];

/** The run's number in the CLI's "Uploaded … as test run #N" line. */
const runNumber = (stdout: string) => Number(/as test run #(\d+)/.exec(stdout)?.[1]);

async function readRun(number: number) {
  const res = await server.call("GET", `/uploads/v1/test_runs/${number}`, uploadToken);
  expect(res.status).toBe(200);
  return res.body;
}

/** Waits until the run is processed and its retry parts merged (its passed_on_retry_count reaches `onRetry`). */
async function processedRun(number: number, onRetry = 0) {
  for (let i = 0; i < 500; i++) {
    const run = await readRun(number);
    if (run.status === "processed" && run.passed_on_retry_count >= onRetry) return run;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`run ${number} not processed`);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cta-run-key-e2e-"));
  cli = (await import(pathToFileURL(BIN).href)) as CliModule;
  server = await startServerProcess({
    DATABASE_URL: "memory://",
    ADMIN_TOKEN,
    WEB_APP_URL: "https://app.run-key-e2e.test",
    SECRETS_KEY: "run-key-e2e-secrets-key-0123456789abcdef",
  });
  const organization = await server.call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Keys" }), json);
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
});

afterAll(async () => {
  if (server && server.child.exitCode === null) await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("the default run key on GitHub Actions", () => {
  it("a job's upload is one run keyed by its run and job, complete at once; its re-run attempt merges as attempts", async () => {
    const first = await runCli(upload(report("first.xml", { pays: "pass", checkout: "fail", search: "fail" }), "--wait"), github("501"));
    expect(first.code, first.stderr).toBe(0);
    const number = runNumber(first.stdout);
    expect(first.stdout).toContain(`Test run #${number} processed`);
    // Complete at once (shard 1/1): no quiet period to wait for.
    expect(await processedRun(number)).toMatchObject({
      run_key: "github-actions:501:test",
      shard_total: 1,
      parts_count: 1,
      failed_count: 2,
      passed_on_retry_count: 0,
    });
    expect((await readRun(number)).completed_at).not.toBeNull();

    // "Re-run failed jobs": attempt 2 of the same run and job sends retry=true with the same key.
    const rerun = await runCli(
      upload(report("rerun.xml", { checkout: "pass", search: "fail" })),
      github("501", { GITHUB_RUN_ATTEMPT: "2" }),
    );
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(runNumber(rerun.stdout)).toBe(number);
    expect(await processedRun(number, 1)).toMatchObject({
      run_key: "github-actions:501:test",
      parts_count: 2,
      tests_count: 3,
      passed_count: 2,
      failed_count: 1,
      passed_on_retry_count: 1,
    });
  });

  it("a second job with the same key (a matrix leg) is uploaded again as a run of its own, with a warning; an explicit key keeps the 409", async () => {
    const legA = await runCli(upload(report("leg-a.xml", { pays: "pass" }), "--wait"), github("502"));
    expect(legA.code, legA.stderr).toBe(0);
    const a = runNumber(legA.stdout);
    await processedRun(a);

    const legB = await runCli(upload(report("leg-b.xml", { pays: "fail" }), "--wait"), github("502"));
    expect(legB.code, legB.stderr).toBe(0);
    expect(legB.stderr).toContain('warning: another upload already completed the run of the default run key "github-actions:502:test"');
    expect(legB.stderr).toContain("set --run-key (or CTA_JOB), or --variant");
    const b = runNumber(legB.stdout);
    expect(b).not.toBe(a);
    expect(await processedRun(b)).toMatchObject({ run_key: null, parts_count: 0, failed_count: 1 });
    expect(await readRun(a)).toMatchObject({ run_key: "github-actions:502:test", failed_count: 0 });

    // CTA_JOB gives each leg its own key.
    const legC = await runCli(upload(report("leg-c.xml", { pays: "pass" })), github("502", { CTA_JOB: "test (windows)" }));
    expect(legC.stderr).not.toContain("warning");
    expect(await processedRun(runNumber(legC.stdout))).toMatchObject({ run_key: "github-actions:502:test (windows)" });

    // An explicit key is the user's: its 409 is a rejection (exit 3), as before.
    const explicit = await runCli(upload(report("explicit.xml", { pays: "pass" }), "--run-key", "github-actions:502:test"), github("502"));
    expect(explicit.code).toBe(3);
    expect(explicit.stderr).toContain("409 run_completed");
  });

  it('--no-run-key and --run-key "" send none: a run of its own, as without a CI', async () => {
    for (const flags of [["--no-run-key"], ["--run-key", ""]]) {
      const result = await runCli(upload(report("alone.xml", { pays: "pass" }), ...flags), github("503"));
      expect(result.code, result.stderr).toBe(0);
      expect(await processedRun(runNumber(result.stdout))).toMatchObject({ run_key: null, parts_count: 0 });
    }
    const both = await runCli(upload(report("both.xml", { pays: "pass" }), "--no-run-key", "--run-key", "k"), github("503"));
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--run-key and --no-run-key exclude each other");
  });
});

describe("matrix legs with --variant", () => {
  it("each leg is a run and tests of its own, keyed by its variant; --quarantine reads its variant's list", async () => {
    const windows = await runCli(
      upload(report("windows.xml", { pays: "pass", prints: "fail" }), "--wait", "--variant", " os = windows "),
      github("504"),
    );
    expect(windows.code, windows.stderr).toBe(0);
    const linux = await runCli(upload(report("linux.xml", { pays: "pass", prints: "pass" }), "--wait"), {
      ...github("504"),
      CTA_VARIANT: "os=linux",
    });
    expect(linux.code, linux.stderr).toBe(0);
    expect(linux.stderr).not.toContain("warning");
    const [w, l] = [runNumber(windows.stdout), runNumber(linux.stdout)];
    expect(w).not.toBe(l);
    expect(await processedRun(w)).toMatchObject({ variant: "os=windows", run_key: "github-actions:504:test:os=windows" });
    expect(await processedRun(l)).toMatchObject({ variant: "os=linux", run_key: "github-actions:504:test:os=linux" });

    const listed = await server.call(
      "GET",
      `/api/v1/projects/${(await readRun(w)).project_id}/tests?q=prints&variant=os%3Dwindows`,
      apiKey,
    );
    const [prints] = listed.body.data;
    expect(prints).toMatchObject({ name: "prints", variant: "os=windows" });
    const quarantined = await server.call(
      "POST",
      `/api/v1/tests/${prints.id}/quarantine`,
      apiKey,
      JSON.stringify({ reason: "Windows fonts", duration: "7d" }),
      json,
    );
    expect(quarantined.status, JSON.stringify(quarantined.body)).toBe(200);

    // The Windows leg's failure is quarantined there; the same failure on Linux is not.
    const again = await runCli(
      upload(report("windows-2.xml", { prints: "fail" }), "--no-run-key", "--quarantine", "--variant", "os=windows"),
      github("505"),
    );
    expect(again.code, again.stderr).toBe(0);
    const onLinux = await runCli(
      upload(report("linux-2.xml", { prints: "fail" }), "--no-run-key", "--quarantine", "--variant", "os=linux"),
      github("505"),
    );
    expect(onLinux.code, onLinux.stderr).toBe(1);
  });

  it("a variant longer than 100 characters once normalized is a usage error", async () => {
    const result = await runCli(upload(report("long.xml", { pays: "pass" }), "--variant", "x".repeat(101)), github("506"));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--variant must be at most 100 characters once normalized");
  });
});

describe("the default run key per CI (pure)", () => {
  it("the CI's run id and job, only where both exist; CTA_JOB names the job; a variant joins the key", () => {
    const gh = { GITHUB_RUN_ID: "9", GITHUB_JOB: "unit", GITHUB_RUN_ATTEMPT: "3" };
    expect(cli.defaultRunKey({ ci: "github-actions", env: gh })).toBe("github-actions:9:unit");
    expect(cli.defaultRunKey({ ci: "github-actions", env: { ...gh, CTA_PR_COMMENT_JOB: "unit-pr" } })).toBe("github-actions:9:unit-pr");
    expect(cli.defaultRunKey({ ci: "github-actions", env: { ...gh, CTA_JOB: "unit (22)", CTA_PR_COMMENT_JOB: "x" } })).toBe(
      "github-actions:9:unit (22)",
    );
    expect(cli.defaultRunKey({ ci: "github-actions", env: gh, variant: "os=linux" })).toBe("github-actions:9:unit:os=linux");
    expect(cli.defaultRunKey({ ci: "github-actions", env: { GITHUB_RUN_ID: "9" } })).toBeUndefined();
    expect(cli.defaultRunKey({ ci: null, env: gh })).toBeUndefined();
    expect(cli.defaultRunKey({ ci: "gitlab-ci", env: { CI_PIPELINE_ID: "77", CI_JOB_NAME: "rspec" } })).toBe("gitlab-ci:77:rspec");
    expect(
      cli.defaultRunKey({
        ci: "gitlab-ci",
        env: { CI_PIPELINE_ID: "77", CI_JOB_NAME: "rspec 2/3", CI_NODE_INDEX: "2", CI_NODE_TOTAL: "3" },
      }),
    ).toBe("gitlab-ci:77:rspec");
    expect(cli.defaultRunKey({ ci: "circleci", env: { CIRCLE_WORKFLOW_ID: "wf", CIRCLE_JOB: "test" } })).toBe("circleci:wf:test");
    expect(cli.defaultRunKey({ ci: "buildkite", env: { BUILDKITE_BUILD_ID: "b", BUILDKITE_LABEL: ":jest: unit" } })).toBe(
      "buildkite:b::jest: unit",
    );
    expect(cli.defaultRunKey({ ci: "buildkite", env: { BUILDKITE_BUILD_ID: "b", BUILDKITE_STEP_KEY: "unit", BUILDKITE_LABEL: "x" } })).toBe(
      "buildkite:b:unit",
    );
    expect(cli.defaultRunKey({ ci: "jenkins", env: { BUILD_TAG: "jenkins-shop-main-12" } })).toBe("jenkins:jenkins-shop-main-12");
    expect(
      cli.defaultRunKey({ ci: "azure-pipelines", env: { BUILD_BUILDID: "5", SYSTEM_STAGENAME: "Test", SYSTEM_JOBNAME: "unit" } }),
    ).toBe("azure-pipelines:5:Test/unit");
    expect(cli.defaultRunKey({ ci: "teamcity", env: { BUILD_NUMBER: "5" } })).toBeUndefined();
    expect(cli.defaultRunKey({ ci: "github-actions", env: { ...gh, CTA_JOB: "j".repeat(250) } })).toBeUndefined();
  });

  it("a re-run attempt where the CI says so; the parallel copies of a job as its shards", () => {
    expect(cli.isRerunAttempt("github-actions", { GITHUB_RUN_ATTEMPT: "1" })).toBe(false);
    expect(cli.isRerunAttempt("github-actions", { GITHUB_RUN_ATTEMPT: "2" })).toBe(true);
    expect(cli.isRerunAttempt("buildkite", { BUILDKITE_RETRY_COUNT: "0" })).toBe(false);
    expect(cli.isRerunAttempt("buildkite", { BUILDKITE_RETRY_COUNT: "1" })).toBe(true);
    expect(cli.isRerunAttempt("azure-pipelines", { SYSTEM_JOBATTEMPT: "2" })).toBe(true);
    expect(cli.isRerunAttempt("gitlab-ci", { GITHUB_RUN_ATTEMPT: "2" })).toBe(false);
    expect(cli.parallelShard("buildkite", { BUILDKITE_PARALLEL_JOB: "0", BUILDKITE_PARALLEL_JOB_COUNT: "4" })).toBe("1/4");
    expect(cli.parallelShard("circleci", { CIRCLE_NODE_INDEX: "2", CIRCLE_NODE_TOTAL: "3" })).toBe("3/3");
    expect(cli.parallelShard("gitlab-ci", { CI_NODE_INDEX: "2", CI_NODE_TOTAL: "3" })).toBe("2/3");
    expect(cli.parallelShard("circleci", { CIRCLE_NODE_INDEX: "0", CIRCLE_NODE_TOTAL: "1" })).toBeUndefined();
    expect(cli.parallelShard("github-actions", {})).toBeUndefined();
  });
});
