/**
 * The project pages' happy paths in process (Node): an admin creates a project on /projects/new
 * and sees its upload token once with the CLI line; a run uploaded with it shows on the overview
 * (figures, charts with their text alternatives, latest runs linking to the run page); settings
 * saved, the token revealed and rotated (the old one refused at once), webhooks added with their
 * signing secret shown once and removed; a member reads the settings and reveals the token.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects, webhookEndpoints } from "../../src/db/schema";
import { UPLOADER_BUNDLE_SHA256, UPLOADER_TARBALL_SHA256 } from "../../src/lib/uploader-package";
import { PUBLIC_BASE_URL } from "../support/constants";
import { createHarness } from "../support/harness";
import { adminAndMember, inputValue } from "../support/project-page-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => h?.close());

const JUNIT = `<testsuite name="shop"><testcase classname="Shop" name="adds" time="0.5"/><testcase classname="Shop" name="pays" time="1.5"><failure message="boom">trace</failure></testcase><testcase classname="Shop" name="later" time="0"><skipped/></testcase></testsuite>`;

async function createdProject(people: Awaited<ReturnType<typeof adminAndMember>>, name = "Checkout") {
  const created = await people.admin.postAndFollow("/projects/new", { name, description: "The shop's checkout", defaultBranch: "" });
  // POST-redirect-GET: the token is on the page the post leads to, never in its URL.
  expect(created.posted.status).toBe(303);
  expect(created.posted.location).toMatch(/^\/projects\/[0-9a-f-]{36}\/created$/);
  expect(created.status).toBe(200);
  const token = inputValue(created.text, "upload-token")!;
  const [row] = await h.db.select().from(projects).where(eq(projects.organizationId, people.organizationId));
  return { created, token, project: row! };
}

describe("/projects/new", () => {
  it("admins see the link on / and the form; the new project's token is shown once with the CLI line, and works", async () => {
    const people = await adminAndMember(h);
    expect((await people.admin.get("/")).text).toContain('href="/projects/new"');
    expect((await people.member.get("/")).text).not.toContain('href="/projects/new"');
    const form = await people.admin.get("/projects/new");
    expect(form.status).toBe(200);
    expect(form.text).toContain('name="name"');

    const { created, token, project } = await createdProject(people);
    expect(token).toMatch(/^ctu_/);
    // The uploader comes from this service, never from the npm registry (its name there is not ours); test/cli/uploader-commands-e2e.test.ts runs both lines.
    expect(created.text).toContain(
      `CTA_UPLOAD_TOKEN=${token} npx --yes --package=${PUBLIC_BASE_URL}/uploader/ci-test-analytics.tgz ci-test-analytics upload --url ${PUBLIC_BASE_URL} &#39;reports/**/*.xml&#39;`,
    );
    expect(created.text).toContain(
      `curl -fsSLO ${PUBLIC_BASE_URL}/uploader/ci-test-analytics.mjs &amp;&amp; CTA_UPLOAD_TOKEN=${token} node ci-test-analytics.mjs upload --url ${PUBLIC_BASE_URL}`,
    );
    expect(created.text).toContain(UPLOADER_TARBALL_SHA256);
    expect(created.text).toContain(UPLOADER_BUNDLE_SHA256);
    expect(created.text).not.toContain("npx ci-test-analytics");
    expect(created.text).toContain(`href="/projects/${project.id}"`);
    expect(project).toMatchObject({ name: "Checkout", description: "The shop's checkout", defaultBranch: null });
    expect(project.uploadTokenEncrypted).toMatch(/^v1:/);
    expect(project.uploadTokenEncrypted).not.toContain(token);

    // Once: no other page shows it unasked.
    for (const path of [`/projects/${project.id}`, `/projects/${project.id}/settings`, "/"])
      expect((await people.admin.get(path)).text).not.toContain(token);
    const run = await h.uploadAndWait(token, JUNIT, { query: "branch=main&commit_sha=abc123" });
    expect(run.status).toBe("processed");
  });
});

describe("/projects/:id overview", () => {
  it("shows the headline figures, the charts with text alternatives and data tables, and the latest runs linking to their pages", async () => {
    const people = await adminAndMember(h);
    const { token, project } = await createdProject(people);
    const empty = await people.member.get(`/projects/${project.id}`);
    expect(empty.status).toBe(200);
    expect(empty.text).toContain("No runs yet");
    // Nothing to measure: each figure and chart says so, no axis scaled to nothing ("1 ms", "0.50"), no "0.0 %".
    expect(empty.text).toContain('<dt>Pass rate</dt><dd class="figure-value">No runs</dd>');
    expect(empty.text).toContain('<dt>Median run duration</dt><dd class="figure-value">No runs</dd>');
    expect(empty.text).toContain('<dt>Skipped share</dt><dd class="figure-value">No tests run</dd>');
    expect(empty.text).not.toMatch(/0\.0 %|0\.50|>1 ms</);
    expect(empty.text).not.toContain("<svg");
    for (const text of [
      "No runs in the last 30 days.",
      "No run durations in the last 30 days.",
      "No flaky tests in the last 30 days.",
      "Flakiness cost no test time in the last 30 days.",
    ])
      expect(empty.text).toContain(`<p class="muted">${text}</p>`);

    await h.uploadAndWait(token, JUNIT, { query: "branch=main&commit_sha=abc123" });
    const page = await people.member.get(`/projects/${project.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain("Last 30 days");
    for (const label of ["Pass rate", "Runs", "Flaky tests", "Median run duration", "Skipped share", "Cost of flakiness"])
      expect(page.text).toContain(`<dt>${label}</dt>`);
    // One run with a failed test: a pass rate of 0 % (0 of 1 run), one skipped case of three.
    expect(page.text).toContain('<dd class="figure-value">0.0 %</dd><dd class="small">0 of 1 run passed</dd>');
    expect(page.text).toContain('<dd class="figure-value">33.3 %</dd>');
    // The chart with data is an image with a title, a description and a data table; the others say what they lack
    // (the report gave no run duration).
    expect(page.text).toContain("Data table: Runs by result");
    expect(page.text.match(/<svg [^>]*role="img"/g)).toHaveLength(1);
    expect(page.text.match(/<desc id=/g)).toHaveLength(1);
    expect(page.text).toContain('<dt>Median run duration</dt><dd class="figure-value">No durations</dd>');
    expect(page.text).toContain("No run durations in the last 30 days.");
    expect(page.text).toContain("No flaky tests in the last 30 days.");
    expect(page.text).toContain("Flakiness cost no test time in the last 30 days.");
    // One run a day at most: the runs axis reads 0 and 1, no "0.50".
    const runsChart = page.text.slice(page.text.indexOf('id="runs-by-result-caption"'), page.text.indexOf('id="run-duration-caption"'));
    expect([...runsChart.matchAll(/<text [^>]*text-anchor="end">([^<]*)<\/text>/g)].map((m) => m[1]).slice(0, 2)).toEqual(["0", "1"]);
    const today = h.clock.now().toISOString().slice(0, 10);
    expect(page.text).toContain(`<title>${today}: Passed 0, Tests failed 1, Tests errored 0</title>`);
    expect(page.text).toContain(`href="/projects/${project.id}/runs/1">#1</a>`);
    expect(page.text).toContain("<code>abc123</code>");
    expect(page.text).not.toContain("<script");
  });
});

describe("/projects/:id/settings", () => {
  it("an admin saves the name, description, default branch and auto-quarantine in one post", async () => {
    const people = await adminAndMember(h);
    const { project } = await createdProject(people);
    const saved = await people.admin.post(`/projects/${project.id}/settings`, {
      name: "Checkout v2",
      description: "Now with coupons",
      defaultBranch: " trunk ",
      autoQuarantineDays: "14",
      retentionDays: "30",
    });
    expect(saved.status).toBe(303);
    expect(saved.location).toBe(`/projects/${project.id}/settings`);
    const [row] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    expect(row).toMatchObject({
      name: "Checkout v2",
      description: "Now with coupons",
      defaultBranch: "trunk",
      autoQuarantineDays: 14,
      retentionDays: 30,
    });
    const page = await people.admin.get(saved.location!);
    expect(page.text).toContain("Settings saved.");
    expect(page.text).toContain('value="trunk"');
    expect(page.text).toContain('name="retentionDays" inputmode="numeric" pattern="[0-9]*" value="30"');

    const cleared = await people.admin.post(`/projects/${project.id}/settings`, {
      name: "Checkout v2",
      description: "",
      defaultBranch: "",
      autoQuarantineDays: "",
    });
    expect(cleared.status).toBe(303);
    const [after] = await h.db.select().from(projects).where(eq(projects.id, project.id));
    expect(after).toMatchObject({ description: null, defaultBranch: null, autoQuarantineDays: null, retentionDays: null });
  });

  it("reveal shows the token to admins and members; rotation shows a new one and the old one is refused on its next upload", async () => {
    const people = await adminAndMember(h);
    const { token, project } = await createdProject(people);
    for (const client of [people.admin, people.member]) {
      const revealed = await client.postAndFollow(`/projects/${project.id}/settings/upload-token/reveal`, {});
      expect(revealed.posted.status).toBe(303);
      expect(revealed.status).toBe(200);
      expect(inputValue(revealed.text, "upload-token")).toBe(token);
    }
    const rotated = await people.admin.postAndFollow(`/projects/${project.id}/settings/upload-token/rotate`, {});
    expect(rotated.posted.status).toBe(303);
    expect(rotated.status).toBe(200);
    const fresh = inputValue(rotated.text, "upload-token")!;
    expect(fresh).toMatch(/^ctu_/);
    expect(fresh).not.toBe(token);
    expect(rotated.text).toContain("the previous one is refused");
    expect((await h.upload(token, JUNIT)).status).toBe(401);
    expect((await h.upload(fresh, JUNIT)).status).toBe(202);
    const again = await people.member.postAndFollow(`/projects/${project.id}/settings/upload-token/reveal`, {});
    expect(inputValue(again.text, "upload-token")).toBe(fresh);
  });

  it("webhooks: an admin adds one (its signing secret shown once), sees it listed with the organization-wide ones, and removes it", async () => {
    const people = await adminAndMember(h);
    const { project } = await createdProject(people);
    const wide = await h.admin("POST", `/organizations/${people.organizationId}/webhooks`, { url: "http://127.0.0.1:9/all" });
    expect(wide.status).toBe(201);
    const added = await people.admin.postAndFollow(`/projects/${project.id}/settings/webhooks`, {
      url: "http://127.0.0.1:9/hook",
      description: "Chat",
    });
    expect(added.posted.status).toBe(303);
    expect(added.status).toBe(200);
    const secret = inputValue(added.text, "signing-secret")!;
    expect(secret).toMatch(/^whsec_/);
    const [endpoint] = await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project.id));
    expect(endpoint).toMatchObject({ url: "http://127.0.0.1:9/hook", description: "Chat", organizationId: people.organizationId });

    const page = await people.admin.get(`/projects/${project.id}/settings`);
    expect(page.text).not.toContain(secret);
    // An admin reads the URLs whole (a member reads them redacted: below).
    expect(page.text).toContain("<code>http://127.0.0.1:9/hook</code>");
    expect(page.text).toContain("<code>http://127.0.0.1:9/all</code>");
    expect(page.text).toContain("Every project (admin API)");
    // Removing goes through its confirmation page.
    expect(page.text).toContain(`action="/projects/${project.id}/settings/webhooks/${endpoint!.id}/delete"`);
    const confirm = await people.admin.get(`/projects/${project.id}/settings/webhooks/${endpoint!.id}/delete`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain("<code>http://127.0.0.1:9/hook</code> stops receiving");
    expect(confirm.text).toContain(`<form method="post" action="/projects/${project.id}/settings/webhooks/${endpoint!.id}/delete">`);
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project.id))).toHaveLength(1);
    expect(page.text).not.toContain(`/settings/webhooks/${wide.body.webhook.id}/delete`);

    const removed = await people.admin.post(`/projects/${project.id}/settings/webhooks/${endpoint!.id}/delete`, {});
    expect(removed.status).toBe(303);
    expect(await h.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.projectId, project.id))).toEqual([]);
    expect((await people.admin.get(removed.location!)).text).toContain("Webhook removed.");
  });

  it("a member reads the page: the form disabled, no save, rotate, add or remove controls", async () => {
    const people = await adminAndMember(h);
    const { project } = await createdProject(people);
    await people.admin.post(`/projects/${project.id}/settings/webhooks`, { url: "http://127.0.0.1:9/hook", description: "" });
    const page = await people.member.get(`/projects/${project.id}/settings`);
    expect(page.status).toBe(200);
    expect(page.text).toContain("<fieldset disabled");
    expect(page.text).toContain('value="Checkout"');
    expect(page.text).toContain("Reveal the upload token");
    // A member reads the URL redacted: webhook URLs often carry the receiver's credential.
    expect(page.text).toContain("http://127.0.0.1:9/…");
    expect(page.text).not.toContain("http://127.0.0.1:9/hook");
    for (const control of ["Save settings", "Rotate the upload token", "Add channel", "Send a test message", "/delete"])
      expect(page.text).not.toContain(control);
  });
});
