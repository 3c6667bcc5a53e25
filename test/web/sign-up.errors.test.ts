/** What the pages refuse and how they say it (Node, in process). */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { organizations, users } from "../../src/db/schema";
import { safeNextPath } from "../../src/web/session";
import { createHarness } from "../support/harness";
import { PASSWORD, WebClient, linkOnPage, uniqueEmail } from "../support/web-client";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe("sign-up refusals", () => {
  it("lists every invalid field, keeps what was typed (not the password), creates nothing", async () => {
    const client = new WebClient(h.app);
    const answer = await client.post("/sign-up", { name: " ", email: "not-an-email", password: "short", organization: "Kept Org Name" });
    expect(answer.status).toBe(400);
    expect(answer.text).toContain("Your name can&#39;t be blank.");
    expect(answer.text).toContain("Enter an e-mail address");
    expect(answer.text).toContain("at least 8 characters");
    expect(answer.text).toContain('value="Kept Org Name"');
    expect(answer.text).not.toContain('value="short"');
    expect(client.cookies.size).toBe(0);
    expect(await h.db.select().from(organizations).where(eq(organizations.name, "Kept Org Name"))).toEqual([]);
  });

  it("an e-mail already signed up: its confirmation link creates no second organization and says the account exists (409)", async () => {
    const email = uniqueEmail("twice");
    await new WebClient(h.app).signUp({ email, organization: "First Org" });
    const orgName = `Second Org ${email}`;
    const client = new WebClient(h.app);
    const again = await client.post("/sign-up", { name: "Someone", email, password: PASSWORD, organization: orgName });
    expect(again.status).toBe(303);
    const link = linkOnPage((await client.get(again.location!)).text, "confirmation-link")!;
    const confirmed = await client.post(link, {});
    expect(confirmed.status).toBe(409);
    expect(confirmed.text).toContain("You already have an account");
    expect([...client.cookies.keys()].filter((name) => name.endsWith("session_token"))).toEqual([]);
    expect(await h.db.select().from(organizations).where(eq(organizations.name, orgName))).toEqual([]);
    expect(await h.db.select().from(users).where(eq(users.email, email))).toHaveLength(1);
  });

  it("a name over 255 characters and a password over 128 are refused", async () => {
    const answer = await new WebClient(h.app).post("/sign-up", {
      name: "n".repeat(256),
      email: uniqueEmail(),
      password: "p".repeat(129),
      organization: "o",
    });
    expect(answer.status).toBe(400);
    expect(answer.text).toContain("Your name is too long");
    expect(answer.text).toContain("at most 128 characters");
  });

  it("a form over 16 KiB is refused with 413", async () => {
    const answer = await new WebClient(h.app).post("/sign-up", {
      name: "x".repeat(20_000),
      email: uniqueEmail(),
      password: PASSWORD,
      organization: "o",
    });
    expect(answer.status).toBe(413);
  });
});

describe("sign-in refusals", () => {
  it("a wrong password and an unknown e-mail get the same answer", async () => {
    const email = uniqueEmail("known");
    await new WebClient(h.app).signUp({ email, organization: "Known Org" });
    const wrong = await new WebClient(h.app).signIn(email, "wrong password!");
    const unknown = await new WebClient(h.app).signIn(uniqueEmail("unknown"), "wrong password!");
    for (const answer of [wrong, unknown]) {
      expect(answer.status).toBe(401);
      expect(answer.text).toContain("Wrong e-mail or password.");
      expect(answer.setCookies.filter((c) => c.includes("session_token=") && !/Max-Age=0/i.test(c))).toEqual([]);
    }
  });

  it("an empty form asks for both fields", async () => {
    const answer = await new WebClient(h.app).post("/sign-in", { email: "", password: "" });
    expect(answer.status).toBe(400);
    expect(answer.text).toContain("Enter your e-mail and password.");
  });

  it("sign-out without a session just opens the sign-in page", async () => {
    const answer = await new WebClient(h.app).post("/sign-out", {});
    expect(answer.status).toBe(303);
    expect(answer.location).toBe("/sign-in");
  });
});

describe("next", () => {
  it.each([
    ["/projects/1?x=1", "/projects/1?x=1"],
    ["/", "/"],
    [undefined, "/"],
    ["", "/"],
    ["https://evil.example/", "/"],
    ["//evil.example/x", "/"],
    ["/\\evil.example", "/"],
    ["\\\\evil.example", "/"],
    ["/%0d%0aSet-Cookie:x", "/%0d%0aSet-Cookie:x"],
    ["/a\r\nb", "/"],
    ["javascript:alert(1)", "/"],
    ["/sign-out", "/"],
    ["/sign-in?next=/x", "/"],
    [`/${"a".repeat(2001)}`, "/"],
    // Percent-encoded slashes stay encoded: a path of this origin.
    ["/%2f/evil.example", "/%2f/evil.example"],
    ["/./%2f/evil.example", "/%2f/evil.example"],
  ])("%j → %j", (raw, expected) => {
    expect(safeNextPath(raw)).toBe(expected);
  });

  /** Spellings that URL parsing (dot segments, tabs and newlines dropped, `\` read as `/`) turns into `//evil.example/…`. */
  const OFF_SITE = [
    "/.//evil.example/phish",
    "/..//evil.example/phish",
    "/%2e//evil.example/phish",
    "/%2E//evil.example/phish",
    "/%2e%2e//evil.example/phish",
    "/.%2e//evil.example/phish",
    "/././/evil.example/phish",
    "/a/..//evil.example/phish",
    "/a/b/../..//evil.example/phish",
    "/x/../..//evil.example/phish",
    "/%2e%2e/%2e//evil.example/phish",
    "/./\\evil.example/phish",
    "/.\\/evil.example/phish",
    "/\\/evil.example/phish",
    "/.\t//evil.example/phish",
    "/\t/evil.example/phish",
    "/.\n//evil.example/phish",
    "/\r\n/evil.example/phish",
    "/./\t/evil.example/phish",
    "/.//evil.example/phish?x=1",
  ];

  it.each(OFF_SITE)("%j never leads off the origin", (raw) => {
    expect(safeNextPath(raw)).toBe("/");
  });

  it("a signed-in visit to /sign-in with such a next, and signing in with it, land on / (never //host)", async () => {
    const email = uniqueEmail("open-redirect");
    const client = new WebClient(h.app);
    await client.signUp({ email, organization: "Open Redirect Org" });
    for (const raw of OFF_SITE) {
      const visit = await client.get(`/sign-in?next=${encodeURIComponent(raw)}`);
      expect([raw, visit.status, visit.location]).toEqual([raw, 302, "/"]);
      const signIn = await new WebClient(h.app).signIn(email, PASSWORD, raw);
      expect([raw, signIn.status, signIn.location]).toEqual([raw, 303, "/"]);
    }
    // The form a signed-out visitor gets carries / as its next, not the parsed //host.
    const form = await new WebClient(h.app).get(`/sign-in?next=${encodeURIComponent("/.//evil.example/phish")}`);
    expect(form.text).toContain('name="next" value="/"');
    expect(form.text).not.toContain("evil.example");
  });

  it("sign-in with a foreign next lands on /", async () => {
    const email = uniqueEmail("nexter");
    await new WebClient(h.app).signUp({ email, organization: "Next Org" });
    const answer = await new WebClient(h.app).signIn(email, PASSWORD, "https://evil.example/steal");
    expect(answer.status).toBe(303);
    expect(answer.location).toBe("/");
  });
});

describe("pages that do not exist", () => {
  it("a project id that is not a UUID or not known is a 404 page", async () => {
    const client = new WebClient(h.app);
    await client.signUp({ email: uniqueEmail("lost"), organization: "Lost Org" });
    for (const path of ["/projects/nope", "/projects/00000000-0000-4000-8000-000000000000"]) {
      const answer = await client.get(path);
      expect(answer.status).toBe(404);
      expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
      expect(answer.text).toContain("Not found");
    }
  });
});
