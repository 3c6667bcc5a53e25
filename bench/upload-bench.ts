/**
 * `npm run bench:upload`: a 10,000-case JUnit file (bench/junit-generator.ts, fixed seed) from
 * upload to `processed` on the Postgres server, over HTTP against the Node server's app, beside
 * the time to only parse the same file with the XML library (saxes, no handlers) — in one run,
 * so the ratios hold on a noisy shared machine.
 *
 * Measured per round (ROUNDS rounds after a warm-up, medians reported):
 * - end to end: POST until GET /uploads/v1/test_runs/:n reports `processed` (polled every 5 ms);
 * - processing: the queue consumer's processTestRun (parse the payload the in-process queue hands
 *   over, store in one transaction with COPY), once more with the payload read back from the
 *   database instead (what a retry, or the Worker's queue consumer, does);
 * - our parse: parseJUnit alone (XML → report);
 * - bare parse: saxes over the same text with no handlers.
 * Peak memory of the processing step: growth of the process's maximum RSS across the 10,000-case
 * processing steps (the warm-up already reached the steady state of everything else), and the
 * V8 heap growth sampled around one processing step.
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres): a server where the
 * benchmark may create and drop its own database; BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file>
 * (bench/report.ts: by default the report is recorded in BENCHMARKS.md and bench/history/upload.md).
 */
import os from "node:os";
import { serve } from "@hono/node-server";
import { sql } from "drizzle-orm";
import { SaxesParser } from "saxes";
import { createApp } from "../src/app";
import type { Logger } from "../src/lib/logger";
import { type CopyIn, registerCopyIn, registeredCopyIn } from "../src/db/bulk-copy";
import { InProcessRunQueue } from "../src/node/in-process-run-queue";
import { parseJUnit } from "../src/ingest/junit";
import { systemClock } from "../src/lib/clock";
import { SecretKeyring, generateSecretsKey } from "../src/lib/secret-box";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import { processTestRun } from "../src/services/runs/run-processing";
import { withBenchDatabase, benchRequestDeps } from "./common";
import { recordBenchmark } from "./report";
import { generateJUnit } from "./junit-generator";

const CASES = 10_000;
const SEED = 20261121;
const ROUNDS = 11;
const READ_BACK_ROUNDS = 5;
const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

const quietLogger: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };
const log = (message: string) => console.error(`[upload-bench] ${message}`);
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const ms = (value: number) => `${value.toFixed(1)} ms`;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

function timeIt<T>(fn: () => T): [T, number] {
  const start = performance.now();
  const result = fn();
  return [result, performance.now() - start];
}

function bareParse(xml: string): void {
  new SaxesParser({ xmlns: false, position: true }).write(xml).close();
}

async function main(): Promise<void> {
  const load = os.loadavg()[0]!.toFixed(1);
  let server: ReturnType<typeof serve> | undefined;
  await withBenchDatabase(SERVER_URL, "cia_upload_bench", async (database, postgres) => {
    // The server stops before the database closes.
    try {
      const deps = { db: database.db, clock: systemClock, webAppUrl: "https://app.example.com" };
      const org = await createOrganization(deps, { name: "Bench" });
      const { upload_token: token } = await createProject(deps, org.organization.id, { name: "Bench" });

      const processingTimes: number[] = [];
      const heapGrowth: number[] = [];
      /** Off: the consumer ignores the handed-over payload and reads the stored one. */
      let handOver = true;
      /** Off: processing without the tests' state and the failure groups (the baseline of what they add). */
      let testsAndGroups = true;
      const queue = new InProcessRunQueue(
        async (message, attempt) => {
          if (!("testRunId" in message)) return;
          const heapBefore = process.memoryUsage().heapUsed;
          const start = performance.now();
          await processTestRun(
            { ...deps, logger: quietLogger, testsAndGroups },
            message.testRunId,
            handOver ? attempt : { finalAttempt: attempt.finalAttempt },
          );
          processingTimes.push(performance.now() - start);
          heapGrowth.push(process.memoryUsage().heapUsed - heapBefore);
        },
        { logger: quietLogger },
      );
      // No webhooks in this benchmark: a key of this process will do.
      const app = createApp({
        cursorSecret: "upload-bench-cursor-secret",
        publicBaseUrl: "https://api.example.com",
        webAppUrl: deps.webAppUrl,
        secrets: new SecretKeyring({ current: generateSecretsKey() }),
      });
      const requestDeps = benchRequestDeps(deps.db, queue, quietLogger, deps.clock);
      const port = await new Promise<number>((resolve) => {
        server = serve({ fetch: (request) => app.fetch(request, requestDeps), port: 0, hostname: "127.0.0.1" }, (info) =>
          resolve(info.port),
        );
      });
      const base = `http://127.0.0.1:${port}`;

      const upload = async (xml: string) => {
        const start = performance.now();
        const res = await fetch(`${base}/uploads/v1/test_runs?branch=main`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/xml" },
          body: xml,
        });
        if (res.status !== 202) throw new Error(`upload failed: ${res.status} ${await res.text()}`);
        const run = (await res.json()) as { number: number };
        for (;;) {
          const poll = await fetch(`${base}/uploads/v1/test_runs/${run.number}`, { headers: { authorization: `Bearer ${token}` } });
          const body = (await poll.json()) as { status: string; tests_count: number; failure_reason: string | null };
          if (body.status === "processed") {
            if (body.tests_count !== CASES && xml.length > 100_000) throw new Error(`expected ${CASES} cases, got ${body.tests_count}`);
            return { ms: performance.now() - start };
          }
          if (body.status === "failed") throw new Error(`run failed: ${body.failure_reason}`);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      };

      // The same upload, waited for in process (the queue going idle) instead of by HTTP polling:
      // the processing step then runs without 5-ms polls competing for the same Node thread and pool.
      const uploadQuietly = async (xml: string) => {
        const res = await fetch(`${base}/uploads/v1/test_runs?branch=main`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/xml" },
          body: xml,
        });
        if (res.status !== 202) throw new Error(`upload failed: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
        await queue.idle();
        return processingTimes.at(-1)!;
      };

      const xml = generateJUnit({ cases: CASES, seed: SEED });
      log(`generated ${CASES} cases, ${mib(Buffer.byteLength(xml))}; load ${load}`);
      // Warm-up: JIT, connection pool, Postgres caches.
      for (let i = 0; i < 2; i++) await upload(xml);
      bareParse(xml);
      parseJUnit(xml);
      global.gc?.();
      const rssBefore = process.resourceUsage().maxRSS * 1024;
      heapGrowth.length = 0;

      const rows: { endToEnd: number; polledProcessing: number; processing: number; parse: number; bare: number }[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const [, bare] = timeIt(() => bareParse(xml));
        const [, parse] = timeIt(() => parseJUnit(xml));
        const { ms: endToEnd } = await upload(xml);
        // One upload at a time and one processing at a time: the last processing time is this run's.
        const polledProcessing = processingTimes.at(-1)!;
        const processing = await uploadQuietly(xml);
        rows.push({ endToEnd, polledProcessing, processing, parse, bare });
        log(
          `round ${round + 1}: end to end ${ms(endToEnd)} (processing ${ms(polledProcessing)} while polled), processing ${ms(processing)}, our parse ${ms(parse)}, bare parse ${ms(bare)}`,
        );
      }
      // After the measured rounds, so their extra WAL traffic does not weigh on them: processing
      // that reads the payload back from the database, as a retry or the Worker's consumer does.
      const readBacks: number[] = [];
      handOver = false;
      for (let i = 0; i < READ_BACK_ROUNDS; i++) readBacks.push(await uploadQuietly(xml));
      handOver = true;
      log(`read back: ${readBacks.map(ms).join(", ")}`);
      // The Node side alone: the same step with Postgres's part of the COPY taken away. Rows are
      // still encoded and turned into bytes as the driver does, then dropped (those runs keep no
      // cases). Alternated with ordinary processing steps, so both see the same machine.
      let droppedBytes = 0;
      const bytesOnlyCopyIn: CopyIn = () => ({
        write: (rows) => {
          droppedBytes += Buffer.from(rows).length;
        },
        end: async () => {},
        abort: async () => {},
      });
      const realCopyIn = registeredCopyIn(database.db)!;
      const nodeSideOnly: number[] = [];
      const alongside: number[] = [];
      for (let i = 0; i < READ_BACK_ROUNDS; i++) {
        registerCopyIn(database.db, bytesOnlyCopyIn);
        nodeSideOnly.push(await uploadQuietly(xml));
        registerCopyIn(database.db, realCopyIn);
        alongside.push(await uploadQuietly(xml));
      }
      log(
        `without Postgres's COPY ingest: ${nodeSideOnly.map(ms).join(", ")} (${mib(droppedBytes / READ_BACK_ROUNDS)} of rows per run); alongside, with it: ${alongside.map(ms).join(", ")}`,
      );
      // What the tests' state and the failure groups add: the same step without them, alternated
      // with ordinary steps. The project already knows the file's 10,000 tests (the steady state of
      // a CI project), so the ordinary steps update existing test rows.
      const withoutTests: number[] = [];
      const withTests: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        testsAndGroups = false;
        withoutTests.push(await uploadQuietly(xml));
        testsAndGroups = true;
        withTests.push(await uploadQuietly(xml));
      }
      log(`without the tests' state and groups: ${withoutTests.map(ms).join(", ")}; with them: ${withTests.map(ms).join(", ")}`);
      // The floor of keeping per-test rows at processing: one statement that touches each of the
      // run's tests' rows once and changes one counter, in its own transaction, rolled back. Timed
      // alternately with steps without the tests' state (their runs feed the statement).
      const floor: number[] = [];
      const floorBaseline: number[] = [];
      const rolledBack = new Error("rolled back");
      for (let i = 0; i < ROUNDS; i++) {
        testsAndGroups = false;
        floorBaseline.push(await uploadQuietly(xml));
        testsAndGroups = true;
        await database.db
          .transaction(async (tx) => {
            const start = performance.now();
            const touched = await tx.execute(
              sql`update tests set executions_count = executions_count + 1 where id in (select test_id from test_cases where test_run_id = (select max(id) from test_runs where status = 'processed'))`,
            );
            floor.push(performance.now() - start);
            const count = (touched as unknown as { rowCount?: number }).rowCount;
            if (count !== CASES) throw new Error(`the floor statement touched ${count} rows`);
            throw rolledBack;
          })
          .catch((error: unknown) => {
            if (error !== rolledBack) throw error;
          });
      }
      log(`floor statement: ${floor.map(ms).join(", ")}; alongside, without the tests' state: ${floorBaseline.map(ms).join(", ")}`);
      const rssAfter = process.resourceUsage().maxRSS * 1024;

      const endToEnd = median(rows.map((r) => r.endToEnd));
      const processing = median(rows.map((r) => r.processing));
      const polledProcessing = median(rows.map((r) => r.polledProcessing));
      const readBack = median(readBacks);
      const nodeSide = median(nodeSideOnly);
      const nodeSideAlongside = median(alongside);
      const parse = median(rows.map((r) => r.parse));
      const bare = median(rows.map((r) => r.bare));
      const ratio = processing / bare;
      const testsCost = median(withTests) / median(withoutTests);
      const body = [
        "## Uploads: 10,000-case JUnit file (`npm run bench:upload`)",
        "",
        `Run on ${new Date().toISOString().slice(0, 10)}, ${postgres} on 127.0.0.1, Node ${process.version}, load average at start ${load}. ` +
          `File: \`generateJUnit({ cases: ${CASES}, seed: ${SEED} })\` (bench/junit-generator.ts), ${mib(Buffer.byteLength(xml))}, Surefire-like (failures with stack traces, skips, flaky reruns, system-out). ` +
          `${ROUNDS} rounds after 2 warm-up uploads; medians. Each round: the bare parse, our parse, one upload followed by HTTP polling (end to end), then one upload awaited in process (the processing step without polls competing with it for the one Node thread and the pool, with the payload handed over by the in-process queue). Then ${READ_BACK_ROUNDS} uploads processed with the payload read back from the database, and ${READ_BACK_ROUNDS} whose COPY rows are encoded to bytes and dropped instead of sent to Postgres, each followed by an ordinary one. Then ${ROUNDS} without the tests' state and the failure groups (\`testsAndGroups: false\`: no signatures, no test or group rows; the cases still carry their project and derived test id, and that index), each followed by an ordinary one; the project already knows the file's tests, as a CI project does.`,
        "",
        "| Measure | Median | Target |",
        "|---|---|---|",
        `| End to end: POST → \`processed\` (HTTP, polled every 5 ms) | ${ms(endToEnd)} | ≤ 1,000 ms: ${endToEnd <= 1000 ? "PASS" : "FAIL"} |`,
        `| Cases per second, end to end | ${Math.round(CASES / (endToEnd / 1000)).toLocaleString("en-US")} | |`,
        `| Processing step (parse the handed-over payload, store with COPY in one transaction) | ${ms(processing)} | |`,
        `| The same step reading the payload back from the database (retries; the Worker's consumer), median of ${READ_BACK_ROUNDS} | ${ms(readBack)} (${(readBack / bare).toFixed(2)}× bare) | |`,
        `| The same step while the client polls every 5 ms (end-to-end rounds) | ${ms(polledProcessing)} | |`,
        `| The same step with Postgres's COPY ingest taken away (rows encoded to bytes, then dropped: the Node side alone), median of ${READ_BACK_ROUNDS} | ${ms(nodeSide)} (${(nodeSide / bare).toFixed(2)}× bare) | |`,
        `| Ordinary processing steps alternated with those, median of ${READ_BACK_ROUNDS} | ${ms(nodeSideAlongside)} (${(nodeSideAlongside / bare).toFixed(2)}× bare) | |`,
        `| The same step without the tests' state and failure groups, median of ${ROUNDS} | ${ms(median(withoutTests))} | |`,
        `| Ordinary processing steps alternated with those, median of ${ROUNDS} | ${ms(median(withTests))} | |`,
        `| **Processing with tests and groups / without** | **${testsCost.toFixed(2)}×** | ≤ 1.5×: ${testsCost <= 1.5 ? "PASS" : "FAIL"} |`,
        `| Floor of per-test rows: one UPDATE touching each of the run's ${CASES.toLocaleString("en-US")} tests once (one counter), rolled back, median of ${ROUNDS} | ${ms(median(floor))} | |`,
        `| Steps without the tests' state alternated with it, median of ${ROUNDS} | ${ms(median(floorBaseline))} | |`,
        `| **(without + floor) / without**: the best ratio any design that updates each test's row per run can reach | **${((median(floorBaseline) + median(floor)) / median(floorBaseline)).toFixed(2)}×** | |`,
        `| Our parse alone (parseJUnit) | ${ms(parse)} | |`,
        `| Bare parse with the XML library (saxes, no handlers) | ${ms(bare)} | |`,
        `| **Processing / bare parse** | **${ratio.toFixed(2)}×** | ≤ 3×: ${ratio <= 3 ? "PASS" : "FAIL"} |`,
        `| Our parse / bare parse | ${(parse / bare).toFixed(2)}× | |`,
        `| Peak memory of processing: max RSS growth over ${2 * ROUNDS + READ_BACK_ROUNDS} processing steps | ${mib(Math.max(0, rssAfter - rssBefore))} (max RSS ${mib(rssAfter)}) | |`,
        `| V8 heap growth across one processing step (median) | ${mib(median(heapGrowth))} | |`,
        "",
        "Per round (ms): " +
          rows.map((r) => [r.endToEnd, r.polledProcessing, r.processing, r.parse, r.bare].map((v) => v.toFixed(0)).join("/")).join(", ") +
          " (end to end / processing while polled / processing / our parse / bare parse).",
      ].join("\n");
      console.log(body);
      const verdict = (met: boolean) => (met ? "PASS" : "FAIL");
      recordBenchmark({
        name: "upload",
        command: "npm run bench:upload",
        measures: "A 10,000-case JUnit file: upload to processed, and processing against the bare XML parse",
        figure: `end to end ${ms(endToEnd)} ${verdict(endToEnd <= 1000)}; processing ${ratio.toFixed(2)}× the bare parse ${verdict(ratio <= 3)}; with tests and groups ${testsCost.toFixed(2)}× without ${verdict(testsCost <= 1.5)}`,
        target: "end to end ≤ 1,000 ms; processing ≤ 3× the bare parse; tests and groups ≤ 1.5×",
        report: body,
      });
    } finally {
      server?.close();
    }
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
