/**
 * One Durable Object per API key (named by key id), SQLite-backed. It holds the organization the
 * key opens, the revoked mark and the rolling rate window, and applies the same state function as
 * the in-memory counter (src/auth/key-state.ts). State is persisted on every change, so it
 * survives eviction; requests to one object are serialized, so counting is exact.
 *
 * Storage is incremental: an admitted request is one INSERT, expiry one DELETE of the rows that
 * left the window, so a request's write cost does not grow with the window (re-serializing up
 * to 600 timestamps per request cost 0.5–1.4 ms locally).
 */
import { DurableObject } from "cloudflare:workers";
import { type KeyAdmission, type KeyState, admitRequest, newKeyState, revokeKey } from "../auth/key-state";
import { type Clock, systemClock } from "../lib/clock";
import { DEFAULT_RATE_LIMIT, type RateLimitPolicy } from "../lib/rate-limit";

/** It reads no binding, so it is typed without the Worker's env (which names this class). */
export class KeyCounterObject extends DurableObject<object> {
  /** The system's; a test may give one object its own (through runInDurableObject). */
  clock: Clock = systemClock;
  /** The deployed policy; a test's composition of the Worker may override it. */
  protected get policy(): RateLimitPolicy {
    return DEFAULT_RATE_LIMIT;
  }
  readonly #state: KeyState = newKeyState();
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: object) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#sql.exec(
      "CREATE TABLE IF NOT EXISTS key_meta (id INTEGER PRIMARY KEY CHECK (id = 1), organization_id TEXT, revoked INTEGER NOT NULL DEFAULT 0)",
    );
    this.#sql.exec("CREATE TABLE IF NOT EXISTS accepted (at INTEGER NOT NULL)");
    this.#sql.exec("CREATE INDEX IF NOT EXISTS accepted_at ON accepted (at)");
    const meta = this.#sql
      .exec<{ organization_id: string | null; revoked: number }>("SELECT organization_id, revoked FROM key_meta WHERE id = 1")
      .toArray()[0];
    if (meta) {
      this.#state.organizationId = meta.organization_id;
      this.#state.revoked = meta.revoked === 1;
    }
    this.#state.window = this.#sql
      .exec<{ at: number }>("SELECT at FROM accepted ORDER BY at")
      .toArray()
      .map((row) => row.at);
  }

  async admit(resolution?: { organizationId: string }): Promise<KeyAdmission> {
    const nowMs = this.clock.now().getTime();
    const policy = this.policy;
    const knewOrganization = this.#state.organizationId !== null;
    const hadExpired = (this.#state.window[0] ?? Number.POSITIVE_INFINITY) <= nowMs - policy.windowMs;

    const admission = admitRequest(this.#state, resolution, nowMs, policy);

    if (!knewOrganization && this.#state.organizationId !== null) this.#writeMeta();
    if (hadExpired) this.#sql.exec("DELETE FROM accepted WHERE at <= ?", nowMs - policy.windowMs);
    if (admission.status === "admitted" && admission.decision.allowed) this.#sql.exec("INSERT INTO accepted (at) VALUES (?)", nowMs);
    return admission;
  }

  async revoke(): Promise<void> {
    revokeKey(this.#state);
    this.#writeMeta();
    this.#sql.exec("DELETE FROM accepted");
  }

  /** For tests and operators: what the object holds. */
  async inspect(): Promise<KeyState> {
    return structuredClone(this.#state);
  }

  #writeMeta(): void {
    this.#sql.exec(
      "INSERT INTO key_meta (id, organization_id, revoked) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET organization_id = excluded.organization_id, revoked = excluded.revoked",
      this.#state.organizationId,
      this.#state.revoked ? 1 : 0,
    );
  }
}

/**
 * One Durable Object per project for upload tokens: the same state and rules (the project's
 * organization, a rolling window of 600 uploads per 60 seconds), in a namespace of its own so an
 * upload counter and an API key's counter can never share an object.
 */
export class UploadCounterObject extends KeyCounterObject {}
