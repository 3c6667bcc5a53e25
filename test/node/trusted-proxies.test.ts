/**
 * The client address through the real Node server (`src/node/server.ts`, spawned): the
 * connection's peer, unless it is one of TRUSTED_PROXIES, whose X-Forwarded-For then names the
 * client. Seen through the sign-in throttle per address: six failures are free, then the address
 * waits, so twelve wrong passwords sent at once from one client are partly refused (429), and
 * from twelve clients all answered (401).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServerProcess } from "../support/server-process";

let untrusted: ServerProcess;
let trusted: ServerProcess;
beforeAll(async () => {
  const env = { DATABASE_URL: "memory://", HOST: "127.0.0.1" };
  [untrusted, trusted] = await Promise.all([
    startServerProcess({ ...env, TRUSTED_PROXIES: "10.0.0.0/8, 2001:db8::/32" }, { startTimeoutMs: 90_000 }),
    startServerProcess({ ...env, TRUSTED_PROXIES: "127.0.0.1, 10.0.0.0/8" }, { startTimeoutMs: 90_000 }),
  ]);
}, 200_000);
afterAll(async () => {
  await Promise.all([untrusted?.stop(), trusted?.stop()]);
});

let counter = 0;
/** Twelve wrong passwords at once, each for its own e-mail, with the X-Forwarded-For `forwardedFor(i)` gives; their statuses. */
async function twelveWrongPasswords(server: ServerProcess, forwardedFor: (i: number) => string) {
  // The pages' origin is WEB_APP_URL's (by default http://localhost:PORT); the connection is to 127.0.0.1.
  const origin = server.base.replace("127.0.0.1", "localhost");
  const url = `${server.base.replace("localhost", "127.0.0.1")}/sign-in`;
  const answers = await Promise.all(
    Array.from({ length: 12 }, async (_, i) => {
      const response = await fetch(url, {
        method: "POST",
        redirect: "manual",
        headers: { origin, "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": forwardedFor(i) },
        body: new URLSearchParams({ email: `nobody-${++counter}@example.com`, password: "wrong password" }).toString(),
      });
      await response.text();
      return response.status;
    }),
  );
  return { answered: answers.filter((status) => status === 401).length, refused: answers.filter((status) => status === 429).length };
}

describe("the client address on Node", () => {
  it("a connection that is not a trusted proxy is the client: the X-Forwarded-For it sends is ignored", async () => {
    const { answered, refused } = await twelveWrongPasswords(untrusted, (i) => `203.0.113.${i + 1}`);
    // One client (127.0.0.1), however many addresses it claims: six answered, the rest refused (at
    // least four of them even on a machine so loaded that the first one-second wait passes meanwhile).
    expect(answered + refused).toBe(12);
    expect(refused).toBeGreaterThanOrEqual(4);
  });

  it("from a trusted proxy, each client X-Forwarded-For names is its own", async () => {
    const { answered } = await twelveWrongPasswords(trusted, (i) => `198.51.100.${i + 1}`);
    expect(answered).toBe(12);
  });

  it("from a trusted proxy, the right-most untrusted entry is the client: what a client wrote to its left changes nothing", async () => {
    const { answered, refused } = await twelveWrongPasswords(trusted, (i) => `192.0.2.${i + 1}, 198.51.100.200, 10.1.2.3`);
    expect(answered + refused).toBe(12);
    expect(refused).toBeGreaterThanOrEqual(4);
  });
});
