/**
 * The uploader's --url / CTA_URL: a base URL given with the API's own path (`…/api/v1`, which the
 * server prints at start, or `…/uploads/v1`) is the service's base URL, not a path prefix: the
 * upload still goes to `{base}/uploads/v1/test_runs`, with nothing extra printed.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../../packages/uploader/bin/ci-test-analytics.mjs", import.meta.url));
const TOKEN = `ctu_${"a1B2c3D4e5".repeat(4)}${"Z9y8x7w6v".slice(0, 9)}`;
const ACCEPTED = { number: 12, status: "pending", url: "https://app.example.test/projects/p1/runs/12" };

type Writable = { write(chunk: string): unknown };
type CliModule = {
  run(
    argv: string[],
    io: { env: Record<string, string>; cwd: string; stdout: Writable; stderr: Writable; fetch: typeof fetch },
  ): Promise<number>;
};

let cli: CliModule;
let dir: string;

beforeAll(async () => {
  cli = (await import(pathToFileURL(BIN).href)) as CliModule;
  dir = mkdtempSync(join(tmpdir(), "cta-cli-url-"));
  writeFileSync(join(dir, "junit.xml"), '<testsuite name="s" tests="1"><testcase name="t"/></testsuite>\n');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI in process with a fetch that answers like the service: the API key gate on /api/v1. */
async function upload(args: string[], env: Record<string, string> = {}) {
  const urls: string[] = [];
  let stdout = "";
  let stderr = "";
  const fetchFn = (async (input: string | URL | Request) => {
    const url = String(input);
    urls.push(url);
    if (new URL(url).pathname.includes("/api/v1/")) {
      return new Response('{"error":{"code":"unauthorized","message":"Invalid API key"}}', { status: 401 });
    }
    return new Response(JSON.stringify(ACCEPTED), { status: 202 });
  }) as typeof fetch;
  const code = await cli.run(["upload", ...args, "junit.xml"], {
    env: { PATH: process.env.PATH ?? "", ...env },
    cwd: dir,
    stdout: { write: (chunk) => (stdout += chunk) },
    stderr: { write: (chunk) => (stderr += chunk) },
    fetch: fetchFn,
  });
  return { code, urls, stdout, stderr };
}

describe("--url / CTA_URL given with the API's path", () => {
  const cases: [string, string][] = [
    ["https://svc.test/api/v1", "https://svc.test/uploads/v1/test_runs"],
    ["https://svc.test/api/v1/", "https://svc.test/uploads/v1/test_runs"],
    ["https://svc.test/uploads/v1", "https://svc.test/uploads/v1/test_runs"],
    ["https://svc.test/uploads/v1/", "https://svc.test/uploads/v1/test_runs"],
    // Behind a path prefix, the prefix is kept.
    ["https://svc.test/ci/api/v1", "https://svc.test/ci/uploads/v1/test_runs"],
    ["https://svc.test/ci/uploads/v1/", "https://svc.test/ci/uploads/v1/test_runs"],
  ];

  for (const [base, endpoint] of cases) {
    it(`--url ${base} uploads to ${endpoint}, printing nothing extra`, async () => {
      const result = await upload(["--url", base, "--token", TOKEN]);
      expect(result).toEqual({
        code: 0,
        urls: [endpoint],
        stdout: `Uploaded 1 file as test run #12 (pending): ${ACCEPTED.url}\n`,
        stderr: "",
      });
    });
  }

  it("CTA_URL ending in /api/v1 is read the same way", async () => {
    const result = await upload([], { CTA_URL: "https://svc.test/ci/api/v1/", CTA_UPLOAD_TOKEN: TOKEN });
    expect(result).toMatchObject({ code: 0, urls: ["https://svc.test/ci/uploads/v1/test_runs"], stderr: "" });
  });

  it("other paths stay path prefixes", async () => {
    for (const [base, endpoint] of [
      ["https://svc.test/api", "https://svc.test/api/uploads/v1/test_runs"],
      ["https://svc.test/v1/", "https://svc.test/v1/uploads/v1/test_runs"],
      ["https://svc.test/api/v10", "https://svc.test/api/v10/uploads/v1/test_runs"],
      ["https://svc.test/myapi/v1", "https://svc.test/myapi/v1/uploads/v1/test_runs"],
    ]) {
      expect((await upload(["--url", base!, "--token", TOKEN])).urls).toEqual([endpoint]);
    }
  });

  it("the bin, run as a command against a server, uploads with the URL the server prints", async () => {
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      req.resume();
      req.on("end", () => {
        const denied = req.url?.startsWith("/api/v1/");
        res.writeHead(denied ? 401 : 202, { "content-type": "application/json" });
        res.end(JSON.stringify(denied ? { error: { code: "unauthorized", message: "Invalid API key" } } : ACCEPTED));
      });
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const { port } = server.address() as AddressInfo;
    try {
      const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
        const child = spawn(process.execPath, [BIN, "upload", "junit.xml"], {
          cwd: dir,
          env: { PATH: process.env.PATH ?? "", CTA_URL: `http://127.0.0.1:${port}/api/v1`, CTA_UPLOAD_TOKEN: TOKEN },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
        child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
        child.on("error", fail);
        child.on("close", (code) => done({ code, stdout, stderr }));
      });
      expect(result).toEqual({ code: 0, stdout: `Uploaded 1 file as test run #12 (pending): ${ACCEPTED.url}\n`, stderr: "" });
      expect(paths).toEqual(["POST /uploads/v1/test_runs"]);
    } finally {
      await new Promise<void>((done) => server.close(() => done()));
    }
  });
});
