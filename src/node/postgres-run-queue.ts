/**
 * The run queue of processes that scale out (SCALE_OUT=true, docs/scale-out.md): the same
 * contract as the in-process queue (at-least-once, retries with backoff, a final attempt that may
 * give up, attempts met by a database outage not counted), kept in Postgres by pg-boss so that
 * every process on the database takes from one queue and a message outlives the process that
 * sent it.
 *
 * pg-boss keeps the jobs (its own schema, `pgboss`), their retries and their expiry; this module
 * takes them one at a time (FOR UPDATE SKIP LOCKED: one process per job) and beats a heartbeat
 * while one runs. A job whose process died stops beating: pg-boss's maintenance (every
 * MAINTENANCE_SECONDS, by whichever process gets to it first) fails it EXPIRE_SECONDS after its
 * last beat and puts it back for a retry, which another process takes: within a minute. pg-boss
 * 10 has no heartbeat of its own (its `work` gives up on a handler after the expiry, however busy
 * the handler is): the beat moves the job's `started_on`, the time its expiry counts from.
 *
 * A message handed to two processes (an expiry while its process was only slow) is harmless: a
 * run is processed under its row lock and status, an e-mail is claimed before it is sent, a
 * delivery is attempted only while pending (src/services/stalled-work.ts says the same of
 * messages queued twice). A payload handed to `send` is not kept: the process that takes the
 * run may be another one, and reads it from the database.
 */
import PgBoss from "pg-boss";
import { isDatabaseUnavailable } from "../db/errors";
import { describeError } from "../lib/errors";
import type { Logger } from "../lib/logger";
import type { QueueMessage, RunQueue, SendOptions } from "../ingest/run-queue";
import type { RunConsumer } from "./in-process-run-queue";

/** pg-boss's queue of the service's background work: runs, e-mails, webhook and channel deliveries. */
const BACKGROUND_QUEUE = "background-work";
/** pg-boss's schema in the service's database. */
const BOSS_SCHEMA = "pgboss";
/** A job not heard of for this long is expired (and retried, or failed on its last attempt). */
const EXPIRE_SECONDS = 30;
/** How often a running job says it is alive: a third of the expiry, so one lost beat does not expire it. */
const HEARTBEAT_MS = 10_000;
/** How often pg-boss's maintenance expires silent jobs (one process does it per interval). */
const MAINTENANCE_SECONDS = 10;
/** Deliveries per message, the first included, as on the in-process queue and the Worker's consumer. */
const MAX_ATTEMPTS = 3;

export type PostgresQueueOptions = {
  logger: Logger;
  /** How long an idle process waits before looking for work again (a message it sends itself wakes it at once). */
  pollMs?: number;
  /** Delay before the nth consecutive retry of an attempt that met an unavailable database (1-based). */
  outageRetryDelayMs?: (retry: number) => number;
  /** Connections of pg-boss's own pool. */
  poolSize?: number;
  /** The timing of the take-over (shorter in tests): expiry, heartbeat, maintenance, first retry delay. */
  timing?: Partial<QueueTiming>;
};

type QueueTiming = { expireSeconds: number; heartbeatMs: number; maintenanceSeconds: number; retryDelaySeconds: number };
const DEFAULT_TIMING: QueueTiming = {
  expireSeconds: EXPIRE_SECONDS,
  heartbeatMs: HEARTBEAT_MS,
  maintenanceSeconds: MAINTENANCE_SECONDS,
  retryDelaySeconds: 1,
};

type Job = PgBoss.JobWithMetadata<QueueMessage>;

export class PostgresRunQueue implements RunQueue {
  readonly #boss: PgBoss;
  readonly #logger: Logger;
  readonly #pollMs: number;
  readonly #outageRetryDelayMs: (retry: number) => number;
  readonly #timing: QueueTiming;
  #consume: RunConsumer | null = null;
  #closing = false;
  #loop: Promise<void> | null = null;
  /** Ends the idle wait early: a message was sent, or the queue is closing. */
  #wake: (() => void) | null = null;

  private constructor(boss: PgBoss, options: PostgresQueueOptions) {
    this.#boss = boss;
    this.#logger = options.logger;
    this.#pollMs = options.pollMs ?? 1000;
    this.#outageRetryDelayMs = options.outageRetryDelayMs ?? ((retry) => Math.min(1000 * 2 ** (retry - 1), 30_000));
    this.#timing = { ...DEFAULT_TIMING, ...options.timing };
  }

  /** Creates (or migrates) pg-boss's schema and the queue; takes nothing until `consume`. */
  static async open(databaseUrl: string, options: PostgresQueueOptions): Promise<PostgresRunQueue> {
    const timing = { ...DEFAULT_TIMING, ...options.timing };
    const boss = new PgBoss({
      connectionString: databaseUrl,
      schema: BOSS_SCHEMA,
      max: options.poolSize ?? 3,
      application_name: "ci-analytics-queue",
      maintenanceIntervalSeconds: timing.maintenanceSeconds,
      // Not used: the service's timers are its own (src/node/server.ts).
      schedule: false,
    });
    // pg-boss reports its own failures (a maintenance that met an outage) as events; unheard, they would end the process.
    boss.on("error", (error: unknown) => options.logger.error("pg-boss error", { error: describeError(error) }));
    await boss.start();
    // Each job carries its retry and expiry settings (send below): the queue's are only defaults.
    if (!(await boss.getQueue(BACKGROUND_QUEUE))) await boss.createQueue(BACKGROUND_QUEUE, { name: BACKGROUND_QUEUE });
    return new PostgresRunQueue(boss, options);
  }

  async send(message: QueueMessage, options: SendOptions = {}): Promise<void> {
    if (this.#closing) throw new Error("The run queue is closed.");
    await this.#boss.send(BACKGROUND_QUEUE, message, {
      retryLimit: MAX_ATTEMPTS - 1,
      retryDelay: this.#timing.retryDelaySeconds,
      retryBackoff: true,
      expireInSeconds: this.#timing.expireSeconds,
      ...(options.delaySeconds ? { startAfter: options.delaySeconds } : {}),
    });
    if (!options.delaySeconds) this.#wake?.();
  }

  /** Starts taking messages, one at a time, for `consume` (backgroundWork's). */
  consume(consume: RunConsumer): void {
    if (this.#consume) throw new Error("The run queue already has its consumer.");
    this.#consume = consume;
    this.#loop = this.#takeMessages();
  }

  /** Stops taking messages, lets the one under way finish, and closes pg-boss's pool. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#wake?.();
    await this.#loop;
    await this.#boss.stop({ graceful: false, close: true });
  }

  async #takeMessages(): Promise<void> {
    while (!this.#closing) {
      // pg-boss's fetch answers [] when the database cannot be reached: the process waits and looks again.
      const [job] = (await this.#boss.fetch<QueueMessage>(BACKGROUND_QUEUE, { includeMetadata: true, batchSize: 1 })) as Job[];
      if (job) await this.#run(job);
      else await this.#idle();
    }
  }

  #idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.#pollMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = null;
        done();
      };
    });
  }

  /** One job: consumed with a heartbeat, then completed, or failed (pg-boss retries it or gives up). */
  async #run(job: Job): Promise<void> {
    const heartbeat = setInterval(() => void this.#beat(job.id), this.#timing.heartbeatMs);
    try {
      await this.#consumeThroughOutages(job);
      // Not completed (the database went away): the job expires and is taken again, and finds its work done.
      await this.#boss
        .complete(BACKGROUND_QUEUE, job.id)
        .catch((error: unknown) => this.#logger.error("could not complete a queue job", { jobId: job.id, error: describeError(error) }));
    } catch (error) {
      this.#logger.error("queue message attempt failed", {
        queueMessage: job.data,
        attempt: job.retryCount + 1,
        error: describeError(error),
      });
      // When even this fails (the database went away), the job expires and is retried all the same.
      await this.#boss.fail(BACKGROUND_QUEUE, job.id, { message: describeError(error) }).catch(() => {});
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** As on the in-process queue: an unavailable database says nothing about the message, and uses up no attempt. */
  async #consumeThroughOutages(job: Job): Promise<void> {
    const attempt = { number: job.retryCount + 1, finalAttempt: job.retryCount >= job.retryLimit };
    for (let outages = 1; ; outages++) {
      try {
        await this.#consume!(job.data, attempt);
        return;
      } catch (error) {
        if (!isDatabaseUnavailable(error) || this.#closing) throw error;
        this.#logger.error("queue message attempt met an unavailable database; trying again", {
          queueMessage: job.data,
          error: describeError(error),
        });
        await new Promise((resolve) => setTimeout(resolve, this.#outageRetryDelayMs(outages)));
      }
    }
  }

  /** Counts the job's expiry from now again (pg-boss fails an active job `expire_in` after its `started_on`). */
  async #beat(jobId: string): Promise<void> {
    try {
      await this.#boss
        .getDb()
        .executeSql(`update ${BOSS_SCHEMA}.job set started_on = now() where name = $1 and id = $2 and state = 'active'`, [
          BACKGROUND_QUEUE,
          jobId,
        ]);
    } catch (error) {
      this.#logger.error("could not beat a queue job's heartbeat", { jobId, error: describeError(error) });
    }
  }
}
