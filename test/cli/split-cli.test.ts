/**
 * `ci-test-analytics split` (docs/splitting.md) in process, against the app in process: every shard
 * of a build gets its part of one plan (together all items, each once); with the service down, the
 * documented fallback, a warning, and exit 0; --shard from the CI; the output formats.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "../../src/cli/main";
import { fallbackShard } from "../../src/lib/split";
import { type Harness, createHarness } from "../support/harness";

let h: Harness;
let token: string;
beforeAll(async () => {
  h = await createHarness();
  const { organization } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  token = uploadToken;
  const suites = Array.from({ length: 12 }, (_, i) => ({
    name: `s${i}`,
    cases: [
      { name: "t", file: `/home/runner/work/app/test/f${i}.test.ts`, status: "passed" as const, durationMs: i === 3 ? 60_000 : 1000 + i },
    ],
  }));
  await h.newRun(project.id, { meta: { branch: "main" }, report: { suites } });
});
afterAll(() => h.close());

const ITEMS = Array.from({ length: 12 }, (_, i) => `test/f${i}.test.ts`);

function sink() {
  let text = "";
  return {
    write: (chunk: string) => ((text += chunk), true),
    get text() {
      return text;
    },
  };
}

async function split(args: string[], options: { env?: Record<string, string>; fetch?: typeof fetch; stdin?: string; cwd?: string } = {}) {
  const stdout = sink();
  const stderr = sink();
  const code = await run(["split", ...args], {
    env: { CTA_URL: "http://cta.test", CTA_UPLOAD_TOKEN: token, ...options.env },
    cwd: options.cwd ?? tmpdir(),
    stdout,
    stderr,
    fetch: options.fetch ?? ((url, init) => h.app.request(String(url), init as RequestInit)),
    baseDelayMs: 0,
    readStdin: () => options.stdin ?? `${ITEMS.join("\n")}\n`,
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe("split", () => {
  it("every shard of a build prints its part of one plan: all items, each once; the slow file alone", async () => {
    const parts = [];
    for (const shard of ["1/3", "2/3", "3/3"]) {
      // Each shard lists the items in its own order, as runners may.
      const stdin = shard === "2/3" ? [...ITEMS].reverse().join("\n") : ITEMS.join("\n");
      const res = await split(["--shard", shard, "--key", "build-7", "-"], { stdin });
      expect(res.code, res.stderr).toBe(0);
      expect(res.stderr).not.toContain("falling back");
      parts.push(res.stdout.trim().split("\n"));
    }
    expect(parts.flat().sort()).toEqual([...ITEMS].sort());
    expect(parts[0]).toEqual(["test/f3.test.ts"]);
  });

  it("globs: files below the working directory, relative; --format space and json", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cta-split-"));
    mkdirSync(join(dir, "test"));
    for (const item of ITEMS) writeFileSync(join(dir, item), "");
    const lines = await split(["--shard", "1/1", "--key", "build-glob", "test/**/*.test.ts"], { cwd: dir });
    expect(lines.stdout.trim().split("\n").sort()).toEqual([...ITEMS].sort());
    const space = await split(["--shard", "1/1", "--key", "build-glob", "--format", "space", "test/**/*.test.ts"], { cwd: dir });
    expect(space.stdout.trim().split(" ").sort()).toEqual([...ITEMS].sort());
    const json = await split(["--shard", "1/1", "--key", "build-glob", "--format", "json", "test/**/*.test.ts"], { cwd: dir });
    expect(JSON.parse(json.stdout).sort()).toEqual([...ITEMS].sort());
  });

  it("the service down: the documented fallback (sorted, round-robin), a warning on stderr, exit 0", async () => {
    const down = (async () => {
      throw new TypeError("fetch failed");
    }) as typeof fetch;
    for (const index of [1, 2]) {
      const res = await split(["--shard", `${index}/2`, "--key", "build-down", "-"], { fetch: down });
      expect(res.code).toBe(0);
      expect(res.stdout.trim().split("\n")).toEqual(fallbackShard(ITEMS, index, 2));
      expect(res.stderr).toMatch(/unreachable.*falling back to the deterministic split/);
    }
    const rejected = await split(["--shard", "1/2", "-"], { env: { CTA_UPLOAD_TOKEN: "" } });
    expect(rejected.code).toBe(0);
    expect(rejected.stderr).toContain("no upload token");
  });

  it("a 409 (another shard's items differ) falls back too, naming the service's reason", async () => {
    await split(["--shard", "1/2", "--key", "build-409", "-"]);
    const res = await split(["--shard", "2/2", "--key", "build-409", "-"], { stdin: "test/other.test.ts\n" });
    expect(res.code).toBe(0);
    expect(res.stderr).toContain("split_plan_mismatch");
    expect(res.stdout).toBe("");
  });

  it("--shard and --key from the CI: CircleCI's parallelism and workflow; a missing shard is exit 2", async () => {
    const env = { CIRCLECI: "true", CIRCLE_NODE_INDEX: "0", CIRCLE_NODE_TOTAL: "3", CIRCLE_WORKFLOW_ID: "wf-1", CIRCLE_JOB: "test" };
    const first = await split(["-"], { env });
    expect(first.stdout.trim().split("\n")).toEqual(["test/f3.test.ts"]);
    const again = await split(["--key", "circleci:wf-1:test", "--shard", "1/3", "-"]);
    expect(again.stdout).toBe(first.stdout);
    const missing = await split(["-"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--shard I/N");
  });
});
