/**
 * `/projects/:id/runs` (each branch's latest run with its verdict counts; filters branch and
 * result, keyset pages with the API's cursors) and `/projects/:id/runs/:number` (what the API's
 * run, its comparison with its base, its failure groups, suites and alert events say, on one
 * page). Both read through the API's services (src/services/runs/test-results.ts,
 * run-comparison-reads.ts, failure-groups.ts, src/services/alerts/alert-events.ts), given the
 * project or run the page found once; run metadata and failures come from uploads and are text.
 */
import type { Context, Hono } from "hono";
import type { FC } from "hono/jsx";
import { readListRequest } from "../lib/lists";
import type { CursorCodec } from "../lib/pagination";
import { RUN_RESULTS, type RunResult } from "../lib/vocabulary";
import { TestRunsQuerySchema } from "../contract/schemas";
import { listRunAlertEvents } from "../services/alerts/alert-events";
import { runFailureGroupsOf } from "../services/runs/failure-groups";
import { ALERT_NAMES } from "../contract/presenters";
import {
  comparisonOf,
  firstVerdictPages,
  fixedPageOf,
  latestRunPerBranch,
  runFixedList,
  runVerdictList,
} from "../services/runs/run-comparison-reads";
import { MAX_RUN_PAGE_FAILURES, listRunFailures, testRunList, testRunsOf, testSuitesOf } from "../services/runs/test-results";
import { runPartsOf } from "../services/runs/run-parts";
import { type RunSplit, runSplitOf } from "../services/splitting/run-split";
import type { OrgScope } from "../services/shared/context";
import type { RunRow } from "../services/tenancy/memberships";
import { projectMemberAccess, runMemberAccess, withQuery } from "./access";
import { ProjectHeader } from "./project";
import { EventSentence, EventStatistics } from "./alert-sentences";
import { ExternalLink, HealthBadge, PageLinks, QuarantinedBadge, StatusBadge, When, durationText } from "./components";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { Layout } from "./layout";
import { pageNotFound } from "./not-found";
import { FailuresByVerdict, type RunComparisonView, VERDICT_ORDER, VERDICT_PAGE_SIZE, continuation } from "./run-verdicts";
import { registerRunVerdictPages } from "./run-verdict-pages";
import { BRANCHES_SHOWN, LatestRunPerBranch, RunStatusText, RunsTable, runsTableRun } from "./runs-table";
import { signedIn } from "./session";
import { parseQuery } from "./page-input";

const RESULT_LABELS = { tests_passed: "Passed", tests_failed: "Tests failed", tests_errored: "Tests errored" } as const;

/** `/projects/:id/runs`: each branch's latest run (first page, no result filter), then the project's runs by the branch and result filters, a keyset page at a time. */
async function runsPage(c: Context<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): Promise<Response> {
  const found = await projectMemberAccess(c, config, paths);
  if (!found) return pageNotFound(c, c.var.person, paths);
  const { project, access } = found;
  const query = parseQuery(TestRunsQuerySchema, c, ["branch", "result", "cursor", "limit"]);
  const filters = { project_id: project.id, branch: query.branch ?? null, commit_sha: null, result: query.result ?? null, status: null };
  const request = readListRequest(codec, testRunList, { organizationId: access.scope.organizationId, filters }, query);
  const [page, latest] = await Promise.all([
    testRunsOf(access.scope, project, request),
    // On the first page, unless the runs are filtered by result (a different question than "where does each branch stand").
    request.after || filters.result
      ? null
      : latestRunPerBranch(access.scope, project.id, { branch: filters.branch, branches: BRANCHES_SHOWN }),
  ]);
  const base = paths.to(`/projects/${project.id}/runs`);
  const filterQuery = { branch: filters.branch, result: filters.result };
  const next = page.next ? withQuery(base, { ...filterQuery, cursor: codec.encode(testRunList.listing(request), page.next) }) : null;
  const now = c.env.clock.now();
  return c.html(
    <Layout title={`Runs · ${project.name}`} page={access.page} section="projects">
      <ProjectHeader project={project} page={access.page} tab="runs" heading="Test runs" />
      {latest && latest.length > 0 ? <LatestRunPerBranch runs={latest} projectId={project.id} paths={paths} now={now} /> : null}
      <h2 id="all-runs">{filters.branch === null ? "All runs" : "Runs of the branch"}</h2>
      <RunsFilters base={base} filters={filters} />
      {page.items.length === 0 ? (
        <p>
          {request.after || filters.branch || filters.result
            ? "No runs match."
            : "No runs yet: upload a report with the project's upload token."}
        </p>
      ) : (
        <RunsTable runs={page.items.map(runsTableRun)} projectId={project.id} paths={paths} now={now} />
      )}
      <PageLinks first={request.after ? withQuery(base, filterQuery) : null} next={next} label="Runs" />
    </Layout>,
  );
}

/**
 * The run's comparison as its page shows it, read only when the run has one (its
 * `verdict_counts`): the comparison, each verdict's first VERDICT_PAGE_SIZE failures (one
 * statement for all verdicts) and the first fixed tests, at once.
 */
async function runComparisonView(scope: OrgScope, run: RunRow, codec: CursorCodec, paths: WebPaths): Promise<RunComparisonView | null> {
  if (run.status !== "processed" || run.verdictCounts === null) return null;
  const runFilters = { project_id: run.projectId, run: String(run.number) };
  const fixedRequest = { organizationId: scope.organizationId, filters: runFilters, limit: VERDICT_PAGE_SIZE, after: null };
  const [comparison, verdicts, fixed] = await Promise.all([
    comparisonOf(scope, run),
    firstVerdictPages(scope, run, VERDICT_PAGE_SIZE),
    fixedPageOf(scope, run, fixedRequest),
  ]);
  if (!comparison) return null;
  const listPath = (list: string) => paths.to(`/projects/${run.projectId}/runs/${run.number}/${list}`);
  const sections = VERDICT_ORDER.flatMap((verdict) => {
    const found = verdicts.find((v) => v.verdict === verdict);
    if (!found) return [];
    const more = continuation(codec, runVerdictList.listing(found.request), found.page, listPath("failures"), { verdict });
    return [{ verdict, page: found.page, more }];
  });
  const fixedMore = continuation(codec, runFixedList.listing(fixedRequest), fixed, listPath("fixed"), {});
  return { comparison, sections, fixed, fixedMore };
}

export function registerRuns(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): void {
  web.get("/projects/:id/runs", signedIn(config, paths), (c) => runsPage(c, config, paths, codec));
  registerRunVerdictPages(web, config, paths, codec);

  web.get("/projects/:id/runs/:number", signedIn(config, paths), async (c) => {
    const found = await runMemberAccess(c, config, paths);
    if (!found) return pageNotFound(c, c.var.person, paths);
    const { run, project, access } = found;
    const { scope } = access;
    const firstPage = {
      organizationId: scope.organizationId,
      filters: { project_id: project.id, run: String(run.number) },
      limit: 100,
      after: null,
    };
    const [groups, failures, suites, events, view, parts, split] = await Promise.all([
      runFailureGroupsOf(scope, run, firstPage),
      listRunFailures(scope, run),
      testSuitesOf(scope, run, firstPage),
      listRunAlertEvents(scope, run.id),
      runComparisonView(scope, run, codec, paths),
      // A run uploaded in parts (run_key) lists them; a run of one upload has none to read.
      run.partsCount > 0 ? runPartsOf(scope, run, firstPage) : null,
      runSplitOf(scope.db, run),
    ]);
    const grouped = groupFailures(groups.items, failures);
    const testPath = (testId: string) => paths.to(`/projects/${project.id}/tests/${testId}`);
    const listed = new Set(failures.map((failure) => failure.id));
    const traceHref = (testCaseId: number) => (listed.has(testCaseId) ? `#case-${testCaseId}` : null);
    const state = run.status === "processed" ? "before_comparisons" : run.status;

    return c.html(
      <Layout title={`Run #${run.number} · ${project.name}`} page={access.page} section="projects">
        <p class="crumbs">
          <a href={paths.to(`/projects/${project.id}`)}>{project.name}</a> › <a href={paths.to(`/projects/${project.id}/runs`)}>Runs</a>
        </p>
        <h1>Run #{run.number}</h1>
        <RunFacts run={run} />

        <RunCounts run={run} />

        {parts ? <RunParts run={run} parts={parts} /> : null}

        {split ? <RunSplitPlan split={split} /> : null}

        <FailuresByVerdict view={view} state={state} paths={paths} testPath={testPath} traceHref={traceHref} />

        <FailuresByCause grouped={grouped} shown={failures.length} failuresCount={run.failedCount + run.erroredCount} testPath={testPath} />

        <RunSuites suites={suites} />

        <RunAlertEvents events={events} run={run} paths={paths} />
      </Layout>,
    );
  });
}

type RunFailure = Awaited<ReturnType<typeof listRunFailures>>[number];
type RunFailureGroup = Awaited<ReturnType<typeof runFailureGroupsOf>>["items"][number];
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
    {run.variant !== "" ? (
      <>
        <dt>Variant</dt>
        <dd>
          <code>{run.variant}</code>
        </dd>
      </>
    ) : null}
    <dt>Commit</dt>
    <dd>{run.commitSha ? <code>{run.commitSha}</code> : <span class="muted">—</span>}</dd>
    {run.baseCommitSha ? (
      <>
        <dt>Base commit</dt>
        <dd>
          <code>{run.baseCommitSha}</code> <span class="muted">(named by the upload)</span>
        </dd>
      </>
    ) : null}
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
  <div class="table-scroll" tabindex={0} role="region" aria-label="Counts">
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
  </div>
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

const RunSuites: FC<{ suites: Awaited<ReturnType<typeof testSuitesOf>> }> = ({ suites }) => (
  <section aria-labelledby="suites">
    <h2 id="suites">Suites</h2>
    {suites.items.length === 0 ? (
      <p class="muted">No suites.</p>
    ) : (
      <div class="table-scroll" tabindex={0} role="region" aria-label="Suites">
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
      </div>
    )}
    {suites.next ? <p class="muted">The first {suites.items.length} suites are shown.</p> : null}
  </section>
);

/** Items of a shard listed on the page at most; the rest are counted. */
const SHARD_ITEMS_SHOWN = 200;

/** Names, the first `shown` of them, then how many more. */
const namesText = (names: string[], shown: number) =>
  `${names.slice(0, shown).join(", ")}${names.length > shown ? ` and ${names.length - shown} more` : ""}`;

/** The split plan of the run's key as recorded with the run: each shard's items, and a warning when items of the plan reported nothing. */
const RunSplitPlan: FC<{ split: RunSplit }> = ({ split }) => (
  <section aria-labelledby="split">
    <h2 id="split">Split</h2>
    {split.missingCount > 0 ? (
      <p class="notice" role="alert">
        {split.missingCount} item(s) of the split plan reported no results: a shard fell back to the deterministic split while the others
        used the plan (items can then run twice or not at all), or a shard never reported. See docs/splitting.md.
      </p>
    ) : null}
    <p class="muted">
      Plan <code>{split.key}</code>, by {split.by}.
    </p>
    <div class="table-scroll" tabindex={0} role="region" aria-label="Split">
      <table id="run-split">
        <thead>
          <tr>
            <th scope="col">Shard</th>
            <th scope="col">Items</th>
            <th scope="col">No results</th>
          </tr>
        </thead>
        <tbody>
          {split.shards.map((shard) => (
            <tr>
              <td>
                {shard.shard}/{split.shards.length}
              </td>
              <td>
                <details>
                  <summary>{shard.items.length} items</summary>
                  {namesText(shard.items, SHARD_ITEMS_SHOWN)}
                </details>
              </td>
              <td>{shard.missing.length === 0 ? "—" : namesText(shard.missing, 50)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  </section>
);

/** The uploads that joined a run in parts, oldest first: shard, when, cases, and whether it was a retry. */
const RunParts: FC<{ run: RunRow; parts: Awaited<ReturnType<typeof runPartsOf>> }> = ({ run, parts }) => (
  <section aria-labelledby="parts">
    <h2 id="parts">Parts</h2>
    <p class="muted">
      {run.partsCount} uploads with the run key <code>{run.runKey}</code>
      {run.shardTotal !== null ? `, ${run.shardTotal} shards declared` : ""}
      {run.completedAt ? "" : "; the run is waiting for more"}.
    </p>
    <div class="table-scroll" tabindex={0} role="region" aria-label="Parts">
      <table id="run-parts">
        <thead>
          <tr>
            <th scope="col">Shard</th>
            <th scope="col">Uploaded</th>
            <th scope="col" class="num">
              Cases
            </th>
            <th scope="col">Retry</th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {[...parts.items].reverse().map((part) => (
            <tr>
              <td>{part.shard_index !== null && run.shardTotal !== null ? `${part.shard_index}/${run.shardTotal}` : "—"}</td>
              <td>
                <When at={part.created_at} />
              </td>
              <td class="num">{part.status === "ready" ? part.tests_count : "—"}</td>
              <td>{part.retry ? "Retry" : "—"}</td>
              <td>
                {part.status === "failed"
                  ? `Unreadable: ${part.failure_reason ?? "no reason given"}`
                  : part.status === "pending"
                    ? "Not read yet"
                    : "Read"}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
    {parts.next ? <p class="muted">The latest {parts.items.length} parts are shown.</p> : null}
  </section>
);

/** The alert events this run tripped, each a sentence with the figures behind it in a disclosure (src/web/alert-sentences.tsx). */
const RunAlertEvents: FC<{ events: Awaited<ReturnType<typeof listRunAlertEvents>>; run: RunRow; paths: WebPaths }> = ({
  events,
  run,
  paths,
}) => (
  <section aria-labelledby="alert-events">
    <h2 id="alert-events">Alerts this run triggered</h2>
    {events.length === 0 ? (
      <p class="muted">None.</p>
    ) : (
      <ul class="events">
        {events.map((event) => (
          <li>
            <p>
              <a href={paths.to(`/alerts/${event.alertId}`)}>{ALERT_NAMES[event.alertType]}</a> · <When at={event.triggeredAt} />
            </p>
            <EventSentence
              alertType={event.alertType}
              metadata={event.metadata}
              run={{ projectId: run.projectId, number: run.number, branch: run.branch, commitSha: run.commitSha }}
              paths={paths}
            />
            <EventStatistics alertType={event.alertType} metadata={event.metadata} projectId={run.projectId} paths={paths} />
          </li>
        ))}
      </ul>
    )}
  </section>
);
