/**
 * The run, test and alert pages' security (Node, in process): sign-in required, other
 * organizations' resources are the same 404 as missing ones (posts included), a member's forged
 * admin post is refused with 403, cross-site posts are refused, every page carries the security
 * headers, and script payloads from uploads (test names, failure messages, run metadata) are text.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness } from "../support/harness";
import { SCRIPT_PAYLOAD, resultPagesFixture } from "../support/result-pages-fixtures";
import { WebClient } from "../support/web-client";

let h: Awaited<ReturnType<typeof createHarness>>;
let f: Awaited<ReturnType<typeof resultPagesFixture>>;
beforeAll(async () => {
  h = await createHarness();
  f = await resultPagesFixture(h, SCRIPT_PAYLOAD);
});
afterAll(async () => h?.close());

const pages = () => [
  `/projects/${f.project.id}/runs`,
  `/projects/${f.project.id}/runs/2`,
  `/projects/${f.project.id}/tests`,
  `/projects/${f.project.id}/tests/${f.renderTestId}`,
  `/alerts/${f.alertIds.test_flakiness}`,
];

const alertRow = (id: string) => h.db.query.alerts.findFirst({ where: (a, { eq }) => eq(a.id, id) });

describe("who may see and do what", () => {
  it("a signed-out visit to any of the pages redirects to sign-in and back", async () => {
    for (const path of [...pages(), "/alerts", "/alerts?status=all"]) {
      const answer = await new WebClient(h.app).get(path);
      expect(answer.status, path).toBe(302);
      expect(answer.location).toBe(`/sign-in?next=${encodeURIComponent(path)}`);
    }
    const post = await new WebClient(h.app).post(`/alerts/${f.alertIds.test_flakiness}/snooze`, { duration: "1h" });
    expect(post.status).toBe(302);
    expect((await alertRow(f.alertIds.test_flakiness!))!.snoozedUntil).toBeNull();
  });

  it("a person of another organization gets the same 404 page as for a missing id, byte for byte", async () => {
    const missing = await f.stranger.get("/alerts/00000000-0000-4000-8000-000000000000");
    expect(missing.status).toBe(404);
    for (const path of pages()) {
      const answer = await f.stranger.get(path);
      expect(answer.status, path).toBe(404);
      expect(answer.text, path).toBe(missing.text);
    }
    // /alerts shows the stranger's own organization, not this one's alerts.
    const list = await f.stranger.get("/alerts?status=all");
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(f.alertIds.test_flakiness);
  });

  it("a person of another organization cannot snooze, disable or quarantine: 404, nothing changes", async () => {
    const id = f.alertIds.test_flakiness!;
    for (const action of ["snooze", "unsnooze", "disable", "enable"]) {
      expect((await f.stranger.post(`/alerts/${id}/${action}`, { duration: "1h" })).status, action).toBe(404);
    }
    expect(
      (await f.stranger.post(`/projects/${f.project.id}/tests/${f.paysTestId}/quarantine`, { reason: "mine", duration: "1d" })).status,
    ).toBe(404);
    const alert = await alertRow(id);
    expect(alert!.snoozedUntil).toBeNull();
    expect(alert!.active).toBe(true);
    const test = await h.db.query.tests.findFirst({ where: (t, { eq }) => eq(t.id, f.paysTestId) });
    expect(test!.quarantineExpiresAt).toBeNull();
  });

  it("a member's forged enable or disable is refused with 403 and changes nothing; an admin's goes through", async () => {
    const id = f.alertIds.failure_rate_spike!;
    const forged = await f.member.post(`/alerts/${id}/disable`, {});
    expect(forged.status).toBe(403);
    expect(forged.text).toContain("Only an admin of the organization can enable or disable alerts.");
    expect((await alertRow(id))!.active).toBe(true);

    expect((await f.admin.post(`/alerts/${id}/disable`, {})).status).toBe(303);
    expect((await f.member.post(`/alerts/${id}/enable`, {})).status).toBe(403);
    expect((await alertRow(id))!.active).toBe(false);
    expect((await f.admin.post(`/alerts/${id}/enable`, {})).status).toBe(303);
    expect((await alertRow(id))!.active).toBe(true);
  });

  it("cross-site posts are refused (403) and change nothing", async () => {
    const id = f.alertIds.skipped_test_count_creep!;
    const refusedHeaders: Record<string, string>[] = [{ origin: "https://evil.example" }, {}, { "sec-fetch-site": "cross-site" }];
    for (const headers of refusedHeaders) {
      expect((await f.admin.post(`/alerts/${id}/snooze`, { duration: "1w" }, headers)).status).toBe(403);
      expect((await f.admin.post(`/alerts/${id}/disable`, {}, headers)).status).toBe(403);
      expect(
        (await f.admin.post(`/projects/${f.project.id}/tests/${f.paysTestId}/quarantine`, { reason: "x", duration: "1d" }, headers)).status,
      ).toBe(403);
    }
    const alert = await alertRow(id);
    expect(alert!.snoozedUntil).toBeNull();
    expect(alert!.active).toBe(true);
  });
});

describe("every page", () => {
  it("carries the pages' security headers and no script", async () => {
    for (const path of [...pages(), "/alerts"]) {
      const answer = await f.admin.get(path);
      expect(answer.status, path).toBe(200);
      const csp = answer.headers.get("content-security-policy")!;
      expect(csp, path).toMatch(/script-src 'nonce-[^']+'/);
      expect(csp).not.toContain("unsafe-inline");
      expect(answer.headers.get("x-frame-options")).toBe("DENY");
      expect(answer.headers.get("cache-control")).toBe("no-store");
      expect(answer.text).not.toMatch(/<script/i);
    }
  });

  it("shows script payloads from a test name, a failure message and a run's metadata as text", async () => {
    const escaped = "&lt;script&gt;window.__pwned = 1&lt;/script&gt;";
    const expectations: Record<string, string[]> = {
      [`/projects/${f.project.id}/runs`]: ["Shop "],
      // Test name, failure message and trace, build id, tags, the build URL that is not a link.
      [`/projects/${f.project.id}/runs/2`]: ["renders ", "expected title ", "build ", "nightly ", "javascript:alert(1)//"],
      [`/projects/${f.project.id}/tests`]: ["renders "],
      [`/projects/${f.project.id}/tests/${f.renderTestId}`]: ["renders ", "expected title "],
      [`/alerts/${f.alertIds.test_flakiness}`]: ["renders "],
      [`/alerts`]: ["Shop "],
    };
    for (const [path, prefixes] of Object.entries(expectations)) {
      const answer = await f.admin.get(path);
      expect(answer.status, path).toBe(200);
      expect(answer.text, path).not.toContain("<script>window.__pwned");
      expect(answer.text, path).not.toContain("<img src=x");
      for (const prefix of prefixes) expect(answer.text, `${path}: ${prefix}`).toContain(`${prefix}${escaped}`);
    }
    const run = await f.admin.get(`/projects/${f.project.id}/runs/2`);
    expect(run.text).not.toMatch(/href="javascript:/i);
  });
});
