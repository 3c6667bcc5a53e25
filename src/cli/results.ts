/**
 * The CLI's own view of the tests' results, read from the report files it uploads, so that
 * `--quarantine` and the step summary work whether or not the upload succeeds. It must see the
 * same failed and errored tests, under the same identity, as the service: JUnit XML goes through
 * the service's own parser (src/ingest/junit.ts, bundled with saxes), and JSON suites are read
 * with the rules of the service's schema for the fields that matter here (names cut and cleaned
 * by the same functions; src/ingest/json-report.ts validates with Zod, which the CLI leaves out).
 */
import { parseJUnit } from "../ingest/junit";
import { type CaseStatus, REPORT_LIMITS, type ReportSuite, cleanOptionalText, cleanText } from "../ingest/report";
import { CASE_STATUSES } from "../lib/vocabulary";
import type { ReadReport } from "./reports";

export type FailedTest = {
  classname: string | null;
  name: string;
  file: string | null;
  status: "failed" | "errored";
  /** The failure's message, if the report gave one. */
  message: string | null;
  /** The report file it came from (as displayed). */
  report: string;
};

type TestCounts = { tests: number; passed: number; failed: number; errored: number; skipped: number };

export type TestResults = {
  counts: TestCounts;
  failures: FailedTest[];
  /** Reports whose tests could not be read: their results are unknown. */
  unreadable: { report: string; reason: string }[];
};

export function emptyResults(): TestResults {
  return { counts: { tests: 0, passed: 0, failed: 0, errored: 0, skipped: 0 }, failures: [], unreadable: [] };
}

type CaseView = { name: string; classname: string | null; file: string | null; status: CaseStatus; message: string | null };

function addCase(results: TestResults, report: string, testCase: CaseView): void {
  results.counts.tests += 1;
  results.counts[testCase.status] += 1;
  if (testCase.status === "failed" || testCase.status === "errored") {
    results.failures.push({
      classname: testCase.classname,
      name: testCase.name,
      file: testCase.file,
      status: testCase.status,
      message: testCase.message,
      report,
    });
  }
}

/** Adds one report's cases to `results` (an unreadable report is recorded, never thrown). */
export function addReport(results: TestResults, report: ReadReport): void {
  try {
    const cases = report.kind === "xml" ? xmlCases(report.text) : jsonCases(report.suites);
    for (const testCase of cases) addCase(results, report.name, testCase);
  } catch (error) {
    results.unreadable.push({ report: report.name, reason: (error as Error)?.message ?? String(error) });
  }
}

/** The cases of a JUnit XML document, as the service parses them (retries merged). */
function xmlCases(text: string): CaseView[] {
  const cases: CaseView[] = [];
  const stack: ReportSuite[] = [...parseJUnit(text).suites];
  // Document order does not matter for the results; a stack avoids recursion on deep nesting.
  while (stack.length > 0) {
    const suite = stack.pop()!;
    for (const c of suite.cases) {
      cases.push({
        name: c.name,
        classname: c.classname ?? null,
        file: c.file ?? null,
        status: c.status,
        message: c.failureMessage ?? null,
      });
    }
    if (suite.suites) stack.push(...suite.suites);
  }
  return cases;
}

const STATUSES = new Set<string>(CASE_STATUSES);

function optionalText(value: unknown, max: number, where: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new Error(`${where} must be a string`);
  return cleanOptionalText(value, max);
}

/**
 * The cases of JSON suites (`{"suites": [...]}`), read as the service's schema reads them: a
 * case's `name` is cut to 1,000 characters and must not be empty, `classname` and `file` are cut
 * and empty ones are null, `status` is one of passed, failed, errored, skipped. A case the service
 * would refuse makes the report unreadable (the service answers the upload with a 422).
 */
function jsonCases(suites: unknown[]): CaseView[] {
  const cases: CaseView[] = [];
  const stack: { suites: unknown[]; path: string; depth: number }[] = [{ suites, path: "suites", depth: 1 }];
  while (stack.length > 0) {
    const level = stack.pop()!;
    if (level.depth > REPORT_LIMITS.maxDepth) throw new Error(`suites are nested deeper than ${REPORT_LIMITS.maxDepth} levels`);
    level.suites.forEach((suite, i) => {
      const where = `${level.path}[${i}]`;
      if (!suite || typeof suite !== "object" || Array.isArray(suite)) throw new Error(`${where} is not an object`);
      const { cases: suiteCases, suites: nested } = suite as { cases?: unknown; suites?: unknown };
      if (suiteCases !== undefined && !Array.isArray(suiteCases)) throw new Error(`${where}.cases is not an array`);
      if (nested !== undefined && !Array.isArray(nested)) throw new Error(`${where}.suites is not an array`);
      (suiteCases ?? []).forEach((item: unknown, j: number) => cases.push(jsonCase(item, `${where}.cases[${j}]`)));
      if (nested) stack.push({ suites: nested, path: `${where}.suites`, depth: level.depth + 1 });
    });
  }
  return cases;
}

function jsonCase(item: unknown, where: string): CaseView {
  if (!item || typeof item !== "object" || Array.isArray(item)) throw new Error(`${where} is not an object`);
  const raw = item as Record<string, unknown>;
  if (typeof raw.name !== "string") throw new Error(`${where}.name must be a string`);
  const name = cleanText(raw.name, REPORT_LIMITS.maxNameLength);
  if (name === "") throw new Error(`${where}.name must not be empty`);
  if (typeof raw.status !== "string" || !STATUSES.has(raw.status))
    throw new Error(`${where}.status must be one of ${CASE_STATUSES.join(", ")}`);
  return {
    name,
    classname: optionalText(raw.classname, REPORT_LIMITS.maxNameLength, `${where}.classname`),
    file: optionalText(raw.file, REPORT_LIMITS.maxNameLength, `${where}.file`),
    status: raw.status as CaseStatus,
    message: optionalText(raw.failure_message, REPORT_LIMITS.maxMessageLength, `${where}.failure_message`),
  };
}

/** `classname › name` (or `file › name` without a classname): how a test is named in output. */
export function testLabel(test: { classname: string | null; file: string | null; name: string }): string {
  const scope = test.classname ?? test.file;
  return scope ? `${scope} › ${test.name}` : test.name;
}
