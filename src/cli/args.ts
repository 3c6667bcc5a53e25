/**
 * The command line: options, help text, and the checks that turn flags and environment variables
 * into the settings of an upload (any problem is a UsageError: exit 2, nothing sent).
 */
import { shardOf } from "../ingest/report";
import { MAX_RAW_VARIANT_LENGTH, MAX_VARIANT_LENGTH, normalizeVariant } from "../lib/variant";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { BaseCommitChoice } from "./base-commit";
import { COMMIT_SHA, type CiProvider, type Env } from "./ci-metadata";
import { UsageError } from "./exit-codes";
import { nonEmpty } from "./format";
import { DEFAULT_BASE_DELAY_MS, DEFAULT_RETRIES } from "./http-retry";
import { defaultRunKey, isRerunAttempt, parallelShard } from "./run-key";

export const DEFAULT_WAIT_TIMEOUT_S = 300;

export const HELP = `Usage: ci-test-analytics upload [options] FILES_OR_GLOBS...
       ci-test-analytics split --shard I/N [--key KEY] [--by file|classname] [--format lines|space|json] GLOBS... | -
       ci-test-analytics failed [--run NUMBER | REPORTS...] --format pytest|jest|vitest|playwright|go|rspec|maven|gradle

split prints this shard's items of the build's split plan, made once per --key by measured time
(default key: the CI's run id and job, without the attempt; --shard defaults from CircleCI,
Buildkite and GitLab parallel jobs). Items are test files from the globs, or lines of stdin with
"-". When the service cannot be reached it falls back to sorted items dealt round-robin, says so
on stderr and exits 0. failed prints the runner's selector for the failed tests of the reports (or
of run NUMBER, read from the service), nothing when none failed. docs/splitting.md.

Uploads JUnit XML (.xml) and JSON (.json, {"suites": [...]}) test reports to CI test analytics.
By default every matched file becomes ONE test run sent in one request; --run-per-file sends one
request (one run) per file. Quote globs so the shell does not expand them: 'reports/**/*.xml'.
A directory stands for every .xml and .json file below it.

Options:
  --url URL            service base URL (env CTA_URL)
  --token TOKEN        upload token, ctu_… (env CTA_UPLOAD_TOKEN; prefer the env var)
  --branch NAME        branch            (default: detected from the CI environment, else git's
                       branch in the working directory; none for a detached HEAD)
  --commit-sha SHA     commit SHA        (default: detected, else git's HEAD)
  --base-commit SHA    the pull request's base commit, 7 to 64 hex digits (default: the merge
                       base git computes, deepening a shallow checkout by 50 then 200 commits,
                       else the base commit the CI names; none outside pull requests)
  --no-base-commit     send no base commit (and compute none with git)
  --build-id ID        CI build id       (default: detected)
  --build-url URL      CI build URL      (default: detected)
  --tag TAG            tag for the run; repeat for more
  --started-at TIME    RFC 3339 start time of the run, e.g. 2025-01-31T12:00:00Z
  --run-per-file       one test run per file instead of one for all files
  --run-key KEY        uploads with the same key join ONE run as its parts (docs/uploads.md,
                       "Runs in parts"); with --wait, waits for the run to complete. Default on
                       a CI it detects: <ci>:<run id>:<job> (CTA_JOB names the job instead),
                       sent as shard 1/1 (one upload per job) unless --shard says otherwise
  --no-run-key         send no run key (--run-key "" too): each upload is a run of its own
  --shard I/N          this upload is shard I of N (1-based, as Jest's and Playwright's --shard):
                       the run completes when N shards are in; needs a run key
  --variant VARIANT    the configuration the tests ran in, e.g. os=windows,node=22 (env
                       CTA_VARIANT): part of each test's identity, so a matrix cell's tests are
                       tests of their own; --quarantine reads that variant's list
  --retry              this upload re-runs failed tests of the run its key names: its cases
                       become further attempts of the run's tests (passes on retry are counted),
                       even after the run completed; sent by itself with the default key on a
                       re-run attempt (GITHUB_RUN_ATTEMPT > 1, BUILDKITE_RETRY_COUNT > 0,
                       SYSTEM_JOBATTEMPT > 1)
  --wait               wait until the run is processed (exit 4 if processing failed), then print
                       its failures grouped by verdict against its base (new first) and what it fixed
  --timeout SECONDS    how long --wait waits in all (default ${DEFAULT_WAIT_TIMEOUT_S})
  --retries N          retries after a failed attempt (default ${DEFAULT_RETRIES}: ${DEFAULT_RETRIES + 1} attempts in all)
  --quarantine         decide the exit code from the reports: 0 when every failed or errored
                       test is quarantined (the project's list, fetched with the token), else 1
  --fail-on new        a merge gate: exit 1 only when a failure is new against the run's base, or
                       the run is a mass (infrastructure) failure; known failures (failing on the
                       base, flaky, quarantined) pass. Implies --wait; when the verdicts cannot be
                       read in time, the exit code is what it would be without --fail-on
  --pr-comment         on a GitHub pull request, create or update one comment per project and job
                       with the verdicts (GITHUB_TOKEN with pull-requests: write); implies --wait;
                       never fails the build
  --cache-dir DIR      where the quarantine list is cached (env CTA_CACHE_DIR; default
                       $XDG_CACHE_HOME/ci-test-analytics, else ~/.cache/ci-test-analytics)
  --codeowners PATH    the CODEOWNERS file to send (default: the repository's, the first of
                       .github/CODEOWNERS, CODEOWNERS, docs/CODEOWNERS under GITHUB_WORKSPACE
                       or the working directory); the service gives each test its owners
  --no-codeowners      do not send a CODEOWNERS file
  --no-resolve-files   do not look for the files of tests a report names by classname only
                       (by default a JVM class or pytest module is given its file from the
                       workspace when exactly one file fits, so CODEOWNERS applies to it)
  --fail-on-upload-error
                       exit non-zero when the upload fails (network, 5xx, 429 after retries,
                       a rejected token, --wait timing out); by default that is a warning
  --quiet              no progress or informational messages (errors still go to stderr)
  --verbose            log requests and detected metadata to stderr (never the token)
  -h, --help           show this help
  -V, --version        show the version

Environment:
  CTA_URL, CTA_UPLOAD_TOKEN   defaults for --url and --token (flags win)
  CTA_CACHE_DIR               default for --cache-dir
  GITHUB_STEP_SUMMARY         when set (GitHub Actions), a Markdown summary is appended to it
  GITHUB_TOKEN, GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_EVENT_PATH, GITHUB_JOB
                              what --pr-comment posts with and where (GitHub Actions sets all but
                              GITHUB_TOKEN); CTA_PR_COMMENT_JOB names the job instead of GITHUB_JOB
  CTA_JOB                     the job in the default run key (else CTA_PR_COMMENT_JOB, else the
                              CI's job name): give each leg of a matrix its own
  CTA_RETRY_BASE_MS           base delay of the retry backoff in ms (default ${DEFAULT_BASE_DELAY_MS})
  Branch, commit, build id and build URL are read from GitHub Actions, GitLab CI, Buildkite,
  CircleCI, Jenkins, Azure Pipelines, Bitbucket Pipelines, Drone, TeamCity and Travis CI
  variables when the flags are absent; a branch or commit still missing comes from git in the
  working directory. On a pull request build, the base commit is the merge base git computes,
  else the one the CI names.

Retries: 429, 500, 502, 503, 504 and network errors are retried with exponential backoff and
full jitter (1 s base, 30 s cap), honouring Retry-After (up to 120 s). Other 4xx are not retried,
nor is a 429 quota_exceeded (an organization quota is used up: waiting does not help).

An analytics outage never fails the build: an upload that fails (network error, 5xx, 429 after
retries), a rejected token (401, 403) and --wait timing out are warnings, with exit 0 (or the
tests' verdict with --quarantine), unless --fail-on-upload-error.

Exit codes:
  0  success (or only warnings about the upload)
  1  --fail-on new: a failure is new, or the run is a mass failure (infrastructure);
     --quarantine: a failed or errored test is not quarantined, or a report could not be read;
     --fail-on-upload-error: the upload failed after retries, or --wait timed out
  2  usage error: bad flags, missing url/token, no files matched, unreadable or invalid file,
     request larger than 256 MiB, or than 32 MiB gzip-compressed
  3  rejected by the server (400, 413, 415, 422 or another 4xx; with --fail-on-upload-error also
     401 and 403)
  4  the run was processed as failed (--wait)
`;

const OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  branch: { type: "string" },
  "commit-sha": { type: "string" },
  "base-commit": { type: "string" },
  "no-base-commit": { type: "boolean" },
  "build-id": { type: "string" },
  "build-url": { type: "string" },
  tag: { type: "string", multiple: true },
  "started-at": { type: "string" },
  "run-per-file": { type: "boolean" },
  "run-key": { type: "string" },
  "no-run-key": { type: "boolean" },
  shard: { type: "string" },
  variant: { type: "string" },
  retry: { type: "boolean" },
  wait: { type: "boolean" },
  timeout: { type: "string" },
  retries: { type: "string" },
  quarantine: { type: "boolean" },
  "fail-on": { type: "string" },
  "pr-comment": { type: "boolean" },
  "cache-dir": { type: "string" },
  codeowners: { type: "string" },
  "no-codeowners": { type: "boolean" },
  "no-resolve-files": { type: "boolean" },
  "fail-on-upload-error": { type: "boolean" },
  quiet: { type: "boolean", short: "q" },
  verbose: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
  // split and failed (docs/splitting.md)
  key: { type: "string" },
  by: { type: "string" },
  format: { type: "string" },
  run: { type: "string" },
} as const;

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Whatever could be the token before the options are parsed, so that even errors about them mask it. */
export function tokenCandidate(argv: string[], env: Env): string {
  const i = argv.findIndex((a) => a === "--token" || a.startsWith("--token="));
  if (i < 0) return env.CTA_UPLOAD_TOKEN ?? "";
  const arg = argv[i] ?? "";
  return arg.startsWith("--token=") ? arg.slice("--token=".length) : (argv[i + 1] ?? "");
}

/** The flags and positionals; an unknown or malformed flag is a UsageError. */
export function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\nRun "ci-test-analytics --help" for usage.`);
  }
}

export type OptionValues = ReturnType<typeof parseCommandLine>["values"];

function parseNumberOption(name: string, value: string | undefined, rule: { min: number; integer: boolean }): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < rule.min || (rule.integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} must be ${rule.integer ? "an integer" : "a number"} ≥ ${rule.min} (got "${value}")`);
  }
  return n;
}

/**
 * The service's own API paths, which a base URL may be given with: the server prints its base
 * URL with `/api/v1`, and the upload API lives under `/uploads/v1`.
 */
const API_PATH = /\/(?:api|uploads)\/v1\/?$/;

/**
 * The upload endpoint, `{base}/uploads/v1/test_runs`, for the base URL given. A path prefix is
 * kept; a trailing `/api/v1` or `/uploads/v1` (with or without a slash) is the API's own path,
 * not a prefix, and is dropped: `https://host/api/v1` posts to `https://host/uploads/v1/test_runs`.
 */
function uploadEndpoint(baseUrl: string): URL {
  return new URL("test_runs", uploadsBase(baseUrl));
}

/** `{base}/uploads/v1/quarantined_tests`, the list `--quarantine` reads (same base URL rules), of the run's variant. */
function quarantineListUrl(baseUrl: string, variant: string): URL {
  const url = new URL("quarantined_tests", uploadsBase(baseUrl));
  if (variant !== "") url.searchParams.set("variant", variant);
  return url;
}

/** --variant, else CTA_VARIANT: normalized as the service normalizes it, at most 100 characters then. */
export function variantChoice(values: OptionValues, env: Env): string {
  const given = values.variant ?? env.CTA_VARIANT ?? "";
  const variant = normalizeVariant(given);
  if (/\p{Cc}/u.test(given) || given.length > MAX_RAW_VARIANT_LENGTH || variant.length > MAX_VARIANT_LENGTH)
    throw new UsageError(
      `--variant must be at most ${MAX_VARIANT_LENGTH} characters once normalized, without control characters (got "${given}")`,
    );
  return variant;
}

/** `{base}/uploads/v1/codeowners`, where the repository's CODEOWNERS goes (same base URL rules). */
function codeownersUrl(baseUrl: string): URL {
  return new URL("codeowners", uploadsBase(baseUrl));
}

/** `{base}/uploads/v1/`, from the base URL as uploadEndpoint describes it. */
export function uploadsBase(baseUrl: string): URL {
  let base: URL;
  try {
    base = new URL(baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`);
    if (base.protocol !== "http:" && base.protocol !== "https:") throw new Error("not http(s)");
  } catch {
    throw new UsageError(`--url must be an http(s) URL (got "${baseUrl}")`);
  }
  base.search = "";
  base.hash = "";
  base.pathname = base.pathname.replace(API_PATH, "/");
  return new URL("uploads/v1/", base);
}

export type UploadSettings = {
  endpoint: URL;
  quarantineListUrl: URL;
  codeownersUrl: URL;
  /** The CODEOWNERS file to send (absolute), or null: none found, or --no-codeowners. */
  codeownersFile: string | null;
  /** Where the quarantine list is cached (absolute). */
  cacheDir: string;
  retries: number;
  waitTimeoutS: number;
  baseDelayMs: number;
  startedAt: string | undefined;
  /** --base-commit SHA, --no-base-commit, or neither (detect). */
  baseCommit: BaseCommitChoice;
  /** --fail-on new: the merge gate (null: the default exit code). */
  failOn: FailOn | null;
  /** --run-key and --shard (docs/uploads.md, "Runs in parts"), or the CI's default run key (src/cli/run-key.ts). */
  runKey: string | undefined;
  /** The run key is the default one, not --run-key's: a 409 run_completed is then uploaded again without it. */
  runKeyIsDefault: boolean;
  shard: string | undefined;
  retry: boolean;
  /** --variant (else CTA_VARIANT), normalized as the service does; "" for none (docs/tests.md, "Variants"). */
  variant: string;
};

/** What --fail-on accepts: only `new` so far. */
const FAIL_ON_VALUES = ["new"] as const;
type FailOn = (typeof FAIL_ON_VALUES)[number];

function failOnChoice(values: OptionValues): FailOn | null {
  const given = values["fail-on"];
  if (given === undefined) return null;
  const value = given.trim();
  if (!(FAIL_ON_VALUES as readonly string[]).includes(value)) {
    throw new UsageError(`--fail-on must be one of: ${FAIL_ON_VALUES.join(", ")} (got "${given}")`);
  }
  return value as FailOn;
}

/**
 * Checks the upload's settings, in the order their errors are reported.
 * @param baseUrl --url, else CTA_URL
 * @param token --token, else CTA_UPLOAD_TOKEN
 * @param baseDelayMs a test's override of CTA_RETRY_BASE_MS
 */
export function uploadSettings(input: {
  values: OptionValues;
  patterns: string[];
  env: Env;
  baseUrl: string | undefined;
  token: string | undefined;
  baseDelayMs: number | undefined;
  cwd: string;
  platform: string;
  homedir: string;
  /** The CI detected (detectCiMetadata), whose run and job give the default run key. */
  ci: CiProvider | null;
}): UploadSettings {
  const { values, patterns, env, baseUrl, token } = input;
  if (!baseUrl) throw new UsageError("missing service URL: pass --url or set CTA_URL");
  if (!token) throw new UsageError("missing upload token: pass --token or set CTA_UPLOAD_TOKEN");
  const endpoint = uploadEndpoint(baseUrl);
  const variant = variantChoice(values, env);
  const listUrl = quarantineListUrl(baseUrl, variant);
  const retries = parseNumberOption("retries", values.retries, { min: 0, integer: true }) ?? DEFAULT_RETRIES;
  const waitTimeoutS = parseNumberOption("timeout", values.timeout, { min: 0, integer: false }) ?? DEFAULT_WAIT_TIMEOUT_S;
  let baseDelayMs = input.baseDelayMs;
  if (baseDelayMs === undefined) {
    const fromEnv = nonEmpty(env.CTA_RETRY_BASE_MS);
    baseDelayMs = fromEnv === undefined ? DEFAULT_BASE_DELAY_MS : Number(fromEnv);
    if (!Number.isFinite(baseDelayMs) || baseDelayMs < 0) {
      throw new UsageError(`CTA_RETRY_BASE_MS must be a number of milliseconds ≥ 0 (got "${fromEnv}")`);
    }
  }
  const startedAt = nonEmpty(values["started-at"]);
  if (startedAt !== undefined && (!RFC3339.test(startedAt) || Number.isNaN(Date.parse(startedAt)))) {
    throw new UsageError(`--started-at must be an RFC 3339 time such as 2025-01-31T12:00:00Z (got "${startedAt}")`);
  }
  const baseCommit = baseCommitChoice(values);
  const failOn = failOnChoice(values);
  const { runKey, runKeyIsDefault, shard, retry } = runKeyChoice(values, env, input.ci, variant);
  if (patterns.length === 0) throw new UsageError("no report files given (pass files, directories or quoted globs)");
  const cacheDir = resolve(input.cwd, nonEmpty(values["cache-dir"]) ?? defaultCacheDir(env, input.platform, input.homedir));
  return {
    endpoint,
    quarantineListUrl: listUrl,
    codeownersUrl: codeownersUrl(baseUrl),
    codeownersFile: codeownersFile(values, env, input.cwd),
    cacheDir,
    retries,
    waitTimeoutS,
    baseDelayMs,
    startedAt,
    baseCommit,
    failOn,
    runKey,
    runKeyIsDefault,
    shard,
    retry,
    variant,
  };
}

/**
 * --run-key (1 to 255 characters, no control characters; "" or --no-run-key: none), else the CI's
 * default run key (not with --run-per-file, whose files are runs of their own); --shard I/N
 * (1 ≤ I ≤ N ≤ 1000), which needs a key; --retry, which too. With the default key and no --shard,
 * the upload is shard 1/1 of its run (or its shard among the CI's parallel copies of the job), so
 * the run completes as it arrives; and on a re-run attempt of the job it is a retry.
 */
function runKeyChoice(
  values: OptionValues,
  env: Env,
  ci: CiProvider | null,
  variant: string,
): { runKey: string | undefined; runKeyIsDefault: boolean; shard: string | undefined; retry: boolean } {
  const given = values["run-key"];
  const explicit = nonEmpty(given);
  if (values["no-run-key"] && explicit !== undefined) throw new UsageError("--run-key and --no-run-key exclude each other");
  if (explicit !== undefined && values["run-per-file"])
    throw new UsageError("--run-key and --run-per-file exclude each other: one key is one run");
  if (explicit !== undefined && (explicit.length > 255 || /\p{Cc}/u.test(explicit)))
    throw new UsageError(`--run-key must be 1 to 255 characters without control characters (got "${given}")`);
  const off = Boolean(values["no-run-key"]) || given !== undefined || Boolean(values["run-per-file"]);
  const fallback = off ? undefined : defaultRunKey({ ci, env, variant });
  const runKey = explicit ?? fallback;
  const runKeyIsDefault = explicit === undefined && fallback !== undefined;
  const retry = Boolean(values.retry) || (runKeyIsDefault && isRerunAttempt(ci, env));
  if (values.retry && runKey === undefined)
    throw new UsageError("--retry needs --run-key (or a CI that gives a default run key): it re-runs tests of the run the key names");
  if (values.shard === undefined)
    return { runKey, runKeyIsDefault, shard: runKeyIsDefault ? (parallelShard(ci, env) ?? "1/1") : undefined, retry };
  const parsed = shardOf(nonEmpty(values.shard) ?? "");
  if (!parsed) throw new UsageError(`--shard must be I/N with 1 ≤ I ≤ N ≤ 1000, e.g. 2/4 (got "${values.shard}")`);
  if (runKey === undefined)
    throw new UsageError("--shard needs --run-key (or a CI that gives a default run key): the shards of one run share its key");
  return { runKey, runKeyIsDefault, shard: `${parsed.index}/${parsed.total}`, retry };
}

/** --base-commit SHA (7 to 64 hex digits), --no-base-commit, or detection. */
function baseCommitChoice(values: OptionValues): BaseCommitChoice {
  const given = nonEmpty(values["base-commit"]);
  if (values["no-base-commit"]) {
    if (given !== undefined) throw new UsageError("--base-commit and --no-base-commit exclude each other");
    return { mode: "off" };
  }
  if (values["base-commit"] !== undefined && (given === undefined || !COMMIT_SHA.test(given))) {
    throw new UsageError(`--base-commit must be a commit SHA of 7 to 64 hexadecimal digits (got "${values["base-commit"]}")`);
  }
  return given === undefined ? { mode: "detect" } : { mode: "given", sha: given.toLowerCase() };
}

/** Where GitHub looks for CODEOWNERS, in its order: the first that exists is the repository's. */
const CODEOWNERS_LOCATIONS = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/**
 * The CODEOWNERS file to send: --codeowners PATH (relative to the working directory; it must
 * exist), none with --no-codeowners, else the first of CODEOWNERS_LOCATIONS under the
 * repository's root (GITHUB_WORKSPACE on GitHub Actions, else the working directory).
 */
function codeownersFile(values: OptionValues, env: Env, cwd: string): string | null {
  const given = nonEmpty(values.codeowners);
  if (values["no-codeowners"]) {
    if (given !== undefined) throw new UsageError("--codeowners and --no-codeowners exclude each other");
    return null;
  }
  if (given !== undefined) {
    const path = resolve(cwd, given);
    if (!existsSync(path)) throw new UsageError(`--codeowners: no such file "${given}"`);
    return path;
  }
  const root = resolve(cwd, nonEmpty(env.GITHUB_WORKSPACE) ?? ".");
  for (const location of CODEOWNERS_LOCATIONS) {
    const path = resolve(root, location);
    if (existsSync(path)) return path;
  }
  return null;
}

/**
 * The quarantine list's folder when --cache-dir is absent: CTA_CACHE_DIR, else the platform's
 * cache folder ($XDG_CACHE_HOME, %LOCALAPPDATA% on Windows, else ~/.cache), in ci-test-analytics/.
 */
export function defaultCacheDir(env: Env, platform: string, homedir: string): string {
  const explicit = nonEmpty(env.CTA_CACHE_DIR);
  if (explicit) return explicit;
  const base = nonEmpty(env.XDG_CACHE_HOME) ?? (platform === "win32" ? nonEmpty(env.LOCALAPPDATA) : undefined) ?? join(homedir, ".cache");
  return join(base, "ci-test-analytics");
}
