/**
 * What git says about the checkout in the working directory: its branch and commit, for the run
 * when neither a flag nor the CI's variables give them, and its top level, the root test files
 * are resolved against (src/cli/test-files.ts). Never fails the upload: no git, not a repository,
 * a detached HEAD or a command that times out give nothing, silently. docs/uploader-cli.md ("CI
 * detection") gives the order.
 */
import { resolve } from "node:path";
import { GIT_TIMEOUT_MS, gitRunner } from "./base-commit";
import { COMMIT_SHA, type Env } from "./ci-metadata";
import { nonEmpty } from "./format";

export type Checkout = {
  /** The repository's top level (absolute), when the working directory is in one. */
  root?: string;
  /** The branch HEAD is on; none when HEAD is detached (as most CIs check out). */
  branch?: string;
  /** HEAD's commit, lower case. */
  commit_sha?: string;
};

/**
 * Asks git only what is wanted, each command without a shell and within GIT_TIMEOUT_MS:
 * `git rev-parse --show-toplevel`, `git rev-parse --verify -q HEAD` and
 * `git symbolic-ref --short -q HEAD` (which prints nothing for a detached HEAD).
 */
export async function readCheckout(input: { cwd: string; env: Env; head: boolean; root: boolean }): Promise<Checkout> {
  const git = gitRunner(input.cwd, input.env, Date.now);
  const run = async (args: string[]) => {
    const result = await git(args, GIT_TIMEOUT_MS);
    return result.ok ? nonEmpty(result.stdout) : undefined;
  };
  const [root, commit, branch] = await Promise.all([
    input.root ? run(["rev-parse", "--show-toplevel"]) : undefined,
    input.head ? run(["rev-parse", "--verify", "-q", "HEAD"]) : undefined,
    input.head ? run(["symbolic-ref", "--short", "-q", "HEAD"]) : undefined,
  ]);
  const checkout: Checkout = {};
  if (root !== undefined) checkout.root = resolve(input.cwd, root);
  if (commit !== undefined && COMMIT_SHA.test(commit)) checkout.commit_sha = commit.toLowerCase();
  // A branch name is one line; anything else is not one.
  if (branch !== undefined && !/[\r\n]/.test(branch)) checkout.branch = branch;
  return checkout;
}
