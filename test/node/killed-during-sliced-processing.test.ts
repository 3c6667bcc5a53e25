/**
 * kill -9 in the middle of a run on the embedded database (PGlite), where a large run is stored in
 * slices (src/services/runs/sliced-store.ts): `npm start` in a temporary directory is killed with
 * SIGKILL while it stores a 20,000-case run. What the directory then holds: the run pending, none
 * of its cases, suites or tests visible, only staged rows. The next start on the directory
 * recovers the run, deletes what was staged and stores it whole, once.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { generateJUnit } from "../../bench/junit-generator";
import { rowsOf } from "../../src/db/rows";
import { openDatabase } from "../../src/node/database";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tsxPackage = JSON.parse(readFileSync(join(root, "node_modules/tsx/package.json"), "utf8")) as { exports: { ".": string } };
const tsxLoader = pathToFileURL(join(root, "node_modules/tsx", tsxPackage.exports["."])).href;
const ADMIN_TOKEN = "killed-sliced-admin-token-0123456789";
const CASES = 20_000;

const dir = mkdtempSync(join(tmpdir(), "cta-killed-sliced-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** `npm start` in the temporary directory (its database in ./.data/pglite); resolves with its base URL once it listens. */
async function start(): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  const child = spawn(process.execPath, ["--import", tsxLoader, join(root, "src/node/server.ts")], {
    cwd: dir,
    env: {
      ...process.env,
      DATABASE_URL: "",
      PORT: "0",
      SEED_DEMO: "false",
      WEB_APP_URL: "",
      PUBLIC_BASE_URL: "",
      ADMIN_TOKEN,
      SECRETS_KEY: "killed-sliced-secrets-key-0123456789abcdef",
      TSX_TSCONFIG_PATH: join(root, "tsconfig.json"),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 120_000;
  for (;;) {
    const ready = /listening on (http:\/\/localhost:\d+)\/api\/v1/.exec(output);
    if (ready) return { child, base: ready[1]!, output: () => output };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the server did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function call(
  base: string,
  method: string,
  path: string,
  token: string,
  body?: RequestInit["body"],
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...headers }, body });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

type State = { status: string; cases: number; suites: number; staged: number; tests: number; stored_cases: number; staged_tests: number };

/** The run as the directory holds it, read with the server stopped (PGlite is one process's). */
async function stateOnDisk(runNumber: number): Promise<State> {
  const database = await openDatabase(undefined, { dataDir: join(dir, ".data/pglite") });
  try {
    const stagedTests = await rowsOf<{ n: number | null }>(
      database.db.execute(sql`select case when to_regclass('run_staging.tests') is null then 0 end as n`),
    );
    const [row] = await rowsOf<State>(
      database.db.execute(sql`
        select r.status, (select count(*)::int from test_cases c where c.test_run_id = r.id) as cases,
          (select count(*)::int from test_suites s where s.test_run_id = r.id) as suites,
          (select count(*)::int from staged_test_cases c where c.test_run_id = r.id) as staged,
          (select count(*)::int from tests t where t.project_id = r.project_id) as tests,
          (select stored_cases_count::int from projects p where p.id = r.project_id) as stored_cases
        from test_runs r where r.number = ${runNumber}`),
    );
    const staged_tests =
      stagedTests[0]!.n === 0
        ? 0
        : (await rowsOf<{ n: number }>(database.db.execute(sql`select count(*)::int as n from run_staging.tests`)))[0]!.n;
    return { ...row!, staged_tests };
  } finally {
    await database.close();
  }
}

describe("the embedded server is killed (SIGKILL) while it stores a 20,000-case run in slices", () => {
  it("leaves the run pending with only staged rows; the next start stores it whole, once", { timeout: 400_000 }, async () => {
    const first = await start();
    const json = { "content-type": "application/json" };
    const organization = await call(first.base, "POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Killed" }), json);
    const project = await call(
      first.base,
      "POST",
      `/admin/v1/organizations/${organization.body.organization.id}/projects`,
      ADMIN_TOKEN,
      JSON.stringify({ name: "Big" }),
      json,
    );
    const uploadToken = project.body.upload_token as string;
    const report = gzipSync(generateJUnit({ cases: CASES, seed: 7 }));
    const uploaded = await call(first.base, "POST", "/uploads/v1/test_runs?branch=main", uploadToken, report, {
      "content-type": "application/xml",
      "content-encoding": "gzip",
    });
    expect(uploaded.status).toBe(202);
    const number = uploaded.body.number as number;
    // The server answers while it stores the run in slices: a few answers in, it is under way.
    for (let answered = 0; answered < 8; answered++) {
      const view = await call(first.base, "GET", `/uploads/v1/test_runs/${number}`, uploadToken);
      expect(view.body.status).toBe("pending");
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));

    const killed = await stateOnDisk(number);
    expect(killed).toMatchObject({ status: "pending", cases: 0, suites: 0, tests: 0, stored_cases: 0 });
    // Killed mid-run: some of it was staged (cases, or the tests' rows), none of it visible.
    expect(killed.staged + killed.staged_tests).toBeGreaterThan(0);

    const second = await start();
    const deadline = Date.now() + 240_000;
    for (;;) {
      const view = await call(second.base, "GET", `/uploads/v1/test_runs/${number}`, uploadToken);
      if (view.body.status !== "pending") {
        expect(view.body).toMatchObject({ status: "processed", tests_count: CASES });
        break;
      }
      if (Date.now() > deadline) throw new Error(`the run was not processed after the restart:\n${second.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(second.output()).toContain("queued runs left pending by an earlier process");
    second.child.kill("SIGTERM");
    await new Promise((resolve) => second.child.once("exit", resolve));

    const stored = await stateOnDisk(number);
    expect(stored).toMatchObject({ status: "processed", cases: CASES, staged: 0, staged_tests: 0, stored_cases: CASES });
    expect(stored.suites).toBeGreaterThan(0);
    expect(stored.tests).toBeGreaterThan(0);
  });
});
