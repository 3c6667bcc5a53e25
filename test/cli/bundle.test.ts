/**
 * packages/uploader/bin/ci-test-analytics.mjs and its THIRD-PARTY-NOTICES.md are generated from
 * src/cli/ (`npm run build:cli`) and checked in. This rebuilds them in memory and fails when the
 * checked-in files differ (someone forgot to rebuild), and checks that the bundle keeps out of the
 * server (no Hono, Zod, Drizzle or database driver) and needs nothing but Node.
 */
import { readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BUNDLE, BUNDLED_PACKAGES, NOTICES, PACKAGE_DIR, ROOT, buildCliBundle, buildNotices, packageOfInput } from "../../src/cli/build-bundle";

describe("the uploader CLI bundle", () => {
  it("is up to date: rebuilding src/cli gives the checked-in bundle and notices byte for byte", async () => {
    const { text, metafile } = await buildCliBundle();
    const checkedIn = readFileSync(join(ROOT, BUNDLE), "utf8");
    // One boolean first, so that a stale bundle fails with the fix rather than a 1,000-line diff.
    expect(text === checkedIn, `${BUNDLE} is out of date: run \`npm run build:cli\` and commit it`).toBe(true);
    expect(buildNotices(metafile) === readFileSync(join(ROOT, NOTICES), "utf8"), `${NOTICES} is out of date: run \`npm run build:cli\``).toBe(true);
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
    expect(inputs).toEqual(expect.arrayContaining(["src/cli/main.ts", "src/ingest/upload-body.ts", "src/ingest/report.ts", "src/ingest/junit.ts", "src/lib/keys.ts", "src/lib/test-identity.ts"]));

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
