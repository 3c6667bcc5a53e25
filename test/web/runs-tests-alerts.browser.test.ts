/**
 * In Chromium, against `npm start`'s server process with its demo (PGlite, or Postgres in CI's
 * second pass): a report with failures is uploaded for the demo's project (the upload API, its
 * token from the admin API); the demo admin opens the run's page from the runs list and sees the
 * failures grouped by cause with their traces, quarantines a test from its page, and snoozes an
 * alert. axe-core finds no serious or critical violation on these pages nor on /, /sign-in,
 * /sign-up and /projects/:id.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeViolations, seriousViolations } from "../support/axe";
import { emptyServerDatabase, launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const ADMIN_TOKEN = "browser-test-admin-token-0123456789";

let server: ServerProcess;
let browser: Browser;
let dropDatabase: () => Promise<void> = async () => {};
let projectId: string;
let alertId: string;
let runNumber: number;

beforeAll(async () => {
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess({ DATABASE_URL: database.url, SEED_DEMO: "true", ADMIN_TOKEN }, { startTimeoutMs: 240_000 });
  await server.until(() => /demo-member@example\.com {2}password: \S+\n/.test(server.output()), 240_000, 100);
  browser = await launchChromium();

  const apiKey = /Bearer (cta_[0-9A-Za-z]+)/.exec(server.output())![1]!;
  const projects = await server.call("GET", "/api/v1/projects", apiKey);
  projectId = projects.body.data.find((p: { name: string }) => p.name === "checkout-service").id;
  const alerts = await server.call("GET", `/api/v1/alerts?project_id=${projectId}&status=active`, apiKey);
  alertId = alerts.body.data[0].id;
  const token = await server.call("POST", `/admin/v1/projects/${projectId}/upload_token/regenerate`, ADMIN_TOKEN);
  const uploadToken = token.body.upload_token as string;
  const report = {
    branch: "browser-branch",
    commit_sha: "feedc0ffee",
    build_url: "https://ci.example.com/builds/77",
    suites: [
      {
        name: "browser suite",
        cases: [
          {
            name: "charges the card",
            classname: "Payments",
            status: "errored",
            failure_message: "gateway timeout",
            failure_text: "Error: gateway timeout\n    at charge (pay.ts:1:1)",
          },
          {
            name: "refunds the card",
            classname: "Payments",
            status: "errored",
            failure_message: "gateway timeout",
            failure_text: "Error: gateway timeout\n    at charge (pay.ts:1:1)",
          },
          {
            name: "shows the total",
            classname: "Cart",
            status: "failed",
            failure_message: "expected 10 to be 12",
            failure_text: "AssertionError: expected 10 to be 12\n    at total (cart.ts:2:2)",
          },
          { name: "adds an item", classname: "Cart", status: "passed" },
        ],
      },
    ],
  };
  const upload = await server.call("POST", "/uploads/v1/test_runs", uploadToken, JSON.stringify(report), {
    "content-type": "application/json",
  });
  if (upload.status !== 202) throw new Error(`upload: ${upload.status} ${JSON.stringify(upload.body)}`);
  runNumber = upload.body.number;
  await server.until(
    async () => (await server.call("GET", `/uploads/v1/test_runs/${runNumber}`, uploadToken)).body.status !== "pending",
    60_000,
    100,
  );
}, 540_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
});

async function newPage(): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on("dialog", (dialog) => {
    throw new Error(`a dialog opened: ${dialog.message()}`);
  });
  return page;
}

async function signInAsDemoAdmin(page: Page) {
  const password = /demo-admin@example\.com {2}password: (\S+)/.exec(server.output())![1]!;
  await page.goto(`${server.base}/sign-in`);
  await page.getByLabel("E-mail").fill("demo-admin@example.com");
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${server.base}/`);
}

async function expectAccessible(page: Page) {
  const violations = await seriousViolations(page);
  expect(violations, `${page.url()}\n${describeViolations(violations)}`).toEqual([]);
}

describe("runs, tests and alerts in Chromium", () => {
  it("the run's page shows the failures grouped; a test is quarantined from its page; an alert is snoozed; axe finds nothing serious", async () => {
    const page = await newPage();
    await page.goto(`${server.base}/sign-up`);
    await expectAccessible(page);
    await page.goto(`${server.base}/sign-in`);
    await expectAccessible(page);
    await signInAsDemoAdmin(page);
    await expectAccessible(page);
    await page.goto(`${server.base}/projects/${projectId}`);
    await expectAccessible(page);

    await page.goto(`${server.base}/projects/${projectId}/runs?branch=browser-branch`);
    await expectAccessible(page);
    await page.getByRole("link", { name: `#${runNumber}`, exact: true }).click();
    await page.waitForURL(`${server.base}/projects/${projectId}/runs/${runNumber}`);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(`Run #${runNumber}`);
    const groups = page.locator("article.failure-group");
    expect(await groups.count()).toBe(2);
    expect(await groups.nth(0).getByRole("heading", { level: 3 }).textContent()).toBe("gateway timeout");
    expect(await groups.nth(0).locator("li").count()).toBe(2);
    expect(await groups.nth(1).getByRole("heading", { level: 3 }).textContent()).toBe("expected <n> to be <n>");
    expect(await groups.nth(1).locator(".failure-message").textContent()).toBe("expected 10 to be 12");
    // The trace opens without JavaScript (<details>).
    const trace = groups.nth(1).locator("details");
    expect(await trace.locator("pre").isVisible()).toBe(false);
    await trace.locator("summary").click();
    expect(await trace.locator("pre").textContent()).toContain("at total (cart.ts:2:2)");
    expect(await page.getByRole("link", { name: "https://ci.example.com/builds/77" }).count()).toBe(1);
    await expectAccessible(page);

    await groups.nth(1).getByRole("link", { name: "shows the total" }).click();
    await page.waitForURL(/\/tests\/[0-9a-f-]+$/);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("shows the total");
    const cell = page.locator("ol.history-strip a").last();
    expect(await cell.textContent()).toMatch(new RegExp(`^Failed, run #${runNumber}, \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC$`));
    await expectAccessible(page);
    await page.getByLabel("Reason").fill("Fails on the total in the browser test");
    await page.getByLabel("For").selectOption("14d");
    await page.getByRole("button", { name: "Quarantine", exact: true }).click();
    await page.waitForURL(/\?done=quarantined$/);
    expect(await page.getByRole("status").textContent()).toBe("The test is quarantined.");
    expect(await page.locator(".badge.quarantined").count()).toBeGreaterThan(0);
    await expectAccessible(page);

    await page.goto(`${server.base}/projects/${projectId}/tests`);
    await expectAccessible(page);

    await page.goto(`${server.base}/alerts`);
    await expectAccessible(page);
    await page.locator(`a[href="/alerts/${alertId}"]`).click();
    await page.waitForURL(`${server.base}/alerts/${alertId}`);
    await expectAccessible(page);
    await page.getByLabel("Snooze for").selectOption("1w");
    await page.getByRole("button", { name: "Snooze" }).click();
    await page.waitForURL(`${server.base}/alerts/${alertId}?done=snoozed`);
    expect(await page.locator("dl.facts").first().textContent()).toContain("Snoozed until");
    await expectAccessible(page);
    await page.getByRole("button", { name: "Unsnooze" }).click();
    await page.waitForURL(`${server.base}/alerts/${alertId}?done=unsnoozed`);
    expect(await page.locator("dl.facts").first().textContent()).toContain("Active");
    await page.context().close();
  }, 240_000);
});
