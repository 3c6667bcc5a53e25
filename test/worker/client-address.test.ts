/**
 * The client address on the Worker: `CF-Connecting-IP` (set by Cloudflare's edge; here the test
 * plays the edge), never X-Forwarded-For, through SELF.fetch to the deployed entry; the sign-in
 * throttle per address counts by it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness } from "./support/harness";
import { WEB_ORIGIN, WebClient, uniqueEmail } from "../support/web-client";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const newAddress = () => {
  const [a, b] = crypto.getRandomValues(new Uint8Array(2));
  return `198.${18 + (a! & 1)}.${b}.${(a! >> 1) + 1}`;
};
const wrongPassword = (headers: Record<string, string>) =>
  new WebClient(h.app).post("/sign-in", { email: uniqueEmail("edge"), password: "wrong password" }, { origin: WEB_ORIGIN, ...headers });

describe("the client address on the Worker", () => {
  it("CF-Connecting-IP is the address: its sixth failure is the last without a wait, whatever X-Forwarded-For says", async () => {
    const address = newAddress();
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await wrongPassword({ "cf-connecting-ip": address, "x-forwarded-for": newAddress() })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429]);
    const refused = await wrongPassword({ "cf-connecting-ip": address });
    expect(refused.text).toContain("Too many failed sign-in attempts from your network");
    expect(refused.headers.get("retry-after")).toBe("1");
    // The same address in its IPv4-mapped IPv6 spelling is the same client; another is not held back.
    expect((await wrongPassword({ "cf-connecting-ip": `::ffff:${address}` })).status).toBe(429);
    expect((await wrongPassword({ "cf-connecting-ip": newAddress() })).status).toBe(401);
    h.clock.advance(1000);
    expect((await wrongPassword({ "cf-connecting-ip": address })).status).toBe(401);
  });

  it("without CF-Connecting-IP the address is unknown: all such requests share one bucket", async () => {
    h.clock.advance(61 * 60_000);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const answer = await new WebClient(h.fromAddress(null)).signIn(uniqueEmail("no-header"), "wrong password");
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429]);
  });
});
