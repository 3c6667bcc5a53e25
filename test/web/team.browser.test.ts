/**
 * In Chromium, against `npm start`'s server process with its demo and SMTP_URL pointing at a real
 * SMTP server started here (PGlite, or Postgres in CI's second pass): the demo admin reveals the
 * demo key (the one the banner printed), invites an admin and a member; the invitations arrive by
 * SMTP and the invitees sign up through their links; the member sees the team but not the key,
 * and a forged admin POST from their session is refused; an admin regenerates the key, every admin
 * receives the e-mail, and the old key gets 401 from the API.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeViolations, seriousViolations } from "../support/axe";
import { emptyServerDatabase, launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";
import { SmtpSink } from "../support/smtp-sink";

let server: ServerProcess;
let browser: Browser;
let dropDatabase: () => Promise<void> = async () => {};
const sink = new SmtpSink();

beforeAll(async () => {
  const smtpUrl = await sink.start();
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess(
    { DATABASE_URL: database.url, SEED_DEMO: "true", SMTP_URL: smtpUrl, MAIL_FROM: "Team test <team@example.com>" },
    { startTimeoutMs: 200_000 },
  );
  await server.until(() => /demo-member@example\.com {2}password: \S+\n/.test(server.output()), 120_000, 100);
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
  await sink.close();
});

async function newPage(): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on("dialog", (dialog) => {
    throw new Error(`a dialog opened: ${dialog.message()}`);
  });
  return page;
}

/** The invitation link e-mailed to `address`, once it has arrived. */
async function invitationLink(address: string): Promise<string> {
  await server.until(() => sink.to(address).length > 0, 15_000, 50);
  const link = /http:\/\/\S+\/invitations\/[A-Za-z0-9_-]{43}/.exec(sink.to(address)[0]!.text)?.[0];
  expect(link).toBeDefined();
  return link!;
}

async function expectAccessible(page: Page) {
  const violations = await seriousViolations(page);
  expect(violations, `${page.url()}\n${describeViolations(violations)}`).toEqual([]);
}

async function acceptAs(link: string, name: string, password: string): Promise<Page> {
  const page = await newPage();
  await page.goto(link);
  await expectAccessible(page);
  await page.getByLabel("Your name").fill(name);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Create account and join" }).click();
  await page.waitForURL(`${server.base}/`);
  expect(await page.locator("header .org").textContent()).toBe("Demo Organization");
  return page;
}

describe("the team page in Chromium", () => {
  it("invite by e-mail, join through the link, the member without the key, snoozing but not disabling; regenerate with every admin e-mailed; axe on each page", async () => {
    const output = server.output();
    const demoKey = /Bearer (cta_[0-9A-Za-z]+)/.exec(output)![1]!;
    const adminPassword = /demo-admin@example\.com {2}password: (\S+)/.exec(output)![1]!;

    const admin = await newPage();
    await admin.goto(`${server.base}/settings/team`);
    await admin.waitForURL(/\/sign-in\?next=/);
    await admin.getByLabel("E-mail").fill("demo-admin@example.com");
    await admin.getByLabel("Password").fill(adminPassword);
    await admin.getByRole("button", { name: "Sign in" }).click();
    await admin.waitForURL(`${server.base}/settings/team`);
    await expectAccessible(admin);
    // The header's organization opens the list of the person's organizations.
    await admin.getByRole("banner").getByRole("link", { name: "Demo Organization" }).click();
    await admin.waitForURL(`${server.base}/organizations`);
    await admin.getByRole("heading", { name: "Your organizations" }).waitFor();
    await expectAccessible(admin);
    await admin.goto(`${server.base}/settings/team`);

    // The demo key is revealable: its sealed copy was kept when the demo was seeded.
    await admin.getByRole("button", { name: "Reveal the key" }).click();
    expect(await admin.getByLabel("The key").inputValue()).toBe(demoKey);

    for (const [address, role] of [
      ["new-admin@example.com", "admin"],
      ["new-member@example.com", "member"],
    ] as const) {
      await admin.getByLabel("E-mail").fill(address);
      await admin.getByLabel("Role").selectOption(role);
      await admin.getByRole("button", { name: "Send the invitation" }).click();
      await admin.getByText(`Invitation sent to ${address}`).waitFor();
    }
    expect(await admin.getByRole("cell", { name: "new-member@example.com", exact: true }).count()).toBe(1);

    await invitationLink("new-member@example.com");
    expect(sink.to("new-member@example.com")[0]!.from).toBe("team@example.com");
    const member = await acceptAs(await invitationLink("new-member@example.com"), "Nina Newmember", "member password 123");
    await acceptAs(await invitationLink("new-admin@example.com"), "Adam Newadmin", "admin password 123");

    await member.goto(`${server.base}/settings/team`);
    expect(await member.getByRole("cell", { name: "Nina Newmember", exact: true }).count()).toBe(1);
    expect(await member.getByRole("cell", { name: "demo-admin@example.com", exact: true }).count()).toBe(1);
    expect(await member.getByRole("heading", { name: "API key" }).count()).toBe(0);
    expect(await member.getByRole("button", { name: "Reveal the key" }).count()).toBe(0);
    expect(await member.content()).not.toContain("cta_");
    await expectAccessible(member);
    // Their own weekly digest: off for a member until they turn it on (admins have it on by default).
    await member.getByRole("button", { name: "Send me the weekly digest" }).click();
    await member.getByText("You will receive the weekly digest e-mail.").waitFor();
    expect(await member.getByRole("button", { name: "Stop the weekly digest" }).count()).toBe(1);
    expect(await admin.getByRole("button", { name: "Stop the weekly digest" }).count()).toBe(1);

    // The member acts on alerts: snoozes one from its page, but sees no disable button, and a forged disable is refused.
    const alerts = (await server.call("GET", "/api/v1/alerts?status=active", demoKey)).body.data as { id: string }[];
    expect(alerts.length).toBeGreaterThan(0);
    await member.goto(`${server.base}/alerts/${alerts[0]!.id}`);
    expect(await member.getByRole("button", { name: "Disable" }).count()).toBe(0);
    await member.getByLabel("Snooze for").selectOption("1h");
    await member.getByRole("button", { name: "Snooze", exact: true }).click();
    await member.getByText("The alert is snoozed").waitFor();
    expect((await server.call("GET", `/api/v1/alerts/${alerts[0]!.id}`, demoKey)).body.snoozed).toBe(true);
    const forgedDisable = await member.request.post(`${server.base}/alerts/${alerts[0]!.id}/disable`, {
      headers: { origin: server.base },
      form: {},
    });
    expect(forgedDisable.status()).toBe(403);
    expect((await server.call("GET", `/api/v1/alerts/${alerts[0]!.id}`, demoKey)).body.active).toBe(true);
    // A forged admin request with the member's session, from the app's own origin: refused on the server.
    const forged = await member.request.post(`${server.base}/settings/team/api-key/regenerate`, {
      headers: { origin: server.base },
      form: {},
    });
    expect(forged.status()).toBe(403);
    expect(await forged.text()).not.toContain("cta_");
    expect((await server.call("GET", "/api/v1/organization", demoKey)).status).toBe(200);

    const before = sink.received.length;
    await admin.goto(`${server.base}/settings/team`);
    await admin.getByRole("button", { name: "Regenerate the key" }).click();
    // The confirmation page first (nothing regenerated yet), then its button; the key is shown on the team page it leads to.
    await admin.getByRole("heading", { name: "Regenerate the API key?" }).waitFor();
    expect((await server.call("GET", "/api/v1/organization", demoKey)).status).toBe(200);
    await admin.getByRole("button", { name: "Regenerate the key" }).click();
    await admin.getByText("The API key was regenerated").waitFor();
    expect(new URL(admin.url()).pathname).toBe("/settings/team");
    const newKey = await admin.getByLabel("The key").inputValue();
    expect(newKey).toMatch(/^cta_/);
    expect(newKey).not.toBe(demoKey);
    expect((await server.call("GET", "/api/v1/organization", demoKey)).status).toBe(401);
    expect((await server.call("GET", "/api/v1/organization", newKey)).status).toBe(200);

    await server.until(() => sink.received.length >= before + 2, 15_000, 50);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const notices = sink.received.slice(before).filter((mail) => mail.subject.includes("was regenerated"));
    expect(notices.map((mail) => mail.to[0]).sort()).toEqual(["demo-admin@example.com", "new-admin@example.com"]);
    for (const notice of notices) expect(notice.text).not.toContain(newKey);
  });
});
