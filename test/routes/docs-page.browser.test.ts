/**
 * `/docs` in a real browser against the real server: the API reference renders the operations of
 * /api/v1 and of the upload interface from the service's own OpenAPI document, and no request
 * leaves the service's origin while the page loads (no CDN, fonts or telemetry), with no
 * Content-Security-Policy violation.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";

let server: ServerProcess;
let browser: Browser;

beforeAll(async () => {
  [server, browser] = await Promise.all([startServerProcess({ DATABASE_URL: "memory://" }), launchChromium()]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe("/docs", () => {
  it("renders the reference of both interfaces from this origin alone", async () => {
    const page = await browser.newPage();
    const requested: string[] = [];
    const violations: string[] = [];
    page.on("request", (request) => requested.push(request.url()));
    page.on("console", (message) => {
      if (/Content.Security.Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });
    const response = await page.goto(`${server.base}/docs`);
    expect(response?.status()).toBe(200);
    // An operation of /api/v1, and one of the upload interface once its group is opened.
    // Runs in the page: its `document`, not a Node global.
    const shown = (text: string) =>
      page.waitForFunction(
        (wanted) =>
          (globalThis as unknown as { document: { body: { textContent: string | null } } }).document.body.textContent?.includes(wanted),
        text,
        { timeout: 30_000 },
      );
    await shown("Get the organization the API key belongs to");
    await page.getByRole("button", { name: "Open Group - Uploads" }).first().click();
    await shown("Upload a test report; it becomes a test run");
    expect(await page.getByText("Ask AI").count()).toBe(0);
    // Scalar keeps a connection of its own open, so "network idle" never comes: give late requests
    // (fonts, telemetry) a moment to show up instead.
    await page.waitForTimeout(1_500);

    const origin = new URL(server.base).origin;
    const elsewhere = requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith("data:") && !url.startsWith("blob:"));
    expect(elsewhere).toEqual([]);
    expect(requested).toContain(`${origin}/api/v1/openapi.json`);
    expect(violations).toEqual([]);
    await page.close();
  }, 90_000);

  it("is public, and the OpenAPI document is readable from any origin (that document only)", async () => {
    const docs = await fetch(`${server.base}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-security-policy")).toMatch(/script-src 'self'(;|$)/);
    const document = await fetch(`${server.base}/api/v1/openapi.json`, { headers: { origin: "https://viewer.example" } });
    expect(document.headers.get("access-control-allow-origin")).toBe("*");
    const projects = await fetch(`${server.base}/api/v1/projects`, { headers: { origin: "https://viewer.example" } });
    expect(projects.status).toBe(401);
    expect(projects.headers.get("access-control-allow-origin")).toBeNull();
    const asset = await fetch(`${server.base}/assets/vendor/scalar/api-reference.js`, { headers: { "accept-encoding": "gzip" } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toMatch(/javascript/);
    expect(asset.headers.get("content-encoding")).toBe("gzip");
    const missing = await fetch(`${server.base}/assets/nope.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });
});
