/**
 * In Chromium, against `npm start`'s server process with its demo (PGlite, or Postgres in CI's
 * second pass): a new person signs up and lands on `/` under their organization's name, signs out,
 * is sent to sign-in when opening `/`, signs in and is back at `/`; they get a 404 on the demo
 * organization's project; a script payload in a project's name and description (set through the
 * API with the demo key) is shown as text to the demo admin, and no script runs.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyServerDatabase, launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const PAYLOAD = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;
const PASSWORD = "browser test password";

let server: ServerProcess;
let browser: Browser;
let dropDatabase: () => Promise<void> = async () => {};

beforeAll(async () => {
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess({ DATABASE_URL: database.url, SEED_DEMO: "true" }, { startTimeoutMs: 60_000 });
  // The banner's last lines are the demo's people: wait for them.
  await server.until(() => /demo-member@example\.com {2}password: \S+\n/.test(server.output()), 120_000, 100);
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
});

/** A fresh browser profile (cookies of its own) whose pages fail the test if a dialog opens or a script marks the page. */
async function newPage(): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on("dialog", (dialog) => {
    throw new Error(`a dialog opened: ${dialog.message()}`);
  });
  return page;
}

const demo = () => {
  const output = server.output();
  return {
    apiKey: /Bearer (cta_[0-9A-Za-z]+)/.exec(output)![1]!,
    adminPassword: /demo-admin@example\.com {2}password: (\S+)/.exec(output)![1]!,
  };
};

describe("the web app in Chromium", () => {
  it("sign up → / with the organization's name; sign out → / sends to sign-in; sign in → back at /", async () => {
    const page = await newPage();
    await page.goto(`${server.base}/sign-up`);
    await page.getByLabel("Your name").fill("Brenda Browser");
    await page.getByLabel("E-mail").fill("brenda@example.com");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByLabel("Organization name").fill("Browser Org");
    await page.getByRole("button", { name: "Create organization" }).click();
    // No mail transport here: the page shows the confirmation link and says no e-mail was sent.
    await page.waitForURL(`${server.base}/sign-up/sent`);
    expect(await page.getByRole("status").textContent()).toContain("No e-mail was sent");
    await page.getByTestId("confirmation-link").click();
    await page.getByRole("button", { name: "Confirm and create" }).click();
    await page.waitForURL(`${server.base}/`);
    expect(await page.locator("header .org").textContent()).toBe("Browser Org");
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Projects");

    const cookies = await page.context().cookies();
    const session = cookies.find((cookie) => cookie.name.endsWith("session_token"))!;
    expect(session.httpOnly).toBe(true);
    expect(session.sameSite).toBe("Lax");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${server.base}/sign-in`);
    await page.goto(`${server.base}/`);
    expect(page.url()).toBe(`${server.base}/sign-in`);

    await page.getByLabel("E-mail").fill("brenda@example.com");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${server.base}/`);
    expect(await page.locator("header .org").textContent()).toBe("Browser Org");
    await page.context().close();
  });

  it("a script payload in a project's name and description is text; another organization's person gets 404 on it", async () => {
    const { apiKey, adminPassword } = demo();
    const projects: any = await (await fetch(`${server.base}/api/v1/projects`, { headers: { authorization: `Bearer ${apiKey}` } })).json();
    const project = projects.data.find((p: { name: string }) => p.name === "checkout-service");
    const patched = await fetch(`${server.base}/api/v1/projects/${project.id}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ name: `checkout ${PAYLOAD}`, description: `Payments ${PAYLOAD}` }),
    });
    expect(patched.status).toBe(200);

    const admin = await newPage();
    await admin.goto(`${server.base}/`);
    await admin.waitForURL(/\/sign-in$/);
    await admin.getByLabel("E-mail").fill("demo-admin@example.com");
    await admin.getByLabel("Password").fill(adminPassword);
    await admin.getByRole("button", { name: "Sign in" }).click();
    await admin.waitForURL(`${server.base}/`);
    expect(await admin.locator("header .org").textContent()).toBe("Demo Organization");
    const link = admin.getByRole("link", { name: `checkout ${PAYLOAD}` });
    expect(await link.textContent()).toBe(`checkout ${PAYLOAD}`);
    expect(await admin.getByText(`Payments ${PAYLOAD}`).count()).toBe(1);
    await link.click();
    await admin.waitForURL(`${server.base}/projects/${project.id}`);
    expect(await admin.getByRole("heading", { level: 1 }).textContent()).toBe(`checkout ${PAYLOAD}`);
    expect(await admin.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await admin.locator("img").count()).toBe(0);

    // Brenda (Browser Org) is not a member of the demo organization.
    const stranger = await newPage();
    await stranger.goto(`${server.base}/sign-in`);
    await stranger.getByLabel("E-mail").fill("brenda@example.com");
    await stranger.getByLabel("Password").fill(PASSWORD);
    await stranger.getByRole("button", { name: "Sign in" }).click();
    await stranger.waitForURL(`${server.base}/`);
    const response = await stranger.goto(`${server.base}/projects/${project.id}`);
    expect(response!.status()).toBe(404);
    expect(await stranger.getByRole("heading", { level: 1 }).textContent()).toBe("Not found");
    expect(await stranger.content()).not.toContain("checkout");
  });
});
