/**
 * `npm run bench:mcp`: what asking through MCP costs beside asking REST. The same question, a
 * project's tests (first page, 25 of 200), as a `list_tests` tool call by the official SDK's
 * client and as `GET /api/v1/projects/:id/tests` with fetch, both over HTTP to the app served by
 * a Node HTTP server on the local Postgres server; alternated (A B B A…), medians of the round
 * trip as the caller sees it (the MCP client's includes its JSON-RPC framing and its check of the
 * result against the tool's output schema). Records its report in BENCHMARKS.md and
 * bench/history/mcp.md (bench/report.ts; BENCH_NO_RECORD=1 for a trial run).
 */
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { getRequestListener } from "@hono/node-server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createApp } from "../src/app";
import { InProcessRunQueue } from "../src/node/in-process-run-queue";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { type Report, completeTestRun, recordTestRunArrival } from "../src/services/runs/test-runs";
import { withBenchDatabase, benchRequestDeps } from "./common";
import { recordBenchmark } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const TESTS = 200;
const RUNS = 10;
const ROUNDS = 301;
const WARMUP = 30;
const quietLogger: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };
const log = (message: string) => console.error(`[mcp-bench] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function report(run: number): Report {
  return {
    suites: [
      {
        name: "suite",
        cases: Array.from({ length: TESTS }, (_, i) => {
          const failing = (i + run) % 9 === 0;
          return {
            name: `test_${i}`,
            classname: `com.acme.Module${i % 20}Test`,
            status: failing ? ("failed" as const) : ("passed" as const),
            durationMs: 5 + (i % 30),
            failureMessage: failing ? `expected ${i} but was ${i + 1}` : null,
          };
        }),
      },
    ],
  };
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(1);
  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? "unknown CPU"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB`;
  await withBenchDatabase(SERVER_URL, "cia_mcp_bench", async (database, postgres) => {
    const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com", logger: quietLogger };
    const org = await createOrganization(deps, { name: "Bench" });
    const apiKey = org.api_key.secret;
    const { project } = await createProject(deps, org.organization.id, { name: "Bench" });
    for (let run = 0; run < RUNS; run++) {
      const { run: arrived } = await recordTestRunArrival(deps, project.id, { branch: "main", commitSha: `c${run}` });
      await completeTestRun(deps, arrived.id, report(run));
    }

    const app = createApp({
      cursorSecret: "mcp-bench-cursor-secret-0000",
      publicBaseUrl: "https://api.example.com",
      webAppUrl: deps.webAppUrl,
      secrets: new SecretKeyring({ current: generateSecretsKey() }),
    });
    const requestDeps = benchRequestDeps(database.db, new InProcessRunQueue(async () => {}, { logger: quietLogger }), quietLogger);
    const http = createServer(getRequestListener((request) => app.fetch(request, requestDeps)));
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    const client = new Client({ name: "mcp-bench", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } }),
    );
    await client.listTools();

    try {
      const viaMcp = async () => {
        const start = performance.now();
        const result = await client.callTool({ name: "list_tests", arguments: { project_id: project.id } });
        const elapsed = performance.now() - start;
        if (result.isError || (result.structuredContent as { data: unknown[] }).data.length !== 25)
          throw new Error(`unexpected MCP answer: ${JSON.stringify(result).slice(0, 300)}`);
        return elapsed;
      };
      const viaRest = async () => {
        const start = performance.now();
        const res = await fetch(`${base}/api/v1/projects/${project.id}/tests`, { headers: { authorization: `Bearer ${apiKey}` } });
        const body = (await res.json()) as { data: unknown[] };
        const elapsed = performance.now() - start;
        if (res.status !== 200 || body.data.length !== 25) throw new Error(`unexpected REST answer: ${res.status}`);
        return elapsed;
      };
      for (let i = 0; i < WARMUP; i++) {
        await viaMcp();
        await viaRest();
      }
      const mcp: number[] = [];
      const rest: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        if (round % 2 === 0) {
          mcp.push(await viaMcp());
          rest.push(await viaRest());
        } else {
          rest.push(await viaRest());
          mcp.push(await viaMcp());
        }
      }
      const mcpP50 = median(mcp);
      const restP50 = median(rest);
      const ratio = mcpP50 / restP50;
      log(`MCP list_tests p50 ${mcpP50.toFixed(2)} ms, REST p50 ${restP50.toFixed(2)} ms, ratio ${ratio.toFixed(2)}×`);

      const body = [
        "## MCP `list_tests` vs the same REST call (`npm run bench:mcp`)",
        "",
        `Run on ${new Date().toISOString().slice(0, 10)} at commit ${commit}, ${machine}, ${postgres} on 127.0.0.1, Node ${process.version}, load average at start ${load} (a shared machine). A project with ${TESTS} tests and ${RUNS} runs; the first page (25 tests, sorted by impact) asked as a \`list_tests\` tool call by the official SDK's client (\`@modelcontextprotocol/sdk\`, one stateless POST per call, its result checked against the tool's output schema by the client) and as \`GET /api/v1/projects/:id/tests\` with fetch; both over HTTP (loopback) to the app served by a Node HTTP server; ${ROUNDS} rounds alternated after ${WARMUP} warm-ups; medians of the round trip as the caller sees it.`,
        "",
        "| Measure | Median | Ratio |",
        "|---|---:|---:|",
        `| MCP \`list_tests\` round trip | ${mcpP50.toFixed(2)} ms | ${ratio.toFixed(2)}× |`,
        `| REST \`GET /projects/:id/tests\` round trip | ${restP50.toFixed(2)} ms | |`,
        "",
        "The difference is the MCP server built per request (stateless: docs/mcp.md), the JSON-RPC framing, the text summary and the client's output-schema check; the reads are the same service calls.",
      ].join("\n");
      console.log(body);
      recordBenchmark({
        name: "mcp",
        command: "npm run bench:mcp",
        measures: "MCP `list_tests` round trip against the same REST call",
        figure: `MCP ${mcpP50.toFixed(2)} ms vs REST ${restP50.toFixed(2)} ms: ${ratio.toFixed(2)}×`,
        target: "—",
        report: body,
      });
    } finally {
      await client.close();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    }
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
