/**
 * The cost of flakiness in Chromium at 1280 px (docs/flakiness-cost.md), against `npm start`'s
 * server process with its demo: the demo project whose history has flaky failures shows its 30-day
 * figure and chart; a new project fed through the upload interface (a retry that passed, a flaky
 * test's failure, the re-run of the build it failed, a quarantine set on the test's page and the
 * quarantined test's failure) shows every component, its most costly tests link to their pages,
 * and a test's page shows its share. No serious axe violation. Screenshots go to /tmp/shots/cost-*.png.
 */
import { mkdirSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeViolations, seriousViolations } from "../support/axe";
import { emptyServerDatabase, launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const SHOTS = "/tmp/shots";

let server: ServerProcess;
let browser: Browser;
let dropDatabase: () => Promise<void> = async () => {};

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess({ DATABASE_URL: database.url, SEED_DEMO: "true" }, { startTimeoutMs: 180_000 });
  await server.until(() => /demo-admin@example\.com {2}password: \S+\n/.test(server.output()), 120_000, 100);
  browser = await launchChromium();
}, 360_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
});

async function signedInAdmin(): Promise<Page> {
  const password = /demo-admin@example\.com {2}password: (\S+)/.exec(server.output())![1]!;
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.goto(`${server.base}/sign-in`);
  await page.getByLabel("E-mail").fill("demo-admin@example.com");
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${server.base}/`);
  return page;
}

async function expectAccessible(page: Page) {
  const violations = await seriousViolations(page);
  expect(violations, `${page.url()}\n${describeViolations(violations)}`).toEqual([]);
}

type Case = { name: string; status: "passed" | "failed"; duration_ms: number; attempts?: { status: "failed"; duration_ms: number }[] };

/** Uploads a JSON run with the project's token and waits until it is processed. */
async function upload(token: string, cases: Case[], meta: Record<string, unknown>) {
  const body = { branch: "main", ...meta, suites: [{ name: "cart", cases: cases.map((c) => ({ classname: "CartTest", ...c })) }] };
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const res = await fetch(`${server.base}/uploads/v1/test_runs`, { method: "POST", headers, body: JSON.stringify(body) });
  expect(res.status).toBe(202);
  const { number } = (await res.json()) as { number: number };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = (await (await fetch(`${server.base}/uploads/v1/test_runs/${number}`, { headers })).json()) as { status: string };
    if (run.status === "processed") return;
    if (run.status !== "pending" || Date.now() > deadline) throw new Error(`run #${number}: ${run.status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const figureValue = (page: Page) => page.locator(".figure", { hasText: "Cost of flakiness" }).locator(".figure-value").textContent();

describe("the cost of flakiness in Chromium", () => {
  it("the demo project's overview: the 30-day figure and the chart of its flaky failures", async () => {
    const page = await signedInAdmin();
    await page.getByRole("link", { name: "checkout-service" }).first().click();
    await page.waitForURL(/\/projects\/[0-9a-f-]{36}$/);
    expect(await figureValue(page)).not.toBe("0 ms");
    expect(await page.getByRole("img", { name: /Cost of flakiness per day/ }).count()).toBe(1);
    expect(await page.locator("#cost-heading ~ ol li").count()).toBeGreaterThan(0);
    await expectAccessible(page);
    await page.locator('section[aria-labelledby="cost-heading"]').screenshot({ path: `${SHOTS}/cost-overview-demo.png` });
  });

  it("a new project: every component on the overview, its costliest test's page with its share", async () => {
    const page = await signedInAdmin();
    await page.goto(`${server.base}/projects/new`);
    await page.getByLabel("Name").fill("Cart in Chromium");
    await page.getByRole("button", { name: "Create project" }).click();
    const token = await page.locator("#upload-token").inputValue();
    await page.getByRole("link", { name: "Open the project" }).click();
    await page.waitForURL(/\/projects\/[0-9a-f-]{36}$/);
    const projectUrl = page.url();

    const pass = (name: string, duration_ms = 400): Case => ({ name, status: "passed", duration_ms });
    const fail = (name: string, duration_ms: number): Case => ({ name, status: "failed", duration_ms });
    // `applies a coupon` passes then fails on one commit: flaky from then on.
    await upload(token, [pass("applies a coupon"), pass("adds an item"), pass("pays")], { commit_sha: "1".repeat(40), build_id: "1" });
    await upload(token, [fail("applies a coupon", 900), pass("adds an item"), pass("pays")], { commit_sha: "1".repeat(40), build_id: "2" });
    // Build 3 fails only by the flaky test (12 s), `pays` passes after an 8 s failed try; build 4 re-runs it (95 s).
    const retried: Case = { ...pass("pays"), attempts: [{ status: "failed", duration_ms: 8_000 }] };
    await upload(token, [fail("applies a coupon", 12_000), pass("adds an item"), retried], {
      commit_sha: "2".repeat(40),
      build_id: "3",
      duration_ms: 90_000,
    });
    await upload(token, [pass("applies a coupon"), pass("adds an item"), pass("pays")], {
      commit_sha: "2".repeat(40),
      build_id: "4",
      duration_ms: 95_000,
    });

    // Quarantined on its page, `adds an item` fails for 5 s.
    await page.goto(projectUrl);
    await page.goto(`${projectUrl}/tests`);
    await page.getByRole("link", { name: "adds an item" }).click();
    await page.getByLabel("Reason").fill("known to flake on CI");
    await page.getByRole("button", { name: "Quarantine" }).click();
    await page.getByText("The test is quarantined.").waitFor();
    await upload(token, [pass("applies a coupon"), fail("adds an item", 5_000), pass("pays")], {
      commit_sha: "3".repeat(40),
      build_id: "5",
    });

    await page.goto(projectUrl);
    // 8 s + 12 s + 5 s + 95 s.
    expect(await figureValue(page)).toBe("2 min 00 s");
    const section = page.locator('section[aria-labelledby="cost-heading"]');
    expect(await section.locator("p").first().textContent()).toContain(
      "retries that then passed 8.00 s, failures of flaky tests 12.0 s, of quarantined tests 5.00 s, 1 re-run 1 min 35 s.",
    );
    expect(await section.locator("ol li").allTextContents()).toEqual([
      expect.stringMatching(/^applies a coupon CartTest · 12\.0 s · 10\.0 % of the total$/),
      expect.stringMatching(/^pays CartTest · 8\.00 s · 6\.7 % of the total$/),
      expect.stringMatching(/^adds an item CartTest · 5\.00 s · 4\.2 % of the total$/),
    ]);
    await expectAccessible(page);
    await page.screenshot({ path: `${SHOTS}/cost-overview.png`, fullPage: true });
    await page.screenshot({ path: `${SHOTS}/cost-overview-figures.png` });
    await section.screenshot({ path: `${SHOTS}/cost-overview-section.png` });
    // At 375 px the section fits: no sideways scroll (the API path and tests' names wrap).
    await page.setViewportSize({ width: 375, height: 800 });
    const widths = (await page.evaluate("[document.documentElement.clientWidth, document.documentElement.scrollWidth]")) as [
      number,
      number,
    ];
    expect(widths[1]).toBeLessThanOrEqual(widths[0]);
    await section.screenshot({ path: `${SHOTS}/cost-overview-375.png` });
    await page.setViewportSize({ width: 1280, height: 900 });

    await section.getByRole("link", { name: "applies a coupon" }).click();
    await page.waitForURL(/\/tests\/[0-9a-f-]{36}$/);
    const cost = page.locator('section[aria-labelledby="cost"]');
    expect(await cost.locator("p").first().textContent()).toMatch(
      /^12\.0 s of test time from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d \(UTC\): 10 % of the project's 2 min 00 s\./,
    );
    expect(await page.getByRole("img", { name: /Cost of flakiness per day/ }).count()).toBe(1);
    await expectAccessible(page);
    await cost.screenshot({ path: `${SHOTS}/cost-test.png` });
  });
});
