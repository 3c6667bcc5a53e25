/**
 * `npm run screenshots`: the web app's main pages as the demo admin sees them, saved as PNG under
 * docs/screenshots/ (shown in the README). It starts `npm start`'s server on an in-memory PGlite
 * with the demo, signs in with the printed password in Debian's Chromium (playwright-core), finds
 * the pages' ids through the API with the printed key, and photographs each page at 1280 px wide.
 * Run it again after changing a page.
 */
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { launchChromium } from "../test/support/browser";
import { startServerProcess } from "../test/support/server-process";

const outDir = fileURLToPath(new URL("../docs/screenshots/", import.meta.url));

const server = await startServerProcess({ DATABASE_URL: "memory://", SEED_DEMO: "true" }, { startTimeoutMs: 180_000 });
try {
  await server.until(() => /password: \S+/.test(server.output()) && /Bearer (\S+)"/.test(server.output()), 60_000);
  const output = server.output();
  const key = /Bearer (\S+)"/.exec(output)![1]!;
  const admin = /admin\s+(\S+@\S+)\s+password: (\S+)/.exec(output)!;
  const webApp = /Web app: (\S+?)\/? /.exec(output)![1]!;
  const api = async (path: string) => (await server.call("GET", path, key)).body;

  const projects = (await api("/api/v1/projects")).data as { id: string; name: string }[];
  const project = projects.find((p) => p.name === "checkout-service") ?? projects[0]!;
  const runs = (await api(`/api/v1/projects/${project.id}/test_runs?limit=50`)).data as { number: number; result: string }[];
  const failedRun = runs.find((run) => run.result === "tests_failed") ?? runs[0]!;
  const flakyTests = (await api(`/api/v1/projects/${project.id}/tests?health=flaky`)).data as { id: string }[];
  const alerts = (await api("/api/v1/alerts?status=all")).data as { id: string }[];

  const pages: { name: string; path: string }[] = [
    { name: "projects", path: "/" },
    { name: "project-overview", path: `/projects/${project.id}` },
    { name: "runs", path: `/projects/${project.id}/runs` },
    { name: "run", path: `/projects/${project.id}/runs/${failedRun.number}` },
    { name: "tests", path: `/projects/${project.id}/tests?health=flaky` },
    ...(flakyTests[0] ? [{ name: "test", path: `/projects/${project.id}/tests/${flakyTests[0].id}` }] : []),
    { name: "alerts", path: "/alerts" },
    ...(alerts[0] ? [{ name: "alert", path: `/alerts/${alerts[0].id}` }] : []),
    { name: "team", path: "/settings/team" },
    { name: "project-settings", path: `/projects/${project.id}/settings` },
  ];

  await mkdir(outDir, { recursive: true });
  const browser = await launchChromium();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: webApp });
    const page = await context.newPage();
    await page.goto("/sign-in");
    await page.screenshot({ path: `${outDir}sign-in.png` });
    await page.fill("input[name=email]", admin[1]!);
    await page.fill("input[name=password]", admin[2]!);
    await Promise.all([page.waitForURL((url) => url.pathname === "/"), page.click("button[type=submit]")]);
    for (const { name, path } of pages) {
      const response = await page.goto(path);
      if (!response || response.status() !== 200) throw new Error(`${path} answered ${response?.status()}`);
      await page.screenshot({ path: `${outDir}${name}.png`, fullPage: true });
      console.log(`docs/screenshots/${name}.png  ${path}`);
    }
  } finally {
    await browser.close();
  }
} finally {
  await server.stop();
}
