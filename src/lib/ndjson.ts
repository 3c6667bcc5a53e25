/**
 * Newline-delimited JSON (one JSON value per line, `\n` after each) streamed from batches that
 * are read only when the reader wants more: the stream asks for the next batch when its reader
 * pulls (a high-water mark of zero), so at most one batch is in memory however long the stream.
 * Runs on Node and in workerd alike (web streams only).
 */
import type { ErrorEnvelope } from "./errors";

export const NDJSON_CONTENT_TYPE = "application/x-ndjson";

const encoder = new TextEncoder();

/** One batch as NDJSON text. JSON.stringify escapes newlines in strings, so a value never spans two lines. */
function ndjsonLines(values: readonly unknown[]): string {
  let text = "";
  for (const value of values) text += `${JSON.stringify(value)}\n`;
  return text;
}

/**
 * A stream of the batches' lines. The first batch is read before the stream is made, so that a
 * failure then (the database unreachable) rejects here and is answered with an error status and
 * the envelope. A failure after that, when the status is already sent, ends the stream with one
 * last line, `{"error": {…}}` as `errorLine` makes it, which a reader can tell from the data.
 */
export async function ndjsonStream(
  batches: AsyncIterator<readonly unknown[]>,
  errorLine: (error: unknown) => ErrorEnvelope,
): Promise<ReadableStream<Uint8Array>> {
  let next: IteratorResult<readonly unknown[]> | undefined = await batches.next();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const result = next ?? (await batches.next());
          next = undefined;
          if (result.done) controller.close();
          else controller.enqueue(encoder.encode(ndjsonLines(result.value)));
        } catch (error) {
          controller.enqueue(encoder.encode(ndjsonLines([errorLine(error)])));
          controller.close();
        }
      },
      // The reader went away (the client disconnected): the batches stop where they are.
      async cancel() {
        await batches.return?.(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}
