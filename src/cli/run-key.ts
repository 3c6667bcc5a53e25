/**
 * The run key the uploader sends when --run-key is absent (docs/uploader-cli.md, "Default run
 * key"): on a CI it detects, the CI's run id and job, without the attempt number, so that every
 * upload of one job's run is one run and a re-run of a failed job is a retry of that run
 * (docs/uploads.md, "Runs in parts"). Pure functions of the environment.
 */
import type { CiProvider, Env } from "./ci-metadata";
import { nonEmpty } from "./format";

/** What the run key may be (as the service checks it): 1 to 255 characters, no control characters. */
const MAX_RUN_KEY = 255;

const first = (...values: (string | undefined)[]) => values.map(nonEmpty).find((value) => value !== undefined);

/**
 * The job part of the key: CTA_JOB when set (the legs of a GitHub matrix share GITHUB_JOB, so
 * each leg needs a name of its own; CTA_PR_COMMENT_JOB, which names the job for --pr-comment,
 * serves too), else what the CI calls the job.
 */
function jobOf(ci: CiProvider, env: Env): string | undefined {
  const own = first(env.CTA_JOB, env.CTA_PR_COMMENT_JOB);
  if (own !== undefined) return own;
  switch (ci) {
    case "github-actions":
      return first(env.GITHUB_JOB);
    case "gitlab-ci":
      // A `parallel: N` job is named "test 2/4" in each of its jobs: the name without its index
      // (they are shards of one run, parallelShard below).
      return nonEmpty(env.CI_NODE_TOTAL) !== undefined && Number(env.CI_NODE_TOTAL) > 1
        ? first(env.CI_JOB_NAME?.replace(/ \d+\/\d+$/, ""))
        : first(env.CI_JOB_NAME);
    case "circleci":
      return first(env.CIRCLE_JOB);
    case "buildkite":
      return first(env.BUILDKITE_STEP_KEY, env.BUILDKITE_LABEL);
    case "azure-pipelines": {
      const job = first(env.SYSTEM_JOBNAME);
      const stage = first(env.SYSTEM_STAGENAME);
      return job !== undefined && stage !== undefined ? `${stage}/${job}` : job;
    }
    case "bitbucket-pipelines":
      return first(env.BITBUCKET_STEP_UUID);
    case "drone":
      return first(env.DRONE_STAGE_NAME);
    case "travis-ci":
      return first(env.TRAVIS_JOB_NUMBER);
    default:
      return undefined;
  }
}

/** The CI's id of the run the job is part of, the same in every attempt of it. */
function runIdOf(ci: CiProvider, env: Env): string | undefined {
  switch (ci) {
    case "github-actions":
      return first(env.GITHUB_RUN_ID);
    case "gitlab-ci":
      return first(env.CI_PIPELINE_ID);
    case "circleci":
      return first(env.CIRCLE_WORKFLOW_ID);
    case "buildkite":
      return first(env.BUILDKITE_BUILD_ID);
    case "azure-pipelines":
      return first(env.BUILD_BUILDID);
    case "bitbucket-pipelines":
      return first(env.BITBUCKET_PIPELINE_UUID);
    case "drone":
      return first(env.DRONE_BUILD_NUMBER);
    case "travis-ci":
      return first(env.TRAVIS_BUILD_ID);
    default:
      return undefined;
  }
}

/**
 * `<ci>:<run id>:<job>`, plus `:<variant>` when the upload names a variant (--variant; the service
 * keys runs by run key and variant anyway, so this only keeps the key readable per matrix leg); undefined when no CI is detected, when the CI does not give
 * both parts, or when the key would be longer than the service takes. Jenkins' BUILD_TAG
 * (`jenkins-<job>-<build number>`) is both parts at once. TeamCity gives no build id that is
 * unique beyond its configuration as an environment variable: no default there.
 */
export function defaultRunKey(input: { ci: CiProvider | null; env: Env; variant?: string }): string | undefined {
  const { ci, env, variant } = input;
  if (ci === null) return undefined;
  let key: string | undefined;
  if (ci === "jenkins") {
    const tag = first(env.BUILD_TAG);
    const own = first(env.CTA_JOB, env.CTA_PR_COMMENT_JOB);
    key = tag === undefined ? undefined : `jenkins:${tag}${own !== undefined ? `:${own}` : ""}`;
  } else {
    const runId = runIdOf(ci, env);
    const job = jobOf(ci, env);
    key = runId !== undefined && job !== undefined ? `${ci}:${runId}:${job}` : undefined;
  }
  const withVariant = key !== undefined && nonEmpty(variant) !== undefined ? `${key}:${nonEmpty(variant)}` : key;
  return withVariant !== undefined && withVariant.length <= MAX_RUN_KEY && !/\p{Cc}/u.test(withVariant) ? withVariant : undefined;
}

/**
 * Whether this job is a re-run of an earlier attempt of itself (the uploader then sends
 * `retry=true`): GitHub's GITHUB_RUN_ATTEMPT > 1, Buildkite's BUILDKITE_RETRY_COUNT > 0, Azure's
 * SYSTEM_JOBATTEMPT > 1. GitLab, CircleCI and the others say nothing an environment variable
 * shows (CircleCI's re-run is a new workflow, so a new key).
 */
export function isRerunAttempt(ci: CiProvider | null, env: Env): boolean {
  const above = (value: string | undefined, floor: number) => {
    const n = Number(nonEmpty(value));
    return Number.isInteger(n) && n > floor;
  };
  if (ci === "github-actions") return above(env.GITHUB_RUN_ATTEMPT, 1);
  if (ci === "buildkite") return above(env.BUILDKITE_RETRY_COUNT, 0);
  if (ci === "azure-pipelines") return above(env.SYSTEM_JOBATTEMPT, 1);
  return false;
}

/**
 * The job's shard when the CI runs it as one of N parallel copies (each with the same job name,
 * so the same default key): `I/N`, 1-based. Buildkite's `parallelism` (BUILDKITE_PARALLEL_JOB is
 * 0-based), CircleCI's (CIRCLE_NODE_INDEX, 0-based) and GitLab's `parallel` (CI_NODE_INDEX,
 * 1-based). Undefined for a job that runs once.
 */
export function parallelShard(ci: CiProvider | null, env: Env): string | undefined {
  const pair = (index: string | undefined, total: string | undefined, base: 0 | 1) => {
    const i = Number(nonEmpty(index));
    const n = Number(nonEmpty(total));
    if (!Number.isInteger(i) || !Number.isInteger(n) || n < 2 || n > 1000 || i - base < 0 || i - base >= n) return undefined;
    return `${i - base + 1}/${n}`;
  };
  if (ci === "buildkite") return pair(env.BUILDKITE_PARALLEL_JOB, env.BUILDKITE_PARALLEL_JOB_COUNT, 0);
  if (ci === "circleci") return pair(env.CIRCLE_NODE_INDEX, env.CIRCLE_NODE_TOTAL, 0);
  if (ci === "gitlab-ci") return pair(env.CI_NODE_INDEX, env.CI_NODE_TOTAL, 1);
  return undefined;
}
