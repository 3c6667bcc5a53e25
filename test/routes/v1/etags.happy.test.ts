/**
 * Conditional GETs on /api/v1 (docs/conditional-requests.md), happy paths: every GET answers with
 * an ETag, If-None-Match with the current tag (alone, in a list, weak, or `*`) gets a 304 with no
 * body, and each kind of change (run processing, PATCH, snooze, quarantine, an alert event, the
 * passing of a snooze's or quarantine's end, a write straight to the database) changes the tag
 * of every GET that shows it. Refusals: etags.errors.test.ts; organizations apart: etags.security.test.ts.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";
import { ETAG, conditionalGet, etagFixture, everyGet, expectChanged, expectUnchanged, processRun, tagsOf } from "./etags.support";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

describe("every GET of /api/v1", () => {
  it("answers 200 with a strong ETag, Cache-Control private, no-cache, and the same tag while nothing changes", async () => {
    const f = await etagFixture(h);
    for (const path of everyGet(f)) {
      const first = await conditionalGet(h, path, f.apiKey);
      expect(first.status, `${path}: ${first.text}`).toBe(200);
      expect(first.headers.get("etag"), path).toMatch(ETAG);
      expect(first.headers.get("cache-control"), path).toBe("private, no-cache");
      expect(first.headers.get("vary"), path).toContain("Authorization");
      const again = await conditionalGet(h, path, f.apiKey);
      expect(again.headers.get("etag"), path).toBe(first.headers.get("etag"));
      expect(again.text, path).toBe(first.text);
    }
  });

  it("answers 304 with no body, the ETag, the RateLimit headers and a Request-Id when If-None-Match names the current tag", async () => {
    const f = await etagFixture(h);
    const tags = await tagsOf(h, everyGet(f), f.apiKey);
    for (const [path, etag] of tags) {
      const res = await conditionalGet(h, path, f.apiKey, etag);
      expect(res.status, path).toBe(304);
      expect(res.text, path).toBe("");
      expect(res.headers.get("etag"), path).toBe(etag);
      expect(res.headers.get("content-type"), path).toBeNull();
      expect(res.headers.get("cache-control"), path).toBe("private, no-cache");
      expect(res.headers.get("ratelimit"), path).toMatch(/^"default";r=\d+;t=\d+$/);
      expect(res.headers.get("ratelimit-policy"), path).toBe('"default";q=600;w=60');
      expect(res.headers.get("request-id"), path).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("compares weakly, reads lists of tags, and takes `*` as any current representation", async () => {
    const f = await etagFixture(h);
    const path = "/projects";
    const etag = (await tagsOf(h, [path], f.apiKey)).get(path)!;
    for (const field of [`W/${etag}`, `"other", ${etag}`, `"a",W/"b" ,  W/${etag}`, "*"]) {
      const res = await conditionalGet(h, path, f.apiKey, field);
      expect(res.status, field).toBe(304);
      expect(res.headers.get("etag"), field).toBe(etag);
    }
    expect((await conditionalGet(h, path, f.apiKey, `"other", W/"another"`)).status).toBe(200);
  });

  it("HEAD answers like GET: the ETag, and a 304 to the current tag", async () => {
    const f = await etagFixture(h);
    const head = await h.call("HEAD", "/api/v1/projects", { key: f.apiKey });
    expect(head.status).toBe(200);
    const etag = head.headers.get("etag");
    expect(etag).toMatch(ETAG);
    expect((await h.call("HEAD", "/api/v1/projects", { key: f.apiKey, headers: { "if-none-match": etag! } })).status).toBe(304);
  });

  it("a 304 counts toward the rate limit like any request", async () => {
    const f = await etagFixture(h);
    const remaining = (res: { headers: Headers }) => Number(/r=(\d+)/.exec(res.headers.get("ratelimit")!)![1]);
    const ok = await conditionalGet(h, "/projects", f.apiKey);
    const notModified = await conditionalGet(h, "/projects", f.apiKey, ok.headers.get("etag")!);
    expect(notModified.status).toBe(304);
    expect(remaining(notModified)).toBe(remaining(ok) - 1);
  });
});

describe("the tags change when what the GET shows changes", () => {
  it("run processing: the project, its runs, tests, executions and failure groups", async () => {
    const f = await etagFixture(h);
    const paths = everyGet(f).filter((path) => !path.startsWith("/alerts") && path !== "/organization");
    const tags = await tagsOf(h, paths, f.apiKey);
    await expectUnchanged(h, tags, f.apiKey);
    await processRun(h, f.projectId);
    await expectChanged(h, tags, f.apiKey);
  });

  it("PATCH /projects/:id: the project and the list", async () => {
    const f = await etagFixture(h);
    const tags = await tagsOf(h, ["/projects", `/projects/${f.projectId}`], f.apiKey);
    expect((await h.patch(`/api/v1/projects/${f.projectId}`, f.apiKey, { description: "changed" })).status).toBe(200);
    await expectChanged(h, tags, f.apiKey);
  });

  it("snooze, and the snooze's end by the passing of time alone: the alert and the lists", async () => {
    const f = await etagFixture(h);
    const paths = [`/alerts/${f.alertId}`, "/alerts", "/alerts?status=snoozed", "/alerts?status=all"];
    const before = await tagsOf(h, paths, f.apiKey);
    expect((await h.post(`/api/v1/alerts/${f.alertId}/snooze`, f.apiKey, { duration: "1h" })).status).toBe(200);
    await expectChanged(h, before, f.apiKey);

    const snoozed = await tagsOf(h, paths, f.apiKey);
    h.clock.advance(30 * 60_000);
    await expectUnchanged(h, snoozed, f.apiKey);
    h.clock.advance(30 * 60_000);
    await expectChanged(h, snoozed, f.apiKey);
    expect((await conditionalGet(h, `/alerts/${f.alertId}`, f.apiKey)).body.snoozed).toBe(false);
  });

  it("unsnooze, disable and enable: the alert and the lists", async () => {
    const f = await etagFixture(h);
    const paths = [`/alerts/${f.alertId}`, "/alerts?status=all"];
    for (const action of ["disable", "enable"]) {
      const tags = await tagsOf(h, paths, f.apiKey);
      expect((await h.post(`/api/v1/alerts/${f.alertId}/${action}`, f.apiKey)).status).toBe(200);
      await expectChanged(h, tags, f.apiKey);
    }
  });

  it("quarantine, unquarantine, and the quarantine's end by the passing of time alone: the test and the tests list", async () => {
    const f = await etagFixture(h);
    const paths = [`/tests/${f.testId}`, `/projects/${f.projectId}/tests`, `/projects/${f.projectId}/tests?quarantined=true`];
    const before = await tagsOf(h, paths, f.apiKey);
    expect((await h.post(`/api/v1/tests/${f.testId}/quarantine`, f.apiKey, { reason: "flaky on CI", duration: "1d" })).status).toBe(200);
    await expectChanged(h, before, f.apiKey);

    const quarantined = await tagsOf(h, paths, f.apiKey);
    h.clock.advance(24 * 3600_000 - 1000);
    await expectUnchanged(h, quarantined, f.apiKey);
    h.clock.advance(1000);
    await expectChanged(h, quarantined, f.apiKey);
    expect((await conditionalGet(h, `/tests/${f.testId}`, f.apiKey)).body.quarantined).toBe(false);

    expect((await h.post(`/api/v1/tests/${f.testId}/quarantine`, f.apiKey, { reason: "again", duration: "7d" })).status).toBe(200);
    const again = await tagsOf(h, paths, f.apiKey);
    expect((await h.post(`/api/v1/tests/${f.testId}/unquarantine`, f.apiKey)).status).toBe(200);
    await expectChanged(h, again, f.apiKey);
  });

  it("an alert event: the alert's events and the alert", async () => {
    const f = await etagFixture(h);
    const tags = await tagsOf(h, [`/alerts/${f.alertId}/events`, `/alerts/${f.alertId}`, "/alerts"], f.apiKey);
    const run = await processRun(h, f.projectId);
    await h.newEvent(f.alertId, run.id);
    await expectChanged(h, tags, f.apiKey);
  });

  it("the organization: its key replaced, its name changed", async () => {
    const f = await etagFixture(h);
    const etag = (await tagsOf(h, ["/organization"], f.apiKey)).get("/organization")!;
    const regenerated = await h.admin("POST", `/organizations/${f.organizationId}/api_key/regenerate`);
    expect(regenerated.status).toBe(200);
    const key = regenerated.body.api_key.secret as string;
    const res = await conditionalGet(h, "/organization", key, etag);
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).not.toBe(etag);

    const tags = await tagsOf(h, ["/organization"], key);
    await h.db.execute(sql`update organizations set name = 'Renamed' where id = ${f.organizationId}`);
    await expectChanged(h, tags, key);
  });

  // Cases, suites, failure groups and health transitions are written only with their run (its row's trigger): run processing above.
  it("a write straight to any table with a data-version trigger, whichever code made it", async () => {
    const f = await etagFixture(h);
    const writes = [
      sql`update projects set description = 'direct' where id = ${f.projectId}`,
      sql`update test_runs set branch = 'direct' where project_id = ${f.projectId} and number = ${f.runNumber}`,
      sql`update tests set suite = 'direct' where id = ${f.testId}`,
      sql`update alerts set events_count = events_count + 1 where id = ${f.alertId}`,
      sql`update alert_events set metadata = '{"direct": true}'::jsonb where alert_id = ${f.alertId}`,
      sql`delete from alert_events where alert_id = ${f.alertId}`,
      sql`delete from test_runs where project_id = ${f.projectId} and number = 1`,
      sql`delete from tests where id = ${f.testId}`,
    ];
    for (const write of writes) {
      const tags = await tagsOf(h, ["/projects", `/projects/${f.projectId}/tests`], f.apiKey);
      const result = (await h.db.execute(write)) as unknown as { rowCount?: number; affectedRows?: number };
      expect(result.rowCount ?? result.affectedRows, write.queryChunks.join("")).toBeGreaterThan(0);
      await expectChanged(h, tags, f.apiKey);
    }
  });

  it("a write that fails and rolls back changes no tag", async () => {
    const f = await etagFixture(h);
    const tags = await tagsOf(h, ["/projects", `/projects/${f.projectId}`], f.apiKey);
    await expect(
      h.db.transaction(async (tx) => {
        await tx.execute(sql`update projects set description = 'rolled back' where id = ${f.projectId}`);
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    await expectUnchanged(h, tags, f.apiKey);
  });
});
