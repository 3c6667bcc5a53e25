/**
 * Issue 30 in Chromium, against `npm start`'s server process without SMTP_URL and without the demo:
 * an admin signed up through the page (the confirmation link shown, since no e-mail is sent)
 * - invites someone: the page says no e-mail was sent and shows the invitation's link once, with a
 *   copy button that copies it under the pages' CSP (nonce script; the clipboard read back);
 * - creates a project: the uploader commands wrap inside their boxes at 1280 and 375 px (no
 *   sideways overflow of the box or the page, the whole command laid out), each with a copy button
 *   that copies the whole command.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyServerDatabase, launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";

let server: ServerProcess;
let browser: Browser;
let dropDatabase: () => Promise<void> = async () => {};
const PASSWORD = "copy commands password 1";

beforeAll(async () => {
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess({ DATABASE_URL: database.url, SEED_DEMO: "false" }, { startTimeoutMs: 200_000 });
  browser = await launchChromium();
  const page = await newPage(1280);
  await page.goto(`${server.base}/sign-up`);
  await page.getByLabel("Your name").fill("Ada Lovelace");
  await page.getByLabel("E-mail").fill("ada@example.com");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByLabel("Organization name").fill("Copy Org");
  await page.getByRole("button", { name: "Create organization" }).click();
  await page.waitForURL(`${server.base}/sign-up/sent`);
  await page.getByTestId("confirmation-link").click();
  await page.getByRole("button", { name: "Confirm and create" }).click();
  await page.waitForURL(`${server.base}/`);
  await page.context().close();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
});

async function newPage(width: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.base });
  const page = await context.newPage();
  page.on("pageerror", (error) => {
    throw error;
  });
  return page;
}

async function signedIn(width: number): Promise<Page> {
  const page = await newPage(width);
  await page.goto(`${server.base}/sign-in`);
  await page.getByLabel("E-mail").fill("ada@example.com");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${server.base}/`);
  return page;
}

/** What the page's clipboard holds (a string expression: the tests are typed without the DOM's lib). */
const clipboard = (page: Page) => page.evaluate<string>("navigator.clipboard.readText()");

describe("copy buttons and commands in Chromium", () => {
  it("without SMTP an invitation shows its link once, says no e-mail was sent, and its copy button copies it", async () => {
    const page = await signedIn(1280);
    await page.goto(`${server.base}/settings/team`);
    await page.getByLabel("E-mail").fill("grace@example.com");
    await page.getByRole("button", { name: "Create the invitation" }).click();
    await page.waitForURL(`${server.base}/settings/team`);
    expect(await page.locator(".handover").textContent()).toContain("no e-mail was sent");
    expect(await page.getByText("Invitation sent").count()).toBe(0);
    const link = await page.locator("#invitation-link").inputValue();
    expect(link).toMatch(new RegExp(`^${server.base}/invitations/[A-Za-z0-9_-]{43}$`));
    await page.getByRole("button", { name: "Copy the invitation link" }).click();
    await page.getByText("Copied.").waitFor();
    expect(await clipboard(page)).toBe(link);
    // Once: a reload no longer shows it.
    await page.reload();
    expect(await page.locator("#invitation-link").count()).toBe(0);
    // The link works: it is the invitation's page.
    await page.goto(link);
    expect(await page.textContent("main")).toContain("grace@example.com");
    await page.context().close();
  });

  for (const width of [1280, 375]) {
    it(`at ${width} px the uploader commands wrap in their boxes, whole, and copy whole`, async () => {
      const page = await signedIn(width);
      await page.goto(`${server.base}/projects/new`);
      await page.locator("input[name=name]").fill(`wrapping-${width}`);
      await page.getByRole("button", { name: "Create project" }).click();
      await page.waitForURL(/\/created$/);
      const boxes = page.locator("pre.command");
      expect(await boxes.count()).toBe(2);
      for (const box of await boxes.all()) {
        const { scrollWidth, clientWidth, lines } = await box.evaluate((element) => ({
          scrollWidth: element.scrollWidth,
          clientWidth: element.clientWidth,
          lines: Math.round(
            element.getBoundingClientRect().height / parseFloat(element.ownerDocument.defaultView!.getComputedStyle(element).lineHeight),
          ),
        }));
        expect(scrollWidth, "nothing of the command is past the box's edge").toBeLessThanOrEqual(clientWidth);
        if (width === 375) expect(lines, "it wraps rather than being cut").toBeGreaterThan(2);
      }
      expect(await page.locator("html").evaluate((html) => html.scrollWidth)).toBeLessThanOrEqual(width);
      const command = (await page.locator("#upload-command").textContent())!;
      expect(command).toMatch(/^CTA_UPLOAD_TOKEN=ctu_\S+ npx .* upload --url \S+ 'reports\/\*\*\/\*\.xml'$/);
      await page.getByRole("button", { name: "Copy the upload command" }).click();
      expect(await clipboard(page)).toBe(command);
      await page.getByRole("button", { name: "Copy the download-and-upload command" }).click();
      expect(await clipboard(page)).toBe(await page.locator("#download-command").textContent());
      await page.context().close();
    });
  }
});
