import { describe, expect, it } from "vitest";
import { parseJUnit, parseSeconds, replaceForbiddenControls } from "../../src/ingest/junit";
import { REPORT_LIMITS, type ReportSuite } from "../../src/ingest/report";
import { EXPECTED, JUNIT_FIXTURES } from "../fixtures/junit";

/** Flattens suites in document (pre-)order, as they are numbered when stored. */
function flatten(suites: ReportSuite[]) {
  const out: { suite: ReportSuite; number: number; parent: number | null }[] = [];
  const walk = (suite: ReportSuite, parent: number | null) => {
    const number = out.length + 1;
    out.push({ suite, number, parent });
    for (const child of suite.suites ?? []) walk(child, number);
  };
  for (const suite of suites) walk(suite, null);
  return out;
}

describe("JUnit dialects", () => {
  for (const [file, xml] of Object.entries(JUNIT_FIXTURES)) {
    it(`parses ${file} as the tool wrote it`, () => {
      const expected = EXPECTED[file]!;
      const flat = flatten(parseJUnit(xml).suites);
      expect(flat.map((s) => ({ number: s.number, parent_number: s.parent, name: s.suite.name }))).toEqual(
        expected.suites.map((s) => ({ number: s.number, parent_number: s.parent_number, name: s.name })),
      );
      const cases = flat.flatMap((s) =>
        s.suite.cases.map((c) => ({
          suite_number: s.number,
          classname: c.classname ?? "",
          name: c.name,
          status: c.status,
          duration_ms: c.durationMs ?? null,
          attempt_statuses: (c.attempts ?? []).map((a) => a.status),
        })),
      );
      const byKey = (c: { suite_number: number; classname: string; name: string }) => `${c.suite_number}|${c.classname}|${c.name}`;
      expect([...cases].sort((a, b) => byKey(a).localeCompare(byKey(b)))).toEqual([...expected.cases].sort((a, b) => byKey(a).localeCompare(byKey(b))));
      const totals = { tests_count: 0, passed_count: 0, failed_count: 0, errored_count: 0, skipped_count: 0 };
      for (const c of cases) {
        totals.tests_count++;
        totals[`${c.status}_count` as keyof typeof totals]++;
      }
      expect(totals).toEqual(expected.totals);
    });
  }
});
