/**
 * The database's payload store (src/services/runs/database-payload-store.ts), where Node keeps a
 * gzip upload as sent: written in chunks of 1 MiB as the body is read, read back one chunk at a
 * time byte for byte with its metadata, an unfinished body leaves nothing, listed in key order by
 * pages as R2 lists, deleted with its chunks, and swept as an orphan when no run holds it.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payloadChunks, payloadObjects } from "../../../src/db/schema";
import { ManualClock } from "../../../src/lib/clock";
import { CHUNK_BYTES, DatabasePayloadStore } from "../../../src/services/runs/database-payload-store";
import { ORPHAN_GRACE_MS, sweepOrphanedPayloads } from "../../../src/services/runs/payload-sweep";
import { recordTestRunArrival } from "../../../src/services/runs/test-runs";
import { captureLogger, createHarness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
let store: DatabasePayloadStore;
beforeAll(async () => {
  h = await createHarness();
  store = new DatabasePayloadStore(h.db);
});
afterAll(async () => {
  await h.close();
});

/** `bytes` as a stream of uneven pieces, as a request body arrives. */
function pieces(bytes: Uint8Array, size = 700_001): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<{ bytes: Uint8Array; reads: number }> {
  const parts: Uint8Array[] = [];
  for await (const part of body as unknown as AsyncIterable<Uint8Array>) parts.push(part);
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return { bytes, reads: parts.length };
}

const key = () => `uploads/${crypto.randomUUID()}`;

describe("DatabasePayloadStore", () => {
  it("writes a body in chunks of 1 MiB and reads it back chunk by chunk, byte for byte, with its metadata", async () => {
    const body = new Uint8Array(3 * CHUNK_BYTES + 12_345).map((_, i) => (i * 7) % 251);
    const k = key();
    await store.write(k, pieces(body), { contentEncoding: "gzip", charset: "iso-8859-1" });
    const chunks = await h.db.select({ seq: payloadChunks.seq }).from(payloadChunks).where(eq(payloadChunks.objectKey, k));
    expect(chunks.map((c) => c.seq).sort()).toEqual([0, 1, 2, 3]);
    const object = await store.read(k);
    expect(object).toMatchObject({ metadata: { contentEncoding: "gzip", charset: "iso-8859-1" }, size: body.byteLength });
    const read = await readAll(object!.body);
    expect(read.reads).toBe(4);
    expect(Buffer.from(read.bytes).equals(Buffer.from(body))).toBe(true);
    await store.delete(k);
    expect(await store.read(k)).toBeNull();
    expect(await h.db.select().from(payloadChunks).where(eq(payloadChunks.objectKey, k))).toEqual([]);
  });

  it("leaves nothing when the body fails halfway", async () => {
    const k = key();
    let sent = 0;
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 3) controller.enqueue(new Uint8Array(CHUNK_BYTES).fill(1));
        else controller.error(new Error("the client went away"));
      },
    });
    await expect(store.write(k, failing, { contentEncoding: null, charset: null })).rejects.toThrow("the client went away");
    expect(await h.db.select().from(payloadObjects).where(eq(payloadObjects.objectKey, k))).toEqual([]);
    expect(await h.db.select().from(payloadChunks).where(eq(payloadChunks.objectKey, k))).toEqual([]);
  });

  it("an empty body is an object of no bytes", async () => {
    const k = key();
    await store.write(k, pieces(new Uint8Array()), { contentEncoding: null, charset: null });
    const object = await store.read(k);
    expect(object?.size).toBe(0);
    expect((await readAll(object!.body)).bytes.byteLength).toBe(0);
    await store.delete(k);
  });

  it("lists the objects under a prefix in key order, a page at a time", async () => {
    const prefix = `uploads/list-${crypto.randomUUID()}/`;
    const keys = ["c", "a", "e", "b", "d"].map((name) => `${prefix}${name}`);
    for (const k of keys) await store.write(k, pieces(new Uint8Array([1, 2, 3])), { contentEncoding: null, charset: null });
    const first = await store.list({ prefix, limit: 2 });
    expect(first.objects.map((o) => o.key)).toEqual([`${prefix}a`, `${prefix}b`]);
    const second = await store.list({ prefix, limit: 2, cursor: first.cursor! });
    expect(second.objects.map((o) => o.key)).toEqual([`${prefix}c`, `${prefix}d`]);
    const last = await store.list({ prefix, limit: 2, cursor: second.cursor! });
    expect(last).toMatchObject({ objects: [{ key: `${prefix}e` }], cursor: null });
    expect((await store.list({ prefix, limit: 10, startAfter: `${prefix}c` })).objects.map((o) => o.key)).toEqual([
      `${prefix}d`,
      `${prefix}e`,
    ]);
    expect((await store.list({ prefix: `${prefix.slice(0, -1)}%`, limit: 10 })).objects).toEqual([]);
    for (const k of keys) await store.delete(k);
  });

  it("is swept of an old object no run holds, and keeps one a pending run's payload names", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const orphan = key();
    const held = key();
    for (const k of [orphan, held]) await store.write(k, pieces(new Uint8Array(10)), { contentEncoding: "gzip", charset: null });
    await recordTestRunArrival({ db: h.db, clock: h.clock }, project.id, {}, { format: "junit_xml", objectKey: held });
    const later = new ManualClock(Date.now() + ORPHAN_GRACE_MS + 60_000);
    const logs: string[] = [];
    // Every page of the store's listing: other tests' objects are deleted too when they are old, which none is.
    await sweepOrphanedPayloads({ db: h.db, clock: later, store, logger: captureLogger(logs) }, { startAfter: "uploads/" });
    expect(await store.read(orphan)).toBeNull();
    expect(await store.read(held)).not.toBeNull();
  });
});
