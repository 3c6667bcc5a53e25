/**
 * `/projects/:id`: the project's overview (docs/project-pages.md): headline figures over the last
 * 30 days against the 30 before, daily charts, open alerts and the latest runs. Everything comes
 * from data kept at processing time (daily rollups, the project's row): the page costs the same
 * with 100 runs of history as with 20,000.
 */
import type { FC } from "hono/jsx";
import type { Hono } from "hono";
import { ALERT_NAMES } from "../contract/presenters";
import { type Headline, type ProjectOverview, WINDOW_DAYS, projectOverview } from "../services/runs/project-overview";
import type { ProjectRow } from "../services/tenancy/memberships";
import { Chart } from "./charts";
import type { PageContext, WebConfig, WebEnv, WebPaths } from "./env";
import { changeText, durationText, percentText } from "./figures";
import { Result, TimeAgo, utcText } from "./format";
import { Layout } from "./layout";
import { memberProject } from "./project-access";
import { RunsTable } from "./runs-table";
import { signedIn } from "./session";

export type ProjectTab = "overview" | "runs" | "tests" | "settings";

/**
 * The project's heading and its pages' tab bar, on every page of the project's tabs. A tab's own
 * page (`heading`: "Test runs", "Tests") is headed by its name under a link to the project.
 */
export const ProjectHeader: FC<{ project: ProjectRow; page: PageContext; tab: ProjectTab; heading?: string }> = ({
  project,
  page,
  tab,
  heading,
}) => {
  const base = `/projects/${project.id}`;
  const tabs: { tab: ProjectTab; label: string; path: string }[] = [
    { tab: "overview", label: "Overview", path: base },
    { tab: "runs", label: "Runs", path: `${base}/runs` },
    { tab: "tests", label: "Tests", path: `${base}/tests` },
    { tab: "settings", label: "Settings", path: `${base}/settings` },
  ];
  return (
    <>
      {heading === undefined ? (
        <>
          <h1>{project.name}</h1>
          {project.description ? <p class="description">{project.description}</p> : null}
        </>
      ) : (
        <>
          <p class="crumbs">
            <a href={page.paths.to(base)}>{project.name}</a>
          </p>
          <h1>{heading}</h1>
        </>
      )}
      <nav aria-label="Project" class="tabs">
        <ul>
          {tabs.map((item) => (
            <li>
              <a href={page.paths.to(item.path)} aria-current={item.tab === tab ? "page" : undefined}>
                {item.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
    </>
  );
};

type Figure = { label: string; value: string; change: string | null; previous: string; detail?: string };

/** A figure with nothing to measure (no runs, no cases) says so instead of "0.0 %" or a dash. */
function figures(current: Headline, previous: Headline): Figure[] {
  const or = <T,>(value: T | null, show: (v: T) => string, none = "no runs") => (value === null ? none : show(value));
  const passed = Math.round((current.passRate ?? 0) * current.runs);
  return [
    {
      label: "Pass rate",
      value: or(current.passRate, percentText, "No runs"),
      detail: current.runs === 0 ? undefined : `${passed} of ${current.runs} ${current.runs === 1 ? "run" : "runs"} passed`,
      change: changeText("share", current.passRate, previous.passRate),
      previous: or(previous.passRate, percentText),
    },
    {
      label: "Runs",
      value: String(current.runs),
      change: changeText("count", current.runs, previous.runs),
      previous: String(previous.runs),
    },
    {
      label: "Flaky tests",
      value: or(current.flakyTests, String, "Not known"),
      change: changeText("count", current.flakyTests, previous.flakyTests),
      previous: or(previous.flakyTests, String, "not known"),
    },
    {
      label: "Median run duration",
      value: or(current.medianDurationMs, durationText, current.runs === 0 ? "No runs" : "No durations"),
      change: changeText("duration", current.medianDurationMs, previous.medianDurationMs),
      previous: or(previous.medianDurationMs, durationText, previous.runs === 0 ? "no runs" : "no durations"),
    },
    {
      label: "Skipped share",
      value: or(current.skippedShare, percentText, "No tests run"),
      change: changeText("share", current.skippedShare, previous.skippedShare),
      previous: or(previous.skippedShare, percentText, "no tests run"),
    },
    {
      label: "Cost of flakiness",
      value: durationText(current.flakinessCostMs),
      change: changeText("duration", current.flakinessCostMs, previous.flakinessCostMs),
      previous: durationText(previous.flakinessCostMs),
    },
  ];
}

const Figures: FC<{ overview: ProjectOverview }> = ({ overview }) => (
  <section aria-labelledby="figures-heading">
    <h2 id="figures-heading">Last {WINDOW_DAYS} days</h2>
    <dl class="figures">
      {figures(overview.current, overview.previous).map((figure) => (
        <div class="figure">
          <dt>{figure.label}</dt>
          <dd class="figure-value">{figure.value}</dd>
          {figure.detail ? <dd class="small">{figure.detail}</dd> : null}
          <dd class="muted">
            {figure.change === null
              ? `previous ${WINDOW_DAYS} days: ${figure.previous}`
              : `${figure.change} vs ${figure.previous} the ${WINDOW_DAYS} days before`}
          </dd>
        </div>
      ))}
    </dl>
    <p class="muted small">
      Days are UTC. Pass rate: passed runs over processed runs. Flaky tests: now, against the count at the end of the day {WINDOW_DAYS} days
      ago. Durations are read from daily histograms (within about 5 %). Cost of flakiness: test time spent on retries, flaky and quarantined
      failures and re-runs (below).
    </p>
  </section>
);

const Charts: FC<{ overview: ProjectOverview }> = ({ overview }) => {
  const labels = overview.days.map((day) => day.day);
  const total = (key: "passed" | "failed" | "errored") => overview.days.reduce((sum, day) => sum + day[key], 0);
  return (
    <section aria-labelledby="charts-heading">
      <h2 id="charts-heading">Daily</h2>
      <Chart
        id="runs-by-result"
        title="Runs by result"
        summary={`Processed runs per day over the last ${WINDOW_DAYS} days: ${total("passed")} passed, ${total("failed")} with failed tests, ${total("errored")} with errored tests.`}
        kind="stacked"
        labels={labels}
        labelHeading="Day (UTC)"
        empty={`No runs in the last ${WINDOW_DAYS} days.`}
        series={[
          { label: "Passed", tone: "pass", values: overview.days.map((day) => day.passed) },
          { label: "Tests failed", tone: "fail", values: overview.days.map((day) => day.failed) },
          { label: "Tests errored", tone: "error", values: overview.days.map((day) => day.errored) },
        ]}
      />
      <Chart
        id="run-duration"
        title="Run duration, p50 and p95"
        summary={`Median and 95th percentile of the duration of each day's runs over the last ${WINDOW_DAYS} days; days without runs are gaps.`}
        kind="lines"
        labels={labels}
        labelHeading="Day (UTC)"
        format={durationText}
        empty={`No run durations in the last ${WINDOW_DAYS} days.`}
        series={[
          { label: "p50", tone: "accent", values: overview.days.map((day) => day.durationP50Ms) },
          { label: "p95", tone: "warn", values: overview.days.map((day) => day.durationP95Ms) },
        ]}
      />
      <Chart
        id="flaky-tests"
        title="Flaky tests"
        summary={`The project's number of flaky tests at the end of each of the last ${WINDOW_DAYS} days; now ${overview.current.flakyTests ?? 0}.`}
        kind="bars"
        labels={labels}
        labelHeading="Day (UTC)"
        empty={`No flaky tests in the last ${WINDOW_DAYS} days.`}
        series={[{ label: "Flaky tests", tone: "warn", values: overview.days.map((day) => day.flakyTests) }]}
      />
    </section>
  );
};

/** The cost of flakiness (docs/flakiness-cost.md): each day's components, and the most costly tests of the window. */
const FlakinessCost: FC<{ overview: ProjectOverview; project: ProjectRow; page: PageContext }> = ({ overview, project, page }) => {
  const { days, current, costTests } = overview;
  const sum = (key: "retryMs" | "flakyFailuresMs" | "quarantinedFailuresMs" | "rerunMs") =>
    days.reduce((total, day) => total + day.cost[key], 0);
  const reruns = days.reduce((total, day) => total + day.cost.reruns, 0);
  return (
    <section aria-labelledby="cost-heading" class="flakiness-cost">
      <h2 id="cost-heading">Cost of flakiness</h2>
      <p>
        <strong>{durationText(current.flakinessCostMs)}</strong> of test time over the last {WINDOW_DAYS} days: retries that then passed{" "}
        {durationText(sum("retryMs"))}, failures of flaky tests {durationText(sum("flakyFailuresMs"))}, of quarantined tests{" "}
        {durationText(sum("quarantinedFailuresMs"))}, {reruns} {reruns === 1 ? "re-run" : "re-runs"} {durationText(sum("rerunMs"))}.
      </p>
      <Chart
        id="flakiness-cost"
        title="Cost of flakiness per day"
        summary={`Test time spent each day on flakiness over the last ${WINDOW_DAYS} days, by component: ${durationText(current.flakinessCostMs)} in all.`}
        kind="stacked"
        labels={days.map((day) => day.day)}
        labelHeading="Day (UTC)"
        format={durationText}
        empty={`Flakiness cost no test time in the last ${WINDOW_DAYS} days.`}
        series={[
          { label: "Retries", tone: "warn", values: days.map((day) => day.cost.retryMs) },
          { label: "Flaky failures", tone: "fail", values: days.map((day) => day.cost.flakyFailuresMs) },
          { label: "Quarantined failures", tone: "muted", values: days.map((day) => day.cost.quarantinedFailuresMs) },
          { label: "Re-runs", tone: "accent", values: days.map((day) => day.cost.rerunMs) },
        ]}
      />
      {costTests.length === 0 ? (
        <p class="muted">No test cost anything in this window.</p>
      ) : (
        <>
          <h3 id="cost-tests">Most costly tests</h3>
          <ol class="plain" aria-labelledby="cost-tests">
            {costTests.map((test) => (
              <li>
                <a href={page.paths.to(`/projects/${project.id}/tests/${test.id}`)}>{test.name}</a>
                {test.classname ? <span class="muted"> {test.classname}</span> : null} · {durationText(test.costMs)}
                {test.share === null ? null : ` · ${percentText(test.share)} of the total`}
              </li>
            ))}
          </ol>
        </>
      )}
      <p class="muted small">
        Kept when runs are processed (UTC day of arrival): failed attempts of cases that then passed, failing cases of tests flaky or
        quarantined when their run arrived (with their failed attempts), and the duration of a commit's re-run after a build that failed
        only by those. Re-runs are the project's, not a test's. Also <code>GET /api/v1/projects/{project.id}/flakiness_cost</code>.
      </p>
    </section>
  );
};

const OpenAlerts: FC<{ overview: ProjectOverview; page: PageContext; now: Date }> = ({ overview, page, now }) => (
  <section aria-labelledby="alerts-heading">
    <h2 id="alerts-heading">Open alerts</h2>
    {overview.openAlerts.length === 0 ? (
      <p class="muted">No open alerts: none is checking, not snoozed and tripped within the last 7 days.</p>
    ) : (
      <ul class="plain">
        {overview.openAlerts.map((alert) => (
          <li>
            <a href={page.paths.to(`/alerts/${alert.id}`)}>{ALERT_NAMES[alert.alertType]}</a> · last tripped{" "}
            <TimeAgo at={alert.lastTriggeredAt} now={now} /> · {alert.eventsCount} {alert.eventsCount === 1 ? "event" : "events"}
          </li>
        ))}
      </ul>
    )}
  </section>
);

const LatestRuns: FC<{ overview: ProjectOverview; project: ProjectRow; page: PageContext; now: Date }> = ({
  overview,
  project,
  page,
  now,
}) => (
  <section aria-labelledby="runs-heading">
    <h2 id="runs-heading">Latest runs</h2>
    {overview.latestRuns.length === 0 ? (
      <p class="muted">No runs yet. Upload a report with the project's upload token (Settings).</p>
    ) : (
      <RunsTable runs={overview.latestRuns} projectId={project.id} paths={page.paths} now={now} />
    )}
  </section>
);

export function registerProject(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  web.get("/projects/:id", signedIn(config, paths), async (c) => {
    const found = await memberProject(c, paths);
    if (found instanceof Response) return found;
    const { project, page } = found;
    const overview = await projectOverview(c.env, project);
    const now = c.env.clock.now();
    return c.html(
      <Layout title={project.name} page={page} section="projects">
        <ProjectHeader project={project} page={page} tab="overview" />
        <p>
          Latest result: <Result result={project.latestResult} /> · last run <TimeAgo at={project.lastTestRunAt} now={now} /> ·{" "}
          {project.testRunsCount} runs · {project.testsCount} tests
        </p>
        <Figures overview={overview} />
        <Charts overview={overview} />
        <FlakinessCost overview={overview} project={project} page={page} />
        <OpenAlerts overview={overview} page={page} now={now} />
        <LatestRuns overview={overview} project={project} page={page} now={now} />
        <p class="muted small">As of {utcText(now)}.</p>
      </Layout>,
    );
  });
}
