/**
 * An upload (JUnit XML or the JSON envelope) streamed to a payload store
 * (src/ingest/payload-store.ts) instead of being read whole: the body goes to the store as it
 * arrives, as sent (gzip stays compressed), while the same bytes are checked on their way,
 * inflated when gzip: the size, compressed and decompressed, against the limit (413), the gzip
 * data and the text's encoding (400, 415) and an empty report (400), and for JSON the envelope
 * itself (src/ingest/json-upload-stream.ts), as readUploadRequest checks a buffered body. When a
 * check fails, the object is deleted and nothing is recorded. The request holds what the store
 * buffers (one part) and the piece being read, never the report.
 *
 * The consumer reads the object back the same way: XML inflated and decoded in the encoding the
 * request chose, as pieces of text for the streaming parser (readStoredText); JSON inflated, as
 * bytes for the streaming JSON reader (readStoredBytes).
 */
import { ApiError } from "../lib/errors";
import { gunzipStream } from "./gunzip-stream";
import { JsonEnvelopeCheck } from "./json-upload-stream";
import { type PayloadObject, type PayloadObjectMetadata, PayloadReadError, type PayloadStore, newPayloadKey } from "./payload-store";
import {
  type UploadLimits,
  bodyCompression,
  charsetOf,
  emptyBody,
  inflatesTooLarge,
  invalidGzip,
  textDecodingError,
  tooLarge,
  uploadFormat,
  xmlEncoding,
} from "./upload-body";
import { type ReceivedUpload, type RunMetadata, envelopeRunMetadata, queryRunMetadata } from "./upload-request";

/** Compressed bytes inflated at a time by the check (4 KiB: at most 4 MiB of output even at deflate's 1,032:1). */
const GZIP_SLICE_BYTES = 4 * 1024;

/** Bytes read before the text's encoding is chosen: the byte-order mark or the XML declaration is in them. */
const HEAD_BYTES = 200;

/** Reads `stream` until at least HEAD_BYTES (or its end); returns them and the reader, positioned after them. */
async function readHead(
  stream: ReadableStream<Uint8Array>,
): Promise<{ head: Uint8Array; reader: ReadableStreamDefaultReader<Uint8Array>; done: boolean }> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  let done = false;
  while (length < HEAD_BYTES) {
    const next = await reader.read();
    if (next.done) {
      done = true;
      break;
    }
    chunks.push(next.value);
    length += next.value.byteLength;
  }
  const head = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    head.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { head, reader, done };
}

/** A strict decoder of the encoding the request reads the report in (xmlEncoding's order), or the request's error. */
function decoderFor(
  head: Uint8Array,
  charset: string | null,
): { decoder: InstanceType<typeof TextDecoder>; label: string; source: "declaration" | "charset" } {
  const { label, source } = xmlEncoding(head, charset);
  const errorSource = source === "charset" ? "charset" : "declaration";
  try {
    return { decoder: new TextDecoder(label, { fatal: true, ignoreBOM: false }), label, source: errorSource };
  } catch {
    throw textDecodingError(label, errorSource, "unsupported-encoding");
  }
}

/** What a check's failure answers: its own ApiError, or, for a gzip body, any other error of the stream as broken gzip. */
const checkFailure = (error: unknown, gzip: boolean): unknown => (error instanceof ApiError || !gzip ? error : invalidGzip());

/** The most bytes the check may read, and the 413 past them: the inflated limit for a gzip body, else the body's own. */
type ReportCap = { limit: number; tooLarge: () => ApiError };

const reportCap = (gzip: boolean, limits: UploadLimits): ReportCap =>
  gzip
    ? { limit: limits.inflated, tooLarge: () => inflatesTooLarge(limits.inflated) }
    : { limit: limits.body, tooLarge: () => tooLarge(limits.body) };

/**
 * Checks the report's bytes (inflated when gzip) as they come: at most `cap.limit` of them, text in
 * its encoding, not empty. Rejects with the request's ApiError; `gzip` turns a stream error that
 * is not ours into "not valid gzip".
 */
async function checkReport(stream: ReadableStream<Uint8Array>, gzip: boolean, charset: string | null, cap: ReportCap): Promise<void> {
  const { limit } = cap;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  try {
    const opened = await readHead(stream);
    reader = opened.reader;
    let total = opened.head.byteLength;
    if (total > limit) throw cap.tooLarge();
    if (total === 0) throw emptyBody();
    const { decoder, label, source } = decoderFor(opened.head, charset);
    const decode = (bytes?: Uint8Array) => {
      try {
        decoder.decode(bytes, { stream: bytes !== undefined });
      } catch {
        throw textDecodingError(label, source, "invalid-bytes");
      }
    };
    decode(opened.head);
    if (!opened.done) {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > limit) throw cap.tooLarge();
        decode(value);
      }
    }
    decode();
  } catch (error) {
    await reader?.cancel(error).catch(() => {});
    throw checkFailure(error, gzip);
  }
}

/**
 * Checks a JSON report's bytes (inflated when gzip) as they come, in readUploadRequest's order:
 * the limit (413, at once, as the whole body's inflation would stop there), broken gzip, an empty
 * body, bytes that are not UTF-8 (400), then the envelope (JsonEnvelopeCheck: 422, 400). Every
 * byte is read before another error is answered, so a later 413 or gzip error wins as it does
 * when the body is read whole. Resolves to the envelope's metadata as sent.
 */
async function checkJsonReport(stream: ReadableStream<Uint8Array>, gzip: boolean, cap: ReportCap): Promise<Record<string, unknown>> {
  const { limit } = cap;
  const reader = stream.getReader();
  try {
    const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
    const envelope = new JsonEnvelopeCheck();
    let total = 0;
    let undecodable = false;
    const decode = (bytes?: Uint8Array) => {
      if (undecodable) return;
      try {
        decoder.decode(bytes, { stream: bytes !== undefined });
      } catch {
        undecodable = true;
      }
    };
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) throw cap.tooLarge();
      decode(value);
      if (!undecodable) envelope.write(value);
    }
    decode();
    if (total === 0) throw emptyBody();
    if (undecodable) throw textDecodingError("utf-8", "charset", "invalid-bytes");
    return envelope.result().metadata;
  } catch (error) {
    await reader.cancel(error).catch(() => {});
    throw checkFailure(error, gzip);
  }
}

/** The request as it arrived, its body a stream. */
export type StreamedUpload = Omit<ReceivedUpload, "body"> & { body: ReadableStream<Uint8Array> | null };

/**
 * Streams a JUnit XML or JSON upload to the store and checks it on its way (see above and
 * checkJsonReport). Resolves to the run's metadata and the stored payload once the object is
 * complete; rejects with the request's error (the object deleted), or with a service_unavailable
 * when the store fails.
 */
export async function streamUploadToStore(
  store: PayloadStore,
  received: StreamedUpload,
  limits: UploadLimits,
): Promise<{ metadata: RunMetadata; payload: PayloadObject }> {
  const format = uploadFormat(received.contentType);
  const gzip = bodyCompression(received.contentEncoding) === "gzip";
  // JSON is UTF-8 whatever the charset says (decodeUploadText): the object is read back as such.
  const charset = format === "json" ? null : charsetOf(received.contentType);
  // Checked before the body is read: a request wrong in its query string costs no upload. A JSON
  // envelope's metadata win over the query string's, so they are checked together, after it.
  const xmlMetadata = format === "junit_xml" ? queryRunMetadata(received) : null;
  if (!received.body) throw emptyBody();

  // Both resolve a write once the check has read (most of) its output: so the store, which pulls
  // the body, cannot run ahead of the check (gunzip-stream.ts: why not DecompressionStream).
  const checkInput: ReadableWritablePair<Uint8Array, Uint8Array> = gzip ? gunzipStream() : new TransformStream<Uint8Array, Uint8Array>();
  const checkWriter = checkInput.writable.getWriter();
  const checking: Promise<RunMetadata> =
    format === "json"
      ? checkJsonReport(checkInput.readable, gzip, reportCap(gzip, limits)).then((envelopeMetadata) =>
          envelopeRunMetadata(received, envelopeMetadata),
        )
      : checkReport(checkInput.readable, gzip, charset, reportCap(gzip, limits)).then(() => xmlMetadata!);
  const bodyReader = received.body.getReader();
  let bodyBytes = 0;
  const stopChecking = (reason: unknown) => checkWriter.abort(reason).catch(() => {});
  // Pulled by the store, one chunk at a time: each chunk is counted and handed to the check
  // before the store gets it, so neither side runs ahead of the other by more than a chunk.
  const toStore = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await bodyReader.read();
          if (done) {
            await checkWriter.close();
            controller.close();
            return;
          }
          bodyBytes += value.byteLength;
          if (bodyBytes > limits.body) throw tooLarge(limits.body);
          // Compressed chunks go to the inflater in slices, so what one write can produce while the
          // check reads is a slice's output, not a whole chunk's (a 2 MiB chunk of a JUnit report
          // inflates to about 30 MiB), whatever the inflater buffers on its own.
          const slice = gzip ? GZIP_SLICE_BYTES : value.byteLength;
          for (let at = 0; at < value.byteLength; at += slice) await checkWriter.write(value.subarray(at, at + slice));
          controller.enqueue(value);
        } catch (error) {
          await stopChecking(error);
          await bodyReader.cancel(error).catch(() => {});
          throw error;
        }
      },
      async cancel(reason) {
        await stopChecking(reason);
        await bodyReader.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );

  const objectKey = newPayloadKey();
  const objectMetadata: PayloadObjectMetadata = { contentEncoding: gzip ? "gzip" : null, charset };
  const [stored, checked] = await Promise.allSettled([store.write(objectKey, toStore, objectMetadata), checking]);
  if (stored.status === "fulfilled" && checked.status === "fulfilled") return { metadata: checked.value, payload: { format, objectKey } };
  await store.delete(objectKey).catch(() => {});
  // The check's reason is the request's; else the body's own error (a limit seen upstream), else the store's.
  if (checked.status === "rejected") throw checked.reason;
  const reason = (stored as PromiseRejectedResult).reason;
  if (reason instanceof ApiError) throw reason;
  throw new ApiError("service_unavailable", "The upload could not be stored for processing; retry shortly.", {
    headers: { "Retry-After": "5" },
  });
}

/**
 * The stored object's body, with the store's own failures while it is read (a connection lost
 * halfway) turned into PayloadReadError: the consumer retries those, where a failure of the
 * content (bad gzip, a malformed report) fails the run. Piped through the inflater, the error
 * reaches the reader as it is.
 */
function readErrorsMarked(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await reader.read().catch((error: unknown) => {
          throw new PayloadReadError("The payload object could not be read to its end.", { cause: error });
        });
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/**
 * A stored object's bytes as sent, inflated when they were gzip-compressed (at the reader's pace,
 * not R2's: gunzip-stream.ts), the store's read errors marked (readErrorsMarked); null when the
 * object is gone.
 */
async function openStored(
  store: PayloadStore,
  key: string,
): Promise<{ bytes: ReadableStream<Uint8Array>; metadata: PayloadObjectMetadata; size: number | null } | null> {
  const object = await store.read(key);
  if (!object) return null;
  const body = readErrorsMarked(object.body);
  return {
    bytes: object.metadata.contentEncoding === "gzip" ? body.pipeThrough(gunzipStream()) : body,
    metadata: object.metadata,
    size: object.size ?? null,
  };
}

/** A stored body's bytes, inflated when it was sent gzip-compressed; null when the object is gone. */
export async function readStoredBytes(store: PayloadStore, key: string): Promise<AsyncIterable<Uint8Array> | null> {
  const opened = await openStored(store, key);
  if (!opened) return null;
  const { bytes } = opened;
  return (async function* () {
    const reader = bytes.getReader();
    try {
      for (;;) {
        const next = await reader.read();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      // Also when the reader stops early: the rest is not read.
      await reader.cancel().catch(() => {});
    }
  })();
}

/**
 * A stored body as the consumer parses it: inflated when it was sent gzip-compressed, decoded in
 * the encoding the request chose, one piece of text per chunk read. Null when the object is gone.
 * Its bytes were checked on arrival, so an undecodable byte here is replaced, not fatal.
 * `storedBytes`: the object's size as stored, when the store tells it; `gzip`: stored compressed.
 */
export async function readStoredText(
  store: PayloadStore,
  key: string,
): Promise<(AsyncIterable<string> & { storedBytes: number | null; gzip: boolean }) | null> {
  const opened = await openStored(store, key);
  if (!opened) return null;
  const { bytes, metadata, size } = opened;
  const text = (async function* () {
    const { head, reader, done } = await readHead(bytes);
    try {
      const decoder = new TextDecoder(xmlEncoding(head, metadata.charset).label, { fatal: false, ignoreBOM: false });
      yield decoder.decode(head, { stream: true });
      if (!done) {
        for (;;) {
          const next = await reader.read();
          if (next.done) break;
          yield decoder.decode(next.value, { stream: true });
        }
      }
      yield decoder.decode();
    } finally {
      // Also when the parser stops early (a malformed report): the rest is not read.
      await reader.cancel().catch(() => {});
    }
  })();
  // The object's size as stored (gzip-compressed when it was sent so), when the store tells it.
  return Object.assign(text, { storedBytes: size, gzip: metadata.contentEncoding === "gzip" });
}
