/**
 * Gzip inflation as a stream pair whose writes wait for their output to be read.
 *
 * workerd's DecompressionStream has no backpressure: a chunk written to it is inflated whole into
 * a native buffer at once, and the write resolves, however far behind its reader is (400 KiB of
 * gzip holding 400 MiB of zeros, written once and not read, grew workerd's RSS to 545 MiB). A small
 * gzip body could cost the isolate its inflated size before the upload's check counted it against
 * the limit, and a reader slower than its source (the consumer's parser reading R2) let inflated
 * text pile up. node:zlib's Gunzip (the Worker runs with nodejs_compat; Node has it natively)
 * stops inflating while its readable side holds its high-water mark, until that is read: its
 * writes resolve only then, so the pair holds about one chunk of input and that much output,
 * whatever the ratio.
 */
import { createGunzip } from "node:zlib";

/** A Buffer's bytes as a plain Uint8Array (the same memory). */
const bytesOf = (chunk: Uint8Array) => new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);

const asError = (reason: unknown) => (reason instanceof Error ? reason : new Error(String(reason)));

/**
 * Inflates what is written to `writable` (gzip, one or more members) into `readable`. Invalid gzip
 * data errors both sides with zlib's error; aborting the writable or cancelling the readable ends
 * the inflation with that reason.
 */
export function gunzipStream(): ReadableWritablePair<Uint8Array, Uint8Array> {
  const gunzip = createGunzip();
  // The iterator listens for 'error' from now on (an error with no listener would be thrown
  // uncaught), and reads with the stream's backpressure: the next chunk only when asked.
  const output = gunzip[Symbol.asyncIterator]();
  /**
   * Settles when zlib has taken `start`'s work (its callback), or when the stream is destroyed
   * first: a write waiting for its output to be read is never called back once the reader has
   * cancelled or the data proved invalid.
   */
  const settled = (start: (done: (error?: Error | null) => void) => void) =>
    new Promise<void>((resolve, reject) => {
      const onClose = () => reject(gunzip.errored ?? new Error("The gzip stream was closed."));
      gunzip.once("close", onClose);
      start((error) => {
        gunzip.off("close", onClose);
        if (error) reject(error);
        else resolve();
      });
    });
  const writable = new WritableStream<Uint8Array>({
    write: (chunk) => settled((done) => gunzip.write(chunk, done)),
    close: () => settled((done) => gunzip.end(() => done(gunzip.errored))),
    abort: (reason) => {
      gunzip.destroy(asError(reason));
    },
  });
  const readable = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await output.next();
        if (next.done) controller.close();
        else controller.enqueue(bytesOf(next.value as Uint8Array));
      },
      async cancel(reason) {
        gunzip.destroy(asError(reason));
        await output.return?.().catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
  return { writable, readable };
}
