/**
 * Sign-in throttle per e-mail (docs/web-app.md): after SIGN_IN_MAX_FAILURES failed attempts for
 * one e-mail within SIGN_IN_WINDOW_MS, every attempt for it, the right password included, is
 * refused for SIGN_IN_LOCK_MS. An attempt is counted before its password is checked
 * (reserveSignInAttempt), so parallel attempts cannot exceed the limit. The state is one row per e-mail in Postgres (`sign_in_throttles`),
 * so it holds across processes, isolates and both runtimes; time comes from `deps.clock`.
 *
 * The rule is exact, not a fixed window: a row keeps the times of the latest failures (at most
 * ten), and the lock starts when the tenth of them is within the window of the first. Attempts
 * refused during a lock are not failures: they neither count nor extend it. A successful sign-in
 * forgets the e-mail's failures.
 */
import { eq, lte } from "drizzle-orm";
import { signInThrottles } from "../../db/schema";
import { transactionWithRetry } from "../../db/transaction-retry";
import type { ServiceDeps } from "../shared/context";

const SIGN_IN_MAX_FAILURES = 10;
const SIGN_IN_WINDOW_MS = 15 * 60_000;
const SIGN_IN_LOCK_MS = 15 * 60_000;

type Deps = Pick<ServiceDeps, "db" | "clock">;

/** The key of an e-mail: trimmed and lower-cased, as better-auth stores it. */
const throttleKey = (email: string) => email.trim().toLowerCase();

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

/** What an attempt may do: refused (the e-mail is locked), or go ahead, counted as a failure until it succeeds. */
export type SignInReservation = {
  /** Locked before this attempt: refused, nothing counted. */
  refusedUntil: Date | null;
  /** This attempt was the last one the window allows: if its password is wrong, say so with the lock's end. */
  lockStartedUntil: Date | null;
};

/**
 * Takes an attempt for the e-mail before its password is checked: refused while the e-mail is
 * locked; otherwise counted at once as a failure (a success forgets it: clearSignInFailures), and
 * the attempt that reaches SIGN_IN_MAX_FAILURES starts the lock. Counting before checking, under
 * the row's lock, is what keeps parallel guesses to the limit: checking the lock, then the
 * password, then counting let 40 parallel guesses through 17 times.
 */
export async function reserveSignInAttempt(deps: Deps, email: string): Promise<SignInReservation> {
  const key = throttleKey(email);
  const now = deps.clock.now();
  const nowMs = now.getTime();
  return transactionWithRetry(deps.db, async (tx) => {
    // Rows whose failures and lock are all over tell nothing any more (this keeps the table small).
    await tx.delete(signInThrottles).where(lte(signInThrottles.expiresAt, now));
    await tx.insert(signInThrottles).values({ email: key, failures: [], expiresAt: now }).onConflictDoNothing();
    const [row] = await tx.select().from(signInThrottles).where(eq(signInThrottles.email, key)).for("update");
    if (row?.lockedUntil && row.lockedUntil.getTime() > nowMs) return { refusedUntil: row.lockedUntil, lockStartedUntil: null };
    const failures = [...(row?.failures ?? []).filter((at) => at > nowMs - SIGN_IN_WINDOW_MS), nowMs].slice(-SIGN_IN_MAX_FAILURES);
    const locks = failures.length >= SIGN_IN_MAX_FAILURES;
    const lockedUntil = locks ? new Date(nowMs + SIGN_IN_LOCK_MS) : (row?.lockedUntil ?? null);
    const expiresAt = new Date(Math.max(nowMs + SIGN_IN_WINDOW_MS, lockedUntil?.getTime() ?? 0));
    await tx
      .update(signInThrottles)
      .set({ failures: locks ? [] : failures, lockedUntil, expiresAt })
      .where(eq(signInThrottles.email, key));
    return { refusedUntil: null, lockStartedUntil: locks ? lockedUntil : null };
  });
}

/** A successful sign-in: the e-mail's failures are forgotten. */
export async function clearSignInFailures(deps: Deps, email: string): Promise<void> {
  await deps.db.delete(signInThrottles).where(eq(signInThrottles.email, throttleKey(email)));
}
