/**
 * `--quarantine`: the project's quarantine list (GET /uploads/v1/quarantined_tests, with the
 * upload token), cached on disk with its ETag, and the verdict on the reports' failures.
 *
 * - The cache is one file per service URL and upload token (so per project), in the cache folder
 *   (--cache-dir, CTA_CACHE_DIR, $XDG_CACHE_HOME/ci-test-analytics, ~/.cache/ci-test-analytics).
 *   It holds the list, its ETag and when the service last confirmed it (`checked_at`); the file
 *   name is a hash, so the token is never written.
 * - Each run revalidates: If-None-Match with the cached ETag; a 304 keeps the list and refreshes
 *   `checked_at`, a 200 replaces it.
 * - When the list cannot be had (network error, 5xx, 429 after retries, a rejected token, an
 *   answer that is not the list), a cached list the service confirmed less than 24 hours ago is
 *   used; otherwise no failure is masked. Either way the CLI says why.
 * - A quarantine whose `expires_at` has passed masks nothing, even in a list read from the cache.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testIdentityKey } from "../lib/test-identity";
import { type HttpResponse, type RetryOptions, describeHttpError, requestWithRetry } from "./http-retry";
import type { FailedTest } from "./results";

/** How old a cached list may be (since the service last confirmed it) to stand in for the service. */
export const CACHE_MAX_AGE_MS = 24 * 60 * 60 * 1000;
/** A `checked_at` further ahead than this is a clock problem, not a fresh list. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;
const CACHE_FORMAT = 1;

type QuarantineEntry = {
  test_id: string;
  classname: string | null;
  name: string;
  file: string | null;
  reason: string;
  expires_at: string;
};

type CacheFile = { format: number; url: string; etag: string | null; checked_at: string; data: QuarantineEntry[] };

export type QuarantineList = {
  entries: QuarantineEntry[];
  /** `service`: answered now (200 or 304); `cache`: the service could not be asked, the cache stood in. */
  source: "service" | "cache";
  /** When the service last confirmed the list (ms). */
  checkedAt: number;
};

/** The list to apply (null: nothing is masked), and what to tell the user about where it came from. */
export type QuarantineLookup = { list: QuarantineList | null; note: string; problem: string | null };

/** The cache file for a service URL and token: a hash of both, so the token is never on disk. */
export function cacheFilePath(cacheDir: string, listUrl: string, token: string): string {
  const key = createHash("sha256").update(`ci-test-analytics quarantine list\n${listUrl}\n${token}`).digest("hex").slice(0, 32);
  return join(cacheDir, `quarantine-${key}.json`);
}

function isEntry(value: unknown): value is QuarantineEntry {
  const v = value as Partial<Record<keyof QuarantineEntry, unknown>> | null;
  return (
    typeof v === "object" &&
    v !== null &&
    typeof v.name === "string" &&
    (v.classname === null || typeof v.classname === "string") &&
    (v.file === null || typeof v.file === "string") &&
    typeof v.expires_at === "string" &&
    !Number.isNaN(Date.parse(v.expires_at))
  );
}

/** The `data` of a list, or null when it is not one. */
function entriesOf(body: unknown): QuarantineEntry[] | null {
  const data = (body as { data?: unknown } | null)?.data;
  return Array.isArray(data) && data.every(isEntry) ? data : null;
}

function readCache(path: string, listUrl: string): CacheFile | null {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<CacheFile>;
    if (parsed.format !== CACHE_FORMAT || parsed.url !== listUrl || typeof parsed.checked_at !== "string") return null;
    if (Number.isNaN(Date.parse(parsed.checked_at))) return null;
    const data = entriesOf(parsed);
    if (!data) return null;
    return {
      format: CACHE_FORMAT,
      url: listUrl,
      etag: typeof parsed.etag === "string" ? parsed.etag : null,
      checked_at: parsed.checked_at,
      data,
    };
  } catch {
    return null;
  }
}

/** Writes the cache file atomically (a reader never sees half a file). Throws on failure. */
function writeCache(path: string, cacheDir: string, file: CacheFile): void {
  mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(file)}\n`, { mode: 0o600 });
  renameSync(temporary, path);
}

/** "3 h 5 min", "12 min", "40 s". */
function formatAge(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
}

function describeFailure(result: Awaited<ReturnType<typeof requestWithRetry>>): string {
  if (result.kind === "network-error") return `the service is unreachable (${result.message}, after ${result.attempts} attempt(s))`;
  const description = describeHttpError(result);
  if (result.status === 401 || result.status === 403) return `the service rejected the token (${description})`;
  if (result.status >= 500 || result.status === 429) return `the service is failing (${description}, after ${result.attempts} attempt(s))`;
  return `the service refused the request (${description})`;
}

export type LookupOptions = {
  listUrl: string;
  token: string;
  headers: Record<string, string>;
  retryOptions: RetryOptions;
  cacheDir: string;
  now: () => number;
  /** Called when the cache cannot be written (the lookup goes on). */
  onCacheError: (message: string) => void;
};

/** Fetches (or revalidates) the list, keeps the cache, and falls back to it as the rules say. */
export async function lookUpQuarantine(options: LookupOptions): Promise<QuarantineLookup> {
  const { listUrl, now } = options;
  const path = cacheFilePath(options.cacheDir, listUrl, options.token);
  const cached = readCache(path, listUrl);
  const headers: Record<string, string> = { ...options.headers };
  if (cached?.etag) headers["if-none-match"] = cached.etag;
  const result = await requestWithRetry(listUrl, { method: "GET", headers }, options.retryOptions);

  const save = (file: CacheFile) => {
    try {
      writeCache(path, options.cacheDir, file);
    } catch (error) {
      options.onCacheError(`could not write the quarantine list cache ${path}: ${(error as Error).message}`);
    }
  };

  let problem: string;
  if (result.kind === "response" && result.status === 200) {
    const entries = entriesOf((result as HttpResponse).json);
    if (entries) {
      const checkedAt = now();
      save({
        format: CACHE_FORMAT,
        url: listUrl,
        etag: result.headers.get("etag"),
        checked_at: new Date(checkedAt).toISOString(),
        data: entries,
      });
      return {
        list: { entries, source: "service", checkedAt },
        note: `the quarantine list from the service (${entries.length} test(s))`,
        problem: null,
      };
    }
    problem = "the service's answer is not a quarantine list";
  } else if (result.kind === "response" && result.status === 304 && cached) {
    const checkedAt = now();
    save({ ...cached, checked_at: new Date(checkedAt).toISOString() });
    return {
      list: { entries: cached.data, source: "service", checkedAt },
      note: `the quarantine list from the cache, unchanged on the service (${cached.data.length} test(s))`,
      problem: null,
    };
  } else if (result.kind === "response" && result.status === 304) {
    problem = "the service answered 304 Not Modified to a request for the whole list";
  } else {
    problem = describeFailure(result);
  }

  if (cached) {
    const checkedAt = Date.parse(cached.checked_at);
    const age = now() - checkedAt;
    if (age < CACHE_MAX_AGE_MS && age > -CLOCK_SKEW_MS) {
      return {
        list: { entries: cached.data, source: "cache", checkedAt },
        note: `the cached quarantine list, confirmed by the service ${formatAge(age)} ago (${cached.data.length} test(s))`,
        problem: `could not fetch the quarantine list: ${problem}; using the cached list, confirmed ${formatAge(age)} ago`,
      };
    }
    return {
      list: null,
      note: "no quarantine list",
      problem: `could not fetch the quarantine list: ${problem}; the cached list is too old to use (confirmed ${formatAge(age)} ago, at most 24 h): no failure is masked`,
    };
  }
  return {
    list: null,
    note: "no quarantine list",
    problem: `could not fetch the quarantine list: ${problem}; no cached list in ${options.cacheDir}: no failure is masked`,
  };
}

export type Verdict = {
  quarantined: { failure: FailedTest; entry: QuarantineEntry }[];
  notQuarantined: FailedTest[];
};

/** Splits the failures by the list's quarantines in force at `now` (null list: none is masked). */
export function judgeFailures(failures: FailedTest[], list: QuarantineList | null, now: number): Verdict {
  const inForce = new Map<string, QuarantineEntry>();
  for (const entry of list?.entries ?? []) {
    if (Date.parse(entry.expires_at) > now) inForce.set(testIdentityKey(entry), entry);
  }
  const verdict: Verdict = { quarantined: [], notQuarantined: [] };
  for (const failure of failures) {
    const entry = inForce.get(testIdentityKey(failure));
    if (entry) verdict.quarantined.push({ failure, entry });
    else verdict.notQuarantined.push(failure);
  }
  return verdict;
}
