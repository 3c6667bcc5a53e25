/**
 * The queue on Workers: a Cloudflare Queue. The producer side implements RunQueue; the consumer
 * (the Worker's `queue` handler) hands each message to the same backgroundWork as Node's
 * in-process queue (run processing and its checks, webhook deliveries), acknowledging or
 * retrying it.
 */
import { describeError } from "../lib/errors";
import type { Logger } from "../lib/logger";
import type { BackgroundWork } from "../services/background-work";
import type { QueueMessage, RunQueue } from "../ingest/run-queue";

/** Deliveries per message: wrangler.toml's `max_retries` + 1. */
export const RUN_QUEUE_MAX_ATTEMPTS = 3;

export class CloudflareRunQueue implements RunQueue {
  constructor(private readonly queue: Queue<QueueMessage>) {}

  async send(message: QueueMessage, options: { delaySeconds?: number } = {}): Promise<void> {
    await this.queue.send(message, { contentType: "json", ...(options.delaySeconds ? { delaySeconds: Math.min(Math.ceil(options.delaySeconds), 43_200) } : {}) });
  }
}

/** Seconds before redelivery n (1-based): 5, 20, … */
const retryDelaySeconds = (attempt: number) => Math.min(5 * 4 ** (attempt - 1), 300);

/** A well-formed message: a run to process or a delivery to attempt. */
function asQueueMessage(body: unknown): QueueMessage | null {
  if (typeof body !== "object" || body === null) return null;
  const { testRunId, deliveryId } = body as { testRunId?: unknown; deliveryId?: unknown };
  if (Number.isSafeInteger(testRunId)) return { testRunId: testRunId as number };
  if (Number.isSafeInteger(deliveryId)) return { deliveryId: deliveryId as number };
  return null;
}

export async function consumeRunBatch(batch: MessageBatch<QueueMessage>, work: Pick<BackgroundWork, "consume">, logger: Logger): Promise<void> {
  for (const message of batch.messages) {
    const body = asQueueMessage(message.body);
    if (!body) {
      logger.error("dropping a malformed queue message", { id: message.id });
      message.ack();
      continue;
    }
    try {
      await work.consume(body, { finalAttempt: message.attempts >= RUN_QUEUE_MAX_ATTEMPTS });
      message.ack();
    } catch (error) {
      logger.error("queue message attempt failed", { message: body, attempt: message.attempts, error: describeError(error) });
      message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}
