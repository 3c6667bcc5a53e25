/**
 * Objects of the payload store that no run holds: written by an upload request that died between
 * finishing the object and recording its run, or left behind when a deletion failed (a refused
 * upload's, or a processed, failed or replayed run's: discardPayloadObject logs and goes on). The
 * Worker's cron sweeps them (wrangler.toml `[triggers]`, next to requeueStalledWork); Node's
 * retention timer sweeps the database's store (src/services/runs/database-payload-store.ts), which
 * holds its gzip uploads on a Postgres server (its other payloads wait in upload_payloads.content).
 *
 * An object is deleted when it is older than ORPHAN_GRACE_MS and no upload_payloads row holds its
 * key. The grace covers the only time an object rightly has no row: the request writes the object,
 * then records the run, before it answers. A row is deleted only in the transaction that processes
 * or fails its run, which deletes the object itself after the commit; so an object whose row is
 * gone is never read again, and one whose row still exists (a run pending for hours) is kept.
 *
 * Work per sweep is bounded: at most SWEEP_PAGES listed pages and SWEEP_DELETIONS deletions, one
 * statement per page (the page's old keys that a row still holds). The listing starts at a random
 * key and wraps around, so a bucket larger than one sweep's pages is covered over several sweeps
 * instead of its first pages again and again (the keys are random UUIDs, unrelated to age).
 */
import { inArray } from "drizzle-orm";
import { uploadPayloads } from "../../db/schema";
import type { Database } from "../../db/types";
import { PAYLOAD_KEY_PREFIX, type PayloadStore } from "../../ingest/payload-store";
import type { Clock } from "../../lib/clock";
import type { Logger } from "../../lib/logger";

/** Far longer than any upload request takes to stream its body and record the run. */
export const ORPHAN_GRACE_MS = 60 * 60_000;
/** Objects per listed page: R2's largest page. */
const SWEEP_PAGE_SIZE = 1000;
/** Pages listed per sweep. */
const SWEEP_PAGES = 10;
/** Deletions per sweep (one subrequest each): a backlog is taken over several sweeps. */
const SWEEP_DELETIONS = 500;

export type PayloadSweepDeps = { db: Database; clock: Clock; store: PayloadStore | undefined; logger: Logger };

export type PayloadSweepOptions = {
  pageSize?: number;
  pages?: number;
  deletions?: number;
  /** Where the listing starts (it wraps around to it); a random key unless a test chooses. */
  startAfter?: string;
};

export async function sweepOrphanedPayloads(
  deps: PayloadSweepDeps,
  options: PayloadSweepOptions = {},
): Promise<{ listed: number; deleted: number }> {
  const counts = { listed: 0, deleted: 0 };
  const { store } = deps;
  if (!store) return counts;
  const pageSize = options.pageSize ?? SWEEP_PAGE_SIZE;
  const pages = options.pages ?? SWEEP_PAGES;
  const deletions = options.deletions ?? SWEEP_DELETIONS;
  const start = options.startAfter ?? `${PAYLOAD_KEY_PREFIX}${crypto.randomUUID()}`;
  const oldBefore = deps.clock.now().getTime() - ORPHAN_GRACE_MS;

  // First the keys after `start`, then from the first key up to `start`.
  let wrapped = false;
  let cursor: string | undefined;
  for (let page = 0; page < pages && counts.deleted < deletions; page++) {
    const listed = await store.list({
      prefix: PAYLOAD_KEY_PREFIX,
      limit: pageSize,
      ...(cursor ? { cursor } : wrapped ? {} : { startAfter: start }),
    });
    let objects = listed.objects;
    let reachedStart = false;
    if (wrapped) {
      const past = objects.findIndex((o) => o.key > start);
      if (past >= 0) {
        objects = objects.slice(0, past);
        reachedStart = true;
      }
    }
    counts.listed += objects.length;
    const old = objects.filter((o) => o.uploaded.getTime() < oldBefore).map((o) => o.key);
    if (old.length > 0) {
      const held = new Set(
        (await deps.db.select({ key: uploadPayloads.objectKey }).from(uploadPayloads).where(inArray(uploadPayloads.objectKey, old))).map(
          (r) => r.key,
        ),
      );
      for (const key of old) {
        if (held.has(key) || counts.deleted >= deletions) continue;
        await store.delete(key);
        counts.deleted++;
      }
    }
    if (reachedStart) break;
    if (listed.cursor) cursor = listed.cursor;
    else if (!wrapped) {
      wrapped = true;
      cursor = undefined;
    } else break;
  }
  if (counts.deleted > 0) deps.logger.info("deleted payload objects no run holds", counts);
  return counts;
}
