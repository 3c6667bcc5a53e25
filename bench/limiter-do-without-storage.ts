/**
 * Diagnostics for the limiter benchmark, not a deployable Worker: the Worker as deployed, except
 * that its per-key Durable Object keeps the key's state in memory only and never writes storage.
 * Comparing a run of
 *
 *   BENCH_LIMITER_DO_ENTRY=bench/limiter-do-without-storage.ts BENCH_OUTPUT=/tmp/limiter.md npm run bench:limiter
 *
 * with a normal run splits the DO limiter's added latency into the RPC hop to the object and the
 * object's storage write. Same class name as src/worker/key-counter-object.ts so wrangler.toml's
 * binding resolves; the state function is the shared one (src/auth/key-state.ts).
 */
import { DurableObject } from "cloudflare:workers";
import { type KeyAdmission, type KeyState, admitRequest, newKeyState, revokeKey } from "../src/auth/key-state";
import { systemClock } from "../src/lib/clock";
import { DEFAULT_RATE_LIMIT } from "../src/lib/rate-limit";
import { createWorkerHandler } from "../src/worker/index";

export { UploadCounterObject } from "../src/worker/key-counter-object";
export { EdgeCacheObject } from "../src/worker/edge-cache-object";

export class KeyCounterObject extends DurableObject {
  #state: KeyState = newKeyState();

  async admit(resolution?: { organizationId: string }): Promise<KeyAdmission> {
    return admitRequest(this.#state, resolution, systemClock.now().getTime(), DEFAULT_RATE_LIMIT);
  }

  async revoke(): Promise<void> {
    revokeKey(this.#state);
  }
}

export default createWorkerHandler();
