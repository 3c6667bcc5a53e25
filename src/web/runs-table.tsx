/**
 * The table of a project's runs, one for every page that lists them (the overview's latest runs,
 * `/projects/:id/runs`): the same columns in the same order, so a run reads the same wherever it
 * is listed; and the runs page's list of each branch's latest run. Branch and commit come from
 * uploads: text only.
 */
import type { FC } from "hono/jsx";
import { durationText } from "./components";
import type { WebPaths } from "./env";
import { Result, TimeAgo } from "./format";
import { withQuery } from "./access";
import { VerdictCounts } from "./run-verdicts";
import type { OverviewRun, RunJson } from "../services/runs/project-overview";
import { BRANCH_SCAN_RUNS, type latestRunPerBranch } from "../services/runs/run-comparison-reads";

/** A run as the table shows it: the overview's row, which the API's run object is mapped to. */
export type RunsTableRun = OverviewRun;

/** The API's run object (src/contract/presenters.ts) as a row of the table. */
export function runsTableRun(run: RunJson): RunsTableRun {
  return {
    number: run.number,
    status: run.status,
    result: run.result,
    failureReason: run.failure_reason,
    branch: run.branch,
    variant: run.variant,
    commitSha: run.commit_sha,
    createdAt: new Date(run.created_at),
    durationMs: run.duration_ms,
    testsCount: run.tests_count,
    failedCount: run.failed_count,
    erroredCount: run.errored_count,
    skippedCount: run.skipped_count,
  };
}

/** A run's result, or where it stands while it has none. */
export const RunStatusText: FC<{ run: Pick<RunsTableRun, "status" | "result" | "failureReason"> }> = ({ run }) =>
  run.status === "processed" ? (
    <Result result={run.result} />
  ) : run.status === "pending" ? (
    <span class="muted">Processing</span>
  ) : (
    <span class="result-failed">Not processed: {run.failureReason ?? "the report could not be read"}</span>
  );

const shortSha = (sha: string | null) => (sha ? sha.slice(0, 12) : null);

/**
 * The table scrolls inside its own box on a narrow screen (the page itself never scrolls sideways);
 * the box is focusable so that a keyboard can scroll it too.
 */
export const RunsTable: FC<{ runs: RunsTableRun[]; projectId: string; paths: WebPaths; now: Date }> = ({ runs, projectId, paths, now }) => (
  <div class="table-scroll" tabindex={0} role="region" aria-label="Runs">
    <table>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Result</th>
          <th scope="col">Branch</th>
          <th scope="col">Commit</th>
          <th scope="col" class="num">
            Tests
          </th>
          <th scope="col" class="num">
            Failed
          </th>
          <th scope="col" class="num">
            Skipped
          </th>
          <th scope="col" class="num">
            Duration
          </th>
          <th scope="col">Received</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <tr>
            <td>
              <a href={paths.to(`/projects/${projectId}/runs/${run.number}`)}>#{run.number}</a>
            </td>
            <td>
              <RunStatusText run={run} />
            </td>
            <td>
              {run.branch ?? <span class="muted">—</span>}
              {run.variant !== "" ? (
                <div class="muted">
                  <code>{run.variant}</code>
                </div>
              ) : null}
            </td>
            <td>{run.commitSha ? <code>{shortSha(run.commitSha)}</code> : <span class="muted">—</span>}</td>
            <td class="num">{run.testsCount}</td>
            <td class="num">{run.failedCount + run.erroredCount}</td>
            <td class="num">{run.skippedCount}</td>
            <td class="num">{durationText(run.durationMs)}</td>
            <td>
              <TimeAgo at={run.createdAt} now={now} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);

/** Branches the runs page lists with their latest run (the most recently active first). */
export const BRANCHES_SHOWN = 10;

type BranchRun = Awaited<ReturnType<typeof latestRunPerBranch>>[number];

/**
 * Each branch's latest run, one click away, with its verdict counts (docs/verdicts.md): a list,
 * not a table, so it wraps on a narrow screen. The branch's name filters the runs below by it.
 */
export const LatestRunPerBranch: FC<{ runs: BranchRun[]; projectId: string; paths: WebPaths; now: Date }> = ({
  runs,
  projectId,
  paths,
  now,
}) => (
  <section aria-labelledby="latest-per-branch">
    <h2 id="latest-per-branch">Latest run per branch</h2>
    <ul class="branch-runs">
      {runs.map((run) => (
        <li>
          <span class="branch-name">
            {run.branch === null ? (
              <span class="muted">no branch</span>
            ) : (
              <a href={withQuery(paths.to(`/projects/${projectId}/runs`), { branch: run.branch })} aria-label={`Runs of ${run.branch}`}>
                {run.branch}
              </a>
            )}
          </span>
          <a class="run-link" href={paths.to(`/projects/${projectId}/runs/${run.number}`)}>
            Run #{run.number}
          </a>
          <RunStatusText run={run} />
          {run.verdictCounts ? (
            <VerdictCounts
              counts={run.verdictCounts}
              href={(verdict) => paths.to(`/projects/${projectId}/runs/${run.number}#verdict-${verdict}`)}
            />
          ) : null}
          <span class="muted">
            <TimeAgo at={run.createdAt} now={now} />
          </span>
        </li>
      ))}
    </ul>
    <p class="muted small">
      {runs.length === BRANCHES_SHOWN ? `The ${BRANCHES_SHOWN} most recently active branches` : "Branches"} with a run among the project's
      latest {BRANCH_SCAN_RUNS.toLocaleString("en-US")} runs; filter the runs below by branch for another.
    </p>
  </section>
);
