/**
 * The alert checks and quarantined tests (docs/quarantine.md), end to end through uploads and
 * processing: `test_flakiness` keeps checking a quarantined test (its state advances and its
 * health still turns flaky) but records no event for it while it is quarantined;
 * `failure_rate_spike` leaves a quarantined test's failures out of the failing count, not out of
 * the executed total. Node only: it waits for the checks on the in-process queue.
 */
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alertCheckStates } from "../../../src/db/schema";
import { createHarness } from "../../support/harness";
import { uploadMainRun } from "../../support/upload-main-run";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

type Status = "passed" | "failed" | "errored";
type CaseSpec = { name: string; status: Status };

async function newProject() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken, alertIds } = await h.newProject(organization.id);
  return { projectId: project.id as string, apiKey, uploadToken, alertIds };
}

const upload = (uploadToken: string, cases: CaseSpec[], commit: string) => uploadMainRun(h, uploadToken, cases, commit);

async function testId(apiKey: string, projectId: string, name: string) {
  const res = await h.get(`/api/v1/projects/${projectId}/tests?q=${name}`, apiKey);
  return res.body.data.find((t: any) => t.name === name).id as string;
}

const eventsOf = async (apiKey: string, alertId: string) =>
  (await h.get(`/api/v1/alerts/${alertId}/events?limit=100`, apiKey)).body.data as any[];
const quarantine = (apiKey: string, id: string) =>
  h.post(`/api/v1/tests/${id}/quarantine`, apiKey, { reason: "known flaky", duration: "90d" });
const stable = (count: number, from = 0): CaseSpec[] =>
  Array.from({ length: count }, (_, i) => ({ name: `stable_${from + i}`, status: "passed" }));

describe("test_flakiness", () => {
  it("no event for a quarantined test while its state advances and its health turns flaky; the same history unquarantined has events", async () => {
    for (const quarantined of [true, false]) {
      const { projectId, apiKey, uploadToken, alertIds } = await newProject();
      const runs = 26;
      // Passing and failing on alternate commits: only the check's history rule can call it flaky.
      const caseOf = (i: number): CaseSpec[] => [...stable(5), { name: "wobbles", status: i % 2 === 0 ? "passed" : "failed" }];
      await upload(uploadToken, caseOf(0), "commit0000");
      const wobbles = await testId(apiKey, projectId, "wobbles");
      if (quarantined) expect((await quarantine(apiKey, wobbles)).status).toBe(200);
      for (let i = 1; i < runs; i++) await upload(uploadToken, caseOf(i), `commit${String(i).padStart(4, "0")}`);

      const test = (await h.get(`/api/v1/tests/${wobbles}`, apiKey)).body;
      expect(test, `quarantined: ${quarantined}`).toMatchObject({ health: "flaky", quarantined });
      const transitions = (await h.get(`/api/v1/tests/${wobbles}/health_transitions`, apiKey)).body.data;
      expect(transitions.at(-1)).toMatchObject({ from: "healthy", to: "flaky", reason: expect.stringContaining("flakiness check") });
      const [state] = await h.db
        .select({ runsChecked: alertCheckStates.runsChecked })
        .from(alertCheckStates)
        .where(and(eq(alertCheckStates.projectId, projectId), eq(alertCheckStates.alertType, "test_flakiness")));
      expect(state!.runsChecked).toBe(runs);
      const named = (await eventsOf(apiKey, alertIds.test_flakiness!)).filter((e) => e.metadata.test_id === wobbles);
      if (quarantined) expect(named).toEqual([]);
      else expect(named.length).toBeGreaterThan(0);
    }
  });
});

describe("failure_rate_spike", () => {
  /** 30 quiet runs of 50 tests, then run 31 with 20 of them failing, `quarantinedCount` of those quarantined first. */
  async function spikeWith(quarantinedCount: number) {
    const { projectId, apiKey, uploadToken, alertIds } = await newProject();
    for (let i = 0; i < 30; i++) {
      await upload(uploadToken, [...stable(49), { name: "rarely_fails", status: i === 12 ? "failed" : "passed" }], `quiet${i}`);
    }
    const failing = Array.from({ length: 20 }, (_, i) => `stable_${30 + i}`.replace("stable_49", "rarely_fails"));
    for (const name of failing.slice(0, quarantinedCount))
      expect((await quarantine(apiKey, await testId(apiKey, projectId, name))).status).toBe(200);
    const spike = await upload(uploadToken, [...stable(30), ...failing.map((name) => ({ name, status: "failed" as const }))], "spike");
    expect(spike).toMatchObject({ failed_count: 20, result: "tests_failed", quarantined_failures_count: quarantinedCount });
    return eventsOf(apiKey, alertIds.failure_rate_spike!);
  }

  it("quarantined failures are not counted as failing: 20 of 50 failing, all quarantined, is no spike", async () => {
    expect(await spikeWith(20)).toEqual([]);
  });

  it("they stay in the executed total: 10 quarantined and 10 not, 50 executed, 10 failing", async () => {
    const events = await spikeWith(10);
    expect(events).toHaveLength(1);
    expect(events[0].metadata).toMatchObject({ executed: 50, failed: 10, errored: 0, quarantined_failing_count: 10, failure_rate: 0.2 });
  });
});
