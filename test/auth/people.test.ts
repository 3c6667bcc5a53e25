/** better-auth as we configure it (src/auth/people.ts): its secret, its own origin checks, users made for the demo. */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthRefused, BETTER_AUTH_SECRET_PURPOSE, createPasswordUser, createPeopleAuth, signIn } from "../../src/auth/people";
import { accounts, users } from "../../src/db/schema";
import { SecretKeyring } from "../../src/lib/secret-box";
import { createHarness, testSecrets, WEB_APP_URL } from "../support/harness";
import { PASSWORD, WEB_ORIGIN, uniqueEmail } from "../support/web-client";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe("the secret", () => {
  it("is derived from SECRETS_KEY: stable for one key, different for another key or purpose, never the key itself", async () => {
    const secret = await testSecrets.deriveSecret(BETTER_AUTH_SECRET_PURPOSE);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(
      await new SecretKeyring({ current: "test-secrets-key-0123456789abcdefghijklmnop" }).deriveSecret(BETTER_AUTH_SECRET_PURPOSE),
    ).toBe(secret);
    expect(
      await new SecretKeyring({ current: "another-secrets-key-0123456789abcdefghijklm" }).deriveSecret(BETTER_AUTH_SECRET_PURPOSE),
    ).not.toBe(secret);
    expect(await testSecrets.deriveSecret("something else")).not.toBe(secret);
  });

  it("the instance is configured with it, telemetry off, our origin trusted", async () => {
    const auth = await createPeopleAuth({ db: h.db, secrets: testSecrets, webAppUrl: WEB_APP_URL });
    const context = await auth.$context;
    expect(context.secret).toBe(await testSecrets.deriveSecret(BETTER_AUTH_SECRET_PURPOSE));
    expect(context.trustedOrigins).toContain(WEB_ORIGIN);
    expect(auth.options.telemetry).toEqual({ enabled: false });
  });
});

describe("better-auth's own origin checks (behind the pages' own)", () => {
  it("a sign-in whose Origin is another site is refused by better-auth itself", async () => {
    const email = uniqueEmail("origin");
    await createPasswordUser({ db: h.db, secrets: testSecrets, webAppUrl: WEB_APP_URL }, { name: "O", email, password: PASSWORD });
    const deps = { db: h.db, secrets: testSecrets, webAppUrl: WEB_APP_URL };
    await expect(signIn(deps, { email, password: PASSWORD }, new Headers({ origin: "https://evil.example" }))).rejects.toMatchObject({
      status: 403,
    });
    await expect(
      signIn(deps, { email, password: PASSWORD }, new Headers({ "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate" })),
    ).rejects.toBeInstanceOf(AuthRefused);
    const ok = await signIn(deps, { email, password: PASSWORD }, new Headers({ origin: WEB_ORIGIN }));
    expect(ok.cookies.some((line) => line.includes("session_token="))).toBe(true);
  });
});

describe("createPasswordUser", () => {
  it("stores a scrypt hash, never the password, under a UUID", async () => {
    const email = uniqueEmail("demoish");
    const { id } = await createPasswordUser(
      { db: h.db, secrets: testSecrets, webAppUrl: WEB_APP_URL },
      { name: "D", email, password: PASSWORD },
    );
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const [account] = await h.db.select().from(accounts).where(eq(accounts.userId, id));
    expect(account!.providerId).toBe("credential");
    expect(account!.password).not.toContain(PASSWORD);
    expect((await h.db.select().from(users).where(eq(users.id, id)))[0]!.email).toBe(email.toLowerCase());
  });
});
