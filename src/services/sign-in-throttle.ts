/**
 * Sign-in throttle per e-mail (docs/web-app.md): after SIGN_IN_MAX_FAILURES failed attempts for
 * one e-mail within SIGN_IN_WINDOW_MS, every attempt for it, the right password included, is
 * refused for SIGN_IN_LOCK_MS. The state is one row per e-mail in Postgres (`sign_in_throttles`),
 * so it holds across processes, isolates and both runtimes; time comes from `deps.clock`.
 *
 * The rule is exact, not a fixed window: a row keeps the times of the latest failures (at most
 * ten), and the lock starts when the tenth of them is within the window of the first. Attempts
 * refused during a lock are not failures: they neither count nor extend it. A successful sign-in
 * forgets the e-mail's failures.
 */
import { eq, lte } from "drizzle-orm";
import { signInThrottles } from "../db/schema";
import { transactionWithRetry } from "../db/transaction-retry";
import type { ServiceDeps } from "./context";

export const SIGN_IN_MAX_FAILURES = 10;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;
export const SIGN_IN_LOCK_MS = 15 * 60_000;

type Deps = Pick<ServiceDeps, "db" | "clock">;

/** The key of an e-mail: trimmed and lower-cased, as better-auth stores it. */
export const throttleKey = (email: string) => email.trim().toLowerCase();

/** When the e-mail's lock ends, or null if attempts for it are allowed now. */
export async function signInLockedUntil(deps: Deps, email: string): Promise<Date | null> {
  const [row] = await deps.db
    .select({ lockedUntil: signInThrottles.lockedUntil })
    .from(signInThrottles)
    .where(eq(signInThrottles.email, throttleKey(email)))
    .limit(1);
  const now = deps.clock.now();
  return row?.lockedUntil && row.lockedUntil.getTime() > now.getTime() ? row.lockedUntil : null;
}

/**
 * Records a failed attempt; returns when the lock ends if this failure started one, else null.
 * The row is locked while it changes, so concurrent failures all count.
 */
export async function recordSignInFailure(deps: Deps, email: string): Promise<Date | null> {
  const key = throttleKey(email);
  const now = deps.clock.now();
  const nowMs = now.getTime();
  return transactionWithRetry(deps.db, async (tx) => {
    // Rows whose failures and lock are all over tell nothing any more (this keeps the table small).
    await tx.delete(signInThrottles).where(lte(signInThrottles.expiresAt, now));
    await tx.insert(signInThrottles).values({ email: key, failures: [], expiresAt: now }).onConflictDoNothing();
    const [row] = await tx.select().from(signInThrottles).where(eq(signInThrottles.email, key)).for("update");
    const failures = [...(row?.failures ?? []).filter((at) => at > nowMs - SIGN_IN_WINDOW_MS), nowMs].slice(-SIGN_IN_MAX_FAILURES);
    const locks = failures.length >= SIGN_IN_MAX_FAILURES;
    const lockedUntil = locks ? new Date(nowMs + SIGN_IN_LOCK_MS) : (row?.lockedUntil ?? null);
    const expiresAt = new Date(Math.max(nowMs + SIGN_IN_WINDOW_MS, lockedUntil?.getTime() ?? 0));
    await tx
      .update(signInThrottles)
      .set({ failures: locks ? [] : failures, lockedUntil, expiresAt })
      .where(eq(signInThrottles.email, key));
    return locks ? lockedUntil : null;
  });
}

/** A successful sign-in: the e-mail's failures are forgotten. */
export async function clearSignInFailures(deps: Deps, email: string): Promise<void> {
  await deps.db.delete(signInThrottles).where(eq(signInThrottles.email, throttleKey(email)));
}
