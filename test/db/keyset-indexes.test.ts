/**
 * Every list is read in keyset order straight from an index, with no Sort of all matching rows.
 * The planner prefers a sequential scan on tiny tables, so sequential scans and sorts are
 * discouraged for the EXPLAIN: if the index cannot deliver the order, the plan still shows a Sort.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const ORG = "6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f";
const CURSOR_TS = "2026-11-21T18:00:00.000Z";

const LIST_QUERIES = {
  projects: {
    index: "projects_org_keyset_idx",
    query: `select * from projects where organization_id = '${ORG}' and (created_at, id) < ('${CURSOR_TS}'::timestamptz, '${ORG}'::uuid) order by created_at desc, id desc limit 26`,
  },
  alerts: {
    index: "alerts_org_keyset_idx",
    query: `select * from alerts where organization_id = '${ORG}' and active = true and (snoozed_until is null or snoozed_until <= now()) and (created_at, id) < ('${CURSOR_TS}'::timestamptz, '${ORG}'::uuid) order by created_at desc, id desc limit 26`,
  },
  "alerts of a project": {
    index: "alerts_project_keyset_idx",
    query: `select * from alerts where organization_id = '${ORG}' and project_id = '${ORG}' order by created_at desc, id desc limit 26`,
  },
  "alert events": {
    index: "alert_events_alert_keyset_idx",
    query: `select * from alert_events e join test_runs r on r.id = e.test_run_id where e.alert_id = '${ORG}' and (e.triggered_at, e.id) < ('${CURSOR_TS}'::timestamptz, 5::bigint) order by e.triggered_at desc, e.id desc limit 26`,
  },
  "test runs of a project": {
    index: "test_runs_project_keyset_idx",
    query: `select * from test_runs where project_id = '${ORG}' and (created_at, id) < ('${CURSOR_TS}'::timestamptz, 5::bigint) order by created_at desc, id desc limit 26`,
  },
  "test runs of a commit (a full SHA)": {
    index: "test_runs_project_commit_idx",
    query: `select * from test_runs where project_id = '${ORG}' and lower(commit_sha) = '9fceb02d0ae598e95dc970b74767f19372d61af8' and (created_at, id) < ('${CURSOR_TS}'::timestamptz, 5::bigint) order by created_at desc, id desc limit 26`,
  },
  "suites of a run": {
    index: "test_suites_run_number_key",
    query: `select * from test_suites where test_run_id = 5 and number < 40 order by number desc limit 26`,
  },
  "cases of a suite": {
    index: "test_cases_run_suite_idx",
    query: `select * from test_cases where test_run_id = 5 and suite_number = 3 and id < 1000 order by id desc limit 26`,
  },
};

/** Rolls back the transaction of an EXPLAIN that dropped an index. */
class Explained extends Error {
  constructor(readonly text: string) {
    super("explained");
  }
}

/** `without`: indexes dropped for the EXPLAIN (in its transaction, rolled back), as if the planner found them the dearer. */
async function plan(query: string, options: { sort?: boolean; without?: string[] } = {}): Promise<string> {
  const explain = async (tx: Pick<typeof h.db, "execute">) => {
    await tx.execute(sql.raw("set local enable_seqscan = off"));
    if (!options.sort) await tx.execute(sql.raw("set local enable_sort = off"));
    await tx.execute(sql.raw("set local enable_bitmapscan = off"));
    for (const index of options.without ?? []) await tx.execute(sql.raw(`drop index ${index}`));
    const result = await tx.execute(sql.raw(`explain ${query}`));
    const rows = (result as unknown as { rows: Record<string, string>[] }).rows ?? (result as unknown as Record<string, string>[]);
    return rows.map((row) => Object.values(row)[0]).join("\n");
  };
  if (!options.without) return h.db.transaction(explain);
  try {
    await h.db.transaction(async (tx) => {
      throw new Explained(await explain(tx));
    });
  } catch (error) {
    if (error instanceof Explained) return error.text;
    throw error;
  }
  throw new Error("unreachable");
}

describe("keyset indexes", () => {
  // An abbreviated SHA is a prefix of several commits: the index finds their runs (a range), which are then sorted. On an
  // empty table the project's other indexes, filtered, look as cheap; on a project of many runs they are not (they read
  // every run of the project), and the planner takes this one, as it does here once they are out of the way.
  it("test runs of an abbreviated commit: a range of test_runs_project_commit_idx", async () => {
    const text = await plan(
      `select * from test_runs where project_id = '${ORG}' and lower(commit_sha) like '9fceb02%' order by created_at desc, id desc limit 26`,
      { sort: true, without: ["test_runs_project_keyset_idx", "test_runs_project_number_key"] },
    );
    expect(text).toContain("test_runs_project_commit_idx");
    expect(text).toMatch(/Index Cond: .*~>=~ '9fceb02'/);
  });

  for (const [name, { index, query }] of Object.entries(LIST_QUERIES)) {
    it(`${name}: read in order from ${index}, no sort`, async () => {
      const text = await plan(query);
      expect(text).toContain(index);
      expect(text).not.toMatch(/\bSort\b/);
    });
  }
});
