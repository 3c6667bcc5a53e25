/**
 * GET /uploader/ci-test-analytics.mjs and /uploader/ci-test-analytics.tgz (src/routes/uploader.ts):
 * the uploader this build was made with, public, with its SHA-256 as ETag. Runs on Node and, as a
 * contract file, in workerd against the Worker (vitest.config.ts, the workerd tier), so both runtimes
 * serve the same bytes. The bytes are compared with the checked-in files themselves (read by the
 * test runner, not through the app), and the tarball is read here with a reader of its own: the
 * real npm installs it in test/cli/uploader-commands-e2e.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bundleText from "../../packages/uploader/bin/ci-test-analytics.mjs?raw";
import noticesText from "../../packages/uploader/THIRD-PARTY-NOTICES.md?raw";
import readmeText from "../../packages/uploader/README.md?raw";
import packageJsonText from "../../packages/uploader/package.json?raw";
import { UPLOADER_BUNDLE_SHA256, UPLOADER_TARBALL_SHA256 } from "../../src/lib/uploader-package";
import { type Harness, createHarness } from "../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const MJS = "/uploader/ci-test-analytics.mjs";
const TGZ = "/uploader/ci-test-analytics.tgz";

async function fetchBytes(path: string, init: RequestInit = {}) {
  const response = await h.app.request(path, init);
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) };
}

async function sha256(bytes: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());
}

/** name → { text, mode, type } of a tar archive's entries, read here rather than with the service's reader. */
function tarEntries(tar: Uint8Array) {
  const ascii = (from: number, length: number) => new TextDecoder().decode(tar.subarray(from, from + length)).replace(/\0.*$/s, "");
  const entries = new Map<string, { text: string; mode: number; type: string; magic: string }>();
  let offset = 0;
  while (offset + 512 <= tar.length && tar.subarray(offset, offset + 512).some((b) => b !== 0)) {
    const size = parseInt(ascii(offset + 124, 12), 8);
    entries.set(ascii(offset, 100), {
      text: new TextDecoder().decode(tar.subarray(offset + 512, offset + 512 + size)),
      mode: parseInt(ascii(offset + 100, 8), 8),
      type: ascii(offset + 156, 1),
      magic: ascii(offset + 257, 6),
    });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return entries;
}

describe("GET /uploader/ci-test-analytics.mjs", () => {
  it("is the checked-in bundle, byte for byte, as JavaScript, with its SHA-256 as ETag; no key needed", async () => {
    const { response, bytes } = await fetchBytes(MJS);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("cache-control")).toBe("public, max-age=300");
    expect(response.headers.get("etag")).toBe(`"${UPLOADER_BUNDLE_SHA256}"`);
    expect(response.headers.get("content-length")).toBe(String(bytes.length));
    expect(
      new TextDecoder().decode(bytes) === bundleText,
      "the served bundle differs from packages/uploader/bin/ci-test-analytics.mjs",
    ).toBe(true);
    expect(await sha256(bytes)).toBe(UPLOADER_BUNDLE_SHA256);
    expect(await sha256(new TextEncoder().encode(bundleText))).toBe(UPLOADER_BUNDLE_SHA256);
    expect(bundleText.startsWith("#!/usr/bin/env node\n")).toBe(true);
  });
});

describe("GET /uploader/ci-test-analytics.tgz", () => {
  it("is an npm package tarball of packages/uploader (package/… entries, the bin executable), as a gzip download with its SHA-256 as ETag", async () => {
    const { response, bytes } = await fetchBytes(TGZ);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/gzip");
    expect(response.headers.get("content-disposition")).toBe('attachment; filename="ci-test-analytics.tgz"');
    expect(response.headers.get("cache-control")).toBe("public, max-age=300");
    expect(response.headers.get("etag")).toBe(`"${UPLOADER_TARBALL_SHA256}"`);
    expect(response.headers.get("content-length")).toBe(String(bytes.length));
    expect(await sha256(bytes)).toBe(UPLOADER_TARBALL_SHA256);
    expect([bytes[0], bytes[1]]).toEqual([0x1f, 0x8b]);

    const entries = tarEntries(await gunzip(bytes));
    expect([...entries.keys()].sort()).toEqual([
      "package/README.md",
      "package/THIRD-PARTY-NOTICES.md",
      "package/bin/ci-test-analytics.mjs",
      "package/package.json",
    ]);
    for (const entry of entries.values()) {
      expect(entry.type).toBe("0");
      expect(entry.magic).toBe("ustar");
    }
    const pkg = JSON.parse(entries.get("package/package.json")!.text);
    expect(pkg.bin).toEqual({ "ci-test-analytics": "bin/ci-test-analytics.mjs" });
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(entries.get("package/package.json")!.text).toBe(packageJsonText);
    expect(
      entries.get("package/bin/ci-test-analytics.mjs")!.text === bundleText,
      "the tarball's bin differs from the checked-in bundle",
    ).toBe(true);
    expect(entries.get("package/bin/ci-test-analytics.mjs")!.mode).toBe(0o755);
    expect(entries.get("package/THIRD-PARTY-NOTICES.md")!.text).toBe(noticesText);
    expect(entries.get("package/README.md")!.text).toBe(readmeText);
    expect(entries.get("package/package.json")!.mode).toBe(0o644);
  });

  it("the same bytes on every request", async () => {
    const [first, second] = await Promise.all([fetchBytes(TGZ), fetchBytes(TGZ)]);
    expect(await sha256(first.bytes)).toBe(await sha256(second.bytes));
  });
});

describe("both files", () => {
  it.each([MJS, TGZ])("%s: HEAD answers the headers without a body", async (path) => {
    const get = await fetchBytes(path);
    const { response, bytes } = await fetchBytes(path, { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(bytes.length).toBe(0);
    for (const name of ["content-type", "etag", "cache-control", "content-length", "content-disposition"])
      expect(response.headers.get(name), name).toBe(get.response.headers.get(name));
  });

  it.each([MJS, TGZ])("%s: If-None-Match with its ETag is a 304; another tag gets the file", async (path) => {
    const etag = (await fetchBytes(path)).response.headers.get("etag")!;
    const unchanged = await fetchBytes(path, { headers: { "if-none-match": `W/"x", ${etag}` } });
    expect(unchanged.response.status).toBe(304);
    expect(unchanged.bytes.length).toBe(0);
    expect(unchanged.response.headers.get("etag")).toBe(etag);
    expect(unchanged.response.headers.get("cache-control")).toBe("public, max-age=300");
    const changed = await fetchBytes(path, { headers: { "if-none-match": '"0000"' } });
    expect(changed.response.status).toBe(200);
    expect(changed.bytes.length).toBeGreaterThan(0);
  });

  it.each([MJS, TGZ])("%s: other methods are a 405 with Allow, in the error envelope", async (path) => {
    const res = await h.call("POST", path, { rawBody: "x" });
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe("method_not_allowed");
    expect(res.headers.get("allow")).toBe("GET, HEAD");
  });
});

describe("other paths below /uploader/", () => {
  it.each([
    "/uploader/",
    "/uploader",
    "/uploader/ci-test-analytics.js",
    "/uploader/ci-test-analytics-uploader-0.2.0.tgz",
    "/uploader/ci-test-analytics.mjs/x",
    "/uploader/../package.json",
  ])("%s is a 404 in the error envelope", async (path) => {
    const res = await h.get(path);
    expect(res.status, res.text).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(Object.keys(res.body)).toEqual(["error"]);
    expect(res.body.error.code).toBe("not_found");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });
});
