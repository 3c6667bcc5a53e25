/**
 * `--pr-comment`: one comment on the GitHub pull request per project, job and variant, created
 * the first time and updated after (docs/uploader-cli.md, "Pull request comment"). It is found
 * again by the hidden marker its body starts with, which names the three; a comment without that
 * marker at its start (anyone else's, or a quote of ours) is never touched.
 *
 * Through GitHub's REST API (issue comments: a pull request is an issue) with GITHUB_TOKEN, at
 * GITHUB_API_URL (GitHub Enterprise Server: `https://HOST/api/v3`). The repository comes from
 * GITHUB_REPOSITORY or the event payload, the pull request's number from the payload
 * (GITHUB_EVENT_PATH, `pull_request.number`). Whatever goes wrong is a warning: a comment never
 * fails the build.
 */
import type { Env } from "./ci-metadata";
import { nonEmpty } from "./format";
import { type HttpResponse, type HttpResult, type RetryOptions, requestWithRetry } from "./http-retry";
import { codeSpan, comparedWith, link, plainText, verdictCountsTable, verdictHeadline, verdictSections } from "./summary";
import type { Output } from "./output";
import type { RunInfo } from "./upload";

/** GitHub refuses a comment body above 65,536 characters; the body stays below with room to spare. */
const MAX_COMMENT_CHARS = 65_536;
const BODY_BUDGET = MAX_COMMENT_CHARS - 1_024;
/** Pages of 100 comments read to find ours; a longer thread gets no comment rather than a second one. */
const MAX_COMMENT_PAGES = 20;
const GITHUB_API_VERSION = "2022-11-28";
const DEFAULT_API_URL = "https://api.github.com";
const REPOSITORY = /^[\w.-]+\/[\w.-]+$/;

type PullRequest = { apiUrl: string; repository: string; number: number; token: string };

/** Where to comment, or why not: `notice` when there is nothing to comment on, `problem` when there should be but cannot. */
type PullRequestLookup = { pullRequest: PullRequest } | { notice: string } | { problem: string };

/** The pull request this GitHub Actions job runs for, from its environment and event payload. */
function findPullRequest(env: Env, readEvent: (path: string) => unknown): PullRequestLookup {
  if (env.GITHUB_ACTIONS !== "true") return { notice: "--pr-comment: not running on GitHub Actions; no comment posted" };
  const eventName = nonEmpty(env.GITHUB_EVENT_NAME) ?? "";
  if (!eventName.startsWith("pull_request")) {
    return { notice: `--pr-comment: not a pull request event (${eventName || "none"}); no comment posted` };
  }
  type Payload = { pull_request?: { number?: unknown }; repository?: { full_name?: unknown } } | null | undefined;
  const eventPath = nonEmpty(env.GITHUB_EVENT_PATH);
  let event: Payload;
  try {
    event = eventPath ? (readEvent(eventPath) as Payload) : null;
  } catch (error) {
    return { problem: `cannot read the event payload ${eventPath}: ${(error as Error).message}` };
  }
  const number = event?.pull_request?.number;
  if (typeof number !== "number" || !Number.isInteger(number) || number < 1) {
    return { problem: "the event payload (GITHUB_EVENT_PATH) names no pull request number" };
  }
  const fullName = event?.repository?.full_name;
  const repository = nonEmpty(env.GITHUB_REPOSITORY) ?? (typeof fullName === "string" ? fullName : undefined);
  if (repository === undefined || !REPOSITORY.test(repository)) return { problem: "no repository (GITHUB_REPOSITORY) to comment in" };
  const token = nonEmpty(env.GITHUB_TOKEN);
  if (token === undefined) {
    return { problem: "GITHUB_TOKEN is not set (pass `GITHUB_TOKEN: ${{ github.token }}` in the step's env)" };
  }
  const apiUrl = (nonEmpty(env.GITHUB_API_URL) ?? DEFAULT_API_URL).replace(/\/+$/, "");
  if (!/^https?:\/\//.test(apiUrl)) return { problem: `GITHUB_API_URL is not an http(s) URL ("${apiUrl}")` };
  return { pullRequest: { apiUrl, repository, number, token } };
}

/**
 * The hidden first line that finds the comment again: project, job and variant, each
 * percent-encoded (so no value can end the HTML comment or pass for another field). The variant
 * is the run's `--variant` ("" for none).
 */
function commentMarker(key: { projectId: string; job: string; variant: string }): string {
  const part = (value: string) => encodeURIComponent(value);
  return `<!-- ci-test-analytics:pr-comment project=${part(key.projectId)} job=${part(key.job)} variant=${part(key.variant)} -->`;
}

/** The job part of the marker: CTA_PR_COMMENT_JOB (e.g. one per matrix leg), else GITHUB_JOB. */
function commentJob(env: Env): string {
  return nonEmpty(env.CTA_PR_COMMENT_JOB) ?? nonEmpty(env.GITHUB_JOB) ?? "";
}

/** Lines added while they fit the budget; the first that does not is replaced by a note. */
class Budget {
  private used = 0;
  readonly lines: string[] = [];
  full = false;
  constructor(private readonly limit: number) {}
  push(...lines: string[]): boolean {
    for (const line of lines) {
      if (this.full) return false;
      if (this.used + line.length + 1 > this.limit) {
        this.full = true;
        this.lines.push("", "_… cut here: GitHub takes at most 65,536 characters per comment; the run's page has every failure._");
        return false;
      }
      this.lines.push(line);
      this.used += line.length + 1;
    }
    return true;
  }
}

/**
 * The comment: the marker, a headline, the counts per verdict and fixed, each run's page and
 * base, the new failures listed first (with reasons and test pages), the other verdicts folded,
 * and why verdicts are missing when they are. Everything from reports or the service is escaped.
 */
function buildCommentBody(input: { marker: string; job: string; commitSha: string | undefined; runs: RunInfo[] }): string {
  const { runs } = input;
  const missing = runs.filter((run) => run.verdicts === null).length;
  const headline =
    missing === 0
      ? verdictHeadline(runs)
      : missing === runs.length
        ? "⚠️ verdicts not available"
        : `${verdictHeadline(runs)} (⚠️ ${missing} of ${runs.length} runs without verdicts)`;
  const about = [
    input.job ? `job ${codeSpan(input.job)}` : null,
    input.commitSha ? `commit ${codeSpan(input.commitSha.slice(0, 12))}` : null,
  ];
  const body = new Budget(BODY_BUDGET);
  body.push(input.marker, `### CI test analytics: ${headline}`, "");
  if (about.some((a) => a !== null)) body.push(`<sub>${about.filter((a) => a !== null).join(" · ")}</sub>`, "");
  for (const run of runs) {
    const page = link(`#${run.number ?? "?"}`, run.url);
    if (run.verdicts) body.push(`- Test run ${page}, compared with ${comparedWith(run.verdicts.comparison)}`);
    else body.push(`- Test run ${page}: ⚠️ ${plainText(run.verdictsProblem ?? `its verdicts were not read (${run.status})`, 500)}`);
  }
  if (runs.some((run) => run.verdicts !== null)) body.push("", ...verdictCountsTable(runs));
  for (const section of verdictSections(runs, Number.MAX_SAFE_INTEGER)) {
    // New failures in the open; known ones folded.
    if (section.verdict === "new" || section.verdict === "infrastructure") {
      body.push("", `#### ${section.title}`, "", ...section.lines);
      continue;
    }
    const opened = body.push("", `<details><summary>${section.title}</summary>`, "");
    // A section cut short still closes its <details>.
    if (!body.push(...section.lines, "", "</details>") && opened) body.lines.push("", "</details>");
  }
  return `${body.lines.join("\n")}\n`;
}

/** What GitHub's answer says, in a few words, with what to do for the usual refusals. */
function describeGitHubFailure(result: HttpResult, what: string): string {
  if (result.kind === "network-error") return `${what} failed after ${result.attempts} attempt(s): ${result.message}`;
  const message = typeof result.json?.message === "string" ? `: ${result.json.message}` : "";
  const hint =
    result.status === 401 || result.status === 403 || result.status === 404
      ? " (the token needs `pull-requests: write`; a pull request from a fork gets a read-only token)"
      : "";
  return `${what}: GitHub answered ${result.status}${message}${hint}`;
}

/** The URL of the next page from a Link header, when it stays on GitHub's API origin (the token goes nowhere else). */
function nextPage(linkHeader: string | null, apiUrl: string): string | null {
  const match = linkHeader ? /<([^>]+)>\s*;\s*rel="next"/.exec(linkHeader) : null;
  if (!match) return null;
  try {
    const next = new URL(match[1]!);
    return next.origin === new URL(apiUrl).origin ? next.href : null;
  } catch {
    return null;
  }
}

type CommentOutcome = { action: "created" | "updated"; url: string | null } | { problem: string };

/** Finds the comment whose body starts with the marker (the oldest if several), then updates it, or creates one. */
async function upsertComment(
  pr: PullRequest,
  comment: { marker: string; body: string },
  request: { userAgent: string; retryOptions: RetryOptions },
): Promise<CommentOutcome> {
  const headers = {
    authorization: `Bearer ${pr.token}`,
    accept: "application/vnd.github+json",
    "x-github-api-version": GITHUB_API_VERSION,
    "user-agent": request.userAgent,
  };
  const repo = pr.repository.split("/").map(encodeURIComponent).join("/");
  const send = (url: string, method: string, body?: unknown) =>
    requestWithRetry(
      url,
      body === undefined
        ? { method, headers }
        : { method, headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) },
      request.retryOptions,
    );
  let url: string | null = `${pr.apiUrl}/repos/${repo}/issues/${pr.number}/comments?per_page=100`;
  let existing: number | null = null;
  for (let page = 0; url !== null && existing === null; page++) {
    if (page === MAX_COMMENT_PAGES) {
      return {
        problem: `more than ${MAX_COMMENT_PAGES * 100} comments on pull request #${pr.number}: ours was not found, and no second one is made`,
      };
    }
    const result = await send(url, "GET");
    if (result.kind !== "response" || result.status !== 200 || !Array.isArray(result.json)) {
      return { problem: describeGitHubFailure(result, `listing the comments of pull request #${pr.number}`) };
    }
    const ours = (result.json as { id?: unknown; body?: unknown }[]).find(
      (c) =>
        typeof c.body === "string" && typeof c.id === "number" && (c.body === comment.marker || c.body.startsWith(`${comment.marker}\n`)),
    );
    if (ours) existing = ours.id as number;
    url = nextPage(result.headers.get("link"), pr.apiUrl);
  }
  const result =
    existing === null
      ? await send(`${pr.apiUrl}/repos/${repo}/issues/${pr.number}/comments`, "POST", { body: comment.body })
      : await send(`${pr.apiUrl}/repos/${repo}/issues/comments/${existing}`, "PATCH", { body: comment.body });
  const ok = result.kind === "response" && (result.status === 200 || result.status === 201);
  if (!ok)
    return {
      problem: describeGitHubFailure(result, `${existing === null ? "creating" : "updating"} the comment on pull request #${pr.number}`),
    };
  const htmlUrl = (result as HttpResponse).json?.html_url;
  return { action: existing === null ? "created" : "updated", url: typeof htmlUrl === "string" ? htmlUrl : null };
}

/** --pr-comment: comments on the pull request the job runs for, if any; says what it did, warns when it could not. */
export async function commentOnPullRequest(input: {
  env: Env;
  readEvent: (path: string) => unknown;
  runs: RunInfo[];
  commitSha: string | undefined;
  /** --variant: matrix legs with their own variants get a comment each. */
  variant: string;
  userAgent: string;
  retryOptions: RetryOptions;
  out: Output;
}): Promise<void> {
  const { env, runs, out } = input;
  const warn = (problem: string) => {
    out.warn(`could not post the pull request comment: ${problem}; the build does not fail for it`);
    out.annotate("warning", "CI test analytics: pull request comment", problem);
  };
  const lookup = findPullRequest(env, input.readEvent);
  if ("notice" in lookup) return out.info(lookup.notice);
  if ("problem" in lookup) return warn(lookup.problem);
  const projectId = runs.find((run) => run.projectId !== null)?.projectId;
  if (!projectId) return warn("no test run was recorded, so there is nothing to comment");
  const job = commentJob(env);
  const marker = commentMarker({ projectId, job, variant: input.variant });
  const body = buildCommentBody({ marker, job, commitSha: input.commitSha, runs });
  const outcome = await upsertComment(lookup.pullRequest, { marker, body }, input);
  if ("problem" in outcome) return warn(outcome.problem);
  out.result(`Pull request #${lookup.pullRequest.number}: comment ${outcome.action}${outcome.url ? `: ${outcome.url}` : ""}`);
}
