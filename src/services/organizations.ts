import { and, eq, isNull } from "drizzle-orm";
import { apiKeys, organizations } from "../db/schema";
import { transactionWithRetry } from "../db/transaction-retry";
import { notFound, validationFailed } from "../lib/errors";
import type { Database } from "../db/types";
import { displayPrefix, generateToken, hashToken } from "../lib/keys";
import { isUuid } from "../lib/ids";
import type { OrgScope, ServiceDeps } from "./context";
import { selectWithDataVersion } from "./data-versions";
import { presentApiKey, presentOrganization } from "./presenters";

export const DEFAULT_API_KEY_NAME = "Default API key";

export type AuthenticatedKey = { organizationId: string; apiKeyId: string };

/** The live (not revoked) key with this SHA-256 hash, or null. */
export async function findLiveKeyByHash(db: Database, keyHash: string): Promise<AuthenticatedKey | null> {
  const [row] = await db
    .select({ apiKeyId: apiKeys.id, organizationId: apiKeys.organizationId })
    .from(apiKeys)
    .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)))
    .limit(1);
  return row ?? null;
}

export async function getOrganization(deps: OrgScope, auth: AuthenticatedKey) {
  const [row] = await selectWithDataVersion(
    deps,
    (version) =>
      deps.db
        .select({ org: organizations, key: apiKeys, ...version })
        .from(organizations)
        .innerJoin(apiKeys, eq(apiKeys.organizationId, organizations.id))
        .where(and(eq(organizations.id, auth.organizationId), eq(apiKeys.id, auth.apiKeyId)))
        .limit(1),
    "not_found",
  );
  if (!row) throw notFound("Organization");
  return presentOrganization(row.org, row.key);
}

/**
 * The canonical IANA name of a zone the runtime knows, or null. Intl matches names
 * case-insensitively, so "europe/berlin" is stored as "Europe/Berlin" for clients that do not.
 */
export function canonicalTimeZone(zone: string): string | null {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

export async function createOrganization(deps: ServiceDeps, input: { name: string; timeZone?: string }) {
  const timeZone = canonicalTimeZone(input.timeZone ?? "UTC");
  if (!timeZone) throw validationFailed([{ field: "time_zone", message: "is not a known IANA time zone name" }]);
  const now = deps.clock.now();
  const secret = generateToken("apiKey");
  const keyHash = await hashToken(secret);
  return transactionWithRetry(deps.db, async (tx) => {
    const [org] = await tx.insert(organizations).values({ name: input.name, timeZone, createdAt: now, updatedAt: now }).returning();
    const [key] = await tx
      .insert(apiKeys)
      .values({ organizationId: org!.id, name: DEFAULT_API_KEY_NAME, keyHash, displayPrefix: displayPrefix(secret), createdAt: now })
      .returning();
    return { organization: presentOrganization(org!, key!), api_key: { ...presentApiKey(key!), secret } };
  });
}

/**
 * Replaces the organization's key: the old row is revoked and the new one inserted in one
 * transaction, so exactly one key is live at any moment. `revokeKeys` marks the old key revoked
 * wherever it may be cached (its rate-limit counter) before the transaction commits and before
 * the new key is returned; if that fails, nothing changes.
 */
export async function regenerateApiKey(
  deps: ServiceDeps & { revokeKeys: (keyIds: string[]) => Promise<void> },
  organizationId: string,
) {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const now = deps.clock.now();
  const secret = generateToken("apiKey");
  const keyHash = await hashToken(secret);
  return transactionWithRetry(deps.db, async (tx) => {
    // Locks the organization row so two concurrent regenerations serialize.
    const [org] = await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).for("update");
    if (!org) throw notFound("Organization");
    const revoked = await tx
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(eq(apiKeys.organizationId, organizationId), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id, name: apiKeys.name });
    // Revoking is idempotent: an attempt retried after a conflict may revoke the same keys again.
    if (revoked.length > 0) await deps.revokeKeys(revoked.map((r) => r.id));
    const [key] = await tx
      .insert(apiKeys)
      .values({
        organizationId,
        name: revoked[0]?.name ?? DEFAULT_API_KEY_NAME,
        keyHash,
        displayPrefix: displayPrefix(secret),
        createdAt: now,
      })
      .returning();
    return { api_key: { ...presentApiKey(key!), secret } };
  });
}
