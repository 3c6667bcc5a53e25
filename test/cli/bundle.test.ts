/**
 * bin/ci-test-analytics.mjs is generated from src/cli/ (`npm run build:cli`) and checked in. This
 * rebuilds it in memory and fails when the checked-in file differs (someone forgot to rebuild),
 * and checks that the bundle keeps out of the server: no Hono, Zod, Drizzle or database driver.
 */
import { readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BUNDLE, EXTERNAL, ROOT, buildCliBundle } from "../../src/cli/build-bundle";

describe("the uploader CLI bundle", () => {
  it("is up to date: rebuilding src/cli gives the checked-in bin/ci-test-analytics.mjs byte for byte", async () => {
    const { text } = await buildCliBundle();
    const checkedIn = readFileSync(join(ROOT, BUNDLE), "utf8");
    // One boolean first, so that a stale bundle fails with the fix rather than a 1,000-line diff.
    expect(text === checkedIn, `${BUNDLE} is out of date: run \`npm run build:cli\` and commit it`).toBe(true);
    expect(text.startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(text).toContain("GENERATED from src/cli/");
    expect(statSync(join(ROOT, BUNDLE)).mode & 0o111, "the bin must be executable").not.toBe(0);
  });

  it("is deterministic", async () => {
    const [first, second] = await Promise.all([buildCliBundle(), buildCliBundle()]);
    expect(first.text === second.text).toBe(true);
  });

  it("holds only the CLI and the pure shared modules; imports only Node built-ins and tinyglobby", async () => {
    const { metafile } = await buildCliBundle();
    const inputs = Object.keys(metafile.inputs).sort();
    expect(inputs.filter((path) => !path.startsWith("src/"))).toEqual([]);
    // The server's routes, services, database and runtime entries stay out.
    expect(inputs.filter((path) => /^src\/(routes|services|db|middleware|node|worker|auth|app\.ts)/.test(path))).toEqual([]);
    expect(inputs).toEqual(expect.arrayContaining(["src/cli/main.ts", "src/ingest/upload-body.ts", "src/ingest/report.ts", "src/lib/keys.ts"]));

    const [output] = Object.values(metafile.outputs);
    const imports = [...new Set(output!.imports.map((i) => i.path))];
    const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
    expect(imports.filter((path) => !builtins.has(path)).sort()).toEqual(EXTERNAL);
    expect(output!.imports.every((i) => i.external)).toBe(true);
    // Small enough to read in a review: the sources plus a header, no libraries.
    expect(output!.bytes).toBeLessThan(64 * 1024);
  });
});
