/**
 * Runs in parts (docs/uploads.md, "Runs in parts"): uploads with one run_key join one run, which
 * stays pending with its counts so far until its declared shards are in (or the uploader says it
 * is complete), then is stored once from every readable part; later parts are refused (409), a
 * part's retried upload (same Idempotency-Key) is not a new part, an unreadable part is left out
 * with its reason. Node and workerd.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

/** One shard's JUnit report: `count` tests of its own, the first `failing` of them failing. */
const shardXml = (shard: number, count: number, failing = 0) =>
  `<testsuite name="shard ${shard}" time="${shard}.5">${Array.from({ length: count }, (_, i) =>
    i < failing
      ? `<testcase classname="app.Shard${shard}" name="t${i}"><failure message="boom ${i}">at x</failure></testcase>`
      : `<testcase classname="app.Shard${shard}" name="t${i}" time="0.01"/>`,
  ).join("")}</testsuite>`;

const query = (fields: Record<string, string>) => new URLSearchParams({ branch: "main", commit_sha: "c0ffee1234", ...fields }).toString();

/** Waits until the run leaves `pending` (its completion is processed in the background). */
async function settled(token: string, number: number) {
  for (let i = 0; i < 500; i++) {
    const run = await h.get(`/uploads/v1/test_runs/${number}`, token);
    if (run.body.status !== "pending") return run.body;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`run ${number} still pending`);
}

/** Waits until the run's parts are all read (none pending), and returns them, the latest first. */
async function partsRead(apiKey: string, projectId: string, number: number) {
  for (let i = 0; i < 500; i++) {
    const parts = (await collectAll(h, `/api/v1/projects/${projectId}/test_runs/${number}/parts`, apiKey, 100)).items;
    if (parts.every((part: any) => part.status !== "pending")) return parts;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`parts of run ${number} still unread`);
}

async function newProject() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  return { apiKey, projectId: project.id as string, token: uploadToken as string };
}

describe("a build in four shards is one run", () => {
  it("pending with its counts so far until the fourth shard, then stored once from all four", async () => {
    const { apiKey, projectId, token } = await newProject();
    const numbers: number[] = [];
    for (const shard of [2, 1, 3]) {
      h.clock.advance(1_000);
      const res = await h.upload(token, shardXml(shard, 5, shard === 3 ? 2 : 0), {
        query: query({ run_key: "build-7/test", shard: `${shard}/4` }),
      });
      expect(res.status, res.text).toBe(202);
      numbers.push(res.body.number);
    }
    expect(new Set(numbers).size).toBe(1);
    const number = numbers[0]!;
    const parts = await partsRead(apiKey, projectId, number);
    expect(parts.map((part: any) => [part.number, part.shard_index, part.status, part.tests_count, part.failed_count])).toEqual([
      [3, 3, "ready", 5, 2],
      [2, 1, "ready", 5, 0],
      [1, 2, "ready", 5, 0],
    ]);
    const pending = await h.get(`/api/v1/projects/${projectId}/test_runs/${number}`, apiKey);
    expect(pending.body).toMatchObject({
      status: "pending",
      result: null,
      run_key: "build-7/test",
      shard_total: 4,
      parts_count: 3,
      completed_at: null,
      tests_count: 15,
      failed_count: 2,
    });

    h.clock.advance(1_000);
    const last = await h.upload(token, shardXml(4, 5, 1), { query: query({ run_key: "build-7/test", shard: "4/4" }) });
    expect(last.body.number).toBe(number);
    const run = await settled(token, number);
    expect(run).toMatchObject({
      status: "processed",
      result: "tests_failed",
      tests_count: 20,
      passed_count: 17,
      failed_count: 3,
      parts_count: 4,
    });
    // The longest shard's time: shards run side by side.
    expect(run.duration_ms).toBe(4500);
    expect(run.completed_at).not.toBeNull();
    // One run in the list, its suites the union of the shards', its comparison made once.
    const runs = (await collectAll(h, `/api/v1/projects/${projectId}/test_runs`, apiKey, 100)).items;
    expect(runs.map((r: any) => r.number)).toEqual([number]);
    const suites = (await collectAll(h, `/api/v1/projects/${projectId}/test_runs/${number}/test_suites`, apiKey, 100)).items;
    expect(suites.map((s: any) => s.name).sort()).toEqual(["shard 1", "shard 2", "shard 3", "shard 4"]);
    const comparison = await h.get(`/api/v1/projects/${projectId}/test_runs/${number}/comparison`, apiKey);
    expect(comparison.body.verdict_counts).toMatchObject({ new: 3 });
    const tests = (await collectAll(h, `/api/v1/projects/${projectId}/tests`, apiKey, 100)).items;
    expect(tests).toHaveLength(20);
    expect(tests.every((t: any) => t.window.executions === 1)).toBe(true);

    // Complete: a fifth part is refused, and records nothing.
    const late = await h.upload(token, shardXml(5, 1), { query: query({ run_key: "build-7/test" }) });
    expect(late.status).toBe(409);
    expect(late.body.error).toMatchObject({ code: "run_completed" });
    expect(late.body.error.message).toMatch(/^Test run #\d+ \(run_key "build-7\/test"\) is complete/);
    expect((await h.get(`/api/v1/projects/${projectId}/test_runs/${number}`, apiKey)).body.parts_count).toBe(4);
  });

  it("a part's retried upload (same Idempotency-Key) is the same part; an unreadable part is left out with its reason", async () => {
    const { apiKey, projectId, token } = await newProject();
    const send = (xml: string, shard: string, key: string) =>
      h.upload(token, xml, { query: query({ run_key: "ci-9", shard }), headers: { "idempotency-key": key } });
    const first = await send(shardXml(1, 3), "1/3", "part-1");
    const again = await send(shardXml(1, 3), "1/3", "part-1");
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.number).toBe(first.body.number);
    await send("<testsuite><testcase name=", "2/3", "part-2");
    await send(shardXml(3, 2), "3/3", "part-3");
    const run = await settled(token, first.body.number);
    expect(run).toMatchObject({ status: "processed", parts_count: 3, tests_count: 5 });
    const parts = await partsRead(apiKey, projectId, run.number);
    expect(parts.map((part: any) => [part.shard_index, part.status])).toEqual([
      [3, "ready"],
      [2, "failed"],
      [1, "ready"],
    ]);
    expect(parts[1].failure_reason).toMatch(/XML/);
  });
});

describe("retry parts: a re-run of failed tests", () => {
  /** Shard 1 fails t0 and t1, shard 2 passes; the retry passes t0, fails t1 again and adds a test the run did not have. */
  const retryXml = `<testsuite name="rerun"><testcase classname="app.Shard1" name="t0" time="0.03"/><testcase classname="app.Shard1" name="t1" time="0.02"><failure message="boom again">at x</failure></testcase><testcase classname="app.Extra" name="late"/></testsuite>`;

  async function expectMerged(apiKey: string, projectId: string, token: string, number: number, retryPart: number) {
    const run = await settled(token, number);
    for (let i = 0; i < 500 && (await partsRead(apiKey, projectId, number)).some((p: any) => p.retry && p.status !== "ready"); i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const merged = (await h.get(`/api/v1/projects/${projectId}/test_runs/${number}`, apiKey)).body;
    expect(merged).toMatchObject({
      status: "processed",
      tests_count: 11,
      passed_count: 10,
      failed_count: 1,
      result: "tests_failed",
      passed_on_retry_count: 1,
      parts_count: 3,
    });
    // The earlier outcomes of t0 and t1 are failed attempts now; shardXml gives a failing case no time.
    expect(merged.failed_attempts_duration_ms).toBe(0);
    const suites = (await collectAll(h, `/api/v1/projects/${projectId}/test_runs/${number}/test_suites`, apiKey, 100)).items;
    const retrySuite = suites.find((s: any) => s.name === `retry (part ${retryPart})`);
    expect(retrySuite).toMatchObject({ tests_count: 1, passed_count: 1 });
    const shard1 = suites.find((s: any) => s.name === "shard 1");
    expect(shard1).toMatchObject({ tests_count: 5, passed_count: 4, failed_count: 1 });
    const cases = (
      await collectAll(h, `/api/v1/projects/${projectId}/test_runs/${number}/test_suites/${shard1.number}/test_cases`, apiKey, 100)
    ).items;
    const t0 = cases.find((c: any) => c.name === "t0");
    expect(t0).toMatchObject({ status: "passed", duration_ms: 30 });
    expect(t0.attempts.map((a: any) => [a.status, a.failure_message])).toEqual([["failed", "boom 0"]]);
    const t1 = cases.find((c: any) => c.name === "t1");
    expect(t1).toMatchObject({ status: "failed", failure_message: "boom again" });
    expect(t1.attempts.map((a: any) => [a.status, a.failure_message])).toEqual([["failed", "boom 1"]]);
    // Compared again: t0 passed on retry (flaky), t1 is still new.
    const comparison = (await h.get(`/api/v1/projects/${projectId}/test_runs/${number}/comparison`, apiKey)).body;
    expect(comparison.verdict_counts).toMatchObject({ new: 1, flaky: 1 });
    expect(run.status).toBe("processed");
    // The tests: t0's failure in the run is a pass on retry in its window, and t0 flaky (a pass and a failure in one run); t1 is left as it was.
    const tests = (await collectAll(h, `/api/v1/projects/${projectId}/tests?sort=name`, apiKey, 100)).items;
    const test = (name: string) => tests.find((t: any) => t.classname === "app.Shard1" && t.name === name);
    expect(test("t0")).toMatchObject({
      health: "flaky",
      passed_on_retry_count: 1,
      failure_rate: 0,
      impact: 0,
      last_status: "passed",
      window: { executions: 1 },
    });
    expect(test("t1")).toMatchObject({ health: "healthy", passed_on_retry_count: 0, failure_rate: 1, impact: 1, last_status: "failed" });
    const transitions = (await h.get(`/api/v1/tests/${test("t0").id}/health_transitions`, apiKey)).body.data;
    expect(transitions.map((t: any) => [t.from, t.to, t.reason, t.test_run.number])).toEqual([
      ["healthy", "flaky", "passed and failed in run #" + number + " (commit c0ffee1234), passed on retry", number],
    ]);
    expect((await h.get(`/api/v1/projects/${projectId}`, apiKey)).body.flaky_tests_count).toBe(1);
  }

  it("after the run completed: its cases become further attempts, the run is counted and compared again", async () => {
    const { apiKey, projectId, token } = await newProject();
    const a = await h.upload(token, shardXml(1, 5, 2), { query: query({ run_key: "ci-41", shard: "1/2" }) });
    await h.upload(token, shardXml(2, 5), { query: query({ run_key: "ci-41", shard: "2/2" }) });
    const first = await settled(token, a.body.number);
    expect(first).toMatchObject({ status: "processed", failed_count: 2, passed_on_retry_count: 0 });
    const retry = await h.upload(token, retryXml, { query: query({ run_key: "ci-41", retry: "true" }) });
    expect(retry.status, retry.text).toBe(202);
    expect(retry.body.number).toBe(a.body.number);
    await expectMerged(apiKey, projectId, token, a.body.number, 3);
  });

  it("before the run completed: it waits, and is merged once the run is stored", async () => {
    const { apiKey, projectId, token } = await newProject();
    const a = await h.upload(token, shardXml(1, 5, 2), { query: query({ run_key: "ci-42", shard: "1/2" }) });
    await h.upload(token, retryXml, { query: query({ run_key: "ci-42", retry: "true" }) });
    expect((await h.get(`/uploads/v1/test_runs/${a.body.number}`, token)).body.status).toBe("pending");
    await h.upload(token, shardXml(2, 5), { query: query({ run_key: "ci-42", shard: "2/2" }) });
    await expectMerged(apiKey, projectId, token, a.body.number, 2);
  });

  it("a retry needs a run key; a run of one upload takes none", async () => {
    const { token } = await newProject();
    const res = await h.upload(token, retryXml, { query: query({ retry: "true" }) });
    expect(res.status).toBe(422);
    expect(res.body.error.details).toEqual([{ field: "retry", message: "needs a run_key: it describes a part of a run" }]);
    const bad = await h.upload(token, retryXml, { query: query({ run_key: "k", retry: "yes" }) });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details).toEqual([{ field: "retry", message: "must be true or false" }]);
  });
});

describe("completion without a shard count", () => {
  it("POST …/complete ends the run: it is stored from the parts in, and asking again is harmless", async () => {
    const { token } = await newProject();
    const a = await h.upload(token, shardXml(1, 2), { query: query({ run_key: "nightly" }) });
    await h.upload(token, shardXml(2, 2, 1), { query: query({ run_key: "nightly" }) });
    const pending = await h.get(`/uploads/v1/test_runs/${a.body.number}`, token);
    expect(pending.body).toMatchObject({ status: "pending", shard_total: null, parts_count: 2 });
    const complete = await h.post(`/uploads/v1/test_runs/${a.body.number}/complete`, token);
    expect(complete.status, complete.text).toBe(202);
    expect(complete.body.completed_at).not.toBeNull();
    const run = await settled(token, a.body.number);
    expect(run).toMatchObject({ status: "processed", tests_count: 4, failed_count: 1, result: "tests_failed" });
    const twice = await h.post(`/uploads/v1/test_runs/${a.body.number}/complete`, token);
    expect(twice.status).toBe(202);
    expect(twice.body.completed_at).toBe(complete.body.completed_at);
  });

  it("a run of one upload has nothing to complete (409), another project's run is not found", async () => {
    const { token } = await newProject();
    const other = await newProject();
    const single = await h.uploadAndWait(token, shardXml(1, 1), { query: query({}) });
    const res = await h.post(`/uploads/v1/test_runs/${single.number}/complete`, token);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: "run_completed" });
    expect((await h.post(`/uploads/v1/test_runs/${single.number}/complete`, other.token)).status).toBe(404);
  });
});

describe("bad run keys and shards are refused, recording nothing", () => {
  it("shard without run_key, malformed shards, a run key too long", async () => {
    const { apiKey, projectId, token } = await newProject();
    for (const [fields, field, message] of [
      [{ shard: "1/2" }, "shard", /needs a run_key/],
      [{ run_key: "k", shard: "3/2" }, "shard", /must be I\/N/],
      [{ run_key: "k", shard: "0/2" }, "shard", /must be I\/N/],
      [{ run_key: "k", shard: "1/1001" }, "shard", /must be I\/N/],
      [{ run_key: "k", shard: "two" }, "shard", /must be I\/N/],
      [{ run_key: "x".repeat(256) }, "run_key", /too long/],
      [{ run_key: "a\u0007b" }, "run_key", /control characters/],
    ] as const) {
      const res = await h.upload(token, shardXml(1, 1), { query: query(fields) });
      expect(res.status, JSON.stringify(fields)).toBe(422);
      expect(res.body.error.details, JSON.stringify(fields)).toEqual([{ field, message: expect.stringMatching(message) }]);
    }
    // The JSON envelope takes them too.
    const json = await h.upload(token, { run_key: "j", shard: "1/1", suites: [{ name: "s", cases: [{ name: "a", status: "passed" }] }] });
    expect(json.status).toBe(202);
    const run = await settled(token, json.body.number);
    expect(run).toMatchObject({ run_key: "j", shard_total: 1, parts_count: 1, status: "processed" });
    expect((await collectAll(h, `/api/v1/projects/${projectId}/test_runs`, apiKey, 100)).items.length).toBe(1);
  });
});
