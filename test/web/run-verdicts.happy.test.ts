/**
 * A run's page by verdict (docs/verdicts.md, docs/web-app.md), Node in process on the harness's
 * database, every run uploaded through POST /uploads/v1/test_runs and processed by the queue: a
 * main run, then a feature-branch run naming it as `base_commit_sha` whose failures are new,
 * failing on base, flaky (passed on retry) and quarantined, with one test fixed. The groups' order,
 * the reasons next to the tests' links, the base in words, the bounded lists and their
 * continuation (the API's cursor), the states without a comparison, each branch's latest run on
 * the runs list, upload text shown as text, and the statements a page costs.
 */
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runComparisons, testRuns, tests } from "../../src/db/schema";
import { addMember } from "../../src/services/tenancy/memberships";
import { createHarness } from "../support/harness";
import { SCRIPT_PAYLOAD } from "../support/result-pages-fixtures";
import { WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

const MAIN = "28335f0".padEnd(40, "c");
const FEATURE_BRANCH = `feature/${SCRIPT_PAYLOAD}`;
/** The text of an HTML answer without tags (entities left as they are, but for the apostrophe). */
const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, " ")
    .replace(/\s+/g, " ")
    .replaceAll("&#39;", "'");

type Case = { name: string; status: "passed" | "failed" | "errored"; failure_message?: string; attempts?: { status: "failed" }[] };
const pass = (name: string): Case => ({ name, status: "passed" });
const fail = (name: string, failure_message = `expected ${name} to work`): Case => ({ name, status: "failed", failure_message });

/** A person signed in to an organization made through the admin API (its key reads the API), with a project. */
async function projectWithPerson() {
  const { organization, apiKey } = await h.newOrganization("Verdict Org");
  const { project, uploadToken } = await h.newProject(organization.id, "Shop");
  const web = new WebClient(h.app);
  const email = uniqueEmail("verdicts");
  await web.signUp({ email, organization: "Own org" });
  const { userId } = await signedUpOrganization(h.db, email);
  await addMember({ db: h.db, clock: h.clock }, { organizationId: organization.id, userId, role: "admin" });
  const upload = async (cases: Case[], meta: Record<string, string>) => {
    h.clock.advance(60_000);
    const run = await h.uploadAndWait(uploadToken, {
      ...meta,
      suites: [{ name: "s", cases: cases.map((c) => ({ classname: "Shop", ...c })) }],
    });
    expect(run.status).toBe("processed");
    return run as { number: number; id: string };
  };
  return { organization, apiKey, project, web, upload };
}

/**
 * The main run (base), a quarantine from the test's page, then the feature run: `renders` and
 * `brand new` new, `pays` failing on base, `retries` flaky (passed on retry), `boxed` quarantined,
 * `refunds` fixed.
 */
async function comparedRuns() {
  const p = await projectWithPerson();
  const main = await p.upload(
    [pass("adds to cart"), fail("pays"), fail("refunds"), pass(`renders ${SCRIPT_PAYLOAD}`), pass("retries"), pass("boxed")],
    {
      branch: "main",
      commit_sha: MAIN,
    },
  );
  const boxedId = await testIdOf(p.project.id, "boxed");
  const quarantined = await p.web.post(`/projects/${p.project.id}/tests/${boxedId}/quarantine`, {
    reason: `Boxed ${SCRIPT_PAYLOAD}`,
    duration: "7d",
  });
  expect(quarantined.status).toBe(303);
  const feature = await p.upload(
    [
      pass("adds to cart"),
      fail("pays"),
      pass("refunds"),
      fail(`renders ${SCRIPT_PAYLOAD}`, `expected title ${SCRIPT_PAYLOAD}`),
      fail("brand new"),
      { name: "retries", status: "passed", attempts: [{ status: "failed" }] },
      fail("boxed"),
    ],
    { branch: FEATURE_BRANCH, commit_sha: "f".repeat(40), base_commit_sha: MAIN.slice(0, 7) },
  );
  return { ...p, main, feature };
}

async function testIdOf(projectId: string, name: string) {
  const [row] = await h.db
    .select({ id: tests.id })
    .from(tests)
    .where(and(eq(tests.projectId, projectId), eq(tests.name, name)));
  return row!.id;
}

async function runIdOf(projectId: string, number: number) {
  const [row] = await h.db
    .select({ id: testRuns.id })
    .from(testRuns)
    .where(and(eq(testRuns.projectId, projectId), eq(testRuns.number, number)));
  return row!.id;
}

let f: Awaited<ReturnType<typeof comparedRuns>>;
beforeAll(async () => {
  f = await comparedRuns();
});

describe("a run's page by verdict", () => {
  it("groups the failures by verdict (new, failing on base, flaky, quarantined) with each reason next to the test's link, and lists what the run fixed", async () => {
    const page = await f.web.get(`/projects/${f.project.id}/runs/${f.feature.number}`);
    expect(page.status).toBe(200);
    const html = page.text;
    const headings = [...html.matchAll(/<h3 id="(verdict-[a-z_]+|fixed)-heading">([^<]+)<span class="count">\((\d+)\)<\/span><\/h3>/g)].map(
      (m) => [m[1], m[2]!.trim(), Number(m[3])],
    );
    expect(headings).toEqual([
      ["verdict-new", "New", 2],
      ["verdict-failing_on_base", "Failing on base", 1],
      ["verdict-flaky", "Flaky", 1],
      ["verdict-quarantined", "Quarantined", 1],
      ["fixed", "Fixed", 1],
    ]);
    // The verdicts come before the failures by cause, which stay on the page.
    expect(html.indexOf('id="verdicts"')).toBeLessThan(html.indexOf('id="failures"'));
    expect(textOf(html)).toContain("Failures by cause");

    const group = (id: string) => {
      const start = html.indexOf(`<section class="verdict-group ${id}"`);
      return html.slice(start, html.indexOf("</section>", start));
    };
    const testLink = (name: string) => new RegExp(`<a href="/projects/${f.project.id}/tests/[0-9a-f-]+">${name}</a>`);
    expect(group("verdict-new")).toMatch(testLink("brand new"));
    expect(textOf(group("verdict-new"))).toContain("brand new Shop Failed Why: not in the base, run #1");
    expect(textOf(group("verdict-new"))).toContain("Why: passed on main in run #1 (28335f0)");
    expect(group("verdict-failing_on_base")).toMatch(testLink("pays"));
    expect(textOf(group("verdict-failing_on_base"))).toContain("Why: also failed on main in run #1 (28335f0)");
    expect(textOf(group("verdict-flaky"))).toContain("retries Shop Passed Why: failed, then passed on retry in this run");
    expect(textOf(group("verdict-quarantined"))).toContain("boxed Shop Failed Why: quarantined when the run arrived: Boxed");
    expect(group("fixed")).toMatch(testLink("refunds"));
    // A failure listed by cause too links to its trace there; the retried pass is not listed by cause.
    expect(group("verdict-failing_on_base")).toMatch(/<a href="#case-(\d+)">trace<\/a>/);
    const trace = /<a href="#case-(\d+)">trace<\/a>/.exec(group("verdict-failing_on_base"))![1];
    expect(html).toContain(`<li id="case-${trace}">`);
    expect(group("verdict-flaky")).not.toContain("#case-");
    // The counts, each a link to its group.
    expect(html).toMatch(/<li class="verdict-chip verdict-new"><a href="#verdict-new">2 new<\/a><\/li>/);
    expect(html).toMatch(/<a href="#fixed">1 fixed<\/a>/);
  });

  it("names the base: its number with a link, commit, and how it was chosen in words", async () => {
    const feature = textOf((await f.web.get(`/projects/${f.project.id}/runs/${f.feature.number}`)).text);
    expect(feature).toContain(
      "Compared with run #1 on main at 28335f0ccccc : the default branch's run of the base commit the upload named.",
    );
    expect((await f.web.get(`/projects/${f.project.id}/runs/${f.feature.number}`)).text).toContain(
      `<a href="/projects/${f.project.id}/runs/1">run #1</a>`,
    );
    expect(feature).toContain("Base commit 28335f0 (named by the upload)");

    const first = textOf((await f.web.get(`/projects/${f.project.id}/runs/${f.main.number}`)).text);
    expect(first).toContain("No base run : no earlier processed run on the default branch to compare with");
    const second = await f.upload([pass("adds to cart"), fail("pays")], { branch: "main", commit_sha: "d".repeat(40) });
    expect(textOf((await f.web.get(`/projects/${f.project.id}/runs/${second.number}`)).text)).toContain(
      `Compared with run #${f.main.number} on main at 28335f0ccccc : the previous run on the default branch.`,
    );
    const awaiting = await f.upload([fail("pays")], { branch: "other", commit_sha: "e".repeat(40), base_commit_sha: "abcdef1" });
    const text = textOf((await f.web.get(`/projects/${f.project.id}/runs/${awaiting.number}`)).text);
    expect(text).toContain(
      `Compared with run #${second.number} on main at dddddddddddd : the latest default-branch run before this one, in place of the named base commit.`,
    );
    expect(text).toContain("The base commit the upload named ( abcdef1 ) has no processed run on the default branch yet");
  });

  it("shows upload text (test names, messages, the quarantine's reason, the branch) as text", async () => {
    const run = await f.web.get(`/projects/${f.project.id}/runs/${f.feature.number}`);
    const runs = await f.web.get(`/projects/${f.project.id}/runs`);
    for (const html of [run.text, runs.text]) {
      expect(html).not.toContain("<script>window.__pwned");
      expect(html).not.toContain('<img src=x onerror="window.__pwned');
    }
    expect(run.text).toContain("renders &lt;script&gt;window.__pwned = 1&lt;/script&gt;");
    expect(run.text).toContain("expected title &lt;script&gt;window.__pwned = 1&lt;/script&gt;");
    expect(run.text).toContain("Boxed &lt;script&gt;window.__pwned = 1&lt;/script&gt;");
    expect(runs.text).toContain("feature/&lt;script&gt;window.__pwned = 1&lt;/script&gt;");
  });

  it("says there is no comparison yet for a pending run and a run whose processing failed; a run processed before comparisons keeps its failures by cause", async () => {
    const pending = await h.newRun(f.project.id, { outcome: "pending" });
    const failed = await h.newRun(f.project.id, { outcome: "failed" });
    expect(textOf((await f.web.get(`/projects/${f.project.id}/runs/${pending.number}`)).text)).toContain(
      "No comparison yet: the run is still being processed.",
    );
    expect(textOf((await f.web.get(`/projects/${f.project.id}/runs/${failed.number}`)).text)).toContain(
      "No comparison: the run's report could not be processed",
    );
    // A run stored before comparisons existed: no comparison row, no verdict counts.
    const old = await f.upload([fail("pays", "connection refused")], { branch: "main", commit_sha: "a".repeat(40) });
    const oldId = await runIdOf(f.project.id, old.number);
    await h.db.delete(runComparisons).where(eq(runComparisons.testRunId, oldId));
    await h.db.update(testRuns).set({ verdictCounts: null }).where(eq(testRuns.id, oldId));
    const page = await f.web.get(`/projects/${f.project.id}/runs/${old.number}`);
    expect(page.status).toBe(200);
    const text = textOf(page.text);
    expect(text).toContain("This run was processed before runs were compared with a base: its failures are shown by cause only.");
    expect(text).toContain("connection refused");
    expect(page.text).toContain('<article class="failure-group">');
    const list = await f.web.get(`/projects/${f.project.id}/runs/${old.number}/failures`);
    expect(list.status).toBe(200);
    expect(textOf(list.text)).toContain("No comparison yet");
  });
});

/** Distinct words (letters past f: never read as hex), so that each failure is its own cause. */
const word = (i: number) => "ghijklmnopqrstuvwxyz"[Math.floor(i / 20)]! + "ghijklmnopqrstuvwxyz"[i % 20]!;

describe("bounded lists", () => {
  it("shows the first 50 of a verdict's 53 failures; its link continues with the API's cursor, on the page and on the API", async () => {
    const p = await projectWithPerson();
    await p.upload([pass("anchor"), fail("p gg"), fail("p gh")], { branch: "main", commit_sha: MAIN });
    // 53 failures of 53 causes among 113 tests: not a mass failure, all new.
    const failing = Array.from({ length: 53 }, (_, i) => fail(`t ${word(i)}`, `missing the ${word(i)} widget`));
    const passing = Array.from({ length: 60 }, (_, i) => pass(`p ${word(i)}`));
    const run = await p.upload([...failing, ...passing], { branch: "wide", commit_sha: "b".repeat(40), base_commit_sha: MAIN });
    const page = await p.web.get(`/projects/${p.project.id}/runs/${run.number}`);
    const html = page.text;
    const start = html.indexOf('<section class="verdict-group verdict-new"');
    const group = html.slice(start, html.indexOf("</section>", start));
    expect([...group.matchAll(/<li>/g)].length).toBe(50);
    expect(textOf(group)).toContain("The first 50 of 53 are shown.");
    const more = /<a href="([^"]+)">The next ones<\/a>/.exec(group)![1]!.replaceAll("&amp;", "&");
    expect(more).toMatch(new RegExp(`^/projects/${p.project.id}/runs/${run.number}/failures\\?verdict=new&cursor=`));

    const rest = await p.web.get(more);
    expect(rest.status).toBe(200);
    const restNames = [...rest.text.matchAll(/tests\/[0-9a-f-]+">(t [a-z]{2})<\/a>/g)].map((m) => m[1]);
    const shownNames = [...group.matchAll(/tests\/[0-9a-f-]+">(t [a-z]{2})<\/a>/g)].map((m) => m[1]);
    expect(restNames).toHaveLength(3);
    expect(new Set([...shownNames, ...restNames]).size).toBe(53);
    expect(textOf(rest.text)).toContain(`New failures of run #${run.number}`);
    expect(rest.text).toContain("First page");

    // The same cursor on the API's list gives the same failures.
    const cursor = new URL(more, "http://x").searchParams.get("cursor")!;
    const api = await h.get(
      `/api/v1/projects/${p.project.id}/test_runs/${run.number}/comparison/failures?verdict=new&limit=50&cursor=${encodeURIComponent(cursor)}`,
      p.apiKey,
    );
    expect(api.status).toBe(200);
    expect(api.body.data.map((item: { name: string }) => item.name)).toEqual(restNames);

    // Every failure with its verdict, on one list; a bad verdict is a 400 page that says why.
    const all = await p.web.get(`/projects/${p.project.id}/runs/${run.number}/failures?limit=100`);
    expect([...all.text.matchAll(/<span class="badge verdict-new">New<\/span>/g)]).toHaveLength(53);
    const bad = await p.web.get(`/projects/${p.project.id}/runs/${run.number}/failures?verdict=broken`);
    expect(bad.status).toBe(400);
    expect(textOf(bad.text)).toContain("verdict must be one of");

    // The two tests that failed on main pass here: fixed, a page at a time.
    const fixed = await p.web.get(`/projects/${p.project.id}/runs/${run.number}/fixed?limit=1`);
    const fixedNames = (html: string) => [...html.matchAll(/tests\/[0-9a-f-]+">(p g[gh])<\/a>/g)].map((m) => m[1]);
    expect(fixedNames(fixed.text)).toHaveLength(1);
    const next = /href="([^"]+)">Next page<\/a>/.exec(fixed.text)![1]!.replaceAll("&amp;", "&");
    const second = await p.web.get(`${next}&limit=1`);
    expect([...fixedNames(fixed.text), ...fixedNames(second.text)].sort()).toEqual(["p gg", "p gh"]);
  });

  it("a mass failure: its reason, every failure under infrastructure", async () => {
    const p = await projectWithPerson();
    await p.upload([pass("anchor")], { branch: "main", commit_sha: MAIN });
    const failing = Array.from({ length: 22 }, (_, i) => fail(`db ${word(i)}`, "Connection refused"));
    const run = await p.upload(failing, { branch: "broken-ci", commit_sha: "b".repeat(40), base_commit_sha: MAIN });
    const text = textOf((await p.web.get(`/projects/${p.project.id}/runs/${run.number}`)).text);
    expect(text).toContain("Infrastructure : mass failure: 22 of the run's 22 tests failed (usually 0%).");
    expect(text).toContain("Infrastructure (22)");
    expect(text).not.toContain("New (");
  });

  it("another organization's run and its lists are the same 404 as a missing run", async () => {
    const stranger = new WebClient(h.app);
    await stranger.signUp({ email: uniqueEmail("verdicts-stranger"), organization: "Stranger Org" });
    const missing = await f.web.get(`/projects/${f.project.id}/runs/9999`);
    expect(missing.status).toBe(404);
    for (const path of ["", "/failures", "/failures?verdict=new", "/fixed"]) {
      const answer = await stranger.get(`/projects/${f.project.id}/runs/${f.feature.number}${path}`);
      expect(answer.status).toBe(404);
      expect(answer.text).toBe((await stranger.get(`/projects/${f.project.id}/runs/9999${path}`)).text);
    }
  });
});

describe("each branch's latest run on the runs list", () => {
  it("lists each branch's latest run with its verdict counts, one click from the list; the branch's name filters the runs", async () => {
    const p = await projectWithPerson();
    await p.upload([pass("a"), fail("b")], { branch: "main", commit_sha: MAIN });
    const older = await p.upload([fail("a")], { branch: "topic", commit_sha: "1".repeat(40), base_commit_sha: MAIN });
    const latest = await p.upload([fail("a"), fail("b"), fail("c")], {
      branch: "topic",
      commit_sha: "2".repeat(40),
      base_commit_sha: MAIN,
    });
    const mainLatest = await p.upload([pass("a"), pass("b")], { branch: "main", commit_sha: "3".repeat(40) });
    const list = await p.web.get(`/projects/${p.project.id}/runs`);
    const start = list.text.indexOf('<ul class="branch-runs">');
    const panel = list.text.slice(start, list.text.indexOf("</section>", start));
    const items = panel.split("<li>").slice(1);
    expect(items).toHaveLength(2);
    // The most recently active branch first: main's run #4, then topic's #3 (not #2).
    expect(items[0]).toContain(`href="/projects/${p.project.id}/runs/${mainLatest.number}"`);
    expect(items[1]).toContain(`href="/projects/${p.project.id}/runs/${latest.number}"`);
    expect(panel).not.toContain(`/runs/${older.number}"`);
    expect(textOf(items[1]!)).toContain("2 new");
    expect(textOf(items[1]!)).toContain("1 failing on base");
    expect(textOf(items[0]!)).toContain("Passed no failures");
    expect(items[1]).toContain(`href="/projects/${p.project.id}/runs?branch=topic"`);
    expect(items[1]).toContain(`href="/projects/${p.project.id}/runs/${latest.number}#verdict-new"`);

    // Filtered by branch: that branch's latest; a result filter or a later page has no such list.
    const topic = await p.web.get(`/projects/${p.project.id}/runs?branch=topic`);
    expect(topic.text).toContain(`class="run-link" href="/projects/${p.project.id}/runs/${latest.number}"`);
    expect(topic.text).not.toContain(`class="run-link" href="/projects/${p.project.id}/runs/${mainLatest.number}"`);
    expect((await p.web.get(`/projects/${p.project.id}/runs?result=tests_failed`)).text).not.toContain("branch-runs");
  });
});

/**
 * Statements sent to the database while `work` runs, with their SQL (the driver's `query`: PGlite's,
 * or node-postgres' pool's on the Postgres pass), once the queue is idle (a run's alert checks
 * follow its processing): nothing else runs meanwhile.
 */
async function statementsOf(work: () => Promise<unknown>): Promise<string[]> {
  await h.queue.idle();
  const client = (h.db as unknown as { $client: { query: (...args: unknown[]) => Promise<unknown> } }).$client;
  const original = client.query;
  const seen: string[] = [];
  client.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0];
    seen.push(typeof first === "string" ? first : String((first as { text?: string }).text));
    return original.apply(this, args);
  };
  try {
    await work();
  } finally {
    client.query = original;
  }
  return seen;
}

describe("what the pages cost", () => {
  /** The statements after the session's (better-auth's), which start every signed-in page. */
  const afterSession = (statements: string[]) => statements.filter((sql) => !/from "(sessions|users)"/.test(sql));

  it("the run page finds the run once, then reads each part in one statement, however many failures (the verdict lists are bounded)", async () => {
    const p = await projectWithPerson();
    await p.upload([pass("anchor")], { branch: "main", commit_sha: MAIN });
    const failing = Array.from({ length: 60 }, (_, i) => fail(`t ${word(i)}`, `missing the ${word(i)} widget`));
    const passing = Array.from({ length: 70 }, (_, i) => pass(`p ${word(i)}`));
    const wide = await p.upload([...failing, ...passing], { branch: "wide", commit_sha: "b".repeat(40), base_commit_sha: MAIN });

    const small = afterSession(await statementsOf(() => f.web.get(`/projects/${f.project.id}/runs/${f.feature.number}`)));
    const large = afterSession(await statementsOf(() => p.web.get(`/projects/${p.project.id}/runs/${wide.number}`)));
    // One lookup (the run, its project and the membership together), then failure groups, failures,
    // suites, alert events, the comparison, the verdicts' first pages (all verdicts in one), the fixed tests.
    for (const statements of [small, large]) {
      expect(statements).toHaveLength(8);
      expect(statements[0]).toMatch(/from "test_runs" inner join "projects" .* inner join "members"/);
      expect(statements.filter((sql) => /from "(test_runs|projects)"/.test(sql))).toHaveLength(1);
    }
    expect(small.filter((sql) => sql.includes('"run_verdicts"."verdict" = $')).length).toBe(1);

    // A green run without failures reads no verdicts.
    const green = await p.upload([pass("anchor")], { branch: "main", commit_sha: "9".repeat(40) });
    expect(afterSession(await statementsOf(() => p.web.get(`/projects/${p.project.id}/runs/${green.number}`)))).toHaveLength(7);
  });

  it("the runs list finds the project once, then the page of runs and each branch's latest run: one statement each", async () => {
    const statements = afterSession(await statementsOf(() => f.web.get(`/projects/${f.project.id}/runs`)));
    expect(statements).toHaveLength(3);
    expect(statements.filter((sql) => /from "projects"/.test(sql))).toHaveLength(1);
    expect(statements.filter((sql) => /select distinct on/.test(sql))).toHaveLength(1);
  });
});
