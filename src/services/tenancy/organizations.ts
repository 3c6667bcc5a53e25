import { and, asc, eq, isNull } from "drizzle-orm";
import { apiKeys, members, organizations, users } from "../../db/schema";
import { type Transaction, transactionWithRetry } from "../../db/transaction-retry";
import { type SecretKeyring, SecretDecryptionError } from "../../lib/secret-box";
import { writeEmail } from "../shared/email-outbox";
import { notFound, validationFailed } from "../../lib/errors";
import type { Database } from "../../db/types";
import { displayPrefix, generateToken, hashToken } from "../../lib/keys";
import { isUuid } from "../../lib/ids";
import type { OrgScope, ServiceDeps } from "../shared/context";
import { selectWithDataVersion } from "../shared/data-versions";
import { presentApiKey, presentOrganization } from "../../contract/presenters";

const DEFAULT_API_KEY_NAME = "Default API key";

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
function canonicalTimeZone(zone: string): string | null {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** Where an API key's sealed copy lives: it opens only in its own row. */
const apiKeyContext = (keyId: string) => `api_keys/${keyId}/key`;

/** A new key's row values: its hash, and its copy sealed under SECRETS_KEY so admins can reveal it (docs/e-mail.md, team page). */
async function newKeyValues(secrets: SecretKeyring | undefined, secret: string) {
  const id = crypto.randomUUID();
  return {
    id,
    keyHash: await hashToken(secret),
    displayPrefix: displayPrefix(secret),
    keyEncrypted: secrets ? await secrets.encrypt(secret, apiKeyContext(id)) : null,
  };
}

export type KeyDeps = ServiceDeps & { secrets: SecretKeyring };

/**
 * A new organization and its API key. With `secrets` (the app, sign-up, the demo) the key's sealed
 * copy is kept so admins can reveal it; without (benchmarks, fixtures) only its hash.
 */
export async function createOrganization(deps: ServiceDeps & { secrets?: SecretKeyring }, input: { name: string; timeZone?: string }) {
  const timeZone = canonicalTimeZone(input.timeZone ?? "UTC");
  if (!timeZone) throw validationFailed([{ field: "time_zone", message: "is not a known IANA time zone name" }]);
  const now = deps.clock.now();
  const secret = generateToken("apiKey");
  const keyValues = await newKeyValues(deps.secrets, secret);
  return transactionWithRetry(deps.db, async (tx) => {
    const [org] = await tx.insert(organizations).values({ name: input.name, timeZone, createdAt: now, updatedAt: now }).returning();
    const [key] = await tx
      .insert(apiKeys)
      .values({ organizationId: org!.id, name: DEFAULT_API_KEY_NAME, ...keyValues, createdAt: now })
      .returning();
    return { organization: presentOrganization(org!, key!), api_key: { ...presentApiKey(key!), secret } };
  });
}

/**
 * Replaces the organization's key: the old row is revoked and the new one inserted in one
 * transaction, so exactly one key is live at any moment. `revokeKeys` marks the old key revoked
 * wherever it may be cached (its rate-limit counter) before the transaction commits and before
 * the new key is returned; if that fails, nothing changes. Every admin of the organization gets
 * an e-mail (spec §5.5), written to the outbox in the same transaction: the caller queues
 * `emailIds` once it has committed.
 */
export async function regenerateApiKey(
  deps: KeyDeps & { revokeKeys: (keyIds: string[]) => Promise<void> },
  organizationId: string,
  /** Who asked, for the e-mail: a person's name, or null for an operator through the admin API. */
  regeneratedBy: string | null = null,
) {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const now = deps.clock.now();
  const secret = generateToken("apiKey");
  const keyValues = await newKeyValues(deps.secrets, secret);
  return transactionWithRetry(deps.db, async (tx) => {
    // Locks the organization row so two concurrent regenerations serialize.
    const [org] = await tx
      .select({ id: organizations.id, name: organizations.name })
      .from(organizations)
      .where(eq(organizations.id, organizationId))
      .for("update");
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
        ...keyValues,
        createdAt: now,
      })
      .returning();
    const emailIds = await emailAdminsAboutNewKey({ ...deps, db: tx }, { id: org.id, name: org.name }, regeneratedBy, now);
    return { api_key: { ...presentApiKey(key!), secret }, emailIds };
  });
}

/** The organization's admins with their e-mail addresses, oldest membership first. */
async function organizationAdmins(
  db: Database | Transaction,
  organizationId: string,
): Promise<{ userId: string; name: string; email: string }[]> {
  return db
    .select({ userId: users.id, name: users.name, email: users.email })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.organizationId, organizationId), eq(members.role, "admin")))
    .orderBy(asc(members.createdAt), asc(members.id));
}

async function emailAdminsAboutNewKey(
  deps: KeyDeps & { db: Transaction },
  org: { id: string; name: string },
  regeneratedBy: string | null,
  at: Date,
): Promise<string[]> {
  const admins = await organizationAdmins(deps.db, org.id);
  const when = `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const who = regeneratedBy === null ? "an operator of the service (admin API)" : regeneratedBy;
  const ids: string[] = [];
  for (const admin of admins) {
    const text = [
      `Hello ${admin.name},`,
      "",
      `The API key of the organization "${org.name}" was regenerated on ${when} by ${who}.`,
      "The previous key no longer works: every request made with it is refused (401).",
      "",
      `Admins can reveal the new key on the team page: ${deps.webAppUrl}/settings/team`,
      "",
      "If nobody in your organization meant to do this, regenerate the key again and review who is an admin.",
    ].join("\n");
    ids.push(
      await writeEmail(deps, {
        organizationId: org.id,
        kind: "api_key_regenerated",
        to: admin.email,
        subject: `The API key of ${oneLine(org.name)} was regenerated`,
        text,
      }),
    );
  }
  return ids;
}

/** A name inside a subject line: one line, at most 100 characters. */
export const oneLine = (text: string) => text.replace(/[\u0000-\u001f\u007f]+/g, " ").slice(0, 100);

async function liveApiKey(db: Database, organizationId: string) {
  const [key] = await db
    .select({ id: apiKeys.id, displayPrefix: apiKeys.displayPrefix, createdAt: apiKeys.createdAt, keyEncrypted: apiKeys.keyEncrypted })
    .from(apiKeys)
    .where(and(eq(apiKeys.organizationId, organizationId), isNull(apiKeys.revokedAt)))
    .limit(1);
  if (!key) throw notFound("API key");
  return key;
}

/** What the team page shows of the live key without revealing it: its prefix and date (nothing is decrypted). */
export async function describeApiKey(db: Database, organizationId: string): Promise<{ displayPrefix: string; createdAt: Date }> {
  const { displayPrefix, createdAt } = await liveApiKey(db, organizationId);
  return { displayPrefix, createdAt };
}

/**
 * The organization's live key for an admin to read: the secret when its sealed copy exists and
 * opens, else null: a key made before copies were kept, or sealed under a SECRETS_KEY no longer
 * configured (docs/secrets.md). Either way regenerating it gives a key that can be revealed.
 */
export async function revealApiKey(
  deps: { db: Database; secrets: SecretKeyring },
  organizationId: string,
): Promise<{ displayPrefix: string; createdAt: Date; secret: string | null }> {
  const key = await liveApiKey(deps.db, organizationId);
  let secret: string | null = null;
  if (key.keyEncrypted !== null) {
    try {
      secret = await deps.secrets.decrypt(key.keyEncrypted, apiKeyContext(key.id));
    } catch (error) {
      if (!(error instanceof SecretDecryptionError)) throw error;
    }
  }
  return { displayPrefix: key.displayPrefix, createdAt: key.createdAt, secret };
}
