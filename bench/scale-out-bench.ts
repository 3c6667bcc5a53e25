/**
 * `npm run bench:scale-out`: what scaling Node out (SCALE_OUT=true, docs/scale-out.md) costs
 * beside one process, on a fresh database of a real Postgres server (created and dropped here).
 *
 * 1. The rate limit: admitting requests of 20 resolved keys on the Postgres key counter
 *    (src/auth/postgres-key-counter.ts) and on the in-memory one, sequentially, rounds in A B B A
 *    order; the median per admission, and the statements each admission sends (counted on the
 *    connection pool's `query`: the target is 1).
 * 2. The queue: messages through the Postgres queue (src/node/postgres-run-queue.ts) to a consumer
 *    that does nothing, from the first send to the last delivery, beside the in-process queue.
 *
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_ADMISSIONS (2000
 * per variant and round), BENCH_ROUNDS (2), BENCH_MESSAGES (500), BENCH_NO_RECORD=1 /
 * BENCH_OUTPUT=<file> (bench/report.ts).
 */
import pg from "pg";
import { InMemoryKeyCounter } from "../src/auth/in-memory-key-counter";
import type { KeyCounter } from "../src/auth/key-state";
import { PostgresKeyCounter } from "../src/auth/postgres-key-counter";
import { systemClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import { openDatabase } from "../src/node/database";
import { InProcessRunQueue } from "../src/node/in-process-run-queue";
import { PostgresRunQueue } from "../src/node/postgres-run-queue";
import { createOrganization } from "../src/services/tenancy/organizations";
import { recordBenchmark } from "./report";

const SERVER_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const ADMISSIONS = Number(process.env.BENCH_ADMISSIONS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 500);
const KEYS = 20;
/** High enough that every admission is admitted: the cost measured is the counting's. */
const UNLIMITED = { limit: 1_000_000_000, windowMs: 60_000 };
const quiet: Logger = { info: () => {}, error: (message, fields) => console.error(message, fields) };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** Microseconds per admission of `counter`, over ADMISSIONS admissions of the keys in turn. */
async function admissionMicros(counter: KeyCounter, keys: string[]): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < ADMISSIONS; i++) {
    const admission = await counter.admit(keys[i % keys.length]!);
    if (admission.status !== "admitted" || !admission.decision.allowed) throw new Error(`admission ${i} was ${admission.status}`);
  }
  return Number(process.hrtime.bigint() - started) / 1000 / ADMISSIONS;
}

/** Counts the statements sent through the pool behind `db` (Drizzle's node-postgres session sends each through `query`). */
function countStatements(db: object): { count: number } {
  const pool = (db as { $client: pg.Pool }).$client;
  const counted = { count: 0 };
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
    counted.count++;
    return query(...args);
  };
  return counted;
}

/** Milliseconds from the first send to the last delivery of MESSAGES messages. */
async function drainMs(send: (i: number) => Promise<void>, delivered: () => number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < MESSAGES; i++) await send(i);
  while (delivered() < MESSAGES) await new Promise((resolve) => setTimeout(resolve, 5));
  return performance.now() - started;
}

async function queueFigures(databaseUrl: string) {
  let postgresDelivered = 0;
  const postgresQueue = await PostgresRunQueue.open(databaseUrl, { logger: quiet });
  postgresQueue.consume(async () => void postgresDelivered++);
  const postgresMs = await drainMs(
    (i) => postgresQueue.send({ emailId: `bench-${i}` }),
    () => postgresDelivered,
  );
  await postgresQueue.close();
  let inProcessDelivered = 0;
  const inProcessQueue = new InProcessRunQueue(async () => void inProcessDelivered++);
  const inProcessMs = await drainMs(
    (i) => inProcessQueue.send({ emailId: `bench-${i}` }),
    () => inProcessDelivered,
  );
  await inProcessQueue.close();
  return { postgresMs, inProcessMs };
}

async function main(): Promise<void> {
  const databaseName = `bench_scale_out_${process.pid}`;
  await adminQuery(`create database ${databaseName}`);
  const databaseUrl = Object.assign(new URL(SERVER_URL), { pathname: `/${databaseName}` }).toString();
  const database = await openDatabase(databaseUrl);
  try {
    await database.migrate();
    const statementsSent = countStatements(database.db);
    const deps = { db: database.db, clock: systemClock };
    const { organization } = await createOrganization({ ...deps, webAppUrl: "http://localhost" }, { name: "Bench" });
    const keys = Array.from({ length: KEYS }, () => crypto.randomUUID());
    const postgres = new PostgresKeyCounter(deps, "api_key", UNLIMITED);
    const memory = new InMemoryKeyCounter(systemClock, UNLIMITED);
    for (const key of keys) for (const counter of [postgres, memory]) await counter.admit(key, { organizationId: organization.id });

    const times = { postgres: [] as number[], memory: [] as number[] };
    let statements = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const variant of round % 2 === 0
        ? (["postgres", "memory", "memory", "postgres"] as const)
        : (["memory", "postgres", "postgres", "memory"] as const)) {
        const before = statementsSent.count;
        times[variant].push(await admissionMicros(variant === "postgres" ? postgres : memory, keys));
        statements = Math.max(statements, (statementsSent.count - before) / ADMISSIONS);
      }
    }
    const { postgresMs, inProcessMs } = await queueFigures(databaseUrl);
    const postgresMicros = median(times.postgres);
    const memoryMicros = median(times.memory);
    const report = [
      "## Scale-out (`npm run bench:scale-out`)",
      "",
      `Postgres server ${new URL(SERVER_URL).host}, a fresh database; ${KEYS} keys, ${ADMISSIONS} sequential admissions per variant and run, ${ROUNDS * 2} runs per variant (A B B A); ${MESSAGES} queue messages to a consumer that does nothing.`,
      "",
      "| | one process | scaled out | ratio |",
      "|---|---|---|---|",
      `| rate limit: median per admission | ${memoryMicros.toFixed(1)} µs (in memory) | ${postgresMicros.toFixed(1)} µs (rate_limit_windows) | ${(postgresMicros / memoryMicros).toFixed(0)}× |`,
      `| rate limit: statements per admission (the most of any run) | 0 | ${statements.toFixed(2)} | |`,
      `| queue: ${MESSAGES} messages, first send to last delivery | ${inProcessMs.toFixed(0)} ms (in process) | ${postgresMs.toFixed(0)} ms (pg-boss) | ${(postgresMs / inProcessMs).toFixed(0)}× |`,
      "",
      "The take-over of a killed process's run is measured by test/node/scale-out.postgres.test.ts (it prints it).",
    ].join("\n");
    console.log(report);
    recordBenchmark({
      name: "scale-out",
      command: "npm run bench:scale-out",
      measures: "rate limit and queue in Postgres (SCALE_OUT=true) beside in memory",
      figure: `${statements.toFixed(2)} statements and ${postgresMicros.toFixed(0)} µs per admission (${(postgresMicros / memoryMicros).toFixed(0)}× in memory) ${statements <= 1 ? "PASS" : "FAIL"}; queue ${((MESSAGES / postgresMs) * 1000).toFixed(0)} messages/s`,
      target: "≤ 1 statement per admission",
      report,
    });
  } finally {
    await database.close();
    await adminQuery(`drop database if exists ${databaseName} with (force)`);
  }
}

await main();
