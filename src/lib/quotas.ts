/**
 * Quotas per organization (docs/quotas.md): what one organization may hold or do, so that open
 * sign-up cannot turn into unlimited projects, uploads and exports. Each has a default sized for
 * real use (well above the project's own benchmarks) and an operator override from the
 * environment; `0` or `unlimited` switches one off.
 *
 * - rate quotas answer 429 `rate_limited` with `Retry-After` (waiting helps): uploads per hour,
 *   concurrent exports;
 * - count quotas answer 429 `quota_exceeded` without `Retry-After` (waiting does not help; deleting
 *   does, or the operator raising it): projects, stored cases.
 */

export type Quotas = {
  /** Projects an organization may have (QUOTA_PROJECTS); null: no cap. */
  projects: number | null;
  /** Uploads (POST /uploads/v1/test_runs) an organization may send per hour (QUOTA_UPLOADS_PER_HOUR); null: no cap. */
  uploadsPerHour: number | null;
  /** Exports an organization may run at once (QUOTA_CONCURRENT_EXPORTS); null: no cap. */
  concurrentExports: number | null;
  /**
   * Test cases an organization may store, all its projects' runs together (QUOTA_STORED_CASES); null:
   * no cap. Checked when an upload arrives: one is accepted while the stored cases are below it.
   */
  storedCases: number | null;
};

export const DEFAULT_QUOTAS: Quotas = {
  projects: 1_000,
  uploadsPerHour: 10_000,
  concurrentExports: 2,
  storedCases: 50_000_000,
};

/** The environment variables that override the defaults. */
const QUOTA_VARIABLES = {
  projects: "QUOTA_PROJECTS",
  uploadsPerHour: "QUOTA_UPLOADS_PER_HOUR",
  concurrentExports: "QUOTA_CONCURRENT_EXPORTS",
  storedCases: "QUOTA_STORED_CASES",
} as const satisfies Record<keyof Quotas, string>;

export type QuotaEnvironment = { [K in (typeof QUOTA_VARIABLES)[keyof Quotas]]?: string };

const MAX_QUOTA = 1_000_000_000;

/** One quota as written in the environment: unset or empty → the default; `0` or `unlimited` → no cap; else a whole number. */
function parseQuota(name: string, text: string | undefined, fallback: number | null): number | null {
  const trimmed = text?.trim() ?? "";
  if (trimmed === "") return fallback;
  if (trimmed.toLowerCase() === "unlimited") return null;
  const value = Number(trimmed);
  if (!/^\d+$/.test(trimmed) || value > MAX_QUOTA) {
    throw new Error(`${name} must be a whole number from 0 to ${MAX_QUOTA} (0 or 'unlimited': no cap); it is '${trimmed.slice(0, 40)}'.`);
  }
  return value === 0 ? null : value;
}

/** The quotas of an environment (Node's process.env, the Worker's vars); a malformed value throws, naming the variable. */
export function quotasFrom(env: QuotaEnvironment): Quotas {
  return {
    projects: parseQuota(QUOTA_VARIABLES.projects, env.QUOTA_PROJECTS, DEFAULT_QUOTAS.projects),
    uploadsPerHour: parseQuota(QUOTA_VARIABLES.uploadsPerHour, env.QUOTA_UPLOADS_PER_HOUR, DEFAULT_QUOTAS.uploadsPerHour),
    concurrentExports: parseQuota(QUOTA_VARIABLES.concurrentExports, env.QUOTA_CONCURRENT_EXPORTS, DEFAULT_QUOTAS.concurrentExports),
    storedCases: parseQuota(QUOTA_VARIABLES.storedCases, env.QUOTA_STORED_CASES, DEFAULT_QUOTAS.storedCases),
  };
}

/** The quotas in force: the configured ones over the defaults (an absent field is its default; null is no cap). */
export function resolveQuotas(configured: Partial<Quotas> | undefined): Quotas {
  return { ...DEFAULT_QUOTAS, ...configured };
}
