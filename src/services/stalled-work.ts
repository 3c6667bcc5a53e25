/**
 * Work whose queue message was lost: a run still pending long after it arrived (its message was
 * refused or dropped), an e-mail never attempted, or whose retry was never queued, a webhook
 * delivery likewise. Node queues what is pending again at each start (its in-process queue does
 * not outlive a process); the Worker, whose isolates have no start worth the name, runs this from
 * its cron trigger (wrangler.toml `[triggers]`).
 *
 * Queuing a message twice is harmless: a run is processed once (its row lock and status), an
 * e-mail is claimed before it is sent (email-outbox.ts), a delivery is attempted only while
 * pending. So the thresholds only have to be later than any wait the service plans itself.
 */
import { type SQL, and, asc, eq, isNotNull, isNull, lt, or } from "drizzle-orm";
import { emailOutbox, notificationDeliveries, testRuns } from "../db/schema";
import type { Database } from "../db/types";
import type { RunQueue } from "../ingest/run-queue";
import type { Clock } from "../lib/clock";
import type { Logger } from "../lib/logger";
import { queueDueCompletions } from "./runs/run-parts";

/** A run pending this long after it arrived lost its message: processing takes seconds, a queue's retries minutes. */
export const RUN_STALLED_AFTER_MS = 15 * 60_000;
/** Never attempted this long after it was written: its message was refused. */
const NEVER_ATTEMPTED_AFTER_MS = 5 * 60_000;
/** Last attempted this long ago: past the longest retry delay (2 h) with a margin, so its retry was lost. */
const RETRY_LOST_AFTER_MS = (7_200 + 900) * 1000;
/** Messages per kind and sweep: a backlog is taken over several sweeps. */
const SWEEP_LIMIT = 500;

/** An outbox row (an e-mail, a webhook delivery) still pending, never attempted in time or with its retry overdue. */
function messageLost(table: typeof emailOutbox | typeof notificationDeliveries, before: (ms: number) => Date): SQL | undefined {
  return and(
    eq(table.status, "pending"),
    or(
      and(isNull(table.lastAttemptAt), lt(table.createdAt, before(NEVER_ATTEMPTED_AFTER_MS))),
      and(isNotNull(table.lastAttemptAt), lt(table.lastAttemptAt, before(RETRY_LOST_AFTER_MS))),
    ),
  );
}

export type StalledWorkDeps = { db: Database; clock: Clock; queue: RunQueue; logger: Logger };

export async function requeueStalledWork(deps: StalledWorkDeps): Promise<{ runs: number; emails: number; deliveries: number }> {
  const now = deps.clock.now().getTime();
  const before = (ms: number) => new Date(now - ms);
  // One after the other: on the Worker, one connection.
  const runs = await deps.db
    .select({ id: testRuns.id })
    .from(testRuns)
    .where(and(eq(testRuns.status, "pending"), isNull(testRuns.runKey), lt(testRuns.createdAt, before(RUN_STALLED_AFTER_MS))))
    .orderBy(asc(testRuns.createdAt))
    .limit(SWEEP_LIMIT);
  const emails = await deps.db
    .select({ id: emailOutbox.id })
    .from(emailOutbox)
    .where(messageLost(emailOutbox, before))
    .orderBy(asc(emailOutbox.createdAt))
    .limit(SWEEP_LIMIT);
  const deliveries = await deps.db
    .select({ id: notificationDeliveries.id })
    .from(notificationDeliveries)
    .where(messageLost(notificationDeliveries, before))
    .orderBy(asc(notificationDeliveries.id))
    .limit(SWEEP_LIMIT);
  for (const { id } of runs) await deps.queue.send({ testRunId: id });
  const completions = await queueDueCompletions(deps, { stalledAfterMs: RUN_STALLED_AFTER_MS, limit: SWEEP_LIMIT });
  for (const { id } of emails) await deps.queue.send({ emailId: id });
  for (const { id } of deliveries) await deps.queue.send({ deliveryId: id });
  const counts = { runs: runs.length + completions, emails: emails.length, deliveries: deliveries.length };
  if (counts.runs + counts.emails + counts.deliveries > 0) deps.logger.info("queued stalled work again", counts);
  return counts;
}
