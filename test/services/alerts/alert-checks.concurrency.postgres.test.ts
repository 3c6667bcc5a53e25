/**
 * Concurrent alert checks of one project are checked one after the other (src/services/alert-checks.ts):
 * the checks read everything in one statement, whose snapshot is taken before it waits for the
 * project's tests lock, so what it reads must still be what the lock's previous holder left.
 * Two runs checked at once, queued behind a lock held from outside, must give what checking them
 * in turn gives: each state one run further per run, and each test's entry fed by both runs.
 * A run delivered twice at once is checked once.
 *
 * Postgres only: PGlite has one connection, on which nothing runs concurrently. Collected only
 * when the suite runs on Postgres (vitest.config.ts).
 */
import pg from "pg";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECKS } from "../../../src/checks";
import { rowsOf } from "../../../src/db/rows";
import { runAlertChecks } from "../../../src/services/alerts/alert-checks";
import { type Report, completeTestRun, recordTestRunArrival } from "../../../src/services/runs/test-runs";
import { createHarness, captureLogger, WEB_APP_URL, testDatabaseUrl as theTestDatabaseUrl } from "../../support/harness";

const testDatabaseUrl = await theTestDatabaseUrl();
if (!testDatabaseUrl) throw new Error("alert-checks.concurrency.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");

let h: Awaited<ReturnType<typeof createHarness>>;
let direct: pg.Client;
const logs: string[] = [];

beforeAll(async () => {
  h = await createHarness();
  direct = new pg.Client({ connectionString: testDatabaseUrl });
  await direct.connect();
});
afterAll(async () => {
  await direct?.end();
  await h?.close();
});

const deps = () => ({ db: h.db, clock: h.clock, logger: captureLogger(logs), webAppUrl: WEB_APP_URL });
const checkDeps = () => ({ ...deps(), checks: CHECKS });

/** Ten tests, one failing on every other run: the checks' entries change at every run. */
function report(index: number): Report {
  return {
    suites: [
      {
        name: "checkout",
        cases: Array.from({ length: 10 }, (_, i) => ({
          name: `case ${i}`,
          classname: "Checkout",
          status: i === 0 && index % 2 === 1 ? ("failed" as const) : ("passed" as const),
          durationMs: 20 + i,
        })),
      },
    ],
  };
}

async function processedRun(projectId: string, index: number) {
  h.clock.advance(60_000);
  const { run } = await recordTestRunArrival(deps(), projectId, { branch: "main", commitSha: `abc${index}`.padEnd(12, "0") });
  const processed = await completeTestRun(deps(), run.id, report(index));
  if (!processed) throw new Error("not processed");
  return processed;
}

const lockKey = (projectId: string) => `hashtextextended('${projectId}'::text, 0)`;

/** Advisory locks waited for on the project's tests lock. */
async function waiters(): Promise<number> {
  const { rows } = await direct.query(
    `select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`,
  );
  return (rows[0] as { n: number }).n;
}

async function until(condition: () => Promise<boolean>) {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > 10_000) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function statesOf(projectId: string) {
  return rowsOf<{ alert_type: string; last_run_number: number; runs_checked: number }>(
    h.db.execute(
      sql`select alert_type, last_run_number, runs_checked from alert_check_states where project_id = ${projectId} order by alert_type`,
    ),
  );
}

async function flakinessEntries(projectId: string) {
  const rows = await rowsOf<{ name: string; entry: { n: number; ls: number } }>(
    h.db.execute(
      sql`select t.name, e.state -> ${CHECKS.test_flakiness.version} as entry from tests t join test_check_states e on e.test_id = t.id where t.project_id = ${projectId} order by t.name`,
    ),
  );
  return rows.map((row) => ({ name: row.name, n: row.entry.n, ls: row.entry.ls }));
}

describe("alert checks of one project, concurrently", () => {
  it("two runs checked at once are checked one after the other, the second reading what the first wrote", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    for (let i = 1; i <= 3; i++) await runAlertChecks(checkDeps(), await processedRun(project.id, i));
    const fourth = await processedRun(project.id, 4);
    const fifth = await processedRun(project.id, 5);

    // The project's tests lock, held from outside until both checks wait for it, the fourth's first.
    await direct.query("begin");
    await direct.query(`select pg_advisory_xact_lock(${lockKey(project.id)})`);
    const checkingFourth = runAlertChecks(checkDeps(), fourth);
    await until(async () => (await waiters()) === 1);
    const checkingFifth = runAlertChecks(checkDeps(), fifth);
    await until(async () => (await waiters()) === 2);
    await direct.query("commit");
    await Promise.all([checkingFourth, checkingFifth]);

    const states = await statesOf(project.id);
    expect(states).toHaveLength(4);
    for (const state of states) expect(state).toMatchObject({ last_run_number: 5, runs_checked: 5 });
    // Every test was in five default-branch runs, each of which fed its entry once.
    const entries = await flakinessEntries(project.id);
    expect(entries).toHaveLength(10);
    for (const entry of entries) expect(entry).toMatchObject({ n: 5, ls: 5 });
  });

  it("a run delivered twice at once is checked once", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    for (let i = 1; i <= 2; i++) await runAlertChecks(checkDeps(), await processedRun(project.id, i));
    const third = await processedRun(project.id, 3);
    await direct.query("begin");
    await direct.query(`select pg_advisory_xact_lock(${lockKey(project.id)})`);
    const first = runAlertChecks(checkDeps(), third);
    const second = runAlertChecks(checkDeps(), third);
    await until(async () => (await waiters()) === 2);
    await direct.query("commit");
    await Promise.all([first, second]);
    for (const state of await statesOf(project.id)) expect(state).toMatchObject({ last_run_number: 3, runs_checked: 3 });
    for (const entry of await flakinessEntries(project.id)) expect(entry).toMatchObject({ n: 3, ls: 3 });
  });
});
