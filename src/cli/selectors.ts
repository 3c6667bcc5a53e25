/**
 * The runners' own selectors for a list of failed tests (docs/splitting.md, "Re-running only
 * failures"): the arguments that make pytest, Jest, Vitest, Playwright, go test, RSpec, Maven
 * Surefire or Gradle run those tests and no others, as they wrote them in their JUnit reports
 * (test/fixtures/junit/ holds a report of each). Pure functions; one argument per line, quoted for
 * a POSIX shell (and for xargs) when it needs it.
 */
import { compareStrings } from "../lib/split";

export const SELECTOR_FORMATS = ["pytest", "jest", "vitest", "playwright", "go", "rspec", "maven", "gradle"] as const;
export type SelectorFormat = (typeof SELECTOR_FORMATS)[number];
export type FailedCase = { classname: string | null; name: string; file: string | null };

/** The arguments for `format`; none when nothing failed. */
export function selectorArgs(failures: readonly FailedCase[], format: SelectorFormat): string[] {
  if (failures.length === 0) return [];
  return BUILDERS[format](failures);
}

/** One argument per line, each quoted for sh and xargs when it holds anything but plain characters. */
export function formatArgs(args: readonly string[]): string {
  return args.map((arg) => `${shellQuote(arg)}\n`).join("");
}

function shellQuote(arg: string): string {
  return /^[\w\-./:=@%+,#]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

const distinct = (values: (string | null | undefined)[]) =>
  [...new Set(values.filter((v): v is string => v !== null && v !== undefined && v !== ""))].sort(compareStrings);
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const anyOf = (patterns: string[]) => `^(?:${patterns.join("|")})$`;
/** A file as a runner takes it on its command line: without the `./` RSpec writes. */
const cleanPath = (path: string) => path.replace(/^\.\//, "");

const BUILDERS: Record<SelectorFormat, (failures: readonly FailedCase[]) => string[]> = {
  pytest: (failures) => distinct(failures.map(pytestNodeId)),
  jest: (failures) => namePattern(failures, "--testNamePattern", (name) => name),
  // Vitest's JUnit names join describe blocks with " > "; -t matches them joined with spaces.
  vitest: (failures) => namePattern(failures, "-t", (name) => name.split(" > ").join(" ")),
  playwright: (failures) => {
    const files = distinct(failures.map((f) => f.file ?? f.classname));
    // --grep matches "project file describe… title": each title's parts in order, anywhere in it.
    const titles = distinct(failures.map((f) => f.name.split(" › ").map(escapeRegExp).join(".*")));
    return [...files, "--grep", titles.join("|")];
  },
  go: (failures) => {
    // -run takes top-level test names (a subtest's failure fails its parent); per package below.
    const tests = distinct(failures.map((f) => escapeRegExp(f.name.split("/")[0]!)));
    return ["-run", anyOf(tests), ...distinct(failures.map((f) => f.classname))];
  },
  rspec: (failures) => [
    ...distinct(failures.map((f) => (f.file ? cleanPath(f.file) : null))),
    ...distinct(failures.map((f) => f.name)).flatMap((name) => ["-e", name]),
  ],
  maven: (failures) => {
    const byClass = new Map<string, Set<string>>();
    for (const f of failures) {
      if (!f.classname) continue;
      const methods = byClass.get(f.classname) ?? new Set<string>();
      methods.add(jvmMethod(f.name));
      byClass.set(f.classname, methods);
    }
    const classes = [...byClass.keys()].sort(compareStrings);
    return [`-Dtest=${classes.map((c) => `${c}#${[...byClass.get(c)!].sort(compareStrings).join("+")}`).join(",")}`];
  },
  gradle: (failures) =>
    distinct(failures.map((f) => (f.classname ? `${f.classname}.${jvmMethod(f.name)}` : null))).flatMap((t) => ["--tests", t]),
};

/** A JUnit 5 method as Surefire and Gradle select it: without its parameter list or its invocation's index. */
function jvmMethod(name: string): string {
  return name.replace(/\(.*\)$/, "").replace(/\[.*\]$/, "");
}

/**
 * Jest and Vitest: the failed files, and a pattern of the failed tests' full names. A file that
 * failed to run at all (Jest's "Test suite failed to run") has no test to name: then no pattern,
 * and the failed files run whole, since a pattern would leave that file's tests out.
 */
function namePattern(failures: readonly FailedCase[], flag: string, fullName: (name: string) => string): string[] {
  const files = distinct(failures.map((f) => f.file ?? f.classname));
  const wholeFile = failures.some((f) => f.classname === "Test suite failed to run" || (f.file !== null && f.name === f.file));
  if (wholeFile) return files;
  return [...files, flag, anyOf(distinct(failures.map((f) => escapeRegExp(fullName(f.name)))))];
}

/**
 * pytest's node id, `path/to/test_mod.py::Class::test[param]`: the file the case names, else the
 * module of its classname (the dotted parts before the first capitalized one, a class's), as a
 * path. A module that failed to collect is reported with its dotted name as the test's: the file.
 */
function pytestNodeId(f: FailedCase): string {
  if (!f.classname) return `${f.name.split(".").join("/")}.py`;
  const parts = f.classname.split(".");
  const firstClass = parts.findIndex((part) => /^[A-Z]/.test(part));
  const moduleParts = firstClass < 0 ? parts : parts.slice(0, firstClass);
  const classes = firstClass < 0 ? [] : parts.slice(firstClass);
  const file = f.file ? cleanPath(f.file) : `${moduleParts.join("/")}.py`;
  return [file, ...classes, f.name].join("::");
}
