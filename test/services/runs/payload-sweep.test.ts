/**
 * The sweep of payload objects no run holds (src/services/payload-sweep.ts), on the database of
 * the suite and an in-memory store listed in key order as R2 lists: an object is deleted only when
 * older than the grace and held by no upload_payloads row; the listing is bounded per sweep,
 * starts where asked and wraps around, listing each object once. The Worker's cron with its real
 * bucket: test/worker/payload-sweep.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PayloadListPage, PayloadObjectMetadata, PayloadStore, StoredObjectEntry } from "../../../src/ingest/payload-store";
import { ORPHAN_GRACE_MS, sweepOrphanedPayloads } from "../../../src/services/runs/payload-sweep";
import { recordTestRunArrival } from "../../../src/services/runs/test-runs";
import { captureLogger, createHarness } from "../../support/harness";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h.close();
});

/** Objects by key, with the time each was written; lists as R2 does (key order, a cursor per page). */
class MemoryStore implements PayloadStore {
  readonly objects = new Map<string, Date>();
  readonly listings: PayloadListPage[] = [];
  put(key: string, uploaded: Date) {
    this.objects.set(key, uploaded);
  }
  async write(_key: string, _body: ReadableStream<Uint8Array>, _metadata: PayloadObjectMetadata): Promise<void> {
    throw new Error("not used by the sweep");
  }
  async read(): Promise<null> {
    throw new Error("not used by the sweep");
  }
  async delete(key: string) {
    this.objects.delete(key);
  }
  async list(page: PayloadListPage): Promise<{ objects: StoredObjectEntry[]; cursor: string | null }> {
    this.listings.push(page);
    const keys = [...this.objects.keys()].filter((k) => k.startsWith(page.prefix)).sort();
    const after = page.cursor ?? page.startAfter;
    const from = after === undefined ? 0 : keys.findIndex((k) => k > after) === -1 ? keys.length : keys.findIndex((k) => k > after);
    const taken = keys.slice(from, from + page.limit);
    const more = from + page.limit < keys.length;
    return { objects: taken.map((key) => ({ key, uploaded: this.objects.get(key)! })), cursor: more ? taken[taken.length - 1]! : null };
  }
}

const deps = (store: PayloadStore | undefined, logs: string[] = []) => ({ db: h.db, clock: h.clock, store, logger: captureLogger(logs) });
const ago = (ms: number) => new Date(h.clock.now().getTime() - ms);
const key = (n: number) => `uploads/${String(n).padStart(4, "0")}`;

describe("sweepOrphanedPayloads", () => {
  it("deletes an object older than the grace that no row holds; keeps a young one, a held one, and keys outside the uploads", async () => {
    const { organization } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const store = new MemoryStore();
    const held = `uploads/held-${crypto.randomUUID()}`;
    await recordTestRunArrival({ db: h.db, clock: h.clock }, project.id, {}, { format: "junit_xml", objectKey: held });
    store.put(held, ago(ORPHAN_GRACE_MS * 3));
    store.put("uploads/orphan", ago(ORPHAN_GRACE_MS + 60_000));
    store.put("uploads/young", ago(ORPHAN_GRACE_MS - 60_000));
    store.put("elsewhere/old", ago(ORPHAN_GRACE_MS * 3));
    const logs: string[] = [];

    expect(await sweepOrphanedPayloads(deps(store, logs))).toEqual({ listed: 3, deleted: 1 });
    expect([...store.objects.keys()].sort()).toEqual(["elsewhere/old", held, "uploads/young"].sort());
    expect(logs.join("\n")).toMatch(/deleted payload objects no run holds/);

    // Once past the grace, the young one goes too; the held one stays while its row does.
    h.clock.advance(2 * 60_000);
    expect(await sweepOrphanedPayloads(deps(store))).toEqual({ listed: 2, deleted: 1 });
    expect([...store.objects.keys()].sort()).toEqual(["elsewhere/old", held].sort());
  });

  it("lists at most its pages, from its start, wrapping around to it: each object once", async () => {
    const store = new MemoryStore();
    for (let n = 0; n < 20; n++) store.put(key(n), ago(ORPHAN_GRACE_MS * 2));

    // 3 pages of 4 from after key 13: 14–17, 18–19, then from the first key 0–3.
    expect(await sweepOrphanedPayloads(deps(store), { pageSize: 4, pages: 3, startAfter: key(13) })).toEqual({ listed: 10, deleted: 10 });
    expect([...store.objects.keys()]).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12, 13].map(key));
    expect(store.listings.map(({ startAfter, cursor }) => ({ startAfter, cursor }))).toEqual([
      { startAfter: key(13), cursor: undefined },
      { startAfter: undefined, cursor: key(17) },
      { startAfter: undefined, cursor: undefined },
    ]);

    // Enough pages: after key 8 to the end, then from the first key up to key 8, and no further.
    store.listings.length = 0;
    expect(await sweepOrphanedPayloads(deps(store), { pageSize: 4, pages: 10, startAfter: key(8) })).toEqual({ listed: 10, deleted: 10 });
    expect(store.objects.size).toBe(0);
    expect(store.listings).toHaveLength(4);
  });

  it("stops at its deletions; the rest waits for the next sweep", async () => {
    const store = new MemoryStore();
    for (let n = 0; n < 7; n++) store.put(key(n), ago(ORPHAN_GRACE_MS * 2));
    expect(await sweepOrphanedPayloads(deps(store), { deletions: 5, startAfter: "uploads/" })).toEqual({ listed: 7, deleted: 5 });
    expect(store.objects.size).toBe(2);
    expect(await sweepOrphanedPayloads(deps(store), { deletions: 5 })).toEqual({ listed: 2, deleted: 2 });
  });

  it("does nothing without a payload store (Node)", async () => {
    expect(await sweepOrphanedPayloads(deps(undefined))).toEqual({ listed: 0, deleted: 0 });
  });
});
