/**
 * GET /uploads/v1/timings and POST /uploads/v1/split_plans (docs/splitting.md): the expected
 * durations from the default branch's recent runs, with an ETag; one plan per build key that every
 * shard gets, whatever the history became; a 409 naming the difference; 24 hours of life.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

type Case = { name: string; file?: string | null; classname?: string | null; status: "passed"; durationMs: number };
const cases = (file: string, ms: number[]): Case[] => ms.map((d, i) => ({ name: `t${i}`, file, status: "passed", durationMs: d }));

async function projectWithHistory() {
  const { organization } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  // Three runs on main: a.test.ts takes 100 + 50 ms of cases, but its suite says 400 (setup included).
  for (const slow of [900, 1000, 5000]) {
    h.clock.advance(60_000);
    await h.newRun(project.id, {
      meta: { branch: "main" },
      report: {
        suites: [
          { name: "a", durationMs: 400, cases: cases("/home/runner/work/app/src/a.test.ts", [100, 50]) },
          { name: "b", cases: cases("/home/runner/work/app/src/b.test.ts", [slow]) },
          { name: "mixed", durationMs: 9999, cases: [...cases("src/c.test.ts", [10]), ...cases("src/d.test.ts", [20])] },
        ],
      },
    });
  }
  // A feature branch's run is not history.
  await h.newRun(project.id, { meta: { branch: "feature" }, report: { suites: [{ name: "x", cases: cases("src/a.test.ts", [99_999]) }] } });
  return { projectId: project.id as string, token: uploadToken };
}

const plan = (token: string, body: Record<string, unknown>) => h.post("/uploads/v1/split_plans", token, body);

describe("timings", () => {
  it("per file, the median over the default branch's runs; a one-file suite's own time; the project's median; an ETag", async () => {
    const { token } = await projectWithHistory();
    const res = await h.get("/uploads/v1/timings", token);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      by: "file",
      variant: "",
      runs_count: 3,
      default_ms: 210,
      data: [
        { key: "/home/runner/work/app/src/a.test.ts", expected_ms: 400, samples: 3 },
        { key: "/home/runner/work/app/src/b.test.ts", expected_ms: 1000, samples: 3 },
        { key: "src/c.test.ts", expected_ms: 10, samples: 3 },
        { key: "src/d.test.ts", expected_ms: 20, samples: 3 },
      ],
    });
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"t-/);
    const again = await h.get("/uploads/v1/timings", token, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect((await h.get("/uploads/v1/timings?by=classname", token)).body.data).toEqual([]);
  });

  it("a bad `by` is a 400 or 422 in the envelope; an API key is a 401", async () => {
    const { token } = await projectWithHistory();
    const res = await h.get("/uploads/v1/timings?by=suite", token);
    expect([400, 422]).toContain(res.status);
    expect(res.body.error.code).toMatch(/invalid_request|validation_failed/);
    expect((await h.get("/uploads/v1/timings", "cta_nope")).status).toBe(401);
  });
});

describe("split plans", () => {
  const items = ["src/a.test.ts", "src/b.test.ts", "src/c.test.ts", "src/d.test.ts", "src/new.test.ts"];

  it("longest first over the matched timings; every later call with the key gets the same plan, even after the history changed", async () => {
    const { projectId, token } = await projectWithHistory();
    const first = await plan(token, { key: "build-1", shards: 2, items });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({
      key: "build-1",
      by: "file",
      shards_count: 2,
      items_count: 5,
      unknown_items_count: 1,
      created: true,
    });
    // b (1000) alone; a (400), new (the median, 210), d (20), c (10) on the other.
    expect(first.body.shards).toEqual([
      { shard: 1, items: ["src/b.test.ts"], expected_ms: 1000 },
      { shard: 2, items: ["src/a.test.ts", "src/new.test.ts", "src/d.test.ts", "src/c.test.ts"], expected_ms: 640 },
    ]);
    h.clock.advance(60_000);
    await h.newRun(projectId, { meta: { branch: "main" }, report: { suites: [{ name: "a", cases: cases("src/a.test.ts", [90_000]) }] } });
    // Another shard, later, lists the items in another order.
    const second = await plan(token, { key: "build-1", shards: 2, items: [...items].reverse() });
    expect(second.status, second.text).toBe(200);
    expect(second.body.created).toBe(false);
    expect(second.body.shards).toEqual(first.body.shards);
    // A new key sees the new history.
    const other = await plan(token, { key: "build-2", shards: 2, items });
    expect(other.body.shards[0].items).toEqual(["src/a.test.ts"]);
  });

  it("other items, shards or kind for a stored key: a 409 that names the difference", async () => {
    const { token } = await projectWithHistory();
    await plan(token, { key: "k", shards: 2, items });
    const res = await plan(token, { key: "k", shards: 2, items: [...items.slice(1), "src/z.test.ts"] });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("split_plan_mismatch");
    expect(res.body.error.message).toContain('1 item(s) not in the plan ("src/z.test.ts")');
    expect(res.body.error.message).toContain('1 item(s) of the plan missing ("src/a.test.ts")');
    const shards = await plan(token, { key: "k", shards: 3, items });
    expect(shards.status).toBe(409);
    expect(shards.body.error.message).toContain("into 2 shards");
  });

  it("expires after 24 hours: the key's next call makes a new plan", async () => {
    const { token } = await projectWithHistory();
    await plan(token, { key: "old", shards: 2, items });
    h.clock.advance(24 * 3_600_000 + 1);
    const res = await plan(token, { key: "old", shards: 3, items });
    expect(res.status, res.text).toBe(200);
    expect(res.body.created).toBe(true);
  });

  it("a plan's key is the project's: another project's same key is its own plan", async () => {
    const mine = await projectWithHistory();
    const other = await projectWithHistory();
    await plan(mine.token, { key: "shared", shards: 2, items });
    const res = await plan(other.token, { key: "shared", shards: 4, items });
    expect(res.status).toBe(200);
    expect(res.body.created).toBe(true);
  });

  it("invalid bodies are 422s in the envelope, never a 500", async () => {
    const { token } = await projectWithHistory();
    for (const body of [
      { key: "", shards: 2, items },
      { key: "k", shards: 0, items },
      { key: "k", shards: 1001, items },
      { key: "k", shards: 2, items: [] },
      { key: "k", shards: 2, items: ["a\nb"] },
      { key: "k", shards: 2, by: "suite", items },
    ]) {
      const res = await plan(token, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe("validation_failed");
    }
  });
});
