/**
 * The run queue when not on Workers: the same contract as the Cloudflare Queue consumer
 * (at-least-once, retries with backoff, a final attempt that may give up), in this process.
 * Runs are processed one at a time, which bounds memory and suits the single-connection
 * embedded database. Messages live in memory: after a restart, `recoverPendingRuns`
 * (src/node/prepare-database.ts) queues the runs whose payload is still waiting.
 *
 * A payload handed to `send` (the upload's body, already stored with the run) is kept with the
 * message up to a memory budget and given to the consumer's first attempt, so processing does not
 * read back what this process just wrote (~14 ms for a 2.7 MiB report, BENCHMARKS.md). Retries,
 * delayed messages and anything over the budget read the stored payload instead.
 *
 * An attempt that failed because the database was unavailable (src/db/errors.ts: refused or lost
 * connections) says nothing about the message: it is retried with a backoff capped at 30 s for
 * as long as the outage lasts, without using up one of the attempts. Otherwise an outage longer
 * than the retries would fail every run caught in it, or leave it pending until a restart when
 * the final attempt cannot even record the failure.
 */
import { describeError } from "../lib/errors";
import type { Logger } from "../lib/logger";
import { eq } from "drizzle-orm";
import { isDatabaseUnavailable } from "../db/errors";
import { notificationDeliveries, uploadPayloads } from "../db/schema";
import type { Database } from "../db/types";
import type { DeliveryAttempt, QueueMessage, RunQueue, SendOptions, UploadPayload } from "../ingest/run-queue";

export type RunConsumer = (message: QueueMessage, attempt: DeliveryAttempt & { number: number }) => Promise<unknown>;

/** Characters of handed-over payloads held by queued messages at most (beyond it, processing reads the database). */
export const HELD_PAYLOAD_BUDGET_CHARS = 64 * 1024 * 1024;

export type InProcessQueueOptions = {
  /** Deliveries per message, the first included (the Worker's consumer uses the same number). */
  maxAttempts?: number;
  /** Delay before retry n (1-based). */
  retryDelayMs?: (retry: number) => number;
  /** Delay before the nth consecutive retry of an attempt that met an unavailable database (1-based). */
  outageRetryDelayMs?: (retry: number) => number;
  logger?: Logger;
};

/** `outages`: how many times in a row this attempt met an unavailable database. */
type Delivery = { message: QueueMessage; attempt: number; outages?: number; payload?: UploadPayload };

export class InProcessRunQueue implements RunQueue {
  readonly #consume: RunConsumer;
  readonly #maxAttempts: number;
  readonly #retryDelayMs: (retry: number) => number;
  readonly #outageRetryDelayMs: (retry: number) => number;
  readonly #logger?: Logger;
  readonly #ready: Delivery[] = [];
  #running = false;
  #waitingRetries = 0;
  #idleWaiters: (() => void)[] = [];
  #closed = false;
  #heldChars = 0;

  constructor(consume: RunConsumer, options: InProcessQueueOptions = {}) {
    this.#consume = consume;
    this.#maxAttempts = options.maxAttempts ?? 3;
    this.#retryDelayMs = options.retryDelayMs ?? ((retry) => 1000 * 4 ** (retry - 1));
    this.#outageRetryDelayMs = options.outageRetryDelayMs ?? ((retry) => Math.min(1000 * 2 ** (retry - 1), 30_000));
    this.#logger = options.logger;
  }

  async send(message: QueueMessage, options: SendOptions = {}): Promise<void> {
    if (this.#closed) throw new Error("The run queue is closed.");
    if (options.delaySeconds) {
      this.#later({ message, attempt: 1 }, options.delaySeconds * 1000);
      return;
    }
    const delivery: Delivery = { message, attempt: 1 };
    const payload = options.payload;
    if (payload && this.#heldChars + payload.content.length <= HELD_PAYLOAD_BUDGET_CHARS) {
      delivery.payload = payload;
      this.#heldChars += payload.content.length;
    }
    this.#ready.push(delivery);
    queueMicrotask(() => void this.#pump());
  }

  /** Resolves once nothing is queued, running or waiting for a retry. */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Stops accepting messages and waits for the queue to drain. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.idle();
  }

  #isIdle(): boolean {
    return !this.#running && this.#ready.length === 0 && this.#waitingRetries === 0;
  }

  async #pump(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      for (let delivery = this.#ready.shift(); delivery; delivery = this.#ready.shift()) {
        const finalAttempt = delivery.attempt >= this.#maxAttempts;
        const payload = delivery.payload;
        if (payload) this.#heldChars -= payload.content.length;
        try {
          await this.#consume(delivery.message, { number: delivery.attempt, finalAttempt, ...(payload ? { payload } : {}) });
        } catch (error) {
          const unavailable = isDatabaseUnavailable(error);
          this.#logger?.error("queue message attempt failed", {
            queueMessage: delivery.message,
            attempt: delivery.attempt,
            ...(unavailable ? { databaseUnavailable: true } : {}),
            error: describeError(error),
          });
          if (unavailable) {
            const outages = (delivery.outages ?? 0) + 1;
            this.#later({ message: delivery.message, attempt: delivery.attempt, outages }, this.#outageRetryDelayMs(outages));
          } else if (!finalAttempt) {
            this.#later({ message: delivery.message, attempt: delivery.attempt + 1 }, this.#retryDelayMs(delivery.attempt));
          }
        }
      }
    } finally {
      this.#running = false;
      if (this.#isIdle()) for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }

  #later(delivery: Delivery, delayMs: number): void {
    this.#waitingRetries++;
    const timer = setTimeout(() => {
      this.#waitingRetries--;
      this.#ready.push(delivery);
      void this.#pump();
    }, delayMs);
    // A pending retry must not keep a finished process (or test run) alive.
    (timer as { unref?: () => void }).unref?.();
  }
}

/**
 * Queues every webhook delivery still pending (after a restart its retry timer is gone; left
 * pending it would also hold the alert's cooldown). It is attempted at once, not after the rest
 * of its backoff.
 */
export async function recoverPendingDeliveries(db: Database, queue: RunQueue): Promise<number> {
  const waiting = await db
    .select({ id: notificationDeliveries.id })
    .from(notificationDeliveries)
    .where(eq(notificationDeliveries.status, "pending"))
    .orderBy(notificationDeliveries.id);
  for (const { id } of waiting) await queue.send({ deliveryId: id });
  return waiting.length;
}

/** Queues every run whose payload is still waiting (after a restart, messages kept in memory are gone). */
export async function recoverPendingRuns(db: Database, queue: RunQueue): Promise<number> {
  const waiting = await db
    .select({ testRunId: uploadPayloads.testRunId, part: uploadPayloads.partNumber })
    .from(uploadPayloads)
    .orderBy(uploadPayloads.testRunId, uploadPayloads.partNumber);
  // A run in parts: each part is read again (a part read before is not), and the last one decides its completion.
  for (const { testRunId, part } of waiting) await queue.send(part > 0 ? { testRunId, part } : { testRunId });
  return waiting.length;
}
