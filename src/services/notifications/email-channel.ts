/**
 * E-mail channels (docs/notifications.md#e-mail-channels): a channel whose destination is one or
 * more addresses of members of the organization. Adding one refuses an address that is not a
 * member's; every attempt sends only to the addresses that still are (someone who left receives
 * nothing), and the e-mail outbox checks again when it sends (src/services/shared/email-outbox.ts).
 * An attempt hands one e-mail per address to the outbox (HTML and text), which sends, retries and
 * holds them like every e-mail; the delivery log records the hand-over.
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import { members, notificationDeliveries, users, type webhookEndpoints } from "../../db/schema";
import type { Database } from "../../db/types";
import { transactionWithRetry } from "../../db/transaction-retry";
import { isPlausibleEmailAddress } from "../../lib/email-address";
import { type ErrorDetail, validationFailed } from "../../lib/errors";
import { channelEmail } from "../../notifications/email-messages";
import type { ChannelMessage } from "../../notifications/message-types";
import { queueEmails, writeEmail } from "../shared/email-outbox";
import type { NotificationDeps } from "./notifications";

/** Addresses per e-mail channel: a team's list belongs in a team's mailbox, not in twenty rows of the outbox. */
const MAX_CHANNEL_ADDRESSES = 20;

type EndpointRow = typeof webhookEndpoints.$inferSelect;
type DeliveryRow = typeof notificationDeliveries.$inferSelect;

/** Of `addresses` (lower-cased), those of people who are members of the organization now. */
async function memberAddresses(db: Database, organizationId: string, addresses: readonly string[]): Promise<Set<string>> {
  if (addresses.length === 0) return new Set();
  const rows = await db
    .select({ email: users.email })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.organizationId, organizationId), inArray(users.email, [...addresses])));
  return new Set(rows.map((row) => row.email.toLowerCase()));
}

/**
 * A new e-mail channel's addresses, checked: each plausible and a member's (422 `validation_failed`
 * on `addresses`, naming the address), at least one, at most MAX_CHANNEL_ADDRESSES, duplicates
 * dropped. Returns them lower-cased, as members' addresses are stored.
 */
export async function checkChannelAddresses(db: Database, organizationId: string, given: readonly string[] | undefined): Promise<string[]> {
  const addresses = [...new Set((given ?? []).map((address) => address.trim().toLowerCase()).filter((address) => address !== ""))];
  if (addresses.length === 0) throw validationFailed([{ field: "addresses", message: "must name at least one member's e-mail address" }]);
  if (addresses.length > MAX_CHANNEL_ADDRESSES)
    throw validationFailed([{ field: "addresses", message: `must name at most ${MAX_CHANNEL_ADDRESSES} addresses` }]);
  const malformed = addresses.filter((address) => !isPlausibleEmailAddress(address));
  if (malformed.length > 0)
    throw validationFailed(
      malformed.map((address) => ({ field: "addresses", message: `${address.slice(0, 254)} is not an e-mail address` })),
    );
  const known = await memberAddresses(db, organizationId, addresses);
  const strangers: ErrorDetail[] = addresses
    .filter((address) => !known.has(address))
    .map((address) => ({
      field: "addresses",
      message: `${address} is not a member of this organization: an e-mail channel sends to members only`,
    }));
  if (strangers.length > 0) throw validationFailed(strangers);
  return addresses;
}

/**
 * One attempt of a delivery to an e-mail channel: an e-mail per address that is still a member's,
 * written to the outbox in the transaction that marks the delivery delivered (a second queue
 * message for the same delivery finds it no longer pending and writes nothing), then queued.
 * An alert's e-mails carry the alert, so a snooze before they go out suppresses them and their
 * acceptance by the SMTP server sets its last_notified_at, as for the alert e-mails to every member.
 * With no member left among the addresses, the delivery fails at once: retrying cannot help.
 */
export async function deliverByEmail(
  deps: NotificationDeps,
  delivery: DeliveryRow,
  endpoint: EndpointRow,
  message: ChannelMessage,
): Promise<"delivered" | "failed" | "gone"> {
  const addresses = endpoint.emailAddresses ?? [];
  const current = await memberAddresses(deps.db, endpoint.organizationId, addresses);
  const recipients = addresses.filter((address) => current.has(address));
  const now = deps.clock.now();
  const left = addresses.length - recipients.length;
  if (recipients.length === 0) {
    await deps.db
      .update(notificationDeliveries)
      .set({
        status: "failed",
        attempts: sql`${notificationDeliveries.attempts} + 1`,
        lastAttemptAt: now,
        lastError: "not sent: none of the channel's addresses belongs to a member of the organization any more",
      })
      .where(and(eq(notificationDeliveries.id, delivery.id), eq(notificationDeliveries.status, "pending")));
    return "failed";
  }
  const bodies = channelEmail(message);
  const emailIds = await transactionWithRetry(deps.db, async (tx) => {
    const [claimed] = await tx
      .update(notificationDeliveries)
      .set({
        status: "delivered",
        attempts: sql`${notificationDeliveries.attempts} + 1`,
        lastStatusCode: null,
        // Not an error: what the log should say about the addresses left out.
        lastError: left > 0 ? `sent to ${recipients.length} of ${addresses.length} addresses: ${left} no longer a member's` : null,
        lastAttemptAt: now,
        deliveredAt: now,
      })
      .where(and(eq(notificationDeliveries.id, delivery.id), eq(notificationDeliveries.status, "pending")))
      .returning({ id: notificationDeliveries.id });
    if (!claimed) return null;
    const ids: string[] = [];
    for (const to of recipients) {
      const email = { organizationId: endpoint.organizationId, kind: "notification" as const, to, ...bodies };
      ids.push(
        await writeEmail({ db: tx, clock: deps.clock, secrets: deps.secrets }, { ...email, alertId: delivery.alertId ?? undefined }),
      );
    }
    return ids;
  });
  if (emailIds === null) return "gone";
  await queueEmails(deps, emailIds);
  return "delivered";
}
