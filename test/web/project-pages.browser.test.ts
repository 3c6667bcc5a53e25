/**
 * In Chromium, against `npm start`'s server process with its demo (PGlite, or Postgres in CI's
 * second pass): the demo admin creates a project on /projects/new and sees its upload token once;
 * the uploader CLI (packages/uploader) sends a JUnit report with it; the overview shows the run
 * (figures, charts, the run linking to its page). The demo member reads the project's settings
 * without any control to change them, and reveals the token.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeViolations, seriousViolations } from "../support/axe";
import { emptyServerDatabase, launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
const JUNIT = `<?xml version="1.0"?><testsuite name="cart"><testcase classname="Cart" name="adds an item" time="0.4"/><testcase classname="Cart" name="applies a coupon" time="1.1"><failure message="expected 10 but was 12">trace</failure></testcase></testsuite>`;

let server: ServerProcess;
let browser: Browser;
let dropDatabase: () => Promise<void> = async () => {};
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cta-pages-"));
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess({ DATABASE_URL: database.url, SEED_DEMO: "true" }, { startTimeoutMs: 180_000 });
  await server.until(() => /demo-member@example\.com {2}password: \S+\n/.test(server.output()), 120_000, 100);
  browser = await launchChromium();
}, 360_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const password = (who: "admin" | "member") => new RegExp(`demo-${who}@example\\.com {2}password: (\\S+)`).exec(server.output())![1]!;

async function signedIn(who: "admin" | "member"): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.on("dialog", (dialog) => {
    throw new Error(`a dialog opened: ${dialog.message()}`);
  });
  await page.goto(`${server.base}/sign-in`);
  await page.getByLabel("E-mail").fill(`demo-${who}@example.com`);
  await page.getByLabel("Password").fill(password(who));
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${server.base}/`);
  return page;
}

function upload(token: string, file: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, "upload", "--url", server.base, "--no-codeowners", file],
      { cwd: dir, env: { PATH: process.env.PATH ?? "", CTA_UPLOAD_TOKEN: token, CTA_RETRY_BASE_MS: "1" }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

async function expectAccessible(page: Page) {
  const violations = await seriousViolations(page);
  expect(violations, `${page.url()}\n${describeViolations(violations)}`).toEqual([]);
}

describe("project pages in Chromium", () => {
  it("admin: /projects/new → token once → CLI upload → the overview shows the run; member: settings read-only, token revealed", async () => {
    const admin = await signedIn("admin");
    await admin.getByRole("link", { name: "New project" }).click();
    await admin.waitForURL(`${server.base}/projects/new`);
    await expectAccessible(admin);
    await admin.getByLabel("Name").fill("Browser cart");
    await admin.getByLabel("Description").fill("Made in Chromium");
    await admin.getByRole("button", { name: "Create project" }).click();
    await admin.getByRole("heading", { name: "Project created: Browser cart" }).waitFor();
    const token = await admin.locator("#upload-token").inputValue();
    expect(token).toMatch(/^ctu_/);
    await expectAccessible(admin);
    expect(await admin.locator("#upload-command").textContent()).toContain(
      `CTA_UPLOAD_TOKEN=${token} npx --yes --package=${server.base}/uploader/ci-test-analytics.tgz ci-test-analytics upload --url`,
    );

    await admin.getByRole("link", { name: "Open the project" }).click();
    await admin.waitForURL(/\/projects\/[0-9a-f-]{36}$/);
    const projectUrl = admin.url();
    expect(await admin.content()).not.toContain(token);
    expect(await admin.getByText("No runs yet").count()).toBe(1);

    writeFileSync(join(dir, "junit.xml"), JUNIT);
    const uploaded = await upload(token, "junit.xml");
    expect(uploaded.output).toContain("#1");
    expect(uploaded.code).toBe(0);

    // The run is processed in the background: reload until it shows, processed (the overview lists a pending run
    // before its figures, and its charts, exist).
    const deadline = Date.now() + 30_000;
    for (;;) {
      await admin.goto(projectUrl);
      const shown = (await admin.getByRole("link", { name: "#1" }).count()) === 1;
      if (shown && (await admin.getByRole("img", { name: /Runs by result/ }).count()) === 1) break;
      if (Date.now() > deadline) throw new Error("the run did not show, processed, on the overview");
      await admin.waitForTimeout(250);
    }
    expect(await admin.getByRole("link", { name: "#1" }).getAttribute("href")).toBe(`${new URL(projectUrl).pathname}/runs/1`);
    await expectAccessible(admin);
    expect(await admin.getByRole("img", { name: /Runs by result/ }).count()).toBe(1);
    // The report states no duration and no test is flaky: those charts say so instead of drawing empty axes.
    expect(await admin.getByRole("img", { name: /Run duration, p50 and p95/ }).count()).toBe(0);
    expect(await admin.getByText("No run durations in the last 30 days.").count()).toBe(1);
    expect(await admin.getByRole("img", { name: /^Flaky tests/ }).count()).toBe(0);
    expect(await admin.getByText("No flaky tests in the last 30 days.").count()).toBe(1);
    expect(
      await admin
        .locator(".figure", { has: admin.locator("dt", { hasText: /^Runs$/ }) })
        .locator(".figure-value")
        .textContent(),
    ).toBe("1");
    // The data table behind a disclosure, readable without any script.
    await admin.getByText("Data table: Runs by result").click();
    expect(await admin.locator("details[open] table tbody tr").count()).toBe(30);

    const member = await signedIn("member");
    await member.goto(`${projectUrl}/settings`);
    await expectAccessible(member);
    expect(await member.getByLabel("Name").isDisabled()).toBe(true);
    expect(await member.getByLabel("Name").inputValue()).toBe("Browser cart");
    for (const control of ["Save settings", "Rotate the upload token", "Add channel"])
      expect(await member.getByRole("button", { name: control }).count()).toBe(0);
    await member.getByRole("button", { name: "Reveal the upload token" }).click();
    expect(await member.locator("#upload-token").inputValue()).toBe(token);
    await admin.goto(`${projectUrl}/settings`);
    await expectAccessible(admin);
  });
});
