/**
 * `npm run screenshots`: every page of the web app as the demo admin sees it, saved as PNG under
 * docs/screenshots/ (the README shows the 1280 px set). It starts `npm start`'s server on an
 * in-memory PGlite with the demo, signs in with the printed password in Debian's Chromium
 * (playwright-core), finds the pages' ids through the API with the printed key, and photographs
 * each page at 1280 px wide: the signed-out pages (sign-in, sign-up and its confirmation, password
 * reset, an invitation's link, the 404), then the admin's, with what the demo lacks made through
 * the pages' own forms (an empty project at /projects/new with its one-time token, a quarantine,
 * notification channels). The main pages (projects, a project's overview, runs, a run, tests, a
 * test, alerts, an alert) and the empty project are also taken at 375 px (`*-375.png`). A long
 * page is cut at MAX_HEIGHT. Run it again after changing a page.
 */
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { launchChromium } from "../test/support/browser";
import { startServerProcess } from "../test/support/server-process";

const outDir = fileURLToPath(new URL("../docs/screenshots/", import.meta.url));
const WIDE = { width: 1280, height: 800 };
const NARROW = { width: 375, height: 800 };
/** The tallest a screenshot gets (px): the top of a long page says what it is; keeps each PNG small. */
const MAX_HEIGHT = 2400;
const ADMIN_TOKEN = `screenshots-${crypto.randomUUID()}`;

const server = await startServerProcess({ DATABASE_URL: "memory://", SEED_DEMO: "true", ADMIN_TOKEN }, { startTimeoutMs: 180_000 });
try {
  await server.until(() => /member\s+\S+@\S+\s+password: \S+\n/.test(server.output()) && /Bearer (\S+)"/.test(server.output()), 60_000);
  const output = server.output();
  const key = /Bearer (\S+)"/.exec(output)![1]!;
  const admin = /admin\s+(\S+@\S+)\s+password: (\S+)/.exec(output)!;
  const webApp = /Web app: (\S+?)\/? /.exec(output)![1]!;
  const api = async (path: string) => (await server.call("GET", path, key)).body;
  const adminApi = async (method: string, path: string, body: unknown) => {
    const answer = await server.call(method, `/admin/v1${path}`, ADMIN_TOKEN, JSON.stringify(body), { "content-type": "application/json" });
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };

  const projects = (await api("/api/v1/projects")).data as { id: string; name: string }[];
  const project = projects.find((p) => p.name === "checkout-service") ?? projects[0]!;
  const runs = (await api(`/api/v1/projects/${project.id}/test_runs?limit=100`)).data as {
    number: number;
    result: string;
    verdict_counts: Record<string, number> | null;
  }[];
  // The failed run whose comparison has the most kinds of verdict (the run page's verdict lists), the newest of those.
  const kinds = (run: (typeof runs)[number]) => Object.values(run.verdict_counts ?? {}).filter((count) => count > 0).length;
  const failedRun = runs
    .filter((run) => run.result !== "tests_passed")
    .reduce((best, run) => (kinds(run) > kinds(best) ? run : best), runs[0]!);
  const verdict = Object.entries(failedRun.verdict_counts ?? {}).find(([, count]) => count > 0)?.[0] ?? "new";
  const flakyTests = (await api(`/api/v1/projects/${project.id}/tests?health=flaky`)).data as { id: string }[];
  const alerts = (await api("/api/v1/alerts?status=all")).data as { id: string; events_count: number }[];
  const alert = alerts.reduce((best, candidate) => (candidate.events_count > best.events_count ? candidate : best), alerts[0]!);
  const organization = await api("/api/v1/organization");
  // An invitation's link, as its invitee opens it (signed out).
  const invitation = await adminApi("POST", `/organizations/${organization.id}/invitations`, {
    email: "new-colleague@example.com",
    role: "member",
  });

  await mkdir(outDir, { recursive: true });
  const browser = await launchChromium();
  try {
    const context = await browser.newContext({ viewport: WIDE, baseURL: webApp });
    const page = await context.newPage();
    const shot = async (name: string, viewport = WIDE) => {
      await page.setViewportSize(viewport);
      const height = (await page.evaluate("document.documentElement.scrollHeight")) as number;
      const file = `${name}${viewport === NARROW ? "-375" : ""}.png`;
      await page.screenshot({
        path: `${outDir}${file}`,
        fullPage: true,
        ...(height > MAX_HEIGHT ? { clip: { x: 0, y: 0, width: viewport.width, height: MAX_HEIGHT } } : {}),
      });
      console.log(`docs/screenshots/${file}  ${new URL(page.url()).pathname}${new URL(page.url()).search}`);
      await page.setViewportSize(WIDE);
    };
    const open = async (path: string, status = 200) => {
      const response = await page.goto(path);
      if (!response || response.status() !== status) throw new Error(`${path} answered ${response?.status()}, not ${status}`);
    };
    const submit = async (button: string, url: Parameters<Page["waitForURL"]>[0]) => {
      await Promise.all([page.waitForURL(url), page.getByRole("button", { name: button, exact: true }).click()]);
    };

    // Signed out.
    await open("/sign-in");
    await shot("sign-in");
    await open("/sign-up");
    await shot("sign-up");
    await page.getByLabel("Your name").fill("Grace Hopper");
    await page.getByLabel("E-mail").fill("grace@example.com");
    await page.getByLabel("Password").fill("a screenshot password");
    await page.getByLabel("Organization name").fill("Compilers Inc");
    await submit("Create organization", /\/sign-up\/sent$/);
    await shot("sign-up-sent");
    await Promise.all([page.waitForURL(/\/verify-email\//), page.getByTestId("confirmation-link").click()]);
    await shot("verify-email");
    await open("/reset-password");
    await shot("reset-password");
    await page.getByLabel("E-mail").fill(admin[1]!);
    await submit("Send me a link", /\/reset-password\/sent$/);
    await shot("reset-password-sent");
    await Promise.all([page.waitForURL(/\/reset-password\/[^/]+$/), page.getByTestId("reset-link").click()]);
    await shot("reset-password-new");
    await open(new URL(invitation.invitation_url as string).pathname);
    await shot("invitation");
    await open("/no-such-page", 404);
    await shot("not-found");

    // The demo admin.
    await open("/sign-in");
    await page.getByLabel("E-mail").fill(admin[1]!);
    await page.getByLabel("Password").fill(admin[2]!);
    await submit("Sign in", (url) => url.pathname === "/");
    await shot("projects");
    await shot("projects", NARROW);

    // An empty project, made at /projects/new: its one-time token, then its pages.
    await open("/projects/new");
    await shot("new-project");
    await page.getByLabel("Name").fill("empty-project");
    await page.getByLabel(/^Description/).fill("A project that has not uploaded a run yet.");
    await submit("Create project", /\/created$/);
    await shot("project-created");
    const empty = new URL(page.url()).pathname.replace(/\/created$/, "");
    await open(empty);
    await shot("empty-project");
    await shot("empty-project", NARROW);
    await open(`${empty}/tests`);
    await shot("empty-project-tests");

    const base = `/projects/${project.id}`;
    const pages: { name: string; path: string; narrow?: boolean }[] = [
      { name: "project-overview", path: base, narrow: true },
      { name: "runs", path: `${base}/runs`, narrow: true },
      { name: "run", path: `${base}/runs/${failedRun.number}`, narrow: true },
      { name: "run-failures", path: `${base}/runs/${failedRun.number}/failures?verdict=${verdict}` },
      { name: "tests", path: `${base}/tests?health=flaky`, narrow: true },
      ...(flakyTests[0] ? [{ name: "test", path: `${base}/tests/${flakyTests[0].id}`, narrow: true }] : []),
      { name: "alerts", path: "/alerts", narrow: true },
      ...(alert ? [{ name: "alert", path: `/alerts/${alert.id}`, narrow: true }] : []),
      { name: "organizations", path: "/organizations" },
    ];
    for (const { name, path, narrow } of pages) {
      await open(path);
      await shot(name);
      if (narrow) await shot(name, NARROW);
    }

    // A quarantined test: quarantined on its page.
    if (flakyTests[1]) {
      await open(`${base}/tests/${flakyTests[1].id}`);
      await page.getByLabel("Reason").fill("Times out on the shared runners; owned by payments");
      await page.getByLabel("Owner (optional: e-mail or @org/team)").fill("@acme/payments");
      await page.getByLabel("Issue URL (optional)").fill("https://issues.example.com/PAY-142");
      await submit("Quarantine", /\?done=quarantined$/);
      await shot("test-quarantined");
    }

    // The team, with an invitation pending (above).
    await open("/settings/team");
    await shot("team");

    // The project's settings with notification channels (added on the page; nothing is sent) and the token revealed.
    await open(`${base}/settings`);
    const addChannel = async (kind: string, url: string, owner: string, description: string) => {
      await page.getByLabel("Kind").selectOption({ label: kind });
      await page.getByLabel(/^URL/).fill(url);
      await page.getByLabel(/^Owner/).fill(owner);
      await page
        .getByLabel(/^Description/)
        .last()
        .fill(description);
      await submit("Add channel", (url) => url.pathname === `${base}/settings`);
    };
    await addChannel("Slack", "https://hooks.slack.com/services/T0DEMO/B0DEMO/demo", "@acme/payments", "#payments-ci");
    await addChannel("Signed webhook", "https://hooks.example.com/ci-analytics", "", "Incident bot");
    await submit("Reveal the upload token", (url) => url.pathname === `${base}/settings`);
    await shot("project-settings");
    await open(`${base}/settings/upload-token/rotate`);
    await shot("confirm-rotate-token");
  } finally {
    await browser.close();
  }
} finally {
  await server.stop();
}
