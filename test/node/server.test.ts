/**
 * `npm start` as a new user meets it: the Node entry starts on an in-memory database, seeds the
 * demo organization, prints a curl line, and that exact line works; the demo's people sign in to
 * the web app with the printed passwords.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill("SIGTERM");
});

/** Starts the server; resolves once it printed `ready` (by default: the demo's curl line, or that the key was printed before). */
function startServer(
  env: Record<string, string>,
  ready = /curl .*\n|demo key was printed/,
): Promise<{ output: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/node/server.ts"], {
    cwd: root,
    env: { ...process.env, PORT: "0", DATABASE_URL: "memory://", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`server did not print a curl line:\n${output}`)), 90_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve({ output, child });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("exit", (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
}

describe("npm start", () => {
  it("serves the API on an embedded database and the printed curl line works", async () => {
    const { output } = await startServer({ ADMIN_TOKEN: "e2e-admin-token-123456" }, /demo-member@example\.com {2}password: \S+\n/);
    expect(output).toMatch(/listening on http:\/\/localhost:\d+\/api\/v1/);
    expect(output).toContain("Admin API enabled");
    const curlLine = /^\s*(curl .*)$/m.exec(output)![1]!;
    expect(curlLine).toMatch(/^curl -H "Authorization: Bearer cta_[0-9A-Za-z]{49}" http:\/\/localhost:\d+\/api\/v1\/projects$/);

    const args = [...curlLine.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1);
    const { stdout } = await promisify(execFile)("curl", ["-sS", "--fail-with-body", ...args]);
    const body = JSON.parse(stdout);
    expect(body.data.length).toBeGreaterThanOrEqual(3);
    expect(body.pagination).toEqual({ next_cursor: null, has_more: false });
    expect(body.data.every((p: { test_runs_count: number }) => p.test_runs_count > 0)).toBe(true);

    // The demo has alerts with events and a run embedded in each.
    const key = /Bearer (cta_[0-9A-Za-z]+)/.exec(curlLine)![1]!;
    const base = /(http:\/\/localhost:\d+)/.exec(curlLine)![1]!;
    const alerts: any = await (
      await fetch(`${base}/api/v1/alerts?status=all&limit=100`, { headers: { authorization: `Bearer ${key}` } })
    ).json();
    const withEvents = alerts.data.filter((a: { events_count: number }) => a.events_count > 0);
    expect(withEvents.length).toBeGreaterThan(0);
    const events: any = await (
      await fetch(`${base}/api/v1/alerts/${withEvents[0].id}/events`, { headers: { authorization: `Bearer ${key}` } })
    ).json();
    expect(events.data[0].test_run.number).toBeGreaterThan(0);
    expect(alerts.data.some((a: { snoozed: boolean }) => a.snoozed)).toBe(true);
    expect(alerts.data.some((a: { active: boolean }) => !a.active)).toBe(true);

    // The demo's admin and member sign in with the printed passwords and see the demo's projects.
    const people = [...output.matchAll(/^\s+(admin|member)\s+(\S+@example\.com) {2}password: (\S+)$/gm)].map((m) => ({
      role: m[1],
      email: m[2]!,
      password: m[3]!,
    }));
    expect(people.map((p) => [p.role, p.email])).toEqual([
      ["admin", "demo-admin@example.com"],
      ["member", "demo-member@example.com"],
    ]);
    for (const person of people) {
      const signIn = await fetch(`${base}/sign-in`, {
        method: "POST",
        redirect: "manual",
        headers: { origin: base, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ email: person.email, password: person.password }),
      });
      expect(signIn.status).toBe(303);
      const cookie = signIn.headers
        .getSetCookie()
        .map((line) => line.split(";")[0])
        .join("; ");
      const home = await fetch(`${base}/`, { headers: { cookie } });
      expect(home.status).toBe(200);
      const html = await home.text();
      expect(html).toContain("Demo Organization");
      expect(html).toContain("checkout-service");
    }
  });

  it("the uploader CLI sends a fixture to the running server and the run is processed", async () => {
    const adminToken = "e2e-admin-token-654321";
    // No demo (the first test covers it): an organization of our own through the admin API.
    const { output } = await startServer({ ADMIN_TOKEN: adminToken, SEED_DEMO: "false" }, /Admin API enabled.*\n/);
    const base = /(http:\/\/localhost:\d+)/.exec(output)![1]!;
    const newOrg: any = await (
      await fetch(`${base}/admin/v1/organizations`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "CLI org" }),
      })
    ).json();
    const key = newOrg.api_key.secret as string;
    const org = newOrg.organization;
    const created: any = await (
      await fetch(`${base}/admin/v1/organizations/${org.id}/projects`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "CLI upload" }),
      })
    ).json();
    const token = created.upload_token as string;

    const cli = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
    const fixture = fileURLToPath(new URL("../fixtures/junit/maven-surefire.xml", import.meta.url));
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [cli, "upload", "--url", base, "--token", token, "--branch", "main", "--commit-sha", "abc1234", "--wait", fixture],
      {
        env: { ...process.env, GITHUB_ACTIONS: "", GITLAB_CI: "", BUILDKITE: "", CIRCLECI: "", JENKINS_URL: "", JENKINS_HOME: "" },
      },
    );
    expect(stdout + stderr).not.toContain(token);
    expect(stdout).toMatch(/test run #1/);

    // Without OUTBOUND_ALLOW_HOSTS, webhooks go to public https hosts only: loopback is refused, however spelled.
    const webhook = (url: string) =>
      fetch(`${base}/admin/v1/organizations/${org.id}/webhooks`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ url }),
      });
    for (const host of [
      "127.0.0.1:9999",
      "localhost:9999",
      "2130706433:9999",
      "0x7f000001:9999",
      "127.1:9999",
      "0177.0.0.1:9999",
      "%31%32%37.0.0.1:9999",
      "[::1]:9999",
      "[::ffff:127.0.0.1]:9999",
    ]) {
      for (const scheme of ["http", "https"]) expect((await webhook(`${scheme}://${host}/hook`)).status, `${scheme}://${host}`).toBe(422);
    }
    expect((await webhook("http://example.com/hook")).status).toBe(422);
    expect((await webhook("https://hooks.example.com/hook")).status).toBe(201);

    const run: any = await (
      await fetch(`${base}/api/v1/projects/${created.project.id}/test_runs/1`, { headers: { authorization: `Bearer ${key}` } })
    ).json();
    expect(run).toMatchObject({ status: "processed", branch: "main", commit_sha: "abc1234" });
    expect(run.tests_count).toBeGreaterThan(0);
  });

  it("OUTBOUND_ALLOW_HOSTS lets a local webhook receiver in, and only the hosts it names; a malformed one fails the start", async () => {
    const adminToken = "e2e-admin-token-777777";
    const env = {
      ADMIN_TOKEN: adminToken,
      SEED_DEMO: "false",
      PUBLIC_BASE_URL: "https://ci.example.com",
      OUTBOUND_ALLOW_HOSTS: "127.0.0.1:9999,localhost",
    };
    const { output } = await startServer(env, /Admin API enabled.*\n/);
    const base = /(http:\/\/localhost:\d+)/.exec(output)![1]!;
    const admin = (path: string, body: unknown) =>
      fetch(`${base}/admin/v1${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const org: any = await (await admin("/organizations", { name: "Local receivers" })).json();
    const webhook = (url: string) => admin(`/organizations/${org.organization.id}/webhooks`, { url });
    expect((await webhook("http://127.0.0.1:9999/hook")).status).toBe(201);
    expect((await webhook("http://localhost:3000/hook")).status).toBe(201);
    expect((await webhook("http://127.0.0.1:9998/hook")).status).toBe(422);
    expect((await webhook("http://[::1]:9999/hook")).status).toBe(422);
    await expect(startServer({ OUTBOUND_ALLOW_HOSTS: "http://localhost/" })).rejects.toThrow(/OUTBOUND_ALLOW_HOSTS/);
  });

  it("refuses a DATABASE_URL it cannot use, with a clear message", async () => {
    await expect(startServer({ DATABASE_URL: "mysql://nope" })).rejects.toThrow(/Unsupported DATABASE_URL/);
  });
});
