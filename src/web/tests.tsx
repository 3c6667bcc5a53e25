/**
 * `/projects/:id/tests` (health filter, search, sort: the API's GET tests, `impact` first) and
 * `/projects/:id/tests/:test_id`: the test, a history strip of its last 100 executions, their
 * durations, its failure groups with samples, its health transitions, and the quarantine forms
 * (any member may quarantine and unquarantine). Reads and writes go through the API's services
 * (src/services/tests/tests.ts, src/services/runs/failure-groups.ts, src/services/tests/quarantine.ts); the quarantine form is checked with
 * the API's own body schema. Names, classnames, messages and traces come from uploads: text.
 */
import type { Context, Hono } from "hono";
import type { FC } from "hono/jsx";
import { readListRequest } from "../lib/lists";
import type { CursorCodec } from "../lib/pagination";
import { QUARANTINE_DURATIONS, TEST_HEALTHS, TEST_SORTS, type TestHealth, type TestSort } from "../lib/vocabulary";
import { QuarantineBodySchema, TestsQuerySchema } from "../contract/schemas";
import { listTestFailureGroups } from "../services/runs/failure-groups";
import { type TestFlakinessCost, costWindow, testFlakinessCostOf } from "../services/runs/flakiness-cost-reads";
import { findTestForMember } from "../services/tenancy/memberships";
import { type TestDailyHistory, testDailyHistory } from "../services/tests/test-daily-history";
import { presentTest } from "../contract/presenters";
import { quarantineInputOf, quarantineTest, unquarantineTest } from "../services/tests/quarantine";
import {
  type FlakyReason,
  type TestObject,
  type TestRow,
  type TestSibling,
  latestFlakyReasons,
  listHealthTransitions,
  listProjectVariants,
  listTestExecutions,
  listTestSiblings,
  listTests,
  testLists,
  windowOf,
} from "../services/tests/tests";
import { type MemberAccess, accessOf, projectMemberAccess, withQuery } from "./access";
import { ProjectHeader } from "./project";
import { Chart } from "./charts";
import {
  ExternalLink,
  HealthBadge,
  Notice,
  PageLinks,
  QuarantinedBadge,
  quarantinedByText,
  StatusBadge,
  VisuallyHidden,
  When,
  WideTable,
  durationText,
  healthLabel,
  noticeFor,
  percent,
  statusLabel,
} from "./components";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { formFields } from "./forms";
import { counted, utcText } from "./format";
import { Layout } from "./layout";
import { pageNotFound } from "./not-found";
import { parseQuery } from "./page-input";
import { signedIn } from "./session";

const SORT_LABELS: Record<TestSort, string> = {
  impact: "Impact (failures in the window)",
  failure_rate: "Failure rate",
  duration: "Duration (p95)",
  last_failed: "Last failed",
  name: "Name",
};

/** Executions in the history strip: the API's largest page. */
const HISTORY_SIZE = 100;

const NOTICES = { quarantined: "The test is quarantined.", unquarantined: "The quarantine has ended." };

/** The test of the path, in the project of the path, with the person's access; null → the 404 page. */
async function testAccess(
  c: Context<WebEnv>,
  config: WebConfig,
  paths: WebPaths,
): Promise<{ test: TestObject; row: TestRow; access: MemberAccess; projectName: string } | null> {
  const found = await findTestForMember(c.env, c.var.person.userId, c.req.param("id") ?? "", c.req.param("test_id") ?? "");
  if (!found) return null;
  const { test, project, membership } = found;
  return {
    test: presentTest(test, windowOf(project), config.webAppUrl, c.env.clock.now()),
    row: test,
    access: accessOf(c, config, paths, membership),
    projectName: project.name,
  };
}

type QuarantineForm = { errors: string[]; values: Record<string, string> };
type Execution = Awaited<ReturnType<typeof listTestExecutions>>["items"][number];

async function renderTestPage(
  c: Context<WebEnv>,
  paths: WebPaths,
  found: NonNullable<Awaited<ReturnType<typeof testAccess>>>,
  form: QuarantineForm | null,
) {
  const { test, row, access, projectName } = found;
  const { scope } = access;
  const firstPage = <F extends Record<string, string | null>>(filters: F, limit: number) => ({
    organizationId: scope.organizationId,
    filters,
    limit,
    after: null,
  });
  const [executions, groups, transitions, cost, siblings, daily] = await Promise.all([
    listTestExecutions(scope, firstPage({ test_id: test.id, status: null, branch: null }, HISTORY_SIZE)),
    listTestFailureGroups(scope, firstPage({ test_id: test.id }, 20)),
    listHealthTransitions(scope, firstPage({ test_id: test.id }, 20)),
    testFlakinessCostOf(scope, { id: test.id, projectId: test.project_id }, costWindow({}, scope.clock.now())),
    listTestSiblings(scope.db, row),
    testDailyHistory(scope, { id: test.id, projectId: test.project_id }),
  ]);
  const projectPath = `/projects/${test.project_id}`;
  const runPath = (number: number) => paths.to(`${projectPath}/runs/${number}`);
  const testPath = paths.to(`${projectPath}/tests/${test.id}`);
  const history = [...executions.items].reverse();
  return c.html(
    <Layout title={`${test.name} · ${projectName}`} page={access.page} section="projects">
      <p class="crumbs">
        <a href={paths.to(projectPath)}>{projectName}</a> › <a href={paths.to(`${projectPath}/tests`)}>Tests</a>
      </p>
      <h1>{test.name}</h1>
      <Notice text={noticeFor(NOTICES, c.req.query("done"))} />
      <p>
        <HealthBadge health={test.health} failingStreak={test.failing_streak} /> {test.quarantined ? <QuarantinedBadge /> : null}
      </p>
      {flakyOffWindow(test) ? <FlakyOffWindow transitions={transitions.items} /> : null}
      <TestFacts test={test} />

      <VariantSiblings test={test} siblings={siblings} testPath={(id) => paths.to(`${projectPath}/tests/${id}`)} />

      <HistoryStrip history={history} runPath={runPath} />

      <DurationSection test={test} history={history} />

      <DailyHistorySection history={daily} />

      <CostSection cost={cost} />

      <QuarantineSection test={test} form={form} testPath={testPath} inVariants={test.variant !== "" || siblings.length > 0} />

      <FailureGroups groups={groups.items} />

      <HealthTransitions transitions={transitions.items} runPath={runPath} />
    </Layout>,
    form && form.errors.length > 0 ? 422 : 200,
  );
}

/** `/projects/:id/tests`: the project's tests by the health filter, search and sort, a keyset page at a time. */
async function testsPage(c: Context<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): Promise<Response> {
  const found = await projectMemberAccess(c, config, paths);
  if (!found) return pageNotFound(c, c.var.person, paths);
  const { project, access } = found;
  const query = parseQuery(TestsQuerySchema, c, ["health", "q", "sort", "variant", "cursor", "limit"]);
  const filters = {
    project_id: project.id,
    health: query.health ?? "all",
    q: query.q ?? null,
    sort: query.sort ?? "impact",
    quarantined: null,
    owner: null,
    variant: query.variant ?? null,
  };
  const list = testLists[filters.sort];
  const request = readListRequest(codec, list, { organizationId: access.scope.organizationId, filters }, query);
  const [page, variants] = await Promise.all([listTests(access.scope, request), listProjectVariants(access.scope.db, project.id)]);
  const reasons = await latestFlakyReasons(
    access.scope,
    project.id,
    page.items.filter(flakyOffWindow).map((test) => test.id),
  );
  const base = paths.to(`/projects/${project.id}/tests`);
  const filterQuery = {
    health: filters.health === "all" ? null : filters.health,
    q: filters.q,
    sort: filters.sort === "impact" ? null : filters.sort,
    variant: filters.variant === null ? null : variantParam(filters.variant),
  };
  const next = page.next ? withQuery(base, { ...filterQuery, cursor: codec.encode(list.listing(request), page.next) }) : null;
  return c.html(
    <Layout title={`Tests · ${project.name}`} page={access.page} section="projects">
      <ProjectHeader project={project} page={access.page} tab="tests" heading="Tests" />
      <TestsFilters base={base} filters={filters} variants={variants} />
      <p class="muted">
        Impact: how many of a test's last {page.items[0]?.window.max_executions ?? 50} executions on the default branch failed or errored.
        The tests that break the most builds come first.
      </p>
      {page.items.length === 0 ? (
        <p>No tests match.</p>
      ) : (
        <TestsTable
          tests={page.items}
          reasons={reasons}
          testPath={(id) => paths.to(`/projects/${project.id}/tests/${id}`)}
          withVariant={variants.length > 1 && filters.variant === null}
        />
      )}
      <PageLinks first={request.after ? withQuery(base, filterQuery) : null} next={next} label="Tests" />
    </Layout>,
  );
}

export function registerTests(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): void {
  web.get("/projects/:id/tests", signedIn(config, paths), (c) => testsPage(c, config, paths, codec));

  web.get("/projects/:id/tests/:test_id", signedIn(config, paths), async (c) => {
    const found = await testAccess(c, config, paths);
    if (!found) return pageNotFound(c, c.var.person, paths);
    return renderTestPage(c, paths, found, null);
  });

  web.post("/projects/:id/tests/:test_id/quarantine", signedIn(config, paths), async (c) => {
    const found = await testAccess(c, config, paths);
    if (!found) return pageNotFound(c, c.var.person, paths);
    const values = await formFields(c, ["reason", "duration", "owner", "issue_url", "all_variants"]);
    const body = QuarantineBodySchema.safeParse({
      reason: values.reason,
      duration: values.duration || null,
      owner: values.owner?.trim() || null,
      issue_url: values.issue_url?.trim() || null,
      all_variants: values.all_variants === "on",
    });
    if (!body.success) {
      const errors = body.error.issues.map((issue) => `${String(issue.path[0] ?? "form").replace("_", " ")} ${issue.message}`);
      return renderTestPage(c, paths, found, { errors, values });
    }
    const { access, test } = found;
    const input = quarantineInputOf({ ...body.data, expires_at: null });
    const person = c.var.person;
    const actor = { via: "page" as const, userId: person.userId, name: person.name, email: person.email };
    await quarantineTest({ ...access.scope, queue: c.env.runQueue, logger: c.env.logger }, test.id, input, actor);
    return c.redirect(paths.to(`/projects/${test.project_id}/tests/${test.id}?done=quarantined`), 303);
  });

  web.post("/projects/:id/tests/:test_id/unquarantine", signedIn(config, paths), async (c) => {
    const found = await testAccess(c, config, paths);
    if (!found) return pageNotFound(c, c.var.person, paths);
    const { access, test } = found;
    await unquarantineTest({ ...access.scope, queue: c.env.runQueue, logger: c.env.logger }, test.id);
    return c.redirect(paths.to(`/projects/${test.project_id}/tests/${test.id}?done=unquarantined`), 303);
  });
}

/** What the test is, and its figures over the window. */
/** On a flaky test's page whose window shows no failure: the evidence that set the label (its newest transition to flaky). */
const FlakyOffWindow: FC<{ transitions: Awaited<ReturnType<typeof listHealthTransitions>>["items"] }> = ({ transitions }) => {
  const latest = transitions.find((transition) => transition.to === "flaky");
  return (
    <p class="flaky-reason">
      {latest
        ? `Flaky since run #${latest.test_run.number}${latest.test_run.branch ? ` on ${latest.test_run.branch}` : ""}: ${latest.reason}. `
        : "Flaky by evidence outside its default-branch window. "}
      Its figures below count the default branch only, where its window holds no failure; its health counts a pass and a failure on one
      commit on any branch (health transitions, below).
    </p>
  );
};

const TestFacts: FC<{ test: TestObject }> = ({ test }) => (
  <dl class="facts">
    <dt>Classname</dt>
    <dd>{test.classname ?? <span class="muted">—</span>}</dd>
    <dt>File</dt>
    <dd>{test.file ?? <span class="muted">—</span>}</dd>
    <dt>Suite</dt>
    <dd>{test.suite ?? <span class="muted">—</span>}</dd>
    {test.variant !== "" ? (
      <>
        <dt>Variant</dt>
        <dd>
          <code>{test.variant}</code>
        </dd>
      </>
    ) : null}
    {test.owners.length > 0 ? (
      <>
        <dt>Owners</dt>
        <dd>{test.owners.join(", ")}</dd>
      </>
    ) : null}
    <dt>Failure rate</dt>
    <dd>
      {percent(test.failure_rate)} over its last {counted(test.window.executions, "execution")}
      {test.window.branch ? ` on ${test.window.branch}` : ""}
    </dd>
    <dt>Impact</dt>
    <dd>{test.impact} failures in that window</dd>
    <dt>Passed on retry</dt>
    <dd>{test.passed_on_retry_count} in that window</dd>
    <dt>Flip rate</dt>
    <dd>{percent(test.flip_rate)}</dd>
    <dt>Last executed</dt>
    <dd>
      <When at={test.last_executed_at} />
    </dd>
    <dt>Executions</dt>
    <dd>{test.executions_count}</dd>
  </dl>
);

/** The same test in the project's other variants (docs/tests.md, "Variants"), each with its health. */
const VariantSiblings: FC<{ test: TestObject; siblings: TestSibling[]; testPath: (id: string) => string }> = ({
  test,
  siblings,
  testPath,
}) =>
  siblings.length === 0 ? null : (
    <section>
      <h2>In other variants</h2>
      <p class="muted">
        The same test run in other configurations is a test of its own: its health is judged on its own runs. This one is{" "}
        {test.variant === "" ? "the variant of runs without one" : <code>{test.variant}</code>}.
      </p>
      <ul>
        {siblings.map((sibling) => (
          <li>
            <a href={testPath(sibling.id)}>{sibling.variant === "" ? "(no variant)" : sibling.variant}</a>{" "}
            <HealthBadge health={sibling.health} failingStreak={sibling.failingStreak} />
          </li>
        ))}
      </ul>
    </section>
  );

/** The last executions, oldest first, each a cell that opens its run. */
const HistoryStrip: FC<{ history: Execution[]; runPath: (number: number) => string }> = ({ history, runPath }) => (
  <section aria-labelledby="history">
    <h2 id="history">History</h2>
    <p class="muted">The last {counted(history.length, "execution")}, oldest first; each opens its run.</p>
    <ol class="history-strip">
      {history.map((execution) => {
        const text = `${statusLabel(execution.status)}, run #${execution.test_run.number}, ${utcText(new Date(execution.test_run.created_at))}`;
        return (
          <li>
            <a
              href={`${runPath(execution.test_run.number)}${execution.status === "failed" || execution.status === "errored" ? `#case-${execution.id}` : ""}`}
              class={`cell status-${execution.status}`}
              title={text}
            >
              <VisuallyHidden>{text}</VisuallyHidden>
            </a>
          </li>
        );
      })}
    </ol>
  </section>
);

const DurationSection: FC<{ test: TestObject; history: Execution[] }> = ({ test, history }) => (
  <section aria-labelledby="duration">
    <h2 id="duration">Duration</h2>
    <p class="muted">
      p50 {durationText(test.duration_p50_ms)} · p95 {durationText(test.duration_p95_ms)} over the window.
    </p>
    <Chart
      id="test-duration"
      title={`Duration of the last ${history.length} executions`}
      summary={`How long each of the last ${history.length} executions took, oldest first, passed and failed apart (the history strip above links each execution to its run).`}
      kind="stacked"
      labels={history.map((execution) => `#${execution.test_run.number}`)}
      labelHeading="Run"
      format={durationText}
      empty="No durations recorded for these executions."
      series={[
        {
          label: "passed",
          tone: "pass",
          values: history.map((execution) => (execution.status === "passed" ? execution.duration_ms : null)),
        },
        {
          label: "failed or errored",
          tone: "fail",
          values: history.map((execution) =>
            execution.status === "failed" || execution.status === "errored" ? execution.duration_ms : null,
          ),
        },
        {
          label: "skipped",
          tone: "muted",
          values: history.map((execution) => (execution.status === "skipped" ? execution.duration_ms : null)),
        },
      ]}
    />
  </section>
);

/**
 * The test's days (docs/retention.md): executions, failures and duration p50 per day, from its daily
 * figures, which are kept after its cases; the days before its project's retention have no cases left.
 */
const DailyHistorySection: FC<{ history: TestDailyHistory }> = ({ history }) => {
  const { days } = history;
  const labels = days.map((day) => day.day);
  const executions = days.reduce((sum, day) => sum + day.executions, 0);
  return (
    <section aria-labelledby="daily">
      <h2 id="daily">Daily history</h2>
      <p class="muted">
        {counted(executions, "execution")} from {history.from} to {history.to} (UTC), from the test's daily figures. Its executions
        themselves (cases, the runs above) are kept {history.retentionDays} days, from {history.casesKeptFrom}; the daily figures stay
        longer.
      </p>
      <Chart
        id="test-daily-executions"
        title="Executions per day"
        summary={`Executions of this test each day from ${history.from} to ${history.to}, failed or errored apart: ${executions} in all.`}
        kind="stacked"
        labels={labels}
        labelHeading="Day (UTC)"
        empty="No executions in this range."
        series={[
          { label: "Passed", tone: "pass", values: days.map((day) => day.executions - day.failures) },
          { label: "Failed or errored", tone: "fail", values: days.map((day) => day.failures) },
        ]}
      />
      <Chart
        id="test-daily-duration"
        title="Duration p50 per day"
        summary={`The median duration of this test's executions each day from ${history.from} to ${history.to}.`}
        kind="lines"
        labels={labels}
        labelHeading="Day (UTC)"
        format={durationText}
        empty="No durations recorded in this range."
        series={[{ label: "p50", tone: "pass", values: days.map((day) => day.durationP50Ms) }]}
      />
    </section>
  );
};

/** The test's share of its project's cost of flakiness over the last 30 days (docs/flakiness-cost.md). */
const CostSection: FC<{ cost: TestFlakinessCost }> = ({ cost }) => {
  const { totals, days } = cost;
  return (
    <section aria-labelledby="cost" class="flakiness-cost">
      <h2 id="cost">Cost of flakiness</h2>
      {totals.total_ms === 0 ? (
        <p class="muted">
          No test time spent on this test's retries or flaky or quarantined failures from {cost.from} to {cost.to} (UTC).
        </p>
      ) : (
        <>
          <p>
            <strong>{durationText(totals.total_ms)}</strong> of test time from {cost.from} to {cost.to} (UTC)
            {cost.share === null ? "" : `: ${percent(cost.share)} of the project's ${durationText(cost.project_total_ms)}`}. Retries that
            then passed {durationText(totals.retry_ms)}, failures while flaky {durationText(totals.flaky_failures_ms)}, while quarantined{" "}
            {durationText(totals.quarantined_failures_ms)}.
          </p>
          <Chart
            id="test-cost"
            title="Cost of flakiness per day"
            summary={`Test time this test cost each day from ${cost.from} to ${cost.to}, by component: ${durationText(totals.total_ms)} in all.`}
            kind="stacked"
            labels={days.map((day) => day.day)}
            labelHeading="Day (UTC)"
            format={durationText}
            empty="Flakiness cost no test time in this window."
            series={[
              { label: "Retries", tone: "warn", values: days.map((day) => day.retry_ms) },
              { label: "Flaky failures", tone: "fail", values: days.map((day) => day.flaky_failures_ms) },
              { label: "Quarantined failures", tone: "muted", values: days.map((day) => day.quarantined_failures_ms) },
            ]}
          />
        </>
      )}
    </section>
  );
};

/** The test's quarantine, if any, and the form that quarantines it (with the errors of a form that was refused). */
const QuarantineSection: FC<{ test: TestObject; form: QuarantineForm | null; testPath: string; inVariants: boolean }> = ({
  test,
  form,
  testPath,
  inVariants,
}) => {
  const values = form?.values ?? {};
  return (
    <section aria-labelledby="quarantine">
      <h2 id="quarantine">Quarantine</h2>
      {test.quarantine ? (
        <>
          <p>
            Quarantined {test.quarantine.source === "auto" ? "automatically" : ""}
            {test.quarantine.all_variants ? " in every variant" : ""} until <When at={test.quarantine.expires_at} />:{" "}
            {test.quarantine.reason}
          </p>
          <dl class="facts">
            <dt>Quarantined</dt>
            <dd>
              {quarantinedByText(test.quarantine.quarantined_by)} on <When at={test.quarantine.created_at} />
            </dd>
            <dt>Owner</dt>
            <dd>{test.quarantine.owner ?? <span class="muted">none given</span>}</dd>
            <dt>Issue</dt>
            <dd>{test.quarantine.issue_url ? <ExternalLink href={test.quarantine.issue_url} /> : <span class="muted">none given</span>}</dd>
          </dl>
          <form method="post" action={`${testPath}/unquarantine`} class="inline">
            <button type="submit">Unquarantine</button>
          </form>
        </>
      ) : (
        <p>Not quarantined. A quarantined test's failures are reported apart and CI can ignore them.</p>
      )}
      {form && form.errors.length > 0 ? (
        <div class="notice" role="alert">
          <p>The quarantine was not saved:</p>
          <ul>
            {form.errors.map((error) => (
              <li>{error}</li>
            ))}
          </ul>
        </div>
      ) : null}
      <form method="post" action={`${testPath}/quarantine`} class="card">
        <label>
          Reason
          <input name="reason" required maxlength={1000} value={values.reason ?? ""} />
        </label>
        <label>
          For
          <select name="duration">
            {Object.keys(QUARANTINE_DURATIONS).map((duration) => (
              <option value={duration} selected={(values.duration ?? "7d") === duration}>
                {duration.replace("d", " days").replace(/^1 days$/, "1 day")}
              </option>
            ))}
          </select>
        </label>
        <label>
          Owner (optional: e-mail or @org/team)
          <input name="owner" maxlength={255} value={values.owner ?? ""} />
        </label>
        <label>
          Issue URL (optional)
          <input name="issue_url" type="url" maxlength={2048} value={values.issue_url ?? ""} />
        </label>
        {inVariants ? (
          <label class="check">
            <input name="all_variants" type="checkbox" checked={values.all_variants === "on"} /> In every variant (its siblings, and
            variants that appear later)
          </label>
        ) : null}
        <button type="submit">{test.quarantined ? "Replace the quarantine" : "Quarantine"}</button>
      </form>
    </section>
  );
};

const FailureGroups: FC<{ groups: Awaited<ReturnType<typeof listTestFailureGroups>>["items"] }> = ({ groups }) => (
  <section aria-labelledby="failure-groups">
    <h2 id="failure-groups">Failure groups</h2>
    {groups.length === 0 ? <p class="muted">No failures recorded.</p> : null}
    {groups.map((group) => (
      <article class="failure-group">
        <h3>{group.message}</h3>
        <p class="muted">
          {group.occurrences} {group.occurrences === 1 ? "time" : "times"}, first <When at={group.first_seen_at} />, last{" "}
          <When at={group.last_seen_at} />
        </p>
        {group.sample.message ? <p class="failure-message">{group.sample.message}</p> : null}
        {group.sample.text ? (
          <details>
            <summary>Sample trace</summary>
            <pre tabindex={0}>{group.sample.text}</pre>
          </details>
        ) : null}
      </article>
    ))}
  </section>
);

const HealthTransitions: FC<{
  transitions: Awaited<ReturnType<typeof listHealthTransitions>>["items"];
  runPath: (number: number) => string;
}> = ({ transitions, runPath }) => (
  <section aria-labelledby="transitions">
    <h2 id="transitions">Health transitions</h2>
    {transitions.length === 0 ? (
      <p class="muted">Its health has never changed.</p>
    ) : (
      <WideTable label="Health transitions">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">From</th>
            <th scope="col">To</th>
            <th scope="col">Why</th>
            <th scope="col">Run</th>
          </tr>
        </thead>
        <tbody>
          {transitions.map((transition) => (
            <tr>
              <td>
                <When at={transition.created_at} />
              </td>
              <td>{healthLabel(transition.from)}</td>
              <td>{healthLabel(transition.to)}</td>
              <td>{transition.reason}</td>
              <td>
                <a href={runPath(transition.test_run.number)}>#{transition.test_run.number}</a>
              </td>
            </tr>
          ))}
        </tbody>
      </WideTable>
    )}
  </section>
);

type ListedFilters = { health: TestHealth | "all"; q: string | null; sort: TestSort; variant: string | null };

const TestsFilters: FC<{ base: string; filters: ListedFilters; variants: string[] }> = ({ base, filters, variants }) => (
  <form method="get" action={base} class="filters">
    <label>
      Search
      <input name="q" type="search" value={filters.q ?? ""} maxlength={255} />
    </label>
    <label>
      Health
      <select name="health">
        <option value="all" selected={filters.health === "all"}>
          Any health
        </option>
        {TEST_HEALTHS.map((health) => (
          <option value={health} selected={filters.health === health}>
            {healthLabel(health)}
          </option>
        ))}
      </select>
    </label>
    {variants.length > 1 || (filters.variant !== null && !variants.includes(filters.variant)) ? (
      <VariantSelect variants={variants} selected={filters.variant} />
    ) : null}
    <label>
      Sort by
      <select name="sort">
        {TEST_SORTS.map((sort) => (
          <option value={sort} selected={filters.sort === sort}>
            {SORT_LABELS[sort]}
          </option>
        ))}
      </select>
    </label>
    <button type="submit">Show</button>
  </form>
);

/**
 * A variant as the page's query string carries it. An empty field means "any" to the filter forms
 * (parseQuery), so the variant "" travels as ",", which normalizes to "" (src/lib/variant.ts).
 */
const variantParam = (variant: string) => (variant === "" ? "," : variant);

/** The project's variants; "" (runs without one) is named, an absent filter is "Any variant". */
const VariantSelect: FC<{ variants: string[]; selected: string | null }> = ({ variants, selected }) => (
  <label>
    Variant
    <select name="variant">
      <option value="" selected={selected === null}>
        Any variant
      </option>
      {[...new Set([...variants, ...(selected === null ? [] : [selected])])].map((variant) => (
        <option value={variantParam(variant)} selected={selected === variant}>
          {variant === "" ? "(no variant)" : variant}
        </option>
      ))}
    </select>
  </label>
);

/**
 * A flaky test whose default-branch window holds no failure (issue 30: "flaky, 0 %, 0 %, impact
 * 0"): health follows evidence on every branch (a pass and a failure on one commit, docs/tests.md
 * rule 1, or the flakiness check's), while impact and the rates count the default branch only. So
 * the label is shown with the evidence that set it, and says that the default branch saw none.
 */
const flakyOffWindow = (test: TestObject) => test.health === "flaky" && test.impact === 0 && test.passed_on_retry_count === 0;

const FlakyElsewhere: FC<{ reason: FlakyReason }> = ({ reason }) => (
  <div class="muted flaky-reason">
    Flaky since run #{reason.runNumber}
    {reason.branch ? ` on ${reason.branch}` : ""}: {reason.reason}. No failure on the default branch in its window.
  </div>
);

const TestsTable: FC<{
  tests: TestObject[];
  reasons: ReadonlyMap<string, FlakyReason>;
  testPath: (id: string) => string;
  withVariant: boolean;
}> = ({ tests, reasons, testPath, withVariant }) => (
  <div class="table-scroll" tabindex={0} role="region" aria-label="Tests">
    <table>
      <thead>
        <tr>
          <th scope="col">Test</th>
          <th scope="col">Health</th>
          <th scope="col" class="num">
            Impact
          </th>
          <th scope="col" class="num">
            Failure rate
          </th>
          <th scope="col" class="num">
            Flip rate
          </th>
          <th scope="col" class="num">
            p95
          </th>
          <th scope="col">Last status</th>
          <th scope="col">Last failed</th>
        </tr>
      </thead>
      <tbody>
        {tests.map((test) => (
          <tr>
            <td>
              <a href={testPath(test.id)}>{test.name}</a>
              {test.classname ? <div class="muted">{test.classname}</div> : null}
              {withVariant && test.variant !== "" ? (
                <div class="muted">
                  <code>{test.variant}</code>
                </div>
              ) : null}
            </td>
            <td>
              <HealthBadge health={test.health} failingStreak={test.failing_streak} /> {test.quarantined ? <QuarantinedBadge /> : null}
              {reasons.has(test.id) ? <FlakyElsewhere reason={reasons.get(test.id)!} /> : null}
              {test.quarantine ? (
                <div class="muted">
                  {quarantinedByText(test.quarantine.quarantined_by)}, until <When at={test.quarantine.expires_at} />
                </div>
              ) : null}
            </td>
            <td class="num">{test.impact}</td>
            <td class="num">{percent(test.failure_rate)}</td>
            <td class="num">{percent(test.flip_rate)}</td>
            <td class="num">{durationText(test.duration_p95_ms)}</td>
            <td>{test.last_status ? <StatusBadge status={test.last_status} /> : <span class="muted">—</span>}</td>
            <td>
              <When at={test.last_failed_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);
