/**
 * The database goes away while the Node server stores a large run (in the middle of the COPY of
 * its 100,000 cases) and comes back: the process stays up, answers 503 with Retry-After while the
 * database is away, and stores the whole run once it is back, without a restart.
 *
 * Postgres only: PGlite runs inside the server process and cannot go away. This file is not
 * collected when the suite runs on PGlite (vitest.config.ts leaves out `*.postgres.test.ts`
 * unless TEST_DATABASE_URL is set), so it is never reported as a skipped pass.
 *
 * The outage is a TCP proxy in front of the suite's Postgres server (test/support/cuttable-proxy.ts),
 * not a cluster of the test's own stopped with pg_ctlcluster: the proxy cuts at the exact moment
 * the COPY is under way, resets every connection and refuses new ones, and is back in
 * milliseconds; a cluster of our own costs an initdb and a migration per run, needs the
 * postgresql-common tools and root (or the postgres user), and stops at the pace of its shutdown
 * checkpoint. What the server sees is the same: its connections die (ECONNRESET, EPIPE during
 * the COPY) and new ones are refused until the database is back.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDatabaseUrl as theTestDatabaseUrl } from "../support/harness";
import { generateJUnit } from "../../bench/junit-generator";
import { CuttableProxy } from "../support/cuttable-proxy";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const ADMIN_TOKEN = "outage-admin-token-0123456789";
const CASES = 100_000;

const testDatabaseUrl = await theTestDatabaseUrl();
if (!testDatabaseUrl) throw new Error("database-outage.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");
const target = new URL(testDatabaseUrl);

let proxy: CuttableProxy;
let direct: pg.Client;
let server: ServerProcess;

beforeAll(async () => {
  proxy = await CuttableProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
  direct = new pg.Client({ connectionString: testDatabaseUrl });
  await direct.connect();
  const viaProxy = new URL(testDatabaseUrl);
  viaProxy.hostname = "127.0.0.1";
  viaProxy.port = String(proxy.port);
  server = await startServerProcess({
    DATABASE_URL: viaProxy.toString(),
    ADMIN_TOKEN,
    SECRETS_KEY: "outage-test-secrets-key-0123456789abcdef",
  });
});

afterAll(async () => {
  server?.child.kill("SIGTERM");
  await proxy?.close();
  await direct?.end();
});

const until = (condition: () => boolean | Promise<boolean>, timeoutMs: number, stepMs?: number) =>
  server.until(condition, timeoutMs, stepMs);
const call = (method: string, path: string, token: string, body?: string, headers?: Record<string, string>) =>
  server.call(method, path, token, body, headers);

/** The backend storing our run's cases with COPY, if one is at it now. */
async function copyInProgress(): Promise<boolean> {
  const { rows } = await direct.query(
    `select 1 from pg_stat_activity where datname = current_database() and state = 'active' and query ilike 'copy test_cases%'`,
  );
  return rows.length > 0;
}

describe("the database goes away during a 100,000-case run's COPY", () => {
  it("the server stays up, answers 503 while it is away, and stores the whole run when it is back", async () => {
    const json = { "content-type": "application/json" };
    const organization = await call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Outage" }), json);
    expect(organization.status).toBe(201);
    const apiKey = organization.body.api_key.secret as string;
    const project = await call(
      "POST",
      `/admin/v1/organizations/${organization.body.organization.id}/projects`,
      ADMIN_TOKEN,
      JSON.stringify({ name: "Big" }),
      json,
    );
    expect(project.status).toBe(201);
    const uploadToken = project.body.upload_token as string;

    const report = generateJUnit({ cases: CASES, systemOutBytes: 0 });
    const uploaded = await call("POST", "/uploads/v1/test_runs?branch=main", uploadToken, report, { "content-type": "application/xml" });
    expect(uploaded.status).toBe(202);
    const number = uploaded.body.number as number;
    const [{ id: runId }] = (
      await direct.query(`select id from test_runs where project_id = $1 and number = $2`, [project.body.project.id, number])
    ).rows;

    // Cut while Postgres is taking the cases in.
    await until(copyInProgress, 30_000, 5);
    await proxy.cut();
    const cutAt = Date.now();

    // Away: the process is up and answers 503 with Retry-After, for the API and for uploads.
    // Other files' rows share this database (e-mails, webhooks sealed under other keys), so the
    // server's queue may log failures of its own before ours: wait for the run's.
    // The message names its run (and, since the edge cache, its organization): read as JSON, not as text.
    const failedAttemptOf = (line: string): { testRunId?: number } | null => {
      if (!line.includes('"message":"queue message attempt failed"')) return null;
      try {
        return (JSON.parse(line) as { queueMessage?: { testRunId?: number } }).queueMessage ?? null;
      } catch {
        return null;
      }
    };
    const runFailed = () =>
      server
        .output()
        .split("\n")
        .some((line) => failedAttemptOf(line)?.testRunId === Number(runId));
    await until(runFailed, 10_000);
    // The connection the run's transaction had checked out failed (and was listened to).
    expect(server.output()).toContain("postgres connection failed while in use");
    for (const res of [
      await call("GET", "/api/v1/projects", apiKey),
      await call("GET", `/uploads/v1/test_runs/${number}`, uploadToken),
      await call("POST", "/uploads/v1/test_runs", uploadToken, "<testsuite name='s'/>", { "content-type": "application/xml" }),
    ]) {
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe("service_unavailable");
      expect(res.headers.get("retry-after")).toBe("1");
    }
    // The run's transaction was rolled back: still pending, nothing of it stored.
    const during = await direct.query(
      `select status, (select count(*)::int from test_cases where test_run_id = r.id) as cases from test_runs r where r.id = $1`,
      [runId],
    );
    expect(during.rows[0]).toEqual({ status: "pending", cases: 0 });
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1500 - (Date.now() - cutAt))));
    expect(server.child.exitCode).toBeNull();

    // Back: the run is retried and stored whole, by the same process.
    await proxy.restore();
    let run: any;
    await until(
      async () => {
        const res = await call("GET", `/uploads/v1/test_runs/${number}`, uploadToken);
        run = res.body;
        return res.status === 200 && run.status !== "pending";
      },
      45_000,
      200,
    );
    expect(run).toMatchObject({ status: "processed", tests_count: CASES });
    const stored = await direct.query(
      `select (select count(*)::int from test_cases where test_run_id = $1) as cases, (select count(*)::int from test_suites where test_run_id = $1) as suites, suites_count from test_runs where id = $1`,
      [runId],
    );
    expect(stored.rows[0].cases).toBe(CASES);
    expect(stored.rows[0].suites).toBe(stored.rows[0].suites_count);
    expect((await call("GET", "/api/v1/projects", apiKey)).status).toBe(200);
    expect(server.child.exitCode).toBeNull();
    expect(server.output()).not.toMatch(/Unhandled|uncaught/i);
  });
});
