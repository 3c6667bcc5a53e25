/**
 * The run, test and alert pages (Node, in process): what each shows, the filters and keyset pages
 * with the API's cursors, the quarantine and snooze forms (303 back with a notice), and the API's
 * `url` fields opening these pages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness } from "../support/harness";
import { WEB_APP_URL } from "../support/constants";
import { resultPagesFixture } from "../support/result-pages-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
let f: Awaited<ReturnType<typeof resultPagesFixture>>;
beforeAll(async () => {
  h = await createHarness();
  f = await resultPagesFixture(h);
});
afterAll(async () => h?.close());

const path = (url: string) => url.slice(WEB_APP_URL.length);
/** The text of an HTML answer without tags (entities left as they are). */
const textOf = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");

describe("runs", () => {
  it("lists the project's runs, newest first, and filters by result and branch", async () => {
    const all = await f.admin.get(`/projects/${f.project.id}/runs`);
    expect(all.status).toBe(200);
    const text = textOf(all.text);
    expect(text.indexOf("#2")).toBeLessThan(text.indexOf("#1"));
    expect(text).toContain("Tests errored");
    const passed = await f.admin.get(`/projects/${f.project.id}/runs?result=tests_passed&branch=`);
    expect(passed.status).toBe(200);
    expect(textOf(passed.text)).toContain("#1");
    expect(textOf(passed.text)).not.toContain("#2 ");
    const otherBranch = await f.admin.get(`/projects/${f.project.id}/runs?branch=feature`);
    expect(textOf(otherBranch.text)).toContain("No runs match.");
  });

  it("the overview's latest runs and the runs page are one table: the same columns in the same order, the same cells", async () => {
    const tableOf = (html: string) => {
      const start = html.indexOf("<table>", html.indexOf(html.includes('id="runs-heading"') ? 'id="runs-heading"' : "<h1>Test runs</h1>"));
      return html.slice(start, html.indexOf("</table>", start));
    };
    const overview = tableOf((await f.member.get(`/projects/${f.project.id}`)).text);
    const runs = tableOf((await f.member.get(`/projects/${f.project.id}/runs`)).text);
    const headings = (table: string) => [...table.matchAll(/<th scope="col"[^>]*>([^<]*)<\/th>/g)].map((m) => m[1]);
    expect(headings(overview)).toEqual(["Run", "Result", "Branch", "Commit", "Tests", "Failed", "Skipped", "Duration", "Received"]);
    expect(headings(runs)).toEqual(headings(overview));
    expect(overview).toContain(`href="/projects/${f.project.id}/runs/2">#2</a>`);
    expect(overview).toContain("<code>b1b2c3d4e5f6</code>");
    expect(runs).toBe(overview);
  });

  it("the runs and tests pages carry the project's tab bar, their own tab current, as the overview and settings do", async () => {
    const tabsOf = (html: string) => {
      const nav = /<nav aria-label="Project" class="tabs">(.*?)<\/nav>/.exec(html)?.[1] ?? "";
      return [...nav.matchAll(/<a href="([^"]+)"( aria-current="page")?>([^<]+)<\/a>/g)].map((m) => [m[1], m[3], Boolean(m[2])]);
    };
    const base = `/projects/${f.project.id}`;
    const expected = (current: string) =>
      [
        [base, "Overview"],
        [`${base}/runs`, "Runs"],
        [`${base}/tests`, "Tests"],
        [`${base}/settings`, "Settings"],
      ].map(([href, label]) => [href, label, label === current]);
    for (const [path, current] of [
      [base, "Overview"],
      [`${base}/runs`, "Runs"],
      [`${base}/tests`, "Tests"],
      [`${base}/settings`, "Settings"],
    ] as const)
      expect(tabsOf((await f.member.get(path)).text), path).toEqual(expected(current));
    const runs = (await f.member.get(`${base}/runs`)).text;
    expect(runs).toContain(`<p class="crumbs"><a href="${base}">Shop </a></p><h1>Test runs</h1>`);
  });

  it("pages with the API's cursor: the next link opens the older runs", async () => {
    const first = await f.admin.get(`/projects/${f.project.id}/runs?limit=1`);
    const next = /href="([^"]*cursor=[^"]+)"/.exec(first.text)![1]!.replaceAll("&amp;", "&");
    expect(next).toContain(`/projects/${f.project.id}/runs?cursor=`);
    const second = await f.admin.get(`${next}&limit=1`);
    expect(second.status).toBe(200);
    expect(second.text).toContain(`/runs/1"`);
    expect(second.text).not.toContain(`/runs/2"`);
    expect(second.text).toContain("First page");
    // The same cursor works on the API's list (one definition, one codec).
    const cursor = new URL(next, "http://x").searchParams.get("cursor")!;
    expect(cursor.length).toBeGreaterThan(10);
  });

  it("a run's page: result, branch, commit, build link, times, counts, failures grouped by cause with traces, badges, suites, alert events", async () => {
    const answer = await f.admin.get(`/projects/${f.project.id}/runs/2`);
    expect(answer.status).toBe(200);
    const html = answer.text;
    const text = textOf(html);
    expect(text).toContain("Run #2");
    expect(text).toContain("Tests errored");
    expect(text).toContain("main");
    expect(text).toContain("b1b2c3d4e5f6a7b8");
    // Not an http(s) link: shown as text only.
    expect(html).not.toContain(`href="javascript:`);
    expect(text).toMatch(/Counts.*\b5\b.*\b1\b.*\b1\b.*\b2\b.*\b1\b/);
    // Two causes: "connection refused" (2 tests) first, then the assertion.
    expect(text.indexOf("connection refused")).toBeLessThan(text.indexOf("expected title"));
    expect(text).toContain("2 failures in 2 tests in this run");
    expect(html).toMatch(/<details><summary>Trace<\/summary><pre tabindex="0">Error: connection refused\n {4}at connect/);
    expect(html).toContain(`href="/projects/${f.project.id}/tests/${f.paysTestId}"`);
    expect(html).toMatch(/id="case-\d+"/);
    expect(text).toContain("unit");
    expect(text).toContain("nested");
    expect(html).toContain(`href="/alerts/${f.alertIds.test_flakiness}"`);
    expect(text).toContain("Flaky tests");
    expect(text).toContain("newly failing tests 3");

    const first = await f.admin.get(`/projects/${f.project.id}/runs/1`);
    expect(first.text).toContain(`href="https://ci.example.com/builds/1"`);
    expect(textOf(first.text)).toContain("No failures.");
    // A run of one upload has no parts to list.
    expect(html).not.toContain('id="run-parts"');
    expect(first.text).not.toContain('id="parts"');
  });

  it("a run uploaded in parts lists them: shard, upload time, cases, retry", async () => {
    const { project, uploadToken } = await h.newProject(f.organizationId, "Shards");
    const xml = (name: string, count: number, failing = 0) =>
      `<testsuite name="${name}">${Array.from({ length: count }, (_, i) =>
        i < failing ? `<testcase classname="S" name="t${i}"><failure message="x"/></testcase>` : `<testcase classname="S" name="t${i}"/>`,
      ).join("")}</testsuite>`;
    const query = (fields: Record<string, string>) => new URLSearchParams({ branch: "main", run_key: "ci-1/test", ...fields }).toString();
    const first = await h.upload(uploadToken, xml("one", 3, 1), { query: query({ shard: "2/2" }) });
    expect(first.status, first.text).toBe(202);
    h.clock.advance(1_000);
    await h.upload(uploadToken, xml("two", 2), { query: query({ shard: "1/2" }) });
    const number = first.body.number as number;
    const settled = async (done: (run: any, parts: number) => boolean) => {
      for (let i = 0; i < 500; i++) {
        const run = (await h.get(`/uploads/v1/test_runs/${number}`, uploadToken)).body;
        if (done(run, run.parts_count)) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error("run not processed");
    };
    await settled((run) => run.status === "processed");
    h.clock.advance(1_000);
    await h.upload(uploadToken, xml("one", 1), { query: query({ retry: "true" }) });
    await settled((run) => run.passed_on_retry_count === 1);

    const answer = await f.admin.get(`/projects/${project.id}/runs/${number}`);
    expect(answer.status).toBe(200);
    const table = answer.text.slice(
      answer.text.indexOf('id="run-parts"'),
      answer.text.indexOf("</table>", answer.text.indexOf('id="run-parts"')),
    );
    const headings = [...table.matchAll(/<th scope="col"[^>]*>\s*([^<]*?)\s*<\/th>/g)].map((m) => m[1]);
    expect(headings).toEqual(["Shard", "Uploaded", "Cases", "Retry", "Status"]);
    const rows = [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].slice(1).map((m) => textOf(m[1]!).trim());
    // Oldest first: shard 2/2 with 3 cases, shard 1/2 with 2, then the retry (no shard) with 1.
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(/^2\/2 .*UTC 3 — Read$/);
    expect(rows[1]).toMatch(/^1\/2 .*UTC 2 — Read$/);
    expect(rows[2]).toMatch(/^— .*UTC 1 Retry Read$/);
    expect(textOf(answer.text)).toContain("3 uploads with the run key ci-1/test , 2 shards declared.");
  });

  it("shows flaky and quarantined badges on a run's failures", async () => {
    await f.admin.post(`/projects/${f.project.id}/tests/${f.paysTestId}/quarantine`, { reason: "Flaky network", duration: "7d" });
    h.clock.advance(60_000);
    const run = await h.newRun(f.project.id, {
      meta: { branch: "main", commitSha: "c1" },
      report: {
        suites: [{ name: "unit", cases: [{ name: "pays", classname: "Shop", status: "failed", failureMessage: "connection refused" }] }],
      },
    });
    const answer = await f.admin.get(`/projects/${f.project.id}/runs/${run.number}`);
    expect(textOf(answer.text)).toMatch(/pays.*Failed.*Quarantined/);
    await f.admin.post(`/projects/${f.project.id}/tests/${f.paysTestId}/unquarantine`, {});
  });
});

describe("tests", () => {
  it("lists tests by impact (default), filters by health and searches", async () => {
    const answer = await f.admin.get(`/projects/${f.project.id}/tests`);
    expect(answer.status).toBe(200);
    const text = textOf(answer.text);
    expect(text).toContain("Impact: how many of a test&#39;s last 50 executions");
    expect(text).toContain("adds to cart");
    const searched = await f.admin.get(`/projects/${f.project.id}/tests?q=refund&health=all&sort=name`);
    expect(textOf(searched.text)).toContain("refunds");
    expect(textOf(searched.text)).not.toContain("adds to cart");
    const broken = await f.admin.get(`/projects/${f.project.id}/tests?health=broken`);
    expect(textOf(broken.text)).toContain("No tests match.");
  });

  it("a healthy test whose latest default-branch executions failed reads 'Failing (N in a row)', on the list and on its page", async () => {
    // "pays" errored in the fixture's second run (and the flaky-badge test's run above, when it ran first).
    const list = await f.admin.get(`/projects/${f.project.id}/tests?q=pays`);
    const label = /<span class="badge health-failing">Failing \(([12]) in a row\)<\/span>/.exec(list.text);
    expect(label, list.text).not.toBeNull();
    const passing = await f.admin.get(`/projects/${f.project.id}/tests?q=adds`);
    expect(passing.text).toContain('<span class="badge health-healthy">Healthy</span>');
    expect(passing.text).not.toContain("in a row");
    const page = await f.admin.get(`/projects/${f.project.id}/tests/${f.paysTestId}`);
    expect(page.text).toContain(label![0]);
  });

  it("a test's page: the history strip with a text alternative per cell, durations, failure groups with samples, transitions", async () => {
    const answer = await f.admin.get(`/projects/${f.project.id}/tests/${f.paysTestId}`);
    expect(answer.status).toBe(200);
    const html = answer.text;
    const cells = [
      ...html.matchAll(/<a href="([^"]+)" class="cell status-(\w+)" title="([^"]+)"><span class="visually-hidden">([^<]+)<\/span><\/a>/g),
    ];
    expect(cells.length).toBeGreaterThanOrEqual(2);
    expect(cells[0]![2]).toBe("passed");
    expect(cells[0]![3]).toMatch(/^Passed, run #1, \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    expect(cells[0]![4]).toBe(cells[0]![3]);
    // A passed execution opens its run's page; a failure the run page at its anchor.
    expect(cells[0]![1]).toBe(`/projects/${f.project.id}/runs/1`);
    expect(cells[1]![1]).toMatch(new RegExp(`^/projects/${f.project.id}/runs/2#case-\\d+$`));
    expect(cells[1]![2]).toBe("errored");
    const text = textOf(html);
    expect(text).toContain("Duration");
    // The duration chart: one point per execution of the strip, and its data table.
    expect(html).toContain('aria-labelledby="test-duration-title test-duration-desc"');
    expect(html).toContain('<th scope="row">#1</th>');
    expect(text).toContain("5 ms");
    expect(text).toContain("Failure groups");
    expect(html).toContain("<summary>Sample trace</summary>");
    expect(text).toContain("Health transitions");
  });

  it("a member quarantines a test from its page and unquarantines it (303 back with a notice)", async () => {
    const base = `/projects/${f.project.id}/tests/${f.renderTestId}`;
    const posted = await f.member.post(`${base}/quarantine`, {
      reason: "Times out on ARM",
      duration: "14d",
      owner: "@acme/shop",
      issue_url: "https://issues.example.com/SHOP-12",
    });
    expect(posted.status).toBe(303);
    expect(posted.location).toBe(`${base}?done=quarantined`);
    const page = await f.member.get(posted.location!);
    expect(textOf(page.text)).toContain("The test is quarantined.");
    expect(textOf(page.text)).toContain("Times out on ARM");
    // The quarantine's facts: who (the member, by name and e-mail) and when, its owner, its issue as a link.
    expect(page.text).toContain("<dt>Owner</dt><dd>@acme/shop</dd>");
    expect(page.text).toContain(
      '<dt>Issue</dt><dd><a href="https://issues.example.com/SHOP-12" rel="noopener noreferrer nofollow">https://issues.example.com/SHOP-12</a></dd>',
    );
    expect(textOf(page.text)).toMatch(
      new RegExp(`Quarantined by Ada Lovelace \\(${f.memberEmail}\\) on \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC`),
    );
    const api = await h.db.query.tests.findFirst({ where: (t, { eq }) => eq(t.id, f.renderTestId) });
    expect(api!.quarantineReason).toBe("Times out on ARM");
    expect(api!.quarantineOwner).toBe("@acme/shop");
    expect(api!.quarantineVia).toBe("page");
    expect(api!.quarantineActorEmail).toBe(f.memberEmail);
    // The tests list says who too.
    expect(textOf((await f.member.get(`/projects/${f.project.id}/tests`)).text)).toContain(`by Ada Lovelace (${f.memberEmail}), until`);

    const ended = await f.member.post(`${base}/unquarantine`, {});
    expect(ended.status).toBe(303);
    expect(ended.location).toBe(`${base}?done=unquarantined`);
    expect(textOf((await f.member.get(ended.location!)).text)).toContain("Not quarantined.");
  });
});

describe("alerts", () => {
  it("lists the organization's alerts, active by default, with the API's status values", async () => {
    const answer = await f.admin.get("/alerts");
    expect(answer.status).toBe(200);
    expect(answer.text).toContain(`href="/alerts/${f.alertIds.test_flakiness}"`);
    expect(answer.text).toContain('<option value="active" selected="">');
    for (const status of ["active", "snoozed", "inactive", "all"]) expect(answer.text).toContain(`value="${status}"`);
    expect(textOf((await f.admin.get("/alerts?status=inactive")).text)).toContain("No alerts are disabled.");
  });

  it("an alert's page: state, events with what tripped them and the run; snooze, unsnooze by a member; disable, enable by an admin", async () => {
    const id = f.alertIds.test_flakiness!;
    const page = await f.member.get(`/alerts/${id}`);
    expect(page.status).toBe(200);
    expect(textOf(page.text)).toContain("Active");
    expect(page.text).toContain(`href="/projects/${f.project.id}/runs/2"`);
    expect(textOf(page.text)).toContain("newly failing tests 3");
    // The event as a sentence (src/web/alert-sentences.tsx), the figures behind a disclosure.
    expect(page.text).toContain('<p class="event-sentence">');
    expect(page.text).toContain('<details class="event-statistics"><summary>The figures behind it</summary>');
    for (const duration of ["1h", "4h", "24h", "1w"]) expect(page.text).toContain(`value="${duration}"`);
    expect(textOf(page.text)).toContain("Only admins can enable or disable alerts.");
    expect(page.text).not.toContain("/disable");

    const snoozed = await f.member.post(`/alerts/${id}/snooze`, { duration: "4h" });
    expect(snoozed.status).toBe(303);
    expect(snoozed.location).toBe(`/alerts/${id}?done=snoozed`);
    const after = textOf((await f.member.get(snoozed.location!)).text);
    expect(after).toContain("Snoozed until");
    // /alerts shows the person's active organization: the admin's is this one (the member's is their own).
    expect(textOf((await f.admin.get("/alerts?status=snoozed")).text)).toContain("Flaky tests");
    expect((await f.member.post(`/alerts/${id}/unsnooze`, {})).location).toBe(`/alerts/${id}?done=unsnoozed`);

    expect((await f.admin.post(`/alerts/${id}/disable`, {})).location).toBe(`/alerts/${id}?done=disabled`);
    expect(textOf((await f.admin.get(`/alerts/${id}`)).text)).toContain("Disabled");
    expect((await f.admin.post(`/alerts/${id}/enable`, {})).location).toBe(`/alerts/${id}?done=enabled`);
    expect(textOf((await f.admin.get(`/alerts/${id}`)).text)).toContain("Active");
  });
});

describe("the API's url fields open these pages", () => {
  it("alert, test run, test and test case urls are pages of WEB_APP_URL that a member can open", async () => {
    const alertUrl = `${WEB_APP_URL}/alerts/${f.alertIds.test_flakiness}`;
    const runUrl = `${WEB_APP_URL}/projects/${f.project.id}/runs/2`;
    const testUrl = `${WEB_APP_URL}/projects/${f.project.id}/tests/${f.paysTestId}`;
    const { presentAlert, presentTestRun, presentTest } = await import("../../src/contract/presenters");
    const alertRow = await h.db.query.alerts.findFirst({ where: (a, { eq }) => eq(a.id, f.alertIds.test_flakiness!) });
    expect(presentAlert(alertRow!, h.clock.now(), WEB_APP_URL).url).toBe(alertUrl);
    expect(presentTestRun(f.second, WEB_APP_URL).url).toBe(runUrl);
    const testRow = await h.db.query.tests.findFirst({ where: (t, { eq }) => eq(t.id, f.paysTestId) });
    expect(presentTest(testRow!, { size: 50, branch: null }, WEB_APP_URL, h.clock.now()).url).toBe(testUrl);
    for (const url of [alertUrl, runUrl, testUrl]) expect((await f.member.get(path(url))).status, url).toBe(200);
  });
});
