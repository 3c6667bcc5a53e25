/**
 * A large run's tests are advanced with Node and Postgres working at once (advanceRunTestsInChunks:
 * the next chunk fetched and a chunk's write sent while Node advances another). When one of those
 * statements fails, the whole run is rolled back — no test advanced, the run still pending — the
 * error is the one thrown by storeTestRun (nothing unhandled is left behind), and the run is
 * processed once the cause is gone.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../../../src/db/rows";
import { type Report, recordTestRunArrival, storeTestRun } from "../../../src/services/runs/test-runs";
import { TESTS_PER_CHUNK } from "../../../src/services/tests/tests-state";
import { type Harness, WEB_APP_URL, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const quiet = { info() {}, error() {} };
const COUNT = TESTS_PER_CHUNK * 3 + 11;
/** A test of the third chunk (the cursor reads the tests in test id order, so which one is not known; any of the last ones will do). */
const report: Report = {
  suites: [
    {
      name: "many",
      cases: Array.from({ length: COUNT }, (_, i) => ({
        name: `t${i}`,
        classname: "app.Spec",
        status: "passed" as const,
        durationMs: i % 40,
      })),
    },
  ],
};

async function store(projectId: string, sha: string) {
  h.clock.advance(60_000);
  const deps = { db: h.db, clock: h.clock, logger: quiet, webAppUrl: WEB_APP_URL };
  const { run } = await recordTestRunArrival(deps, projectId, { branch: "main", commitSha: sha });
  const stored = storeTestRun(
    deps,
    run.id,
    async (emit) => {
      emit(report.suites);
      return null;
    },
    { largeAbove: 0 },
  );
  return { run, stored };
}

const executions = async (projectId: string) =>
  rowsOf<{ n: number; runs: number }>(
    h.db.execute(
      sql`select executions_count as runs, count(*)::int as n from tests where project_id = ${projectId} group by executions_count`,
    ),
  );

describe("a large run whose tests' write fails mid-way", () => {
  it("is rolled back whole with the statement's error, and processed once the cause is gone", async () => {
    const { organization } = await h.newOrganization();
    const projectId = (await h.newProject(organization.id, "chunked")).project.id as string;
    const first = await store(projectId, "a".repeat(40));
    expect((await first.stored)?.status).toBe("processed");
    expect(await executions(projectId)).toEqual([{ runs: 1, n: COUNT }]);

    // One test's update fails, in whichever chunk its row comes: the other chunks' writes are sent around it.
    // (A function body takes no parameters: the test's name, a constant, is written into it.)
    await h.db.execute(
      sql.raw(`create function refuse_test_update() returns trigger language plpgsql as $$
        begin if new.name = 't${COUNT - 1}' then raise exception 'refused on purpose'; end if; return new; end $$`),
    );
    await h.db.execute(sql`create trigger refuse_test_update before update on tests for each row execute function refuse_test_update()`);
    let second: Awaited<ReturnType<typeof store>>;
    try {
      second = await store(projectId, "b".repeat(40));
      // Drizzle names the failed statement; Postgres's error is its cause.
      const error = (await second.stored.then(
        () => null,
        (reason: unknown) => reason,
      )) as { cause?: { message?: string } } | null;
      expect(error?.cause?.message).toBe("refused on purpose");
    } finally {
      await h.db.execute(sql`drop trigger refuse_test_update on tests`);
      await h.db.execute(sql`drop function refuse_test_update()`);
    }
    const [pending] = await rowsOf<{ status: string }>(h.db.execute(sql`select status from test_runs where id = ${second.run.id}`));
    expect(pending?.status).toBe("pending");
    expect(await executions(projectId)).toEqual([{ runs: 1, n: COUNT }]);

    const deps = { db: h.db, clock: h.clock, logger: quiet, webAppUrl: WEB_APP_URL };
    const again = await storeTestRun(
      deps,
      second.run.id,
      async (emit) => {
        emit(report.suites);
        return null;
      },
      { largeAbove: 0 },
    );
    expect(again?.status).toBe("processed");
    expect(await executions(projectId)).toEqual([{ runs: 2, n: COUNT }]);
  });
});
