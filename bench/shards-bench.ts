/**
 * `npm run bench:shards`: what a sharded build costs against one report (docs/uploads.md, "Runs in
 * parts"). A 10,000-case build as 8 JUnit shards of 1,250 cases (bench/junit-generator.ts, one seed
 * each), uploaded at once with one run_key and `shard=I/8`, timed from the LAST shard's 202 to the
 * run processed; against the same 8 documents uploaded as ONE report (the JSON envelope's
 * `junit_xml` array), timed from its 202 to processed. Both through the Node app over HTTP on the
 * Postgres server, with the service's own background work (parts read as they arrive, then the
 * run stored once, the alert checks after it); rounds alternate A B B A, medians. The project
 * knows the tests from the warm-up, as a CI project does.
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_ROUNDS (5 of each),
 * BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file> (bench/report.ts).
 */
import os from "node:os";
import { serve } from "@hono/node-server";
import { createApp } from "../src/app";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { createNodeBackground } from "../src/node/background";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { withBenchDatabase, benchRequestDeps } from "./common";
import { generateJUnit } from "./junit-generator";
import { recordBenchmark } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const SHARDS = 8;
const CASES_PER_SHARD = 1_250;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGET = 1.5;
const quietLogger: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };
const log = (message: string) => console.error(`[shards-bench] ${message}`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(2);
  let server: ReturnType<typeof serve> | undefined;
  await withBenchDatabase(SERVER_URL, "cia_shards_bench", async (database, postgres) => {
    try {
      const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com", logger: quietLogger };
      const secrets = new SecretKeyring({ current: generateSecretsKey() });
      const org = await createOrganization(deps, { name: "Bench" });
      const { upload_token: token } = await createProject(deps, org.organization.id, { name: "Bench" });
      const { queue } = createNodeBackground({ ...deps, secrets });
      const app = createApp({
        cursorSecret: "shards-bench-cursor-secret",
        publicBaseUrl: "https://api.example.com",
        webAppUrl: deps.webAppUrl,
        secrets,
      });
      const requestDeps = benchRequestDeps(deps.db, queue, quietLogger, deps.clock);
      const port = await new Promise<number>((resolve) => {
        server = serve({ fetch: (request) => app.fetch(request, requestDeps), port: 0, hostname: "127.0.0.1" }, (info) =>
          resolve(info.port),
        );
      });
      const base = `http://127.0.0.1:${port}`;
      const shards = Array.from({ length: SHARDS }, (_, i) => generateJUnit({ cases: CASES_PER_SHARD, seed: 7_000 + i }));

      const post = async (query: string, body: string, contentType: string) => {
        const res = await fetch(`${base}/uploads/v1/test_runs?${query}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": contentType },
          body,
        });
        if (res.status !== 202) throw new Error(`upload failed: ${res.status} ${await res.text()}`);
        const answered = performance.now();
        return { number: ((await res.json()) as { number: number }).number, answered };
      };
      /** Waits for the background work to finish, then checks the run. */
      const processed = async (number: number) => {
        await queue.idle();
        const end = performance.now();
        const res = await fetch(`${base}/uploads/v1/test_runs/${number}`, { headers: { authorization: `Bearer ${token}` } });
        const run = (await res.json()) as { status: string; tests_count: number };
        if (run.status !== "processed" || run.tests_count !== SHARDS * CASES_PER_SHARD)
          throw new Error(`run ${number}: ${run.status}, ${run.tests_count} cases`);
        return end;
      };
      let commit = 0;
      const oneReport = async () => {
        const { number, answered } = await post(
          `branch=main&commit_sha=c${commit++}`,
          JSON.stringify({ junit_xml: shards }),
          "application/json",
        );
        return (await processed(number)) - answered;
      };
      const sharded = async () => {
        const key = `build-${commit++}`;
        const answers = await Promise.all(
          shards.map((xml, i) => post(`branch=main&commit_sha=c${commit}&run_key=${key}&shard=${i + 1}/${SHARDS}`, xml, "application/xml")),
        );
        if (new Set(answers.map((a) => a.number)).size !== 1) throw new Error("the shards made more than one run");
        return (await processed(answers[0]!.number)) - Math.max(...answers.map((a) => a.answered));
      };

      await oneReport(); // warm-up: the project's tests exist from now on
      await sharded();
      const single: number[] = [];
      const parts: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        for (const variant of round % 2 === 0 ? (["one", "shards"] as const) : (["shards", "one"] as const)) {
          if (variant === "one") single.push(await oneReport());
          else parts.push(await sharded());
          log(`round ${round + 1} ${variant}: ${(variant === "one" ? single : parts).at(-1)!.toFixed(0)} ms`);
        }
      }
      const ratio = median(parts) / median(single);
      const verdict = ratio <= TARGET ? "PASS" : "FAIL";
      const body = [
        "## Sharded builds (`npm run bench:shards`)",
        "",
        `Run on ${new Date().toISOString().slice(0, 10)}, ${postgres} on 127.0.0.1, Node ${process.version}, ${os.cpus().length} cores, load average at start ${load}. A build of ${(SHARDS * CASES_PER_SHARD).toLocaleString("en-US")} cases as ${SHARDS} JUnit shards of ${CASES_PER_SHARD.toLocaleString("en-US")} (bench/junit-generator.ts, seeds 7000–${7000 + SHARDS - 1}), uploaded at once with one run_key and shard=I/${SHARDS}, against the same ${SHARDS} documents uploaded as one report (the JSON envelope's junit_xml); the Node app over HTTP with its own background work; ${ROUNDS} rounds of each, alternated A B B A, medians.`,
        "",
        "| Upload | 202 → processed (median) |",
        "|---|---:|",
        `| One report | ${median(single).toFixed(0)} ms |`,
        `| ${SHARDS} shards, from the last shard's 202 | ${median(parts).toFixed(0)} ms |`,
        "",
        `Sharded / one report: **${ratio.toFixed(2)}×** (target ≤ ${TARGET}×: ${verdict}).`,
        "",
      ].join("\n");
      console.log(body);
      recordBenchmark({
        name: "shards",
        command: "npm run bench:shards",
        measures: "A 10,000-case build as 8 shards vs one report: last shard's 202 to the run processed",
        figure: `${ratio.toFixed(2)}× ${verdict}`,
        target: `≤ ${TARGET}×`,
        report: body,
      });
      await queue.close();
    } finally {
      server?.close();
    }
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
