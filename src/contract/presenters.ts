/** Database rows → API objects (snake_case, ISO 8601 UTC timestamps, `url` into the web app). */
import type {
  alertEvents,
  alerts,
  apiKeys,
  organizations,
  projects,
  testCases,
  testHealthTransitions,
  testRuns,
  testSuites,
  tests,
} from "../db/schema";

type Row<T extends { $inferSelect: unknown }> = T["$inferSelect"];

import type { AlertType } from "../lib/vocabulary";

export const ALERT_NAMES: Record<AlertType, string> = {
  performance_regression: "Performance regression",
  test_flakiness: "Flaky tests",
  skipped_test_count_creep: "Skipped test count creep",
  failure_rate_spike: "Failure rate spike",
};

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);
const base = (webAppUrl: string) => webAppUrl.replace(/\/+$/, "");

export function presentApiKey(row: Pick<Row<typeof apiKeys>, "id" | "name" | "createdAt">) {
  return { id: row.id, name: row.name, created_at: row.createdAt.toISOString() };
}

export function presentOrganization(org: Row<typeof organizations>, key: Pick<Row<typeof apiKeys>, "id" | "name" | "createdAt">) {
  return {
    id: org.id,
    name: org.name,
    time_zone: org.timeZone,
    created_at: org.createdAt.toISOString(),
    api_key: presentApiKey(key),
  };
}

export function presentProject(row: Row<typeof projects>, webAppUrl: string) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    test_runs_count: row.testRunsCount,
    latest_result: row.latestResult,
    last_test_run_at: iso(row.lastTestRunAt),
    tests_count: row.testsCount,
    flaky_tests_count: row.flakyTestsCount,
    broken_tests_count: row.brokenTestsCount,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    url: `${base(webAppUrl)}/projects/${row.id}`,
  };
}

/** Snoozing is judged against `now`: an expired snooze needs no job to end it. */
export function isSnoozed(snoozedUntil: Date | null, now: Date): boolean {
  return snoozedUntil !== null && snoozedUntil.getTime() > now.getTime();
}

/** `snoozed` is derived from `snoozed_until` at read time, so an expired snooze reads as not snoozed. */
export function presentAlert(row: Row<typeof alerts>, now: Date, webAppUrl: string) {
  const snoozed = isSnoozed(row.snoozedUntil, now);
  return {
    id: row.id,
    project_id: row.projectId,
    alert_type: row.alertType,
    name: ALERT_NAMES[row.alertType],
    active: row.active,
    snoozed,
    snoozed_until: snoozed ? iso(row.snoozedUntil) : null,
    last_notified_at: iso(row.lastNotifiedAt),
    events_count: row.eventsCount,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    url: `${base(webAppUrl)}/alerts/${row.id}`,
  };
}

export function presentTestRun(row: Row<typeof testRuns>, webAppUrl: string) {
  return {
    number: row.number,
    project_id: row.projectId,
    status: row.status,
    failure_reason: row.failureReason,
    result: row.result,
    branch: row.branch,
    commit_sha: row.commitSha,
    base_commit_sha: row.baseCommitSha,
    build_id: row.buildId,
    build_url: row.buildUrl,
    variant: row.variant,
    tags: row.tags,
    started_at: iso(row.startedAt),
    created_at: row.createdAt.toISOString(),
    processed_at: iso(row.processedAt),
    duration_ms: row.durationMs,
    tests_count: row.testsCount,
    passed_count: row.passedCount,
    failed_count: row.failedCount,
    errored_count: row.erroredCount,
    skipped_count: row.skippedCount,
    quarantined_failures_count: row.quarantinedFailuresCount,
    run_key: row.runKey,
    shard_total: row.shardTotal,
    parts_count: row.partsCount,
    completed_at: iso(row.completedAt),
    passed_on_retry_count: row.passedOnRetryCount,
    failed_attempts_duration_ms: row.failedAttemptsDurationMs,
    verdict_counts: row.verdictCounts,
    url: `${base(webAppUrl)}/projects/${row.projectId}/runs/${row.number}`,
  };
}

export function presentAlertEvent(event: Row<typeof alertEvents>, run: Row<typeof testRuns>, webAppUrl: string) {
  return {
    id: event.id,
    alert_id: event.alertId,
    metadata: event.metadata,
    triggered_at: event.triggeredAt.toISOString(),
    test_run: presentTestRun(run, webAppUrl),
  };
}

export function presentTestSuite(row: Row<typeof testSuites>) {
  return {
    number: row.number,
    parent_number: row.parentNumber,
    name: row.name,
    duration_ms: row.durationMs,
    tests_count: row.testsCount,
    passed_count: row.passedCount,
    failed_count: row.failedCount,
    errored_count: row.erroredCount,
    skipped_count: row.skippedCount,
  };
}

const isFailure = (status: string) => status === "failed" || status === "errored";

export function presentTestCase(row: Row<typeof testCases>, run: Pick<Row<typeof testRuns>, "projectId" | "number">, webAppUrl: string) {
  return {
    id: row.id,
    project_id: run.projectId,
    test_run_number: run.number,
    suite_number: row.suiteNumber,
    test_id: row.testId,
    name: row.name,
    classname: row.classname,
    file: row.file,
    status: row.status,
    duration_ms: row.durationMs,
    failure_type: row.failureType,
    failure_message: row.failureMessage,
    failure_text: row.failureText,
    attempts: row.attempts,
    quarantined: row.quarantined,
    system_out: row.systemOut,
    system_err: row.systemErr,
    // The run's page; a failure's at its anchor (the page lists the run's failures, each with `id="case-ID"`); a passed or
    // skipped case's the page itself, which lists no passed cases (docs/web-app.md).
    url: `${base(webAppUrl)}/projects/${run.projectId}/runs/${run.number}${isFailure(row.status) ? `#case-${row.id}` : ""}`,
  };
}

/**
 * A failed or errored case of a processed run as the uploader's `include=failed_tests` gives it
 * (GET /uploads/v1/test_runs/{number}): the test it is an execution of, with the test's page.
 */
export function presentRunFailedTest(
  row: Pick<Row<typeof testCases>, "testId" | "classname" | "name" | "file" | "status" | "quarantined">,
  projectId: string,
  webAppUrl: string,
) {
  return {
    test_id: row.testId,
    classname: row.classname,
    name: row.name,
    file: row.file,
    status: row.status,
    quarantined: row.quarantined,
    url: `${base(webAppUrl)}/projects/${projectId}/tests/${row.testId}`,
  };
}

/** A run as the test views embed it: enough to place an execution or a transition. */
export function presentTestRunSummary(
  run: Pick<Row<typeof testRuns>, "projectId" | "number" | "branch" | "commitSha" | "createdAt">,
  webAppUrl: string,
) {
  return {
    number: run.number,
    branch: run.branch,
    commit_sha: run.commitSha,
    created_at: run.createdAt.toISOString(),
    url: `${base(webAppUrl)}/projects/${run.projectId}/runs/${run.number}`,
  };
}

/** A quarantine is in force until it expires: judged against `now`, so an expired one needs no job to end it. */
function isQuarantined(expiresAt: Date | null, now: Date): boolean {
  return expiresAt !== null && expiresAt.getTime() > now.getTime();
}

/** The test's quarantine in force, or null (never quarantined, unquarantined or expired). */
function presentQuarantine(row: Row<typeof tests>, now: Date) {
  if (!isQuarantined(row.quarantineExpiresAt, now)) return null;
  return {
    reason: row.quarantineReason!,
    owner: row.quarantineOwner,
    issue_url: row.quarantineIssueUrl,
    created_at: row.quarantineCreatedAt!.toISOString(),
    expires_at: row.quarantineExpiresAt!.toISOString(),
    source: row.quarantineSource!,
    all_variants: row.quarantineAllVariants,
    quarantined_by: presentQuarantinedBy(row),
  };
}

/** Who quarantined the test, as recorded then (docs/quarantine.md, "Who quarantined it"); null before it was recorded. */
function presentQuarantinedBy(row: Row<typeof tests>) {
  if (row.quarantineVia === null) return null;
  return { via: row.quarantineVia, id: row.quarantineActorId, name: row.quarantineActorName, email: row.quarantineActorEmail };
}

/**
 * `window` says what the rates cover: the last executions on the project's default branch.
 * `quarantined` is derived from the quarantine's end at `now`, like an alert's `snoozed`.
 */
export function presentTest(row: Row<typeof tests>, window: { size: number; branch: string | null }, webAppUrl: string, now: Date) {
  const quarantine = presentQuarantine(row, now);
  return {
    id: row.id,
    project_id: row.projectId,
    name: row.name,
    classname: row.classname,
    file: row.file,
    variant: row.variant,
    owners: row.owners,
    suite: row.suite,
    health: row.health,
    health_changed_at: iso(row.healthChangedAt),
    executions_count: row.executionsCount,
    failing_streak: row.failingStreak,
    last_status: row.lastStatus,
    last_executed_at: iso(row.lastExecutedAt),
    last_failed_at: iso(row.lastFailedAt),
    first_seen_at: row.firstSeenAt.toISOString(),
    failure_rate: row.failureRate,
    flip_rate: row.flipRate,
    impact: row.impact,
    passed_on_retry_count: row.passedOnRetryCount,
    duration_p50_ms: row.durationP50Ms,
    duration_p95_ms: row.durationP95Ms,
    window: { executions: row.windowSize, max_executions: window.size, branch: window.branch },
    quarantined: quarantine !== null,
    quarantine,
    url: `${base(webAppUrl)}/projects/${row.projectId}/tests/${row.id}`,
  };
}

/** An item of the CI's quarantine list (GET /uploads/v1/quarantined_tests): what a runner needs to match its failures. */
export function presentQuarantinedTestForCi(
  row: Pick<Row<typeof tests>, "id" | "classname" | "name" | "file"> & {
    reason: string | null;
    expiresAt: Date | null;
    allVariants: boolean;
    variant: string;
  },
) {
  return {
    test_id: row.id,
    classname: row.classname,
    name: row.name,
    file: row.file,
    variant: row.variant,
    all_variants: row.allVariants,
    reason: row.reason!,
    expires_at: row.expiresAt!.toISOString(),
  };
}

export function presentHealthTransition(
  row: Row<typeof testHealthTransitions>,
  run: Parameters<typeof presentTestRunSummary>[0],
  webAppUrl: string,
) {
  return {
    id: row.id,
    test_id: row.testId,
    from: row.fromHealth,
    to: row.toHealth,
    reason: row.reason,
    test_run: presentTestRunSummary(run, webAppUrl),
    created_at: row.createdAt.toISOString(),
  };
}
