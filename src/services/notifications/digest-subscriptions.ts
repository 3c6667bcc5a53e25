/**
 * Who gets the weekly digest e-mail (docs/notifications.md#the-weekly-digest): each member keeps
 * it on or off (`members.weekly_digest`; unset: on for admins, off for members), on the team page
 * or with the one-click link every digest carries. The link's token names the membership and is
 * signed (HMAC-SHA256 under a secret derived from SECRETS_KEY), so it unsubscribes without signing
 * in and cannot be altered to unsubscribe someone else. It does not expire: an old digest's link
 * keeps working, and only turns a digest off.
 */
import { and, eq, sql } from "drizzle-orm";
import { members, organizations, users } from "../../db/schema";
import type { Database } from "../../db/types";
import { base64UrlDecode, base64UrlEncode, bytesEqual, hmacSha256, utf8 } from "../../lib/crypto";
import { isUuid } from "../../lib/ids";
import type { SecretKeyring } from "../../lib/secret-box";

const TOKEN_PURPOSE = "digest-unsubscribe";

/** Whether a membership keeps the digest: its choice, else its role's default. */
export const keepsDigestSql = sql<boolean>`coalesce(${members.weeklyDigest}, ${members.role} = 'admin')`;

async function signature(secrets: SecretKeyring, memberId: string): Promise<Uint8Array> {
  return hmacSha256(await secrets.deriveSecret(TOKEN_PURPOSE), utf8(`${TOKEN_PURPOSE} v1:${memberId}`));
}

/** The token of a membership's unsubscribe link: `<member id>.<signature, base64url>`. */
export async function unsubscribeToken(secrets: SecretKeyring, memberId: string): Promise<string> {
  return `${memberId}.${base64UrlEncode(await signature(secrets, memberId))}`;
}

/** The membership a token names, or null when it is malformed or its signature does not match (altered, or another key's). */
async function memberOfToken(secrets: SecretKeyring, token: string): Promise<string | null> {
  const [memberId, signed, ...rest] = token.split(".");
  if (rest.length > 0 || !memberId || !isUuid(memberId) || !signed) return null;
  const presented = base64UrlDecode(signed);
  if (!presented) return null;
  return bytesEqual(presented, await signature(secrets, memberId)) ? memberId : null;
}

export type DigestSubscription = { memberId: string; email: string; organizationName: string; keepsDigest: boolean };

/** What an unsubscribe link's page shows: whose digest, of which organization, and whether it is on; null for a bad or spent link. */
export async function subscriptionOfToken(
  deps: { db: Database; secrets: SecretKeyring },
  token: string,
): Promise<DigestSubscription | null> {
  const memberId = await memberOfToken(deps.secrets, token);
  if (memberId === null) return null;
  const [row] = await deps.db
    .select({ memberId: members.id, email: users.email, organizationName: organizations.name, keepsDigest: keepsDigestSql })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .innerJoin(organizations, eq(organizations.id, members.organizationId))
    .where(eq(members.id, memberId))
    .limit(1);
  return row ?? null;
}

/** Turns the digest off for the membership a valid token names; null when the token is bad or the membership is gone. */
export async function unsubscribeWithToken(
  deps: { db: Database; secrets: SecretKeyring },
  token: string,
): Promise<DigestSubscription | null> {
  const subscription = await subscriptionOfToken(deps, token);
  if (!subscription) return null;
  await deps.db.update(members).set({ weeklyDigest: false }).where(eq(members.id, subscription.memberId));
  return { ...subscription, keepsDigest: false };
}

/** Whether a person keeps the digest of an organization they are a member of (the team page); null: not a member. */
export async function ownDigestSetting(db: Database, organizationId: string, userId: string): Promise<boolean | null> {
  const [row] = await db
    .select({ keepsDigest: keepsDigestSql })
    .from(members)
    .where(and(eq(members.organizationId, organizationId), eq(members.userId, userId)))
    .limit(1);
  return row?.keepsDigest ?? null;
}

/** A person turns their own digest on or off: only their own membership is changed. */
export async function setOwnDigest(db: Database, organizationId: string, userId: string, on: boolean): Promise<void> {
  await db
    .update(members)
    .set({ weeklyDigest: on })
    .where(and(eq(members.organizationId, organizationId), eq(members.userId, userId)));
}
