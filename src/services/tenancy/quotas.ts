/**
 * The rate quotas of an organization, counted in the database so that they hold across Node
 * processes and Worker isolates (docs/quotas.md; the caps in src/lib/quotas.ts):
 * - uploads per hour: a window row per organization, taken one upload at a time by the statement
 *   that finds the upload token's project (findProjectCountingUpload, src/services/runs/uploads.ts; as
 *   src/services/notifications/delivery-rate.ts does per minute for webhooks), so two uploads never both take
 *   the last slot;
 * - concurrent exports: a lease row per running export, taken under the organization's row lock
 *   (two exports cannot both take the last place), renewed while the export streams and deleted
 *   when it ends. A lease whose export died without ending expires, and stops counting, after
 *   EXPORT_LEASE_MS.
 * The count quotas are checked where what they count is added: projects where projects are created
 * (src/services/tenancy/projects.ts), stored cases where an upload arrives, by the statement that
 * finds the upload token's project (findProjectCountingUpload, src/services/runs/uploads.ts), from the
 * counters run processing and the deletion of cases keep on the projects' rows (storedCasesExceeded).
 */
import { and, count, eq, gt, lte, sql } from "drizzle-orm";
import { exportLeases, organizations } from "../../db/schema";
import type { Database } from "../../db/types";
import { transactionWithRetry } from "../../db/transaction-retry";
import type { Clock } from "../../lib/clock";
import { ApiError, rateLimited } from "../../lib/errors";
import { secondsUntil } from "../../lib/rate-limit";

export const UPLOAD_WINDOW_MS = 60 * 60_000;

/** How long a lease holds without being renewed: an export renews it with every batch it reads. */
export const EXPORT_LEASE_MS = 5 * 60_000;

/** An export usually ends well before its lease would expire: a refused one is told to retry within this. */
const MAX_EXPORT_RETRY_AFTER_SECONDS = 30;

type Deps = { db: Database; clock: Clock };

/** The 429 of a full hourly upload window that started at `startedAt`: retry when it ends. */
export function uploadsPerHourExceeded(perHour: number, startedAt: Date, now: Date): ApiError {
  const retryAfterSeconds = secondsUntil(startedAt.getTime() + UPLOAD_WINDOW_MS, now.getTime());
  return rateLimited(
    `This organization has sent its ${perHour} uploads of this hour (QUOTA_UPLOADS_PER_HOUR); retry after ${retryAfterSeconds} seconds, when the window ends.`,
    retryAfterSeconds,
  );
}

/**
 * The 429 `quota_exceeded` of an organization that stores `stored` test cases with a quota of
 * `quota`: no Retry-After, since waiting frees nothing (the service deletes no cases by itself).
 */
export function storedCasesExceeded(quota: number, stored: number): ApiError {
  const figure = (n: number) => n.toLocaleString("en-US");
  return new ApiError(
    "quota_exceeded",
    `This organization stores ${figure(stored)} test cases, at or over its quota of ${figure(quota)} stored cases (QUOTA_STORED_CASES): no upload is accepted until it stores fewer. Waiting frees nothing: ask the operator to raise QUOTA_STORED_CASES or to delete old runs or projects.`,
  );
}

/** A running export's place: renew it while streaming, release it at the end. */
export type ExportLease = { renew(): Promise<void>; release(): Promise<void> };

const NO_LEASE: ExportLease = { renew: async () => {}, release: async () => {} };

/**
 * Takes one of the organization's export places, or throws 429 `rate_limited` with `Retry-After`
 * (the seconds until the soonest lease would expire if its export died; an export that ends frees
 * its place sooner). Expired leases are deleted on the way. `concurrent` null: no cap.
 */
export async function takeExportLease(deps: Deps, organizationId: string, concurrent: number | null): Promise<ExportLease> {
  if (concurrent === null) return NO_LEASE;
  const id = crypto.randomUUID();
  const taken = await transactionWithRetry(deps.db, async (tx) => {
    const now = deps.clock.now();
    const [organization] = await tx
      .select({ id: organizations.id })
      .from(organizations)
      .where(eq(organizations.id, organizationId))
      .for("no key update");
    if (!organization) return { granted: false as const, retryAfterSeconds: 1 };
    await tx.delete(exportLeases).where(and(eq(exportLeases.organizationId, organizationId), lte(exportLeases.expiresAt, now)));
    const [held] = await tx
      .select({ leases: count(), soonest: sql<string | null>`min(${exportLeases.expiresAt})` })
      .from(exportLeases)
      .where(and(eq(exportLeases.organizationId, organizationId), gt(exportLeases.expiresAt, now)));
    if (held!.leases >= concurrent) {
      const soonest = held!.soonest ? new Date(held!.soonest).getTime() : now.getTime();
      return { granted: false as const, retryAfterSeconds: Math.min(MAX_EXPORT_RETRY_AFTER_SECONDS, secondsUntil(soonest, now.getTime())) };
    }
    await tx.insert(exportLeases).values({ id, organizationId, expiresAt: new Date(now.getTime() + EXPORT_LEASE_MS) });
    return { granted: true as const };
  });
  if (!taken.granted) {
    throw rateLimited(
      `This organization already runs ${concurrent} exports at once, the most it may (QUOTA_CONCURRENT_EXPORTS); retry when one has ended.`,
      taken.retryAfterSeconds,
    );
  }
  return {
    renew: async () => {
      await deps.db
        .update(exportLeases)
        .set({ expiresAt: new Date(deps.clock.now().getTime() + EXPORT_LEASE_MS) })
        .where(eq(exportLeases.id, id));
    },
    release: async () => {
      await deps.db.delete(exportLeases).where(eq(exportLeases.id, id));
    },
  };
}
