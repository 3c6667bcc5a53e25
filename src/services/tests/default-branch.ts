const DEFAULT_BRANCHES = new Set(["main", "master"]);

/**
 * Whether a run is on its project's default branch: the configured one, or else `main`, `master`
 * and runs without a branch. The statistical windows (the checks', a test's rates) use only these.
 */
export function isDefaultBranch(branch: string | null, configured: string | null): boolean {
  if (configured) return branch === configured;
  return branch === null || branch === "" || DEFAULT_BRANCHES.has(branch);
}
