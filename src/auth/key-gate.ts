/**
 * Resolves a presented API key to its organization and counts the request, without a database
 * round trip on every request, while a regenerated key is rejected from the very next request.
 *
 * - A bounded cache maps SHA-256(key) → key id. The mapping never changes for a given key, so it
 *   can be cached for as long as the process or isolate lives. It holds no secret.
 * - The key's counter (in memory on Node, its Durable Object on Workers) holds the organization,
 *   the revoked mark and the rate window, and is consulted on every request anyway.
 * - Regeneration marks the old key revoked in its counter inside the database transaction that
 *   replaces it, before the new key is returned (src/services/tenancy/organizations.ts).
 * - A cache miss, or a counter that has forgotten the organization, falls back to the database,
 *   which only knows live keys.
 * Failure modes are in docs/edge-auth.md.
 */
import { ApiError } from "../lib/errors";
import type { RateLimitDecision } from "../lib/rate-limit";
import type { Database } from "../db/types";
import { type AuthenticatedKey, findLiveKeyByHash } from "../services/tenancy/organizations";
import { hashToken, isWellFormedToken } from "../lib/keys";
import type { KeyCounter } from "./key-state";

/** Insertion-ordered map with a size bound: the oldest entry goes first. */
export class KeyIdCache {
  readonly #entries = new Map<string, string>();
  constructor(private readonly maxEntries = 10_000) {}
  get(keyHash: string): string | undefined {
    return this.#entries.get(keyHash);
  }
  set(keyHash: string, keyId: string): void {
    this.#entries.delete(keyHash);
    this.#entries.set(keyHash, keyId);
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }
  delete(keyHash: string): void {
    this.#entries.delete(keyHash);
  }
}

export type Admission = { auth: AuthenticatedKey; decision: RateLimitDecision };

/** The counter (a Durable Object on Workers) could not be asked: fail closed, retryably. */
function counterUnavailable(error: unknown): ApiError {
  return Object.assign(
    new ApiError("service_unavailable", "The rate limiter is unreachable; the request was not processed. Retry shortly.", {
      headers: { "Retry-After": "1" },
    }),
    { cause: error },
  );
}

/** What admitting a key reads: the database (on a cache miss), the key's counter and the process's key-id cache. */
export type KeyGateDeps = { db: Database; keyCounter: KeyCounter; keyIdCache: KeyIdCache };

/** Counts a request on a credential's counter; 503 when the counter cannot be reached. */
export async function counterAdmit(counter: KeyCounter, keyId: string, resolution?: { organizationId: string }) {
  try {
    return await counter.admit(keyId, resolution);
  } catch (error) {
    throw counterUnavailable(error);
  }
}

/** The key's organization and rate decision, or null for a malformed, unknown or revoked key. */
export async function admitApiKey(deps: KeyGateDeps, presented: string): Promise<Admission | null> {
  if (!isWellFormedToken("apiKey", presented)) return null;
  const keyHash = await hashToken(presented);

  const cachedKeyId = deps.keyIdCache.get(keyHash);
  if (cachedKeyId !== undefined) {
    const admission = await counterAdmit(deps.keyCounter, cachedKeyId);
    if (admission.status === "revoked") {
      deps.keyIdCache.delete(keyHash);
      return null;
    }
    if (admission.status === "admitted") {
      return { auth: { apiKeyId: cachedKeyId, organizationId: admission.organizationId }, decision: admission.decision };
    }
  }

  const live = await findLiveKeyByHash(deps.db, keyHash);
  if (!live) return null;
  const admission = await counterAdmit(deps.keyCounter, live.apiKeyId, { organizationId: live.organizationId });
  // The database still lists the key while its counter says revoked: a regeneration is
  // committing right now. Fail closed.
  if (admission.status !== "admitted") return null;
  deps.keyIdCache.set(keyHash, live.apiKeyId);
  return { auth: live, decision: admission.decision };
}

/** Marks replaced keys revoked in their counters; 503 when a counter cannot be reached. */
export async function revokeApiKeys(counter: KeyCounter, keyIds: string[]): Promise<void> {
  try {
    await counter.revoke(keyIds);
  } catch (error) {
    throw counterUnavailable(error);
  }
}
