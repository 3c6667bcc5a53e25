/**
 * The payload store of a runtime without an object store (Node, or a Worker without R2): the
 * body as sent, in the database the run is recorded in (payload_objects, payload_chunks). A gzip
 * report may inflate to INFLATED_LIMIT_BYTES (256 MiB), far more than a process should hold for
 * one request or keep as one text row; its compressed body (at most UPLOAD_LIMIT_BYTES) goes here
 * in chunks of CHUNK_BYTES as it arrives, one statement each, and the consumer reads it back one
 * chunk at a time (src/ingest/streamed-upload.ts). So the request holds one chunk and the piece
 * being read, and the consumer one chunk, whatever the report's size.
 *
 * Each statement commits on its own: a body being written is seen by nobody (no upload_payloads
 * row names it yet), and one never finished (the request died) has no `size` and is swept as an
 * orphan (src/services/runs/payload-sweep.ts) like an R2 object no row holds.
 */
import { and, asc, eq, gt, isNotNull, like } from "drizzle-orm";
import { payloadChunks, payloadObjects } from "../../db/schema";
import type { Database } from "../../db/types";
import type { PayloadListPage, PayloadObjectMetadata, PayloadStore, StoredObjectEntry } from "../../ingest/payload-store";
import { bytesOf } from "../shared/test-rollups";

/** Bytes per chunk row: few statements for a 32 MiB body, little held at once. */
export const CHUNK_BYTES = 1024 * 1024;

export class DatabasePayloadStore implements PayloadStore {
  constructor(private readonly db: Database) {}

  async write(key: string, body: ReadableStream<Uint8Array>, metadata: PayloadObjectMetadata): Promise<void> {
    const reader = body.getReader();
    const chunk = new Uint8Array(CHUNK_BYTES);
    let filled = 0;
    let seq = 0;
    let size = 0;
    const flush = async () => {
      if (filled === 0) return;
      await this.db.insert(payloadChunks).values({ objectKey: key, seq: seq++, bytes: chunk.slice(0, filled) });
      size += filled;
      filled = 0;
    };
    try {
      await this.db.insert(payloadObjects).values({ objectKey: key, contentEncoding: metadata.contentEncoding, charset: metadata.charset });
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (let offset = 0; offset < value.byteLength;) {
          const taken = Math.min(CHUNK_BYTES - filled, value.byteLength - offset);
          chunk.set(value.subarray(offset, offset + taken), filled);
          filled += taken;
          offset += taken;
          if (filled === CHUNK_BYTES) await flush();
        }
      }
      await flush();
      await this.db.update(payloadObjects).set({ size }).where(eq(payloadObjects.objectKey, key));
    } catch (error) {
      await reader.cancel(error).catch(() => {});
      await this.delete(key).catch(() => {});
      throw error;
    }
  }

  async read(key: string): Promise<{ body: ReadableStream<Uint8Array>; metadata: PayloadObjectMetadata; size: number } | null> {
    const [object] = await this.db
      .select()
      .from(payloadObjects)
      .where(and(eq(payloadObjects.objectKey, key), isNotNull(payloadObjects.size)));
    if (!object) return null;
    const db = this.db;
    let seq = 0;
    // One chunk per pull, by its key: nothing is read ahead of the consumer.
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          const [row] = await db
            .select({ bytes: payloadChunks.bytes })
            .from(payloadChunks)
            .where(and(eq(payloadChunks.objectKey, key), eq(payloadChunks.seq, seq)));
          seq++;
          if (row) controller.enqueue(bytesOf(row.bytes));
          else controller.close();
        },
      },
      { highWaterMark: 0 },
    );
    const metadata: PayloadObjectMetadata = { contentEncoding: object.contentEncoding === "gzip" ? "gzip" : null, charset: object.charset };
    return { body, metadata, size: object.size! };
  }

  async delete(key: string): Promise<void> {
    // Its chunks go with it (on delete cascade).
    await this.db.delete(payloadObjects).where(eq(payloadObjects.objectKey, key));
  }

  async list(page: PayloadListPage): Promise<{ objects: StoredObjectEntry[]; cursor: string | null }> {
    const after = page.cursor ?? page.startAfter;
    const rows = await this.db
      .select({ key: payloadObjects.objectKey, uploaded: payloadObjects.createdAt })
      .from(payloadObjects)
      .where(
        and(
          like(payloadObjects.objectKey, `${page.prefix.replace(/[\\%_]/g, "\\$&")}%`),
          after ? gt(payloadObjects.objectKey, after) : undefined,
        ),
      )
      .orderBy(asc(payloadObjects.objectKey))
      .limit(page.limit);
    return { objects: rows, cursor: rows.length === page.limit ? rows.at(-1)!.key : null };
  }
}
