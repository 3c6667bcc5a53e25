/**
 * The CI providers detected after the first five (upload-cli.test.ts has GitHub Actions, GitLab
 * CI, Buildkite, CircleCI and Jenkins): Azure Pipelines, Bitbucket Pipelines, Drone, TeamCity and
 * Travis CI, each on a branch build and on a pull request build, through the bundle's
 * detectCiMetadata and detectPullRequestBase (pure functions of the environment).
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));

type Env = Record<string, string | undefined>;
type CliModule = {
  detectCiMetadata(env: Env): { provider: string | null; branch?: string; commit_sha?: string; build_id?: string; build_url?: string };
  detectPullRequestBase(env: Env): { sha?: string; ref?: string; isMergeBase: boolean } | null;
};

let cli: CliModule;
beforeAll(async () => {
  cli = (await import(pathToFileURL(BIN).href)) as CliModule;
});

const head = "a".repeat(40);
const merge = "b".repeat(40);

describe("Azure Pipelines (TF_BUILD=True)", () => {
  const base = {
    TF_BUILD: "True",
    BUILD_BUILDID: "1207",
    SYSTEM_COLLECTIONURI: "https://dev.azure.com/acme/",
    SYSTEM_TEAMPROJECT: "Shop Front",
  };

  it("a branch build: the branch from BUILD_SOURCEBRANCH without refs/heads/ (not BUILD_SOURCEBRANCHNAME's last segment), the build's page", () => {
    const env = { ...base, BUILD_SOURCEBRANCH: "refs/heads/feature/cart", BUILD_SOURCEBRANCHNAME: "cart", BUILD_SOURCEVERSION: head };
    expect(cli.detectCiMetadata(env)).toEqual({
      provider: "azure-pipelines",
      branch: "feature/cart",
      commit_sha: head,
      build_id: "1207",
      build_url: "https://dev.azure.com/acme/Shop%20Front/_build/results?buildId=1207",
    });
    expect(cli.detectPullRequestBase(env)).toBeNull();
    // A collection URI without its trailing slash; a tag build's ref is the tag's name.
    const tag = { ...env, SYSTEM_COLLECTIONURI: "https://tfs.acme.test/DefaultCollection", BUILD_SOURCEBRANCH: "refs/tags/v2.1.0" };
    expect(cli.detectCiMetadata(tag)).toMatchObject({
      branch: "v2.1.0",
      build_url: "https://tfs.acme.test/DefaultCollection/Shop%20Front/_build/results?buildId=1207",
    });
    // Only BUILD_SOURCEBRANCHNAME: better than nothing.
    expect(cli.detectCiMetadata({ TF_BUILD: "true", BUILD_SOURCEBRANCHNAME: "main" })).toEqual({
      provider: "azure-pipelines",
      branch: "main",
    });
  });

  it("a pull request build: its source branch and commit, not the merge Azure checks out; the target branch as the base", () => {
    const env = {
      ...base,
      BUILD_REASON: "PullRequest",
      BUILD_SOURCEBRANCH: "refs/pull/42/merge",
      BUILD_SOURCEBRANCHNAME: "merge",
      BUILD_SOURCEVERSION: merge,
      SYSTEM_PULLREQUEST_PULLREQUESTID: "42",
      SYSTEM_PULLREQUEST_SOURCEBRANCH: "refs/heads/feature/cart",
      SYSTEM_PULLREQUEST_SOURCECOMMITID: head,
      SYSTEM_PULLREQUEST_TARGETBRANCH: "refs/heads/release/2.x",
    };
    expect(cli.detectCiMetadata(env)).toMatchObject({ provider: "azure-pipelines", branch: "feature/cart", commit_sha: head });
    expect(cli.detectPullRequestBase(env)).toEqual({ ref: "release/2.x", isMergeBase: false });
    // GitHub repositories give the short forms.
    const github = { ...env, SYSTEM_PULLREQUEST_SOURCEBRANCH: "feature/cart", SYSTEM_PULLREQUEST_TARGETBRANCH: "main" };
    expect(cli.detectCiMetadata(github).branch).toBe("feature/cart");
    expect(cli.detectPullRequestBase(github)).toEqual({ ref: "main", isMergeBase: false });
  });
});

describe("Bitbucket Pipelines (BITBUCKET_BUILD_NUMBER)", () => {
  const base = {
    CI: "true",
    BITBUCKET_BUILD_NUMBER: "318",
    BITBUCKET_COMMIT: head,
    BITBUCKET_GIT_HTTP_ORIGIN: "http://bitbucket.org/acme/shop",
  };

  it("a branch build: BITBUCKET_BRANCH, the pipeline's page over https", () => {
    const env = { ...base, BITBUCKET_BRANCH: "main" };
    expect(cli.detectCiMetadata(env)).toEqual({
      provider: "bitbucket-pipelines",
      branch: "main",
      commit_sha: head,
      build_id: "318",
      build_url: "https://bitbucket.org/acme/shop/pipelines/results/318",
    });
    expect(cli.detectPullRequestBase(env)).toBeNull();
    // A tag pipeline has no branch: the tag's name stands for it.
    expect(cli.detectCiMetadata({ ...base, BITBUCKET_TAG: "v1.0.0" }).branch).toBe("v1.0.0");
  });

  it("a pull request build: the source branch, and the destination branch as the base", () => {
    const env = { ...base, BITBUCKET_BRANCH: "feature/cart", BITBUCKET_PR_ID: "17", BITBUCKET_PR_DESTINATION_BRANCH: "main" };
    expect(cli.detectCiMetadata(env)).toMatchObject({ branch: "feature/cart", commit_sha: head });
    expect(cli.detectPullRequestBase(env)).toEqual({ ref: "main", isMergeBase: false });
  });
});

describe("Drone (DRONE=true)", () => {
  const base = {
    DRONE: "true",
    DRONE_COMMIT_SHA: head,
    DRONE_BUILD_NUMBER: "56",
    DRONE_BUILD_LINK: "https://drone.acme.test/acme/shop/56",
  };

  it("a push: DRONE_SOURCE_BRANCH (DRONE_BRANCH when absent), the build's link", () => {
    const env = { ...base, DRONE_BUILD_EVENT: "push", DRONE_BRANCH: "main", DRONE_SOURCE_BRANCH: "main", DRONE_TARGET_BRANCH: "main" };
    expect(cli.detectCiMetadata(env)).toEqual({
      provider: "drone",
      branch: "main",
      commit_sha: head,
      build_id: "56",
      build_url: "https://drone.acme.test/acme/shop/56",
    });
    expect(cli.detectPullRequestBase(env)).toBeNull();
    expect(cli.detectCiMetadata({ ...base, DRONE_BRANCH: "main" }).branch).toBe("main");
  });

  it("a pull request: the source branch (DRONE_BRANCH is the target there), the target branch as the base", () => {
    const env = {
      ...base,
      DRONE_BUILD_EVENT: "pull_request",
      DRONE_PULL_REQUEST: "9",
      DRONE_BRANCH: "main",
      DRONE_SOURCE_BRANCH: "feature/cart",
      DRONE_TARGET_BRANCH: "main",
    };
    expect(cli.detectCiMetadata(env)).toMatchObject({ branch: "feature/cart", commit_sha: head });
    expect(cli.detectPullRequestBase(env)).toEqual({ ref: "main", isMergeBase: false });
  });
});

describe("TeamCity (TEAMCITY_VERSION)", () => {
  it("only the commit and build number: TeamCity passes neither the branch nor the build's page as environment variables", () => {
    const env = { TEAMCITY_VERSION: "2025.07 (build 12345)", BUILD_VCS_NUMBER: head, BUILD_NUMBER: "1.4.77" };
    expect(cli.detectCiMetadata(env)).toEqual({ provider: "teamcity", commit_sha: head, build_id: "1.4.77" });
    expect(cli.detectPullRequestBase(env)).toBeNull();
  });
});

describe("Travis CI (TRAVIS=true)", () => {
  const base = {
    TRAVIS: "true",
    TRAVIS_BUILD_ID: "889120",
    TRAVIS_BUILD_WEB_URL: "https://app.travis-ci.com/acme/shop/builds/889120",
  };

  it("a push: TRAVIS_BRANCH and TRAVIS_COMMIT", () => {
    const env = { ...base, TRAVIS_BRANCH: "main", TRAVIS_COMMIT: head, TRAVIS_PULL_REQUEST: "false", TRAVIS_PULL_REQUEST_BRANCH: "" };
    expect(cli.detectCiMetadata(env)).toEqual({
      provider: "travis-ci",
      branch: "main",
      commit_sha: head,
      build_id: "889120",
      build_url: "https://app.travis-ci.com/acme/shop/builds/889120",
    });
    expect(cli.detectPullRequestBase(env)).toBeNull();
  });

  it("a pull request: its branch and head (TRAVIS_COMMIT is the merge Travis tests), TRAVIS_BRANCH (the target) as the base", () => {
    const env = {
      ...base,
      TRAVIS_BRANCH: "main",
      TRAVIS_COMMIT: merge,
      TRAVIS_PULL_REQUEST: "31",
      TRAVIS_PULL_REQUEST_BRANCH: "feature/cart",
      TRAVIS_PULL_REQUEST_SHA: head,
    };
    expect(cli.detectCiMetadata(env)).toMatchObject({ branch: "feature/cart", commit_sha: head });
    expect(cli.detectPullRequestBase(env)).toEqual({ ref: "main", isMergeBase: false });
  });
});

describe("precedence and odd values", () => {
  it("the first five providers' markers win over these, and an unsafe base branch is left out", () => {
    expect(cli.detectCiMetadata({ GITHUB_ACTIONS: "true", TF_BUILD: "True", TRAVIS: "true", GITHUB_REF_NAME: "main" }).provider).toBe(
      "github-actions",
    );
    expect(cli.detectCiMetadata({ JENKINS_URL: "https://ci/", TEAMCITY_VERSION: "2025.07" }).provider).toBe("jenkins");
    expect(cli.detectCiMetadata({ TF_BUILD: "False" }).provider).toBeNull();
    expect(cli.detectPullRequestBase({ TRAVIS: "true", TRAVIS_PULL_REQUEST: "3", TRAVIS_BRANCH: "--upload-pack=x" })).toBeNull();
  });
});
