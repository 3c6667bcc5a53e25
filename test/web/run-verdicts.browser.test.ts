/**
 * In Chromium, against `npm start`'s server process on a database of its own (PGlite, or Postgres
 * in CI's second pass), without the demo: a person signs up, creates a project, and its runs are
 * uploaded through the upload API: a main run, then (after a test is quarantined from its page) a
 * feature-branch run naming main's commit as its base. From the runs list, one click on the
 * branch's latest run opens its page, whose failures are grouped by verdict in the order new,
 * failing on base, flaky, quarantined, then fixed, above the failures by cause. At 375 px wide
 * neither page scrolls sideways; axe finds nothing serious; no script from a test name runs.
 * Screenshots: /tmp/shots/runpage-*.png (1280 and 375 px wide).
 */
import { mkdirSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeViolations, seriousViolations } from "../support/axe";
import { emptyServerDatabase, launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const PAYLOAD = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;
const SHOTS = "/tmp/shots";
const MAIN = "28335f0".padEnd(40, "a");

let server: ServerProcess;
let browser: Browser;
let dropDatabase: () => Promise<void> = async () => {};

beforeAll(async () => {
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess({ DATABASE_URL: database.url }, { startTimeoutMs: 120_000 });
  browser = await launchChromium();
  mkdirSync(SHOTS, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
});

async function expectAccessible(page: Page) {
  const violations = await seriousViolations(page);
  expect(violations, `${page.url()}\n${describeViolations(violations)}`).toEqual([]);
}

/** Signs up (the confirmation link is on the page: no mail transport) and creates a project; its upload token. */
async function signUpWithProject(page: Page): Promise<{ projectPath: string; token: string }> {
  await page.goto(`${server.base}/sign-up`);
  await page.getByLabel("Your name").fill("Vera Verdict");
  await page.getByLabel("E-mail").fill("vera@example.com");
  await page.getByLabel("Password").fill("browser test password");
  await page.getByLabel("Organization name").fill("Verdict Org");
  await page.getByRole("button", { name: "Create organization" }).click();
  await page.waitForURL(`${server.base}/sign-up/sent`);
  await page.getByTestId("confirmation-link").click();
  await page.getByRole("button", { name: "Confirm and create" }).click();
  await page.waitForURL(`${server.base}/`);
  await page.goto(`${server.base}/projects/new`);
  await page.getByLabel("Name").fill("Shop");
  await page.getByRole("button", { name: "Create project" }).click();
  const token = await page.locator("#upload-token").inputValue();
  await page.getByRole("link", { name: "Open the project" }).click();
  await page.waitForURL(/\/projects\/[0-9a-f-]{36}$/);
  return { projectPath: new URL(page.url()).pathname, token };
}

type Case = { name: string; status: "passed" | "failed"; failure_message?: string; attempts?: { status: "failed" }[] };
const pass = (name: string): Case => ({ name, status: "passed" });
const fail = (name: string, failure_message = `expected ${name} to work`): Case => ({ name, status: "failed", failure_message });

/** Uploads a run (the JSON envelope) and waits until it is processed; its number. */
async function upload(token: string, meta: Record<string, string>, cases: Case[]): Promise<number> {
  const body = JSON.stringify({ ...meta, suites: [{ name: "shop", cases: cases.map((c) => ({ classname: "Shop", ...c })) }] });
  const res = await server.call("POST", "/uploads/v1/test_runs", token, body, { "content-type": "application/json" });
  if (res.status !== 202) throw new Error(`upload: ${res.status} ${JSON.stringify(res.body)}`);
  const number = res.body.number as number;
  await server.until(
    async () => (await server.call("GET", `/uploads/v1/test_runs/${number}`, token)).body.status === "processed",
    60_000,
    100,
  );
  return number;
}

/** Whether the page scrolls sideways at its width, and the new parts that stick out of it. */
async function overflow(page: Page) {
  const width = (await page.evaluate("document.documentElement.clientWidth")) as number;
  const scrollWidth = (await page.evaluate("document.documentElement.scrollWidth")) as number;
  const outside: string[] = [];
  for (const element of await page.locator(".verdict-group, .verdict-counts, ul.branch-runs > li, .verdict-list > li").all()) {
    const box = await element.boundingBox();
    if (box && box.x + box.width > width + 0.5) outside.push((await element.getAttribute("class")) ?? "li");
  }
  return { scrolls: scrollWidth > width, outside };
}

describe("a run's page by verdict in Chromium", () => {
  it("one click from the runs list to the branch's latest run; groups in order; fits 375 px; axe finds nothing serious", async () => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on("dialog", (dialog) => {
      throw new Error(`a dialog opened: ${dialog.message()}`);
    });
    const { projectPath, token } = await signUpWithProject(page);

    await upload(token, { branch: "main", commit_sha: MAIN }, [
      pass("adds to cart"),
      fail("pays"),
      fail("refunds"),
      pass(`renders ${PAYLOAD}`),
      pass("retries"),
      pass("boxed"),
    ]);
    // Quarantine `boxed` from its page.
    await page.goto(`${server.base}${projectPath}/tests`);
    await page.getByRole("link", { name: "boxed", exact: true }).click();
    await page.getByLabel("Reason").fill("Boxed in by a slow runner");
    await page.getByLabel("For").selectOption("14d");
    await page.getByRole("button", { name: "Quarantine", exact: true }).click();
    await page.waitForURL(/\?done=quarantined$/);

    const feature = await upload(token, { branch: "feature/checkout", commit_sha: "f".repeat(40), base_commit_sha: MAIN.slice(0, 7) }, [
      pass("adds to cart"),
      fail("pays"),
      pass("refunds"),
      fail(`renders ${PAYLOAD}`, `expected title ${PAYLOAD}`),
      fail("brand new"),
      { name: "retries", status: "passed", attempts: [{ status: "failed" }] },
      fail("boxed"),
    ]);
    await upload(token, { branch: "main", commit_sha: "b".repeat(40) }, [pass("adds to cart"), pass("pays")]);

    // The runs list: the branch's latest run, its verdict counts, one click.
    await page.goto(`${server.base}${projectPath}/runs`);
    const branch = page.locator("ul.branch-runs > li", { hasText: "feature/checkout" });
    expect(await branch.locator(".verdict-counts").textContent()).toBe("2 new1 failing on base1 flaky1 quarantined");
    await expectAccessible(page);
    await page.screenshot({ path: `${SHOTS}/runpage-runs-1280.png`, fullPage: true });
    await branch.getByRole("link", { name: `Run #${feature}` }).click();
    await page.waitForURL(`${server.base}${projectPath}/runs/${feature}`);

    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(`Run #${feature}`);
    const groups = page.locator("section.verdict-group h3");
    expect(await groups.allTextContents()).toEqual(["New (2)", "Failing on base (1)", "Flaky (1)", "Quarantined (1)", "Fixed (1)"]);
    const headings = await page.getByRole("heading", { level: 2 }).allTextContents();
    expect(headings.indexOf("Failures by verdict")).toBeLessThan(headings.indexOf("Failures by cause"));
    expect(await page.locator("section.verdict-group.verdict-failing_on_base .reason").textContent()).toBe(
      "Why: also failed on main in run #1 (28335f0) · trace",
    );
    expect(await page.getByText("Compared with").textContent()).toContain("the default branch's run of the base commit the upload named");
    // The test's name is text: no script ran.
    expect(
      await page
        .locator("section.verdict-group.verdict-new")
        .getByRole("link", { name: `renders ${PAYLOAD}` })
        .count(),
    ).toBe(1);
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    await expectAccessible(page);
    await page.screenshot({ path: `${SHOTS}/runpage-run-1280.png`, fullPage: true });

    // The reason's trace link goes down to the failure by cause.
    await page.locator("section.verdict-group.verdict-failing_on_base").getByRole("link", { name: "trace" }).click();
    expect(page.url()).toMatch(/#case-\d+$/);

    await page.setViewportSize({ width: 375, height: 812 });
    await page.goto(`${server.base}${projectPath}/runs/${feature}`);
    expect(await overflow(page)).toEqual({ scrolls: false, outside: [] });
    await page.screenshot({ path: `${SHOTS}/runpage-run-375.png`, fullPage: true });
    await page.goto(`${server.base}${projectPath}/runs`);
    expect(await overflow(page)).toEqual({ scrolls: false, outside: [] });
    await page.screenshot({ path: `${SHOTS}/runpage-runs-375.png`, fullPage: true });
    await page.context().close();
  }, 180_000);
});
