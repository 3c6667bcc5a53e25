/**
 * The run's `base_commit_sha`: the merge base of the pull request, computed with git when it can
 * be (deepening a shallow checkout a bounded number of times), else the base commit the CI names;
 * nothing for a build that is not for a pull request. Never fails the upload: what goes wrong is
 * one notice. docs/uploader-cli.md ("Base commit") describes the rules and their bounds.
 */
import { execFile } from "node:child_process";
import { COMMIT_SHA, type Env, type PullRequestBase } from "./ci-metadata";

/** Each local git command (merge-base, rev-parse, cat-file, symbolic-ref) ends after this. */
export const GIT_TIMEOUT_MS = 5_000;
/** Each `git fetch --deepen` ends after this. */
const FETCH_TIMEOUT_MS = 20_000;
/** All the git commands together end after this. */
const GIT_BUDGET_MS = 60_000;
/** A shallow checkout is deepened by these many commits, one fetch each, before giving up (never --unshallow). */
export const DEEPEN_STEPS = [50, 200] as const;
/** What git may print before it is stopped (merge-base prints one line). */
const MAX_GIT_OUTPUT = 64 * 1024;

type GitResult = { ok: true; stdout: string } | { ok: false; reason: string; exitCode?: number };
export type Git = (args: string[], timeoutMs: number) => Promise<GitResult>;

/** The last line git wrote to stderr, cut to 200 characters. */
function lastLine(text: string): string {
  const lines = text.split("\n").map((l) => l.trim());
  const line = lines.filter((l) => l !== "").pop() ?? "";
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** Runs git without a shell, each call bounded in time and output, all of them by `GIT_BUDGET_MS`. */
export function gitRunner(cwd: string, env: Env, now: () => number): Git {
  const deadline = now() + GIT_BUDGET_MS;
  return (args, timeoutMs) => {
    const timeout = Math.min(timeoutMs, deadline - now());
    if (timeout <= 0) return Promise.resolve({ ok: false, reason: `git took more than ${GIT_BUDGET_MS / 1000} s in all` });
    return new Promise((resolve) => {
      execFile(
        "git",
        args,
        {
          cwd,
          // No credential prompt: a fetch that needs one fails rather than waiting.
          env: { ...env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" },
          timeout,
          maxBuffer: MAX_GIT_OUTPUT,
          windowsHide: true,
          encoding: "utf8",
        },
        (error, stdout, stderr) => {
          if (!error) return resolve({ ok: true, stdout: stdout.trim() });
          const failure = error as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null };
          const reason =
            failure.code === "ENOENT"
              ? "git is not installed"
              : failure.killed || failure.signal
                ? `git ${args[0]} did not finish within ${(timeout / 1000).toFixed(0)} s`
                : lastLine(String(stderr)) || `git ${args[0]} exited with ${String(failure.code)}`;
          resolve({ ok: false, reason, exitCode: typeof failure.code === "number" ? failure.code : undefined });
        },
      );
    });
  };
}

/** Whether `rev` names a commit this checkout has. */
async function hasCommit(git: Git, rev: string): Promise<boolean> {
  return (await git(["cat-file", "-e", `${rev}^{commit}`], GIT_TIMEOUT_MS)).ok;
}

/**
 * The merge base of `head` (the run's commit when the checkout has it, else HEAD) and `target`,
 * deepening a shallow checkout by DEEPEN_STEPS from `origin` when git cannot find it; the SHA, or
 * why not.
 */
async function computeMergeBase(
  git: Git,
  head: string | undefined,
  target: string,
  fetchWhat: string,
): Promise<{ sha: string } | { reason: string }> {
  for (let step = 0; ; step++) {
    const from = head !== undefined && (await hasCommit(git, head)) ? head : "HEAD";
    const result = await git(["merge-base", from, target], GIT_TIMEOUT_MS);
    if (result.ok && COMMIT_SHA.test(result.stdout)) return { sha: result.stdout.toLowerCase() };
    // Exit 1 without a message: the two have no common commit (in a shallow checkout, not yet).
    const reason = result.ok || result.exitCode === 1 ? `git merge-base found no common commit of ${from} and ${target}` : result.reason;
    if (step >= DEEPEN_STEPS.length)
      return { reason: `${reason} (after deepening the shallow checkout by ${DEEPEN_STEPS.join(" + ")} commits)` };
    if (step === 0) {
      const shallow = await git(["rev-parse", "--is-shallow-repository"], GIT_TIMEOUT_MS);
      if (!shallow.ok) return { reason: shallow.reason };
      if (shallow.stdout !== "true") return { reason };
    }
    const fetched = await git(["fetch", "--no-tags", "--quiet", `--deepen=${DEEPEN_STEPS[step]}`, "origin", fetchWhat], FETCH_TIMEOUT_MS);
    if (!fetched.ok) return { reason: `${reason}; deepening the shallow checkout failed: ${fetched.reason}` };
  }
}

export type BaseCommitChoice = { mode: "detect" } | { mode: "off" } | { mode: "given"; sha: string };

export type BaseCommitOutcome = {
  /** What to send as base_commit_sha; undefined: nothing. */
  sha: string | undefined;
  /** Where it comes from, for --verbose. */
  source: string;
  /** A one-line notice when the merge base could not be computed. */
  notice?: string;
};

/**
 * The base commit to send: the flag's, none with --no-base-commit or outside a pull request, the
 * CI's merge base (GitLab), else the merge base git computes, else the CI's base commit.
 * @param head the run's commit (the pull request's head), when known
 */
export async function resolveBaseCommit(input: {
  choice: BaseCommitChoice;
  base: PullRequestBase | null;
  head: string | undefined;
  cwd: string;
  env: Env;
}): Promise<BaseCommitOutcome> {
  const { choice, base } = input;
  if (choice.mode === "given") return { sha: choice.sha, source: "--base-commit" };
  if (choice.mode === "off") return { sha: undefined, source: "--no-base-commit" };
  if (base === null) return { sha: undefined, source: "not a pull request build" };
  if (base.isMergeBase && base.sha !== undefined) return { sha: base.sha, source: "the merge base the CI gives" };
  const target = base.sha ?? `refs/remotes/origin/${base.ref}`;
  const fetchWhat = base.ref !== undefined ? `+refs/heads/${base.ref}:refs/remotes/origin/${base.ref}` : base.sha!;
  const head = input.head !== undefined && COMMIT_SHA.test(input.head) ? input.head : undefined;
  const git = gitRunner(input.cwd, input.env, Date.now);
  const merged = await computeMergeBase(git, head, target, fetchWhat);
  if ("sha" in merged) return { sha: merged.sha, source: `the merge base of ${head ?? "HEAD"} and ${base.sha ?? `origin/${base.ref}`}` };
  if (base.sha !== undefined) {
    return {
      sha: base.sha,
      source: "the pull request's base commit from the CI",
      notice: `base commit: no merge base (${merged.reason}); sending the pull request's base commit from the CI instead`,
    };
  }
  return { sha: undefined, source: "none", notice: `base commit: none sent (no merge base with origin/${base.ref}: ${merged.reason})` };
}
