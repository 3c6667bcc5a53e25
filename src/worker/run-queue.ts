/**
 * The run queue on Workers: a Cloudflare Queue. The producer side implements RunQueue; the
 * consumer (the Worker's `queue` handler) processes each message with the same
 * processTestRun as Node's in-process queue, acknowledging or retrying it.
 */
import { describeError } from "../lib/errors";
import type { Logger } from "../app-env";
import type { Clock } from "../lib/clock";
import type { Database } from "../db/types";
import { type RunMessage, type RunQueue, processTestRun } from "../services/run-processing";

/** Deliveries per message: wrangler.toml's `max_retries` + 1. */
export const RUN_QUEUE_MAX_ATTEMPTS = 3;

export class CloudflareRunQueue implements RunQueue {
  constructor(private readonly queue: Queue<RunMessage>) {}

  async send(message: RunMessage): Promise<void> {
    await this.queue.send(message, { contentType: "json" });
  }
}

/** Seconds before redelivery n (1-based): 5, 20, … */
const retryDelaySeconds = (attempt: number) => Math.min(5 * 4 ** (attempt - 1), 300);

export async function consumeRunBatch(batch: MessageBatch<RunMessage>, deps: { db: Database; clock: Clock; logger: Logger }): Promise<void> {
  for (const message of batch.messages) {
    const testRunId = message.body?.testRunId;
    if (typeof testRunId !== "number") {
      deps.logger.error("dropping a malformed run queue message", { id: message.id });
      message.ack();
      continue;
    }
    try {
      await processTestRun(deps, testRunId, { finalAttempt: message.attempts >= RUN_QUEUE_MAX_ATTEMPTS });
      message.ack();
    } catch (error) {
      deps.logger.error("run processing attempt failed", { testRunId, attempt: message.attempts, error: describeError(error) });
      message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}
