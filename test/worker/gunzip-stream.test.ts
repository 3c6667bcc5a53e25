/**
 * gunzipStream (src/ingest/gunzip-stream.ts) in workerd, where DecompressionStream has no
 * backpressure: a write resolves only once its output has been read, so whoever writes (the
 * upload's store pulling the body, R2's body for the consumer) cannot run ahead of whoever reads;
 * a write waiting on a reader that gives up is rejected, not left hanging; invalid data errors both
 * sides.
 */
import { describe, expect, it } from "vitest";
import { gunzipStream } from "../../src/ingest/gunzip-stream";

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
}

/** "settled" or "pending" after `ms` of waiting. */
const stateAfter = (promise: Promise<unknown>, ms = 100) =>
  Promise.race([
    promise.then(
      () => "settled",
      () => "settled",
    ),
    new Promise((resolve) => setTimeout(() => resolve("pending"), ms)),
  ]);

/** 4 MiB of report-like text: about 12 KiB compressed. */
const text = new TextEncoder().encode(`<testcase classname="pkg.Class" name="a test" time="0.01"/>\n`.repeat(70_000));

describe("gunzipStream", () => {
  it("resolves a write only once its output has been read", async () => {
    const compressed = await gzip(text);
    expect(compressed.byteLength).toBeLessThan(64 * 1024);
    const { writable, readable } = gunzipStream();
    const writer = writable.getWriter();
    const write = writer.write(compressed);
    // Nobody reads: the write waits (DecompressionStream's resolves at once, its output buffered whole).
    expect(await stateAfter(write)).toBe("pending");

    const reader = readable.getReader();
    const closing = (async () => {
      await write;
      await writer.close();
    })();
    const chunks: Uint8Array[] = [];
    let largest = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      largest = Math.max(largest, value.byteLength);
    }
    await closing;
    const inflated = new Uint8Array(await new Blob(chunks).arrayBuffer());
    expect(inflated.byteLength).toBe(text.byteLength);
    expect(inflated.every((byte, i) => byte === text[i])).toBe(true);
    expect(largest).toBeLessThanOrEqual(64 * 1024);
  });

  it("rejects a waiting write when the reader cancels", async () => {
    const { writable, readable } = gunzipStream();
    const writer = writable.getWriter();
    const write = writer.write(await gzip(text));
    const reader = readable.getReader();
    await reader.read();
    await reader.cancel(new Error("enough"));
    await expect(write).rejects.toThrow();
  });

  it("errors both sides on data that is not gzip", async () => {
    const { writable, readable } = gunzipStream();
    const writer = writable.getWriter();
    const write = writer.write(new TextEncoder().encode("not gzip at all, not even close"));
    await expect(readable.getReader().read()).rejects.toThrow();
    await expect(write).rejects.toThrow();
  });
});
