/**
 * The cost of flakiness on the pages (docs/flakiness-cost.md), server-side HTML in process: the
 * project overview's 30-day figure against the 30 days before, its stacked chart per day with a
 * text alternative and a data table, the most costly tests linking to their pages with their
 * share, upload text shown as text; a test's page with its share of the project's cost; a project
 * without cost; and what the cost adds to the pages' statements (nothing on the overview, one
 * statement on a test's page).
 */
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects, tests } from "../../src/db/schema";
import { createHarness } from "../support/harness";
import { adminAndMember, inputValue } from "../support/project-page-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const DAY = 86_400_000;
const SCRIPTED = `renders <script>alert(1)</script>`;

type Case = { name: string; status: "passed" | "failed"; duration_ms: number; attempts?: { status: "failed"; duration_ms: number }[] };
const pass = (name: string, duration_ms = 5, attempts?: Case["attempts"]): Case => ({ name, status: "passed", duration_ms, attempts });
const fail = (name: string, duration_ms: number): Case => ({ name, status: "failed", duration_ms });

async function projectWithPeople(name: string) {
  const people = await adminAndMember(h, `${name} Org`);
  const created = await people.admin.postAndFollow("/projects/new", { name, description: "", defaultBranch: "" });
  expect(created.status).toBe(200);
  const token = inputValue(created.text, "upload-token")!;
  const [project] = await h.db.select().from(projects).where(eq(projects.organizationId, people.organizationId));
  const upload = async (cases: Case[], meta: Record<string, unknown>) => {
    h.clock.advance(60_000);
    const run = await h.uploadAndWait(token, {
      branch: "main",
      ...meta,
      suites: [{ name: "s", cases: cases.map((c) => ({ classname: "Cart", ...c })) }],
    });
    expect(run.status).toBe("processed");
  };
  const testId = async (testName: string) => {
    const [row] = await h.db
      .select({ id: tests.id })
      .from(tests)
      .where(and(eq(tests.projectId, project!.id), eq(tests.name, testName)));
    return row!.id;
  };
  return { ...people, project: project!, upload, testId };
}

/**
 * Forty days ago: a retry of 2 s. Today: `shaky` (flaky by then) fails for 3 s and fails the build,
 * `retried` passes after a 1 s failed try, and the build's re-run takes 60 s: 64 s over the window.
 */
async function costedProject() {
  h.clock.set(Date.parse("2026-06-15T10:00:00Z") - 40 * DAY);
  const p = await projectWithPeople("Cost pages");
  await p.upload([pass("shaky"), pass("retried", 5, [{ status: "failed", duration_ms: 2_000 }]), pass(SCRIPTED)], {
    commit_sha: "0".repeat(40),
  });
  h.clock.set(Date.parse("2026-06-15T10:00:00Z"));
  await h.db
    .update(tests)
    .set({ health: "flaky" })
    .where(eq(tests.id, await p.testId("shaky")));
  await p.upload([fail("shaky", 3_000), pass("retried", 5, [{ status: "failed", duration_ms: 1_000 }]), fail(SCRIPTED, 1)], {
    commit_sha: "a".repeat(40),
    build_id: "1",
    duration_ms: 50_000,
  });
  // SCRIPTED failed too (not flaky): the next commit's run fails only by `shaky`, and its re-run counts.
  await p.upload([fail("shaky", 0), pass("retried"), pass(SCRIPTED)], { commit_sha: "b".repeat(40), build_id: "2", duration_ms: 40_000 });
  await p.upload([pass("shaky"), pass("retried"), pass(SCRIPTED)], { commit_sha: "b".repeat(40), build_id: "3", duration_ms: 60_000 });
  return p;
}

/** The text of HTML without tags (entities left as they are, but for the apostrophe). */
const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, " ")
    .replace(/\s+/g, " ")
    .replaceAll("&#39;", "'");

describe("the project overview", () => {
  it("the 30-day figure against the 30 days before, the chart per day with its table, the most costly tests with their share", async () => {
    const p = await costedProject();
    const page = await p.member.get(`/projects/${p.project.id}`);
    expect(page.status).toBe(200);
    const figure = /<div class="figure"><dt>Cost of flakiness<\/dt>(.*?)<\/div>/.exec(page.text)?.[1];
    expect(figure).toBeDefined();
    expect(textOf(figure!)).toContain("1 min 04 s");
    // The 2 s retry was 40 days ago: the previous window's figure.
    expect(textOf(figure!)).toContain("+3100.0 % vs 2.00 s the 30 days before");

    const section = page.text.slice(page.text.indexOf('id="cost-heading"'), page.text.indexOf('id="alerts-heading"'));
    expect(textOf(section)).toContain(
      "1 min 04 s of test time over the last 30 days: retries that then passed 1.00 s, failures of flaky tests 3.00 s, of quarantined tests 0 ms, 1 re-run 1 min 00 s.",
    );
    expect(section).toContain("Data table: Cost of flakiness per day");
    expect(section).toContain(
      "<title>2026-06-15: Retries 1.00 s, Flaky failures 3.00 s, Quarantined failures 0 ms, Re-runs 1 min 00 s</title>",
    );
    expect(section.match(/<svg [^>]*role="img"/g)).toHaveLength(1);
    // Most costly first, each a link to its page with its share of the 64 s; the script in a name is text.
    const list = /<ol class="plain" aria-labelledby="cost-tests">(.*?)<\/ol>/.exec(section)![1]!;
    const items = [...list.matchAll(/<li>(.*?)<\/li>/g)].map((match) => match[1]!);
    expect(items).toHaveLength(2);
    expect(items[0]).toContain(`href="/projects/${p.project.id}/tests/${await p.testId("shaky")}">shaky</a>`);
    expect(textOf(items[0]!)).toContain("3.00 s · 4.7 % of the total");
    expect(items[1]).toContain(`href="/projects/${p.project.id}/tests/${await p.testId("retried")}">retried</a>`);
    expect(textOf(items[1]!)).toContain("1.00 s · 1.6 % of the total");
    expect(page.text).not.toContain("<script>alert(1)</script>");
    expect(page.text).not.toContain("<script");
  });

  it("a project that spent nothing on flakiness says so", async () => {
    h.clock.set(Date.parse("2026-06-15T10:00:00Z"));
    const p = await projectWithPeople("Calm");
    await p.upload([pass("steady")], { commit_sha: "c".repeat(40) });
    const page = await p.admin.get(`/projects/${p.project.id}`);
    const section = page.text.slice(page.text.indexOf('id="cost-heading"'), page.text.indexOf('id="alerts-heading"'));
    expect(textOf(section)).toContain("0 ms of test time over the last 30 days");
    expect(section).toContain("No test cost anything in this window.");
  });
});

describe("a test's page", () => {
  it("shows the test's cost over the last 30 days and its share of the project's, with its chart", async () => {
    const p = await costedProject();
    const page = await p.member.get(`/projects/${p.project.id}/tests/${await p.testId("shaky")}`);
    expect(page.status).toBe(200);
    const section = page.text.slice(page.text.indexOf('id="cost"'), page.text.indexOf("</section>", page.text.indexOf('id="cost"')));
    expect(textOf(section)).toContain(
      "3.0 s of test time from 2026-05-17 to 2026-06-15 (UTC): 5 % of the project's 1 min 04 s. Retries that then passed 0 ms, failures while flaky 3.0 s, while quarantined 0 ms.",
    );
    expect(section).toContain("Data table: Cost of flakiness per day");
    const calm = await p.member.get(`/projects/${p.project.id}/tests/${await p.testId(SCRIPTED)}`);
    expect(textOf(calm.text)).toContain(
      "No test time spent on this test's retries or flaky or quarantined failures from 2026-05-17 to 2026-06-15 (UTC).",
    );
  });
});

describe("what the cost adds to the pages' statements", () => {
  /** Statements sent while `work` runs, after the queue is idle (nothing else runs meanwhile). */
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

  it("the overview reads it in its one statement of figures; a test's page in one statement more", async () => {
    const p = await costedProject();
    const overview = await statementsOf(() => p.member.get(`/projects/${p.project.id}`));
    const costReads = overview.filter((sql) => sql.includes("test_daily_costs"));
    expect(costReads).toHaveLength(1);
    expect(costReads[0]).toContain("project_daily_rollups");
    const shaky = await p.testId("shaky");
    const testPage = await statementsOf(() => p.member.get(`/projects/${p.project.id}/tests/${shaky}`));
    expect(testPage.filter((sql) => sql.includes("test_daily_costs"))).toHaveLength(1);
  });
});
