/**
 * The queue of Node processes that scale out (src/node/postgres-run-queue.ts), two of them on a
 * database of this file's own, standing for two processes: a message goes to one of them, once; a
 * failing one is retried, its third attempt the final one; an attempt that met an unavailable
 * database is tried again without using up an attempt; a job that runs longer than its expiry
 * keeps beating its heartbeat and is not handed to the other queue. (A killed process's job taken
 * over by another: test/node/scale-out.postgres.test.ts.)
 *
 * Postgres only (vitest.config.ts collects `*.postgres.test.ts` only with TEST_DATABASE_URL).
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { QueueMessage } from "../../src/ingest/run-queue";
import type { RunConsumer } from "../../src/node/in-process-run-queue";
import { PostgresRunQueue, type PostgresQueueOptions } from "../../src/node/postgres-run-queue";
import { captureLogger, testDatabaseUrl as theTestDatabaseUrl } from "../support/harness";

const suiteUrl = await theTestDatabaseUrl();
if (!suiteUrl) throw new Error("postgres-run-queue.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");
const databaseName = `run_queue_${process.pid}`;
const databaseUrl = Object.assign(new URL(suiteUrl), { pathname: `/${databaseName}` }).toString();

let admin: pg.Client;
const opened: PostgresRunQueue[] = [];

beforeAll(async () => {
  admin = new pg.Client({ connectionString: suiteUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${databaseName}`);
  await admin.query(`create database ${databaseName}`);
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((queue) => queue.close()));
});

afterAll(async () => {
  await admin.query(`drop database if exists ${databaseName} with (force)`);
  await admin.end();
});

type Delivery = { id: string; number: number; finalAttempt: boolean; by: string };

/**
 * Two queues ("processes") consuming with `consume`; every delivery of this test's messages
 * (their ids start with `prefix`: a message of an earlier test retried now is only completed).
 */
async function twoQueues(prefix: string, consume: (id: string) => Promise<void>, options: Partial<PostgresQueueOptions> = {}) {
  const deliveries: Delivery[] = [];
  const queues: PostgresRunQueue[] = [];
  for (const name of ["one", "two"]) {
    const queue = await PostgresRunQueue.open(databaseUrl, { logger: captureLogger([]), pollMs: 200, ...options });
    opened.push(queue);
    const consumer: RunConsumer = async (message, attempt) => {
      const id = (message as { emailId: string }).emailId;
      if (!id.startsWith(prefix)) return;
      deliveries.push({ id, number: attempt.number, finalAttempt: attempt.finalAttempt, by: name });
      await consume(id);
    };
    queue.consume(consumer);
    queues.push(queue);
  }
  return { queues: queues as [PostgresRunQueue, PostgresRunQueue], deliveries };
}

const message = (emailId: string): QueueMessage => ({ emailId });
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe("two queues on one database", () => {
  it("deliver each message once, to one of them, on its first attempt", async () => {
    const { queues, deliveries } = await twoQueues("once-", async () => {});
    const ids = Array.from({ length: 20 }, (_, i) => `once-${i}`);
    for (const [i, id] of ids.entries()) await queues[i % 2]!.send(message(id));
    await waitFor(() => deliveries.length >= ids.length, 30_000, "the deliveries");
    // Long enough for a second delivery of any message to show.
    await sleep(1_500);
    expect(deliveries.map((delivery) => delivery.id).sort()).toEqual([...ids].sort());
    expect(deliveries.every((delivery) => delivery.number === 1 && !delivery.finalAttempt)).toBe(true);
  });

  it("retry a failing message, its third attempt the final one, and give up after it", async () => {
    const { queues, deliveries } = await twoQueues("failing-", async () => {
      throw new Error("the consumer fails");
    });
    await queues[0].send(message("failing-1"));
    await waitFor(() => deliveries.length >= 3, 30_000, "three attempts");
    await sleep(5_000);
    expect(deliveries.map(({ number, finalAttempt }) => ({ number, finalAttempt }))).toEqual([
      { number: 1, finalAttempt: false },
      { number: 2, finalAttempt: false },
      { number: 3, finalAttempt: true },
    ]);
  });

  it("try an attempt that met an unavailable database again, without using up an attempt", async () => {
    let outages = 2;
    const { queues, deliveries } = await twoQueues(
      "outage-",
      async () => {
        if (outages-- > 0) throw Object.assign(new Error("connection refused"), { code: "ECONNREFUSED" });
      },
      { outageRetryDelayMs: () => 10 },
    );
    await queues[1].send(message("outage-1"));
    await waitFor(() => deliveries.length >= 3, 30_000, "the attempt to get through");
    await sleep(1_500);
    expect(deliveries).toHaveLength(3);
    expect(new Set(deliveries.map((delivery) => `${delivery.by} ${delivery.number}`)).size).toBe(1);
    expect(deliveries[0]!.number).toBe(1);
  });

  it("leave a job that runs past its expiry to the queue running it, as long as its heartbeat beats", async () => {
    const timing = { expireSeconds: 2, heartbeatMs: 400, maintenanceSeconds: 1 };
    const { queues, deliveries } = await twoQueues("slow-", () => sleep(6_000), { timing });
    await queues[0].send(message("slow-1"));
    await waitFor(() => deliveries.length >= 1, 30_000, "the first delivery");
    // Three expiries' worth, and the maintenance that would hand it over runs every second.
    await sleep(8_000);
    expect(deliveries).toHaveLength(1);
  });
});
