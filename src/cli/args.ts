/**
 * The command line: options, help text, and the checks that turn flags and environment variables
 * into the settings of an upload (any problem is a UsageError: exit 2, nothing sent).
 */
import { parseArgs } from "node:util";
import type { Env } from "./ci-metadata";
import { UsageError } from "./exit-codes";
import { nonEmpty } from "./format";
import { DEFAULT_BASE_DELAY_MS, DEFAULT_RETRIES } from "./http-retry";

export const DEFAULT_WAIT_TIMEOUT_S = 300;

export const HELP = `Usage: ci-test-analytics upload [options] FILES_OR_GLOBS...

Uploads JUnit XML (.xml) and JSON (.json, {"suites": [...]}) test reports to CI test analytics.
By default every matched file becomes ONE test run sent in one request; --run-per-file sends one
request (one run) per file. Quote globs so the shell does not expand them: 'reports/**/*.xml'.
A directory stands for every .xml and .json file below it.

Options:
  --url URL            service base URL (env CTA_URL)
  --token TOKEN        upload token, ctu_… (env CTA_UPLOAD_TOKEN; prefer the env var)
  --branch NAME        branch            (default: detected from the CI environment)
  --commit-sha SHA     commit SHA        (default: detected)
  --build-id ID        CI build id       (default: detected)
  --build-url URL      CI build URL      (default: detected)
  --tag TAG            tag for the run; repeat for more
  --started-at TIME    RFC 3339 start time of the run, e.g. 2025-01-31T12:00:00Z
  --run-per-file       one test run per file instead of one for all files
  --wait               wait until the run is processed (exit 4 if processing failed)
  --timeout SECONDS    how long --wait waits in all (default ${DEFAULT_WAIT_TIMEOUT_S})
  --retries N          retries after a failed attempt (default ${DEFAULT_RETRIES}: ${DEFAULT_RETRIES + 1} attempts in all)
  --quiet              no progress or informational messages (errors still go to stderr)
  --verbose            log requests and detected metadata to stderr (never the token)
  -h, --help           show this help
  -V, --version        show the version

Environment:
  CTA_URL, CTA_UPLOAD_TOKEN   defaults for --url and --token (flags win)
  CTA_RETRY_BASE_MS           base delay of the retry backoff in ms (default ${DEFAULT_BASE_DELAY_MS})
  Branch, commit, build id and build URL are read from GitHub Actions, GitLab CI, Buildkite,
  CircleCI and Jenkins variables when the flags are absent.

Retries: 429, 500, 502, 503, 504 and network errors are retried with exponential backoff and
full jitter (1 s base, 30 s cap), honouring Retry-After (up to 120 s). Other 4xx are not retried.

Exit codes:
  0  success
  1  upload failed after retries (network error, 5xx, 429), or --wait timed out
  2  usage error: bad flags, missing url/token, no files matched, unreadable or invalid file,
     request larger than 32 MiB
  3  rejected by the server (401, 400, 413, 415, 422 or another 4xx)
  4  the run was processed as failed (--wait)
`;

export const OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  branch: { type: "string" },
  "commit-sha": { type: "string" },
  "build-id": { type: "string" },
  "build-url": { type: "string" },
  tag: { type: "string", multiple: true },
  "started-at": { type: "string" },
  "run-per-file": { type: "boolean" },
  wait: { type: "boolean" },
  timeout: { type: "string" },
  retries: { type: "string" },
  quiet: { type: "boolean", short: "q" },
  verbose: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
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
export function uploadEndpoint(baseUrl: string): URL {
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
  return new URL("uploads/v1/test_runs", base);
}

export type UploadSettings = {
  endpoint: URL;
  retries: number;
  waitTimeoutS: number;
  baseDelayMs: number;
  startedAt: string | undefined;
};

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
}): UploadSettings {
  const { values, patterns, env, baseUrl, token } = input;
  if (!baseUrl) throw new UsageError("missing service URL: pass --url or set CTA_URL");
  if (!token) throw new UsageError("missing upload token: pass --token or set CTA_UPLOAD_TOKEN");
  const endpoint = uploadEndpoint(baseUrl);
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
  if (patterns.length === 0) throw new UsageError("no report files given (pass files, directories or quoted globs)");
  return { endpoint, retries, waitTimeoutS, baseDelayMs, startedAt };
}
