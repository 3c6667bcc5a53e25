/**
 * Issue 30: axe-core's WCAG 2.1 A and AA rules report no violation, of any impact, on any page of
 * the web app (the vendored API reference at /docs aside), at 1280 px and at 375 px wide, and no
 * page scrolls sideways at 375 px. In Chromium, against `npm start`'s server process with its demo
 * (PGlite, or Postgres in CI's second pass), as the demo admin (the role that sees the most) and
 * signed out. Each page is shown with its real content: the demo's three projects (runs with
 * verdicts, flaky and broken tests, alerts with events, a snoozed and a disabled alert), and what
 * this test adds through the upload and admin APIs and the pages' own forms: runs in two variants
 * of the same tests, a run in parts, a quarantine, an empty project made at /projects/new,
 * channels of each kind, an invitation, a revealed key and token, a second organization the admin
 * joins through an invitation's link, and the signed-out flows (sign-up, password reset,
 * invitations for a new and a known address). Every page is listed in `covered` and checked by
 * `check`, which collects each problem so that one run reports them all.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeViolations, wcagViolations } from "../support/axe";
import { emptyServerDatabase, launchChromium } from "../support/browser";
import { type ServerProcess, startServerProcess } from "../support/server-process";

const ADMIN_TOKEN = "accessibility-admin-token-0123456789";
const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 375, height: 800 };

let server: ServerProcess;
let browser: Browser;
let dropDatabase: () => Promise<void> = async () => {};
let apiKey: string;
let checkoutId: string;
let inventoryId: string;
let uploadToken: string;
let partsRunNumber: number;
/** Invitation links (the admin API's answers) into a second organization. */
const invitations = { newPerson: "", knownPerson: "", admin: "" };

const admin = (method: string, path: string, body?: unknown) =>
  server.call(method, `/admin/v1${path}`, ADMIN_TOKEN, body === undefined ? undefined : JSON.stringify(body), {
    "content-type": "application/json",
  });
const api = async (path: string) => (await server.call("GET", `/api/v1${path}`, apiKey)).body;

/** Uploads a JSON report with the checkout project's token (query: run key and shard) and waits until the run has left `pending` (a run's first part leaves it only with the last). */
async function upload(report: Record<string, unknown>, query = "", waitFor = true): Promise<number> {
  const answer = await server.call("POST", `/uploads/v1/test_runs${query}`, uploadToken, JSON.stringify(report), {
    "content-type": "application/json",
  });
  if (answer.status !== 202) throw new Error(`upload: ${answer.status} ${JSON.stringify(answer.body)}`);
  const number = answer.body.number as number;
  if (waitFor)
    await server.until(
      async () => (await server.call("GET", `/uploads/v1/test_runs/${number}`, uploadToken)).body.status !== "pending",
      60_000,
      100,
    );
  return number;
}

const basket = (variantFails: boolean) => ({
  name: "basket",
  cases: [
    {
      name: "sums the basket",
      classname: "BasketTest",
      status: variantFails ? "failed" : "passed",
      duration_ms: 40,
      ...(variantFails
        ? { failure_message: "expected 12 to be 10", failure_text: "AssertionError: expected 12 to be 10\n    at sum (basket.ts:4:2)" }
        : {}),
    },
    { name: "empties the basket", classname: "BasketTest", status: "passed", duration_ms: 12 },
  ],
});

beforeAll(async () => {
  const database = await emptyServerDatabase();
  dropDatabase = database.drop;
  server = await startServerProcess(
    { DATABASE_URL: database.url, SEED_DEMO: "true", ADMIN_TOKEN, OUTBOUND_ALLOW_HOSTS: "127.0.0.1" },
    { startTimeoutMs: 300_000 },
  );
  await server.until(() => /demo-member@example\.com {2}password: \S+\n/.test(server.output()), 300_000, 100);
  browser = await launchChromium();
  apiKey = /Bearer (cta_[0-9A-Za-z]+)/.exec(server.output())![1]!;
  const projects = (await api("/projects")).data as { id: string; name: string }[];
  checkoutId = projects.find((p) => p.name === "checkout-service")!.id;
  inventoryId = projects.find((p) => p.name === "inventory-api")!.id;
  uploadToken = (await admin("POST", `/projects/${checkoutId}/upload_token/regenerate`)).body.upload_token;

  // The same tests in two variants (siblings on a test's page, the variant filter on the tests list).
  for (const variant of ["os=linux", "os=windows"])
    await upload({ branch: "main", commit_sha: "0a11y0".padEnd(40, "0"), variant, suites: [basket(variant === "os=windows")] });
  // A run in parts: two shards of one run key.
  partsRunNumber = await upload(
    { branch: "feature/parts", commit_sha: "0a11y1".padEnd(40, "1"), suites: [basket(true)] },
    "?run_key=a11y-build-1&shard=1/2",
    false,
  );
  await upload(
    { branch: "feature/parts", commit_sha: "0a11y1".padEnd(40, "1"), suites: [basket(false)] },
    "?run_key=a11y-build-1&shard=2/2",
  );

  // A second organization, and invitations into it: a new address, a known one (signed out), the demo admin (signed in).
  const second = await admin("POST", "/organizations", { name: "Second Organization" });
  if (second.status !== 201) throw new Error(`organization: ${second.status} ${JSON.stringify(second.body)}`);
  const invite = async (email: string, role: "admin" | "member") => {
    const answer = await admin("POST", `/organizations/${second.body.organization.id}/invitations`, { email, role });
    if (answer.status !== 201) throw new Error(`invitation: ${answer.status} ${JSON.stringify(answer.body)}`);
    return new URL(answer.body.invitation_url as string).pathname;
  };
  invitations.newPerson = await invite("new-person@example.com", "member");
  invitations.knownPerson = await invite("demo-member@example.com", "member");
  invitations.admin = await invite("demo-admin@example.com", "admin");
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dropDatabase();
});

/** Every page checked, by name, and every problem found (violations, sideways scrolling, a wrong status). */
const covered: string[] = [];
const problems: string[] = [];

/** axe's WCAG 2.1 A and AA rules on the page as it is, at 1280 px and at 375 px; at 375 px the page must not scroll sideways. */
async function check(page: Page, name: string) {
  covered.push(name);
  for (const viewport of [WIDE, NARROW]) {
    await page.setViewportSize(viewport);
    const violations = await wcagViolations(page);
    if (violations.length > 0) problems.push(`${name} at ${viewport.width} px (${page.url()}):\n${describeViolations(violations)}`);
    if (viewport === NARROW) {
      const width = (await page.evaluate("document.documentElement.scrollWidth")) as number;
      if (width > NARROW.width)
        problems.push(`${name} at 375 px (${page.url()}) scrolls sideways: ${width} px wide, from ${await tooWide(page)}`);
    }
  }
  await page.setViewportSize(WIDE);
}

/** The outermost elements that stick out on the right (outside a box that scrolls on its own), for the message. */
const tooWide = async (page: Page) =>
  (await page.evaluate(`(() => {
    const edge = document.documentElement.clientWidth + 1;
    const out = [];
    for (const element of document.querySelectorAll("body *")) {
      if (element.closest(".table-scroll") && !element.matches(".table-scroll")) continue;
      const parent = element.parentElement;
      if (element.getBoundingClientRect().right > edge && !(parent && parent.getBoundingClientRect().right > edge))
        out.push(element.tagName.toLowerCase() + (element.className ? "." + String(element.className).replaceAll(" ", ".") : ""));
    }
    return out.slice(0, 5).join(", ");
  })()`)) as string;

/** Opens `path` (expecting `status`) and checks it. */
async function visit(page: Page, name: string, path: string, status = 200) {
  const response = await page.goto(`${server.base}${path}`);
  if (response?.status() !== status) problems.push(`${name}: ${path} answered ${response?.status()}, not ${status}`);
  await check(page, name);
}

/** Submits a form as typed, past the browser's own checks (`required`, `minlength`), to show the server's refusal. */
async function submitUnchecked(page: Page, button: string) {
  await page.evaluate(`document.querySelectorAll("form").forEach((form) => { form.noValidate = true; })`);
  await page.getByRole("button", { name: button, exact: true }).click();
  await page.waitForLoadState();
}

async function newPage(): Promise<Page> {
  const page = await (await browser.newContext({ viewport: WIDE })).newPage();
  page.on("dialog", (dialog) => {
    throw new Error(`a dialog opened: ${dialog.message()}`);
  });
  return page;
}

async function signedInAdmin(): Promise<Page> {
  const password = /demo-admin@example\.com {2}password: (\S+)/.exec(server.output())![1]!;
  const page = await newPage();
  await page.goto(`${server.base}/sign-in`);
  await page.getByLabel("E-mail").fill("demo-admin@example.com");
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${server.base}/`);
  return page;
}

function expectNoProblems(from: number) {
  const found = problems.slice(from);
  expect(found, `${found.length} problems:\n\n${found.join("\n\n")}`).toEqual([]);
}

describe("axe's WCAG 2.1 A and AA rules on every page, at 1280 and 375 px", () => {
  it("the signed-out pages: sign-in, sign-up and its confirmation, password reset, invitations, the 404", async () => {
    const from = problems.length;
    const page = await newPage();
    await visit(page, "sign-in", "/sign-in");
    await page.getByLabel("E-mail").fill("nobody@example.com");
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForLoadState();
    await check(page, "sign-in, refused");

    await visit(page, "sign-up", "/sign-up");
    await page.getByLabel("Your name").fill("Ada Accessible");
    await page.getByLabel("E-mail").fill("ada-accessible@example.com");
    await page.getByLabel("Password").fill("short");
    await page.getByLabel("Organization name").fill("Accessible Org");
    await submitUnchecked(page, "Create organization");
    await check(page, "sign-up, refused");
    await page.getByLabel("Password").fill("a long enough password");
    await page.getByRole("button", { name: "Create organization" }).click();
    await page.waitForURL(`${server.base}/sign-up/sent`);
    await check(page, "sign-up sent (the confirmation link)");
    await page.getByTestId("confirmation-link").click();
    await page.waitForURL(/\/verify-email\//);
    await check(page, "verify e-mail");

    await visit(page, "reset password", "/reset-password");
    await page.getByLabel("E-mail").fill("demo-member@example.com");
    await page.getByRole("button", { name: "Send me a link" }).click();
    await page.waitForURL(`${server.base}/reset-password/sent`);
    await check(page, "reset password sent (the link)");
    await page.getByTestId("reset-link").click();
    await page.waitForURL(/\/reset-password\/[^/]+$/);
    await check(page, "reset password: the new password");

    await visit(page, "invitation: sign up and join", invitations.newPerson);
    await visit(page, "invitation: sign in and join", invitations.knownPerson);
    await visit(page, "invitation not valid", "/invitations/no-such-invitation-token", 404);
    await visit(page, "404 (no such page)", "/no-such-page", 404);
    // The check itself: what it must find, it finds (pale text, a field without a label; styled through the CSSOM, which the CSP allows).
    await page.evaluate(`(() => {
      const main = document.querySelector("main");
      const pale = main.appendChild(document.createElement("p"));
      pale.textContent = "Pale";
      pale.style.color = "#bbb";
      main.appendChild(document.createElement("input")).name = "unlabelled";
    })()`);
    expect((await wcagViolations(page)).map((violation) => violation.id).sort()).toEqual(["color-contrast", "label"]);
    await page.context().close();
    expectNoProblems(from);
  }, 300_000);

  it("the admin's pages: projects, a project's tabs, runs, a run and its verdict lists, tests, a test, alerts, team, settings, organizations", async () => {
    const from = problems.length;
    const page = await signedInAdmin();
    const checkout = `/projects/${checkoutId}`;
    await visit(page, "projects", "/");

    // A new project, its one-time token, and the empty project's tabs.
    await visit(page, "new project", "/projects/new");
    await page.getByLabel("Name").fill("");
    await submitUnchecked(page, "Create project");
    await check(page, "new project, refused");
    await page.getByLabel("Name").fill("empty-project");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.waitForURL(/\/projects\/[0-9a-f-]+\/created$/);
    await check(page, "project created (its upload token)");
    const empty = new URL(page.url()).pathname.replace(/\/created$/, "");
    await visit(page, "empty project: overview", empty);
    await visit(page, "empty project: runs", `${empty}/runs`);
    await visit(page, "empty project: tests", `${empty}/tests`);
    await visit(page, "empty project: settings", `${empty}/settings`);

    // The demo's project.
    await visit(page, "project overview", checkout);
    await visit(page, "runs", `${checkout}/runs`);
    await visit(page, "runs of a branch", `${checkout}/runs?branch=main`);
    await visit(page, "runs that failed", `${checkout}/runs?result=tests_failed`);
    const runs = (await api(`/projects/${checkoutId}/test_runs?limit=100`)).data as {
      number: number;
      verdict_counts: Record<string, number> | null;
    }[];
    const kinds = (run: (typeof runs)[number]) => Object.values(run.verdict_counts ?? {}).filter((count) => count > 0).length;
    const run = runs.reduce((best, candidate) => (kinds(candidate) > kinds(best) ? candidate : best));
    await visit(page, "run (failures by verdict and by cause)", `${checkout}/runs/${run.number}`);
    for (const [verdict, count] of Object.entries(run.verdict_counts ?? {}))
      if (count > 0) await visit(page, `run failures: ${verdict}`, `${checkout}/runs/${run.number}/failures?verdict=${verdict}`);
    await visit(page, "run failures: all", `${checkout}/runs/${run.number}/failures`);
    const fixedRun = runs.find((candidate) => candidate.verdict_counts !== null && kinds(candidate) === 0) ?? run;
    await visit(page, "run fixed tests", `${checkout}/runs/${fixedRun.number}/fixed`);
    await visit(page, "run in parts", `${checkout}/runs/${partsRunNumber}`);
    const spike = (await api(`/projects/${inventoryId}/test_runs?limit=100`)).data as {
      number: number;
      failed_count: number;
      errored_count: number;
    }[];
    const worst = spike.reduce((a, b) => (b.failed_count + b.errored_count > a.failed_count + a.errored_count ? b : a));
    await visit(page, "run of a mass failure", `/projects/${inventoryId}/runs/${worst.number}`);

    await visit(page, "tests", `${checkout}/tests`);
    await visit(page, "tests: flaky", `${checkout}/tests?health=flaky`);
    await visit(page, "tests: search and sort", `${checkout}/tests?q=basket&sort=name`);
    await visit(page, "tests: a variant", `${checkout}/tests?variant=os%3Dwindows`);
    await visit(page, "tests: none match", `${checkout}/tests?q=no-such-test-anywhere`);
    const flaky = (await api(`/projects/${checkoutId}/tests?health=flaky`)).data as { id: string }[];
    await visit(page, "test: flaky", `${checkout}/tests/${flaky[0]!.id}`);
    const basketTests = (await api(`/projects/${checkoutId}/tests?q=sums%20the%20basket`)).data as { id: string; variant: string }[];
    const windows = basketTests.find((test) => test.variant === "os=windows")!;
    await visit(page, "test: in a variant, with its siblings", `${checkout}/tests/${windows.id}`);
    await page.getByLabel("Reason").fill("");
    await submitUnchecked(page, "Quarantine");
    await check(page, "test: quarantine refused");
    await page.getByLabel("Reason").fill("Fails on Windows only");
    await page.getByLabel("Owner (optional: e-mail or @org/team)").fill("@acme/basket");
    await page.getByLabel("Issue URL (optional)").fill("https://issues.example.com/42");
    await page.getByLabel(/In every variant/).check();
    await page.getByRole("button", { name: "Quarantine", exact: true }).click();
    await page.waitForURL(/\?done=quarantined$/);
    await check(page, "test: quarantined");

    // Alerts.
    await visit(page, "alerts", "/alerts");
    await visit(page, "alerts: all", "/alerts?status=all");
    await visit(page, "alerts: snoozed", "/alerts?status=snoozed");
    const alerts = (await api("/alerts?status=all&limit=100")).data as {
      id: string;
      active: boolean;
      snoozed: boolean;
      events_count: number;
    }[];
    const tripped = alerts.reduce((a, b) => (b.events_count > a.events_count ? b : a));
    await visit(page, "alert with events", `/alerts/${tripped.id}`);
    const snoozed = alerts.find((alert) => alert.snoozed);
    if (snoozed) await visit(page, "alert: snoozed", `/alerts/${snoozed.id}`);
    const disabled = alerts.find((alert) => !alert.active);
    if (disabled) await visit(page, "alert: disabled", `/alerts/${disabled.id}`);
    await page.goto(`${server.base}/alerts/${tripped.id}`);
    await page.getByRole("button", { name: "Snooze" }).click();
    await page.waitForURL(/\?done=snoozed$/);
    await check(page, "alert: just snoozed");

    // The team: an invitation sent, the key revealed, the confirmations.
    await visit(page, "team", "/settings/team");
    await page.getByLabel("E-mail").fill("invited-colleague@example.com");
    await page.getByRole("button", { name: "Send the invitation" }).click();
    await page.waitForURL(`${server.base}/settings/team`);
    await check(page, "team: invitation sent");
    await page.getByRole("button", { name: "Reveal the key" }).click();
    await page.waitForURL(`${server.base}/settings/team`);
    await check(page, "team: the key revealed");
    await visit(page, "confirm: regenerate the key", "/settings/team/api-key/regenerate");
    await page.goto(`${server.base}/settings/team`);
    await page
      .getByRole("button", { name: /^Remove / })
      .first()
      .click();
    await page.waitForURL(/\/members\/[^/]+\/remove/);
    await check(page, "confirm: remove a member");
    await page.goto(`${server.base}/settings/team`);
    await page
      .getByRole("button", { name: /^Revoke the invitation of / })
      .first()
      .click();
    await page.waitForURL(/\/invitations\/[^/]+\/revoke/);
    await check(page, "confirm: revoke an invitation");

    // The project's settings: the token revealed, a channel of each kind, a test message, the confirmations.
    await visit(page, "project settings", `${checkout}/settings`);
    await page.getByRole("button", { name: "Reveal the upload token" }).click();
    await page.waitForURL(`${server.base}${checkout}/settings`);
    await check(page, "project settings: the token revealed");
    const addChannel = async (kind: string, url: string, owner = "") => {
      await page.getByLabel("Kind").selectOption({ label: kind });
      await page.getByLabel(/^URL/).fill(url);
      await page.getByLabel(/^Owner/).fill(owner);
      await page.getByRole("button", { name: "Add channel" }).click();
      await page.waitForURL(`${server.base}${checkout}/settings`);
    };
    await addChannel("Signed webhook", "http://127.0.0.1:9/hooks/ci");
    await check(page, "project settings: a webhook added (its secret)");
    await addChannel("Slack", "http://127.0.0.1:9/services/T0001/B0001/secret", "@acme/payments");
    await check(page, "project settings: a Slack channel added");
    await addChannel("Microsoft Teams", "http://127.0.0.1:9/workflows/abc/secretsig");
    await page
      .getByRole("button", { name: /^Send a test message/ })
      .first()
      .click();
    await page.waitForURL(`${server.base}${checkout}/settings`);
    await check(page, "project settings: channels, a test message sent");
    await page.getByLabel(/^URL/).fill("not a url");
    await submitUnchecked(page, "Add channel");
    await check(page, "project settings: a channel refused");
    await visit(page, "confirm: rotate the upload token", `${checkout}/settings/upload-token/rotate`);
    await page.goto(`${server.base}${checkout}/settings`);
    await page
      .getByRole("button", { name: /^Remove the channel/ })
      .first()
      .click();
    await page.waitForURL(/\/webhooks\/[^/]+\/delete/);
    await check(page, "confirm: remove a channel");

    // Errors inside the layout.
    await visit(page, "404 of a signed-in person", "/projects/00000000-0000-4000-8000-000000000000", 404);
    await visit(page, "400 (a filter the API refuses)", `${checkout}/tests?sort=sideways`, 400);

    // Organizations: one, then a second joined through an invitation's link.
    await visit(page, "organizations", "/organizations");
    await visit(page, "invitation: join (signed in)", invitations.admin);
    await page.getByRole("button", { name: /^Join / }).click();
    await page.waitForURL(`${server.base}/`);
    await visit(page, "organizations: two", "/organizations");
    await page.context().close();
    expectNoProblems(from);
  }, 600_000);

  it("covered every page", () => {
    expect(covered.length).toBeGreaterThan(60);
    console.log(`axe (WCAG 2.1 A, AA) at 1280 and 375 px on ${covered.length} pages:\n  ${covered.join("\n  ")}`);
  });
});
