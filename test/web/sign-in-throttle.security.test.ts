/**
 * The sign-in page's throttle per client address (Node, in process; the address is the request's
 * RequestDeps.clientAddress, as the runtime's entry finds it): the exponential delay, parallel
 * attempts from one address, other addresses unaffected, and a stranger who cannot keep an
 * account locked. The per-e-mail rule alone is in sign-up.security.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness } from "../support/harness";
import { WebClient, uniqueEmail } from "../support/web-client";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const MIN = 60_000;
/** An address no other test uses: 198.18.0.0/15 (benchmarking) with random low bits. */
const newAddress = () => {
  const [a, b] = crypto.getRandomValues(new Uint8Array(2));
  return `198.${18 + (a! & 1)}.${b}.${(a! >> 1) + 1}`;
};
const from = (address: string | null) => new WebClient(h.fromAddress(address));
const retryAfter = (answer: { headers: Headers }) => Number(answer.headers.get("retry-after"));

describe("sign-in throttle per client address", () => {
  it("five failures are free, then the address waits 1 s, 2 s, 4 s… (429, Retry-After), the right password included; the account is not locked", async () => {
    const email = uniqueEmail("delayed");
    await from(newAddress()).signUp({ email, organization: "Delayed Org" });
    const address = newAddress();
    // Spraying: a different e-mail each time counts all the same.
    for (let i = 0; i < 6; i++) expect((await from(address).signIn(uniqueEmail("spray"), "wrong password")).status).toBe(401);
    for (const seconds of [1, 2, 4, 8]) {
      const refused = await from(address).signIn(email);
      expect(refused.status).toBe(429);
      expect(refused.text).toContain("Too many failed sign-in attempts from your network");
      expect(refused.text).toContain(`Try again in ${seconds} second${seconds === 1 ? "" : "s"}`);
      expect(retryAfter(refused)).toBe(seconds);
      expect(refused.setCookies).toEqual([]);
      h.clock.advance(seconds * 1000);
      expect((await from(address).signIn(uniqueEmail("spray"), "wrong password")).status).toBe(401);
    }
    expect(retryAfter(await from(address).signIn(email))).toBe(16);
    // Another address signs in to the same account: the address's wait locked nothing.
    expect((await from(newAddress()).signIn(email)).status).toBe(303);
    h.clock.advance(16_000);
    expect((await from(address).signIn(email)).status).toBe(303);
  });

  it("40 wrong passwords in parallel from one address get 6 guesses; another address is unaffected", async () => {
    const address = newAddress();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => from(address).signIn(uniqueEmail(`parallel-${i}`), "wrong password")),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(6);
    expect(statuses.filter((status) => status === 429)).toHaveLength(34);
    expect(answers.find((answer) => answer.status === 429)!.text).toContain("from your network");
    expect((await from(newAddress()).signIn(uniqueEmail("other"), "wrong password")).status).toBe(401);
  });

  it("a stranger at one address locks an account for one lock period, then cannot lock it again", async () => {
    const email = uniqueEmail("victim");
    await from(newAddress()).signUp({ email, organization: "Victim Org" });
    const stranger = newAddress();
    const accountLocks: number[] = [];
    const start = h.clock.now().getTime();
    // The stranger tries as soon as every refusal allows, for an hour and a half.
    while (h.clock.now().getTime() - start < 90 * MIN) {
      const answer = await from(stranger).signIn(email, "wrong password");
      if (answer.status === 429 && answer.text.includes("for this e-mail")) accountLocks.push(h.clock.now().getTime() - start);
      if (answer.status === 429) h.clock.advance(retryAfter(answer) * 1000);
    }
    // Locked at 15 s (six free failures, then 1 + 2 + 4 + 8 s), for 15 minutes, never again.
    expect(accountLocks).toEqual([15_000]);
    expect((await from(newAddress()).signIn(email)).status).toBe(303);
  });

  it("the owner gets past a lock strangers keep up from an address they signed in from; a new address waits for the lock", async () => {
    const email = uniqueEmail("owner");
    const home = newAddress();
    await from(home).signUp({ email, organization: "Owner Org" });
    expect((await from(home).signIn(email)).status).toBe(303);
    for (let i = 0; i < 10; i++) await from(newAddress()).signIn(email, "wrong password");
    const elsewhere = await from(newAddress()).signIn(email);
    expect(elsewhere.status).toBe(429);
    expect(elsewhere.text).toContain("Too many failed sign-in attempts for this e-mail");
    expect(retryAfter(elsewhere)).toBe(15 * 60);
    expect((await from(home).signIn(email)).status).toBe(303);
  });

  it("requests whose address is unknown share one bucket", async () => {
    // Other files of this worker may have left failures in it: a fresh hour.
    h.clock.advance(61 * MIN);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await from(null).signIn(uniqueEmail("unknown"), "wrong password")).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429]);
  });
});
