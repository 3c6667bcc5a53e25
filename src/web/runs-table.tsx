/**
 * The table of a project's runs, one for every page that lists them (the overview's latest runs,
 * `/projects/:id/runs`): the same columns in the same order, so a run reads the same wherever it
 * is listed. Branch and commit come from uploads: text only.
 */
import type { FC } from "hono/jsx";
import { durationText } from "./components";
import type { WebPaths } from "./env";
import { Result, TimeAgo } from "./format";
import type { OverviewRun, RunJson } from "../services/runs/project-overview";

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

export const RunsTable: FC<{ runs: RunsTableRun[]; projectId: string; paths: WebPaths; now: Date }> = ({ runs, projectId, paths, now }) => (
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
          <td>{run.branch ?? <span class="muted">—</span>}</td>
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
);
