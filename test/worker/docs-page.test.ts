/**
 * `/docs` on the Worker: the page comes from the app (with its Content-Security-Policy), its
 * scripts from the Worker's static assets (wrangler.toml `[assets]`, public/), the document it
 * reads is readable cross-origin. The page itself is tested in a browser on Node
 * (test/routes/docs-page.browser.test.ts).
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("/docs on the Worker", () => {
  it("serves the page, its scripts and a cross-origin readable document, without a key", async () => {
    const page = await SELF.fetch("http://worker.test/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self';/);
    const html = await page.text();
    expect(html).toContain('<script src="/assets/vendor/scalar/api-reference.js"></script>');
    expect(html).not.toMatch(/<script>(?!<)/);

    for (const path of ["/assets/docs.js", "/assets/vendor/scalar/api-reference.js"]) {
      const asset = await SELF.fetch(`http://worker.test${path}`);
      expect(asset.status, `${path}: ${asset.status} ${asset.status === 200 ? "" : await asset.clone().text()}`).toBe(200);
      expect(asset.headers.get("content-type"), path).toMatch(/javascript/);
      await asset.arrayBuffer();
    }
    const document = await SELF.fetch("http://worker.test/api/v1/openapi.json", { headers: { origin: "https://viewer.example" } });
    expect(document.status).toBe(200);
    expect(document.headers.get("access-control-allow-origin")).toBe("*");
    await document.arrayBuffer();
  });
});
