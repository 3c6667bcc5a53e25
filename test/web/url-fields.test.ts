/**
 * The web app's "done when" on Node (the app in process): every url field of the API opens its
 * page for the organization's admin and member, sends a visitor to sign-in and is a 404 for
 * another organization. The same check runs in workerd (test/worker/pages.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness } from "../support/harness";
import { checkEveryUrlField } from "../support/url-fields";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

describe("the API's url fields", () => {
  it("each opens its page for a member, sends a visitor to sign-in and is a 404 for another organization", async () => {
    const { urls } = await checkEveryUrlField(h);
    expect(urls.length).toBeGreaterThan(10);
  });
});
