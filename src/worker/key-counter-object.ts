/**
 * One Durable Object per API key (named by key id), SQLite-backed. It holds the organization the
 * key opens, the revoked mark and the rolling rate window, and applies the same state function as
 * the in-memory counter (src/auth/key-state.ts). Its state is persisted on every change, so it
 * survives eviction; requests to one object are serialized, so counting is exact.
 */
import { DurableObject } from "cloudflare:workers";
import { type KeyAdmission, type KeyState, admitRequest, newKeyState, revokeKey } from "../auth/key-state";
import type { Clock } from "../lib/clock";
import type { WorkerEnv } from "./env";
import { workerRuntime } from "./runtime";

const STATE_KEY = "state";

export class KeyCounterObject extends DurableObject<WorkerEnv> {
  /** Tests may set one for this object (through runInDurableObject); otherwise the isolate's clock. */
  clock: Clock | undefined;
  #state: KeyState = newKeyState();

  constructor(ctx: DurableObjectState, env: WorkerEnv) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      this.#state = (await ctx.storage.get<KeyState>(STATE_KEY)) ?? newKeyState();
    });
  }

  async admit(resolution?: { organizationId: string }): Promise<KeyAdmission> {
    const admission = admitRequest(this.#state, resolution, (this.clock ?? workerRuntime.clock).now().getTime(), workerRuntime.rateLimitPolicy);
    // Rejected and unresolved requests change nothing worth a write, except a newly learned organization.
    if (admission.status === "admitted") await this.ctx.storage.put(STATE_KEY, this.#state);
    return admission;
  }

  async revoke(): Promise<void> {
    revokeKey(this.#state);
    await this.ctx.storage.put(STATE_KEY, this.#state);
  }

  /** For tests and operators: what the object holds. */
  async inspect(): Promise<KeyState> {
    return structuredClone(this.#state);
  }
}
