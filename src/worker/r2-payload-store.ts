/**
 * The Worker's payload store: an R2 bucket through its binding (wrangler.toml `[[r2_buckets]]`
 * PAYLOADS; miniflare simulates it under wrangler dev and in the workerd tests).
 *
 * R2 takes a stream only when its length is known, which a body counted and checked on its way
 * (or sent chunked) does not have: the body goes in parts of PART_BYTES as it arrives (a multipart
 * upload; R2 wants every part but the last of one size, at least 5 MiB), and a body that ends
 * within the first part is one plain put. So the request holds at most one part and the piece
 * being read, whatever the body's size.
 */
import type { PayloadListPage, PayloadObjectMetadata, PayloadStore, StoredObjectEntry } from "../ingest/payload-store";

/** Bytes per part of a multipart upload: R2's minimum. */
const PART_BYTES = 5 * 1024 * 1024;

function metadataOf(object: R2Object): PayloadObjectMetadata {
  const custom = object.customMetadata ?? {};
  return { contentEncoding: custom.contentEncoding === "gzip" ? "gzip" : null, charset: custom.charset || null };
}

export class R2PayloadStore implements PayloadStore {
  constructor(private readonly bucket: R2Bucket) {}

  async write(key: string, body: ReadableStream<Uint8Array>, metadata: PayloadObjectMetadata): Promise<void> {
    const customMetadata: Record<string, string> = {};
    if (metadata.contentEncoding) customMetadata.contentEncoding = metadata.contentEncoding;
    if (metadata.charset) customMetadata.charset = metadata.charset;
    const part = new Uint8Array(PART_BYTES);
    let filled = 0;
    let upload: R2MultipartUpload | null = null;
    const parts: R2UploadedPart[] = [];
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        let offset = 0;
        while (offset < value.byteLength) {
          const taken = Math.min(PART_BYTES - filled, value.byteLength - offset);
          part.set(value.subarray(offset, offset + taken), filled);
          filled += taken;
          offset += taken;
          if (filled === PART_BYTES) {
            upload ??= await this.bucket.createMultipartUpload(key, { customMetadata });
            parts.push(await upload.uploadPart(parts.length + 1, part));
            filled = 0;
          }
        }
      }
      if (!upload) {
        await this.bucket.put(key, part.subarray(0, filled), { customMetadata });
        return;
      }
      if (filled > 0) parts.push(await upload.uploadPart(parts.length + 1, part.subarray(0, filled)));
      await upload.complete(parts);
    } catch (error) {
      await reader.cancel(error).catch(() => {});
      if (upload) await upload.abort().catch(() => {});
      throw error;
    }
  }

  async read(key: string): Promise<{ body: ReadableStream<Uint8Array>; metadata: PayloadObjectMetadata; size: number } | null> {
    const object = await this.bucket.get(key);
    return object ? { body: object.body, metadata: metadataOf(object), size: object.size } : null;
  }

  async delete(key: string): Promise<void> {
    await this.bucket.delete(key);
  }

  async list(page: PayloadListPage): Promise<{ objects: StoredObjectEntry[]; cursor: string | null }> {
    // startAfter only opens a listing: a cursor already carries where it stands.
    const listed = await this.bucket.list({
      prefix: page.prefix,
      limit: page.limit,
      ...(page.cursor ? { cursor: page.cursor } : page.startAfter ? { startAfter: page.startAfter } : {}),
    });
    return { objects: listed.objects.map((o) => ({ key: o.key, uploaded: o.uploaded })), cursor: listed.truncated ? listed.cursor : null };
  }
}
