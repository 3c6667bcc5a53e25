/**
 * The queue on Workers: a Cloudflare Queue. The producer side implements RunQueue; the consumer
 * (the Worker's `queue` handler) hands each message to the same backgroundWork as Node's
 * in-process queue (run processing and its checks, webhook deliveries), acknowledging or
 * retrying it.
 *
 * An attempt that met an unavailable database (src/db/errors.ts) does not use up one of the
 * message's deliveries, as on Node: the message is sent again, delayed, as a new message that
 * counts its outages (5 s, 10 s, 20 s, … up to 5 minutes between tries), and the failed one is
 * acknowledged. Cloudflare counts every delivery, so retrying in place would fail, or lose, every
 * run caught in an outage longer than the retries (a final delivery that cannot reach the
 * database cannot record the failure either).
 */
import { describeError } from "../lib/errors";
import type { Logger } from "../lib/logger";
import type { BackgroundWork } from "../services/background-work";
import { isDatabaseUnavailable } from "../db/errors";
import type { QueueMessage, RunQueue } from "../ingest/run-queue";

/** Deliveries per message: wrangler.toml's `max_retries` + 1. */
export const RUN_QUEUE_MAX_ATTEMPTS = 3;

export class CloudflareRunQueue implements RunQueue {
  constructor(private readonly queue: Queue<QueueBody>) {}

  async send(message: QueueMessage, options: { delaySeconds?: number } = {}): Promise<void> {
    await this.queue.send(message, {
      contentType: "json",
      ...(options.delaySeconds ? { delaySeconds: Math.min(Math.ceil(options.delaySeconds), 43_200) } : {}),
    });
  }
}

/** Seconds before redelivery n (1-based): 5, 20, … */
const retryDelaySeconds = (attempt: number) => Math.min(5 * 4 ** (attempt - 1), 300);

/** Seconds before the nth consecutive try that met an unavailable database (1-based): 5, 10, 20, … 300. */
const outageRetryDelaySeconds = (outage: number) => Math.min(5 * 2 ** (outage - 1), 300);

/** What travels on this queue: a message, and how many outages in a row it met (absent: none). */
export type QueueBody = QueueMessage & { outages?: number };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A well-formed message: a run to process, a delivery to attempt or an e-mail to send. */
function asQueueMessage(body: unknown): QueueMessage | null {
  if (typeof body !== "object" || body === null) return null;
  const { testRunId, deliveryId, emailId, part, complete, organizationId } = body as Record<string, unknown>;
  if (Number.isSafeInteger(testRunId)) {
    const organization = typeof organizationId === "string" && UUID.test(organizationId) ? { organizationId } : {};
    if (Number.isSafeInteger(part) && (part as number) > 0)
      return { testRunId: testRunId as number, part: part as number, ...organization };
    if (complete === "asked" || complete === "quiet") return { testRunId: testRunId as number, complete, ...organization };
    return { testRunId: testRunId as number, ...organization };
  }
  if (Number.isSafeInteger(deliveryId)) return { deliveryId: deliveryId as number };
  if (typeof emailId === "string" && /^[0-9a-f-]{36}$/i.test(emailId)) return { emailId };
  return null;
}

function outagesOf(body: unknown): number {
  const outages = (body as { outages?: unknown }).outages;
  return Number.isSafeInteger(outages) && (outages as number) > 0 ? (outages as number) : 0;
}

/** Sends a message again as a new one (its deliveries counted from 1), after a delay. */
export type Requeue = (body: QueueBody, delaySeconds: number) => Promise<void>;

export const requeueOn =
  (queue: Queue<QueueBody>): Requeue =>
  async (body, delaySeconds) => {
    await queue.send(body, { contentType: "json", delaySeconds });
  };

export async function consumeRunBatch(
  batch: MessageBatch<QueueBody>,
  work: Pick<BackgroundWork, "consume">,
  logger: Logger,
  requeue: Requeue,
  /** Before a message's work (the edge cache's bracket); its failure is the attempt's, as the work's would be. */
  beforeConsume: (body: QueueMessage) => Promise<void> = async () => {},
): Promise<void> {
  for (const message of batch.messages) {
    const body = asQueueMessage(message.body);
    if (!body) {
      logger.error("dropping a malformed queue message", { id: message.id });
      message.ack();
      continue;
    }
    try {
      await beforeConsume(body);
      await work.consume(body, { finalAttempt: message.attempts >= RUN_QUEUE_MAX_ATTEMPTS });
      message.ack();
    } catch (error) {
      const unavailable = isDatabaseUnavailable(error);
      logger.error("queue message attempt failed", {
        queueMessage: body,
        attempt: message.attempts,
        ...(unavailable ? { databaseUnavailable: true } : {}),
        error: describeError(error),
      });
      if (!unavailable) {
        message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
        continue;
      }
      const outages = outagesOf(message.body) + 1;
      try {
        await requeue({ ...body, outages }, outageRetryDelaySeconds(outages));
        message.ack();
      } catch (sendError) {
        // The queue refused too: a redelivery of this message is the best left.
        logger.error("could not queue a message again after a database outage", { queueMessage: body, error: describeError(sendError) });
        message.retry({ delaySeconds: outageRetryDelaySeconds(outages) });
      }
    }
  }
}
