/**
 * `npm run bench:codeowners`: a CODEOWNERS of GitHub's 3 MiB limit, written to be costly
 * (the patterns that froze the server before: nested `**`, globs that backtrack, thousands of
 * unanchored patterns, as many wildcard rules as are applied and more), read and matched against
 * 200,000 test files, as `PUT /uploads/v1/codeowners` does for a project of that size (target
 * ≤ 2 s on Node). Beside it, a real-sized file (600 lines) against the same files, measured in the
 * same run, for scale. Not a test: it prints a report and records it (bench/report.ts: its row of
 * BENCHMARKS.md, bench/history/codeowners.md); BENCH_STRICT=1 exits 1 when the target is missed.
 *
 * Env: BENCH_CODEOWNERS_FILES (200000), BENCH_CODEOWNERS_ROUNDS (3; the median is reported),
 *      BENCH_NO_RECORD=1 / BENCH_OUTPUT=<file> (bench/report.ts).
 */
import os from "node:os";
import { CODEOWNERS_LIMIT_BYTES, MAX_WILDCARD_RULES, OwnersMatcher, parseCodeowners } from "../src/lib/codeowners";
import { mulberry32 } from "../src/lib/seeded-random";
import { recordBenchmark, currentCommit } from "./report";

const FILES = Number(process.env.BENCH_CODEOWNERS_FILES ?? 200_000);
const ROUNDS = Number(process.env.BENCH_CODEOWNERS_ROUNDS ?? 3);
const TARGET_MS = 2_000;

/**
 * Test files of a monorepo: teams, modules, nested source folders (a fifth of them long runs of
 * one letter, which make globs work), eight test files to a directory on average.
 */
function testFiles(count: number): string[] {
  const random = mulberry32(7);
  const files: string[] = [];
  for (let directory = 0; files.length < count; directory++) {
    const depth = 1 + Math.floor(random() * 6);
    const dirs = Array.from({ length: depth }, (_, d) =>
      random() < 0.2 ? "a".repeat(30 + d) : random() < 0.3 ? "x".repeat(40) : `dir${Math.floor(random() * 50)}`,
    );
    const inDirectory = 1 + Math.floor(random() * 15);
    for (let k = 0; k < inDirectory && files.length < count; k++) {
      const i = files.length;
      const ext = [".test.ts", ".spec.js", "_test.go", ".py"][i % 4];
      files.push(`services/team-${directory % 300}/module-${directory % 37}/${dirs.join("/")}/case_${i}${ext}`);
    }
  }
  return files;
}

/** The costly file: every kind of hostile line, then anchored team rules up to the byte limit. */
function hostileCodeowners(): string {
  const lines: string[] = ["* @org/everyone"];
  for (let i = 0; i < MAX_WILDCARD_RULES + 2_000; i++) {
    const shape = i % 4;
    if (shape === 0) lines.push(`${Array(8).fill("**/a").join("/")}/**/b${i} @org/nested`);
    else if (shape === 1) lines.push(`**/${"*x".repeat(40)}${i}*/** @org/glob`);
    else if (shape === 2) lines.push(`services/*/module-*/**/${"*a".repeat(20)}?${i} @org/deep`);
    else lines.push(`*${"?".repeat(10)}*x${i}* @org/names`);
  }
  for (let i = 0; i < 2_000; i++) lines.push(`*.ext${i} @org/ext${i}`, `name-${i} @org/name${i}`, `prefix${i}* @org/prefix${i}`);
  lines.push(`* a@${"a.".repeat(48_000)}@`);
  let text = lines.join("\n");
  for (let i = 0; text.length < CODEOWNERS_LIMIT_BYTES - 200; i++)
    text += `\n/services/team-${i % 300}/module-${i % 37}/dir${i % 50}/sub${i}/ @org/team-${i % 300}`;
  return text;
}

/**
 * The file that spends every path's budget: as many rules to try as are applied, none with
 * literal text to rule a path out, each walking every name of every path.
 */
function budgetBurnerCodeowners(): string {
  const letters = "abcdefghijklmnopqrstuvwxyz";
  const lines = ["* @org/everyone"];
  for (let i = 0; i < MAX_WILDCARD_RULES; i++) lines.push(`*${[...letters.slice(i % 20, (i % 20) + 6)].join("*")}*? @org/burn${i}`);
  return lines.join("\n");
}

/** A file of the size real monorepos have: one line per team and module, a few extensions. */
function realCodeowners(): string {
  const lines = ["* @org/platform", "*.py @org/python", "*_test.go @org/go", "/services/**/fixtures/ @org/qa"];
  for (let team = 0; team < 300; team++) lines.push(`/services/team-${team}/ @org/team-${team}`);
  for (let module = 0; module < 37; module++) lines.push(`/services/*/module-${module}/ @org/module-${module}`);
  for (let i = 0; i < 250; i++) lines.push(`/services/team-${i}/module-${i % 37}/dir${i % 50}/ @org/owner-${i}`);
  // A few rules that must be tried, as real files have.
  lines.push("/services/*/module-*/dir1?/ @org/teens", "services/**/a*a/*.test.ts @org/a-runs", "**/case_1*5.py @org/fives");
  return lines.join("\n");
}

type Measured = { parseMs: number; matchMs: number; totalMs: number; overBudget: number; owned: number; rules: number; ignored: number };

function measure(text: string, files: readonly string[]): Measured {
  const started = performance.now();
  const { rules, ignoredLines } = parseCodeowners(text);
  const parsed = performance.now();
  const matcher = new OwnersMatcher(rules);
  let owned = 0;
  for (const file of files) if (matcher.ownersOf(file).length > 0) owned++;
  const done = performance.now();
  return {
    parseMs: parsed - started,
    matchMs: done - parsed,
    totalMs: done - started,
    overBudget: matcher.pathsOverBudget,
    owned,
    rules: rules.length,
    ignored: ignoredLines.length,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const commit = () => currentCommit();

function main(): void {
  const files = testFiles(FILES);
  const hostile = hostileCodeowners();
  const burner = budgetBurnerCodeowners();
  const real = realCodeowners();
  const runs = { hostile: [] as Measured[], burner: [] as Measured[], real: [] as Measured[] };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternated, so all see the same machine load.
    runs.hostile.push(measure(hostile, files));
    runs.burner.push(measure(burner, files));
    runs.real.push(measure(real, files));
  }
  const h = runs.hostile.at(-1)!;
  const b = runs.burner.at(-1)!;
  const r = runs.real.at(-1)!;
  const hostileMs = median(runs.hostile.map((run) => run.totalMs));
  const burnerMs = median(runs.burner.map((run) => run.totalMs));
  const realMs = median(runs.real.map((run) => run.totalMs));
  const pass = hostileMs <= TARGET_MS && burnerMs <= TARGET_MS;
  const body = [
    "## CODEOWNERS at GitHub's limit against 200,000 test files (`npm run bench:codeowners`)",
    "",
    "Command: `npm run bench:codeowners` (script `tsx bench/codeowners-bench.ts`).",
    "",
    `- Date: ${new Date().toISOString().slice(0, 19)}Z; code: commit ${commit()}`,
    `- Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}; load average ${os.loadavg()[0]!.toFixed(1)}`,
    `- Hostile file: ${(Buffer.byteLength(hostile) / 1048576).toFixed(2)} MiB, ${h.rules} rules applied, ${h.ignored} lines ignored (wildcard rules past ${MAX_WILDCARD_RULES}, an owner of 96 KB): nested \`**\`, globs of 40 stars, \`?\` runs, 6,000 unanchored names, prefixes and extensions, anchored team rules to the limit`,
    `- Budget-spending file: ${MAX_WILDCARD_RULES} rules such as \`*a*b*c*d*e*f*?\` after \`*\`: no literal text of two characters to rule a path out, so each is tried against every name`,
    `- Real-sized file: ${real.split("\n").length} lines (3 of them rules that must be tried); test files: ${files.length} (depth 4 to 9, a fifth of the directories long runs of one letter, 1 to 15 files to a directory)`,
    `- ${ROUNDS} rounds, alternated; median of the rounds`,
    "",
    "| File | Parse (ms) | Match all files (ms) | Total (ms) | Files with owners | Paths over their step budget | Target |",
    "|---|---:|---:|---:|---:|---:|---|",
    `| hostile, 3 MiB | ${h.parseMs.toFixed(0)} | ${h.matchMs.toFixed(0)} | ${hostileMs.toFixed(0)} | ${h.owned} | ${h.overBudget} | ≤ ${TARGET_MS} ms: ${hostileMs <= TARGET_MS ? "PASS" : "MISS"} |`,
    `| every path's budget spent (${MAX_WILDCARD_RULES} rules without literal text) | ${b.parseMs.toFixed(0)} | ${b.matchMs.toFixed(0)} | ${burnerMs.toFixed(0)} | ${b.owned} | ${b.overBudget} | ≤ ${TARGET_MS} ms: ${burnerMs <= TARGET_MS ? "PASS" : "MISS"} |`,
    `| real-sized | ${r.parseMs.toFixed(0)} | ${r.matchMs.toFixed(0)} | ${realMs.toFixed(0)} | ${r.owned} | ${r.overBudget} | diagnostic |`,
    "",
    `Hostile / real-sized: ${(hostileMs / realMs).toFixed(2)} ×; budget spent / real-sized: ${(burnerMs / realMs).toFixed(2)} ×.`,
  ].join("\n");
  console.log(body);
  const verdict = (totalMs: number) => (totalMs <= TARGET_MS ? "PASS" : "FAIL");
  recordBenchmark({
    name: "codeowners",
    command: "npm run bench:codeowners",
    measures: "CODEOWNERS at GitHub's 3 MiB limit against 200,000 test files",
    figure: `hostile ${hostileMs.toFixed(0)} ms ${verdict(hostileMs)}; budget spent ${burnerMs.toFixed(0)} ms ${verdict(burnerMs)}; real-sized ${realMs.toFixed(0)} ms`,
    target: `≤ ${TARGET_MS} ms`,
    report: body,
  });
  if (process.env.BENCH_STRICT === "1" && !pass) process.exit(1);
}

main();
