/**
 * acceptUpload under concurrency: uploads retried at once with the same Idempotency-Key (a CI
 * step retried by its runner, an uploader's retry racing a slow first attempt) record one run per
 * key, and every request answers with that run, while the first runs are already being processed.
 *
 * On Postgres this used to deadlock (40P01, a 500) in about one request in ten: an arrival held
 * the project's row (its run counter) and waited on the key's index entry, which the processing of
 * the key's run had just rewritten (marking it processed), while that processing waited for the
 * project's row (its latest result). PGlite, one connection, never interleaves them; the test runs
 * there too and checks the same outcome.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects, testRuns } from "../../../src/db/schema";
import { recordTestRunArrival } from "../../../src/services/runs/test-runs";
import { createHarness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h.close();
});

const KEYS = 5;
const REQUESTS_PER_KEY = 20;
/** Rounds of KEYS × REQUESTS_PER_KEY requests: the race is won often enough in one round to show, not always. */
const ROUNDS = 4;

/** One round: a new project, every request at once, interleaved across keys; then the outcome is checked. */
async function round(n: number) {
  const { organization } = await h.newOrganization(`Concurrent uploads ${n}`);
  const { project, uploadToken } = await h.newProject(organization.id);
  const keys = Array.from({ length: KEYS }, (_, i) => `retry-${i}-${crypto.randomUUID()}`);
  const requests = Array.from({ length: REQUESTS_PER_KEY }, (_, attempt) => keys.map((key) => ({ key, attempt }))).flat();
  // An empty report is processed in a few statements, so processing overlaps the arrivals most.
  const responses = await Promise.all(
    requests.map(async ({ key, attempt }) => ({
      key,
      res: await h.upload(uploadToken, `<testsuite name="attempt ${attempt}"/>`, { headers: { "Idempotency-Key": key } }),
    })),
  );
  await h.queue.idle();

  expect(responses.filter(({ res }) => res.status !== 202).map(({ res }) => `${res.status} ${res.text}`)).toEqual([]);
  const runs = await h.db
    .select({ number: testRuns.number, key: testRuns.idempotencyKey, status: testRuns.status })
    .from(testRuns)
    .where(eq(testRuns.projectId, project.id));
  expect(runs).toHaveLength(KEYS);
  for (const key of keys) {
    const run = runs.find((r) => r.key === key)!;
    expect(run.status).toBe("processed");
    const answers = responses.filter((r) => r.key === key);
    expect(answers.map(({ res }) => res.body.number)).toEqual(Array(REQUESTS_PER_KEY).fill(run.number));
    expect(answers.filter(({ res }) => res.headers.get("idempotent-replayed") !== "true")).toHaveLength(1);
  }
  // Replays allocate no run number.
  const [counter] = await h.db.select({ count: projects.testRunsCount }).from(projects).where(eq(projects.id, project.id));
  expect(counter!.count).toBe(KEYS);
}

describe("concurrent uploads with one Idempotency-Key", () => {
  it(`${REQUESTS_PER_KEY} at once for each of ${KEYS} keys: all 202, one run per key, every answer names that run`, async () => {
    for (let n = 1; n <= ROUNDS; n++) await round(n);
    expect(h.logs.filter((line) => line.includes("40P01") || line.includes("40001"))).toEqual([]);
  });
});

describe("a retried upload whose first try was stored but never queued", () => {
  it("queues the run again, so it is processed without waiting for the stalled-work sweep", async () => {
    const { organization } = await h.newOrganization("Stored, never queued");
    const { project, uploadToken } = await h.newProject(organization.id);
    const key = `lost-${crypto.randomUUID()}`;
    const report = `<testsuite name="s"><testcase classname="c" name="passes"/></testsuite>`;
    // The first try's arrival committed, then its connection went before the message was sent (the client saw a 503).
    const { run } = await recordTestRunArrival(
      h,
      project.id,
      { branch: "main", idempotencyKey: key },
      { format: "junit_xml", content: report },
    );
    await h.queue.idle();
    const [before] = await h.db.select({ status: testRuns.status }).from(testRuns).where(eq(testRuns.id, run.id));
    expect(before!.status).toBe("pending");

    const retried = await h.upload(uploadToken, report, { headers: { "Idempotency-Key": key } });
    expect(retried.status).toBe(202);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    expect(retried.body.number).toBe(run.number);
    await h.queue.idle();
    const [after] = await h.db
      .select({ status: testRuns.status, tests: testRuns.testsCount })
      .from(testRuns)
      .where(eq(testRuns.id, run.id));
    expect(after).toEqual({ status: "processed", tests: 1 });
  });
});
