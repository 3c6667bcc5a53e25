/**
 * One Durable Object per organization (named `org:<id>`): the answers the edge Worker
 * (src/worker/edge/index.ts) serves without a database round trip, and the write bracket that keeps
 * them from ever being stale (docs/edge-path.md, "Edge-cached reads").
 *
 * - `lookup` gives a stored answer, or a miss with a ticket: the generation the miss started at,
 *   or null while a bypass is open (the answer must then not be stored).
 * - `store` accepts an answer only when its ticket is the current generation and no bypass is
 *   open, so an answer read from the database before a write can never be stored after it.
 * - `bypass` is taken before a request, queue batch or cron run writes the organization's data
 *   (before its commit); `release` ends it after the commit. Both drop every entry and bump the
 *   generation. A bypass never released (a Worker that died) lapses after its lease by dropping
 *   the entries again, never by serving them.
 * - `flush` drops everything (an operator's change made directly in the database).
 *
 * State is in the object's SQLite storage, so an evicted object forgets nothing; calls to one
 * object are serialized, so the checks above are atomic.
 */
import { DurableObject } from "cloudflare:workers";
import type { KeyAdmission } from "../auth/key-state";
import { type Clock, systemClock } from "../lib/clock";
import type { KeyCounterObject } from "./key-counter-object";

/** What the edge keeps of an answer: its status, the headers that describe the body, the body. */
export type StoredAnswer = { status: number; headers: [string, string][]; body: string };

/** A stored answer, or a miss with the ticket its answer may be stored with (null: it may not). */
export type CacheLookup = { answer: StoredAnswer | null; ticket: number | null };

/** The credential's counter a hit is admitted by: its Durable Object holds the revoked mark and the rate window. */
export type CounterRef = { counter: "key" | "upload"; counterId: string };

/** A lookup whose hit was admitted by the credential's counter (null admission: a miss, or the counter was not asked). */
export type AdmittedLookup = CacheLookup & { admission: KeyAdmission | null };

/** The bindings the object reads: the credentials' counters (the placed Worker's). */
type CacheEnv = { KEY_COUNTER?: DurableObjectNamespace<KeyCounterObject>; UPLOAD_COUNTER?: DurableObjectNamespace<KeyCounterObject> };

/**
 * Longer than any holder's life (a queue batch may run 15 minutes), so a lease only lapses for a
 * holder that is gone.
 */
const BYPASS_LEASE_MS = 30 * 60_000;

/** At most this many answers per organization: the oldest stored go first. */
const MAX_ENTRIES = 2_000;

export class EdgeCacheObject extends DurableObject<CacheEnv> {
  /** The system's; a test may give one object its own (through runInDurableObject). */
  clock: Clock = systemClock;
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: CacheEnv) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#sql.exec("CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1), generation INTEGER NOT NULL)");
    this.#sql.exec("INSERT OR IGNORE INTO meta (id, generation) VALUES (1, 0)");
    this.#sql.exec("CREATE TABLE IF NOT EXISTS bypasses (token TEXT PRIMARY KEY, lapses_at INTEGER NOT NULL)");
    this.#sql.exec(
      "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, answer TEXT NOT NULL, expires_at INTEGER, stored_at INTEGER NOT NULL)",
    );
  }

  async lookup(key: string): Promise<CacheLookup> {
    const now = this.clock.now().getTime();
    if (this.#bypassed(now)) return { answer: null, ticket: null };
    const row = this.#sql
      .exec<{ answer: string; expires_at: number | null }>("SELECT answer, expires_at FROM entries WHERE key = ?", key)
      .toArray()[0];
    if (row && (row.expires_at === null || now < row.expires_at)) return { answer: JSON.parse(row.answer) as StoredAnswer, ticket: null };
    if (row) this.#sql.exec("DELETE FROM entries WHERE key = ?", key);
    return { answer: null, ticket: this.#generation() };
  }

  /**
   * `lookup`, and on a hit the credential's counter admits the request, in one call from the edge
   * Worker: a client far from this object pays its distance once, not twice. The counter counts
   * a hit only (a miss is counted by the placed Worker that answers it), so every request counts once.
   */
  async lookupAdmitted(key: string, credential: CounterRef): Promise<AdmittedLookup> {
    const found = await this.lookup(key);
    if (!found.answer) return { ...found, admission: null };
    const counters = credential.counter === "key" ? this.env.KEY_COUNTER : this.env.UPLOAD_COUNTER;
    if (!counters) return { answer: null, ticket: null, admission: null };
    const admission = (await counters.getByName(credential.counterId).admit()) as KeyAdmission;
    return { ...found, admission };
  }

  /** Stores an answer fetched after `lookup` gave `ticket`; false when a write came in between (or is under way). */
  async store(key: string, ticket: number, answer: StoredAnswer, expiresAtMs: number | null): Promise<boolean> {
    const now = this.clock.now().getTime();
    if (this.#bypassed(now) || ticket !== this.#generation()) return false;
    if (expiresAtMs !== null && expiresAtMs <= now) return false;
    this.#sql.exec(
      "INSERT INTO entries (key, answer, expires_at, stored_at) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET answer = excluded.answer, expires_at = excluded.expires_at, stored_at = excluded.stored_at",
      key,
      JSON.stringify(answer),
      expiresAtMs,
      now,
    );
    this.#sql.exec(
      "DELETE FROM entries WHERE key IN (SELECT key FROM entries ORDER BY stored_at DESC, key LIMIT -1 OFFSET ?)",
      MAX_ENTRIES,
    );
    return true;
  }

  /** Opens a bypass before a write; the token releases it. */
  async bypass(leaseMs: number = BYPASS_LEASE_MS): Promise<string> {
    const token = crypto.randomUUID();
    this.#sql.exec("INSERT INTO bypasses (token, lapses_at) VALUES (?, ?)", token, this.clock.now().getTime() + leaseMs);
    this.#dropEntries();
    return token;
  }

  /** Ends a bypass after its write committed (or failed): what was stored before it is gone. */
  async release(token: string): Promise<void> {
    this.#sql.exec("DELETE FROM bypasses WHERE token = ?", token);
    this.#dropEntries();
  }

  /** Drops every stored answer (an operator changed the database directly). Open bypasses stay open. */
  async flush(): Promise<void> {
    this.#dropEntries();
  }

  /** For tests and operators: the generation, the open bypasses and the number of stored answers. */
  async inspect(): Promise<{ generation: number; bypasses: number; entries: number }> {
    const count = (table: string) => this.#sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n;
    return { generation: this.#generation(), bypasses: count("bypasses"), entries: count("entries") };
  }

  /** Whether a bypass is open; one whose lease lapsed is closed here by dropping the entries. */
  #bypassed(now: number): boolean {
    const lapsed = this.#sql.exec<{ n: number }>("SELECT count(*) AS n FROM bypasses WHERE lapses_at <= ?", now).one().n;
    if (lapsed > 0) {
      this.#sql.exec("DELETE FROM bypasses WHERE lapses_at <= ?", now);
      this.#dropEntries();
    }
    return this.#sql.exec<{ n: number }>("SELECT count(*) AS n FROM bypasses").one().n > 0;
  }

  #generation(): number {
    return this.#sql.exec<{ generation: number }>("SELECT generation FROM meta WHERE id = 1").one().generation;
  }

  #dropEntries(): void {
    this.#sql.exec("DELETE FROM entries");
    this.#sql.exec("UPDATE meta SET generation = generation + 1 WHERE id = 1");
  }
}
