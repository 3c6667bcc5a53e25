/**
 * The web app's "done when" (issue 15), for both runtimes: every `url` field the API returns opens
 * its page for a signed-in person of the organization (admin or member) and shows the entity,
 * sends a signed-out visitor to sign-in and back, and is a 404 for a person of another
 * organization. The data is real: an admin signs up, reads the API key on the team page, uploads
 * reports with the project's upload token and waits for processing; the URLs are then gathered
 * from the API's answers (every key named `url` whose value is a page of WEB_APP_URL), not built
 * by the test.
 */
import { expect } from "vitest";
import { createPasswordUser } from "../../src/auth/people";
import { addMember } from "../../src/services/tenancy/memberships";
import { WEB_APP_URL, type Harness, testSecrets } from "./harness-core";
import { PASSWORD, WebClient, uniqueEmail } from "./web-client";
import { signedUpOrganization } from "./web-fixtures";

type Json = Record<string, any>;

/** A `url` field found in an answer, with the object that carries it and where it came from. */
export type UrlField = { url: string; owner: Json; source: string };

/** Every `url` field under `value` that points into the web app. */
function urlFieldsOf(value: unknown, source: string, found: UrlField[] = []): UrlField[] {
  if (Array.isArray(value)) {
    for (const item of value) urlFieldsOf(item, source, found);
  } else if (value !== null && typeof value === "object") {
    const object = value as Json;
    for (const [key, field] of Object.entries(object)) {
      if (key === "url" && typeof field === "string" && field.startsWith(`${WEB_APP_URL}/`))
        found.push({ url: field, owner: object, source });
      else urlFieldsOf(field, source, found);
    }
  }
  return found;
}

export type UrlKind = "project" | "alert" | "test run" | "test case" | "test";

/** Which page a url is (its path in the web app), or a failed expectation. */
function urlKind(url: string): UrlKind {
  const { pathname, hash } = new URL(url);
  if (/^\/projects\/[0-9a-f-]{36}$/.test(pathname)) return "project";
  if (/^\/alerts\/[0-9a-f-]{36}$/.test(pathname)) return "alert";
  if (/^\/projects\/[0-9a-f-]{36}\/runs\/\d+$/.test(pathname)) return hash.startsWith("#case-") ? "test case" : "test run";
  if (/^\/projects\/[0-9a-f-]{36}\/tests\/[0-9a-f-]{36}$/.test(pathname)) return "test";
  throw new Error(`a url field that is no page of the web app: ${url}`);
}

/** The request path of a url (what a browser sends: no fragment). */
const pagePath = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

/** What the page of `field` must show for its entity: its name, or its run's number (and the case's anchor for a failure). */
function expectedTexts(field: UrlField): string[] {
  const kind = urlKind(field.url);
  const { owner } = field;
  switch (kind) {
    case "project":
    case "alert":
    case "test":
      return [`<h1>${owner.name}</h1>`];
    case "test run":
      return [`<h1>Run #${new URL(field.url).pathname.split("/").at(-1)}</h1>`];
    case "test case":
      // The run's page at the case; a failure is listed there with its anchor and name.
      return [
        `<h1>Run #${owner.test_run_number}</h1>`,
        ...(owner.status === "failed" || owner.status === "errored" ? [`id="case-${owner.id}"`, owner.name as string] : []),
      ];
  }
}

const passed = (name: string) => ({ name, classname: "Checkout", status: "passed", duration_ms: 12 });

/**
 * The organization's admin (signed up through the web app), a member, a person of another
 * organization, the API key (revealed on the team page) and a project with two processed runs,
 * the second with a failure and an error, and an alert event on it.
 */
async function urlFieldsFixture(h: Harness) {
  const admin = new WebClient(h.app);
  const adminEmail = uniqueEmail("urls-admin");
  await admin.signUp({ email: adminEmail, organization: "Url Fields Org" });
  const { organizationId } = await signedUpOrganization(h.db, adminEmail);
  const revealed = await admin.postAndFollow("/settings/team/api-key/reveal", {});
  expect(revealed.status).toBe(200);
  const apiKey = /value="(cta_[0-9A-Za-z]{49})"/.exec(revealed.text)![1]!;

  const memberEmail = uniqueEmail("urls-member");
  const user = await createPasswordUser(
    { db: h.db, secrets: testSecrets, webAppUrl: WEB_APP_URL },
    { name: "Mo Member", email: memberEmail, password: PASSWORD },
  );
  await addMember({ db: h.db, clock: h.clock }, { organizationId, userId: user.id, role: "member" });
  const member = new WebClient(h.app);
  expect((await member.signIn(memberEmail)).status).toBe(303);

  const stranger = new WebClient(h.app);
  await stranger.signUp({ email: uniqueEmail("urls-stranger"), organization: "Stranger Org" });

  const { project, uploadToken, alertIds } = await h.newProject(organizationId, "Url Fields Shop", "Where every url field leads");
  const uploads: Json[] = [];
  const first = await h.upload(uploadToken, {
    branch: "main",
    commit_sha: "c0ffee01",
    suites: [{ name: "checkout", cases: [passed("adds to cart"), passed("pays"), passed("refunds")] }],
  });
  expect(first.status).toBe(202);
  uploads.push(first.body, await h.waitForRun(uploadToken, first.body.number));
  h.clock.advance(60_000);
  const second = await h.upload(uploadToken, {
    branch: "main",
    commit_sha: "c0ffee02",
    suites: [
      {
        name: "checkout",
        cases: [
          passed("adds to cart"),
          {
            name: "pays",
            classname: "Checkout",
            status: "failed",
            duration_ms: 30,
            failure_message: "expected 200, got 502",
            failure_text: "AssertionError: expected 200, got 502",
          },
          { name: "refunds", classname: "Checkout", status: "errored", duration_ms: 5, failure_message: "connection refused" },
          { name: "ships later", classname: "Checkout", status: "skipped" },
        ],
      },
    ],
  });
  expect(second.status).toBe(202);
  uploads.push(second.body, await h.waitForRun(uploadToken, second.body.number));
  const failedTests = await h.get(`/uploads/v1/test_runs/${second.body.number}?include=failed_tests`, uploadToken);
  expect(failedTests.status).toBe(200);
  uploads.push(failedTests.body);
  // An alert event on the second run, so the events listing carries its run's url too.
  const [secondRun] = await h.db.query.testRuns.findMany({
    where: (runs, { and, eq }) => and(eq(runs.projectId, project.id), eq(runs.number, second.body.number)),
  });
  await h.newEvent(alertIds.test_flakiness!, secondRun!.id, { note: "url fields" });

  return { admin, member, stranger, organizationId, apiKey, project, uploadToken, uploads };
}

/** Every `url` field of the API's answers about the fixture's data: each listing and each single object. */
async function collectUrlFields(h: Harness, f: Awaited<ReturnType<typeof urlFieldsFixture>>): Promise<UrlField[]> {
  const fields: UrlField[] = [];
  const read = async (path: string) => {
    const answer = await h.get(`/api/v1${path}`, f.apiKey);
    expect(answer.status, path).toBe(200);
    urlFieldsOf(answer.body, `GET /api/v1${path}`, fields);
    return answer.body as Json;
  };
  f.uploads.forEach((body, i) => urlFieldsOf(body, `uploads answer ${i + 1}`, fields));

  const p = f.project.id;
  await read("/projects");
  await read(`/projects/${p}`);
  const alerts = await read(`/alerts?status=all&project_id=${p}`);
  for (const alert of alerts.data as Json[]) {
    await read(`/alerts/${alert.id}`);
    await read(`/alerts/${alert.id}/events`);
  }
  const runs = await read(`/projects/${p}/test_runs`);
  for (const run of runs.data as Json[]) {
    await read(`/projects/${p}/test_runs/${run.number}`);
    await read(`/projects/${p}/test_runs/${run.number}/failure_groups`);
    const suites = await read(`/projects/${p}/test_runs/${run.number}/test_suites`);
    for (const suite of suites.data as Json[]) {
      const cases = await read(`/projects/${p}/test_runs/${run.number}/test_suites/${suite.number}/test_cases`);
      for (const testCase of cases.data as Json[]) await read(`/test_cases/${testCase.id}`);
    }
  }
  await read(`/projects/${p}/failure_groups`);
  const tests = await read(`/projects/${p}/tests`);
  for (const test of tests.data as Json[]) {
    await read(`/tests/${test.id}`);
    await read(`/tests/${test.id}/executions`);
    await read(`/tests/${test.id}/health_transitions`);
    await read(`/tests/${test.id}/failure_groups`);
  }
  return fields;
}

/**
 * The check itself: for every distinct url, the admin and the member get 200 with the entity on
 * the page, a signed-out visitor a 302 to sign-in with the page as `next`, the stranger a 404.
 */
export async function checkEveryUrlField(h: Harness) {
  const f = await urlFieldsFixture(h);
  const fields = await collectUrlFields(h, f);
  const kinds = new Set(fields.map((field) => urlKind(field.url)));
  expect([...kinds].sort()).toEqual(["alert", "project", "test", "test case", "test run"]);

  const byUrl = new Map<string, UrlField>();
  for (const field of fields) if (!byUrl.has(field.url)) byUrl.set(field.url, field);
  const signedOut = new WebClient(h.app);
  for (const [url, field] of byUrl) {
    const path = pagePath(url);
    const where = `${url} (from ${field.source})`;
    for (const person of [f.admin, f.member]) {
      const page = await person.get(path);
      expect(page.status, where).toBe(200);
      for (const text of expectedTexts(field)) expect(page.text, where).toContain(text);
    }
    const visitor = await signedOut.get(path);
    expect(visitor.status, where).toBe(302);
    expect(visitor.location, where).toBe(`/sign-in?next=${encodeURIComponent(path)}`);
    const foreign = await f.stranger.get(path);
    expect(foreign.status, where).toBe(404);
    expect(foreign.text, where).not.toContain(f.project.name);
  }
  return { fixture: f, urls: [...byUrl.keys()] };
}
