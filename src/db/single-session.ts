/**
 * Whether a database has one session for everything: the embedded PGlite. There a transaction
 * holds every other query (each request's) until it ends, so long work is stored in slices of
 * short statements instead of one long transaction (src/services/runs/sliced-store.ts,
 * docs/uploads.md, "On the embedded database"). Keyed by the database object services already receive, like the
 * COPY registry (src/db/bulk-copy.ts): the Node opener marks the PGlite databases it opens.
 */
import type { Database } from "./types";

const singleSession = new WeakSet<object>();

export function markSingleSession(db: Database): void {
  singleSession.add(db);
}

export const hasSingleSession = (db: Database): boolean => singleSession.has(db);
