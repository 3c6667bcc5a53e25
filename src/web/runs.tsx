/**
 * `/projects/:id/runs` (filters branch and result, keyset pages with the API's cursors) and
 * `/projects/:id/runs/:number` (what the API's run, its failure groups, suites and alert events
 * say, on one page). Both read through the API's services (src/services/runs/test-results.ts,
 * failure-groups.ts, src/services/alerts/alert-events.ts); run metadata and failures come from uploads and are text.
 */
import type { Context, Hono } from "hono";
import type { FC } from "hono/jsx";
import { readListRequest } from "../lib/lists";
import type { CursorCodec } from "../lib/pagination";
import { RUN_RESULTS, type RunResult } from "../lib/vocabulary";
import { TestRunsQuerySchema } from "../contract/schemas";
import { listRunAlertEvents } from "../services/alerts/alert-events";
import { listRunFailureGroups } from "../services/runs/failure-groups";
import { ALERT_NAMES } from "../contract/presenters";
import {
  MAX_RUN_PAGE_FAILURES,
  findRunRow,
  listRunFailures,
  listTestRuns,
  listTestSuites,
  testRunList,
} from "../services/runs/test-results";
import { projectMemberAccess, withQuery } from "./access";
import { ExternalLink, HealthBadge, Metadata, PageLinks, QuarantinedBadge, StatusBadge, When, durationText } from "./components";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { Layout } from "./layout";
import { pageNotFound } from "./not-found";
import { RunStatusText, RunsTable, runsTableRun } from "./runs-table";
import { signedIn } from "./session";
import { notFoundAsNull, parseQuery } from "./page-input";

const RESULT_LABELS = { tests_passed: "Passed", tests_failed: "Tests failed", tests_errored: "Tests errored" } as const;

/** `/projects/:id/runs`: the project's runs by the branch and result filters, a keyset page at a time. */
async function runsPage(c: Context<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): Promise<Response> {
  const found = await projectMemberAccess(c, config, paths);
  if (!found) return pageNotFound(c, c.var.person, paths);
  const { project, access } = found;
  const query = parseQuery(TestRunsQuerySchema, c, ["branch", "result", "cursor", "limit"]);
  const filters = { project_id: project.id, branch: query.branch ?? null, commit_sha: null, result: query.result ?? null, status: null };
  const request = readListRequest(codec, testRunList, { organizationId: access.scope.organizationId, filters }, query);
  const page = await listTestRuns(access.scope, request);
  const base = paths.to(`/projects/${project.id}/runs`);
  const filterQuery = { branch: filters.branch, result: filters.result };
  const next = page.next ? withQuery(base, { ...filterQuery, cursor: codec.encode(testRunList.listing(request), page.next) }) : null;
  return c.html(
    <Layout title={`Runs · ${project.name}`} page={access.page} section="projects">
      <p class="crumbs">
        <a href={paths.to(`/projects/${project.id}`)}>{project.name}</a>
      </p>
      <h1>Test runs</h1>
      <RunsFilters base={base} filters={filters} />
      {page.items.length === 0 ? (
        <p>
          {request.after || filters.branch || filters.result
            ? "No runs match."
            : "No runs yet: upload a report with the project's upload token."}
        </p>
      ) : (
        <RunsTable runs={page.items.map(runsTableRun)} projectId={project.id} paths={paths} now={c.env.clock.now()} />
      )}
      <PageLinks first={request.after ? withQuery(base, filterQuery) : null} next={next} label="Runs" />
    </Layout>,
  );
}

export function registerRuns(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): void {
  web.get("/projects/:id/runs", signedIn(config, paths), (c) => runsPage(c, config, paths, codec));

  web.get("/projects/:id/runs/:number", signedIn(config, paths), async (c) => {
    const found = await projectMemberAccess(c, config, paths);
    const run = found ? await notFoundAsNull(findRunRow(found.access.scope, found.project.id, c.req.param("number"))) : null;
    if (!found || !run) return pageNotFound(c, c.var.person, paths);
    const { project, access } = found;
    const { scope } = access;
    const firstPage = <F extends Record<string, string | null>>(filters: F, limit = 100) => ({
      organizationId: scope.organizationId,
      filters,
      limit,
      after: null,
    });
    const [groups, failures, suites, events] = await Promise.all([
      listRunFailureGroups(scope, firstPage({ project_id: project.id, run: String(run.number) })),
      listRunFailures(scope, run),
      listTestSuites(scope, firstPage({ project_id: project.id, run: String(run.number) })),
      listRunAlertEvents(scope, run.id),
    ]);
    const grouped = groupFailures(groups.items, failures);
    const testPath = (testId: string) => paths.to(`/projects/${project.id}/tests/${testId}`);

    return c.html(
      <Layout title={`Run #${run.number} · ${project.name}`} page={access.page} section="projects">
        <p class="crumbs">
          <a href={paths.to(`/projects/${project.id}`)}>{project.name}</a> › <a href={paths.to(`/projects/${project.id}/runs`)}>Runs</a>
        </p>
        <h1>Run #{run.number}</h1>
        <RunFacts run={run} />

        <RunCounts run={run} />

        <FailuresByCause grouped={grouped} shown={failures.length} failuresCount={run.failedCount + run.erroredCount} testPath={testPath} />

        <RunSuites suites={suites} />

        <RunAlertEvents events={events} paths={paths} />
      </Layout>,
    );
  });
}

type RunRow = Awaited<ReturnType<typeof findRunRow>>;
type RunFailure = Awaited<ReturnType<typeof listRunFailures>>[number];
type RunFailureGroup = Awaited<ReturnType<typeof listRunFailureGroups>>["items"][number];
/** A cause's failures as the run page lists them: a failure group of the run, or the failures no group lists. */
type FailureGroupShown = { heading: string; group: RunFailureGroup | null; cases: RunFailure[] };

/** The run's failures under their failure groups (the API's order), then those of no listed group. */
function groupFailures(groups: RunFailureGroup[], failures: RunFailure[]): FailureGroupShown[] {
  const bySignature = new Map<string, RunFailure[]>();
  for (const failure of failures) {
    const key = failure.signature ?? "";
    bySignature.set(key, [...(bySignature.get(key) ?? []), failure]);
  }
  const grouped: FailureGroupShown[] = groups.map((group) => ({
    heading: group.message,
    group,
    cases: bySignature.get(group.signature) ?? [],
  }));
  const listed = new Set(groups.map((group) => group.signature));
  const rest = failures.filter((failure) => !listed.has(failure.signature ?? ""));
  if (rest.length > 0) grouped.push({ heading: "Other failures", group: null, cases: rest });
  return grouped;
}

const RunsFilters: FC<{ base: string; filters: { branch: string | null; result: RunResult | null } }> = ({ base, filters }) => (
  <form method="get" action={base} class="filters">
    <label>
      Branch
      <input name="branch" value={filters.branch ?? ""} maxlength={255} />
    </label>
    <label>
      Result
      <select name="result">
        <option value="" selected={filters.result === null}>
          Any result
        </option>
        {RUN_RESULTS.map((result) => (
          <option value={result} selected={filters.result === result}>
            {RESULT_LABELS[result]}
          </option>
        ))}
      </select>
    </label>
    <button type="submit">Filter</button>
  </form>
);

/** What the upload said about the run, and when it was received and processed. */
const RunFacts: FC<{ run: RunRow }> = ({ run }) => (
  <dl class="facts">
    <dt>Result</dt>
    <dd>
      <RunStatusText run={run} />
    </dd>
    <dt>Branch</dt>
    <dd>{run.branch ?? <span class="muted">—</span>}</dd>
    <dt>Commit</dt>
    <dd>{run.commitSha ? <code>{run.commitSha}</code> : <span class="muted">—</span>}</dd>
    <dt>Build</dt>
    <dd>
      {run.buildId ?? (run.buildUrl ? null : <span class="muted">—</span>)} {run.buildUrl ? <ExternalLink href={run.buildUrl} /> : null}
    </dd>
    {run.tags.length > 0 ? (
      <>
        <dt>Tags</dt>
        <dd>{run.tags.join(", ")}</dd>
      </>
    ) : null}
    <dt>Started</dt>
    <dd>
      <When at={run.startedAt} />
    </dd>
    <dt>Received</dt>
    <dd>
      <When at={run.createdAt} />
    </dd>
    <dt>Processed</dt>
    <dd>
      <When at={run.processedAt} />
    </dd>
    <dt>Duration</dt>
    <dd>{durationText(run.durationMs)}</dd>
  </dl>
);

const RunCounts: FC<{ run: RunRow }> = ({ run }) => (
  <table class="counts">
    <caption>Counts</caption>
    <thead>
      <tr>
        <th scope="col" class="num">
          Tests
        </th>
        <th scope="col" class="num">
          Passed
        </th>
        <th scope="col" class="num">
          Failed
        </th>
        <th scope="col" class="num">
          Errored
        </th>
        <th scope="col" class="num">
          Skipped
        </th>
        <th scope="col" class="num">
          Quarantined failures
        </th>
      </tr>
    </thead>
    <tbody>
      <tr>
        <td class="num">{run.testsCount}</td>
        <td class="num">{run.passedCount}</td>
        <td class="num">{run.failedCount}</td>
        <td class="num">{run.erroredCount}</td>
        <td class="num">{run.skippedCount}</td>
        <td class="num">{run.quarantinedFailuresCount}</td>
      </tr>
    </tbody>
  </table>
);

/** The run's failures by cause; `shown` of `failuresCount` when the page lists only the first MAX_RUN_PAGE_FAILURES. */
const FailuresByCause: FC<{ grouped: FailureGroupShown[]; shown: number; failuresCount: number; testPath: (testId: string) => string }> = ({
  grouped,
  shown,
  failuresCount,
  testPath,
}) => (
  <section aria-labelledby="failures">
    <h2 id="failures">Failures by cause</h2>
    {failuresCount === 0 ? <p>No failures.</p> : null}
    {shown === MAX_RUN_PAGE_FAILURES && failuresCount > MAX_RUN_PAGE_FAILURES ? (
      <p class="muted">
        The first {MAX_RUN_PAGE_FAILURES} of {failuresCount} failures are shown.
      </p>
    ) : null}
    {grouped.map(({ heading, group, cases }) => (
      <article class="failure-group">
        <h3>{heading}</h3>
        {group ? (
          <p class="muted">
            {group.run_occurrences} {group.run_occurrences === 1 ? "failure" : "failures"} in {group.run_tests_count}{" "}
            {group.run_tests_count === 1 ? "test" : "tests"} in this run · {group.occurrences} in the project since{" "}
            <When at={group.first_seen_at} />
          </p>
        ) : null}
        <ul class="failures">
          {cases.map((failure) => (
            <li id={`case-${failure.id}`}>
              <a href={testPath(failure.testId)}>{failure.name}</a>
              {failure.classname ? <span class="muted"> {failure.classname}</span> : null} <StatusBadge status={failure.status} />
              {failure.quarantined ? <QuarantinedBadge /> : null}
              {failure.health && failure.health !== "healthy" ? <HealthBadge health={failure.health} /> : null}
              {failure.failureMessage ? <p class="failure-message">{failure.failureMessage}</p> : null}
              {failure.failureText ? (
                <details>
                  <summary>Trace</summary>
                  <pre tabindex={0}>{failure.failureText}</pre>
                </details>
              ) : null}
            </li>
          ))}
        </ul>
      </article>
    ))}
  </section>
);

const RunSuites: FC<{ suites: Awaited<ReturnType<typeof listTestSuites>> }> = ({ suites }) => (
  <section aria-labelledby="suites">
    <h2 id="suites">Suites</h2>
    {suites.items.length === 0 ? (
      <p class="muted">No suites.</p>
    ) : (
      <table>
        <thead>
          <tr>
            <th scope="col">Suite</th>
            <th scope="col" class="num">
              Tests
            </th>
            <th scope="col" class="num">
              Passed
            </th>
            <th scope="col" class="num">
              Failed
            </th>
            <th scope="col" class="num">
              Errored
            </th>
            <th scope="col" class="num">
              Skipped
            </th>
            <th scope="col" class="num">
              Duration
            </th>
          </tr>
        </thead>
        <tbody>
          {[...suites.items].reverse().map((suite) => (
            <tr>
              <td class={suite.parent_number === null ? undefined : "nested"}>{suite.name}</td>
              <td class="num">{suite.tests_count}</td>
              <td class="num">{suite.passed_count}</td>
              <td class="num">{suite.failed_count}</td>
              <td class="num">{suite.errored_count}</td>
              <td class="num">{suite.skipped_count}</td>
              <td class="num">{durationText(suite.duration_ms)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    )}
    {suites.next ? <p class="muted">The first {suites.items.length} suites are shown.</p> : null}
  </section>
);

const RunAlertEvents: FC<{ events: Awaited<ReturnType<typeof listRunAlertEvents>>; paths: WebPaths }> = ({ events, paths }) => (
  <section aria-labelledby="alert-events">
    <h2 id="alert-events">Alerts this run triggered</h2>
    {events.length === 0 ? (
      <p class="muted">None.</p>
    ) : (
      <ul class="events">
        {events.map((event) => (
          <li>
            <a href={paths.to(`/alerts/${event.alertId}`)}>{ALERT_NAMES[event.alertType]}</a> · <When at={event.triggeredAt} />
            <Metadata metadata={event.metadata} />
          </li>
        ))}
      </ul>
    )}
  </section>
);
