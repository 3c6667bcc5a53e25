/**
 * Fixtures of the conditional-GET tests (etags.*.test.ts): an organization with a project, a
 * processed run whose cases pass, fail and flip (so every list has rows), and every GET of
 * /api/v1 on it.
 */
import { expect } from "vitest";
import type { Harness } from "../../support/harness";

export const ETAG = /^"[A-Za-z0-9_-]{24}"$/;

const caseOf = (name: string, status: "passed" | "failed") => ({
  name,
  classname: "pkg.Tests",
  status,
  durationMs: 10,
  failureMessage: status === "failed" ? "expected 1 to be 2" : null,
});

/** A run on `main` with a passing and a failing test, a commit of its own (or the one given). */
export async function processRun(
  h: Harness,
  projectId: string,
  outcome: "passed" | "failed" = "failed",
  commitSha = `sha-${Math.random().toString(16).slice(2)}`,
) {
  h.clock.advance(60_000);
  return h.newRun(projectId, {
    meta: { branch: "main", commitSha },
    report: { suites: [{ name: "suite", cases: [caseOf("steady", "passed"), caseOf("shaky", outcome)] }] },
  });
}

export async function etagFixture(h: Harness) {
  const { organization, apiKey } = await h.newOrganization("Conditional");
  const { project, alertIds } = await h.newProject(organization.id, "etags");
  const projectId = project.id as string;
  // The same commit passes then fails: `shaky` turns flaky (a health transition) and fails (a failure group).
  await processRun(h, projectId, "passed", "same-commit");
  const run = await processRun(h, projectId, "failed", "same-commit");
  const get = async (path: string) => {
    const res = await h.get(`/api/v1${path}`, apiKey);
    expect(res.status, `${path}: ${res.text}`).toBe(200);
    return res.body;
  };
  const tests = await get(`/projects/${projectId}/tests?sort=name`);
  const shaky = tests.data.find((t: { name: string }) => t.name === "shaky");
  const cases = await get(`/projects/${projectId}/test_runs/${run.number}/test_suites/1/test_cases`);
  const alertId = alertIds.test_flakiness!;
  await h.newEvent(alertId, run.id);
  return {
    organizationId: organization.id as string,
    apiKey,
    projectId,
    runNumber: run.number as number,
    testId: shaky.id as string,
    caseId: cases.data[0].id as number,
    alertId,
  };
}

export type EtagFixture = Awaited<ReturnType<typeof etagFixture>>;

/** Every GET of /api/v1 (the streamed exports aside), on the fixture's resources. */
export function everyGet(f: EtagFixture): string[] {
  const run = `/projects/${f.projectId}/test_runs/${f.runNumber}`;
  return [
    "/organization",
    "/projects",
    "/projects?limit=1",
    `/projects/${f.projectId}`,
    "/alerts",
    "/alerts?status=all",
    `/alerts/${f.alertId}`,
    `/alerts/${f.alertId}/events`,
    `/projects/${f.projectId}/test_runs`,
    run,
    `${run}/test_suites`,
    `${run}/test_suites/1/test_cases`,
    `/test_cases/${f.caseId}`,
    `${run}/failure_groups`,
    `/projects/${f.projectId}/failure_groups`,
    `/projects/${f.projectId}/tests`,
    `/tests/${f.testId}`,
    `/tests/${f.testId}/executions`,
    `/tests/${f.testId}/health_transitions`,
    `/tests/${f.testId}/failure_groups`,
    `/projects/${f.projectId}/flakiness_cost`,
    `/projects/${f.projectId}/flakiness_cost?from=2026-01-01&to=2026-12-31`,
    `/tests/${f.testId}/flakiness_cost`,
  ];
}

/** GET with an optional If-None-Match. */
export function conditionalGet(h: Harness, path: string, apiKey: string, ifNoneMatch?: string) {
  return h.get(`/api/v1${path}`, apiKey, ifNoneMatch === undefined ? {} : { headers: { "if-none-match": ifNoneMatch } });
}

/** The current tag of each path (a 200 each). */
export async function tagsOf(h: Harness, paths: string[], apiKey: string): Promise<Map<string, string>> {
  const tags = new Map<string, string>();
  for (const path of paths) {
    const res = await conditionalGet(h, path, apiKey);
    expect(res.status, `${path}: ${res.text}`).toBe(200);
    const etag = res.headers.get("etag");
    expect(etag, path).toMatch(ETAG);
    tags.set(path, etag!);
  }
  return tags;
}

/** Each path answers 304 to its tag: nothing it shows has changed. */
export async function expectUnchanged(h: Harness, tags: Map<string, string>, apiKey: string) {
  for (const [path, etag] of tags) {
    const res = await conditionalGet(h, path, apiKey, etag);
    expect(res.status, `${path} should be unchanged`).toBe(304);
  }
}

/** Each path answers 200 with a new tag to its old one. */
export async function expectChanged(h: Harness, tags: Map<string, string>, apiKey: string) {
  for (const [path, etag] of tags) {
    const res = await conditionalGet(h, path, apiKey, etag);
    expect(res.status, `${path} should have changed`).toBe(200);
    expect(res.headers.get("etag"), path).toMatch(ETAG);
    expect(res.headers.get("etag"), path).not.toBe(etag);
  }
}
