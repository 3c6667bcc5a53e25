/**
 * The key counter of processes that scale out (SCALE_OUT=true, docs/scale-out.md): the same
 * interface as the in-memory one, its windows in Postgres (`rate_limit_windows`) so that a key's
 * 600 requests a minute hold across every process, whichever one a request reaches. One statement
 * per request: the key's row is created or updated, and returned, by the same upsert.
 *
 * The window is a fixed one that starts with the first request after the previous one ended (as
 * webhook deliveries' and uploads' quotas, src/services/notifications/delivery-rate.ts), not the
 * rolling window of the in-memory counter and the Durable Object, which would keep each accepted
 * request's time: a key can send its 600 at the end of one window and 600 more at the start of the
 * next, never more than twice the limit in any minute.
 */
import { type SQL, and, eq, sql } from "drizzle-orm";
import { rateLimitWindows } from "../db/schema";
import type { Database } from "../db/types";
import type { Clock } from "../lib/clock";
import { DEFAULT_RATE_LIMIT, type RateLimitDecision, type RateLimitPolicy, secondsUntil } from "../lib/rate-limit";
import type { KeyAdmission, KeyCounter } from "./key-state";

/** Whose windows a counter keeps: API keys (by key id) or upload tokens (by project id). */
export type CounterName = "api_key" | "upload_token";

type WindowRow = { organizationId: string | null; revoked: boolean; windowStartedAt: Date; requests: number };

export class PostgresKeyCounter implements KeyCounter {
  constructor(
    private readonly deps: { db: Database; clock: Clock },
    private readonly counter: CounterName,
    private readonly policy: RateLimitPolicy = DEFAULT_RATE_LIMIT,
  ) {}

  async admit(keyId: string, resolution?: { organizationId: string }): Promise<KeyAdmission> {
    const now = this.deps.clock.now();
    const row = resolution ? await this.#upsert(keyId, resolution.organizationId, now) : await this.#update(keyId, now);
    if (row?.revoked) return { status: "revoked" };
    if (!row?.organizationId) return { status: "unresolved" };
    return { status: "admitted", organizationId: row.organizationId, decision: this.#decision(row, now) };
  }

  async revoke(keyIds: string[]): Promise<void> {
    if (keyIds.length === 0) return;
    const now = this.deps.clock.now();
    const w = rateLimitWindows;
    await this.deps.db
      .insert(w)
      .values(keyIds.map((keyId) => ({ counter: this.counter, keyId, revoked: true, windowStartedAt: now, requests: 0 })))
      .onConflictDoUpdate({ target: [w.counter, w.keyId], set: { revoked: true } });
  }

  /** What one request does to a window that exists: a new window once the last one ended, else one more request (up to one past the limit); none once revoked. */
  #counted(now: Date): { windowStartedAt: SQL; requests: SQL } {
    const w = rateLimitWindows;
    const ended = sql`${w.windowStartedAt} <= ${new Date(now.getTime() - this.policy.windowMs).toISOString()}::timestamptz`;
    return {
      windowStartedAt: sql`case when ${w.revoked} or not (${ended}) then ${w.windowStartedAt} else ${now.toISOString()}::timestamptz end`,
      requests: sql`case when ${w.revoked} then ${w.requests} when ${ended} then 1 else least(${w.requests} + 1, ${this.policy.limit + 1}) end`,
    };
  }

  /** The first database resolution of the key in this counter creates its row, or counts on the existing one. */
  async #upsert(keyId: string, organizationId: string, now: Date): Promise<WindowRow | undefined> {
    const w = rateLimitWindows;
    const [row] = await this.deps.db
      .insert(w)
      .values({ counter: this.counter, keyId, organizationId, windowStartedAt: now, requests: 1 })
      .onConflictDoUpdate({
        target: [w.counter, w.keyId],
        set: { ...this.#counted(now), organizationId: sql`coalesce(${w.organizationId}, excluded.organization_id)` },
      })
      .returning(this.#returned());
    return row;
  }

  /** A key the process already resolved: counted on its row; no row → unresolved (it falls back to the database). */
  async #update(keyId: string, now: Date): Promise<WindowRow | undefined> {
    const w = rateLimitWindows;
    const [row] = await this.deps.db
      .update(w)
      .set(this.#counted(now))
      .where(and(eq(w.counter, this.counter), eq(w.keyId, keyId)))
      .returning(this.#returned());
    return row;
  }

  #returned() {
    const w = rateLimitWindows;
    return { organizationId: w.organizationId, revoked: w.revoked, windowStartedAt: w.windowStartedAt, requests: w.requests };
  }

  #decision(row: WindowRow, now: Date): RateLimitDecision {
    const { limit, windowMs } = this.policy;
    const endsAt = row.windowStartedAt.getTime() + windowMs;
    const allowed = row.requests <= limit;
    const decision: RateLimitDecision = {
      allowed,
      limit,
      windowSeconds: Math.ceil(windowMs / 1000),
      remaining: Math.max(0, limit - row.requests),
      resetSeconds: Math.max(0, Math.ceil((endsAt - now.getTime()) / 1000)),
    };
    if (!allowed) decision.retryAfterSeconds = secondsUntil(endsAt, now.getTime());
    return decision;
  }
}
