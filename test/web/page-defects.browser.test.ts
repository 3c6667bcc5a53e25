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

beforeAll(async () => {
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess({ DATABASE_URL: database.url, SEED_DEMO: "true" }, { startTimeoutMs: 180_000 });
  await server.until(() => /demo-member@example\.com {2}password: \S+\n/.test(server.output()), 120_000, 100);
  browser = await launchChromium();
  const apiKey = /Bearer (cta_[0-9A-Za-z]+)/.exec(server.output())![1]!;
  const projects = await server.call("GET", "/api/v1/projects", apiKey);
  projectId = projects.body.data.find((p: { name: string }) => p.name === "checkout-service").id;
}, 360_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
});

async function signedInAdmin(viewport = { width: 1280, height: 900 }): Promise<Page> {
  const password = /demo-admin@example\.com {2}password: (\S+)/.exec(server.output())![1]!;
  const page = await (await browser.newContext({ viewport })).newPage();
  await page.goto(`${server.base}/sign-in`);
  await page.getByLabel("E-mail").fill("demo-admin@example.com");
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${server.base}/`);
  return page;
}

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
});
