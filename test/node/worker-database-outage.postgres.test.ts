/**
 * The database goes away under steady load on the Worker path (`npm run dev`: the Worker in
 * workerd, its local queue, the Neon driver through the local bridge) and comes back: every answer
 * is a success or a 503 with Retry-After in the envelope (never a 500), the same processes serve
 * again without a restart, and every upload that was accepted is processed (the queue sends a
 * message that met the outage again instead of using up its deliveries).
 *
 * Postgres only, like database-outage.postgres.test.ts (the same cuttable proxy, in front of the
 * suite's server); the bridge of `npm run dev` reaches the database through it.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDatabaseUrl as theTestDatabaseUrl } from "../support/harness";
import { generateJUnit } from "../../bench/junit-generator";
import { CuttableProxy } from "../support/cuttable-proxy";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const ADMIN_TOKEN = "worker-outage-admin-token-0123456789";
const OUTAGE_MS = 6_000;
/** Large enough that its processing is still under way when the database goes away right after its 202. */
const BIG_RUN_CASES = 20_000;

const testDatabaseUrl = await theTestDatabaseUrl();
if (!testDatabaseUrl) throw new Error("worker-database-outage.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");
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
  server = await startServerProcess(
    // The outage, not memory, is the subject here: this local Worker takes the interface's 32 MiB whatever the deployed
    // limit (wrangler.toml), so the 20,000-case run (about 5 MiB) is accepted either way.
    {
      DATABASE_URL: viaProxy.toString(),
      ADMIN_TOKEN,
      SECRETS_KEY: "worker-outage-secrets-key-0123456789abcdef",
      UPLOAD_LIMIT_BYTES: String(32 * 1024 * 1024),
    },
    { runtime: "worker", startTimeoutMs: 120_000 },
  );
}, 150_000);

afterAll(async () => {
  await server?.stop();
  await proxy?.close();
  await direct?.end();
}, 30_000);

const report = (i: number) =>
  `<testsuite name="s${i}"><testcase classname="outage.T" name="passes"/><testcase classname="outage.T" name="fails_${i % 3}"><failure message="boom"/></testcase></testsuite>`;

type Answer = { phase: "before" | "during" | "after"; what: string; status: number; code?: string; retryAfter: string | null };

describe("the database goes away under load on the Worker path (npm run dev)", () => {
  it("answers 503 with Retry-After while it is away, never 500, and processes every accepted run once it is back, without a restart", async () => {
    const json = { "content-type": "application/json" };
    const organization = await server.call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Worker outage" }), json);
    expect(organization.status).toBe(201);
    const apiKey = organization.body.api_key.secret as string;
    const project = await server.call(
      "POST",
      `/admin/v1/organizations/${organization.body.organization.id}/projects`,
      ADMIN_TOKEN,
      JSON.stringify({ name: "Steady" }),
      json,
    );
    expect(project.status).toBe(201);
    const projectId = project.body.project.id as string;
    const uploadToken = project.body.upload_token as string;

    let phase: Answer["phase"] = "before";
    const answers: Answer[] = [];
    const accepted: number[] = [];
    /** Uploads told 503: each is sent again with its Idempotency-Key once the database is back, as the uploader does. */
    const refused: number[] = [];
    let stopLoad = false;
    let i = 0;
    // Steady load: an upload and two reads at a time, one after the other, until told to stop.
    const load = (async () => {
      while (!stopLoad) {
        const n = i++;
        const calls: [string, Promise<{ status: number; headers: Headers; body: any }>][] = [
          [
            "upload",
            server.call("POST", "/uploads/v1/test_runs?branch=main", uploadToken, report(n), {
              "content-type": "application/xml",
              "idempotency-key": `outage-${n}`,
            }),
          ],
          ["projects", server.call("GET", "/api/v1/projects", apiKey)],
          ["runs", server.call("GET", `/api/v1/projects/${projectId}/test_runs`, apiKey)],
        ];
        for (const [what, pending] of calls) {
          const res = await pending;
          answers.push({ phase, what, status: res.status, code: res.body?.error?.code, retryAfter: res.headers.get("retry-after") });
          if (what === "upload" && res.status === 202) accepted.push(res.body.number);
          if (what === "upload" && res.status === 503) refused.push(n);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    await server.until(() => accepted.length >= 3, 30_000, 50);
    const pid = server.child.pid;
    // A run whose processing the outage interrupts: accepted, then the database goes at once.
    const big = await server.call(
      "POST",
      "/uploads/v1/test_runs?branch=main",
      uploadToken,
      generateJUnit({ cases: BIG_RUN_CASES, systemOutBytes: 0 }),
      { "content-type": "application/xml" },
    );
    expect(big.status).toBe(202);
    phase = "during";
    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    await proxy.restore();
    phase = "after";
    // Answers of requests already under way when the database came back count as "after".
    const acceptedBefore = accepted.length;
    await server.until(() => accepted.length >= acceptedBefore + 3, 60_000, 50);
    stopLoad = true;
    await load;
    // An upload told 503 may still have been stored (its commit went through, its answer did not):
    // its retry with the same key names that run, and the run is processed all the same.
    for (const n of refused) {
      const retried = await server.call("POST", "/uploads/v1/test_runs?branch=main", uploadToken, report(n), {
        "content-type": "application/xml",
        "idempotency-key": `outage-${n}`,
      });
      expect(retried.status).toBe(202);
      accepted.push(retried.body.number);
    }

    // Never a 500 (nor any other 5xx but 503), and every 503 says when to come back, in the envelope.
    const unexpected = answers.filter((a) => a.status >= 500 && a.status !== 503);
    expect(unexpected).toEqual([]);
    const unavailable = answers.filter((a) => a.status === 503);
    expect(unavailable.length).toBeGreaterThan(0);
    for (const answer of unavailable)
      expect(answer).toMatchObject({ code: "service_unavailable", retryAfter: expect.stringMatching(/^\d+$/) });
    expect(answers.filter((a) => a.phase === "during").some((a) => a.status === 503)).toBe(true);
    // Besides 503s, uploads are accepted and reads answered.
    for (const answer of answers.filter((a) => a.status !== 503)) expect([200, 202]).toContain(answer.status);

    // Every accepted run is processed, by the same processes (no restart): the queue tried again after the outage.
    const unprocessed = async () =>
      (
        await direct.query(
          `select number, status, failure_reason, created_at from test_runs where project_id = $1 and status <> 'processed' order by number`,
          [projectId],
        )
      ).rows;
    await server
      .until(async () => (await unprocessed()).length === 0, 120_000, 500)
      .catch(async (error: Error) => {
        // Which runs stayed, and whether their uploads were told 202, before the server's output.
        const stuck = (await unprocessed()).map((row) => ({ ...row, accepted: accepted.includes(row.number) }));
        throw new Error(
          `runs not processed: ${JSON.stringify(stuck)}; answers: ${JSON.stringify(answers.filter((a) => a.what === "upload" && a.status !== 202))}\n${error.message}`,
        );
      });
    const { rows } = await direct.query(`select number, status, tests_count from test_runs where project_id = $1 order by number`, [
      projectId,
    ]);
    expect(rows.map((r) => r.number).sort((a, b) => a - b)).toEqual([...new Set([...accepted, big.body.number])].sort((a, b) => a - b));
    for (const row of rows)
      expect(row).toMatchObject({ status: "processed", tests_count: row.number === big.body.number ? BIG_RUN_CASES : 2 });
    // The big run's processing met the outage, and its message was sent again rather than used up.
    expect(server.output()).toMatch(
      new RegExp(
        `"message":"queue message attempt failed".*"databaseUnavailable":true|"databaseUnavailable":true.*"message":"queue message attempt failed"`,
      ),
    );
    expect(server.child.pid).toBe(pid);
    expect(server.child.exitCode).toBeNull();
    expect((await server.call("GET", "/api/v1/projects", apiKey)).status).toBe(200);
    expect(server.output()).not.toMatch(/uncaught exception|Unhandled/i);
  }, 300_000);
});
