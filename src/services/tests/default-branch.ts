import { type SQL, sql } from "drizzle-orm";

const DEFAULT_BRANCHES = new Set(["main", "master"]);

/**
 * Whether a run is on its project's default branch: the configured one, or else `main`, `master`
 * and runs without a branch. The statistical windows (the checks', a test's rates) use only these.
 */
export function isDefaultBranch(branch: string | null, configured: string | null): boolean {
  if (configured) return branch === configured;
  return branch === null || branch === "" || DEFAULT_BRANCHES.has(branch);
}

/** isDefaultBranch in SQL: `branch` a run's branch, `configured` its project's `default_branch`. */
export const defaultBranchSql = (branch: SQL, configured: SQL): SQL =>
  sql`(case when ${configured} is not null then ${branch} is not distinct from ${configured} else coalesce(${branch}, '') in ('', 'main', 'master') end)`;
