/**
 * The sign-in throttle (docs/web-app.md#sign-in-throttle): two limits, both kept in Postgres (so
 * they hold across processes, isolates and both runtimes), both taken in one transaction before
 * the password is checked, so parallel attempts cannot exceed them. Time comes from `deps.clock`.
 *
 * **Per client address** (`sign_in_address_throttles`; the address's bucket: IPv4, IPv6 /64, or
 * one shared bucket for requests whose address is unknown; src/lib/client-address.ts): failures
 * count whatever the e-mail (password spraying). The first ADDRESS_FREE_FAILURES within
 * ADDRESS_WINDOW_MS are free; after the sixth the address waits 1 s before its next attempt,
 * after the seventh 2 s, doubling up to ADDRESS_MAX_DELAY_MS. Attempts refused while it waits
 * count nothing. The window is an hour, four times the e-mail's lock: an address that locked an
 * e-mail still has those failures on its record when the lock ends, so it cannot lock it again
 * right away (it can start about one lock an hour).
 *
 * **Per e-mail** (`sign_in_throttles`): after SIGN_IN_MAX_FAILURES failures within
 * SIGN_IN_WINDOW_MS, every attempt for the e-mail, the right password included, is refused for
 * SIGN_IN_LOCK_MS; except from an address that signed in to it with its password within
 * KNOWN_ADDRESS_MS (`sign_in_known_addresses`), so a stranger who keeps an e-mail locked from
 * many addresses does not lock its owner out where they usually sign in. A verified password
 * reset lifts the lock (liftSignInLock). The rule is exact, not a fixed window: a row keeps the
 * times of the latest failures (at most ten), and the lock starts when the tenth of them is within
 * the window of the first. Attempts refused during a lock are not failures: they neither count
 * nor extend it.
 *
 * A successful sign-in takes its own count back from the address (it neither counts nor earns:
 * with open sign-up anyone has an account to succeed with, so a success that cleared or reduced
 * an address's failures would let a sprayer launder them), forgets the e-mail's failures (not a
 * lock: time or a reset ends that) and remembers the address for the e-mail.
 */
import { and, eq, gt, isNull, lte, or } from "drizzle-orm";
import { signInAddressThrottles, signInKnownAddresses, signInThrottles } from "../../db/schema";
import { transactionWithRetry } from "../../db/transaction-retry";
import { UNKNOWN_ADDRESS_BUCKET, addressBucket } from "../../lib/client-address";
import type { ServiceDeps } from "../shared/context";

const SIGN_IN_MAX_FAILURES = 10;
const SIGN_IN_WINDOW_MS = 15 * 60_000;
const SIGN_IN_LOCK_MS = 15 * 60_000;

const ADDRESS_FREE_FAILURES = 5;
const ADDRESS_WINDOW_MS = 60 * 60_000;
const ADDRESS_FIRST_DELAY_MS = 1_000;
const ADDRESS_MAX_DELAY_MS = 15 * 60_000;
/** 2^10 s is past the cap: older failures than the latest 16 change nothing. */
const ADDRESS_KEPT_FAILURES = 16;
const KNOWN_ADDRESS_MS = 30 * 24 * 60 * 60_000;

type Deps = Pick<ServiceDeps, "db" | "clock">;

/** The key of an e-mail: trimmed and lower-cased, as better-auth stores it. */
const throttleKey = (email: string) => email.trim().toLowerCase();

/**
 * When an address whose failures within the window are `failures` may try again, or null if now:
 * free up to ADDRESS_FREE_FAILURES, then 1 s after the latest, doubling with each further failure,
 * at most ADDRESS_MAX_DELAY_MS.
 */
function addressRetryAt(failures: readonly number[]): number | null {
  const beyond = failures.length - ADDRESS_FREE_FAILURES;
  if (beyond <= 0) return null;
  const delay = Math.min(ADDRESS_FIRST_DELAY_MS * 2 ** (beyond - 1), ADDRESS_MAX_DELAY_MS);
  return Math.max(...failures) + delay;
}

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

/** What an attempt may do: refused (its address must wait, or the e-mail is locked), or go ahead, counted as a failure until it succeeds. */
export type SignInReservation = {
  /** Refused before this attempt, nothing counted: until when. */
  refusedUntil: Date | null;
  /** Why: the client address must wait, or the e-mail is locked. */
  refusedFor: "address" | "account" | null;
  /** This attempt was the last one the e-mail's window allows: if its password is wrong, say so with the lock's end. */
  lockStartedUntil: Date | null;
  /** The failure this attempt was counted as, for signInSucceeded to take back. */
  counted: { address: string; at: number } | null;
};

const refused = (refusedFor: "address" | "account", until: Date): SignInReservation => ({
  refusedUntil: until,
  refusedFor,
  lockStartedUntil: null,
  counted: null,
});

/**
 * Takes an attempt for the e-mail from the client address (RequestDeps.clientAddress) before its
 * password is checked: refused while the address must wait or the e-mail is locked (to strangers);
 * otherwise counted at once as a failure of both (a success takes it back: signInSucceeded), and
 * the attempt that reaches SIGN_IN_MAX_FAILURES starts the e-mail's lock. Counting before
 * checking, under the rows' locks, is what keeps parallel guesses to the limits: checking the
 * lock, then the password, then counting let 40 parallel guesses through 17 times.
 */
export async function reserveSignInAttempt(deps: Deps, email: string, clientAddress: string | null): Promise<SignInReservation> {
  const key = throttleKey(email);
  const bucket = addressBucket(clientAddress);
  const now = deps.clock.now();
  const nowMs = now.getTime();
  return transactionWithRetry(deps.db, async (tx) => {
    // Rows whose failures and lock are all over tell nothing any more (this keeps the tables small).
    await tx.delete(signInAddressThrottles).where(lte(signInAddressThrottles.expiresAt, now));
    await tx.delete(signInThrottles).where(lte(signInThrottles.expiresAt, now));
    // The address's row, then the e-mail's: every attempt takes the two locks in this order.
    await tx.insert(signInAddressThrottles).values({ address: bucket, failures: [], expiresAt: now }).onConflictDoNothing();
    const [addressRow] = await tx.select().from(signInAddressThrottles).where(eq(signInAddressThrottles.address, bucket)).for("update");
    const addressFailures = (addressRow?.failures ?? []).filter((at) => at > nowMs - ADDRESS_WINDOW_MS);
    const retryAt = addressRetryAt(addressFailures);
    if (retryAt !== null && retryAt > nowMs) return refused("address", new Date(retryAt));

    await tx.insert(signInThrottles).values({ email: key, failures: [], expiresAt: now }).onConflictDoNothing();
    const [row] = await tx.select().from(signInThrottles).where(eq(signInThrottles.email, key)).for("update");
    let lockStartedUntil: Date | null = null;
    if (row?.lockedUntil && row.lockedUntil.getTime() > nowMs) {
      const known =
        bucket !== UNKNOWN_ADDRESS_BUCKET &&
        (
          await tx
            .select({ address: signInKnownAddresses.address })
            .from(signInKnownAddresses)
            .where(
              and(
                eq(signInKnownAddresses.email, key),
                eq(signInKnownAddresses.address, bucket),
                gt(signInKnownAddresses.lastSignedInAt, new Date(nowMs - KNOWN_ADDRESS_MS)),
              ),
            )
            .limit(1)
        ).length > 0;
      if (!known) return refused("account", row.lockedUntil);
      // From an address the owner signs in from: it goes ahead, counted for the address only (the lock is on already).
    } else {
      const failures = [...(row?.failures ?? []).filter((at) => at > nowMs - SIGN_IN_WINDOW_MS), nowMs].slice(-SIGN_IN_MAX_FAILURES);
      const locks = failures.length >= SIGN_IN_MAX_FAILURES;
      const lockedUntil = locks ? new Date(nowMs + SIGN_IN_LOCK_MS) : (row?.lockedUntil ?? null);
      const expiresAt = new Date(Math.max(nowMs + SIGN_IN_WINDOW_MS, lockedUntil?.getTime() ?? 0));
      await tx
        .update(signInThrottles)
        .set({ failures: locks ? [] : failures, lockedUntil, expiresAt })
        .where(eq(signInThrottles.email, key));
      if (locks) lockStartedUntil = lockedUntil;
    }
    await tx
      .update(signInAddressThrottles)
      .set({ failures: [...addressFailures, nowMs].slice(-ADDRESS_KEPT_FAILURES), expiresAt: new Date(nowMs + ADDRESS_WINDOW_MS) })
      .where(eq(signInAddressThrottles.address, bucket));
    return { refusedUntil: null, refusedFor: null, lockStartedUntil, counted: { address: bucket, at: nowMs } };
  });
}

/**
 * The e-mail's failures are forgotten; a lock it is under stays (time or liftSignInLock ends it).
 * A locked row holds no failures: the lock started afresh, and nothing counts for the e-mail while it lasts.
 */
export async function clearSignInFailures(deps: Deps, email: string): Promise<void> {
  await deps.db
    .delete(signInThrottles)
    .where(
      and(
        eq(signInThrottles.email, throttleKey(email)),
        or(isNull(signInThrottles.lockedUntil), lte(signInThrottles.lockedUntil, deps.clock.now())),
      ),
    );
}

/**
 * A successful sign-in with `reservation`: the address gets its count of this attempt back
 * (nothing more), the e-mail's failures are forgotten, and the address is remembered as one the
 * e-mail's owner signs in from (for KNOWN_ADDRESS_MS; the unknown-address bucket never is).
 */
export async function signInSucceeded(deps: Deps, email: string, reservation: SignInReservation): Promise<void> {
  await clearSignInFailures(deps, email);
  const counted = reservation.counted;
  if (!counted) return;
  await transactionWithRetry(deps.db, async (tx) => {
    const [row] = await tx.select().from(signInAddressThrottles).where(eq(signInAddressThrottles.address, counted.address)).for("update");
    const index = row ? row.failures.lastIndexOf(counted.at) : -1;
    if (!row || index < 0) return;
    await tx
      .update(signInAddressThrottles)
      .set({ failures: row.failures.filter((_, i) => i !== index) })
      .where(eq(signInAddressThrottles.address, counted.address));
  });
  if (counted.address === UNKNOWN_ADDRESS_BUCKET) return;
  const now = deps.clock.now();
  await deps.db
    .insert(signInKnownAddresses)
    .values({ email: throttleKey(email), address: counted.address, lastSignedInAt: now })
    .onConflictDoUpdate({ target: [signInKnownAddresses.email, signInKnownAddresses.address], set: { lastSignedInAt: now } });
  await deps.db.delete(signInKnownAddresses).where(lte(signInKnownAddresses.lastSignedInAt, new Date(now.getTime() - KNOWN_ADDRESS_MS)));
}

/**
 * Lifts the e-mail's lock and forgets its failures: for a verified password reset (whoever
 * completes one controls the mailbox). The per-address limits stay.
 */
export async function liftSignInLock(deps: Deps, email: string): Promise<void> {
  await deps.db.delete(signInThrottles).where(eq(signInThrottles.email, throttleKey(email)));
}
