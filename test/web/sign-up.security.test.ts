/**
 * The pages' security (Node, in process): CSRF on every form post, the headers of every page,
 * cookies, other organizations' pages, escaping, the sign-in throttle, and the APIs untouched.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { organizations, sessions, users } from "../../src/db/schema";
import { createHarness } from "../support/harness";
import { PASSWORD, WEB_ORIGIN, WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe("CSRF: form posts come from the web app's configured origin", () => {
  const refused = [
    ["no Origin and no Sec-Fetch-Site", {}],
    ["another site's Origin", { origin: "https://evil.example" }],
    ["Origin null", { origin: "null" }],
    ["the same host on http", { origin: WEB_ORIGIN.replace("https:", "http:") }],
    ["Sec-Fetch-Site cross-site", { "sec-fetch-site": "cross-site" }],
    ["Sec-Fetch-Site same-site", { "sec-fetch-site": "same-site" }],
    // The request's Host is never the reference.
    ["an Origin matching the request's Host", { origin: "http://attacker.test", host: "attacker.test" }],
  ] as const;

  it.each(refused)("sign-up with %s is refused (403) and creates nothing", async (_label, headers) => {
    const email = uniqueEmail("csrf");
    const answer = await new WebClient(h.app).post(
      "/sign-up",
      { name: "X", email, password: PASSWORD, organization: `CSRF ${email}` },
      { ...headers },
    );
    expect(answer.status).toBe(403);
    expect(answer.text).toContain("sent from another site");
    expect(await h.db.select().from(users).where(eq(users.email, email))).toEqual([]);
    expect(
      await h.db
        .select()
        .from(organizations)
        .where(eq(organizations.name, `CSRF ${email}`)),
    ).toEqual([]);
  });

  it("sign-in, and sign-out of a signed-in person, are refused from another site; the session stays", async () => {
    const client = new WebClient(h.app);
    const email = uniqueEmail("victim");
    await client.signUp({ email, organization: "Victim Org" });
    const { userId } = await signedUpOrganization(h.db, email);
    expect((await client.post("/sign-out", {}, { origin: "https://evil.example" })).status).toBe(403);
    expect(await h.db.select().from(sessions).where(eq(sessions.userId, userId))).toHaveLength(1);
    expect((await client.get("/")).status).toBe(200);
    const login = await new WebClient(h.app).post("/sign-in", { email, password: PASSWORD }, { origin: "https://evil.example" });
    expect(login.status).toBe(403);
    expect(login.setCookies).toEqual([]);
  });

  it("without Origin, Sec-Fetch-Site: same-origin is accepted", async () => {
    const email = uniqueEmail("fetchmeta");
    const answer = await new WebClient(h.app).post(
      "/sign-up",
      { name: "X", email, password: PASSWORD, organization: "Fetch Metadata Org" },
      { "sec-fetch-site": "same-origin" },
    );
    expect(answer.status).toBe(303);
  });
});

describe("headers of every page", () => {
  it("CSP without 'unsafe-inline' scripts, no framing, nosniff, a referrer policy, HSTS under https, no caching", async () => {
    const client = new WebClient(h.app);
    await client.signUp({ email: uniqueEmail("headers"), organization: "Headers Org" });
    for (const path of ["/", "/sign-in", "/sign-up", "/alerts", "/settings/team", "/projects/nope"]) {
      const answer = await (path.startsWith("/sign") ? new WebClient(h.app) : client).get(path);
      const csp = answer.headers.get("content-security-policy")!;
      expect(csp, path).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/);
      expect(csp).not.toContain("unsafe-inline");
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("form-action 'self'");
      expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
      expect(answer.headers.get("referrer-policy")).toBe("same-origin");
      expect(answer.headers.get("x-frame-options")).toBe("DENY");
      expect(answer.headers.get("strict-transport-security")).toMatch(/max-age=/);
      expect(answer.headers.get("cache-control")).toBe("no-store");
      // Scripts only as files of the service's own, each with this answer's nonce and no inline code (the copy buttons').
      const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)![1]!;
      const scripts = answer.text.match(/<script\b[^>]*>[^<]*<\/script>/gi) ?? [];
      expect(scripts.length, path).toBe((answer.text.match(/<script\b/gi) ?? []).length);
      for (const tag of scripts) {
        expect(tag, path).toMatch(/^<script [^>]*src="\/assets\/[a-z-]+\.js"[^>]*><\/script>$/);
        expect(tag, path).toContain(`nonce="${nonce}"`);
      }
    }
  });

  it("the stylesheet is served from our origin", async () => {
    const css = await new WebClient(h.app).get("/assets/app.css");
    expect(css.status).toBe(200);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
  });

  it("the APIs' answers keep their headers (no page CSP on /api/v1)", async () => {
    const res = await h.call("GET", "/api/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBeNull();
  });
});

describe("cookies", () => {
  it("over http (a local WEB_APP_URL) the session cookie is HttpOnly and SameSite=Lax but not Secure", async () => {
    const local = await createHarness({ overrides: { webAppUrl: "http://localhost:8787" } });
    try {
      const answer = await new WebClient(local.app, "http://localhost:8787").signUp({
        name: "Local",
        email: uniqueEmail("local"),
        organization: "Local Org",
      });
      expect(answer.status).toBe(303);
      const cookie = answer.setCookies.find((line) => line.startsWith("better-auth.session_token="))!;
      expect(cookie).toMatch(/HttpOnly/i);
      expect(cookie).toMatch(/SameSite=Lax/i);
      expect(cookie).not.toMatch(/Secure/i);
    } finally {
      await local.close();
    }
  });

  it("a forged or tampered session cookie is a signed-out visit", async () => {
    const client = new WebClient(h.app);
    await client.signUp({ email: uniqueEmail("tamper"), organization: "Tamper Org" });
    const [name, value] = [...client.cookies][0]!;
    const [token] = decodeURIComponent(value).split(".");
    for (const forged of [`${token}.AAAA`, `${token}`, "x.y", ""]) {
      const answer = await new WebClient(h.app).get("/", { cookie: `${name}=${encodeURIComponent(forged)}` });
      expect(answer.status).toBe(302);
    }
  });
});

describe("other organizations", () => {
  it("a signed-in person gets 404 for another organization's project, like for one that does not exist", async () => {
    const owner = new WebClient(h.app);
    const ownerEmail = uniqueEmail("owner");
    await owner.signUp({ email: ownerEmail, organization: "Owner Org" });
    const { organizationId } = await signedUpOrganization(h.db, ownerEmail);
    const { project } = await h.newProject(organizationId, "secret-project");

    const stranger = new WebClient(h.app);
    await stranger.signUp({ email: uniqueEmail("stranger"), organization: "Stranger Org" });
    const answer = await stranger.get(`/projects/${project.id}`);
    expect(answer.status).toBe(404);
    expect(answer.text).not.toContain("secret-project");
    expect(answer.text).toContain("Stranger Org");
    const missing = await stranger.get("/projects/00000000-0000-4000-8000-000000000000");
    expect(missing.text.replace(/nonce-[^']+/, "")).toBe(answer.text.replace(/nonce-[^']+/, ""));
    // And the home page lists only its own.
    expect((await stranger.get("/")).text).not.toContain("secret-project");
  });
});

describe("escaping", () => {
  it("script payloads in names and descriptions are shown as text", async () => {
    const payload = `<script>alert("x")</script><img src=x onerror=alert(1)>`;
    const client = new WebClient(h.app);
    const email = uniqueEmail("xss");
    await client.signUp({ name: payload, email, organization: `Org ${payload}` });
    const { organizationId } = await signedUpOrganization(h.db, email);
    const { project } = await h.newProject(organizationId, `Project ${payload}`, `Description ${payload}`);
    for (const path of ["/", `/projects/${project.id}`]) {
      const page = await client.get(path);
      expect(page.text).not.toContain("<script>");
      expect(page.text).not.toContain("<img src=x");
      expect(page.text).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    }
  });
});

describe("sign-in throttle", () => {
  it("after 10 failures within 15 minutes every attempt is refused for 15 minutes, the right password included", async () => {
    const email = uniqueEmail("throttled");
    await new WebClient(h.app).signUp({ email, organization: "Throttled Org" });
    for (let i = 1; i <= 9; i++) {
      expect((await new WebClient(h.app).signIn(email, `wrong-${i}-password`)).status).toBe(401);
      h.clock.advance(60_000);
    }
    const tenth = await new WebClient(h.app).signIn(email, "wrong-10-password");
    expect(tenth.status).toBe(429);
    expect(tenth.text).toContain("Too many failed sign-in attempts for this e-mail");
    expect(tenth.text).toContain("15 more minutes");

    h.clock.advance(5 * 60_000);
    const right = await new WebClient(h.app).signIn(email.toUpperCase());
    expect(right.status).toBe(429);
    expect(right.text).toContain("10 more minutes");
    expect(right.setCookies).toEqual([]);

    h.clock.advance(10 * 60_000);
    const after = await new WebClient(h.app).signIn(email);
    expect(after.status).toBe(303);
  });

  it("40 wrong passwords in parallel get at most 10 guesses: each attempt is counted before its password is checked", async () => {
    const email = uniqueEmail("parallel");
    await new WebClient(h.app).signUp({ email, organization: "Parallel Org" });
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => new WebClient(h.app).signIn(email, `wrong-${i}-password`)));
    const statuses = answers.map((answer) => answer.status);
    // Nine wrong passwords said so; the tenth guess started the lock (429); the other 30 were refused unchecked.
    expect(statuses.filter((status) => status === 401)).toHaveLength(9);
    expect(statuses.filter((status) => status === 429)).toHaveLength(31);
    expect((await new WebClient(h.app).signIn(email)).status).toBe(429);
  });

  it("failures spread over more than 15 minutes do not lock", async () => {
    const email = uniqueEmail("slow");
    await new WebClient(h.app).signUp({ email, organization: "Slow Org" });
    for (let i = 1; i <= 12; i++) {
      expect((await new WebClient(h.app).signIn(email, "wrong password")).status).toBe(401);
      h.clock.advance(2 * 60_000);
    }
    expect((await new WebClient(h.app).signIn(email)).status).toBe(303);
  });

  it("one e-mail's lock does not touch another's", async () => {
    const locked = uniqueEmail("locked");
    const free = uniqueEmail("free");
    await new WebClient(h.app).signUp({ email: free, organization: "Free Org" });
    for (let i = 0; i < 10; i++) await new WebClient(h.app).signIn(locked, "wrong password");
    expect((await new WebClient(h.app).signIn(locked, "wrong password")).status).toBe(429);
    expect((await new WebClient(h.app).signIn(free)).status).toBe(303);
  });
});

describe("the APIs keep their own authentication", () => {
  it("a session cookie authenticates no API request; better-auth's own endpoints are not served", async () => {
    const client = new WebClient(h.app);
    await client.signUp({ email: uniqueEmail("api"), organization: "Api Org" });
    const cookie = client.cookieHeader()!;
    expect((await h.call("GET", "/api/v1/projects", { headers: { cookie } })).status).toBe(401);
    expect((await h.call("GET", "/admin/v1/organizations", { headers: { cookie } })).status).toBe(401);
    for (const path of ["/api/auth/sign-up/email", "/api/auth/organization/create", "/api/auth/get-session"]) {
      const res = await h.call("POST", path, {
        headers: { cookie, origin: WEB_ORIGIN },
        body: { name: "x", email: uniqueEmail(), password: PASSWORD },
      });
      expect(res.status, path).toBe(404);
    }
  });
});
