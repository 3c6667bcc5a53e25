/**
 * A run in parts completes by itself after its quiet period (docs/uploads.md, "Runs in parts"):
 * the sweep (the Worker's cron, Node's timer: queueDueCompletions) queues it once its last part is
 * older than RUN_QUIET_PERIOD_SECONDS, never before; parts never read are queued again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runQuietPeriodMsFrom } from "../../../src/lib/run-quiet-period";
import { queueDueCompletions } from "../../../src/services/runs/run-parts";
import { RUN_STALLED_AFTER_MS } from "../../../src/services/stalled-work";
import { createHarness, type Harness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>> & { queue: { idle(): Promise<void> } };
beforeAll(async () => {
  h = (await createHarness({ overrides: { runQuietPeriodMs: 120_000 } })) as typeof h;
});
afterAll(() => h.close());

const xml = (name: string, status: "passed" | "failed") =>
  `<testsuite name="s"><testcase classname="C" name="${name}">${status === "failed" ? "<failure message='no'/>" : ""}</testcase></testsuite>`;

const sweep = () =>
  queueDueCompletions({ db: h.db, clock: h.clock, queue: h.queue as never }, { stalledAfterMs: RUN_STALLED_AFTER_MS, limit: 500 });

describe("the quiet period", () => {
  it("completes a run in parts RUN_QUIET_PERIOD_SECONDS after its last part, not before", async () => {
    const { organization } = await (h as Harness).newOrganization();
    const { uploadToken } = await h.newProject(organization.id);
    const first = await h.upload(uploadToken, xml("a", "passed"), { query: "run_key=nightly-3" });
    h.clock.advance(100_000);
    await h.upload(uploadToken, xml("b", "failed"), { query: "run_key=nightly-3" });
    await h.queue.idle();
    h.clock.advance(100_000); // 100 s after the last part: the quiet period (120 s) runs from it
    // The sweep is the whole database's: what it did is read on this test's own run.
    await sweep();
    await h.queue.idle();
    expect((await h.get(`/uploads/v1/test_runs/${first.body.number}`, uploadToken)).body).toMatchObject({
      status: "pending",
      tests_count: 2,
    });
    h.clock.advance(20_001);
    expect(await sweep()).toBeGreaterThanOrEqual(1);
    await h.queue.idle();
    const run = (await h.get(`/uploads/v1/test_runs/${first.body.number}`, uploadToken)).body;
    expect(run).toMatchObject({ status: "processed", tests_count: 2, failed_count: 1, parts_count: 2 });
    expect(run.completed_at).toBe(h.clock.now().toISOString());
    // Done: a later sweep leaves it as it is.
    h.clock.advance(RUN_STALLED_AFTER_MS);
    await sweep();
    await h.queue.idle();
    expect((await h.get(`/uploads/v1/test_runs/${first.body.number}`, uploadToken)).body).toEqual(run);
  });
});

describe("RUN_QUIET_PERIOD_SECONDS", () => {
  it("defaults to 10 minutes; takes whole seconds from 10 to 86400; anything else stops the start", () => {
    expect(runQuietPeriodMsFrom(undefined)).toBe(600_000);
    expect(runQuietPeriodMsFrom(" ")).toBe(600_000);
    expect(runQuietPeriodMsFrom("45")).toBe(45_000);
    for (const bad of ["9", "86401", "1.5", "-60", "10m", "1e3"])
      expect(() => runQuietPeriodMsFrom(bad), bad).toThrow(/^RUN_QUIET_PERIOD_SECONDS must be a whole number of seconds from 10 to 86400/);
  });
});
