/**
 * kill -9 in the middle of a run: the Node server is killed with SIGKILL while it stores a
 * 100,000-case run (its COPY under way). Nothing of the run is left half-written (the transaction
 * dies with the connection), the run stays `pending`, and the next process to start on the same
 * database picks it up and stores it whole, once. The project's stored-case counter (QUOTA_STORED_CASES)
 * moves with the cases: 0 after the kill, the run's cases once it is stored.
 *
 * Postgres only: an embedded PGlite lives inside the killed process. Like the outage test, this
 * file is collected only when the suite runs on Postgres (vitest.config.ts).
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDatabaseUrl as theTestDatabaseUrl } from "../support/harness";
import { generateJUnit } from "../../bench/junit-generator";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const ADMIN_TOKEN = "killed-admin-token-0123456789";
const CASES = 100_000;
const testDatabaseUrl = await theTestDatabaseUrl();
if (!testDatabaseUrl) throw new Error("killed-during-processing.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");
const env = { DATABASE_URL: testDatabaseUrl, ADMIN_TOKEN, SECRETS_KEY: "killed-test-secrets-key-0123456789abcdef" };

let direct: pg.Client;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  direct = new pg.Client({ connectionString: testDatabaseUrl });
  await direct.connect();
});

afterAll(async () => {
  for (const server of servers) server.child.kill("SIGKILL");
  await direct?.end();
});

async function runState(runId: number) {
  const { rows } = await direct.query(
    `select status, suites_count, tests_count, (select count(*)::int from test_cases where test_run_id = r.id) as cases,
       (select count(*)::int from test_suites where test_run_id = r.id) as suites,
       (select stored_cases_count::int from projects where id = r.project_id) as stored_cases from test_runs r where r.id = $1`,
    [runId],
  );
  return rows[0] as { status: string; suites_count: number; tests_count: number; cases: number; suites: number; stored_cases: number };
}

describe("the server is killed (SIGKILL) during a 100,000-case run's COPY", () => {
  it("nothing is half-written, and the next process stores the run whole, once", async () => {
    const first = await startServerProcess(env);
    servers.push(first);
    const json = { "content-type": "application/json" };
    const organization = await first.call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Killed" }), json);
    expect(organization.status).toBe(201);
    const project = await first.call(
      "POST",
      `/admin/v1/organizations/${organization.body.organization.id}/projects`,
      ADMIN_TOKEN,
      JSON.stringify({ name: "Big" }),
      json,
    );
    const uploadToken = project.body.upload_token as string;

    const uploaded = await first.call(
      "POST",
      "/uploads/v1/test_runs?branch=main",
      uploadToken,
      generateJUnit({ cases: CASES, systemOutBytes: 0 }),
      {
        "content-type": "application/xml",
      },
    );
    expect(uploaded.status).toBe(202);
    const number = uploaded.body.number as number;
    const [{ id: runId }] = (
      await direct.query(`select id from test_runs where project_id = $1 and number = $2`, [project.body.project.id, number])
    ).rows;

    await first.until(
      async () => {
        const { rows } = await direct.query(
          `select 1 from pg_stat_activity where datname = current_database() and state = 'active' and query ilike 'copy test_cases%'`,
        );
        return rows.length > 0;
      },
      30_000,
      5,
    );
    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));

    // Postgres ends the dead client's transaction: nothing of the run is stored, and it is still pending.
    await new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 15_000;
      const poll = async () => {
        const { rows } = await direct.query(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and query ilike 'copy test_cases%' and state <> 'idle'`,
        );
        if (rows[0].n === 0) return resolve();
        if (Date.now() > deadline) return reject(new Error("the killed server's COPY is still running"));
        setTimeout(poll, 50);
      };
      void poll();
    });
    expect(await runState(runId)).toMatchObject({ status: "pending", cases: 0, suites: 0, stored_cases: 0 });

    // The next process recovers the pending run and stores it whole.
    const second = await startServerProcess(env);
    servers.push(second);
    await second.until(async () => (await runState(runId)).status !== "pending", 60_000, 200);
    const stored = await runState(runId);
    expect(stored).toMatchObject({ status: "processed", tests_count: CASES, cases: CASES, stored_cases: CASES });
    expect(stored.suites).toBe(stored.suites_count);
    const view = await second.call("GET", `/uploads/v1/test_runs/${number}`, uploadToken);
    expect(view.body).toMatchObject({ status: "processed", tests_count: CASES });
    // Once: one run with that number, and its cases stored once.
    const { rows } = await direct.query(`select count(*)::int as n from test_runs where project_id = $1 and number = $2`, [
      project.body.project.id,
      number,
    ]);
    expect(rows[0].n).toBe(1);
    expect(second.output()).toContain("queued runs left pending by an earlier process");
  });
});
