/**
 * The text beside each tool's structured result: what a person (or a model) reads first. Counts,
 * and the few items that matter, each with the id the next tool call needs; never the JSON again.
 * Uploaded text (names, messages) is quoted as it came: MCP text is not rendered as HTML.
 */
import type { AlertEventObject } from "../services/alerts/alert-events";
import type { AlertObject } from "../services/alerts/alerts";
import type { FailureGroupObject } from "../services/runs/failure-groups";
import type { ProjectObject } from "../services/tenancy/projects";
import type { RunComparisonObject, RunVerdictItem } from "../services/runs/run-comparison-reads";
import type { TestRunObject } from "../services/runs/test-results";
import { VERDICTS_BY_CONCERN, healthText } from "../lib/vocabulary";
import type { TestObject } from "../services/tests/tests";
import type { ProjectFlakinessCost } from "../services/runs/flakiness-cost-reads";

type List<T> = { data: T[]; pagination: { next_cursor: string | null; has_more: boolean } };

/** How many items of a list the text names; the structured result has them all. */
const LISTED = 10;
/** How many failure groups `get_test` and `get_test_run` embed: the first page of their REST list at this size. */
export const EMBEDDED_FAILURE_GROUPS = 20;

const plural = (count: number, word: string, many = `${word}s`) => `${count} ${count === 1 ? word : many}`;
const percent = (rate: number | null) => (rate === null ? "n/a" : `${Math.round(rate * 1000) / 10}%`);
const day = (iso: string | null) => (iso === null ? "never" : iso.replace(/:\d\d(\.\d+)?Z$/, "Z").replace("T", " "));
const shortSha = (sha: string | null) => (sha ? sha.slice(0, 8) : "no commit");
const oneLine = (text: string | null, max = 160) => {
  const line = (text ?? "").split("\n")[0]!.trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/** "…and 15 more on this page; more pages: pass cursor" lines under a list. */
function listFooter(list: List<unknown>): string[] {
  const lines: string[] = [];
  if (list.data.length > LISTED) lines.push(`…and ${list.data.length - LISTED} more on this page.`);
  if (list.pagination.has_more) lines.push(`More pages follow: call again with cursor = pagination.next_cursor.`);
  return lines;
}

const testName = (test: Pick<TestObject, "classname" | "name" | "file">) =>
  test.classname ? `${test.classname} › ${test.name}` : test.file ? `${test.file} › ${test.name}` : test.name;

export function projects(list: List<ProjectObject>): string {
  const lines = [`${plural(list.data.length, "project")}${list.pagination.has_more ? " on this page" : ""}.`];
  for (const p of list.data.slice(0, LISTED)) {
    lines.push(
      `- ${p.name} (project_id ${p.id}): ${plural(p.test_runs_count, "run")}, latest ${p.latest_result ?? "none yet"}, last run ${day(p.last_test_run_at)}; ${plural(p.tests_count, "test")}, ${p.flaky_tests_count} flaky, ${p.broken_tests_count} broken.`,
    );
  }
  return [...lines, ...listFooter(list)].join("\n");
}

function testLine(t: TestObject): string {
  const parts = [
    healthText(t.health, t.failing_streak),
    `failure rate ${percent(t.failure_rate)} over ${plural(t.window.executions, "execution")}`,
    `impact ${t.impact}`,
    `flip rate ${percent(t.flip_rate)}`,
  ];
  if (t.last_failed_at) parts.push(`last failed ${day(t.last_failed_at)}`);
  if (t.owners.length > 0) parts.push(`owners ${t.owners.join(" ")}`);
  if (t.quarantine) parts.push(`quarantined until ${day(t.quarantine.expires_at)}`);
  return `- ${testName(t)} (test_id ${t.id}): ${parts.join(", ")}.`;
}

export function tests(list: List<TestObject>, args: { health?: string; owner?: string; quarantined?: string; q?: string }): string {
  const filters = Object.entries({ health: args.health, owner: args.owner, quarantined: args.quarantined, q: args.q })
    .filter(([, value]) => value !== undefined && value !== "all")
    .map(([name, value]) => `${name}=${value}`);
  const counts = (["broken", "flaky", "healthy"] as const)
    .map((health) => [health, list.data.filter((t) => t.health === health).length] as const)
    .filter(([, n]) => n > 0);
  const lines = [
    `${plural(list.data.length, "test")}${filters.length > 0 ? ` matching ${filters.join(", ")}` : ""}${list.pagination.has_more ? " on this page" : ""}, most failing first (impact)${counts.length > 0 ? `: ${counts.map(([h, n]) => `${n} ${h}`).join(", ")}` : ""}.`,
  ];
  for (const t of list.data.slice(0, LISTED)) lines.push(testLine(t));
  return [...lines, ...listFooter(list)].join("\n");
}

type TestDetail = TestObject & {
  recent_executions: Array<{
    status: string;
    test_run: { number: number; branch: string | null; commit_sha: string | null; created_at: string };
  }>;
  failure_groups: FailureGroupObject[];
};

function groupLines(groups: Array<FailureGroupObject & { run_occurrences?: number; run_tests_count?: number }>, path: string): string[] {
  const lines: string[] = [];
  for (const g of groups.slice(0, 5)) {
    const count =
      g.run_occurrences !== undefined
        ? `${plural(g.run_occurrences, "case")} of ${plural(g.run_tests_count ?? 0, "test")} in this run`
        : `${plural(g.occurrences, "occurrence")}, last ${day(g.last_seen_at)}`;
    lines.push(`- "${oneLine(g.message)}": ${count} (signature ${g.signature}).`);
  }
  if (groups.length > 5) lines.push(`…and ${groups.length - 5} more groups.`);
  if (groups.length === EMBEDDED_FAILURE_GROUPS) lines.push(`(The first ${EMBEDDED_FAILURE_GROUPS} groups; there may be more: ${path}.)`);
  return lines;
}

export function test(t: TestDetail): string {
  const lines = [
    `${testName(t)} (test_id ${t.id}, project_id ${t.project_id}) is ${healthText(t.health, t.failing_streak)}${t.health_changed_at ? ` since ${day(t.health_changed_at)}` : ""}.`,
    `Over its last ${plural(t.window.executions, "execution")} on ${t.window.branch ?? "the default branch"}: failure rate ${percent(t.failure_rate)}, flip rate ${percent(t.flip_rate)}, ${t.impact} failing, ${t.passed_on_retry_count} passed on retry; p50 ${t.duration_p50_ms ?? "n/a"} ms, p95 ${t.duration_p95_ms ?? "n/a"} ms. ${plural(t.executions_count, "execution")} in all, last failed ${day(t.last_failed_at)}.`,
  ];
  if (t.owners.length > 0) lines.push(`Owners: ${t.owners.join(", ")}.`);
  if (t.quarantine)
    lines.push(
      `Quarantined until ${day(t.quarantine.expires_at)}: ${t.quarantine.reason}${t.quarantine.issue_url ? ` (${t.quarantine.issue_url})` : ""}.`,
    );

  const executions = t.recent_executions;
  if (executions.length === 0) lines.push("No executions yet.");
  else {
    const byStatus = ["passed", "failed", "errored", "skipped"]
      .map((s) => [s, executions.filter((e) => e.status === s).length] as const)
      .filter(([, n]) => n > 0);
    lines.push(`Last ${plural(executions.length, "execution")}, newest first: ${byStatus.map(([s, n]) => `${n} ${s}`).join(", ")}.`);
    lines.push(`  ${executions.map((e) => `#${e.test_run.number} ${e.status}`).join(", ")}`);
    const failing = executions.find((e) => e.status === "failed" || e.status === "errored");
    if (failing)
      lines.push(
        `Latest failure: run #${failing.test_run.number} on ${failing.test_run.branch ?? "no branch"} (${shortSha(failing.test_run.commit_sha)}), ${day(failing.test_run.created_at)}.`,
      );
  }
  if (t.failure_groups.length === 0) lines.push("No failure groups.");
  else
    lines.push(
      `${plural(t.failure_groups.length, "failure group")} (most recently seen first):`,
      ...groupLines(t.failure_groups, "GET /api/v1/tests/{id}/failure_groups"),
    );
  return lines.join("\n");
}

function runLine(run: TestRunObject): string {
  const counts =
    run.status === "processed"
      ? `; ${plural(run.tests_count, "test")}: ${run.passed_count} passed, ${run.failed_count} failed, ${run.errored_count} errored, ${run.skipped_count} skipped`
      : "";
  return `- Run #${run.number}, ${run.branch ?? "no branch"} @ ${shortSha(run.commit_sha)}, arrived ${day(run.created_at)}: ${run.status}${run.result ? `, ${run.result}` : ""}${counts}.`;
}

export function testRuns(
  list: List<TestRunObject>,
  args: { project_id: string; branch?: string; commit_sha?: string; result?: string; status?: string },
): string {
  const filters = Object.entries({ branch: args.branch, commit_sha: args.commit_sha, result: args.result, status: args.status })
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name}=${value}`);
  const failing = list.data.filter((run) => run.result === "tests_failed" || run.result === "tests_errored").length;
  const lines = [
    `${plural(list.data.length, "run")} of project_id ${args.project_id}${filters.length > 0 ? ` matching ${filters.join(", ")}` : ""}${list.pagination.has_more ? " on this page" : ""}, newest first${failing > 0 ? `: ${failing} failing` : ""}.`,
  ];
  for (const run of list.data.slice(0, LISTED)) lines.push(runLine(run));
  if (failing > 0)
    lines.push("A run's failures with their verdicts (is it mine?): list_run_failures with its number; grouped by cause: get_test_run.");
  return [...lines, ...listFooter(list)].join("\n");
}

type RunDetail = TestRunObject & {
  comparison: RunComparisonObject | null;
  failure_groups: Array<FailureGroupObject & { run_occurrences: number; run_tests_count: number }>;
};

export function testRun(run: RunDetail): string {
  const where = `${run.branch ?? "no branch"} @ ${shortSha(run.commit_sha)}`;
  const lines = [
    `Run #${run.number} (project_id ${run.project_id}), ${where}, arrived ${day(run.created_at)}: ${run.status}${run.result ? `, ${run.result}` : ""}.`,
  ];
  if (run.status === "failed" && run.failure_reason) lines.push(`Processing failed: ${run.failure_reason}`);
  if (run.status === "processed") {
    lines.push(
      `${plural(run.tests_count, "test")}: ${run.passed_count} passed, ${run.failed_count} failed, ${run.errored_count} errored, ${run.skipped_count} skipped${run.quarantined_failures_count > 0 ? ` (${run.quarantined_failures_count} of the failures are of quarantined tests)` : ""}${run.duration_ms !== null ? `; ${(run.duration_ms / 1000).toFixed(1)} s` : ""}.`,
    );
    if (run.comparison) lines.push(...comparisonLines(run.comparison));
    if (run.failure_groups.length > 0)
      lines.push(
        `${plural(run.failure_groups.length, "failure group")}, largest first:`,
        ...groupLines(run.failure_groups, "GET /api/v1/projects/{id}/test_runs/{number}/failure_groups"),
      );
  }
  return lines.join("\n");
}

const BASE_CHOICES: Record<RunComparisonObject["base_choice"], string> = {
  base_commit: "the run of the base commit the upload named",
  latest_default_before: "the latest default-branch run before it",
  previous_default: "the previous default-branch run",
  none: "none",
};

function comparisonLines(c: RunComparisonObject): string[] {
  const base = c.base
    ? `run #${c.base.number} (${c.base.branch ?? "no branch"} @ ${shortSha(c.base.commit_sha)}), ${BASE_CHOICES[c.base_choice]}`
    : "no base run";
  const counts = VERDICTS_BY_CONCERN.filter((verdict) => c.verdict_counts[verdict] > 0).map(
    (verdict) => `${c.verdict_counts[verdict]} ${verdict}`,
  );
  const lines = [
    `Compared with ${base}: ${counts.length > 0 ? counts.join(", ") : "no failures"}; ${plural(c.fixed_count, "test")} fixed.`,
  ];
  if (c.infrastructure_reason) lines.push(`Infrastructure: ${oneLine(c.infrastructure_reason)}`);
  if (counts.length > 0) lines.push("Each failure with its verdict and reason: list_run_failures.");
  return lines;
}

/** A page of a run's failures, grouped by verdict in order of concern (new first). */
export function runFailures(list: List<RunVerdictItem>, args: { project_id: string; number: number; verdict?: string }): string {
  const lines = [
    `${plural(list.data.length, "failure")} of run #${args.number} (project_id ${args.project_id})${args.verdict ? ` with verdict ${args.verdict}` : ""}${list.pagination.has_more ? " on this page" : ""}.`,
  ];
  let listed = 0;
  for (const verdict of VERDICTS_BY_CONCERN) {
    const items = list.data.filter((failure) => failure.verdict === verdict);
    if (items.length === 0) continue;
    lines.push(`${verdict} (${items.length}):`);
    for (const failure of items.slice(0, Math.max(0, LISTED - listed))) {
      const message = failure.failure_message ? `: ${oneLine(failure.failure_message)}` : "";
      lines.push(`- ${testName(failure)} (test_id ${failure.test_id}), ${failure.status}${message}. ${failure.reason}.`);
    }
    listed += items.length;
  }
  return [...lines, ...listFooter(list)].join("\n");
}

function alertLine(a: AlertObject): string {
  const state = !a.active ? "disabled" : a.snoozed ? `snoozed until ${day(a.snoozed_until)}` : "active";
  return `- ${a.name} (${a.alert_type}, alert_id ${a.id}) of project_id ${a.project_id}: ${state}, ${plural(a.events_count, "event")}, last notified ${day(a.last_notified_at)}.`;
}

export function alerts(list: List<AlertObject>, args: { status?: string; project_id?: string; alert_type?: string }): string {
  const filters = [
    `status=${args.status ?? "active"}`,
    ...(args.project_id ? [`project_id=${args.project_id}`] : []),
    ...(args.alert_type ? [`alert_type=${args.alert_type}`] : []),
  ];
  const withEvents = list.data.filter((a) => a.events_count > 0).length;
  const lines = [
    `${plural(list.data.length, "alert")} (${filters.join(", ")})${list.pagination.has_more ? " on this page" : ""}, ${withEvents} with events.`,
  ];
  for (const a of list.data.slice(0, LISTED)) lines.push(alertLine(a));
  return [...lines, ...listFooter(list)].join("\n");
}

export function alertEvents(list: List<AlertEventObject>): string {
  const lines = [`${plural(list.data.length, "event")}${list.pagination.has_more ? " on this page" : ""}, newest first.`];
  for (const e of list.data.slice(0, LISTED)) {
    const m = e.metadata as Record<string, unknown>;
    const subject = typeof m.name === "string" ? `${m.subject ?? "test"} ${m.name}` : String(m.subject ?? "run");
    const figures = m.statistic !== undefined ? `: ${String(m.statistic)} ${String(m.observed)} (threshold ${String(m.threshold)})` : "";
    lines.push(
      `- event ${e.id}, ${day(e.triggered_at)}, run #${e.test_run.number} (${e.test_run.branch ?? "no branch"} @ ${shortSha(e.test_run.commit_sha)}), ${subject}${figures}.`,
    );
  }
  return [...lines, ...listFooter(list)].join("\n");
}

export function snoozedAlert(a: AlertObject): string {
  return `${a.name} (alert_id ${a.id}) of project_id ${a.project_id} is snoozed until ${day(a.snoozed_until)}: no notifications until then; checks and event recording continue.`;
}

export function quarantinedTest(t: TestObject): string {
  const q = t.quarantine!;
  const extras = [q.owner ? `owner ${q.owner}` : null, q.issue_url ? `issue ${q.issue_url}` : null].filter(Boolean);
  return `${testName(t)} (test_id ${t.id}) is quarantined until ${day(q.expires_at)}: ${q.reason}${extras.length > 0 ? ` (${extras.join(", ")})` : ""}. CI can ignore its failures (GET /uploads/v1/quarantined_tests); its runs still record them.`;
}

export function unquarantinedTest(t: TestObject): string {
  return `${testName(t)} (test_id ${t.id}) is not quarantined: its failures count again in CI. Health: ${healthText(t.health, t.failing_streak)}.`;
}

/** Milliseconds of test time as a person reads them: `3 h 12 min`, `4 min 05 s`, `2.4 s`, `120 ms`. */
function testTime(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${String(Math.floor((ms % 60_000) / 1_000)).padStart(2, "0")} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
}

/** The window's total, its components, the day that cost most, and the most costly tests with their ids. */
export function flakinessCost(cost: ProjectFlakinessCost): string {
  const t = cost.totals;
  const lines = [
    `Cost of flakiness of project_id ${cost.project_id}, ${cost.from} to ${cost.to} (UTC days): ${testTime(t.total_ms)} of test time over ${plural(t.runs_count, "run")}.`,
  ];
  if (t.total_ms === 0) return [...lines, "Nothing spent on retries, flaky or quarantined failures or re-runs in this window."].join("\n");
  lines.push(
    `Retries that then passed ${testTime(t.retry_ms)}; failures of flaky tests ${testTime(t.flaky_failures_ms)}; of quarantined tests ${testTime(t.quarantined_failures_ms)}; ${plural(t.reruns_count, "re-run")} ${testTime(t.rerun_ms)}.`,
  );
  const worst = cost.days.reduce((a, b) => (b.total_ms > a.total_ms ? b : a));
  lines.push(`Costliest day: ${worst.day}, ${testTime(worst.total_ms)}.`);
  if (cost.top_tests.length > 0) lines.push(`Most costly tests (re-runs are the project's, not a test's):`);
  for (const test of cost.top_tests) {
    lines.push(`- ${testName(test)} (test_id ${test.test_id}): ${testTime(test.total_ms)}, ${percent(test.share)} of the total.`);
  }
  return lines.join("\n");
}
