/**
 * Where an upload's body can wait for processing outside the database: an object store the body
 * is streamed into while it arrives (R2 through a binding on the Worker, src/worker/r2-payload-store.ts),
 * so neither the upload request nor the queue consumer holds the whole report. A runtime without
 * one (Node) keeps the payload's text in upload_payloads. The store is passed in the request's and
 * the consumer's deps; the run's payload row then records the object's key.
 */
import { describeError } from "../lib/errors";
import type { Logger } from "../lib/logger";
import type { UploadFormat } from "../lib/vocabulary";

/** What the consumer needs to read a stored body back as the request read it. */
export type PayloadObjectMetadata = {
  /** `gzip` when the body was sent with Content-Encoding: gzip (stored as sent). */
  contentEncoding: "gzip" | null;
  /** The Content-Type's `charset`, if any: the text's encoding is chosen as the request chose it (xmlEncoding). */
  charset: string | null;
};

export interface PayloadStore {
  /**
   * Writes `body` under `key` as it is read. Rejects, leaving no object, when the stream errors
   * (the request's limits are enforced by whoever produces the stream).
   */
  write(key: string, body: ReadableStream<Uint8Array>, metadata: PayloadObjectMetadata): Promise<void>;
  /** The stored body as a stream, with its metadata and, when the store tells it, its stored size in bytes; null when there is no such object. */
  read(key: string): Promise<{ body: ReadableStream<Uint8Array>; metadata: PayloadObjectMetadata; size?: number } | null>;
  /** Deletes the object (no error when it is already gone). */
  delete(key: string): Promise<void>;
  /**
   * One page of the objects whose key starts with `prefix`, in key order: from the first, or
   * after `startAfter`, or where `cursor` (the previous page's) left off. `cursor` is null on the
   * last page. For the sweep of objects no run holds (src/services/runs/payload-sweep.ts).
   */
  list(page: PayloadListPage): Promise<{ objects: StoredObjectEntry[]; cursor: string | null }>;
}

export type PayloadListPage = { prefix: string; limit: number; startAfter?: string; cursor?: string };

/** An object as listed: its key, and when the store finished writing it. */
export type StoredObjectEntry = { key: string; uploaded: Date };

/**
 * The run's payload object could not be read: missing, or the store failed opening it or halfway
 * through (not the object's content). An internal error: the queue retries it.
 */
export class PayloadReadError extends Error {
  override name = "PayloadReadError";
}

/** A payload waiting in the store: its run's upload_payloads row holds the key. */
export type PayloadObject = { format: UploadFormat; objectKey: string };

/** What every upload's object key starts with: the sweep lists these only. */
export const PAYLOAD_KEY_PREFIX = "uploads/";

/** A new object's key: unguessable, and apart from anything else a bucket may hold. */
export const newPayloadKey = () => `${PAYLOAD_KEY_PREFIX}${crypto.randomUUID()}`;

/**
 * Deletes an object no row points at any more (a processed, failed or replayed run's), after the
 * database has committed: a failed deletion is logged and leaves an orphan in the bucket, never
 * failing or undoing what the database already holds.
 */
export async function discardPayloadObject(
  store: PayloadStore | undefined,
  key: string | null,
  logger: Logger | undefined,
  context: Record<string, unknown>,
): Promise<void> {
  if (!store || !key) return;
  await store
    .delete(key)
    .catch((error: unknown) =>
      logger?.error("could not delete a payload object", { ...context, objectKey: key, error: describeError(error) }),
    );
}
