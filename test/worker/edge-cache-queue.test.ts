/**
 * The queue consumer's writes and the edge cache (docs/edge-path.md, "Edge-cached reads"): a run
 * the consumer processes is bracketed on its organization's cache object, so auto-quarantine (a
 * write made outside any request) can never leave the edge serving the quarantine list from
 * before it. An answer the edge read from the database before the run was processed is refused
 * after it, and what the object held is dropped.
 */
import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects, tests } from "../../src/db/schema";
import type { RunMessage } from "../../src/ingest/run-queue";
import { recordTestRunArrival } from "../../src/services/runs/test-runs";
import { cacheObjectName } from "../../src/worker/edge-cache-bracket";
import type { StoredAnswer } from "../../src/worker/edge-cache-object";
import worker from "./support/worker-entry";
import { type Harness, createHarness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const LIST_BEFORE: StoredAnswer = { status: 200, headers: [["etag", '"before"']], body: '{"data":[]}' };

async function processQueued(testRunId: number, organizationId: string) {
  const batch = createMessageBatch<RunMessage>("ci-analytics-runs", [
    { id: "m0", timestamp: new Date(), attempts: 1, body: { testRunId, organizationId } as RunMessage },
  ]);
  const ctx = createExecutionContext();
  await worker.queue!(batch, env, ctx);
  return getQueueResult(batch, ctx);
}

const report = (status: "passed" | "failed") =>
  `<testsuite name="s"><testcase classname="auto" name="turns flaky">${status === "failed" ? "<failure>boom</failure>" : ""}</testcase></testsuite>`;

describe("the queue consumer's auto-quarantine and the edge cache", () => {
  it("refuses an answer read before the run was processed, and drops what the organization's object held", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    await h.db.update(projects).set({ autoQuarantineDays: 3 }).where(eq(projects.id, project.id));
    const arrive = async (status: "passed" | "failed") =>
      (
        await recordTestRunArrival(
          { db: h.db, clock: h.clock },
          project.id,
          { branch: "main", commitSha: "abc123abc123" },
          {
            format: "junit_xml",
            content: report(status),
          },
        )
      ).run;
    expect((await processQueued((await arrive("passed")).id, organization.id)).explicitAcks).toEqual(["m0"]);

    // The edge holds the list, and another read of it missed and is on its way to the database.
    const cache = env.EDGE_CACHE!.getByName(cacheObjectName(organization.id));
    const held = await cache.lookup("quarantined_tests");
    expect(await cache.store("quarantined_tests", held.ticket!, LIST_BEFORE, null)).toBe(true);
    const inFlight = await cache.lookup("quarantined_tests:variant=");
    expect(inFlight.ticket).not.toBeNull();

    // It failed on the commit it passed on: flaky, auto-quarantined as the consumer processes the run.
    expect((await processQueued((await arrive("failed")).id, organization.id)).explicitAcks).toEqual(["m0"]);
    const [test] = await h.db.select().from(tests).where(eq(tests.projectId, project.id));
    expect(test).toMatchObject({ health: "flaky", quarantineSource: "auto" });

    expect((await cache.lookup("quarantined_tests")).answer).toBeNull();
    expect(await cache.store("quarantined_tests:variant=", inFlight.ticket!, LIST_BEFORE, null)).toBe(false);
    expect(await cache.inspect()).toMatchObject({ bypasses: 0, entries: 0 });
  });
});
