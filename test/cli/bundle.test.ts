/**
 * packages/uploader/bin/ci-test-analytics.mjs and its THIRD-PARTY-NOTICES.md are generated from
 * src/cli/ (`npm run build:cli`) and checked in. This rebuilds them in memory and fails when the
 * checked-in files differ (someone forgot to rebuild), and checks that the bundle keeps out of the
 * server (no Hono, Zod, Drizzle or database driver) and needs nothing but Node. So is the package
 * tarball the service serves (src/lib/uploader-package.generated.ts): the archive inside it must be
 * the one packages/uploader makes now, and its digests its own.
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  BUNDLE,
  BUNDLED_PACKAGES,
  NOTICES,
  PACKAGE_DIR,
  ROOT,
  SERVED_PACKAGE,
  buildCliBundle,
  buildNotices,
  buildServedPackage,
  gzipArchive,
  packageArchive,
  packageOfInput,
  readServedPackage,
  servedPackageModule,
} from "../../src/cli/build-bundle";
import { readUstarArchive, ustarArchive } from "../../src/lib/npm-tarball";
import * as served from "../../src/lib/uploader-package.generated";

describe("the uploader CLI bundle", () => {
  it("is up to date: rebuilding src/cli gives the checked-in bundle and notices byte for byte", async () => {
    const { text, metafile } = await buildCliBundle();
    const checkedIn = readFileSync(join(ROOT, BUNDLE), "utf8");
    // One boolean first, so that a stale bundle fails with the fix rather than a 1,000-line diff.
    expect(text === checkedIn, `${BUNDLE} is out of date: run \`npm run build:cli\` and commit it`).toBe(true);
    expect(
      buildNotices(metafile) === readFileSync(join(ROOT, NOTICES), "utf8"),
      `${NOTICES} is out of date: run \`npm run build:cli\``,
    ).toBe(true);
    expect(text.startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(text).toContain("GENERATED from src/cli/");
    expect(statSync(join(ROOT, BUNDLE)).mode & 0o111, "the bin must be executable").not.toBe(0);
  });

  it("is deterministic", async () => {
    const [first, second] = await Promise.all([buildCliBundle(), buildCliBundle()]);
    expect(first.text === second.text).toBe(true);
  });

  it("holds the CLI, the pure shared modules and its few libraries; imports only Node built-ins", async () => {
    const { metafile } = await buildCliBundle();
    const inputs = Object.keys(metafile.inputs).sort();
    const libraries = [...new Set(inputs.map(packageOfInput).filter((name) => name !== null))].sort();
    expect(libraries).toEqual(BUNDLED_PACKAGES);
    expect(inputs.filter((path) => !path.startsWith("src/") && packageOfInput(path) === null)).toEqual([]);
    // The server's routes, services, database and runtime entries stay out.
    expect(inputs.filter((path) => /^src\/(routes|services|db|middleware|node|worker|auth|app\.ts)/.test(path))).toEqual([]);
    expect(inputs).toEqual(
      expect.arrayContaining([
        "src/cli/main.ts",
        "src/ingest/upload-body.ts",
        "src/ingest/report.ts",
        "src/ingest/junit.ts",
        "src/lib/keys.ts",
        "src/lib/test-identity.ts",
      ]),
    );

    const [output] = Object.values(metafile.outputs);
    const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
    expect(output!.imports.filter((i) => !builtins.has(i.path)).map((i) => i.path)).toEqual([]);
    // Not minified, so that a diff can be reviewed; the libraries are most of it.
    expect(output!.bytes).toBeLessThan(400 * 1024);
  });

  it("its package has no dependencies and ships only the bundle and the notices", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, PACKAGE_DIR, "package.json"), "utf8"));
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(pkg.peerDependencies ?? {}).toEqual({});
    expect(pkg.optionalDependencies ?? {}).toEqual({});
    expect(pkg.private).toBe(false);
    expect(pkg.bin).toEqual({ "ci-test-analytics": "bin/ci-test-analytics.mjs" });
    expect(pkg.files).toEqual(["bin/ci-test-analytics.mjs", "THIRD-PARTY-NOTICES.md"]);
    expect(pkg.engines).toEqual({ node: ">=20" });
    // The repository's own `npx ci-test-analytics` runs the same file.
    const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    expect(root.bin["ci-test-analytics"]).toBe(BUNDLE);
  });
});

describe("the tarball the service serves (GET /uploader/ci-test-analytics.tgz)", () => {
  const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
  const tarball = Buffer.from(served.UPLOADER_TARBALL_BASE64, "base64");

  it("is up to date: the archive inside it is the one packages/uploader (with a fresh bundle and notices) makes now", async () => {
    const { text, metafile } = await buildCliBundle();
    const fresh = packageArchive({ "bin/ci-test-analytics.mjs": text, "THIRD-PARTY-NOTICES.md": buildNotices(metafile) });
    const inside = gunzipSync(tarball);
    expect(Buffer.compare(inside, fresh) === 0, `${SERVED_PACKAGE} is out of date: run \`npm run build:cli\` and commit it`).toBe(true);
    // And the module is exactly what the build writes for it (so the build keeps the checked-in gzip bytes).
    expect(servedPackageModule(buildServedPackage()) === readFileSync(join(ROOT, SERVED_PACKAGE), "utf8")).toBe(true);
  });

  it("its digests, size and version are its own", () => {
    expect(served.UPLOADER_TARBALL_SHA256).toBe(sha256(tarball));
    const bundle = readFileSync(join(ROOT, BUNDLE));
    expect(served.UPLOADER_BUNDLE_SHA256).toBe(sha256(bundle));
    expect(served.UPLOADER_BUNDLE_BYTES).toBe(bundle.length);
    expect(served.UPLOADER_VERSION).toBe(JSON.parse(readFileSync(join(ROOT, PACKAGE_DIR, "package.json"), "utf8")).version);
    expect(readServedPackage()).toMatchObject({
      tarballSha256: served.UPLOADER_TARBALL_SHA256,
      bundleSha256: served.UPLOADER_BUNDLE_SHA256,
    });
  });

  it("holds what npm pack would: package.json, README.md and the package's files, under package/, the bin executable", () => {
    const files = readUstarArchive(gunzipSync(tarball));
    expect([...files.keys()]).toEqual([
      "package/README.md",
      "package/THIRD-PARTY-NOTICES.md",
      "package/bin/ci-test-analytics.mjs",
      "package/package.json",
    ]);
    for (const [path, { bytes, mode }] of files) {
      const relative = path.slice("package/".length);
      expect(Buffer.compare(Buffer.from(bytes), readFileSync(join(ROOT, PACKAGE_DIR, relative))), path).toBe(0);
      expect(mode, path).toBe(relative === "bin/ci-test-analytics.mjs" ? 0o755 : 0o644);
    }
  });

  it("is read by GNU tar as a gzip'd ustar archive with fixed owners and times", () => {
    const dir = mkdtempSync(join(tmpdir(), "cta-tgz-"));
    try {
      writeFileSync(join(dir, "p.tgz"), tarball);
      const listing = execFileSync("tar", ["--numeric-owner", "-tvzf", join(dir, "p.tgz")], {
        encoding: "utf8",
        env: { ...process.env, TZ: "UTC" },
      })
        .trim()
        .split("\n");
      expect(listing).toHaveLength(4);
      for (const line of listing) expect(line).toMatch(/^-rw[-x]r-[-x]r-[-x] 0\/0 +\d+ 1985-10-26 08:15 package\//);
      expect(execFileSync("tar", ["-xzOf", join(dir, "p.tgz"), "package/package.json"], { encoding: "utf8" })).toBe(
        readFileSync(join(ROOT, PACKAGE_DIR, "package.json"), "utf8"),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is deterministic: the same files give the same archive and the same gzip bytes, whatever their order", () => {
    const entries = [
      { path: "package/b.txt", bytes: new TextEncoder().encode("b"), mode: 0o644 },
      { path: "package/a.txt", bytes: new TextEncoder().encode("a".repeat(600)), mode: 0o755 },
    ];
    const first = ustarArchive(entries);
    expect(Buffer.compare(first, ustarArchive([...entries].reverse()))).toBe(0);
    expect(Buffer.compare(gzipArchive(first), gzipArchive(ustarArchive(entries)))).toBe(0);
    expect([...readUstarArchive(first).keys()]).toEqual(["package/a.txt", "package/b.txt"]);
    expect(Buffer.compare(gzipArchive(packageArchive()), gzipArchive(packageArchive()))).toBe(0);
    // gzip's header: no file name, no time, Unix.
    const gzip = gzipArchive(first);
    expect([...gzip.subarray(3, 10)]).toEqual([0, 0, 0, 0, 0, 2, 3]);
  });

  it("a changed file makes another archive (the up-to-date check would see it)", () => {
    const current = packageArchive();
    const changed = packageArchive({ "README.md": `${readFileSync(join(ROOT, PACKAGE_DIR, "README.md"), "utf8")}\nchanged\n` });
    expect(Buffer.compare(current, changed)).not.toBe(0);
  });
});
