import { describe, expect, it } from "vitest";
import { parseJUnit, streamJUnitText } from "../../src/ingest/junit";
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
      expect([...cases].sort((a, b) => byKey(a).localeCompare(byKey(b)))).toEqual(
        [...expected.cases].sort((a, b) => byKey(a).localeCompare(byKey(b))),
      );
      const totals = { tests_count: 0, passed_count: 0, failed_count: 0, errored_count: 0, skipped_count: 0 };
      for (const c of cases) {
        totals.tests_count++;
        totals[`${c.status}_count` as keyof typeof totals]++;
      }
      expect(totals).toEqual(expected.totals);
    });
  }
});

const onlyCaseOf = (xml: string) => {
  const cases = parseJUnit(xml).suites.flatMap((suite) => suite.cases);
  expect(cases).toHaveLength(1);
  return cases[0]!;
};
const inSuite = (testcase: string) => `<testsuite name="s">${testcase}</testsuite>`;

describe("a failure's message and its text", () => {
  it("keeps the stack trace of a <failure> that has a message attribute (node:test)", () => {
    const c = onlyCaseOf(
      inSuite(
        `<testcase name="adds" classname="math" time="0.001"><failure type="testCodeFailure" message="Expected values to be strictly equal:&#10;&#10;1 !== 2&#10;">[Error [ERR_TEST_FAILURE]: Expected values to be strictly equal:\n\n1 !== 2\n] {\n  code: 'ERR_TEST_FAILURE',\n  failureType: 'testCodeFailure',\n  cause: AssertionError [ERR_ASSERTION]\n      at TestContext.&lt;anonymous&gt; (file:///app/test/math.test.mjs:5:10)\n}</failure></testcase>`,
      ),
    );
    expect(c.status).toBe("failed");
    expect(c.failureType).toBe("testCodeFailure");
    expect(c.failureMessage).toBe("Expected values to be strictly equal:\n\n1 !== 2");
    expect(c.failureText).toMatch(/^\[Error \[ERR_TEST_FAILURE\]: Expected values/);
    expect(c.failureText).toContain("at TestContext.<anonymous> (file:///app/test/math.test.mjs:5:10)");
  });

  it("keeps the stack trace of an <error> with a message (Maven Surefire) and of a jest-junit <failure>", () => {
    const surefire = flatten(parseJUnit(JUNIT_FIXTURES["maven-surefire.xml"]!).suites).flatMap((s) => s.suite.cases);
    const rounds = surefire.find((c) => c.name === "roundsHalfEven")!;
    expect(rounds.failureMessage).toBe("expected: <10.25> but was: <10.26>");
    expect(rounds.failureText).toMatch(/^org\.opentest4j\.AssertionFailedError: expected: <10\.25> but was: <10\.26>\n\tat /);
    expect(rounds.failureText).toMatch(/InvoiceServiceTest\.java:58\)$/);
    const loads = surefire.find((c) => c.name === "loadsInvoiceFromRepository")!;
    expect(loads.status).toBe("errored");
    expect(loads.failureMessage).toMatch(/^Connection to localhost:5432 refused/);
    expect(loads.failureText).toMatch(
      /^org\.postgresql\.util\.PSQLException: Connection to localhost:5432 refused[\s\S]*\n\tat org\.postgresql\.core/,
    );

    const jest = onlyCaseOf(
      inSuite(
        `<testcase name="rejects" classname="cart rejects" time="0.004"><failure message="Error: expect(received).toBe(expected)"><![CDATA[Error: expect(received).toBe(expected)\n    at Object.<anonymous> (src/cart.test.ts:12:5)]]></failure></testcase>`,
      ),
    );
    expect(jest.failureMessage).toBe("Error: expect(received).toBe(expected)");
    expect(jest.failureText).toBe("Error: expect(received).toBe(expected)\n    at Object.<anonymous> (src/cart.test.ts:12:5)");
  });

  it("without a message attribute, the text is both the message (as before) and the text", () => {
    const c = onlyCaseOf(inSuite(`<testcase name="a"><failure type="E">\n  boom\n  at x.ts:1\n</failure></testcase>`));
    expect(c.failureMessage).toBe("boom\n  at x.ts:1");
    expect(c.failureText).toBe("boom\n  at x.ts:1");
  });

  it("has no text for a passed case, a skipped case, or a failure element that is empty", () => {
    expect(onlyCaseOf(inSuite(`<testcase name="a"/>`)).failureText).toBeNull();
    expect(onlyCaseOf(inSuite(`<testcase name="a"><skipped message="later">reason in text</skipped></testcase>`)).failureText).toBeNull();
    const empty = onlyCaseOf(inSuite(`<testcase name="a"><failure message="m">  </failure></testcase>`));
    expect(empty).toMatchObject({ failureMessage: "m", failureText: null });
  });

  it("caps the text at the message cap, independently of the message attribute", () => {
    const c = onlyCaseOf(inSuite(`<testcase name="a"><error message="${"M".repeat(5_000)}">${"t".repeat(50_000)}</error></testcase>`));
    expect(c.failureMessage).toBe("M".repeat(REPORT_LIMITS.maxMessageLength));
    expect(c.failureText).toBe("t".repeat(REPORT_LIMITS.maxMessageLength));
  });

  it("the first <failure> wins, and an <error> after it brings its own message and text", () => {
    const failures = onlyCaseOf(
      inSuite(`<testcase name="a"><failure message="one">first</failure><failure message="two">second</failure></testcase>`),
    );
    expect(failures).toMatchObject({ status: "failed", failureMessage: "one", failureText: "first" });
    const errorLater = onlyCaseOf(inSuite(`<testcase name="a"><failure message="one">first</failure><error message="boom"/></testcase>`));
    expect(errorLater).toMatchObject({ status: "errored", failureMessage: "boom", failureText: null });
  });

  it("two entries with one name and no classname are two tests when their files differ, a retry when they agree", () => {
    const [suite] = parseJUnit(
      inSuite(
        `<testcase name="renders" file="a.test.ts"><failure message="a"/></testcase><testcase name="renders" file="b.test.ts"/>` +
          `<testcase name="loads" file="a.test.ts"><failure message="first"/></testcase><testcase name="loads" file="a.test.ts"/>`,
      ),
    ).suites;
    expect(suite!.cases.map((c) => [c.name, c.file, c.status, (c.attempts ?? []).map((a) => a.status)])).toEqual([
      ["renders", "a.test.ts", "failed", []],
      ["renders", "b.test.ts", "passed", []],
      ["loads", "a.test.ts", "passed", ["failed"]],
    ]);
    // A classname still decides alone: the file is not part of the identity then.
    const [withClass] = parseJUnit(
      inSuite(`<testcase classname="c" name="x" file="a.ts"/><testcase classname="c" name="x" file="b.ts"/>`),
    ).suites;
    expect(withClass!.cases).toHaveLength(1);
  });

  it("a retried <testcase> takes the last entry's text; pytest's teardown entry brings its text", () => {
    const retried = onlyCaseOf(
      inSuite(
        `<testcase classname="c" name="a"><failure message="m1">trace 1</failure></testcase><testcase classname="c" name="a"><failure message="m2">trace 2</failure></testcase>`,
      ),
    );
    expect(retried).toMatchObject({ failureMessage: "m2", failureText: "trace 2" });
    expect(retried.attempts).toEqual([{ status: "failed", durationMs: null, failureMessage: "m1" }]);
    const teardown = onlyCaseOf(
      inSuite(
        `<testcase classname="c" name="a"/><testcase classname="c" name="a"><error message="failed on teardown with &quot;boom&quot;">def outbox():\n    yield box</error></testcase>`,
      ),
    );
    expect(teardown).toMatchObject({
      status: "errored",
      failureMessage: 'failed on teardown with "boom"',
      failureText: "def outbox():\n    yield box",
      attempts: [],
    });
  });

  it("attempts keep one text as before: the message, else the stack trace", () => {
    const rerun = flatten(parseJUnit(JUNIT_FIXTURES["surefire-rerun.xml"]!).suites).flatMap((s) => s.suite.cases);
    const flaky = rerun.find((c) => c.name === "indexesDocument")!;
    expect(flaky).toMatchObject({ status: "passed", failureMessage: null, failureText: null });
    expect(flaky.attempts).toEqual([
      { status: "failed", durationMs: null, failureMessage: "expected: <1> but was: <0>" },
      { status: "failed", durationMs: null, failureMessage: "expected: <1> but was: <0>" },
    ]);
  });
});

describe("a <testcase> that says it was not run", () => {
  const statusOf = (attributes: string, children = "") =>
    onlyCaseOf(inSuite(`<testcase name="a" ${attributes}>${children}</testcase>`)).status;

  it('is skipped with no child element: googletest\'s status="notrun" and result="suppressed", ctest\'s status="disabled" or "skipped"', () => {
    expect(statusOf(`status="notrun" result="suppressed"`)).toBe("skipped");
    expect(statusOf(`status="notrun"`)).toBe("skipped");
    expect(statusOf(`result="suppressed"`)).toBe("skipped");
    expect(statusOf(`status="disabled"`)).toBe("skipped");
    expect(statusOf(`status="skipped"`)).toBe("skipped");
  });

  it("matches the values whatever their case and surrounding spaces", () => {
    expect(statusOf(`status="NotRun"`)).toBe("skipped");
    expect(statusOf(`status=" DISABLED "`)).toBe("skipped");
    expect(statusOf(`result="Suppressed"`)).toBe("skipped");
  });

  it("leaves other values alone: a case that ran is passed", () => {
    expect(statusOf(`status="run" result="completed"`)).toBe("passed");
    expect(statusOf(`status="passed"`)).toBe("passed");
    expect(statusOf(`status=""`)).toBe("passed");
  });

  it("a child element keeps its precedence", () => {
    expect(statusOf(`status="notrun"`, `<failure message="m"/>`)).toBe("failed");
    expect(statusOf(`status="disabled"`, `<error message="m"/>`)).toBe("errored");
    const skipped = onlyCaseOf(inSuite(`<testcase name="a" status="notrun"><skipped message="why"/></testcase>`));
    expect(skipped).toMatchObject({ status: "skipped", failureMessage: "why" });
  });

  it("carries no failure, and as a retry's last entry it is the outcome like any other", () => {
    const disabled = onlyCaseOf(inSuite(`<testcase name="a" status="notrun" result="suppressed" time="0"/>`));
    expect(disabled).toMatchObject({
      status: "skipped",
      durationMs: 0,
      failureType: null,
      failureMessage: null,
      failureText: null,
      attempts: [],
    });
    const retried = onlyCaseOf(inSuite(`<testcase name="a"><failure message="m"/></testcase><testcase name="a" status="notrun"/>`));
    expect(retried.status).toBe("skipped");
    expect(retried.attempts).toEqual([{ status: "failed", durationMs: null, failureMessage: "m" }]);
  });
});

describe("parsing a document read as a stream (streamJUnitText)", () => {
  async function streamed(pieces: string[]) {
    const suites: ReportSuite[] = [];
    async function* source() {
      yield* pieces;
    }
    const durationMs = await streamJUnitText(
      source(),
      (complete) => suites.push(...complete),
      async () => {},
    );
    return { suites, durationMs };
  }

  it("gives what the whole document gives, for every fixture, cut into pieces of a few characters", async () => {
    for (const [name, xml] of Object.entries(JUNIT_FIXTURES)) {
      const pieces = xml.match(/[\s\S]{1,7}/g) ?? [];
      expect(await streamed(pieces), name).toEqual(parseJUnit(xml));
    }
  });

  it("replaces a forbidden character reference wherever the pieces cut it", async () => {
    const xml = `<testsuite name="s"><testcase name="t"><failure message="a &#x1B;[31m red &#27; b"/></testcase></testsuite>`;
    const whole = parseJUnit(xml);
    expect(whole.suites[0]!.cases[0]!.failureMessage).toBe("a \uFFFD[31m red \uFFFD b");
    for (let cut = 1; cut < xml.length; cut++) {
      expect(await streamed([xml.slice(0, cut), xml.slice(cut)])).toEqual(whole);
    }
  });

  it("fails a malformed document with the parser's reason", async () => {
    await expect(streamed(["<testsuite name='s'><testcase name='t'>", "</testsuite>"])).rejects.toThrow(/not well-formed/);
  });
});
