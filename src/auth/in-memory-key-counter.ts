import type { Clock } from "../lib/clock";
import { DEFAULT_RATE_LIMIT, type RateLimitPolicy } from "../lib/rate-limit";
import { type KeyAdmission, type KeyCounter, type KeyState, admitRequest, newKeyState, revokeKey } from "./key-state";

/** Per-process key counter for `npm start` and tests; the Worker uses the Durable Object. */
export class InMemoryKeyCounter implements KeyCounter {
  readonly #keys = new Map<string, KeyState>();
  /** Size at which idle keys are swept; doubles when a sweep frees little, so sweeps stay amortized O(1). */
  #sweepAt = 10_000;

  constructor(
    private readonly clock: Clock,
    private readonly policy: RateLimitPolicy = DEFAULT_RATE_LIMIT,
  ) {}

  async admit(keyId: string, resolution?: { organizationId: string }): Promise<KeyAdmission> {
    let state = this.#keys.get(keyId);
    if (!state) {
      if (!resolution) return { status: "unresolved" };
      state = newKeyState();
      this.#keys.set(keyId, state);
      this.#maybeSweep();
    }
    return admitRequest(state, resolution, this.clock.now().getTime(), this.policy);
  }

  async revoke(keyIds: string[]): Promise<void> {
    for (const keyId of keyIds) {
      const state = this.#keys.get(keyId) ?? newKeyState();
      revokeKey(state);
      this.#keys.set(keyId, state);
    }
  }

  /** Forgets live keys with nothing in their window (they re-resolve from the database); revoked marks stay. */
  #maybeSweep(): void {
    if (this.#keys.size <= this.#sweepAt) return;
    const cutoff = this.clock.now().getTime() - this.policy.windowMs;
    for (const [keyId, state] of this.#keys) {
      if (!state.revoked && (state.window.at(-1) ?? 0) <= cutoff) this.#keys.delete(keyId);
    }
    this.#sweepAt = Math.max(10_000, this.#keys.size * 2);
  }
}
