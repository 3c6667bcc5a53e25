/**
 * `npm run bench:variants`: the tests list filtered by variant (docs/tests.md, "Variants") against
 * a bare handler on the same SQL (issue 29, "Speed": ≥ 0.8 × a bare handler on 20,000 tests × 3
 * variants).
 *
 * 1. Makes a database on BENCH_PG_URL's server (bench/common.ts withBenchDatabase), an organization
 *    (its API key) and a project through the services, then uploads the same 20,000 cases in each
 *    of 3 variants (`os=linux`, `os=macos`, `os=windows`), BENCH_VARIANT_RUNS runs each, through
 *    the service's own processing (recordTestRunArrival with `{ variant }`, completeTestRun): the
 *    project holds 60,000 tests, their impact (failing executions in the window) spread by
 *    variant-specific failures. ANALYZEs.
 * 2. Spawns bench/servers.ts (our app and the bare app in one child process, one pg pool).
 * 3. Checks that both answer the same tests in the same order, first page and the page after it
 *    (ours through its signed cursor, bare through the plain position), then drives the pairs
 *    (first page, second page, and the unfiltered list as a control) with autocannon
 *    (BENCH_CONNECTIONS connections): a warm-up of each URL, then BENCH_ROUNDS rounds, each
 *    measuring every pair for BENCH_ROUND_SECONDS per side, A B B A, the pairs' order rotating;
 *    medians of the rounds' req/s.
 * 4. EXPLAIN ANALYZE of the two queries (the bare handler's builder, the SQL listTests runs): the
 *    plan, the index, and how many rows it read for a page.
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_VARIANT_RUNS (2),
 *      BENCH_ROUNDS (10), BENCH_ROUND_SECONDS (4), BENCH_WARMUP_SECONDS (2), BENCH_CONNECTIONS (50),
 *      PG_POOL_MAX (20); BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file> (bench/report.ts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon, { type Result } from "autocannon";
import { sql } from "drizzle-orm";
import pg from "pg";
import { rowsOf } from "../src/db/rows";
import type { Report } from "../src/ingest/report";
import { systemClock } from "../src/lib/clock";
import { completeTestRun, recordTestRunArrival } from "../src/services/runs/test-runs";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { type ImpactPosition, testsQuery } from "./bare-app";
import { statementCountingApp, withBenchDatabase } from "./common";
import { recordBenchmark } from "./report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const TESTS = 20_000;
const VARIANTS = ["os=linux", "os=macos", "os=windows"] as const;
const MEASURED = "os=windows";
/** The variant whose tests fail least (EXPLAINed only). */
const QUIET = "os=linux";
const RUNS = Number(process.env.BENCH_VARIANT_RUNS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 4);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const POOL_MAX = Number(process.env.PG_POOL_MAX ?? 20);
const TARGET = 0.8;
const PAGE = 25;
const log = (message: string) => console.error(`[variants-bench] ${message}`);
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Which cases fail in run `run` of a variant: Windows fails most, Linux least, each run a different few. */
const FAILS: Record<(typeof VARIANTS)[number], (n: number, run: number) => boolean> = {
  "os=linux": (n, run) => n % 29 === run,
  "os=macos": (n, run) => n % 17 === run || n % 101 === 0,
  "os=windows": (n, run) => n % 5 === run || n % 13 === 0,
};

function report(variant: (typeof VARIANTS)[number], run: number): Report {
  return {
    suites: [
      {
        name: "suite",
        cases: Array.from({ length: TESTS }, (_, n) => {
          const failing = FAILS[variant](n, run);
          return {
            name: `test_${n}`,
            classname: `com.acme.Module${n % 200}Test`,
            status: failing ? ("failed" as const) : ("passed" as const),
            durationMs: 5 + (n % 40),
            failureType: failing ? "java.lang.AssertionError" : null,
            failureMessage: failing ? `expected ${n} but was ${n + 1}` : null,
            failureText: failing
              ? `java.lang.AssertionError: expected ${n}\n\tat com.acme.Module${n % 200}Test.test_${n}(Module${n % 200}Test.java:${n % 300})`
              : null,
          };
        }),
      },
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// Servers (bench/servers.ts, as bench:api starts them) and load

let servers: ChildProcess | null = null;

function startServers(env: Record<string, string>): Promise<{ ours: number; bare: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/servers.ts")], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    servers = child;
    const timer = setTimeout(() => reject(new Error("bench servers did not start within 60 s")), 60_000);
    child.once("message", (message: { type: string; ours: number; bare: number }) => {
      clearTimeout(timer);
      if (message.type === "ready") resolve({ ours: message.ours, bare: message.bare });
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`bench servers exited early (code ${code}, signal ${signal})`));
    });
  });
}

async function stopServers(): Promise<void> {
  const child = servers;
  servers = null;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** req/s of one autocannon run (2xx only; any error or non-2xx aborts), after the database has finished the abandoned requests. */
async function rate(url: string, headers: Record<string, string>, seconds: number, settle: () => Promise<void>): Promise<number> {
  const result = await new Promise<Result>((resolve, reject) =>
    autocannon({ url, connections: CONNECTIONS, duration: seconds, pipelining: 1, timeout: 30, headers }, (error, r) =>
      error ? reject(error) : resolve(r),
    ),
  );
  await settle();
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0)
    throw new Error(`${url}: ${result.errors} errors, ${result.timeouts} timeouts, non-2xx ${JSON.stringify(result.statusCodeStats)}`);
  return result["2xx"] / result.duration;
}

type Pair = { ours: number[]; bare: number[] };

/**
 * The pairs measured together: a warm-up of every URL first, then ROUNDS rounds, each measuring
 * every pair once, ours and bare back to back in A B B A order (ours first in even rounds), the
 * pairs' order rotating each round, so the shared machine's drifts of load (and the servers'
 * warm-up) hit every pair and both sides alike; req/s per round.
 */
async function measurePairs<K extends string>(
  pairs: Record<K, { ours: string; bare: string }>,
  headers: Record<string, string>,
  settle: () => Promise<void>,
): Promise<Record<K, Pair>> {
  const labels = Object.keys(pairs) as K[];
  for (const label of labels) {
    await rate(pairs[label].ours, headers, WARMUP, settle);
    await rate(pairs[label].bare, headers, WARMUP, settle);
  }
  const samples = Object.fromEntries(labels.map((label) => [label, { ours: [], bare: [] }])) as unknown as Record<K, Pair>;
  for (let round = 0; round < ROUNDS; round++) {
    const order = labels.map((_, i) => labels[(i + round) % labels.length]!);
    for (const label of order) {
      for (const side of round % 2 === 0 ? (["ours", "bare"] as const) : (["bare", "ours"] as const)) {
        samples[label][side].push(await rate(pairs[label][side], headers, ROUND_SECONDS, settle));
        log(`${label} round ${round + 1} ${side}: ${samples[label][side].at(-1)!.toFixed(0)} req/s`);
      }
    }
  }
  return samples;
}

// ---------------------------------------------------------------------------------------------
// Plans

type PlanNode = {
  "Node Type": string;
  "Index Name"?: string;
  "Relation Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Filter?: string;
  "Index Cond"?: string;
  Plans?: PlanNode[];
};

type Plan = { query: string; plan: string; tableRowsRead: number; sorts: boolean; executionMs: number; detail: string };

function chain(node: PlanNode): string {
  let label = node["Node Type"];
  if (node["Index Name"]) label += ` using ${node["Index Name"]}`;
  else if (node["Relation Name"]) label += ` on ${node["Relation Name"]}`;
  const children = node.Plans ?? [];
  return children.length === 0 ? label : `${label} → ${children.map(chain).join("; ")}`;
}

/** The scans of `tests`: the rows they produced plus the rows their filter removed, over all loops. */
function scans(node: PlanNode): PlanNode[] {
  const own = node["Relation Name"] === "tests" ? [node] : [];
  return [...own, ...(node.Plans ?? []).flatMap(scans)];
}

async function explain(client: pg.Client, query: string, builder: { toSQL(): { sql: string; params: unknown[] } }): Promise<Plan> {
  const { sql: text, params } = builder.toSQL();
  let root: { Plan: PlanNode; "Execution Time": number } | undefined;
  // The builder's own SQL and parameters, as the handlers send them; the third run is reported (warm caches).
  for (let i = 0; i < 3; i++) {
    const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode; "Execution Time": number }] }>(
      `explain (analyze, format json) ${text}`,
      params,
    );
    root = rows[0]!["QUERY PLAN"][0];
  }
  const scanned = scans(root!.Plan);
  const read = scanned.reduce(
    (n, s) => n + (s["Actual Rows"] + (s["Rows Removed by Filter"] ?? 0) + (s["Rows Removed by Index Recheck"] ?? 0)) * s["Actual Loops"],
    0,
  );
  const detail = scanned
    .map((s) => [s["Index Cond"] && `index cond ${s["Index Cond"]}`, s.Filter && `filter ${s.Filter}`].filter(Boolean).join(", "))
    .join("; ");
  const planText = JSON.stringify(root!.Plan);
  return {
    query,
    plan: chain(root!.Plan),
    tableRowsRead: read,
    sorts: planText.includes('"Node Type":"Sort"') || planText.includes('"Node Type":"Incremental Sort"'),
    executionMs: root!["Execution Time"],
    detail,
  };
}

// ---------------------------------------------------------------------------------------------
// Main

type ListBody = { data: { id: string; variant: string; impact: number }[]; pagination: { next_cursor: string | null } };

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(2);
  const cpus = os.cpus();
  try {
    await withBenchDatabase(SERVER_URL, "cia_variants_bench", async (database, postgres, url) => {
      const deps = {
        db: database.db,
        clock: systemClock,
        webAppUrl: "https://app.example.com",
        logger: { info() {}, error: (message: string, fields?: Record<string, unknown>) => console.error(message, fields) },
      };
      const org = await createOrganization(deps, { name: "Bench" });
      const projectId = (await createProject(deps, org.organization.id, { name: "Matrix" })).project.id as string;

      // Seed through the service's own processing: RUNS runs of the same 20,000 cases in each variant.
      const t0 = performance.now();
      let sha = 0;
      const processTimes: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        for (const variant of VARIANTS) {
          const start = performance.now();
          const { run: row } = await recordTestRunArrival(deps, projectId, { branch: "main", commitSha: `c${sha++}`, variant });
          await completeTestRun(deps, row.id, report(variant, run));
          processTimes.push(performance.now() - start);
          log(`run ${run + 1} ${variant}: ${(performance.now() - start).toFixed(0)} ms`);
        }
      }
      await database.db.execute(sql`analyze`);
      const seedSeconds = (performance.now() - t0) / 1000;
      const counts = await rowsOf<{ variant: string; tests: number; impacts: number; max_impact: number }>(
        database.db.execute(
          sql`select variant, count(*)::int as tests, count(distinct impact)::int as impacts, max(impact)::int as max_impact
              from tests where project_id = ${projectId} group by variant order by variant`,
        ),
      );
      log(`seeded in ${seedSeconds.toFixed(1)} s: ${JSON.stringify(counts)}`);
      if (counts.length !== VARIANTS.length || counts.some((c) => c.tests !== TESTS))
        throw new Error(`expected ${TESTS} tests in each of ${VARIANTS.length} variants, got ${JSON.stringify(counts)}`);

      const ports = await startServers({
        BENCH_DB_URL: url,
        BENCH_CURSOR_SECRET: randomBytes(24).toString("hex"),
        BENCH_ORG_ID: org.organization.id,
        PG_POOL_MAX: String(POOL_MAX),
      });
      const ours = `http://127.0.0.1:${ports.ours}/api/v1/projects/${projectId}/tests`;
      const bare = `http://127.0.0.1:${ports.bare}/projects/${projectId}/tests`;
      const headers = { authorization: `Bearer ${org.api_key.secret}`, accept: "application/json" };
      const variantParam = `variant=${encodeURIComponent(MEASURED)}`;
      const get = async <T>(target: string): Promise<T> => {
        const res = await fetch(target, { headers });
        if (res.status !== 200) throw new Error(`${target}: HTTP ${res.status} ${await res.text()}`);
        return (await res.json()) as T;
      };

      // Both sides answer the same tests in the same order, first page and the next.
      const oursFirst = await get<ListBody>(`${ours}?${variantParam}`);
      const bareFirst = await get<{ id: string; variant: string; impact: number }[]>(`${bare}?${variantParam}`);
      const last = oursFirst.data.at(-1)!;
      const after: ImpactPosition = { impact: last.impact, id: last.id };
      const urls = {
        first: { ours: `${ours}?${variantParam}`, bare: `${bare}?${variantParam}` },
        second: {
          ours: `${ours}?${variantParam}&cursor=${encodeURIComponent(oursFirst.pagination.next_cursor!)}`,
          bare: `${bare}?${variantParam}&after_impact=${after.impact}&after_id=${after.id}`,
        },
      };
      const oursSecond = await get<ListBody>(urls.second.ours);
      const bareSecond = await get<{ id: string }[]>(urls.second.bare);
      const same = (a: { id: string }[], b: { id: string }[]) => a.length === PAGE && a.every((row, i) => row.id === b[i]?.id);
      if (!same(oursFirst.data, bareFirst) || !same(oursSecond.data, bareSecond) || bareFirst.length !== PAGE + 1)
        throw new Error("ours and bare do not answer the same pages");
      if (![...oursFirst.data, ...oursSecond.data].every((t) => t.variant === MEASURED))
        throw new Error("a test of another variant was listed");
      const impacts = [...oursFirst.data, ...oursSecond.data].map((t) => t.impact);
      log(`pages agree; impacts on the two pages ${Math.max(...impacts)}…${Math.min(...impacts)}`);

      // The server still answers the requests autocannon abandoned: wait until the database has had
      // no running query for 3 polls in a row (150 ms), so that backlog is not billed to the next side.
      const settle = async () => {
        const deadline = Date.now() + 120_000;
        let idle = 0;
        while (Date.now() < deadline) {
          const [row] = await rowsOf<{ n: number }>(
            database.db.execute(
              sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and state <> 'idle' and pid <> pg_backend_pid()`,
            ),
          );
          idle = row!.n === 0 ? idle + 1 : 0;
          if (idle === 3) return;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        throw new Error("the database did not become idle within 120 s after a load run");
      };
      // Statements per request of ours (in process, the pool counted; the bare handler sends 2: the project, the page).
      const counted = statementCountingApp(database, "variants-bench-cursor-secret-0123456789");
      const apiPath = `/api/v1/projects/${projectId}/tests?${variantParam}`;
      await counted(apiPath, org.api_key.secret); // the key resolved once, as the server's counter keeps it
      const statements = {
        first: (await counted(apiPath, org.api_key.secret)).statements,
        plain: (await counted(`/api/v1/projects/${projectId}/tests?sort=impact`, org.api_key.secret)).statements,
      };
      log(`statements per request, ours: variant ${statements.first}, no variant ${statements.plain}`);

      // Control: the unfiltered list of bench:api on the same data, in the same rounds, to tell the variant's own cost from the machine's.
      const measured = await measurePairs(
        { first: urls.first, second: urls.second, plain: { ours: `${ours}?sort=impact`, bare } },
        headers,
        settle,
      );
      const { first, second, plain } = measured;
      await new Promise((resolve) => setTimeout(resolve, 500));
      await stopServers();

      const planClient = new pg.Client({ connectionString: url });
      await planClient.connect();
      const plans = [
        await explain(planClient, `first page, variant ${MEASURED}`, testsQuery(database.db, projectId, null, MEASURED)),
        await explain(planClient, `second page (after impact ${after.impact})`, testsQuery(database.db, projectId, null, MEASURED, after)),
        // The variant with the fewest failures: its tests sit low in the impact order, under the other variants' failing tests.
        await explain(planClient, `first page, variant ${QUIET}`, testsQuery(database.db, projectId, null, QUIET)),
        await explain(planClient, "first page, no variant (bench:api's query)", testsQuery(database.db, projectId, null)),
      ];
      await planClient.end();
      for (const plan of plans) log(`plan ${plan.query}: ${plan.plan}; ${plan.tableRowsRead} rows read; ${plan.executionMs.toFixed(2)} ms`);

      const ratio = (pair: Pair) => median(pair.ours) / median(pair.bare);
      const firstRatio = ratio(first);
      const secondRatio = ratio(second);
      const verdict = (r: number) => (r >= TARGET ? "PASS" : "FAIL");
      // Each round's ours / bare (measured back to back): their median is less moved by the machine's drifts than the ratio of medians.
      const perRound = (pair: Pair) => pair.ours.map((o, i) => o / pair.bare[i]!);
      const rows = (name: string, pair: Pair, judged: boolean) => {
        const r = ratio(pair);
        return `| ${name} | ${median(pair.ours).toFixed(0)} | ${median(pair.bare).toFixed(0)} | ${r.toFixed(2)} | ${median(perRound(pair)).toFixed(2)} | ${perRound(
          pair,
        )
          .map((x) => x.toFixed(2))
          .join(", ")} | ${judged ? `≥ ${TARGET}: ${verdict(r)}` : "diagnostic"} |`;
      };
      const body = [
        "## Tests list filtered by variant vs a bare handler (`npm run bench:variants`)",
        "",
        `Run on ${new Date().toISOString().slice(0, 10)}, ${postgres} on 127.0.0.1, Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}, load average ${load} at start, ${os.loadavg()[0]!.toFixed(2)} at end. ` +
          `One project with ${TESTS.toLocaleString("en-US")} tests in each of ${VARIANTS.length} variants (${VARIANTS.map((v) => `\`${v}\``).join(", ")}: ${(TESTS * VARIANTS.length).toLocaleString("en-US")} tests), made by uploading the same ${TESTS.toLocaleString("en-US")} cases ${RUNS} times in each variant through the service's processing (recordTestRunArrival with the variant, completeTestRun; ${seedSeconds.toFixed(1)} s, a run processed in ${median(processTimes).toFixed(0)} ms median), failures differing by variant so that impact spreads (${counts.map((c) => `${c.variant}: impact 0–${c.max_impact}`).join(", ")}).`,
        "",
        `\`GET /api/v1/projects/:id/tests?variant=${encodeURIComponent(MEASURED)}\` (default sort impact, ${PAGE} a page), ours (createApp with API key, rate limiter, validation, signed cursor, presenters; bench/servers.ts) against a bare \`new Hono()\` handler running the same Drizzle query as listTests (bench/bare-app.ts testsQuery with the variant; the raw rows); the second page through ours' cursor and bare's plain position (the same keyset condition). Both answered the same ${PAGE} tests in the same order on both pages. autocannon, ${CONNECTIONS} connections, pipelining 1, pg pool ${POOL_MAX}; a ${WARMUP} s warm-up of each of the six URLs, then ${ROUNDS} rounds, each measuring the three pairs (their order rotating from round to round) for ${ROUND_SECONDS} s per side, ours and bare back to back alternated A B B A; medians of the rounds' req/s.`,
        "",
        "| Page | Ours req/s (median) | Bare req/s (median) | Ours / bare (of the medians) | Median of the rounds' ours / bare | Per round (ours / bare, in order) | Target |",
        "|---|---:|---:|---:|---:|---|---|",
        rows("First page", first, true),
        rows("Second page (cursor)", second, true),
        rows("Control: no variant (`?sort=impact`, bench:api's tests list)", plain, false),
        "",
        `Statements per request: ours ${statements.first} with the variant, ${statements.plain} without (counted on the pool, in process, the API key already resolved); bare 2 (the project, the page).`,
        "",
        "Query plans (`EXPLAIN ANALYZE` of the SQL the handlers run, as Drizzle builds it; third of three runs):",
        "",
        "| Query | Plan | Rows of `tests` read | Sorts? | Execution (ms) |",
        "|---|---|---:|---|---:|",
        ...plans.map(
          (p) =>
            `| ${p.query} | ${p.plan} (${p.detail.replace(/\|/g, "\\|")}) | ${p.tableRowsRead.toLocaleString("en-US")} of ${(TESTS * VARIANTS.length).toLocaleString("en-US")} | ${p.sorts ? "yes" : "no (index order)"} | ${p.executionMs.toFixed(2)} |`,
        ),
        "",
        ...(() => {
          const worst = Math.max(...plans.map((p) => p.tableRowsRead));
          return worst > 10 * (PAGE + 1)
            ? [
                `The plan does not read a variant's page through tests_project_variant_impact_idx (project_id, variant, impact desc, id desc): a page of a variant reads the tests of the other variants ranked above it (up to ${worst.toLocaleString("en-US")} rows here for one page of ${PAGE + 1}).`,
                "",
              ]
            : [];
        })(),
      ].join("\n");
      console.log(body);
      recordBenchmark({
        name: "variants",
        command: "npm run bench:variants",
        measures: "Tests list filtered by variant (20,000 tests × 3 variants) against a bare handler on the same SQL (req/s)",
        figure: `first page ${firstRatio.toFixed(2)}× ${verdict(firstRatio)}; second page ${secondRatio.toFixed(2)}× ${verdict(secondRatio)}; unfiltered control ${ratio(plain).toFixed(2)}× (medians of the rounds' ratios ${median(perRound(first)).toFixed(2)}, ${median(perRound(second)).toFixed(2)}, ${median(perRound(plain)).toFixed(2)})`,
        target: `ours/bare ≥ ${TARGET}`,
        report: body,
      });
    });
  } finally {
    await stopServers();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
