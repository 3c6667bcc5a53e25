#!/usr/bin/env node
// @ts-check
/**
 * ci-test-analytics: uploads JUnit XML / JSON test reports to the CI test analytics service.
 *
 *   npx ci-test-analytics upload --url https://… --token ctu_… 'reports/**\/*.xml'
 *
 * Plain ESM for Node ≥ 20, no build step; its only dependency is tinyglobby (loaded lazily, so the
 * pure helpers exported here can be imported without it). Documented in docs/uploader-cli.md.
 *
 * Exit codes: 0 success; 1 upload failed after retries (network, 5xx, 429) or --wait timed out;
 * 2 usage error (bad flags, missing url/token, no files, unreadable file, request too large);
 * 3 rejected by the server (400/401/413/415/422 and other 4xx); 4 run processed as failed (--wait).
 */
import { randomUUID } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { extname, isAbsolute, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

export const EXIT_OK = 0;
export const EXIT_UPLOAD_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_REJECTED = 3;
export const EXIT_RUN_FAILED = 4;

/** The service's limit on one request body (413 `payload_too_large` above it). */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;
/** XML documents in one upload (the service's limit: as many as a run may have suites). */
export const MAX_XML_DOCUMENTS = 50_000;
/** Statuses worth another attempt; other 4xx are final. */
export const RETRYABLE_STATUSES = new Set([429, 500, 502, 503, 504]);
export const DEFAULT_RETRIES = 4; // 5 attempts in all
export const DEFAULT_BASE_DELAY_MS = 1_000;
export const DEFAULT_MAX_DELAY_MS = 30_000;
export const MAX_RETRY_AFTER_MS = 120_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
export const DEFAULT_WAIT_TIMEOUT_S = 300;
export const POLL_BASE_MS = 250;
export const POLL_MAX_MS = 2_000;
/** Above this many files read for one run, a progress line is shown. */
const PROGRESS_FILE_THRESHOLD = 20;
const UPLOAD_TOKEN_SHAPE = /^ctu_[0-9A-Za-z]{49}$/;
/** Anything shaped like one of our secrets is masked in every line we print, token known or not. */
const SECRET_SHAPE = /\bct[ua]_[0-9A-Za-z]{16,}/g;

const HELP = `Usage: ci-test-analytics upload [options] FILES_OR_GLOBS...

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

/**
 * @typedef {Record<string, string | undefined>} Env
 *
 * @typedef {object} CiMetadata
 * @property {string | null} provider  "github-actions", "gitlab-ci", "buildkite", "circleci", "jenkins" or null
 * @property {string} [branch]
 * @property {string} [commit_sha]
 * @property {string} [build_id]
 * @property {string} [build_url]
 *
 * @typedef {object} DetectOptions
 * @property {(path: string) => unknown} [readEvent] reads GitHub's event payload (GITHUB_EVENT_PATH);
 *   without it the pull request head SHA cannot be found and GITHUB_SHA is used as is.
 */

/** @param {string | undefined} value */
function nonEmpty(value) {
  if (value === undefined || value === null) return undefined;
  const trimmed = String(value).trim();
  return trimmed === "" ? undefined : trimmed;
}

/** @param {...(string | undefined)} values */
function firstOf(...values) {
  for (const value of values) {
    const v = nonEmpty(value);
    if (v !== undefined) return v;
  }
  return undefined;
}

/**
 * @param {CiMetadata} meta
 * @returns {CiMetadata}
 */
function compact(meta) {
  /** @type {CiMetadata} */
  const out = { provider: meta.provider };
  for (const key of /** @type {const} */ (["branch", "commit_sha", "build_id", "build_url"])) {
    if (meta[key] !== undefined) out[key] = meta[key];
  }
  return out;
}

/**
 * GitHub's pull_request* events run on a merge commit (GITHUB_SHA); the commit that was pushed is
 * the pull request's head, found only in the event payload.
 * @param {Env} env
 * @param {DetectOptions} options
 */
function githubPullRequestHeadSha(env, options) {
  const eventName = nonEmpty(env.GITHUB_EVENT_NAME);
  const eventPath = nonEmpty(env.GITHUB_EVENT_PATH);
  if (!eventName?.startsWith("pull_request") || !eventPath || !options.readEvent) return undefined;
  try {
    const event = /** @type {any} */ (options.readEvent(eventPath));
    const sha = event?.pull_request?.head?.sha;
    return typeof sha === "string" ? nonEmpty(sha) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Build metadata from the CI provider's environment variables. Pure: it reads only `env` (and,
 * when given, GitHub's event payload through `options.readEvent`).
 * @param {Env} env
 * @param {DetectOptions} [options]
 * @returns {CiMetadata}
 */
export function detectCiMetadata(env, options = {}) {
  if (env.GITHUB_ACTIONS === "true") {
    const runId = nonEmpty(env.GITHUB_RUN_ID);
    const attempt = nonEmpty(env.GITHUB_RUN_ATTEMPT);
    const server = nonEmpty(env.GITHUB_SERVER_URL)?.replace(/\/+$/, "");
    const repository = nonEmpty(env.GITHUB_REPOSITORY);
    return compact({
      provider: "github-actions",
      // GITHUB_HEAD_REF is set only for pull_request / pull_request_target; GITHUB_REF_NAME is
      // then "<number>/merge" (or the base branch), so the head ref comes first.
      branch: firstOf(env.GITHUB_HEAD_REF, env.GITHUB_REF_NAME),
      commit_sha: firstOf(githubPullRequestHeadSha(env, options), env.GITHUB_SHA),
      build_id: runId ? (attempt ? `${runId}-${attempt}` : runId) : undefined,
      build_url: server && repository && runId ? `${server}/${repository}/actions/runs/${runId}` : undefined,
    });
  }
  if (nonEmpty(env.GITLAB_CI)) {
    return compact({
      provider: "gitlab-ci",
      // CI_COMMIT_BRANCH is absent in merge request and tag pipelines.
      branch: firstOf(env.CI_MERGE_REQUEST_SOURCE_BRANCH_NAME, env.CI_COMMIT_BRANCH, env.CI_COMMIT_REF_NAME),
      // In merged results pipelines CI_COMMIT_SHA is the merge commit; the source branch head is
      // CI_MERGE_REQUEST_SOURCE_BRANCH_SHA (set only in those pipelines).
      commit_sha: firstOf(env.CI_MERGE_REQUEST_SOURCE_BRANCH_SHA, env.CI_COMMIT_SHA),
      build_id: firstOf(env.CI_JOB_ID),
      build_url: firstOf(env.CI_JOB_URL),
    });
  }
  if (env.BUILDKITE === "true") {
    return compact({
      provider: "buildkite",
      branch: firstOf(env.BUILDKITE_BRANCH),
      commit_sha: firstOf(env.BUILDKITE_COMMIT),
      build_id: firstOf(env.BUILDKITE_BUILD_ID),
      build_url: firstOf(env.BUILDKITE_BUILD_URL),
    });
  }
  if (env.CIRCLECI === "true") {
    return compact({
      provider: "circleci",
      branch: firstOf(env.CIRCLE_BRANCH),
      commit_sha: firstOf(env.CIRCLE_SHA1),
      build_id: firstOf(env.CIRCLE_WORKFLOW_ID, env.CIRCLE_BUILD_NUM),
      build_url: firstOf(env.CIRCLE_BUILD_URL),
    });
  }
  // JENKINS_URL is set only when the Jenkins URL is configured; JENKINS_HOME + BUILD_NUMBER is
  // the fallback signal.
  if (nonEmpty(env.JENKINS_URL) || (nonEmpty(env.JENKINS_HOME) && nonEmpty(env.BUILD_NUMBER))) {
    const gitBranch = firstOf(env.GIT_LOCAL_BRANCH, env.GIT_BRANCH)?.replace(/^(refs\/remotes\/)?origin\//, "");
    return compact({
      provider: "jenkins",
      // In multibranch pull request builds BRANCH_NAME is "PR-24"; CHANGE_BRANCH is the source branch.
      branch: firstOf(env.CHANGE_BRANCH, env.BRANCH_NAME, gitBranch),
      commit_sha: firstOf(env.GIT_COMMIT),
      build_id: firstOf(env.BUILD_ID, env.BUILD_NUMBER),
      build_url: firstOf(env.BUILD_URL),
    });
  }
  return { provider: null };
}

// ---------------------------------------------------------------------------------------------
// Retries

/**
 * Retry-After as milliseconds: delta-seconds or an HTTP-date; null when absent or unreadable.
 * Capped at `maxMs` (120 s by default); a date in the past gives 0.
 * @param {string | null | undefined} value
 * @param {number} [nowMs]
 * @param {number} [maxMs]
 * @returns {number | null}
 */
export function parseRetryAfter(value, nowMs = Date.now(), maxMs = MAX_RETRY_AFTER_MS) {
  const text = nonEmpty(value ?? undefined);
  if (text === undefined) return null;
  let ms;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return null;
    ms = Math.max(0, at - nowMs);
  }
  return Math.min(ms, maxMs);
}

/**
 * Exponential backoff with full jitter: a random delay in [0, min(cap, base · 2^(retry-1))).
 * @param {number} retry 1 for the first retry
 * @param {{ baseMs?: number, capMs?: number, random?: () => number }} [options]
 */
export function backoffDelay(retry, options = {}) {
  const { baseMs = DEFAULT_BASE_DELAY_MS, capMs = DEFAULT_MAX_DELAY_MS, random = Math.random } = options;
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** @param {number} ms */
export function realSleep(ms) {
  return new Promise((resolvePromise) => setTimeout(resolvePromise, ms));
}

/**
 * @typedef {object} RetryOptions
 * @property {typeof fetch} [fetch]
 * @property {number} [retries]         retries after the first attempt (default 4)
 * @property {number} [baseDelayMs]     backoff base (default 1000)
 * @property {number} [maxDelayMs]      backoff cap (default 30000)
 * @property {number} [maxRetryAfterMs] cap on Retry-After (default 120000)
 * @property {number} [timeoutMs]       per attempt (default 120000)
 * @property {(ms: number) => Promise<unknown>} [sleep]
 * @property {() => number} [random]
 * @property {() => number} [now]
 * @property {(info: RetryInfo) => void} [onRetry]
 *
 * @typedef {object} RetryInfo
 * @property {number} attempt      the attempt that failed (1-based)
 * @property {number} attempts     attempts allowed in all
 * @property {number} delayMs      wait before the next attempt
 * @property {number} [status]
 * @property {string} reason
 *
 * @typedef {{ kind: "response", status: number, headers: Headers, text: string, json: any, attempts: number }} HttpResponse
 * @typedef {{ kind: "network-error", error: unknown, message: string, attempts: number }} HttpNetworkError
 * @typedef {HttpResponse | HttpNetworkError} HttpResult
 */

/**
 * What went wrong with a fetch that threw, in a few words (no URLs with secrets: we never put
 * the token in a URL).
 * @param {unknown} error
 */
export function describeNetworkError(error) {
  const err = /** @type {any} */ (error);
  if (err?.name === "TimeoutError") return "request timed out";
  const cause = err?.cause;
  const code = cause?.code ?? err?.code;
  const message = cause?.message ?? err?.message ?? String(error);
  return code && !String(message).includes(code) ? `${code}: ${message}` : String(message);
}

/**
 * One HTTP request with retries on 429/500/502/503/504 and network errors. Returns the last
 * response (whatever its status) or the last network error once attempts run out.
 * @param {string} url
 * @param {RequestInit} init
 * @param {RetryOptions} [options]
 * @returns {Promise<HttpResult>}
 */
export async function requestWithRetry(url, init, options = {}) {
  const {
    fetch: fetchFn = globalThis.fetch,
    retries = DEFAULT_RETRIES,
    baseDelayMs = DEFAULT_BASE_DELAY_MS,
    maxDelayMs = DEFAULT_MAX_DELAY_MS,
    maxRetryAfterMs = MAX_RETRY_AFTER_MS,
    timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS,
    sleep = realSleep,
    random = Math.random,
    now = Date.now,
    onRetry,
  } = options;
  const attempts = retries + 1;
  for (let attempt = 1; ; attempt++) {
    /** @type {HttpResult} */
    let result;
    try {
      const response = await fetchFn(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
      const text = await response.text();
      let json = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = null;
      }
      result = { kind: "response", status: response.status, headers: response.headers, text, json, attempts: attempt };
    } catch (error) {
      result = { kind: "network-error", error, message: describeNetworkError(error), attempts: attempt };
    }
    const retryable = result.kind === "network-error" || RETRYABLE_STATUSES.has(result.status);
    if (!retryable || attempt >= attempts) return result;

    let delayMs = backoffDelay(attempt, { baseMs: baseDelayMs, capMs: maxDelayMs, random });
    if (result.kind === "response") {
      const retryAfter = parseRetryAfter(result.headers.get("retry-after"), now(), maxRetryAfterMs);
      if (retryAfter !== null) delayMs = retryAfter;
    }
    onRetry?.({
      attempt,
      attempts,
      delayMs,
      status: result.kind === "response" ? result.status : undefined,
      reason: result.kind === "response" ? describeHttpError(result) : result.message,
    });
    await sleep(delayMs);
  }
}

/**
 * "422 validation_failed: message" from the service's error envelope (or the start of the body).
 * @param {HttpResponse} response
 */
export function describeHttpError(response) {
  const error = response.json?.error;
  if (error && typeof error === "object") {
    const code = typeof error.code === "string" ? ` ${error.code}` : "";
    const message = typeof error.message === "string" ? `: ${error.message}` : "";
    return `${response.status}${code}${message}`;
  }
  const snippet = response.text.replace(/\s+/g, " ").trim().slice(0, 200);
  return snippet ? `${response.status}: ${snippet}` : `HTTP ${response.status}`;
}

/**
 * @param {HttpResponse} response
 * @returns {string[]}
 */
function errorDetails(response) {
  const details = response.json?.error?.details;
  if (!Array.isArray(details)) return [];
  return details.map((d) =>
    typeof d === "object" && d ? `${d.field ?? "?"}: ${d.message ?? ""}` : String(d),
  );
}

// ---------------------------------------------------------------------------------------------
// Files

/**
 * Expand file arguments into a sorted, deduplicated list of absolute paths. An existing file is
 * taken as is (even with glob characters in its name), a directory stands for every .xml and
 * .json file below it, anything else is a glob.
 * @param {string[]} patterns
 * @param {{ cwd?: string }} [options]
 * @returns {Promise<{ files: string[], unmatched: string[] }>}
 */
export async function expandFiles(patterns, options = {}) {
  const cwd = options.cwd ?? process.cwd();
  /** @type {Set<string>} */
  const found = new Set();
  /** @type {string[]} */
  const unmatched = [];
  /** @type {typeof import("tinyglobby").glob | undefined} */
  let glob;
  const loadGlob = async () => (glob ??= (await import("tinyglobby")).glob);
  for (const pattern of patterns) {
    const literal = resolve(cwd, pattern);
    const info = await stat(literal).catch(() => null);
    /** @type {string[]} */
    let matches;
    if (info?.isFile()) matches = [literal];
    else if (info?.isDirectory()) {
      matches = await (await loadGlob())(["**/*.{xml,json,XML,JSON}"], {
        cwd: literal,
        absolute: true,
        onlyFiles: true,
        dot: false,
      });
    } else {
      // Globs use forward slashes, also on Windows.
      const normalized = process.platform === "win32" ? pattern.replaceAll("\\", "/") : pattern;
      matches = await (await loadGlob())([normalized], {
        cwd,
        absolute: true,
        onlyFiles: true,
        dot: false,
        expandDirectories: false,
      });
    }
    if (matches.length === 0) unmatched.push(pattern);
    for (const match of matches) found.add(resolve(match));
  }
  return { files: [...found].sort(), unmatched };
}

/** A problem with the invocation or the inputs: exit 2. */
export class UsageError extends Error {
  /** @override */
  name = "UsageError";
}

/**
 * @typedef {object} RunMetadata
 * @property {string} [branch]
 * @property {string} [commit_sha]
 * @property {string} [build_id]
 * @property {string} [build_url]
 * @property {string[]} [tags]
 * @property {string} [started_at]
 *
 * @typedef {RunMetadata & { junit_xml?: string[], suites?: unknown[] }} Envelope
 */

const METADATA_KEYS = /** @type {const} */ (["branch", "commit_sha", "build_id", "build_url", "started_at"]);

/** The encoding an XML file declares in its first bytes (ASCII-compatible encodings only). */
function declaredXmlEncoding(/** @type {Uint8Array} */ bytes) {
  const head = String.fromCharCode(...bytes.subarray(0, 200));
  const match = /^\s*<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']/.exec(head);
  return match?.[1] ? match[1].toLowerCase() : null;
}

/**
 * A report file's bytes as text, the way the service reads an XML body: its byte-order mark, else
 * its XML declaration's encoding, else UTF-8 (JSON: UTF-8). The text travels in a UTF-8 JSON
 * envelope, so a UTF-16 or Latin-1 file must be decoded here, and bytes invalid in the file's
 * encoding are an error, never replaced silently.
 * @param {Uint8Array} bytes
 * @param {"xml" | "json"} kind
 * @param {string} name for messages
 */
export function decodeReport(bytes, kind, name) {
  let label = "utf-8";
  if (bytes[0] === 0xff && bytes[1] === 0xfe) label = "utf-16le";
  else if (bytes[0] === 0xfe && bytes[1] === 0xff) label = "utf-16be";
  else if (kind === "xml" && !(bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf)) {
    const declared = declaredXmlEncoding(bytes);
    if (declared && declared !== "utf8") label = declared;
  }
  let decoder;
  try {
    decoder = new TextDecoder(label, { fatal: true });
  } catch {
    throw new UsageError(`${name}: declares encoding '${label}', which this Node.js cannot decode; save it as UTF-8`);
  }
  try {
    // The decoder drops a byte-order mark.
    return decoder.decode(bytes);
  } catch {
    throw new UsageError(`${name}: not valid ${label === "utf-8" ? "UTF-8" : label} text`);
  }
}

/**
 * Read report files into one upload envelope. `.xml` files go to `junit_xml` whole; `.json`
 * files (`{"suites": [...]}`) have their suites merged. Metadata found in JSON reports fills
 * only what `metadata` (flags, then the CI environment) left empty.
 * @param {string[]} files absolute paths
 * @param {RunMetadata} metadata
 * @param {{ cwd?: string, onFileRead?: () => void }} [options]
 * @returns {Promise<{ envelope: Envelope, body: string, bytes: number }>}
 */
export async function buildUpload(files, metadata, options = {}) {
  const cwd = options.cwd ?? process.cwd();
  /** @type {string[]} */
  const xml = [];
  /** @type {unknown[]} */
  const suites = [];
  /** @type {RunMetadata} */
  const fromFiles = {};
  /** @type {string[]} */
  const fileTags = [];
  let hasJson = false;

  /** @type {{ file: string, kind: "xml" | "json", size: number }[]} */
  const inputs = [];
  let rawBytes = 0;
  for (const file of files) {
    const name = displayPath(file, cwd);
    const ext = extname(file).toLowerCase();
    if (ext !== ".xml" && ext !== ".json") {
      throw new UsageError(`${name}: unsupported file type (expected .xml JUnit or .json report)`);
    }
    const info = await stat(file).catch((/** @type {any} */ error) => {
      throw new UsageError(`${name}: cannot read (${error?.code ?? error?.message ?? error})`);
    });
    if (!info.isFile()) throw new UsageError(`${name}: not a file`);
    inputs.push({ file, kind: ext === ".xml" ? "xml" : "json", size: info.size });
    rawBytes += info.size;
  }
  // JSON only grows what it encodes, so files already above the limit need not be read.
  if (rawBytes > MAX_BODY_BYTES) {
    throw new UsageError(
      `the reports add up to ${formatBytes(rawBytes)}, above the service's ${formatBytes(MAX_BODY_BYTES)} request limit` +
        (files.length > 1 ? "; upload them in smaller groups or with --run-per-file" : ""),
    );
  }

  for (const { file, kind } of inputs) {
    const name = displayPath(file, cwd);
    let bytes;
    try {
      bytes = await readFile(file);
    } catch (error) {
      throw new UsageError(`${name}: cannot read (${/** @type {any} */ (error)?.code ?? error})`);
    }
    const text = decodeReport(bytes, kind, name);
    if (text.trim() === "") throw new UsageError(`${name}: the file is empty`);
    if (kind === "xml") xml.push(text);
    else {
      hasJson = true;
      let doc;
      try {
        doc = JSON.parse(text);
      } catch (error) {
        throw new UsageError(`${name}: not valid JSON (${/** @type {Error} */ (error).message})`);
      }
      if (!doc || typeof doc !== "object" || Array.isArray(doc) || !Array.isArray(doc.suites)) {
        throw new UsageError(`${name}: not a JSON report (expected an object with a "suites" array)`);
      }
      suites.push(...doc.suites);
      for (const key of METADATA_KEYS) {
        if (fromFiles[key] === undefined && typeof doc[key] === "string" && doc[key] !== "") fromFiles[key] = doc[key];
      }
      if (Array.isArray(doc.tags)) fileTags.push(...doc.tags.filter((/** @type {unknown} */ t) => typeof t === "string"));
    }
    options.onFileRead?.();
  }

  /** @type {Envelope} */
  const envelope = {};
  for (const key of METADATA_KEYS) {
    const value = metadata[key] ?? fromFiles[key];
    if (value !== undefined) envelope[key] = value;
  }
  const tags = metadata.tags && metadata.tags.length > 0 ? metadata.tags : [...new Set(fileTags)];
  if (tags.length > 0) envelope.tags = tags;
  if (xml.length > MAX_XML_DOCUMENTS) {
    throw new UsageError(`${xml.length} XML files make one run, above the service's ${MAX_XML_DOCUMENTS.toLocaleString("en-US")}; upload them in smaller groups or with --run-per-file`);
  }
  if (xml.length > 0) envelope.junit_xml = xml;
  if (hasJson) envelope.suites = suites;

  const body = JSON.stringify(envelope);
  const bytes = Buffer.byteLength(body);
  if (bytes > MAX_BODY_BYTES) {
    throw new UsageError(
      `the request would be ${formatBytes(bytes)}, above the service's ${formatBytes(MAX_BODY_BYTES)} limit` +
        (files.length > 1 ? "; upload the files in smaller groups or with --run-per-file" : ""),
    );
  }
  return { envelope, body, bytes };
}

/** @param {number} bytes */
function formatBytes(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}

/**
 * @param {string} file
 * @param {string} cwd
 */
function displayPath(file, cwd) {
  const rel = relative(cwd, file);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : file;
}

// ---------------------------------------------------------------------------------------------
// Output

/**
 * @typedef {{ write(chunk: string): unknown, isTTY?: boolean }} Writable
 */

/**
 * Writes to stdout/stderr with every secret masked, and keeps a TTY progress line out of the way.
 */
class Output {
  /**
   * @param {Writable} stdout
   * @param {Writable} stderr
   * @param {{ quiet: boolean, verbose: boolean, secrets: string[] }} options
   */
  constructor(stdout, stderr, options) {
    this.stdout = stdout;
    this.stderr = stderr;
    this.quiet = options.quiet;
    this.verbose = options.verbose;
    this.secrets = options.secrets.filter((s) => s.length >= 4);
    this.progressShown = false;
  }

  /** @param {string} text */
  redact(text) {
    let out = text;
    for (const secret of this.secrets) out = out.split(secret).join("***");
    return out.replace(SECRET_SHAPE, (m) => `${m.slice(0, 4)}***`);
  }

  clearProgress() {
    if (this.progressShown && this.stderr.isTTY) this.stderr.write("\r\x1b[K");
    this.progressShown = false;
  }

  /** @param {string} line */
  result(line) {
    this.clearProgress();
    this.stdout.write(`${this.redact(line)}\n`);
  }

  /** @param {string} line */
  error(line) {
    this.clearProgress();
    this.stderr.write(`${this.redact(`error: ${line}`)}\n`);
  }

  /** @param {string} line */
  warn(line) {
    this.clearProgress();
    this.stderr.write(`${this.redact(`warning: ${line}`)}\n`);
  }

  /** @param {string} line */
  info(line) {
    if (this.quiet) return;
    this.clearProgress();
    this.stderr.write(`${this.redact(line)}\n`);
  }

  /** @param {string} line */
  debug(line) {
    if (!this.verbose) return;
    this.clearProgress();
    this.stderr.write(`${this.redact(`debug: ${line}`)}\n`);
  }

  /**
   * A progress counter: rewritten in place on a TTY, one line per 10 % otherwise.
   * @param {string} label
   * @param {number} total
   */
  progress(label, total) {
    let lastDecile = 0;
    let done = 0;
    const enabled = !this.quiet && total > 0;
    return {
      tick: () => {
        done += 1;
        if (!enabled) return;
        const percent = Math.floor((done / total) * 100);
        const text = `${label} ${done}/${total} (${percent}%)`;
        if (this.stderr.isTTY) {
          this.stderr.write(`\r\x1b[K${text}`);
          this.progressShown = true;
          if (done === total) this.clearProgress();
        } else {
          const decile = Math.floor((done * 10) / total);
          if (decile > lastDecile) {
            lastDecile = decile;
            this.stderr.write(`${text}\n`);
          }
        }
      },
    };
  }
}

// ---------------------------------------------------------------------------------------------
// The command

/**
 * @typedef {object} RunIo
 * @property {Env} [env]
 * @property {string} [cwd]
 * @property {Writable} [stdout]
 * @property {Writable} [stderr]
 * @property {typeof fetch} [fetch]
 * @property {(ms: number) => Promise<unknown>} [sleep]
 * @property {() => number} [now]
 * @property {() => number} [random]
 * @property {number} [baseDelayMs]  overrides CTA_RETRY_BASE_MS and the 1 s default
 * @property {number} [pollBaseMs]
 * @property {(path: string) => unknown} [readEvent]
 */

const OPTIONS = /** @type {const} */ ({
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
});

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function cliVersion() {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    return typeof pkg.version === "string" ? pkg.version : "0.0.0";
  } catch {
    return "0.0.0";
  }
}

/** @param {string} path */
function readJsonFile(path) {
  return JSON.parse(readFileSync(path, "utf8"));
}

/**
 * @param {string} name
 * @param {string | undefined} value
 * @param {{ min: number, integer: boolean }} rule
 */
function parseNumberOption(name, value, rule) {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < rule.min || (rule.integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} must be ${rule.integer ? "an integer" : "a number"} ≥ ${rule.min} (got "${value}")`);
  }
  return n;
}

/**
 * Run the CLI with `argv` (without node and the script). Resolves to the exit code; throws only
 * on a bug (main() turns that into exit 1).
 * @param {string[]} argv
 * @param {RunIo} [io]
 * @returns {Promise<number>}
 */
export async function run(argv, io = {}) {
  const env = io.env ?? process.env;
  const cwd = io.cwd ?? process.cwd();
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const tokenCandidate = (() => {
    const i = argv.findIndex((a) => a === "--token" || a.startsWith("--token="));
    if (i < 0) return env.CTA_UPLOAD_TOKEN ?? "";
    const arg = argv[i] ?? "";
    return arg.startsWith("--token=") ? arg.slice("--token=".length) : argv[i + 1] ?? "";
  })();
  // Until the options are parsed, mask whatever could be the token.
  let out = new Output(stdout, stderr, {
    quiet: false,
    verbose: false,
    secrets: [tokenCandidate, env.CTA_UPLOAD_TOKEN ?? ""],
  });

  /** @type {ReturnType<typeof parseArgs<{ options: typeof OPTIONS, allowPositionals: true, strict: true }>>} */
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    out.error(`${/** @type {Error} */ (error).message}\nRun "ci-test-analytics --help" for usage.`);
    return EXIT_USAGE;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    stdout.write(HELP);
    return EXIT_OK;
  }
  if (values.version) {
    stdout.write(`${cliVersion()}\n`);
    return EXIT_OK;
  }
  const [command, ...patterns] = positionals;
  if (command !== "upload") {
    out.error(
      command === undefined
        ? 'missing command: use "ci-test-analytics upload [options] FILES..." (--help for details)'
        : `unknown command "${command}" (the only command is "upload"; --help for details)`,
    );
    return EXIT_USAGE;
  }

  const token = nonEmpty(values.token) ?? nonEmpty(env.CTA_UPLOAD_TOKEN);
  const baseUrl = nonEmpty(values.url) ?? nonEmpty(env.CTA_URL);
  out = new Output(stdout, stderr, {
    quiet: Boolean(values.quiet),
    verbose: Boolean(values.verbose),
    secrets: [token ?? "", tokenCandidate, env.CTA_UPLOAD_TOKEN ?? ""],
  });

  /** @type {{ retries: number, waitTimeoutS: number, baseDelayMs: number, endpoint: URL }} */
  let settings;
  /** @type {RunMetadata} */
  let metadata;
  try {
    if (!baseUrl) throw new UsageError("missing service URL: pass --url or set CTA_URL");
    if (!token) throw new UsageError("missing upload token: pass --token or set CTA_UPLOAD_TOKEN");
    let endpoint;
    try {
      const base = new URL(baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`);
      if (base.protocol !== "http:" && base.protocol !== "https:") throw new Error("not http(s)");
      base.search = "";
      base.hash = "";
      endpoint = new URL("uploads/v1/test_runs", base);
    } catch {
      throw new UsageError(`--url must be an http(s) URL (got "${baseUrl}")`);
    }
    const retries = parseNumberOption("retries", values.retries, { min: 0, integer: true }) ?? DEFAULT_RETRIES;
    const waitTimeoutS = parseNumberOption("timeout", values.timeout, { min: 0, integer: false }) ?? DEFAULT_WAIT_TIMEOUT_S;
    let baseDelayMs = io.baseDelayMs;
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

    if (!UPLOAD_TOKEN_SHAPE.test(token)) {
      out.warn("the token does not look like an upload token (ctu_ followed by 49 letters and digits)");
    }
    const ci = detectCiMetadata(env, { readEvent: io.readEvent ?? readJsonFile });
    metadata = {
      branch: nonEmpty(values.branch) ?? ci.branch,
      commit_sha: nonEmpty(values["commit-sha"]) ?? ci.commit_sha,
      build_id: nonEmpty(values["build-id"]) ?? ci.build_id,
      build_url: nonEmpty(values["build-url"]) ?? ci.build_url,
      started_at: startedAt,
      tags: (values.tag ?? []).map((t) => t.trim()).filter((t) => t !== ""),
    };
    out.debug(`CI provider: ${ci.provider ?? "none detected"}`);
    out.debug(`metadata: ${JSON.stringify(metadata)}`);
    settings = { retries, waitTimeoutS, baseDelayMs, endpoint };
  } catch (error) {
    if (error instanceof UsageError) {
      out.error(error.message);
      return EXIT_USAGE;
    }
    out.error(`unexpected: ${/** @type {Error} */ (error)?.stack ?? error}`);
    return EXIT_USAGE;
  }

  /** @type {string[]} */
  let files;
  try {
    const expanded = await expandFiles(patterns, { cwd });
    for (const pattern of expanded.unmatched) out.warn(`no files match "${pattern}"`);
    files = expanded.files;
  } catch (error) {
    out.error(`cannot expand file patterns: ${/** @type {Error} */ (error).message}`);
    return EXIT_USAGE;
  }
  if (files.length === 0) {
    out.error(`no report files matched ${patterns.map((p) => `"${p}"`).join(", ")}`);
    return EXIT_USAGE;
  }
  out.debug(`${files.length} file(s): ${files.map((f) => displayPath(f, cwd)).join(", ")}`);

  const sleep = io.sleep ?? realSleep;
  const now = io.now ?? Date.now;
  /** @type {RetryOptions} */
  const retryOptions = {
    fetch: io.fetch ?? globalThis.fetch,
    retries: settings.retries,
    baseDelayMs: settings.baseDelayMs,
    sleep,
    now,
    random: io.random,
    onRetry: (info) =>
      out.info(
        `attempt ${info.attempt}/${info.attempts} failed (${info.reason}); retrying in ${(info.delayMs / 1000).toFixed(1)} s`,
      ),
  };
  const headers = {
    authorization: `Bearer ${token}`,
    "user-agent": `ci-test-analytics/${cliVersion()} node/${process.versions.node}`,
    accept: "application/json",
  };
  const context = {
    out,
    cwd,
    headers,
    retryOptions,
    endpoint: settings.endpoint,
    metadata,
    wait: Boolean(values.wait),
    waitTimeoutMs: settings.waitTimeoutS * 1000,
    waitDeadline: 0,
    sleep,
    now,
    pollBaseMs: io.pollBaseMs ?? POLL_BASE_MS,
  };

  /** @type {string[][]} */
  const groups = values["run-per-file"] ? files.map((f) => [f]) : [files];
  const uploadProgress = groups.length > 1 ? out.progress("Uploading", groups.length) : null;
  /** @type {number[]} */
  const codes = [];
  for (const group of groups) {
    const showReadProgress = groups.length === 1 && group.length > PROGRESS_FILE_THRESHOLD;
    const { code, stop } = await uploadGroup(group, context, { showReadProgress });
    codes.push(code);
    uploadProgress?.tick();
    if (stop && codes.length < groups.length) {
      out.error(`stopping: ${stop}; ${groups.length - codes.length} file(s) not uploaded`);
      break;
    }
  }
  if (groups.length > 1) {
    const ok = codes.filter((c) => c === EXIT_OK).length;
    out.info(`${ok} of ${groups.length} runs uploaded${ok < groups.length ? `, ${groups.length - ok} failed` : ""}`);
  }
  // The most actionable failure wins: usage, then rejection, then transport, then processing.
  for (const code of [EXIT_USAGE, EXIT_REJECTED, EXIT_UPLOAD_FAILED, EXIT_RUN_FAILED]) {
    if (codes.includes(code)) return code;
  }
  return EXIT_OK;
}

/**
 * @typedef {object} UploadContext
 * @property {Output} out
 * @property {string} cwd
 * @property {Record<string, string>} headers
 * @property {RetryOptions} retryOptions
 * @property {URL} endpoint
 * @property {RunMetadata} metadata
 * @property {boolean} wait
 * @property {number} waitTimeoutMs  --timeout, for all the runs of this invocation together
 * @property {number} waitDeadline   set when the first wait starts
 * @property {(ms: number) => Promise<unknown>} sleep
 * @property {() => number} now
 * @property {number} pollBaseMs
 */

/**
 * Read, send and (with --wait) follow one run.
 * @param {string[]} files
 * @param {UploadContext} context
 * @param {{ showReadProgress: boolean }} options
 * @returns {Promise<{ code: number, stop: string | null }>} `stop` says why the other runs
 *   should not be tried (the token was rejected, or the service stayed unreachable)
 */
async function uploadGroup(files, context, options) {
  const { out, cwd } = context;
  const label = files.length === 1 ? displayPath(/** @type {string} */ (files[0]), cwd) : `${files.length} files`;
  let upload;
  try {
    const readProgress = options.showReadProgress ? out.progress("Reading reports", files.length) : null;
    upload = await buildUpload(files, context.metadata, { cwd, onFileRead: () => readProgress?.tick() });
  } catch (error) {
    if (error instanceof UsageError) {
      out.error(error.message);
      return { code: EXIT_USAGE, stop: null };
    }
    throw error;
  }
  out.debug(`POST ${context.endpoint.href} (${formatBytes(upload.bytes)}, ${label})`);
  const result = await requestWithRetry(
    context.endpoint.href,
    {
      method: "POST",
      headers: { ...context.headers, "content-type": "application/json", "idempotency-key": randomUUID() },
      body: upload.body,
    },
    context.retryOptions,
  );
  const failure = reportFailure(result, `upload of ${label}`, out);
  if (failure !== null) {
    const authRejected = result.kind === "response" && (result.status === 401 || result.status === 403);
    const stop = authRejected
      ? "the token was rejected"
      : failure === EXIT_UPLOAD_FAILED
        ? "the service is unreachable or failing"
        : null;
    return { code: failure, stop };
  }
  const response = /** @type {HttpResponse} */ (result);
  const runInfo = response.json ?? {};
  const number = runInfo.number;
  const status = runInfo.status ?? "pending";
  const link = runInfo.url ?? runInfo.api_url ?? "";
  const fileWord = files.length === 1 ? "1 file" : `${files.length} files`;
  out.result(`Uploaded ${fileWord} as test run #${number ?? "?"} (${status})${link ? `: ${link}` : ""}`);
  if (!context.wait) return { code: EXIT_OK, stop: null };
  if (typeof number !== "number" && typeof number !== "string") {
    out.error("the service did not return a run number; cannot --wait");
    return { code: EXIT_UPLOAD_FAILED, stop: null };
  }
  if (context.waitDeadline === 0) context.waitDeadline = context.now() + context.waitTimeoutMs;
  return { code: await waitForRun(String(number), link, context), stop: null };
}

/**
 * Exit code for a result that is not a success (null for a 2xx), with the message printed.
 * @param {HttpResult} result
 * @param {string} what
 * @param {Output} out
 * @returns {number | null}
 */
function reportFailure(result, what, out) {
  if (result.kind === "network-error") {
    out.error(`${what} failed after ${result.attempts} attempt(s): ${result.message}`);
    return EXIT_UPLOAD_FAILED;
  }
  if (result.status >= 200 && result.status < 300) return null;
  const description = describeHttpError(result);
  if (result.status >= 400 && result.status < 500 && result.status !== 429) {
    const hint =
      result.status === 401
        ? " (check --token / CTA_UPLOAD_TOKEN: it must be the project's upload token)"
        : result.status === 413
          ? " (the request is too large; try --run-per-file or fewer files)"
          : "";
    out.error(`${what} rejected by the service: ${description}${hint}`);
    for (const detail of errorDetails(result)) out.error(`  ${detail}`);
    return EXIT_REJECTED;
  }
  out.error(`${what} failed after ${result.attempts} attempt(s): ${description}`);
  return EXIT_UPLOAD_FAILED;
}

const IN_PROGRESS = new Set(["pending", "processing", "queued", "running"]);

/**
 * Poll the run until it leaves "pending" (or the --timeout deadline passes).
 * @param {string} number
 * @param {string} link
 * @param {UploadContext} context
 * @returns {Promise<number>}
 */
async function waitForRun(number, link, context) {
  const { out, now, sleep } = context;
  const url = new URL(encodeURIComponent(number), `${context.endpoint.href}/`).href;
  let delay = context.pollBaseMs;
  for (;;) {
    const result = await requestWithRetry(url, { method: "GET", headers: context.headers }, context.retryOptions);
    const failure = reportFailure(result, `checking test run #${number}`, out);
    if (failure !== null) return failure;
    const runInfo = /** @type {HttpResponse} */ (result).json ?? {};
    const status = String(runInfo.status ?? "unknown");
    out.debug(`test run #${number}: ${status}`);
    if (status === "processed") {
      out.result(`Test run #${number} processed${link ? `: ${link}` : ""}`);
      return EXIT_OK;
    }
    if (status === "failed") {
      out.error(`test run #${number} failed processing: ${runInfo.failure_reason ?? "no reason given"}${link ? ` (${link})` : ""}`);
      return EXIT_RUN_FAILED;
    }
    if (!IN_PROGRESS.has(status)) {
      out.error(`test run #${number} has an unexpected status "${status}"`);
      return EXIT_UPLOAD_FAILED;
    }
    const left = context.waitDeadline - now();
    if (left <= 0) {
      out.error(`timed out waiting for test run #${number} (still ${status})${link ? `: ${link}` : ""}`);
      return EXIT_UPLOAD_FAILED;
    }
    await sleep(Math.min(delay, left));
    delay = Math.min(delay * 2, POLL_MAX_MS);
  }
}

/**
 * Entry point for the bin: runs with the process's argv, env and streams.
 * @param {RunIo} [io]
 */
export async function main(io = {}) {
  try {
    process.exitCode = await run(process.argv.slice(2), io);
  } catch (error) {
    const message = String(/** @type {Error} */ (error)?.stack ?? error).replace(SECRET_SHAPE, (m) => `${m.slice(0, 4)}***`);
    process.stderr.write(`error: unexpected failure: ${message}\n`);
    process.exitCode = EXIT_UPLOAD_FAILED;
  }
}

function isMainModule() {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return pathToFileURL(realpathSync(script)).href === pathToFileURL(realpathSync(fileURLToPath(import.meta.url))).href;
  } catch {
    return false;
  }
}

if (isMainModule()) await main();
