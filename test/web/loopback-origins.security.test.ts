/**
 * Local development at `localhost` and `127.0.0.1` alike (docs/web-app.md): with WEB_APP_URL unset
 * (`webAppLoopbackAliases`) and the pages on a loopback name, a form posted from either loopback
 * name at the same scheme and port is the pages' own (the pages' CSRF check and better-auth's
 * trusted origins); any other origin, a loopback one at another port, or an origin named by the
 * request's Host is refused. With WEB_APP_URL set, only its origin.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webOrigins } from "../../src/auth/people";
import { createHarness } from "../support/harness";
import { PASSWORD, WebClient, uniqueEmail } from "../support/web-client";

const LOCAL = "http://localhost:8787";
let local: Awaited<ReturnType<typeof createHarness>>;
let configured: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  local = await createHarness({ overrides: { webAppUrl: LOCAL, publicBaseUrl: LOCAL, webAppLoopbackAliases: true } });
  configured = await createHarness({ overrides: { webAppUrl: LOCAL, publicBaseUrl: LOCAL, webAppLoopbackAliases: false } });
});
afterAll(async () => {
  await local?.close();
  await configured?.close();
});

describe("webOrigins", () => {
  it("adds the other loopback name only when asked and only for a loopback web app", () => {
    expect(webOrigins("http://localhost:8787/", true)).toEqual(["http://localhost:8787", "http://127.0.0.1:8787"]);
    expect(webOrigins("http://127.0.0.1:8787", true)).toEqual(["http://127.0.0.1:8787", "http://localhost:8787"]);
    expect(webOrigins("http://localhost:8787", false)).toEqual(["http://localhost:8787"]);
    expect(webOrigins("https://app.example.com", true)).toEqual(["https://app.example.com"]);
    expect(webOrigins("http://10.0.0.1:8787", true)).toEqual(["http://10.0.0.1:8787"]);
  });
});

describe("sign-in from the other loopback name", () => {
  it("WEB_APP_URL unset: signing in at 127.0.0.1 or localhost works; another port, site or Host is refused", async () => {
    const email = uniqueEmail("loopback");
    await new WebClient(local.app, LOCAL).signUp({ email, organization: "Loopback Org" });
    for (const origin of ["http://127.0.0.1:8787", LOCAL]) {
      const client = new WebClient(local.app, origin);
      const answer = await client.signIn(email, PASSWORD);
      expect(answer.status, origin).toBe(303);
      expect(answer.location).toBe("/");
      expect((await client.get("/")).status, origin).toBe(200);
    }
    const others: Record<string, string>[] = [
      { origin: "http://127.0.0.1:9999" },
      { origin: "https://127.0.0.1:8787" },
      { origin: "http://evil.example" },
      { origin: "http://attacker.test", host: "attacker.test" },
    ];
    for (const headers of others) {
      const answer = await new WebClient(local.app).post("/sign-in", { email, password: PASSWORD }, headers);
      expect(answer.status, headers.origin).toBe(403);
      expect(answer.text).toContain("sent from another site");
      expect(answer.setCookies).toEqual([]);
    }
  });

  it("WEB_APP_URL set: its origin only, even on a loopback name", async () => {
    const email = uniqueEmail("configured");
    await new WebClient(configured.app, LOCAL).signUp({ email, organization: "Configured Org" });
    const refused = await new WebClient(configured.app, "http://127.0.0.1:8787").signIn(email, PASSWORD);
    expect(refused.status).toBe(403);
    expect((await new WebClient(configured.app, LOCAL).signIn(email, PASSWORD)).status).toBe(303);
  });
});
