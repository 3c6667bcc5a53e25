/**
 * How many webhook deliveries an organization may send per minute (WEBHOOK_DELIVERIES_PER_MINUTE,
 * docs/outbound-policy.md). One API call can fan out into a delivery per endpoint and test, each
 * retried: the cap keeps one organization from turning the service into a flood, and those over
 * it wait in the queue for the next window rather than being dropped.
 *
 * The count lives in the database (webhook_delivery_windows) because deliveries run in many
 * isolates on Workers and several processes may share a database on Node. Taking a slot is one
 * statement on the organization's row, so two deliveries never both take the last one.
 */
import { eq, sql } from "drizzle-orm";
import { webhookDeliveryWindows } from "../../db/schema";
import type { Database } from "../../db/types";
import type { Clock } from "../../lib/clock";
import { secondsUntil } from "../../lib/rate-limit";

const DELIVERY_WINDOW_MS = 60_000;

export type DeliverySlot = { granted: true } | { granted: false; retryAfterSeconds: number };

/**
 * Takes one of the organization's delivery slots of the current window (a window starts with the
 * first delivery after the previous one ended), or says how long until the window ends.
 */
export async function takeDeliverySlot(
  deps: { db: Database; clock: Clock },
  organizationId: string,
  perMinute: number,
): Promise<DeliverySlot> {
  const now = deps.clock.now();
  const windowEnded = new Date(now.getTime() - DELIVERY_WINDOW_MS);
  const w = webhookDeliveryWindows;
  const expired = sql`${w.windowStartedAt} <= ${windowEnded.toISOString()}::timestamptz`;
  const granted = await deps.db
    .insert(w)
    .values({ organizationId, windowStartedAt: now, deliveries: 1 })
    .onConflictDoUpdate({
      target: w.organizationId,
      set: {
        windowStartedAt: sql`case when ${expired} then ${now.toISOString()}::timestamptz else ${w.windowStartedAt} end`,
        deliveries: sql`case when ${expired} then 1 else ${w.deliveries} + 1 end`,
      },
      setWhere: sql`${expired} or ${w.deliveries} < ${perMinute}`,
    })
    .returning({ organizationId: w.organizationId });
  if (granted.length > 0) return { granted: true };
  const [row] = await deps.db.select({ startedAt: w.windowStartedAt }).from(w).where(eq(w.organizationId, organizationId)).limit(1);
  return {
    granted: false,
    retryAfterSeconds: secondsUntil((row?.startedAt ?? now).getTime() + (row ? DELIVERY_WINDOW_MS : 0), now.getTime()),
  };
}
