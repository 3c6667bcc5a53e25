/**
 * The benchmarks' recorder (bench/report.ts): a benchmark's row of the table replaced by its marker
 * (or added), its report appended to its history file, BENCH_NO_RECORD and BENCH_OUTPUT, and the
 * commit measured. Everything is written in a temporary directory; the repository's BENCHMARKS.md
 * and bench/history are only read (a copy of the table is recorded into).
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BenchmarkRecord, TABLE_HEADER, cell, currentCommit, historyEntry, recordBenchmark, upsertRow } from "../../bench/report";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const NOW = new Date("2026-12-07T23:59:30Z");

const TABLE = [
  "# Benchmarks",
  "",
  "Intro text.",
  "",
  ...TABLE_HEADER,
  "| <!-- bench:alpha --> `npm run bench:alpha` | what alpha measures | old alpha figure | ≤ 1 | 2026-11-01, aaaaaaa | [alpha.md](bench/history/alpha.md) |",
  "| <!-- bench:beta --> `npm run bench:beta` | what beta measures | old beta figure | — | 2026-11-02, bbbbbbb | [beta.md](bench/history/beta.md) |",
  "",
  "Text after the table.",
  "",
].join("\n");

const record = (overrides: Partial<BenchmarkRecord> = {}): BenchmarkRecord => ({
  name: "alpha",
  command: "npm run bench:alpha",
  measures: "what alpha measures",
  figure: "p50 412 ms (1.6× the baseline) PASS",
  target: "≤ 2×",
  report:
    "## Alpha (`npm run bench:alpha`)\n\nSee [docs/alpha.md](docs/alpha.md#x), [the site](https://example.com/a) and [below](#alpha).\n\n### Details\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
  ...overrides,
});

let dir: string;
let table: string;
let historyDir: string;
const options = () => ({ table, historyDir, root: dir, now: NOW, commit: "1234abc", env: {}, log: () => {} });

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "bench-report-"));
  table = path.join(dir, "BENCHMARKS.md");
  historyDir = path.join(dir, "bench", "history");
  writeFileSync(table, TABLE);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("recordBenchmark: the table", () => {
  it("replaces the benchmark's row, found by its marker, and leaves every other line as it was", () => {
    const result = recordBenchmark(record(), options());
    const expected =
      "| <!-- bench:alpha --> `npm run bench:alpha` | what alpha measures | p50 412 ms (1.6× the baseline) PASS | ≤ 2× | 2026-12-07, 1234abc | [alpha.md](bench/history/alpha.md) |";
    expect(result).toEqual({ written: "record", row: expected, table, history: path.join(historyDir, "alpha.md") });
    const lines = readFileSync(table, "utf8").split("\n");
    const before = TABLE.split("\n");
    expect(lines).toHaveLength(before.length);
    expect(lines.filter((line, i) => line !== before[i])).toEqual([expected]);
  });

  it("adds a missing benchmark after the table's last row, and replaces it the next time", () => {
    recordBenchmark(record({ name: "gamma", command: "npm run bench:gamma" }), options());
    let lines = readFileSync(table, "utf8").split("\n");
    const at = lines.findIndex((line) => line.startsWith("| <!-- bench:gamma -->"));
    expect(lines[at - 1]).toContain("<!-- bench:beta -->");
    expect(lines[at + 1]).toBe("");
    expect(lines.at(-2)).toBe("Text after the table.");

    recordBenchmark(record({ name: "gamma", command: "npm run bench:gamma", figure: "second" }), options());
    lines = readFileSync(table, "utf8").split("\n");
    expect(lines.filter((line) => line.includes("<!-- bench:gamma -->"))).toHaveLength(1);
    expect(lines[at]).toContain("| second |");
  });

  it("does not take a marker that only starts like the benchmark's for its row", () => {
    recordBenchmark(record({ name: "alp", command: "npm run bench:alp" }), options());
    const text = readFileSync(table, "utf8");
    expect(text).toContain("old alpha figure");
    expect(text).toContain("<!-- bench:alp --> `npm run bench:alp`");
  });

  it("starts a table when the file has none, and the file when there is none", () => {
    writeFileSync(table, "# Benchmarks\n\nNothing yet.\n");
    recordBenchmark(record(), options());
    expect(readFileSync(table, "utf8")).toBe(
      `# Benchmarks\n\nNothing yet.\n\n${TABLE_HEADER.join("\n")}\n| <!-- bench:alpha --> \`npm run bench:alpha\` | what alpha measures | p50 412 ms (1.6× the baseline) PASS | ≤ 2× | 2026-12-07, 1234abc | [alpha.md](bench/history/alpha.md) |\n`,
    );
    rmSync(table);
    recordBenchmark(record(), options());
    expect(readFileSync(table, "utf8").split("\n").slice(0, 4)).toEqual(["# Benchmarks", "", ...TABLE_HEADER]);
  });

  it("keeps a row on one line with its pipes escaped, and names a variant before its figure", () => {
    const { row } = recordBenchmark(record({ figure: "a | b\nc", target: "", variant: "edge-fold", measures: "x \\| y" }), options()) as {
      row: string;
    };
    expect(row).toBe(
      "| <!-- bench:alpha --> `npm run bench:alpha` | x \\| y | edge-fold: a \\| b c | — | 2026-12-07, 1234abc | [alpha.md](bench/history/alpha.md) |",
    );
    expect(cell(" one\n  two | three ")).toBe("one two \\| three");
  });

  it("links the history file relative to the table", () => {
    const nested = path.join(dir, "docs", "BENCH.md");
    const { row } = recordBenchmark(record(), { ...options(), table: nested }) as { row: string };
    expect(row).toContain("[alpha.md](../bench/history/alpha.md)");
  });

  it("refuses a name that is not a benchmark's", () => {
    expect(() => recordBenchmark(record({ name: "../x" }), options())).toThrow(/not a benchmark name/);
    expect(() => recordBenchmark(record({ name: "Upload" }), options())).toThrow(/not a benchmark name/);
  });
});

describe("recordBenchmark: the history", () => {
  it("creates the history file with its header, then appends each report under its date and commit", () => {
    recordBenchmark(record(), options());
    recordBenchmark(record({ report: "Second report." }), {
      ...options(),
      now: new Date("2026-12-08T00:00:01Z"),
      commit: "5678def uncommitted",
    });
    expect(readFileSync(path.join(historyDir, "alpha.md"), "utf8")).toBe(
      [
        "# bench:alpha: every report of `npm run bench:alpha`, oldest first (the latest figure is in [BENCHMARKS.md](../../BENCHMARKS.md))",
        "",
        "## 2026-12-07 1234abc",
        "",
        "### Alpha (`npm run bench:alpha`)",
        "",
        "See [docs/alpha.md](../../docs/alpha.md#x), [the site](https://example.com/a) and [below](#alpha).",
        "",
        "#### Details",
        "",
        "| a | b |",
        "|---|---|",
        "| 1 | 2 |",
        "",
        "## 2026-12-08 5678def uncommitted",
        "",
        "Second report.",
        "",
      ].join("\n"),
    );
    expect(readFileSync(table, "utf8")).toContain("| 2026-12-08, 5678def uncommitted |");
  });

  it("appends after an existing history as it stands, whatever its trailing blank lines", () => {
    const file = path.join(historyDir, "beta.md");
    recordBenchmark(record({ name: "beta", report: "first" }), options());
    const kept = "# header\n\n<!-- beta-bench:start -->\n## Old section\n\nold figure 1.23 ms\n<!-- beta-bench:end -->\n\n\n";
    writeFileSync(file, kept);
    recordBenchmark(record({ name: "beta", report: "new" }), options());
    expect(readFileSync(file, "utf8")).toBe(`${kept.trimEnd()}\n\n## 2026-12-07 1234abc\n\nnew\n`);
  });

  it("leaves headings inside code fences alone, and records a variant in the heading", () => {
    recordBenchmark(record({ report: "# Top\n\n```\n# not a heading\n```\n###### deepest", variant: "edge-fold" }), options());
    const text = readFileSync(path.join(historyDir, "alpha.md"), "utf8");
    expect(text).toContain("## 2026-12-07 1234abc — edge-fold\n\n## Top\n\n```\n# not a heading\n```\n###### deepest\n");
    expect(historyEntry("[a](b.md)", "## h", "")).toBe("## h\n\n[a](b.md)\n");
  });
});

describe("recordBenchmark: trial runs", () => {
  it("writes nothing with BENCH_NO_RECORD=1", () => {
    const result = recordBenchmark(record(), { ...options(), env: { BENCH_NO_RECORD: "1" } });
    expect(result).toEqual({ written: "nothing" });
    expect(readFileSync(table, "utf8")).toBe(TABLE);
    expect(existsSync(historyDir)).toBe(false);
  });

  it("writes the report alone to BENCH_OUTPUT (relative to the repository) instead of recording it", () => {
    const result = recordBenchmark(record({ report: "the report\n\n\n" }), { ...options(), env: { BENCH_OUTPUT: "out/limiter.md" } });
    expect(result).toEqual({ written: "output", file: path.join(dir, "out", "limiter.md") });
    expect(readFileSync(path.join(dir, "out", "limiter.md"), "utf8")).toBe("the report\n");
    expect(readFileSync(table, "utf8")).toBe(TABLE);
    expect(existsSync(historyDir)).toBe(false);
  });
});

describe("currentCommit", () => {
  const git = (cwd: string, ...args: string[]) =>
    execFileSync("git", ["-c", "user.name=bench", "-c", "user.email=bench@example.com", ...args], { cwd, encoding: "utf8" }).trim();

  it("is HEAD's short hash, marked uncommitted when tracked files other than the record differ", () => {
    git(dir, "init", "-q");
    writeFileSync(path.join(dir, "code.ts"), "1");
    recordBenchmark(record(), options());
    git(dir, "add", "-A");
    git(dir, "commit", "-q", "-m", "first");
    const head = git(dir, "rev-parse", "--short", "HEAD");
    expect(currentCommit(dir)).toBe(head);

    // The record itself (the table, the history) and untracked files do not count.
    recordBenchmark(record({ figure: "again" }), options());
    writeFileSync(path.join(dir, "new-file.ts"), "untracked");
    expect(currentCommit(dir)).toBe(head);

    writeFileSync(path.join(dir, "code.ts"), "2");
    expect(currentCommit(dir)).toBe(`${head} uncommitted`);
  });

  it("is 'unknown commit' outside a git checkout", () => {
    expect(currentCommit(dir)).toBe("unknown commit");
  });
});

describe("the repository's record (read only)", () => {
  const benchmarks = readFileSync(path.join(REPO, "BENCHMARKS.md"), "utf8");
  const histories = readdirSync(path.join(REPO, "bench", "history")).filter((file) => file.endsWith(".md"));
  const rows = benchmarks.split("\n").filter((line) => line.startsWith("| <!-- bench:"));

  it("has one row per history file, each linking its history", () => {
    expect(rows.map((row) => /<!-- bench:([a-z0-9-]+) -->/.exec(row)![1]).sort()).toEqual(
      histories.map((f) => f.replace(/\.md$/, "")).sort(),
    );
    for (const row of rows) {
      const name = /<!-- bench:([a-z0-9-]+) -->/.exec(row)![1]!;
      expect(row).toContain(`[${name}.md](bench/history/${name}.md) |`);
      expect(row.split(/(?<!\\)\|/)).toHaveLength(8);
    }
  });

  it("names an npm script or the api bench in every row, and the scripts exist", () => {
    const scripts = (JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
    for (const row of rows) {
      const name = /<!-- bench:([a-z0-9-]+) -->/.exec(row)![1]!;
      expect(row).toContain(`\`npm run bench:${name}\``);
      expect(scripts[`bench:${name}`]).toBeDefined();
    }
  });

  it("replaces one row of a copy of BENCHMARKS.md and nothing else", () => {
    copyFileSync(path.join(REPO, "BENCHMARKS.md"), table);
    recordBenchmark(record({ name: "codeowners", command: "npm run bench:codeowners", figure: "changed" }), options());
    const after = readFileSync(table, "utf8").split("\n");
    const before = benchmarks.split("\n");
    expect(after).toHaveLength(before.length);
    const changed = after.filter((line, i) => line !== before[i]);
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatch(/^\| <!-- bench:codeowners --> .* \| changed \| /);
    expect(upsertRow(benchmarks, "codeowners", changed[0]!).split("\n")).toEqual(after);
  });
});
