/**
 * The pages' defects of issue 30 in Chromium, against `npm start`'s server process with its demo
 * (PGlite, or Postgres in CI's second pass): what only a browser can tell (computed styles, layout
 * width, the text as laid out), on the demo's project and on an empty project of the demo admin's.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyServerDatabase, launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";

let server: ServerProcess;
let browser: Browser;
let dropDatabase: () => Promise<void> = async () => {};
let projectId: string;
let emptyProjectId: string;

const ADMIN_TOKEN = "page-defects-admin-token-0123456789";

beforeAll(async () => {
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess({ DATABASE_URL: database.url, SEED_DEMO: "true", ADMIN_TOKEN }, { startTimeoutMs: 300_000 });
  await server.until(() => /demo-member@example\.com {2}password: \S+\n/.test(server.output()), 300_000, 100);
  browser = await launchChromium();
  const apiKey = /Bearer (cta_[0-9A-Za-z]+)/.exec(server.output())![1]!;
  const projects = await server.call("GET", "/api/v1/projects", apiKey);
  projectId = projects.body.data.find((p: { name: string }) => p.name === "checkout-service").id;
  const organization = await server.call("GET", "/api/v1/organization", apiKey);
  const created = await server.call(
    "POST",
    `/admin/v1/organizations/${organization.body.id}/projects`,
    ADMIN_TOKEN,
    JSON.stringify({ name: "empty-project" }),
    { "content-type": "application/json" },
  );
  if (created.status !== 201) throw new Error(`project: ${created.status} ${JSON.stringify(created.body)}`);
  emptyProjectId = created.body.project?.id ?? created.body.id;
}, 660_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
});

/** `base`: where the browser opens the pages (the server's `http://localhost:PORT`, or its 127.0.0.1 spelling). */
async function signedInAdmin(viewport = { width: 1280, height: 900 }, base = server.base): Promise<Page> {
  const password = /demo-admin@example\.com {2}password: (\S+)/.exec(server.output())![1]!;
  const page = await (await browser.newContext({ viewport })).newPage();
  await page.goto(`${base}/sign-in`);
  await page.getByLabel("E-mail").fill("demo-admin@example.com");
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${base}/`);
  return page;
}

const pageWidth = (page: Page) => page.locator("html").evaluate((html) => html.scrollWidth);

describe("the pages' defects in Chromium", () => {
  it("the run-duration chart draws its p50 and p95 as lines, not filled shapes", async () => {
    const page = await signedInAdmin();
    await page.goto(`${server.base}/projects/${projectId}`);
    const lines = page.locator("#run-duration-caption ~ svg path.chart-line");
    expect(await lines.count()).toBe(2);
    for (const line of await lines.all()) {
      const style = await line.evaluate((element) => {
        const computed = element.ownerDocument.defaultView!.getComputedStyle(element);
        return { fill: computed.fill, stroke: computed.stroke };
      });
      expect(style.fill).toBe("none");
      expect(style.stroke).not.toBe("none");
    }
    await page.context().close();
  });

  it("an empty project's overview says what it lacks: no axes scaled to nothing, no 0.0 %", async () => {
    const page = await signedInAdmin();
    await page.goto(`${server.base}/projects/${emptyProjectId}`);
    expect(await page.locator("figure.chart svg").count()).toBe(0);
    for (const text of ["No runs in the last 30 days.", "No run durations in the last 30 days.", "No flaky tests in the last 30 days."])
      expect(await page.getByText(text).isVisible()).toBe(true);
    const body = await page.locator("main").innerText();
    expect(body).not.toMatch(/0\.0 %|0\.50|\b1 ms\b/);
    expect(await page.locator(".figure", { hasText: "Pass rate" }).locator(".figure-value").innerText()).toBe("No runs");
    await page.context().close();
  });

  it("the runs and tests pages show the project's tab bar, their tab current", async () => {
    const page = await signedInAdmin();
    for (const [path, tab] of [
      ["runs", "Runs"],
      ["tests", "Tests"],
    ] as const) {
      await page.goto(`${server.base}/projects/${projectId}/${path}`);
      const tabs = page.getByRole("navigation", { name: "Project" });
      expect(await tabs.isVisible()).toBe(true);
      expect(await tabs.getByRole("link").allInnerTexts()).toEqual(["Overview", "Runs", "Tests", "Settings"]);
      expect(await tabs.locator('[aria-current="page"]').innerText()).toBe(tab);
    }
    await page.context().close();
  });

  it("an unknown URL opened in the browser is the HTML 404 page", async () => {
    const page = await signedInAdmin();
    const answer = await page.goto(`${server.base}/no/such/page`);
    expect(answer!.status()).toBe(404);
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Not found");
    expect(await page.getByRole("link", { name: "Back to your projects" }).isVisible()).toBe(true);
    await page.context().close();
  });

  it("signing in at 127.0.0.1 works as at localhost (WEB_APP_URL unset)", async () => {
    const loopback = server.base.replace("//localhost:", "//127.0.0.1:");
    expect(loopback).not.toBe(server.base);
    const page = await signedInAdmin(undefined, loopback);
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Projects");
    await page.context().close();
  });

  it("at 375 px the tests, runs and overview pages do not scroll sideways; numeric cells keep their figure and unit on one line", async () => {
    const page = await signedInAdmin({ width: 375, height: 800 });
    for (const path of [
      `/projects/${projectId}/tests`,
      `/projects/${projectId}/runs`,
      `/projects/${projectId}`,
      `/projects/${emptyProjectId}`,
    ]) {
      await page.goto(`${server.base}${path}`);
      expect(await pageWidth(page), path).toBeLessThanOrEqual(375);
    }
    await page.goto(`${server.base}/projects/${projectId}/tests`);
    const cells = page.locator("td.num");
    expect(await cells.count()).toBeGreaterThan(0);
    for (const cell of (await cells.all()).slice(0, 20)) {
      const { whiteSpace, lines } = await cell.evaluate((element) => {
        const range = element.ownerDocument.createRange();
        range.selectNodeContents(element);
        const tops = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
        return { whiteSpace: element.ownerDocument.defaultView!.getComputedStyle(element).whiteSpace, lines: tops.size };
      });
      expect(whiteSpace).toBe("nowrap");
      expect(lines).toBeLessThanOrEqual(1);
    }
    await page.context().close();
  });
});
