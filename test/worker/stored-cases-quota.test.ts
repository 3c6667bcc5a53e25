/**
 * QUOTA_STORED_CASES on the Worker (docs/quotas.md): read from its vars, checked by the statement
 * that finds the upload token's project (through the Neon driver), before the body goes to the
 * bucket. Once an organization's processed runs hold the quota's cases, a JUnit or JSON upload is a
 * 429 `quota_exceeded` without Retry-After and nothing is recorded; another organization uploads.
 * The Worker's fetch handler is built here with the var set, beside the test Worker (SELF) which
 * runs with the default quota and consumes the queue.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, beforeAll, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { projects, testRuns } from "../../src/db/schema";
import { createWorkerHandler } from "../../src/worker/index";
import { type Harness, createHarness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const worker = createWorkerHandler();
const quotaEnv = { ...env, QUOTA_STORED_CASES: "4" };

const junitOf = (cases: number) =>
  `<testsuite name="s">${Array.from({ length: cases }, (_, i) => `<testcase classname="c" name="t${i}"/>`).join("")}</testsuite>`;
const envelopeOf = (cases: number) =>
  JSON.stringify({ suites: [{ name: "s", cases: Array.from({ length: cases }, (_, i) => ({ name: `j${i}`, status: "passed" })) }] });

/** POST /uploads/v1/test_runs through the Worker whose vars set QUOTA_STORED_CASES = 4. */
async function upload(token: string, body: string, contentType: "application/xml" | "application/json") {
  const ctx = createExecutionContext();
  const response = await worker.fetch!(
    new Request("http://worker.test/uploads/v1/test_runs", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": contentType },
      body,
    }) as never,
    quotaEnv,
    ctx,
  );
  const answer = { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
  await waitOnExecutionContext(ctx);
  return answer;
}

async function processed(projectId: string, number: number) {
  const run = async () =>
    (
      await h.db
        .select()
        .from(testRuns)
        .where(and(eq(testRuns.projectId, projectId), eq(testRuns.number, number)))
    )[0];
  for (let i = 0; i < 1200 && (await run())?.status === "pending"; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  return run();
}

it("refuses JUnit and JSON uploads with a 429 quota_exceeded once the organization stores the quota's cases; another organization uploads", async () => {
  const { organization } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);

  const first = await upload(uploadToken, junitOf(3), "application/xml");
  expect(first.status).toBe(202);
  expect(await processed(project.id, first.body.number)).toMatchObject({ status: "processed", testsCount: 3 });
  // 3 stored, below 4: accepted, and crosses the quota.
  const second = await upload(uploadToken, envelopeOf(2), "application/json");
  expect(second.status).toBe(202);
  expect(await processed(project.id, second.body.number)).toMatchObject({ status: "processed", testsCount: 2 });
  const [counter] = await h.db.select({ stored: projects.storedCasesCount }).from(projects).where(eq(projects.id, project.id));
  expect(counter?.stored).toBe(5);

  for (const [body, type] of [
    [junitOf(1), "application/xml"],
    [envelopeOf(1), "application/json"],
  ] as const) {
    const refused = await upload(uploadToken, body, type);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("quota_exceeded");
    expect(refused.body.error.message).toContain("quota of 4 stored cases (QUOTA_STORED_CASES)");
    expect(refused.headers.get("retry-after")).toBeNull();
  }
  const [recorded] = await h.db.select({ runs: projects.testRunsCount }).from(projects).where(eq(projects.id, project.id));
  expect(recorded?.runs).toBe(2);

  const other = await h.newOrganization();
  const theirs = await h.newProject(other.organization.id);
  expect((await upload(theirs.uploadToken, junitOf(1), "application/xml")).status).toBe(202);
});
