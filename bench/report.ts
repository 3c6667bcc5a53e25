/**
 * The benchmarks' record: BENCHMARKS.md holds one row per benchmark with its latest figure, and
 * bench/history/<name>.md every full report of that benchmark, oldest first. Each benchmark script
 * ends with recordBenchmark, which
 * - replaces the benchmark's row of the table in BENCHMARKS.md (the line whose first cell starts with
 *   `<!-- bench:<name> -->`; added after the table's last row when missing) with its figure, target,
 *   command, today's date (UTC) and the commit measured (`git rev-parse --short HEAD`, followed by
 *   "uncommitted" when tracked files other than the record itself differ from it), and
 * - appends the full report to bench/history/<name>.md under a `## <date> <commit>` heading (the
 *   report's own headings one level down, its relative links rebased on the repository's root),
 *   creating the file with its one-line header when it does not exist.
 *
 * Env: BENCH_NO_RECORD=1 writes nothing (a trial run: the script prints its report only);
 *      BENCH_OUTPUT=<file> writes the report to that file instead of recording it.
 * The paths, the date, the commit and the environment can be given (the tests write to a temporary
 * directory); by default they are the repository's.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export type BenchmarkRecord = {
  /** The npm script's suffix (`upload` for `npm run bench:upload`): the row's marker and the history file's name. */
  name: string;
  /** How to run it, e.g. `npm run bench:upload`. */
  command: string;
  /** What it measures, in a few words. */
  measures: string;
  /** The headline figure(s) of this run, short (e.g. "end to end 883.4 ms PASS; processing 22.25× the bare parse FAIL"). */
  figure: string;
  /** The target(s) the figure is judged against; "—" when there is none. */
  target: string;
  /** The full report, markdown, as the script printed it. */
  report: string;
  /** A named variant of the run (e.g. `edge-fold`): shown before the figure and in the history heading. */
  variant?: string;
};

export type RecordOptions = {
  /** BENCHMARKS.md by default. */
  table?: string;
  /** bench/history by default. */
  historyDir?: string;
  /** The repository: where git is asked for the commit and BENCH_OUTPUT is resolved. */
  root?: string;
  now?: Date;
  /** The commit measured; by default currentCommit(root). */
  commit?: string;
  env?: Record<string, string | undefined>;
  log?: (message: string) => void;
};

export type RecordResult =
  { written: "record"; row: string; table: string; history: string } | { written: "output"; file: string } | { written: "nothing" };

export const TABLE_HEADER = [
  "| Benchmark | What it measures | Latest figure | Target | Date, commit | History |",
  "|---|---|---|---|---|---|",
];

const NAME = /^[a-z0-9][a-z0-9-]*$/;
const ANY_ROW = /^\|\s*<!-- bench:[a-z0-9-]+ -->/;

/** The marker that starts a benchmark's row (inside its first cell, so the line stays a table row). */
export const rowMarker = (name: string) => `<!-- bench:${name} -->`;

/** Text for one table cell: one line, pipes escaped. */
export function cell(text: string): string {
  const flat = text.replace(/\s*\r?\n\s*/g, " ").trim();
  return flat === "" ? "—" : flat.replace(/(?<!\\)\|/g, "\\|");
}

/** The commit measured: the short hash of HEAD, "uncommitted" after it when tracked files (the record itself aside) differ. */
export function currentCommit(root: string = ROOT): string {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  try {
    const commit = git("rev-parse", "--short", "HEAD");
    const changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)BENCHMARKS.md", ":(exclude)bench/history");
    return changed === "" ? commit : `${commit} uncommitted`;
  } catch {
    return "unknown commit";
  }
}

export function renderRow(record: BenchmarkRecord, date: string, commit: string, historyLink: string): string {
  const figure = record.variant ? `${record.variant}: ${record.figure}` : record.figure;
  return [
    "",
    ` ${rowMarker(record.name)} \`${cell(record.command)}\` `,
    ` ${cell(record.measures)} `,
    ` ${cell(figure)} `,
    ` ${cell(record.target)} `,
    ` ${date}, ${cell(commit)} `,
    ` [${record.name}.md](${historyLink}) `,
    "",
  ].join("|");
}

/** The table with the benchmark's row replaced, or added after the last benchmark row (a new table at the end when there is none). */
export function upsertRow(table: string, name: string, row: string): string {
  const lines = table.split("\n");
  const own = new RegExp(`^\\|\\s*${rowMarker(name)}`);
  const at = lines.findIndex((line) => own.test(line));
  if (at !== -1) {
    lines[at] = row;
    return lines.join("\n");
  }
  const last = lines.findLastIndex((line) => ANY_ROW.test(line));
  if (last !== -1) {
    lines.splice(last + 1, 0, row);
    return lines.join("\n");
  }
  const head = table.trim() === "" ? "# Benchmarks" : table.replace(/\s*$/, "");
  return `${head}\n\n${[...TABLE_HEADER, row].join("\n")}\n`;
}

/** The report under a history heading: its headings one level down, its relative links rebased from the repository's root. */
export function historyEntry(report: string, heading: string, linkBase: string): string {
  let fenced = false;
  const lines = report
    .replace(/^\s*\n/, "")
    .replace(/\s*$/, "")
    .split("\n")
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
      if (fenced) return line;
      const demoted = /^#{1,5} /.test(line) ? `#${line}` : line;
      return linkBase === "" ? demoted : demoted.replace(/\]\((?![a-z][a-z0-9+.-]*:|#|\/)([^)\s]+)\)/gi, `](${linkBase}/$1)`);
    });
  return `${heading}\n\n${lines.join("\n")}\n`;
}

export const historyHeader = (name: string, command: string, tableLink: string) =>
  `# bench:${name}: every report of \`${command}\`, oldest first (the latest figure is in [BENCHMARKS.md](${tableLink}))`;

const posix = (p: string) => p.split(path.sep).join("/");

/** Records one run of a benchmark: its row in BENCHMARKS.md and its report in bench/history/<name>.md. */
export function recordBenchmark(record: BenchmarkRecord, options: RecordOptions = {}): RecordResult {
  if (!NAME.test(record.name)) throw new Error(`recordBenchmark: "${record.name}" is not a benchmark name (lowercase letters, digits, -)`);
  const env = options.env ?? process.env;
  const log = options.log ?? ((message: string) => console.log(`[bench] ${message}`));
  const root = options.root ?? ROOT;
  if (env.BENCH_NO_RECORD === "1" || env.BENCH_NO_RECORD === "true") {
    log(`BENCH_NO_RECORD is set: bench:${record.name} not recorded`);
    return { written: "nothing" };
  }
  if (env.BENCH_OUTPUT) {
    const file = path.resolve(root, env.BENCH_OUTPUT);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${record.report.replace(/\s*$/, "")}\n`);
    log(`BENCH_OUTPUT is set: the report written to ${file}, bench:${record.name} not recorded`);
    return { written: "output", file };
  }
  const table = options.table ?? path.join(root, "BENCHMARKS.md");
  const historyDir = options.historyDir ?? path.join(root, "bench", "history");
  const history = path.join(historyDir, `${record.name}.md`);
  const date = (options.now ?? new Date()).toISOString().slice(0, 10);
  const commit = options.commit ?? currentCommit(root);

  const row = renderRow(record, date, commit, posix(path.relative(path.dirname(table), history)));
  mkdirSync(path.dirname(table), { recursive: true });
  writeFileSync(table, upsertRow(existsSync(table) ? readFileSync(table, "utf8") : "", record.name, row));

  const heading = `## ${date} ${commit}${record.variant ? ` — ${record.variant}` : ""}`;
  const entry = historyEntry(record.report, heading, posix(path.relative(historyDir, path.dirname(table))));
  mkdirSync(historyDir, { recursive: true });
  const before = existsSync(history)
    ? readFileSync(history, "utf8").replace(/\s*$/, "")
    : historyHeader(record.name, record.command, posix(path.relative(historyDir, table)));
  writeFileSync(history, `${before}\n\n${entry}`);
  log(`recorded bench:${record.name}: its row in ${path.relative(root, table)}, its report in ${path.relative(root, history)}`);
  return { written: "record", row, table, history };
}
