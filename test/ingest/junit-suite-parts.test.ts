/**
 * A large top-level suite handed out in parts while it is read (streamJUnitText given a first
 * pass's findings, scanRepeatedCases): the parts, put back together, are the suite the whole parse
 * gives (retries merged into the first entry's place, pytest teardown errors merged, nested suites
 * after the suite's own cases), and a suite whose retries are near each other is never held whole.
 */
import { describe, expect, it } from "vitest";
import { parseJUnit, scanRepeatedCases, streamJUnitText } from "../../src/ingest/junit";
import type { ReportSuite } from "../../src/ingest/report";
import { mulberry32 } from "../../src/lib/seeded-random";
import { joinedParts } from "../support/suite-parts";

async function* piecesOf(xml: string, size: number): AsyncIterable<string> {
  for (let i = 0; i < xml.length; i += size) yield xml.slice(i, i + size);
}
const pause = async () => {};

/** Emissions of the streamed parse with the first pass's findings, and the suites they add up to. */
async function streamed(xml: string, pieceSize = 4096) {
  const repeats = await scanRepeatedCases(piecesOf(xml, pieceSize), pause);
  const emissions: ReportSuite[] = [];
  const durationMs = await streamJUnitText(piecesOf(xml, pieceSize), (suites) => emissions.push(...suites), pause, repeats);
  const { suites } = joinedParts(emissions);
  return { emissions, report: { suites, durationMs } };
}

type Entry = { name: string; classname?: string; body?: string };
const testcase = ({ name, classname = "app.Spec", body = "" }: Entry) =>
  `<testcase classname="${classname}" name="${name}" time="0.010">${body}</testcase>`;
const suite = (name: string, entries: Entry[], inner = "") =>
  `<testsuite name="${name}">${entries.map(testcase).join("")}${inner}</testsuite>`;
const failure = (message: string) => `<failure message="${message}">at spec:1</failure>`;

describe("a large top-level suite, streamed in parts", () => {
  it("keeps cases with one name and no classname apart by their file, as the whole parse does", async () => {
    const entries = Array.from({ length: 3_000 }, (_, i) =>
      i % 2 === 0 ? `<testcase name="case ${i >> 1}" file="a.test.ts"/>` : `<testcase name="case ${i >> 1}" file="b.test.ts"/>`,
    );
    const xml = `<testsuites><testsuite name="big">${entries.join("")}<testcase name="case 7" file="a.test.ts"><failure message="again"/></testcase></testsuite></testsuites>`;
    const { report } = await streamed(xml);
    expect(report.suites).toEqual(parseJUnit(xml).suites);
    const cases = report.suites[0]!.cases;
    expect(cases).toHaveLength(3_000);
    expect(cases.filter((c) => c.name === "case 7").map((c) => [c.file, c.status, (c.attempts ?? []).length])).toEqual([
      ["a.test.ts", "failed", 1],
      ["b.test.ts", "passed", 0],
    ]);
  });

  it("gives the whole parse's suites, retries merged in the first entry's place, and is handed out in parts", async () => {
    const entries: Entry[] = Array.from({ length: 5_000 }, (_, i) => ({
      name: `test ${i}`,
      body: i % 97 === 0 ? failure(`boom ${i}`) : `<system-out>line ${i}</system-out>`,
    }));
    // Retries: right after the first entry (pytest-rerunfailures, Surefire reruns), and at the end of the suite (Gradle's retry).
    entries.splice(101, 0, { name: "test 100", body: "" });
    entries.splice(2_001, 0, { name: "test 1999", body: failure("again") }, { name: "test 1999", body: "" });
    entries.push({ name: "test 3000", body: "" });
    // A pytest teardown error: the second entry of a passed test.
    entries.splice(entries.findIndex((entry) => entry.name === "test 4000") + 1, 0, {
      name: "test 4000",
      body: `<error message="failed on teardown with &quot;x&quot;">teardown</error>`,
    });
    const xml = `<testsuites>${suite("first", entries.slice(0, 10))}${suite("big", entries)}${suite("last", entries.slice(0, 3))}</testsuites>`;
    const whole = parseJUnit(xml);
    const { emissions, report } = await streamed(xml);
    expect(report).toEqual(whole);
    const parts = emissions.filter((emission) => emission.continued);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    // The Gradle-style retry of test 3000 at the end holds everything from test 3000 on (2,000 cases),
    // and what was not handed out yet before it (less than a part and a quarter): never the whole suite.
    expect(Math.max(...emissions.map((emission) => emission.cases.length))).toBeLessThan(2_000 + 1_250);
    const big = report.suites[1]!;
    expect(big.cases).toHaveLength(5_000);
    expect(big.cases[3000]!.attempts).toEqual([{ status: "passed", durationMs: 10, failureMessage: null }]);
    expect(big.cases[4000]!.status).toBe("errored");
  });

  it("keeps a suite's own cases before its nested suites' and stops streaming once a suite opens inside it", async () => {
    const own = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ name: `own ${from + i}` }));
    const xml = `<testsuite name="outer">${own(0, 2_500).map(testcase).join("")}${suite("inner", own(0, 1_500))}${own(2_500, 3_000).map(testcase).join("")}</testsuite>`;
    const whole = parseJUnit(xml);
    const { emissions, report } = await streamed(xml);
    expect(report).toEqual(whole);
    expect(emissions.filter((emission) => emission.continued).length).toBeGreaterThanOrEqual(1);
    expect(report.suites[0]!.cases.map((c) => c.name).slice(2_499, 2_501)).toEqual(["own 2499", "own 2500"]);
  });

  it("holds a large suite whole after cases straight under the root: their implicit suite comes first and ends last", async () => {
    const own = Array.from({ length: 2_500 }, (_, i) => ({ name: `own ${i}` }));
    const xml = `<testsuites>${testcase({ name: "loose" })}${suite("big", own)}${testcase({ name: "loose too" })}</testsuites>`;
    const { emissions, report } = await streamed(xml);
    expect(report).toEqual(parseJUnit(xml));
    expect(emissions.some((emission) => emission.continued)).toBe(false);
    expect(report.suites.map((s) => [s.name, s.cases.length])).toEqual([
      ["(no suite)", 2],
      ["big", 2_500],
    ]);
  });

  it("gives the whole parse's suites on random reports cut into random pieces", async () => {
    const random = mulberry32(11);
    for (let round = 0; round < 12; round++) {
      const suites: string[] = [];
      for (let s = 0; s < 1 + Math.floor(random() * 3); s++) {
        const count = Math.floor(random() * 3_000);
        const names = Math.max(1, Math.floor(count * (0.5 + random() / 2)));
        const entries: Entry[] = Array.from({ length: count }, () => {
          const n = Math.floor(random() * names);
          const roll = random();
          return { name: `t${n}`, classname: `c${n % 7}`, body: roll < 0.1 ? failure(`f${n}`) : roll < 0.15 ? "<skipped/>" : "" };
        });
        const nested = random() < 0.3 ? suite(`nested ${s}`, entries.slice(0, 50)) : "";
        suites.push(suite(`suite ${s}`, entries, nested));
      }
      const xml = `<testsuites time="12.5">${suites.join("")}</testsuites>`;
      const { report } = await streamed(xml, 1 + Math.floor(random() * 20_000));
      expect(report).toEqual(parseJUnit(xml));
    }
  });
});
