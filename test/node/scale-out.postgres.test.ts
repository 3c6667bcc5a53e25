/**
 * Node scaled out (SCALE_OUT=true, docs/scale-out.md): two server processes on one database of
 * this file's own, behind a round-robin HTTP proxy written here, the way a load balancer would
 * put them. Started at once, one migrates and seeds the demo while the other waits for the start
 * lock; uploads through the proxy are each processed exactly once, whichever process took them;
 * an API key's 600 requests a minute hold across both; a process killed (SIGKILL) in the middle
 * of a large run's COPY leaves it to the other, which takes it over within a minute and stores
 * it whole, once. And a process refuses to start scaled out without the shared secrets.
 *
 * Postgres only, like the other process files (vitest.config.ts collects `*.postgres.test.ts`
 * only with TEST_DATABASE_URL); in the slow tier (test/support/tiers.ts).
 */
import { spawn } from "node:child_process";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateJUnit } from "../../bench/junit-generator";
import { testDatabaseUrl as theTestDatabaseUrl } from "../support/harness";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const ADMIN_TOKEN = "scale-out-admin-token-0123456789";
const SHARED = {
  SCALE_OUT: "true",
  ADMIN_TOKEN,
  SECRETS_KEY: "scale-out-test-secrets-key-0123456789abcdef",
  CURSOR_SECRET: "scale-out-test-cursor-secret-0123",
};
const UPLOADS = 12;
const BIG_RUN_CASES = 100_000;

const suiteUrl = await theTestDatabaseUrl();
if (!suiteUrl) throw new Error("scale-out.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");
const databaseName = `scale_out_${process.pid}`;
const databaseUrl = Object.assign(new URL(suiteUrl), { pathname: `/${databaseName}` }).toString();
/** Each process's connections say whose they are in pg_stat_activity (node-postgres takes application_name from the URL). */
const urlOf = (instance: string) => `${databaseUrl}?application_name=${instance}`;

let admin: pg.Client;
let direct: pg.Client;
const instances = new Map<string, ServerProcess>();
let proxy: RoundRobinProxy;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: suiteUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${databaseName}`);
  await admin.query(`create database ${databaseName}`);
  direct = new pg.Client({ connectionString: databaseUrl });
  await direct.connect();
  // Both at once on the empty database: the start lock lets one migrate and seed the demo.
  const started = await Promise.all(
    ["instance-a", "instance-b"].map((name) =>
      startServerProcess({ ...SHARED, DATABASE_URL: urlOf(name), SEED_DEMO: "true" }, { startTimeoutMs: 180_000 }),
    ),
  );
  instances.set("instance-a", started[0]!);
  instances.set("instance-b", started[1]!);
  proxy = await RoundRobinProxy.start(started.map((server) => server.base));
}, 240_000);

afterAll(async () => {
  for (const server of instances.values()) server.child.kill("SIGKILL");
  await proxy?.close();
  await direct?.end();
  await new Promise((resolve) => setTimeout(resolve, 500));
  await admin?.query(`drop database if exists ${databaseName} with (force)`).catch(() => {});
  await admin?.end();
});

/** Forwards each request to the next process in turn, and says which one answered (`x-served-by`). */
class RoundRobinProxy {
  #next = 0;
  private constructor(
    private readonly server: Server,
    readonly base: string,
  ) {}

  static async start(targets: string[]): Promise<RoundRobinProxy> {
    const holder: { proxy?: RoundRobinProxy } = {};
    const server = createServer((request, response) => void holder.proxy!.forward(targets, request, response));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    holder.proxy = new RoundRobinProxy(server, `http://127.0.0.1:${(server.address() as { port: number }).port}`);
    return holder.proxy;
  }

  async forward(targets: string[], request: IncomingMessage, response: ServerResponse): Promise<void> {
    const target = targets[this.#next++ % targets.length]!;
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(([name, value]) => typeof value === "string" && !["host", "connection"].includes(name)),
    ) as Record<string, string>;
    try {
      const answer = await fetch(`${target}${request.url}`, {
        method: request.method,
        headers,
        body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      });
      const body = Buffer.from(await answer.arrayBuffer());
      const kept = [...answer.headers].filter(([name]) => !["content-encoding", "content-length", "transfer-encoding"].includes(name));
      response.writeHead(answer.status, Object.fromEntries([...kept, ["x-served-by", target]]));
      response.end(body);
    } catch {
      response.writeHead(502).end();
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function viaProxy(method: string, path: string, token: string, body?: string, contentType = "application/json") {
  const response = await fetch(`${proxy.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": contentType } : {}) },
    body,
  });
  const text = await response.text();
  return { status: response.status, servedBy: response.headers.get("x-served-by"), body: text ? JSON.parse(text) : undefined };
}

async function newProject(name: string) {
  const organization = await viaProxy("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name }));
  expect(organization.status).toBe(201);
  const organizationId = organization.body.organization.id as string;
  const project = await viaProxy("POST", `/admin/v1/organizations/${organizationId}/projects`, ADMIN_TOKEN, JSON.stringify({ name }));
  expect(project.status).toBe(201);
  return {
    organizationId,
    apiKey: organization.body.api_key.secret as string,
    projectId: project.body.project.id as string,
    uploadToken: project.body.upload_token as string,
  };
}

const query = async <T>(text: string, values: unknown[] = []) => (await direct.query(text, values)).rows as T[];

async function waitFor(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("two processes started at once on an empty database", () => {
  it("migrate and seed the demo once: one demo organization, and the other process found it done", async () => {
    const [demo] = await query<{ n: number }>(`select count(*)::int as n from organizations where name = 'Demo Organization'`);
    expect(demo!.n).toBe(1);
    const outputs = [...instances.values()].map((server) => server.output());
    expect(outputs.filter((output) => output.includes("Created the demo organization"))).toHaveLength(1);
    expect(outputs.filter((output) => output.includes("The database already has data"))).toHaveLength(1);
  });
});

describe("uploads through the proxy", () => {
  it("are each processed exactly once, by either process", async () => {
    const { projectId, uploadToken } = await newProject("Uploads");
    const report = generateJUnit({ cases: 200, suites: 8, failureRate: 0.1, seed: 7 });
    const servedBy = new Set<string>();
    for (let i = 0; i < UPLOADS; i++) {
      const uploaded = await viaProxy("POST", "/uploads/v1/test_runs?branch=main", uploadToken, report, "application/xml");
      expect(uploaded.status).toBe(202);
      servedBy.add(uploaded.servedBy!);
    }
    expect(servedBy.size).toBe(2);
    await waitFor(
      async () => (await query(`select 1 from test_runs where project_id = $1 and status = 'pending'`, [projectId])).length === 0,
      120_000,
      "the uploads to be processed",
    );
    const runs = await query<{ status: string; tests_count: number; cases: number; suites: number; suites_count: number }>(
      `select status, tests_count, suites_count,
         (select count(*)::int from test_cases c where c.test_run_id = r.id) as cases,
         (select count(*)::int from test_suites s where s.test_run_id = r.id) as suites
       from test_runs r where project_id = $1`,
      [projectId],
    );
    expect(runs).toHaveLength(UPLOADS);
    for (const run of runs) {
      expect(run).toMatchObject({ status: "processed", tests_count: 200, cases: 200 });
      expect(run.suites).toBe(run.suites_count);
    }
    // Each run moved each of its tests' counts once: a run stored twice would count 13.
    const executions = await query<{ executions_count: number }>(`select executions_count from tests where project_id = $1`, [projectId]);
    expect(executions.length).toBeGreaterThan(0);
    for (const test of executions) expect(test.executions_count).toBe(UPLOADS);
    // Each alert check ran at most once per run (one processed after a later run of its project is not checked: src/services/alerts/alert-checks.ts).
    const checked = await query<{ runs_checked: number }>(`select runs_checked from alert_check_states where project_id = $1`, [projectId]);
    for (const state of checked) expect(state.runs_checked).toBeLessThanOrEqual(UPLOADS);
    const duplicateEvents = await query(
      `select e.alert_id, e.test_run_id from alert_events e join test_runs r on r.id = e.test_run_id
       where r.project_id = $1 group by e.alert_id, e.test_run_id, e.metadata::text having count(*) > 1`,
      [projectId],
    );
    expect(duplicateEvents).toEqual([]);
  });
});

describe("an API key's rate limit", () => {
  it("admits 600 requests a minute across both processes and refuses the 601st, whichever process answers", async () => {
    const { apiKey } = await newProject("Rate limit");
    const statuses: number[] = [];
    const servedBy = new Set<string>();
    for (let batch = 0; batch < 30; batch++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => viaProxy("GET", "/api/v1/organization", apiKey)));
      for (const answer of answers) {
        statuses.push(answer.status);
        servedBy.add(answer.servedBy!);
      }
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(600);
    expect(servedBy.size).toBe(2);
    for (const server of instances.values()) {
      const refused = await server.call("GET", "/api/v1/organization", apiKey);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    }
  });
});

describe("a process killed (SIGKILL) in the middle of a run", () => {
  it("leaves the run to the other process, which takes it over within a minute and stores it whole, once", async () => {
    const { projectId, uploadToken } = await newProject("Killed");
    const uploaded = await viaProxy(
      "POST",
      "/uploads/v1/test_runs?branch=main",
      uploadToken,
      generateJUnit({ cases: BIG_RUN_CASES, systemOutBytes: 0 }),
      "application/xml",
    );
    expect(uploaded.status).toBe(202);
    const copying = async () =>
      query<{ application_name: string }>(
        `select application_name from pg_stat_activity
         where datname = current_database() and state = 'active' and query ilike 'copy test_cases%'`,
      );
    await waitFor(async () => (await copying()).length > 0, 60_000, "the run's COPY");
    const [{ application_name: victimName }] = (await copying()) as [{ application_name: string }];
    const victim = instances.get(victimName)!;
    const survivorName = victimName === "instance-a" ? "instance-b" : "instance-a";
    victim.child.kill("SIGKILL");
    await new Promise((resolve) => victim.child.once("exit", resolve));
    const killedAt = Date.now();

    // The other process starts the run's COPY again once the dead one's job expired.
    await waitFor(async () => (await copying()).some((row) => row.application_name === survivorName), 60_000, "the take-over");
    console.log(`the run was taken over ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
    await waitFor(
      async () => (await query(`select 1 from test_runs where project_id = $1 and status = 'pending'`, [projectId])).length === 0,
      120_000,
      "the run to be stored",
    );
    const [run] = await query<{ status: string; tests_count: number; cases: number }>(
      `select status, tests_count, (select count(*)::int from test_cases c where c.test_run_id = r.id) as cases
       from test_runs r where project_id = $1`,
      [projectId],
    );
    expect(run).toEqual({ status: "processed", tests_count: BIG_RUN_CASES, cases: BIG_RUN_CASES });
  });
});

describe("a process asked to scale out", () => {
  it.each([
    ["SECRETS_KEY", { CURSOR_SECRET: SHARED.CURSOR_SECRET }],
    ["CURSOR_SECRET", { SECRETS_KEY: SHARED.SECRETS_KEY }],
  ])("refuses to start without %s, saying so, and exits with 1", async (missing, secrets) => {
    const { SECRETS_KEY: _key, CURSOR_SECRET: _cursor, ...environment } = process.env;
    const child = spawn(process.execPath, ["--import", "tsx", "src/node/server.ts"], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      env: { ...environment, PORT: "0", SCALE_OUT: "true", DATABASE_URL: databaseUrl, ...secrets },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Should it start after all, it must not outlive the test.
    const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    clearTimeout(guard);
    expect(code).toBe(1);
    expect(output).toContain("failed to start");
    expect(output).toContain(`SCALE_OUT=true needs ${missing} set`);
    expect(output).not.toContain("listening on");
  });
});
