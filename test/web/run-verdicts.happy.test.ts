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
import { type Harness, createHarness } from "../support/harness";
import { SCRIPT_PAYLOAD } from "../support/result-pages-fixtures";
import { WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

const MAIN = "28335f0".padEnd(40, "c");
const FEATURE_BRANCH = `feature/${SCRIPT_PAYLOAD}`;
/** The text of an HTML answer without tags (entities left as they are, but for the apostrophe). */
const textOf = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").replaceAll("&#39;", "'");

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
