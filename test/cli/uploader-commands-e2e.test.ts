/**
 * The upload commands the web app shows, run as a person pastes them (the security finding: the
 * page used to say `npx ci-test-analytics`, a name that is not ours on the npm registry). The real
 * Node server (src/node/server.ts on an in-memory PGlite) listens on a local port, which is also
 * its PUBLIC_BASE_URL; a person signs up and creates a project on /projects/new; the two command
 * lines are taken from that page's HTML and each is run with `sh -c` in an empty temporary folder
 * holding a JUnit report, with nothing of the host's environment but PATH (HOME, the npm cache
 * and npm's settings are the folder's own). npm's registry is set to a closed port, so npx can
 * only get the uploader from the service: the command succeeds only if the tarball the service
 * serves installs and runs. Each upload must arrive as a run of the project.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UPLOADER_BUNDLE_SHA256, UPLOADER_TARBALL_SHA256 } from "../../src/lib/uploader-package";
import { downloadCommand, uploadCommand } from "../../src/web/project-forms";
import { WEB_APP_URL } from "../support/constants";
import { type ServerProcess, startServerProcess } from "../support/server-process";
import { WebClient, uniqueEmail } from "../support/web-client";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BUNDLE = readFileSync(join(ROOT, "packages/uploader/bin/ci-test-analytics.mjs"));
const JUNIT = `<?xml version="1.0"?>\n<testsuite name="pasted"><testcase classname="Pasted" name="works" time="0.1"/><testcase classname="Pasted" name="fails" time="0.2"><failure message="no">trace</failure></testcase></testsuite>\n`;

let server: ServerProcess;
let dir: string;
let page: string;
let token: string;

/** The text of the `<pre id="…"><code>` on the page, its HTML entities decoded: what a person copies. */
function shownCommand(html: string, id: string): string {
  const match = new RegExp(`<pre[^>]*\\bid="${id}"[^>]*>\\s*<code>([\\s\\S]*?)</code>`).exec(html);
  if (!match) throw new Error(`no <pre id="${id}"> on the page:\n${html}`);
  return match[1]!
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

/** A new empty folder with reports/unit/junit.xml in it, as a CI checkout would have. */
function workFolder(name: string): string {
  const folder = join(dir, name);
  mkdirSync(join(folder, "reports", "unit"), { recursive: true });
  writeFileSync(join(folder, "reports", "unit", "junit.xml"), JUNIT);
  return folder;
}

type ShellResult = { code: number | null; stdout: string; stderr: string };

/** `sh -c command` in `cwd` with PATH and nothing else of the host: HOME, npm's cache and settings are the test's. */
function pasted(command: string, cwd: string): Promise<ShellResult> {
  const home = join(dir, "home");
  mkdirSync(home, { recursive: true });
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: home,
    npm_config_cache: join(dir, "npm-cache"),
    npm_config_userconfig: join(home, ".npmrc"),
    // Nothing may come from a registry: a closed port in its place.
    npm_config_registry: "http://127.0.0.1:9/",
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
    npm_config_fetch_retries: "0",
  };
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", command], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The run as the upload interface answers it with the project's token. */
async function run(number: number) {
  const response = await fetch(`${server.base}/uploads/v1/test_runs/${number}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as { number: number; status: string } };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cta-pasted-"));
  // No PUBLIC_BASE_URL: the listening origin (http://localhost:PORT) is the public base the page uses.
  server = await startServerProcess({
    DATABASE_URL: "memory://",
    PUBLIC_BASE_URL: "",
    WEB_APP_URL,
    SECRETS_KEY: "pasted-secrets-key-0123456789abcdefghijklm",
  });
  const person = new WebClient({ request: (path, init) => fetch(`${server.base}${path}`, init) });
  await person.signUp({ email: uniqueEmail("paste"), organization: "Pasted commands" });
  const created = await person.postAndFollow("/projects/new", { name: "Pasted", description: "", defaultBranch: "" });
  expect(created.posted.status, created.posted.text.slice(0, 500)).toBe(303);
  expect(created.status, created.text.slice(0, 500)).toBe(200);
  page = created.text;
  token =
    /<input[^>]*id="upload-token"[^>]*value="([^"]+)"/.exec(page)?.[1] ??
    /<input[^>]*value="([^"]+)"[^>]*id="upload-token"/.exec(page)![1]!;
}, 180_000);

afterAll(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the commands on /projects/new, pasted into a shell", () => {
  it("the page shows both commands for this service, with the SHA-256 of what they fetch", () => {
    expect(token).toMatch(/^ctu_/);
    expect(shownCommand(page, "upload-command")).toBe(uploadCommand(server.base, token));
    expect(shownCommand(page, "upload-command")).toBe(
      `CTA_UPLOAD_TOKEN=${token} npx --yes --package=${server.base}/uploader/ci-test-analytics.tgz ci-test-analytics upload --url ${server.base} 'reports/**/*.xml'`,
    );
    expect(shownCommand(page, "download-command")).toBe(downloadCommand(server.base, token));
    expect(page).toContain(UPLOADER_TARBALL_SHA256);
    expect(page).toContain(UPLOADER_BUNDLE_SHA256);
  });

  it("over Node's HTTP server: HEAD and GET of both files agree, with the digests the page shows", async () => {
    for (const [path, sha256, bytes] of [
      ["/uploader/ci-test-analytics.tgz", UPLOADER_TARBALL_SHA256, null],
      ["/uploader/ci-test-analytics.mjs", UPLOADER_BUNDLE_SHA256, BUNDLE],
    ] as const) {
      const head = await fetch(`${server.base}${path}`, { method: "HEAD" });
      expect(head.status, path).toBe(200);
      expect(head.headers.get("etag"), path).toBe(`"${sha256}"`);
      const get = await fetch(`${server.base}${path}`);
      const body = Buffer.from(await get.arrayBuffer());
      expect(head.headers.get("content-length"), path).toBe(String(body.length));
      expect(createHash("sha256").update(body).digest("hex"), path).toBe(sha256);
      if (bytes) expect(Buffer.compare(body, bytes), path).toBe(0);
    }
  });

  it("npx: installs the uploader from the service's tarball (no registry) and uploads the reports; the run arrives", async () => {
    const folder = workFolder("npx");
    const result = await pasted(shownCommand(page, "upload-command"), folder);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    const number = Number(/Uploaded 1 file as test run #(\d+) \(pending\)/.exec(result.stdout)?.[1]);
    expect(number, result.stdout).toBeGreaterThan(0);
    const arrived = await run(number);
    expect(arrived.status).toBe(200);
    expect(arrived.body.number).toBe(number);
    // What npx ran is the package from the service: the bundle this build checked in.
    const npx = join(dir, "npm-cache", "_npx");
    const installed = readdirSync(npx)
      .map((hash) => join(npx, hash, "node_modules", "ci-test-analytics-uploader", "bin", "ci-test-analytics.mjs"))
      .filter((path) => existsSync(path));
    expect(installed).toHaveLength(1);
    expect(Buffer.compare(readFileSync(installed[0]!), BUNDLE)).toBe(0);
    // npx installed into its cache, not into the folder.
    expect(readdirSync(folder)).toEqual(["reports"]);
  }, 180_000);

  it("curl and node: downloads the one file from the service and uploads the reports; the run arrives", async () => {
    const folder = workFolder("curl");
    const result = await pasted(shownCommand(page, "download-command"), folder);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(Buffer.compare(readFileSync(join(folder, "ci-test-analytics.mjs")), BUNDLE)).toBe(0);
    const number = Number(/Uploaded 1 file as test run #(\d+) \(pending\)/.exec(result.stdout)?.[1]);
    expect(number, result.stdout).toBeGreaterThan(0);
    expect((await run(number)).status).toBe(200);
  }, 120_000);

  it("the old line, `npx ci-test-analytics`, is what fails without the service's package (no such package reachable)", async () => {
    const folder = workFolder("old");
    const result = await pasted(
      `CTA_UPLOAD_TOKEN=${token} npx --yes ci-test-analytics upload --url ${server.base} 'reports/**/*.xml'`,
      folder,
    );
    expect(result.code).not.toBe(0);
  }, 180_000);
});
