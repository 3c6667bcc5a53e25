/**
 * The queue behind the service's background work, as both runtimes see it: a Cloudflare Queue
 * on Workers (src/worker/run-queue.ts), an in-process queue on Node
 * (src/node/in-process-run-queue.ts). Only ids travel; the rows they name hold the rest.
 */
import type { UploadFormat } from "../lib/vocabulary";

/** An uploaded report waiting to be processed, as stored with its run. */
export type UploadPayload = { format: UploadFormat; content: string };

/**
 * Processing a run: only the run's id travels (the payload waits in the database). A run in parts
 * (docs/uploads.md): `part`, a part to read; `complete`, its completion to decide and store (the
 * uploader asked, or its quiet period ended).
 */
export type RunMessage = {
  testRunId: number;
  part?: number;
  complete?: "asked" | "quiet";
  /** The run's organization when the producer knows it (an upload): the Worker's consumer brackets it for the edge cache without a lookup. */
  organizationId?: string;
};
/** Delivering one notification to one webhook endpoint (the delivery row holds the rest). */
type DeliveryMessage = { deliveryId: number };
/** Sending one e-mail of the outbox (its row holds the rest; src/services/shared/email-outbox.ts). */
type EmailMessage = { emailId: string };
/** What travels through the queue: the background work of the service. */
export type QueueMessage = RunMessage | DeliveryMessage | EmailMessage;

export type SendOptions = {
  delaySeconds?: number;
  /**
   * The run's payload, already in this process's memory (it is also stored with the run). A
   * queue whose consumer runs in the same process may hand it over so processing need not read
   * it back; a queue that serializes messages (the Cloudflare Queue) ignores it.
   */
  payload?: UploadPayload;
};

/** How one delivery of a message is made: its place among the attempts, and a handed-over payload. */
export type DeliveryAttempt = { finalAttempt: boolean; payload?: UploadPayload };

/** The producer side of the queue; both runtimes implement it. */
export interface RunQueue {
  send(message: QueueMessage, options?: SendOptions): Promise<void>;
}
