import type { EdgeCacheHooks, EdgeCredential } from "../app-env";

/**
 * An admitted credential, told to the edge cache (the Worker only; absent on Node): the
 * credential's next reads of its organization may be served at the edge, and a request that may
 * write, once allowed by its rate limit, brackets its organization before any of its writes
 * (docs/edge-path.md, "Edge-cached reads"). Every door that admits a credential goes through here.
 */
export async function tellEdgeCache(edgeCache: EdgeCacheHooks | undefined, credential: EdgeCredential, allowed: boolean): Promise<void> {
  if (!edgeCache) return;
  edgeCache.admitted(credential);
  if (edgeCache.writes && allowed) await edgeCache.beforeWrite(credential.organizationId);
}
