/**
 * What one API key's counter holds, and the one function that admits a request against it.
 * Used as-is by the in-memory counter (Node) and by the rate-limit Durable Object (Worker), so
 * both resolve, revoke and count exactly the same way.
 */
import { type RateLimitDecision, type RateLimitPolicy, consumeRollingWindow } from "../lib/rate-limit";

export type KeyState = {
  /** The organization the key opens, remembered from the first database resolution. */
  organizationId: string | null;
  /** Set by key regeneration; never cleared: a replaced key stays rejected. */
  revoked: boolean;
  /** Accepted request times inside the rolling window (ascending). */
  window: number[];
};

export type KeyAdmission =
  | { status: "admitted"; organizationId: string; decision: RateLimitDecision }
  | { status: "revoked" }
  /** The counter does not know the key's organization yet; nothing was counted. */
  | { status: "unresolved" };

export function newKeyState(): KeyState {
  return { organizationId: null, revoked: false, window: [] };
}

/** Admits one request, updating `state` in place. */
export function admitRequest(
  state: KeyState,
  resolution: { organizationId: string } | undefined,
  nowMs: number,
  policy: RateLimitPolicy,
): KeyAdmission {
  if (state.revoked) return { status: "revoked" };
  if (resolution && state.organizationId === null) state.organizationId = resolution.organizationId;
  if (state.organizationId === null) return { status: "unresolved" };
  const decision = consumeRollingWindow(state.window, nowMs, policy);
  return { status: "admitted", organizationId: state.organizationId, decision };
}

export function revokeKey(state: KeyState): void {
  state.revoked = true;
  state.window = [];
}

/**
 * The per-key authority on every request's path: in memory on Node, one Durable Object per key
 * on Workers.
 */
export interface KeyCounter {
  admit(keyId: string, resolution?: { organizationId: string }): Promise<KeyAdmission>;
  /** Marks keys revoked; resolves only once the mark is durable. */
  revoke(keyIds: string[]): Promise<void>;
}
