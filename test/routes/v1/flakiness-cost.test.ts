/**
 * GET /api/v1/projects/:id/flakiness_cost and GET /api/v1/tests/:id/flakiness_cost
 * (docs/flakiness-cost.md): a project's cost over the default window and a named one, every day of
 * it, the most costly tests with their share, a test's share; the window's rules (400
 * `invalid_request`), another organization's project or test the same 404 as a missing one, and a
 * tag that names the day. Runs are uploaded and processed by the queue. Node and workerd.
 */
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tests } from "../../../src/db/schema";
import { type Harness, WEB_APP_URL, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const DAY = 86_400_000;
const FIRST_DAY = "2026-05-19";
const SECOND_DAY = "2026-05-20";

type Case = { name: string; status: "passed" | "failed"; duration_ms: number; attempts?: { status: "failed"; duration_ms: number }[] };

/**
 * On the first day: the tests pass once, `shaky` turns flaky, then build 1 of a commit fails only by
 * `shaky` (30 ms) while `retried` passes after a 40 ms failed try. On the second day build 2 of the
 * commit (a re-run, 800 ms) passes.
 */
async function costedProject() {
  h.clock.set(Date.parse(`${FIRST_DAY}T09:00:00Z`));
  const { organization, apiKey } = await h.newOrganization("Cost API");
  const { project, uploadToken } = await h.newProject(organization.id, "Checkout");
  const upload = async (cases: Case[], meta: Record<string, unknown>) => {
    h.clock.advance(60_000);
    const suites = [{ name: "s", cases: cases.map((c) => ({ classname: "Cart", ...c })) }];
    const run = await h.uploadAndWait(uploadToken, { branch: "main", ...meta, suites });
    expect(run.status).toBe("processed");
  };
  await upload(
    [
      { name: "shaky", status: "passed", duration_ms: 5 },
      { name: "retried", status: "passed", duration_ms: 5 },
    ],
    { commit_sha: "a".repeat(40) },
  );
  const ids = { shaky: (await testOf(project.id, "shaky"))!, retried: (await testOf(project.id, "retried"))! };
  await h.db.update(tests).set({ health: "flaky" }).where(eq(tests.id, ids.shaky));
  await upload(
    [
      { name: "shaky", status: "failed", duration_ms: 30 },
      { name: "retried", status: "passed", duration_ms: 5, attempts: [{ status: "failed", duration_ms: 40 }] },
    ],
    { commit_sha: "b".repeat(40), build_id: "1", duration_ms: 1_000 },
  );
  h.clock.set(Date.parse(`${SECOND_DAY}T09:00:00Z`));
  await upload(
    [
      { name: "shaky", status: "passed", duration_ms: 5 },
      { name: "retried", status: "passed", duration_ms: 5 },
    ],
    { commit_sha: "b".repeat(40), build_id: "2", duration_ms: 800 },
  );
  return { apiKey, project, ids };
}

async function testOf(projectId: string, name: string) {
  const [row] = await h.db
    .select({ id: tests.id })
    .from(tests)
    .where(and(eq(tests.projectId, projectId), eq(tests.name, name)));
  return row?.id;
}

let fixture: Awaited<ReturnType<typeof costedProject>>;
beforeAll(async () => {
  fixture = await costedProject();
});

const zeroDay = { total_ms: 0, retry_ms: 0, flaky_failures_ms: 0, quarantined_failures_ms: 0, rerun_ms: 0, reruns_count: 0, runs_count: 0 };

describe("GET /projects/:id/flakiness_cost", () => {
  it("by default the last 30 days: totals per component, every day, the most costly tests with their share", async () => {
    const { apiKey, project, ids } = fixture;
    const res = await h.get(`/api/v1/projects/${project.id}/flakiness_cost`, apiKey);
    expect(res.status).toBe(200);
    expect(res.body.from).toBe("2026-04-21");
    expect(res.body.to).toBe(SECOND_DAY);
    expect(res.body.totals).toEqual({
      total_ms: 870,
      retry_ms: 40,
      flaky_failures_ms: 30,
      quarantined_failures_ms: 0,
      rerun_ms: 800,
      reruns_count: 1,
      runs_count: 3,
    });
    expect(res.body.days).toHaveLength(30);
    expect(res.body.days[0]).toEqual({ day: "2026-04-21", ...zeroDay });
    expect(res.body.days.slice(-2)).toEqual([
      {
        day: FIRST_DAY,
        total_ms: 70,
        retry_ms: 40,
        flaky_failures_ms: 30,
        quarantined_failures_ms: 0,
        rerun_ms: 0,
        reruns_count: 0,
        runs_count: 2,
      },
      { day: SECOND_DAY, ...zeroDay, total_ms: 800, rerun_ms: 800, reruns_count: 1, runs_count: 1 },
    ]);
    expect(res.body.top_tests).toEqual([
      {
        test_id: ids.retried,
        name: "retried",
        classname: "Cart",
        file: null,
        total_ms: 40,
        retry_ms: 40,
        flaky_failures_ms: 0,
        quarantined_failures_ms: 0,
        share: 40 / 870,
        url: `${WEB_APP_URL}/projects/${project.id}/tests/${ids.retried}`,
      },
      expect.objectContaining({ test_id: ids.shaky, name: "shaky", total_ms: 30, flaky_failures_ms: 30, share: 30 / 870 }),
    ]);
  });

  it("a named window: from and to included, `from` alone runs to today, `to` alone is the 30 days before it", async () => {
    const { apiKey, project } = fixture;
    const base = `/api/v1/projects/${project.id}/flakiness_cost`;
    const firstDay = await h.get(`${base}?from=${FIRST_DAY}&to=${FIRST_DAY}`, apiKey);
    expect(firstDay.status).toBe(200);
    expect(firstDay.body.days).toHaveLength(1);
    expect(firstDay.body.totals).toMatchObject({ total_ms: 70, rerun_ms: 0, runs_count: 2 });
    expect(firstDay.body.top_tests.map((t: { name: string }) => t.name)).toEqual(["retried", "shaky"]);

    const since = await h.get(`${base}?from=${SECOND_DAY}`, apiKey);
    expect([since.body.from, since.body.to, since.body.totals.total_ms]).toEqual([SECOND_DAY, SECOND_DAY, 800]);
    const until = await h.get(`${base}?to=${FIRST_DAY}`, apiKey);
    expect([until.body.from, until.body.to, until.body.totals.total_ms]).toEqual(["2026-04-20", FIRST_DAY, 70]);
    const empty = await h.get(`${base}?from=2025-01-01&to=2025-12-31`, apiKey);
    expect(empty.status).toBe(200);
    expect(empty.body.days).toHaveLength(365);
    expect(empty.body.totals).toEqual(zeroDay);
    expect(empty.body.top_tests).toEqual([]);
    // 366 days is the widest window (2024 is a leap year).
    expect((await h.get(`${base}?from=2024-01-01&to=2024-12-31`, apiKey)).body.days).toHaveLength(366);
  });

  it("400 invalid_request for a bad date, from after to, or more than 366 days, in the envelope", async () => {
    const { apiKey, project } = fixture;
    const base = `/api/v1/projects/${project.id}/flakiness_cost`;
    const cases: [string, string][] = [
      ["?from=2026-02-30", "from"],
      ["?to=20260501", "to"],
      ["?from=yesterday", "from"],
      [`?from=${SECOND_DAY}&to=${FIRST_DAY}`, "from"],
      ["?from=2030-01-01", "from"],
      ["?from=2025-01-01&to=2026-01-02", "to"],
    ];
    for (const [query, field] of cases) {
      const res = await h.get(`${base}${query}`, apiKey);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code, query).toBe("invalid_request");
      expect(
        res.body.error.details.map((d: { field: string }) => d.field),
        query,
      ).toEqual([field]);
    }
  });

  it("another organization's project, a missing one and a malformed id are the same 404", async () => {
    const { project } = fixture;
    const other = await h.newOrganization("Other");
    for (const id of [project.id, "00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
      const res = await h.get(`/api/v1/projects/${id}/flakiness_cost`, other.apiKey);
      expect(res.status, id).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
    expect((await h.get(`/api/v1/projects/${project.id}/flakiness_cost`, null)).status).toBe(401);
  });

  it("the tag names the day: the default window's tag does not revalidate the next day's answer", async () => {
    const { apiKey, project } = fixture;
    const path = `/api/v1/projects/${project.id}/flakiness_cost`;
    const first = await h.get(path, apiKey);
    const etag = first.headers.get("etag")!;
    expect((await h.get(path, apiKey, { headers: { "if-none-match": etag } })).status).toBe(304);
    const now = h.clock.now().getTime();
    h.clock.set(now + DAY);
    try {
      const next = await h.get(path, apiKey, { headers: { "if-none-match": etag } });
      expect(next.status).toBe(200);
      expect(next.body.to).toBe("2026-05-21");
      expect(next.headers.get("etag")).not.toBe(etag);
    } finally {
      h.clock.set(now);
    }
  });
});

describe("GET /tests/:id/flakiness_cost", () => {
  it("the test's components per day and its share of the project's total over the same window", async () => {
    const { apiKey, project, ids } = fixture;
    const res = await h.get(`/api/v1/tests/${ids.shaky}/flakiness_cost`, apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      test_id: ids.shaky,
      project_id: project.id,
      from: "2026-04-21",
      to: SECOND_DAY,
      totals: { total_ms: 30, retry_ms: 0, flaky_failures_ms: 30, quarantined_failures_ms: 0 },
      project_total_ms: 870,
      share: 30 / 870,
    });
    expect(res.body.days).toHaveLength(30);
    expect(res.body.days.at(-2)).toEqual({ day: FIRST_DAY, total_ms: 30, retry_ms: 0, flaky_failures_ms: 30, quarantined_failures_ms: 0 });
    const secondDay = await h.get(`/api/v1/tests/${ids.shaky}/flakiness_cost?from=${SECOND_DAY}&to=${SECOND_DAY}`, apiKey);
    expect(secondDay.body).toMatchObject({ totals: { total_ms: 0 }, project_total_ms: 800, share: 0 });
    const before = await h.get(`/api/v1/tests/${ids.shaky}/flakiness_cost?to=2026-01-01`, apiKey);
    expect(before.body).toMatchObject({ totals: { total_ms: 0 }, project_total_ms: 0, share: null });
  });

  it("400 for a bad window; another organization's test is a 404", async () => {
    const { apiKey, ids } = fixture;
    const bad = await h.get(`/api/v1/tests/${ids.shaky}/flakiness_cost?from=2026-13-01`, apiKey);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("invalid_request");
    const other = await h.newOrganization("Other tests");
    const foreign = await h.get(`/api/v1/tests/${ids.shaky}/flakiness_cost`, other.apiKey);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe("not_found");
  });
});
