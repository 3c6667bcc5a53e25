/** The sign-in throttle's rule, exactly (src/services/sign-in-throttle.ts), on the harness's clock. */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signInThrottles } from "../../../src/db/schema";
import { clearSignInFailures, reserveSignInAttempt, signInLockedUntil } from "../../../src/services/tenancy/sign-in-throttle";

/** A failed attempt: its reservation (counted at once), then a wrong password; the lock's end if it started one. */
const recordSignInFailure = async (deps: Parameters<typeof reserveSignInAttempt>[0], email: string) =>
  (await reserveSignInAttempt(deps, email)).lockStartedUntil;
import { createHarness } from "../../support/harness";
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
