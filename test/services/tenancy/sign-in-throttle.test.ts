/** The sign-in throttle's rules, exactly (src/services/tenancy/sign-in-throttle.ts), on the harness's clock. */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signInAddressThrottles, signInThrottles } from "../../../src/db/schema";
import {
  clearSignInFailures,
  liftSignInLock,
  reserveSignInAttempt,
  signInLockedUntil,
  signInSucceeded,
} from "../../../src/services/tenancy/sign-in-throttle";

/**
 * A failed attempt: its reservation (counted at once), then a wrong password; the lock's end if it
 * started one. From a new client address each time unless told: the per-e-mail rule alone.
 */
const recordSignInFailure = async (deps: Parameters<typeof reserveSignInAttempt>[0], email: string, address = uniqueClientAddress()) =>
  (await reserveSignInAttempt(deps, email, address)).lockStartedUntil;
import { createHarness, uniqueClientAddress } from "../../support/harness";
import { uniqueEmail } from "../../support/web-client";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const MIN = 60_000;
const deps = () => ({ db: h.db, clock: h.clock });

async function fail(email: string, times: number, stepMs = 0) {
  let locked: Date | null = null;
  for (let i = 0; i < times; i++) {
    locked = (await recordSignInFailure(deps(), email)) ?? locked;
    h.clock.advance(stepMs);
  }
  return locked;
}

describe("sign-in throttle", () => {
  it("ten failures within a window lock even across what a fixed window would split (1 at 0, 5 at 14 min, 4 at 16 min)", async () => {
    const email = uniqueEmail("sliding");
    await fail(email, 1);
    h.clock.advance(14 * MIN);
    await fail(email, 5);
    h.clock.advance(2 * MIN);
    expect(await fail(email, 4)).toBeNull();
    // 9 within the last 15 minutes (the first has left the window): not yet.
    expect(await signInLockedUntil(deps(), email)).toBeNull();
    const locked = await fail(email, 1);
    expect(locked!.getTime()).toBe(h.clock.now().getTime() + 15 * MIN);
    expect(await signInLockedUntil(deps(), email)).toEqual(locked);
    h.clock.advance(15 * MIN - 1);
    expect(await signInLockedUntil(deps(), email)).toEqual(locked);
    h.clock.advance(1);
    expect(await signInLockedUntil(deps(), email)).toBeNull();
  });

  it("after a lock the count starts afresh; a success forgets the failures", async () => {
    const email = uniqueEmail("afresh");
    await fail(email, 10);
    h.clock.advance(15 * MIN);
    expect(await fail(email, 9)).toBeNull();
    await clearSignInFailures(deps(), email);
    expect(await fail(email, 9)).toBeNull();
    expect(await signInLockedUntil(deps(), email)).toBeNull();
  });

  it("e-mails are compared trimmed and lower-cased", async () => {
    const email = uniqueEmail("case");
    await fail(email.toUpperCase(), 5);
    await fail(` ${email} `, 5);
    expect(await signInLockedUntil(deps(), email)).not.toBeNull();
  });

  it("concurrent failures all count", async () => {
    const email = uniqueEmail("concurrent");
    await Promise.all(Array.from({ length: 10 }, () => recordSignInFailure(deps(), email)));
    expect(await signInLockedUntil(deps(), email)).not.toBeNull();
  });

  it("rows that tell nothing any more are deleted as failures come in", async () => {
    const stale = uniqueEmail("stale");
    await fail(stale, 1);
    h.clock.advance(16 * MIN);
    await fail(uniqueEmail("fresh"), 1);
    expect(await h.db.select().from(signInThrottles).where(eq(signInThrottles.email, stale))).toEqual([]);
  });
});

/** A client address of its own for a test: 198.18.0.0/15 (benchmarking) with random low bits. */
const uniqueIpv4 = () => {
  const [a, b] = crypto.getRandomValues(new Uint8Array(2));
  return `198.${18 + (a! & 1)}.${b}.${(a! >> 1) + 1}`;
};

describe("sign-in throttle per client address", () => {
  const SECOND = 1000;
  const attempt = (address: string | null, email = uniqueEmail("spray")) => reserveSignInAttempt(deps(), email, address);

  it("five failures are free; then the address waits 1 s, 2 s, 4 s… whatever the e-mail, up to 15 minutes", async () => {
    const address = uniqueIpv4();
    for (let i = 0; i < 6; i++) expect((await attempt(address)).refusedUntil).toBeNull();
    const waits: number[] = [];
    // Twelve waits: 47 minutes, before the first failures leave the hour's record.
    for (let i = 0; i < 12; i++) {
      const refused = await attempt(address);
      expect(refused.refusedFor).toBe("address");
      const wait = refused.refusedUntil!.getTime() - h.clock.now().getTime();
      waits.push(wait);
      // Refused attempts count nothing: the wait does not move.
      h.clock.advance(wait - 1);
      expect((await attempt(address)).refusedUntil).toEqual(refused.refusedUntil);
      h.clock.advance(1);
      expect((await attempt(address)).refusedUntil).toBeNull();
    }
    expect(waits.map((ms) => ms / SECOND)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900]);
  });

  it("the failures leave the record an hour after they were made", async () => {
    const address = uniqueIpv4();
    for (let i = 0; i < 6; i++) await attempt(address);
    h.clock.advance(2 * SECOND);
    // Seven failures, all within the hour: two seconds.
    await attempt(address);
    expect((await attempt(address)).refusedUntil!.getTime() - h.clock.now().getTime()).toBe(2 * SECOND);
    h.clock.advance(60 * MIN - 2 * SECOND);
    // The six of the first second are older than an hour now: one failure left, free.
    expect((await attempt(address)).refusedUntil).toBeNull();
    expect((await attempt(address)).refusedUntil).toBeNull();
  });

  it("parallel attempts from one address get the free failures and no more", async () => {
    const address = uniqueIpv4();
    const reservations = await Promise.all(Array.from({ length: 30 }, () => attempt(address)));
    expect(reservations.filter((r) => r.refusedUntil === null)).toHaveLength(6);
    expect(reservations.filter((r) => r.refusedFor === "address")).toHaveLength(24);
  });

  it("another address is not held back; IPv6 counts by /64", async () => {
    const address = uniqueIpv4();
    for (let i = 0; i < 6; i++) await attempt(address);
    expect((await attempt(address)).refusedFor).toBe("address");
    expect((await attempt(uniqueIpv4())).refusedUntil).toBeNull();

    const [a, b] = crypto.getRandomValues(new Uint16Array(2));
    const prefix = `2001:db8:${a!.toString(16)}:${b!.toString(16)}`;
    for (let i = 0; i < 6; i++) expect((await attempt(`${prefix}::${i + 1}`)).refusedUntil).toBeNull();
    expect((await attempt(`${prefix}:ffff:ffff:ffff:ffff`)).refusedFor).toBe("address");
    expect((await attempt(`2001:db8:${a!.toString(16)}:${((b! + 1) & 0xffff).toString(16)}::1`)).refusedUntil).toBeNull();
  });

  it("requests whose address is unknown share one bucket", async () => {
    await h.db.delete(signInAddressThrottles).where(eq(signInAddressThrottles.address, "unknown"));
    for (let i = 0; i < 6; i++) expect((await attempt(null)).refusedUntil).toBeNull();
    expect((await attempt(null)).refusedFor).toBe("address");
    await h.db.delete(signInAddressThrottles).where(eq(signInAddressThrottles.address, "unknown"));
  });

  it("a success takes back its own count, nothing more: one's own account does not launder a sprayer's failures", async () => {
    const address = uniqueIpv4();
    const own = uniqueEmail("own");
    for (let i = 0; i < 5; i++) await attempt(address);
    // The sixth attempt succeeds: it is not a failure, and the five before it stay.
    const success = await attempt(address, own);
    expect(success.refusedUntil).toBeNull();
    await signInSucceeded(deps(), own, success);
    const [row] = await h.db.select().from(signInAddressThrottles).where(eq(signInAddressThrottles.address, address));
    expect(row!.failures).toHaveLength(5);
    expect((await attempt(address)).refusedUntil).toBeNull();
    expect((await attempt(address)).refusedFor).toBe("address");
  });

  it("the address's wait locks no e-mail: the same e-mail from another address goes ahead", async () => {
    const address = uniqueIpv4();
    const email = uniqueEmail("target");
    for (let i = 0; i < 6; i++) await attempt(address, email);
    expect((await attempt(address, email)).refusedFor).toBe("address");
    expect(await signInLockedUntil(deps(), email)).toBeNull();
    expect((await attempt(uniqueIpv4(), email)).refusedUntil).toBeNull();
  });
});

describe("a stranger and the e-mail's lock", () => {
  /** The stranger tries as soon as each refusal allows; the times (relative, ms) at which the e-mail was locked. */
  async function strangerTries(address: string, email: string, forMs: number) {
    const start = h.clock.now().getTime();
    const lockedAt: number[] = [];
    while (h.clock.now().getTime() - start < forMs) {
      const reservation = await reserveSignInAttempt(deps(), email, address);
      if (reservation.lockStartedUntil) lockedAt.push(h.clock.now().getTime() - start);
      if (reservation.refusedUntil) h.clock.set(reservation.refusedUntil);
    }
    return lockedAt;
  }

  it("from one address a stranger locks an e-mail once, then cannot lock it again within the hour", async () => {
    const email = uniqueEmail("victim");
    const lockedAt = await strangerTries(uniqueIpv4(), email, 60 * MIN);
    // Ten failures in 15 s (six free, then 1 + 2 + 4 + 8 s), a lock of 15 minutes, and no other.
    expect(lockedAt).toEqual([15_000]);
  });

  it("the owner signs in despite the lock from an address they signed in from; others wait for the lock", async () => {
    const email = uniqueEmail("owner");
    const home = uniqueIpv4();
    await signInSucceeded(deps(), email, await reserveSignInAttempt(deps(), email, home));
    // Strangers from ten addresses lock the e-mail.
    for (let i = 0; i < 10; i++) await recordSignInFailure(deps(), email);
    expect(await signInLockedUntil(deps(), email)).not.toBeNull();
    expect((await reserveSignInAttempt(deps(), email, uniqueIpv4())).refusedFor).toBe("account");
    expect((await reserveSignInAttempt(deps(), email, null)).refusedFor).toBe("account");
    const fromHome = await reserveSignInAttempt(deps(), email, home);
    expect(fromHome.refusedUntil).toBeNull();
    // Their success forgets nothing of the lock: other addresses still wait for it.
    await signInSucceeded(deps(), email, fromHome);
    expect(await signInLockedUntil(deps(), email)).not.toBeNull();
    // Thirty days later the address is no longer known.
    h.clock.advance(30 * 24 * 60 * MIN);
    for (let i = 0; i < 10; i++) await recordSignInFailure(deps(), email);
    expect((await reserveSignInAttempt(deps(), email, home)).refusedFor).toBe("account");
  });

  it("liftSignInLock (a verified password reset) lifts the lock and forgets the failures", async () => {
    const email = uniqueEmail("reset");
    await fail(email, 10);
    expect(await signInLockedUntil(deps(), email)).not.toBeNull();
    await liftSignInLock(deps(), email.toUpperCase());
    expect(await signInLockedUntil(deps(), email)).toBeNull();
    expect((await reserveSignInAttempt(deps(), email, uniqueIpv4())).refusedUntil).toBeNull();
    // Its failures are gone too: nine more do not lock it.
    expect(await fail(email, 8)).toBeNull();
  });

  it("clearSignInFailures (a success) forgets failures but leaves a lock on", async () => {
    const email = uniqueEmail("clear");
    await fail(email, 10);
    await clearSignInFailures(deps(), email);
    expect(await signInLockedUntil(deps(), email)).not.toBeNull();
  });
});
