/**
 * Every page an API `url` field names, rendered by the Worker (SELF.fetch → the Worker's app → the
 * Neon driver) for data uploaded through the Worker's upload API and processed by its queue: the
 * check of test/support/url-fields.ts, as on Node (test/web/url-fields.test.ts). Then the project's
 * other pages (runs, tests, settings) and the alerts list, which no url field names.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness } from "./support/harness";
import { WebClient } from "../support/web-client";
import { checkEveryUrlField } from "../support/url-fields";

let h: Awaited<ReturnType<typeof createHarness>>;
let checked: Awaited<ReturnType<typeof checkEveryUrlField>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe("the web app's pages on the Worker", () => {
  it("every url field of the API: 200 with the entity for the organization's admin and member, sign-in for a visitor, 404 for another organization", async () => {
    checked = await checkEveryUrlField(h);
    expect(checked.urls.length).toBeGreaterThan(10);
  });

  it("the project's runs, tests and settings pages and the alerts list", async () => {
    const f = checked.fixture;
    const p = f.project.id;
    const pages: [string, string[]][] = [
      [`/projects/${p}/runs`, ["<h1>Test runs</h1>", `href="/projects/${p}/runs/2"`, `href="/projects/${p}/runs/1"`]],
      [`/projects/${p}/runs?result=tests_passed`, [`href="/projects/${p}/runs/1"`]],
      [`/projects/${p}/tests`, ["<h1>Tests</h1>", "pays", "refunds", "adds to cart"]],
      [`/projects/${p}/tests?health=healthy&q=pays`, ["pays"]],
      [`/projects/${p}/settings`, ["Url Fields Shop", "Where every url field leads"]],
    ];
    const signedOut = new WebClient(h.app);
    for (const [path, texts] of pages) {
      for (const person of [f.admin, f.member]) {
        const page = await person.get(path);
        expect(page.status, path).toBe(200);
        for (const text of texts) expect(page.text, path).toContain(text);
      }
      const visitor = await signedOut.get(path);
      expect(visitor.status, path).toBe(302);
      expect(visitor.location, path).toBe(`/sign-in?next=${encodeURIComponent(path)}`);
      expect((await f.stranger.get(path)).status, path).toBe(404);
    }
    const passedOnly = await f.admin.get(`/projects/${p}/runs?result=tests_passed`);
    expect(passedOnly.text).not.toContain(`href="/projects/${p}/runs/2"`);

    // The alerts list is the signed-in person's organization's: the stranger's has none of ours.
    const alerts = await f.member.get("/alerts?status=all");
    expect(alerts.status).toBe(200);
    for (const name of ["Flaky tests", "Performance regression", "Failure rate spike", "Skipped test count creep"])
      expect(alerts.text).toContain(name);
    const theirs = await f.stranger.get("/alerts?status=all");
    expect(theirs.status).toBe(200);
    expect(theirs.text).not.toContain("Url Fields Shop");
    expect(alerts.text).toContain("Url Fields Shop");
    expect((await signedOut.get("/alerts")).status).toBe(302);
  });
});
