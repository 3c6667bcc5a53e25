/**
 * Webhook signing secrets at rest (docs/secrets.md): each is sealed under the server's keyring
 * for its own row (the row's id is the sealing context, so a ciphertext copied to another row does
 * not open), and opened only to sign a delivery.
 *
 * `reencryptSigningSecrets` runs when the service starts (Node) or on an isolate's first request
 * (Worker): it seals the rows still in plain text (made before migration 0009) and re-seals the
 * rows sealed under an older key (after a rotation), so that the older key can be retired.
 */
import { and, eq, isNotNull, notLike, or } from "drizzle-orm";
import { webhookEndpoints } from "../../db/schema";
import type { Database } from "../../db/types";
import type { Logger } from "../../lib/logger";
import { SecretDecryptionError, type SecretKeyring, sealedKeyId } from "../../lib/secret-box";

const contextOf = (endpointId: string) => `webhook_endpoints/${endpointId}/signing_secret`;
const urlContextOf = (endpointId: string) => `webhook_endpoints/${endpointId}/url`;

/** The stored form of a Slack or Teams channel's URL (the URL is the channel's credential). */
export function sealChannelUrl(secrets: SecretKeyring, endpointId: string, url: string): Promise<string> {
  return secrets.encrypt(url, urlContextOf(endpointId));
}

/**
 * Where a delivery goes: a signed webhook's URL as stored, a channel's opened from its sealed form
 * (throws SecretDecryptionError when its key is not configured).
 */
export async function endpointUrl(
  secrets: SecretKeyring,
  endpoint: Pick<typeof webhookEndpoints.$inferSelect, "id" | "url" | "urlEncrypted">,
): Promise<string> {
  return endpoint.urlEncrypted === null ? endpoint.url : secrets.decrypt(endpoint.urlEncrypted, urlContextOf(endpoint.id));
}

/** The stored form of a new endpoint's secret. */
export function sealSigningSecret(secrets: SecretKeyring, endpointId: string, secret: string): Promise<string> {
  return secrets.encrypt(secret, contextOf(endpointId));
}

type StoredSecret = Pick<typeof webhookEndpoints.$inferSelect, "id" | "signingSecretEncrypted" | "legacySigningSecret">;

/** The endpoint's secret, to sign with; throws SecretDecryptionError when it cannot be opened. */
export async function openSigningSecret(secrets: SecretKeyring, endpoint: StoredSecret): Promise<string> {
  if (endpoint.signingSecretEncrypted !== null) return secrets.decrypt(endpoint.signingSecretEncrypted, contextOf(endpoint.id));
  // Not sealed yet (a row from before migration 0009 that the start-up pass has not reached).
  if (endpoint.legacySigningSecret !== null) return endpoint.legacySigningSecret;
  throw new SecretDecryptionError("The webhook has no signing secret.");
}

export type ReencryptionReport = {
  /** The key every secret is now sealed under. */
  keyId: string;
  /** Rows sealed from plain text, and rows re-sealed from an older key. */
  sealed: number;
  resealed: number;
  /** Rows that stay as they are: sealed under keys that are not configured (by id), or that do not open. */
  unreadable: { endpointId: string; keyId: string | null }[];
};

/**
 * Seals every secret still in plain text and re-seals every secret sealed under a key other than
 * the current one. Each row is written only if it is still what was read (another instance may
 * be doing the same), and never with the plain text as a query parameter. Logs counts and key
 * ids, never a secret.
 */
export async function reencryptSigningSecrets(deps: { db: Database; secrets: SecretKeyring; logger: Logger }): Promise<ReencryptionReport> {
  const keyId = await deps.secrets.currentKeyId();
  const rows = await deps.db
    .select({
      id: webhookEndpoints.id,
      signingSecretEncrypted: webhookEndpoints.signingSecretEncrypted,
      legacySigningSecret: webhookEndpoints.legacySigningSecret,
    })
    .from(webhookEndpoints)
    .where(or(isNotNull(webhookEndpoints.legacySigningSecret), notLike(webhookEndpoints.signingSecretEncrypted, `v1:${keyId}:%`)));
  const report: ReencryptionReport = { keyId, sealed: 0, resealed: 0, unreadable: [] };
  for (const row of rows) {
    let secret: string;
    try {
      secret = await openSigningSecret(deps.secrets, row);
    } catch (error) {
      if (!(error instanceof SecretDecryptionError)) throw error;
      report.unreadable.push({
        endpointId: row.id,
        keyId: row.signingSecretEncrypted === null ? null : sealedKeyId(row.signingSecretEncrypted),
      });
      continue;
    }
    const unchanged =
      row.signingSecretEncrypted === null
        ? isNotNull(webhookEndpoints.legacySigningSecret)
        : eq(webhookEndpoints.signingSecretEncrypted, row.signingSecretEncrypted);
    const updated = await deps.db
      .update(webhookEndpoints)
      .set({ signingSecretEncrypted: await sealSigningSecret(deps.secrets, row.id, secret), legacySigningSecret: null })
      .where(and(eq(webhookEndpoints.id, row.id), unchanged))
      .returning({ id: webhookEndpoints.id });
    if (updated.length === 0) continue;
    if (row.signingSecretEncrypted === null) report.sealed++;
    else report.resealed++;
  }
  report.resealed += await resealChannelUrls(deps, keyId, report);
  if (report.sealed + report.resealed > 0) {
    deps.logger.info("webhook signing secrets sealed under the current key", {
      keyId,
      fromPlainText: report.sealed,
      fromOlderKeys: report.resealed,
    });
  }
  if (report.unreadable.length > 0) {
    deps.logger.error(
      "webhook signing secrets that cannot be opened with SECRETS_KEY or SECRETS_KEY_PREVIOUS; their deliveries fail until the key is configured",
      {
        keyId,
        webhooks: report.unreadable,
      },
    );
  }
  return report;
}

/** Channels' URLs sealed under an older key, re-sealed under the current one (rotation); counted with the secrets. */
async function resealChannelUrls(
  deps: { db: Database; secrets: SecretKeyring },
  keyId: string,
  report: ReencryptionReport,
): Promise<number> {
  const rows = await deps.db
    .select({ id: webhookEndpoints.id, urlEncrypted: webhookEndpoints.urlEncrypted })
    .from(webhookEndpoints)
    .where(and(isNotNull(webhookEndpoints.urlEncrypted), notLike(webhookEndpoints.urlEncrypted, `v1:${keyId}:%`)));
  let resealed = 0;
  for (const row of rows) {
    let url: string;
    try {
      url = await deps.secrets.decrypt(row.urlEncrypted!, urlContextOf(row.id));
    } catch (error) {
      if (!(error instanceof SecretDecryptionError)) throw error;
      report.unreadable.push({ endpointId: row.id, keyId: sealedKeyId(row.urlEncrypted!) });
      continue;
    }
    const updated = await deps.db
      .update(webhookEndpoints)
      .set({ urlEncrypted: await sealChannelUrl(deps.secrets, row.id, url) })
      .where(and(eq(webhookEndpoints.id, row.id), eq(webhookEndpoints.urlEncrypted, row.urlEncrypted!)))
      .returning({ id: webhookEndpoints.id });
    resealed += updated.length;
  }
  return resealed;
}
