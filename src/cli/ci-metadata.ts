/**
 * Build metadata (branch, commit, build id and URL) from the CI provider's environment variables:
 * GitHub Actions, GitLab CI, Buildkite, CircleCI, Jenkins, Azure Pipelines, Bitbucket Pipelines,
 * Drone, TeamCity and Travis CI. The table and the reasons behind it are in docs/uploader-cli.md
 * ("CI detection"); what no variable says, git may (src/cli/checkout.ts).
 */
import { nonEmpty } from "./format";

export type Env = Record<string, string | undefined>;

export type CiProvider =
  | "github-actions"
  | "gitlab-ci"
  | "buildkite"
  | "circleci"
  | "jenkins"
  | "azure-pipelines"
  | "bitbucket-pipelines"
  | "drone"
  | "teamcity"
  | "travis-ci";

export type CiMetadata = {
  provider: CiProvider | null;
  branch?: string;
  commit_sha?: string;
  build_id?: string;
  build_url?: string;
};

export type DetectOptions = {
  /**
   * Reads GitHub's event payload (GITHUB_EVENT_PATH); without it the pull request head SHA
   * cannot be found and GITHUB_SHA is used as is.
   */
  readEvent?: (path: string) => unknown;
};

function firstOf(...values: (string | undefined)[]): string | undefined {
  for (const value of values) {
    const v = nonEmpty(value);
    if (v !== undefined) return v;
  }
  return undefined;
}

function compact(meta: CiMetadata): CiMetadata {
  const out: CiMetadata = { provider: meta.provider };
  for (const key of ["branch", "commit_sha", "build_id", "build_url"] as const) {
    if (meta[key] !== undefined) out[key] = meta[key];
  }
  return out;
}

/** GitHub's event payload's `pull_request` on pull request events (pull_request, pull_request_target, …); null otherwise or when unreadable. */
function githubPullRequest(env: Env, options: DetectOptions): Record<string, unknown> | null {
  const eventName = nonEmpty(env.GITHUB_EVENT_NAME);
  const eventPath = nonEmpty(env.GITHUB_EVENT_PATH);
  if (!eventName?.startsWith("pull_request") || !eventPath || !options.readEvent) return null;
  try {
    const event = options.readEvent(eventPath) as { pull_request?: unknown } | null | undefined;
    const pr = event?.pull_request;
    return typeof pr === "object" && pr !== null ? (pr as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** `pull_request.<side>.<key>` of the payload as a non-empty string. */
function pullRequestField(pr: Record<string, unknown> | null, side: "head" | "base", key: "sha" | "ref"): string | undefined {
  const value = (pr?.[side] as Record<string, unknown> | null | undefined)?.[key];
  return typeof value === "string" ? nonEmpty(value) : undefined;
}

/**
 * GitHub's pull_request* events run on a merge commit (GITHUB_SHA); the commit that was pushed is
 * the pull request's head, found only in the event payload.
 */
function githubPullRequestHeadSha(env: Env, options: DetectOptions): string | undefined {
  return pullRequestField(githubPullRequest(env, options), "head", "sha");
}

/** JENKINS_URL is set only when the Jenkins URL is configured; JENKINS_HOME + BUILD_NUMBER is the fallback signal. */
function isJenkins(env: Env): boolean {
  return nonEmpty(env.JENKINS_URL) !== undefined || (nonEmpty(env.JENKINS_HOME) !== undefined && nonEmpty(env.BUILD_NUMBER) !== undefined);
}

/** Azure Pipelines sets TF_BUILD to `True`. */
function isAzurePipelines(env: Env): boolean {
  return nonEmpty(env.TF_BUILD)?.toLowerCase() === "true";
}

/** `refs/heads/feature/x` → `feature/x` and `refs/tags/v1` → `v1` (Azure's full ref names); other refs as given. */
function shortRef(ref: string | undefined): string | undefined {
  return ref === undefined ? undefined : nonEmpty(ref.replace(/^refs\/(?:heads|tags)\//, ""));
}

/** A commit SHA as the upload takes it: 7 to 64 hexadecimal digits (abbreviated, SHA-1 or SHA-256). */
export const COMMIT_SHA = /^[0-9a-f]{7,64}$/i;

/**
 * What git may be given as a branch name: letters, digits and `._/+@-`, not starting with `-`
 * (so it cannot read as an option) and without `..`. Anything else is left out.
 */
const SAFE_REF = /^(?!-)(?!.*\.\.)[\w./+@-]{1,255}$/;

/**
 * The base of a pull request as the CI names it: its base commit (`sha`) and/or its base
 * branch (`ref`). `isMergeBase`: the CI already gives the merge base (GitLab's diff base).
 */
export type PullRequestBase = { sha?: string; ref?: string; isMergeBase: boolean };

function pullRequestBase(sha: string | undefined, ref: string | undefined, isMergeBase = false): PullRequestBase | null {
  const out: PullRequestBase = { isMergeBase };
  if (sha !== undefined && COMMIT_SHA.test(sha)) out.sha = sha.toLowerCase();
  if (ref !== undefined && SAFE_REF.test(ref)) out.ref = ref;
  if (out.sha === undefined) out.isMergeBase = false;
  return out.sha === undefined && out.ref === undefined ? null : out;
}

/**
 * The base of the pull request (or merge request) the build is for; null when the build is not
 * for one (a branch or tag build needs no base) or the CI does not say (CircleCI and TeamCity never do).
 * Table and reasons in docs/uploader-cli.md ("Base commit").
 */
export function detectPullRequestBase(env: Env, options: DetectOptions = {}): PullRequestBase | null {
  if (env.GITHUB_ACTIONS === "true") {
    const pr = githubPullRequest(env, options);
    return pr === null ? null : pullRequestBase(pullRequestField(pr, "base", "sha"), pullRequestField(pr, "base", "ref"));
  }
  if (nonEmpty(env.GITLAB_CI)) {
    if (nonEmpty(env.CI_MERGE_REQUEST_IID) === undefined && nonEmpty(env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME) === undefined) return null;
    const ref = nonEmpty(env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME);
    const diffBase = nonEmpty(env.CI_MERGE_REQUEST_DIFF_BASE_SHA);
    if (diffBase !== undefined && COMMIT_SHA.test(diffBase)) return pullRequestBase(diffBase, ref, true);
    return pullRequestBase(nonEmpty(env.CI_MERGE_REQUEST_TARGET_BRANCH_SHA), ref);
  }
  if (env.BUILDKITE === "true") {
    const pr = nonEmpty(env.BUILDKITE_PULL_REQUEST);
    if (pr === undefined || pr === "false") return null;
    return pullRequestBase(undefined, nonEmpty(env.BUILDKITE_PULL_REQUEST_BASE_BRANCH));
  }
  if (env.CIRCLECI === "true") return null;
  if (isJenkins(env)) return pullRequestBase(undefined, nonEmpty(env.CHANGE_TARGET));
  if (isAzurePipelines(env)) {
    // Set only when a pull request (through a branch policy, or GitHub's) started the build.
    if (nonEmpty(env.SYSTEM_PULLREQUEST_PULLREQUESTID) === undefined && env.BUILD_REASON !== "PullRequest") return null;
    return pullRequestBase(undefined, firstOf(env.SYSTEM_PULLREQUEST_TARGETBRANCHNAME, shortRef(env.SYSTEM_PULLREQUEST_TARGETBRANCH)));
  }
  if (nonEmpty(env.BITBUCKET_BUILD_NUMBER)) {
    if (nonEmpty(env.BITBUCKET_PR_ID) === undefined) return null;
    return pullRequestBase(undefined, nonEmpty(env.BITBUCKET_PR_DESTINATION_BRANCH));
  }
  if (env.DRONE === "true") {
    if (env.DRONE_BUILD_EVENT !== "pull_request" && nonEmpty(env.DRONE_PULL_REQUEST) === undefined) return null;
    // DRONE_BRANCH is the target branch of a pull request too.
    return pullRequestBase(undefined, firstOf(env.DRONE_TARGET_BRANCH, env.DRONE_BRANCH));
  }
  // TeamCity names a pull request's target branch only in configuration parameters, which are not
  // environment variables.
  if (nonEmpty(env.TEAMCITY_VERSION)) return null;
  if (env.TRAVIS === "true") {
    const pr = nonEmpty(env.TRAVIS_PULL_REQUEST);
    if (pr === undefined || pr === "false") return null;
    // On a pull request build TRAVIS_BRANCH is the branch it targets.
    return pullRequestBase(undefined, nonEmpty(env.TRAVIS_BRANCH));
  }
  return null;
}

/**
 * Build metadata from the CI provider's environment variables. Pure: it reads only `env` (and,
 * when given, GitHub's event payload through `options.readEvent`).
 */
export function detectCiMetadata(env: Env, options: DetectOptions = {}): CiMetadata {
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
  if (isJenkins(env)) {
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
  return detectOtherCi(env);
}

/** Azure Pipelines, Bitbucket Pipelines, Drone, TeamCity and Travis CI (after the five above, whose markers win). */
function detectOtherCi(env: Env): CiMetadata {
  if (isAzurePipelines(env)) {
    const collection = nonEmpty(env.SYSTEM_COLLECTIONURI)?.replace(/\/*$/, "/");
    const project = nonEmpty(env.SYSTEM_TEAMPROJECT);
    const buildId = nonEmpty(env.BUILD_BUILDID);
    return compact({
      provider: "azure-pipelines",
      // Pull request builds check out a merge (BUILD_SOURCEBRANCH refs/pull/<id>/merge, and
      // BUILD_SOURCEVERSION its merge commit): the pull request's own branch and head come first.
      // BUILD_SOURCEBRANCHNAME is only the last segment of the ref (`x` for feature/x): last resort.
      branch: firstOf(shortRef(env.SYSTEM_PULLREQUEST_SOURCEBRANCH), shortRef(env.BUILD_SOURCEBRANCH), env.BUILD_SOURCEBRANCHNAME),
      commit_sha: firstOf(env.SYSTEM_PULLREQUEST_SOURCECOMMITID, env.BUILD_SOURCEVERSION),
      build_id: buildId,
      build_url:
        collection && project && buildId
          ? `${collection}${encodeURIComponent(project)}/_build/results?buildId=${encodeURIComponent(buildId)}`
          : undefined,
    });
  }
  const bitbucketBuild = nonEmpty(env.BITBUCKET_BUILD_NUMBER);
  if (bitbucketBuild !== undefined) {
    // The origin is `http://bitbucket.org/<workspace>/<repo>`; the pipeline's page is served over https.
    const origin = nonEmpty(env.BITBUCKET_GIT_HTTP_ORIGIN)
      ?.replace(/\/+$/, "")
      .replace(/^http:\/\/bitbucket\.org\//, "https://bitbucket.org/");
    return compact({
      provider: "bitbucket-pipelines",
      // BITBUCKET_BRANCH is the source branch (of a pull request too); absent in tag pipelines.
      branch: firstOf(env.BITBUCKET_BRANCH, env.BITBUCKET_TAG),
      commit_sha: firstOf(env.BITBUCKET_COMMIT),
      build_id: bitbucketBuild,
      build_url: origin ? `${origin}/pipelines/results/${encodeURIComponent(bitbucketBuild)}` : undefined,
    });
  }
  if (env.DRONE === "true") {
    return compact({
      provider: "drone",
      // DRONE_BRANCH is a pull request's target branch; DRONE_SOURCE_BRANCH its own.
      branch: firstOf(env.DRONE_SOURCE_BRANCH, env.DRONE_BRANCH, env.DRONE_TAG),
      commit_sha: firstOf(env.DRONE_COMMIT_SHA, env.DRONE_COMMIT),
      build_id: firstOf(env.DRONE_BUILD_NUMBER),
      build_url: firstOf(env.DRONE_BUILD_LINK),
    });
  }
  if (nonEmpty(env.TEAMCITY_VERSION)) {
    // TeamCity passes few parameters as environment variables: the branch (teamcity.build.branch)
    // and the build's page are not among them. BUILD_VCS_NUMBER exists when the configuration has
    // one VCS root (BUILD_VCS_NUMBER_<root> otherwise).
    return compact({ provider: "teamcity", commit_sha: firstOf(env.BUILD_VCS_NUMBER), build_id: firstOf(env.BUILD_NUMBER) });
  }
  if (env.TRAVIS === "true") {
    return compact({
      provider: "travis-ci",
      // On a pull request build TRAVIS_BRANCH is the target branch and TRAVIS_COMMIT the merge
      // commit Travis tests; the pull request's own branch and head are in the PULL_REQUEST ones.
      branch: firstOf(env.TRAVIS_PULL_REQUEST_BRANCH, env.TRAVIS_BRANCH),
      commit_sha: firstOf(env.TRAVIS_PULL_REQUEST_SHA, env.TRAVIS_COMMIT),
      build_id: firstOf(env.TRAVIS_BUILD_ID),
      build_url: firstOf(env.TRAVIS_BUILD_WEB_URL),
    });
  }
  return { provider: null };
}
