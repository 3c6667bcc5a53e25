/**
 * JUnit XML as real tools write it (Surefire, Gradle, pytest, jest-junit, gotestsum, Playwright,
 * Cypress, RSpec, PHPUnit…), read with saxes: a strict, streaming XML 1.0 parser. Streaming
 * keeps memory flat on huge files (system-out is cut while it is read, never held whole), and
 * saxes expands nothing but the five predefined entities and character references, so with DTDs
 * refused outright there is no entity expansion and no external fetch (OWASP XXE guidance).
 *
 * Rules (docs/uploads.md has the user-facing version):
 * - Root `<testsuites>` (not itself a suite; nested `<testsuites>` are transparent) or `<testsuite>`.
 * - Every `<testsuite>` is a suite, numbered later in document order; nested ones keep their parent.
 * - A `<testcase>`'s status: `<error>` → errored, else `<failure>` → failed, else `<skipped>` →
 *   skipped, else passed. Surefire/Gradle `<flakyFailure>`, `<flakyError>`, `<rerunFailure>`,
 *   `<rerunError>` are earlier attempts of the same case. With no outcome element, a case that says
 *   it was not run (googletest's DISABLED_ tests, ctest) is skipped.
 * - A failure's message is its `message` attribute, else its text; its text (the stack trace) is
 *   kept either way. Attempts keep the message only.
 * - Repeated `<testcase>` entries with the same classname and name in one suite are retries: the
 *   last is the outcome, earlier ones become attempts; the case keeps its first position.
 * - Suite counts come from the cases, never from the `tests=`/`failures=` attributes.
 */
import { SaxesParser, type SaxesTagPlain } from "saxes";
import {
  type CaseStatus,
  type Report,
  type ReportAttempt,
  type ReportCase,
  type ReportSuite,
  REPORT_LIMITS,
  ReportError,
  cleanOptionalText,
  cleanText,
} from "./report";

const MAX_INT_MS = 2_147_483_647;

/** `time` in seconds → whole milliseconds; missing, negative or unparsable → null. */
export function parseSeconds(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  let text = raw.trim();
  if (text === "") return null;
  // Some writers format with the machine's locale: "1,234.5" (grouping) or "1,5" (decimal comma).
  if (text.includes(",")) text = text.includes(".") ? text.replaceAll(",", "") : text.replace(",", ".");
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds < 0) return null;
  const ms = Math.round(seconds * 1000);
  return ms <= MAX_INT_MS ? ms : null;
}

/**
 * Control characters other than tab, newline and carriage return are not allowed in XML 1.0,
 * neither raw nor as character references, yet test runners write them (ANSI colours in
 * assertion messages). They become U+FFFD so such reports still load.
 */
const RAW_CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;
const RAW_CONTROLS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g;
const CONTROL_REFERENCE_SOURCE = "&#(?:[xX]0*(?:[0-8bBcCeEfF]|1[0-9a-fA-F])|0*(?:[0-8]|1[1245-9]|2[0-9]|3[01]));";
const CONTROL_REFERENCES = new RegExp(CONTROL_REFERENCE_SOURCE, "g");
const CONTROL_REFERENCE_AT = new RegExp(CONTROL_REFERENCE_SOURCE, "y");

/** Whether a forbidden character reference occurs: checked only where "&#" does (reports hold many harmless &#10;). */
function hasControlReference(xml: string): boolean {
  for (let at = xml.indexOf("&#"); at !== -1; at = xml.indexOf("&#", at + 2)) {
    CONTROL_REFERENCE_AT.lastIndex = at;
    if (CONTROL_REFERENCE_AT.test(xml)) return true;
  }
  return false;
}

function replaceForbiddenControls(xml: string): string {
  let result = RAW_CONTROL.test(xml) ? xml.replace(RAW_CONTROLS, "\uFFFD") : xml;
  if (hasControlReference(result)) result = result.replace(CONTROL_REFERENCES, "\uFFFD");
  return result;
}

type OutcomeKind = "failure" | "error" | "skipped";
const OUTCOME_ELEMENTS: Record<string, OutcomeKind> = { failure: "failure", error: "error", skipped: "skipped" };
const ATTEMPT_ELEMENTS: Record<string, CaseStatus> = {
  flakyFailure: "failed",
  flakyError: "errored",
  rerunFailure: "failed",
  rerunError: "errored",
};
const STATUS_OF: Record<OutcomeKind, CaseStatus> = { error: "errored", failure: "failed", skipped: "skipped" };
const PYTEST_TEARDOWN = /^failed on teardown with /;
const PRIORITY: Record<CaseStatus, number> = { errored: 3, failed: 2, skipped: 1, passed: 0 };

/** `status`/`result` values of a case that was never run: googletest (`notrun`, `suppressed`) and ctest (`disabled`, `skipped`). */
const NOT_RUN_STATUSES = new Set(["notrun", "disabled", "skipped"]);
const NOT_RUN_RESULTS = new Set(["suppressed"]);

function saysNotRun(attributes: Record<string, string>): boolean {
  const said = (value: string | undefined, values: Set<string>) => value !== undefined && values.has(value.trim().toLowerCase());
  return said(attributes.status, NOT_RUN_STATUSES) || said(attributes.result, NOT_RUN_RESULTS);
}

/** Text being collected from an element, cut at `limit` characters while it streams in. */
type Capture = { depth: number; text: string; limit: number; onEnd: (text: string) => void };

type OpenCase = {
  depth: number;
  name: string;
  classname: string | null;
  file: string | null;
  durationMs: number | null;
  status: CaseStatus;
  /** Its attributes say it was not run: skipped unless an outcome element says otherwise. */
  notRun: boolean;
  failureType: string | null;
  failureMessage: string | null;
  failureText: string | null;
  attempts: ReportAttempt[];
  systemOut: string | null;
  systemErr: string | null;
};

/**
 * `byClass`: classname → test name → position of the case in the suite (retries are found by
 * both); the case is at `suite.cases[position - offset]`, `offset` being the cases already handed
 * out in parts (a streamed suite). `ordinal`: the suite's place in the document (counters.suites
 * when it opened), by which a first pass's findings are looked up. `repeats`: while scanning, every
 * case identity's count; `stream`: while a top-level suite is handed out in parts.
 */
type OpenSuite = {
  depth: number;
  suite: ReportSuite;
  file: string | null;
  byClass: Map<string, Map<string, number>>;
  ordinal: number;
  offset: number;
  repeats?: Map<number, number>;
  stream?: SuiteStream;
  /** Read without a first pass (ReadOnce): a suite a second pass would hand out in parts, until a suite opens inside it. */
  streamable?: boolean;
};

/**
 * A top-level suite handed out in parts while it is read (StreamPlan): a case is final once no
 * later entry of its identity can follow (its identity occurs once in the suite, or its last
 * occurrence was read), and the longest run of final cases at the front goes out once it holds
 * PART_CASES cases. Identities are compared by hash here: two identities sharing a hash only keep
 * their cases a little longer.
 */
type SuiteStream = {
  /** Occurrences still to come, per hash of an identity that occurs more than once in the suite. */
  remaining: Map<number, number>;
  /** Positions of cases whose identity's hash still has occurrences to come. */
  waiting: Map<number, number[]>;
  /** Held cases when the front was last looked at. */
  checkedAt: number;
};

/** Cases per part of a streamed suite, at least: what the store writes per chunk. */
const PART_CASES = 1_000;

/**
 * What a first pass over a document found (scanRepeatedCases): per suite, by its ordinal, the
 * hashes of the case identities that occur more than once in it, with how often. A second pass
 * given it (StreamPlan) hands a large top-level suite out in parts instead of holding it whole.
 */
export type RepeatedCases = Map<number, Map<number, number>>;

/** The second pass's plan: the first pass's findings, and where parts of a top-level suite go (in document order). */
type StreamPlan = { repeats: RepeatedCases; part: (suite: ReportSuite) => void };

/** A 31-bit FNV-1a hash of a case's identity in its suite (classname and name, as `byClass` keys them). */
function identityHash(classKey: string, name: string): number {
  let hash = 0x811c9dc5;
  const mix = (text: string) => {
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  };
  mix(classKey);
  hash = Math.imul(hash ^ 0x1f, 0x01000193);
  mix(name);
  return hash >>> 1;
}

type Counters = { cases: number; suites: number };

/** Characters handed to the XML parser at a time; the streaming parser yields between slices. */
const SLICE_CHARS = 256 * 1024;

/** Longest character reference looked for across two pieces of text (`&#x0000001B;` and the like). */
const MAX_REFERENCE_CHARS = 64;

/**
 * Where a character reference cut by the end of `text` begins (an `&` with no `;` after it, near
 * the end), else `text.length`: that tail waits for the next piece, so a forbidden reference is
 * replaced whole wherever the pieces are cut.
 */
function openReferenceStart(text: string): number {
  const at = text.lastIndexOf("&");
  if (at === -1 || text.length - at > MAX_REFERENCE_CHARS || text.indexOf(";", at) !== -1) return text.length;
  return at;
}

/** What a parse of one document is for: a first pass's scan, a second pass's plan, or a plain parse (null). */
/**
 * A read without a first pass (readJUnitTextOnce): it stops (LargeSuite) where a second pass, given
 * a first pass's findings, could hand a suite out in parts, since only that pass keeps such a suite
 * out of memory.
 */
type ReadOnce = { once: true };

type ParseMode = { scan: RepeatedCases } | StreamPlan | ReadOnce | null;

/** Stops a read without a first pass (ReadOnce) at the first suite that a second pass could hand out in parts. */
class LargeSuite extends Error {}

const cleanName = (value: string | undefined, fallback: string) => cleanText(value?.trim() ? value : fallback, REPORT_LIMITS.maxNameLength);
const optionalName = (value: string | undefined) => cleanOptionalText(value, REPORT_LIMITS.maxNameLength);

/** A `<testcase>` just opened, before any of its children is read. */
function openTestCase(depth: number, attributes: Record<string, string>): OpenCase {
  return {
    depth,
    name: cleanName(attributes.name, "(unnamed test)"),
    classname: optionalName(attributes.classname),
    file: optionalName(attributes.file),
    durationMs: parseSeconds(attributes.time),
    status: "passed",
    notRun: saysNotRun(attributes),
    failureType: null,
    failureMessage: null,
    failureText: null,
    attempts: [],
    systemOut: null,
    systemErr: null,
  };
}

/** A closed `<testcase>` as the report holds it; a case with no outcome that says it was not run is skipped. */
function reportCase(testCase: OpenCase, suiteFile: string | null): ReportCase {
  return {
    name: testCase.name,
    classname: testCase.classname,
    file: testCase.file ?? suiteFile,
    status: testCase.status === "passed" && testCase.notRun ? "skipped" : testCase.status,
    durationMs: testCase.durationMs,
    failureType: testCase.failureType,
    failureMessage: testCase.failureMessage,
    failureText: testCase.failureText,
    attempts: testCase.attempts,
    systemOut: testCase.systemOut,
    systemErr: testCase.systemErr,
  };
}

/**
 * The state of one document's parse, fed the XML parser's events by parseDocument: suites are
 * appended to `into`, top-level ones added to `closed` once complete. A scan (`mode.scan`) keeps
 * no suite, case or text, only the counts of case identities.
 */
class DocumentState {
  private readonly scan: RepeatedCases | null;
  private readonly plan: StreamPlan | null;
  private readonly suites: OpenSuite[] = [];
  private depth = 0;
  private rootSeen = false;
  private rootDuration: number | null = null;
  private rootName: string | null = null;
  private implicitSuite: OpenSuite | null = null;
  private openCase: OpenCase | null = null;
  private capture: Capture | null = null;
  /** Depth of a flaky/rerun attempt element inside the open case: its nested output belongs to the attempt. */
  private attemptDepth = -1;

  constructor(
    private readonly into: ReportSuite[],
    private readonly counters: Counters,
    private readonly closed: Set<ReportSuite>,
    mode: ParseMode,
  ) {
    this.scan = mode && "scan" in mode ? mode.scan : null;
    this.plan = mode && "part" in mode ? mode : null;
    this.once = mode !== null && "once" in mode;
  }

  private readonly once: boolean;

  private startCapture(limit: number, onEnd: (text: string) => void): void {
    // A scan keeps no text.
    if (this.scan) return;
    this.capture = { depth: this.depth, text: "", limit, onEnd };
  }

  addText(text: string): void {
    const current = this.capture;
    if (!current || current.text.length >= current.limit) return;
    current.text += text.length > current.limit - current.text.length ? text.slice(0, current.limit - current.text.length) : text;
  }

  private countSuite(): void {
    if (++this.counters.suites > REPORT_LIMITS.maxSuites)
      throw new ReportError(`The report has more than ${REPORT_LIMITS.maxSuites} test suites.`);
  }

  private countCase(): void {
    if (++this.counters.cases > REPORT_LIMITS.maxCases)
      throw new ReportError(`The report has more than ${REPORT_LIMITS.maxCases} test cases.`);
  }

  private openSuite(attributes: Record<string, string>): void {
    this.countSuite();
    const parent = this.suites.at(-1);
    const suite: ReportSuite = {
      name: cleanName(attributes.name, "(unnamed suite)"),
      durationMs: parseSeconds(attributes.time),
      cases: [],
      suites: [],
    };
    // A scan keeps no suite once it is closed: a kept suite's name is a slice of the text piece it
    // was read in, and would keep that piece, so every piece, alive (the whole document).
    if (!this.scan) (parent ? parent.suite.suites! : this.into).push(suite);
    const open: OpenSuite = {
      depth: this.depth,
      suite,
      file: optionalName(attributes.file) ?? parent?.file ?? null,
      byClass: new Map(),
      ordinal: this.counters.suites,
      offset: 0,
    };
    if (this.scan) open.repeats = new Map();
    // Only a top-level suite is handed out in parts, and only until a suite opens inside it: the
    // store keeps a suite's own cases before its children's. Not after cases straight under the
    // root: their implicit suite comes first and is complete only at the document's end.
    if (this.plan && !parent && this.implicitSuite === null)
      open.stream = { remaining: new Map(this.plan.repeats.get(open.ordinal) ?? []), waiting: new Map(), checkedAt: 0 };
    // The same suites, read without a first pass: where a part could go out, that read stops (ReadOnce).
    if (this.once && !parent && this.implicitSuite === null) open.streamable = true;
    if (parent) {
      this.suites[0]!.stream = undefined;
      this.suites[0]!.streamable = false;
    }
    this.suites.push(open);
  }

  /** A scanned suite keeps, of its identities' counts, those above one. */
  private scanned(open: OpenSuite): void {
    if (!this.scan || !open.repeats) return;
    const repeated = new Map<number, number>();
    for (const [hash, count] of open.repeats) if (count > 1) repeated.set(hash, count);
    if (repeated.size > 0) this.scan.set(open.ordinal, repeated);
    open.repeats = undefined;
  }

  /** Hands out the longest run of final cases at the front of a streamed suite, once it holds PART_CASES. */
  private handOut(owner: OpenSuite): void {
    const stream = owner.stream;
    const held = owner.suite.cases.length;
    if (!this.plan || !stream || held < PART_CASES || held - stream.checkedAt < PART_CASES / 4) return;
    stream.checkedAt = held;
    let end = held;
    for (const positions of stream.waiting.values()) for (const position of positions) end = Math.min(end, position - owner.offset);
    if (end < PART_CASES) return;
    const cases = owner.suite.cases.splice(0, end);
    owner.offset += end;
    stream.checkedAt -= end;
    this.plan.part({ name: owner.suite.name, durationMs: owner.suite.durationMs, cases, suites: [], continued: true });
  }

  private suiteForCase(): OpenSuite {
    const current = this.suites.at(-1);
    if (current) return current;
    // A <testcase> straight under <testsuites>: kept in one implicit suite per document.
    if (!this.implicitSuite) {
      this.countSuite();
      const suite: ReportSuite = { name: this.rootName ?? "(no suite)", durationMs: null, cases: [], suites: [] };
      if (!this.scan) this.into.push(suite);
      this.implicitSuite = { depth: 0, suite, file: null, byClass: new Map(), ordinal: this.counters.suites, offset: 0 };
      if (this.scan) this.implicitSuite.repeats = new Map();
    }
    return this.implicitSuite;
  }

  private closeCase(testCase: OpenCase): void {
    const owner = this.suiteForCase();
    // Nested maps rather than one concatenated key: no key string to build and hash per case. A case
    // without a classname is known by its file (docs/tests.md#identity): same name, other file, other
    // test. NUL cannot occur in XML, so no classname reads as that key.
    const classKey = testCase.classname ?? `\u0000${testCase.file ?? owner.file ?? ""}`;
    if (owner.repeats) {
      const hash = identityHash(classKey, testCase.name);
      owner.repeats.set(hash, (owner.repeats.get(hash) ?? 0) + 1);
      return;
    }
    const stream = owner.stream;
    const hash = stream ? identityHash(classKey, testCase.name) : 0;
    const remaining = stream?.remaining.get(hash);
    const finished = reportCase(testCase, owner.file);
    if (stream && remaining === undefined) {
      // Its identity occurs once in the suite: final now, and never looked up again.
      this.countCase();
      owner.suite.cases.push(finished);
      this.handOut(owner);
      return;
    }
    if (stream && remaining !== undefined) {
      // One occurrence fewer to come; once none is left, every case of this hash is final.
      if (remaining > 1) stream.remaining.set(hash, remaining - 1);
      else {
        stream.remaining.delete(hash);
        stream.waiting.delete(hash);
      }
    }
    let byName = owner.byClass.get(classKey);
    if (!byName) owner.byClass.set(classKey, (byName = new Map()));
    const earlierPosition = byName.get(testCase.name);
    if (earlierPosition === undefined) this.addCase(owner, byName, finished, hash);
    else this.mergeRepeatedCase(owner, earlierPosition, testCase, finished);
    // A second pass holds at most as many of this suite's cases (none handed out yet): below PART_CASES it hands out none.
    if (owner.streamable && owner.suite.cases.length >= PART_CASES) throw new LargeSuite();
  }

  /** The first entry of its identity in the suite: placed, and remembered while later entries of its hash may follow. */
  private addCase(owner: OpenSuite, byName: Map<string, number>, finished: ReportCase, hash: number): void {
    const stream = owner.stream;
    this.countCase();
    const position = owner.offset + owner.suite.cases.length;
    byName.set(finished.name, position);
    owner.suite.cases.push(finished);
    if (stream?.remaining.has(hash)) {
      const positions = stream.waiting.get(hash);
      if (positions) positions.push(position);
      else stream.waiting.set(hash, [position]);
    }
    if (stream) this.handOut(owner);
  }

  /** A later entry of an identity already in the suite: a pytest teardown error, else a retry. */
  private mergeRepeatedCase(owner: OpenSuite, earlierPosition: number, testCase: OpenCase, finished: ReportCase): void {
    const stream = owner.stream;
    const earlierIndex = earlierPosition - owner.offset;
    const earlier = owner.suite.cases[earlierIndex]!;
    // pytest writes a teardown error as a second entry of the same test: one outcome, not a retry.
    if (testCase.status === "errored" && PYTEST_TEARDOWN.test(testCase.failureMessage ?? "")) {
      owner.suite.cases[earlierIndex] = {
        ...earlier,
        status: "errored",
        failureType: finished.failureType,
        failureMessage: finished.failureMessage,
        failureText: finished.failureText,
      };
    } else {
      // A retry: the earlier entry (and its own attempts) become attempts of this one.
      const attempts: ReportAttempt[] = [
        ...(earlier.attempts ?? []),
        { status: earlier.status, durationMs: earlier.durationMs ?? null, failureMessage: earlier.failureMessage ?? null },
        ...testCase.attempts,
      ];
      finished.attempts = attempts.slice(-REPORT_LIMITS.maxAttempts);
      owner.suite.cases[earlierIndex] = finished;
    }
    // Merged into the earlier case's place: the front may be final now.
    if (stream) this.handOut(owner);
  }

  openTag(tag: SaxesTagPlain): void {
    this.depth++;
    if (this.depth > REPORT_LIMITS.maxDepth) throw new ReportError(`XML elements are nested deeper than ${REPORT_LIMITS.maxDepth} levels.`);
    const element = tag.name;
    const attributes = tag.attributes as Record<string, string>;
    if (!this.rootSeen) return this.openRoot(element, attributes);
    if (this.openCase) return this.openInsideCase(this.openCase, element, attributes);
    if (element === "testsuite") return this.openSuite(attributes);
    if (element === "testcase") this.openCase = openTestCase(this.depth, attributes);
  }

  private openRoot(element: string, attributes: Record<string, string>): void {
    this.rootSeen = true;
    if (element === "testsuites") {
      this.rootDuration = parseSeconds(attributes.time);
      this.rootName = optionalName(attributes.name);
      return;
    }
    if (element === "testsuite") return this.openSuite(attributes);
    throw new ReportError(`The root element is <${element.slice(0, 100)}>; a JUnit report starts with <testsuites> or <testsuite>.`);
  }

  private openInsideCase(testCase: OpenCase, element: string, attributes: Record<string, string>): void {
    if (this.attemptDepth >= 0) return this.openInsideAttempt(testCase, element);
    if (this.depth !== testCase.depth + 1) return;
    const outcome = Object.hasOwn(OUTCOME_ELEMENTS, element) ? OUTCOME_ELEMENTS[element] : undefined;
    if (outcome) return this.openOutcome(testCase, outcome, attributes);
    const attemptStatus = Object.hasOwn(ATTEMPT_ELEMENTS, element) ? ATTEMPT_ELEMENTS[element] : undefined;
    if (attemptStatus) return this.openAttempt(testCase, attemptStatus, attributes);
    if (element === "system-out")
      this.startCapture(
        REPORT_LIMITS.maxOutputLength,
        (text) => (testCase.systemOut = cleanOptionalText(text, REPORT_LIMITS.maxOutputLength)),
      );
    else if (element === "system-err")
      this.startCapture(
        REPORT_LIMITS.maxOutputLength,
        (text) => (testCase.systemErr = cleanOptionalText(text, REPORT_LIMITS.maxOutputLength)),
      );
  }

  /** Inside <flakyFailure> etc.: <stackTrace> supplies the attempt's message when it has no attribute. */
  private openInsideAttempt(testCase: OpenCase, element: string): void {
    if (element !== "stackTrace" || this.depth !== this.attemptDepth + 1) return;
    const attempt = testCase.attempts.at(-1);
    if (attempt && attempt.failureMessage === null) {
      this.startCapture(
        REPORT_LIMITS.maxMessageLength,
        (text) => (attempt.failureMessage = cleanOptionalText(text.trim(), REPORT_LIMITS.maxMessageLength)),
      );
    }
  }

  /** `<failure>`, `<error>` or `<skipped>`: the case's outcome unless a weightier one was read already. */
  private openOutcome(testCase: OpenCase, outcome: OutcomeKind, attributes: Record<string, string>): void {
    const status = STATUS_OF[outcome];
    if (PRIORITY[status] <= PRIORITY[testCase.status]) return;
    testCase.status = status;
    testCase.failureType = outcome === "skipped" ? null : optionalName(attributes.type);
    testCase.failureMessage = cleanOptionalText(attributes.message?.trim(), REPORT_LIMITS.maxMessageLength);
    testCase.failureText = null;
    if (outcome === "skipped") return;
    // The text is kept even beside a message: it is the stack trace the message leaves out.
    const messageFromText = testCase.failureMessage === null;
    this.startCapture(REPORT_LIMITS.maxMessageLength, (text) => {
      if (testCase.status !== status) return;
      testCase.failureText = cleanOptionalText(text.trim(), REPORT_LIMITS.maxMessageLength);
      if (messageFromText) testCase.failureMessage = testCase.failureText;
    });
  }

  /** Surefire/Gradle `<flakyFailure>` and the like: an earlier attempt of the open case. */
  private openAttempt(testCase: OpenCase, status: CaseStatus, attributes: Record<string, string>): void {
    this.attemptDepth = this.depth;
    testCase.attempts.push({
      status,
      durationMs: parseSeconds(attributes.time),
      failureMessage: cleanOptionalText(attributes.message?.trim(), REPORT_LIMITS.maxMessageLength),
    });
    // The latest attempts are kept, as for repeated <testcase> entries.
    if (testCase.attempts.length > REPORT_LIMITS.maxAttempts) testCase.attempts.shift();
  }

  closeTag(): void {
    const current = this.capture;
    if (current && current.depth === this.depth) {
      this.capture = null;
      current.onEnd(current.text);
    }
    if (this.attemptDepth === this.depth) this.attemptDepth = -1;
    if (this.openCase && this.openCase.depth === this.depth) {
      const finished = this.openCase;
      this.openCase = null;
      this.closeCase(finished);
    } else if (this.suites.at(-1)?.depth === this.depth) {
      const finished = this.suites.pop()!;
      this.scanned(finished);
      if (this.suites.length === 0 && !this.scan) this.closed.add(finished.suite);
    }
    this.depth--;
  }

  /** At the document's end: its implicit suite (cases straight under the root) is complete; returns `<testsuites time>`. */
  finish(): number | null {
    if (!this.rootSeen) throw new ReportError("The XML document has no root element.");
    const implicit = this.implicitSuite;
    if (implicit) {
      this.scanned(implicit);
      if (!this.scan) this.closed.add(implicit.suite);
    }
    return this.rootDuration;
  }
}

/** Any error of the XML parser as a ReportError (the report's own errors pass through). */
function notWellFormed(error: unknown): never {
  if (error instanceof ReportError || error instanceof LargeSuite) throw error;
  const message = error instanceof Error ? error.message : String(error);
  throw new ReportError(`The XML is not well-formed: ${message.slice(0, 300)}`);
}

/**
 * Parses one JUnit XML document into suites (appended to `into`) from the text handed to it: the
 * generator asks for each piece of text with a `yield` and is given it by `next(text)`, then
 * `next(null)` at the end of the document; it returns the `<testsuites time>` if any. Top-level
 * suites are added to `closed` once their end tag is read (their cases are then final, retries
 * merged). The document is never needed whole: a stream can be parsed as it is read.
 */
function* parseDocument(
  into: ReportSuite[],
  counters: Counters,
  closed: Set<ReportSuite>,
  mode: ParseMode = null,
): Generator<void, number | null, string | null> {
  const parser = new SaxesParser({ xmlns: false, position: true });
  const state = new DocumentState(into, counters, closed, mode);
  parser.on("doctype", () => {
    throw new ReportError("XML with a document type declaration (<!DOCTYPE>) is not accepted: DTDs and entities are refused.");
  });
  parser.on("opentag", (tag: SaxesTagPlain) => state.openTag(tag));
  parser.on("text", (text) => state.addText(text));
  parser.on("cdata", (text) => state.addText(text));
  parser.on("closetag", () => state.closeTag());

  /** The end of the previous piece that may begin a character reference, completed by the next piece. */
  let carried = "";
  for (let piece = yield; piece !== null; piece = yield) {
    const text = carried + piece;
    const cut = openReferenceStart(text);
    carried = text.slice(cut);
    try {
      parser.write(replaceForbiddenControls(text.slice(0, cut)));
    } catch (error) {
      notWellFormed(error);
    }
  }
  try {
    if (carried !== "") parser.write(replaceForbiddenControls(carried));
    parser.close();
  } catch (error) {
    notWellFormed(error);
  }
  return state.finish();
}

/** What an emitted suite's slot holds afterwards: the suite itself is no longer referenced. */
const RELEASED: ReportSuite = { name: "", durationMs: null, cases: [] };

/**
 * Parses one or more JUnit XML documents into one run's suites. The generator yields after each
 * slice of input; `emit` receives top-level suites, in document order, as soon as they are
 * complete. Returns the run's duration: the sum of `<testsuites time>` when every document has
 * one, else null (the store then sums the top-level suites). Throws ReportError.
 */
function* parseDocuments(documents: string | string[], emit: (suites: ReportSuite[]) => void): Generator<void, number | null> {
  const list = typeof documents === "string" ? [documents] : documents;
  const counters: Counters = { cases: 0, suites: 0 };
  let durationMs: number | null = null;
  let allHaveDuration = list.length > 0;
  for (const xml of list) {
    const reading = documentReader(emit, counters);
    for (let offset = 0; offset < xml.length; offset += SLICE_CHARS) {
      reading.write(xml.slice(offset, offset + SLICE_CHARS));
      yield;
    }
    const duration = reading.close();
    if (duration === null) allHaveDuration = false;
    else durationMs = (durationMs ?? 0) + duration;
  }
  return allHaveDuration ? durationMs : null;
}

/**
 * One document read piece by piece (`write`, then `close`, which returns its `<testsuites time>`):
 * complete top-level suites go to `emit` as soon as they are read, in document order. Given a
 * first pass's `repeats`, a large top-level suite goes out in parts as it is read (each with
 * `continued`, the suite itself last), after every suite before it.
 */
function documentReader(
  emit: (suites: ReportSuite[]) => void,
  counters: Counters,
  repeats: RepeatedCases | null = null,
  once: ReadOnce | null = null,
) {
  const suites: ReportSuite[] = [];
  const closed = new Set<ReportSuite>();
  let emitted = 0;
  // Emits the longest prefix of complete suites, so the order is the document's.
  const emitComplete = () => {
    let end = emitted;
    while (end < suites.length && closed.has(suites[end]!)) end++;
    if (end > emitted) emit(suites.slice(emitted, end));
    // Emitted suites are released (the store has taken what it needs), so their cases die young.
    for (let i = emitted; i < end; i++) {
      closed.delete(suites[i]!);
      suites[i] = RELEASED;
    }
    emitted = end;
  };
  const plan: StreamPlan | null = repeats
    ? {
        repeats,
        part: (suite) => {
          emitComplete();
          emit([suite]);
        },
      }
    : null;
  const document = parseDocument(suites, counters, closed, plan ?? once);
  // Runs the parser to its first request for text.
  document.next(null);
  return {
    /** The top-level suites emitted so far. */
    get emitted(): number {
      return emitted;
    },
    write(text: string): void {
      document.next(text);
      emitComplete();
    },
    close(): number | null {
      const step = document.next(null);
      emitComplete();
      return step.done ? step.value : null;
    },
  };
}

/** Parses one or more JUnit XML documents into one report (one test run), all at once. Throws ReportError. */
export function parseJUnit(documents: string | string[]): Report {
  const suites: ReportSuite[] = [];
  const parsing = parseDocuments(documents, (complete) => suites.push(...complete));
  let step = parsing.next();
  while (!step.done) step = parsing.next();
  return { suites, durationMs: step.value };
}

/**
 * The same parse, handing complete top-level suites to `emit` while it goes and letting other
 * work run between slices (`pause`), so a store can write earlier suites while later ones are
 * still being parsed.
 */
export async function streamJUnit(
  documents: string | string[],
  emit: (suites: ReportSuite[]) => void,
  pause: () => Promise<void>,
): Promise<number | null> {
  const parsing = parseDocuments(documents, emit);
  let step = parsing.next();
  while (!step.done) {
    await pause();
    step = parsing.next();
  }
  return step.value;
}

/**
 * The same parse of one document read as it arrives (a stream's decoded text, in pieces of any
 * size): memory holds one piece and the suites not yet emitted, never the whole document. With
 * `repeats` (scanRepeatedCases over the same document), a large top-level suite is not held whole
 * either: its final cases go out in parts while it is read (docs/uploads.md, Processing).
 */
export async function streamJUnitText(
  pieces: AsyncIterable<string>,
  emit: (suites: ReportSuite[]) => void,
  pause: () => Promise<void>,
  repeats: RepeatedCases | null = null,
): Promise<number | null> {
  const reading = documentReader(emit, { cases: 0, suites: 0 }, repeats);
  for await (const piece of pieces) {
    for (let offset = 0; offset < piece.length; offset += SLICE_CHARS) {
      reading.write(piece.length <= SLICE_CHARS ? piece : piece.slice(offset, offset + SLICE_CHARS));
      await pause();
    }
  }
  return reading.close();
}

/**
 * streamJUnitText without a first pass, for a document that may hold a large top-level suite: it
 * reads the document once, as a second pass would, as long as no top-level suite grows to where
 * that pass could hand it out in parts (PART_CASES cases). Most reports (Surefire, Gradle: many
 * small suites) are so read once. Otherwise it stops there: `emitted` top-level suites have gone to
 * `emit`, whole, as the second pass would hand them out; the caller reads the document again with a
 * first pass, and hands the second pass's emissions after those to `emit` (skipEmitted).
 */
export async function readJUnitTextOnce(
  pieces: AsyncIterable<string>,
  emit: (suites: ReportSuite[]) => void,
  pause: () => Promise<void>,
): Promise<{ duration: number | null } | { emitted: number }> {
  const reading = documentReader(emit, { cases: 0, suites: 0 }, null, { once: true });
  try {
    for await (const piece of pieces) {
      for (let offset = 0; offset < piece.length; offset += SLICE_CHARS) {
        reading.write(piece.length <= SLICE_CHARS ? piece : piece.slice(offset, offset + SLICE_CHARS));
        await pause();
      }
    }
    return { duration: reading.close() };
  } catch (error) {
    if (error instanceof LargeSuite) return { emitted: reading.emitted };
    throw error;
  }
}

/** `emit` without the first `count` top-level suites (those a read without a first pass emitted: readJUnitTextOnce). */
export function skipEmitted(emit: (suites: ReportSuite[]) => void, count: number): (suites: ReportSuite[]) => void {
  let skipping = count;
  return (suites) => {
    const skipped = Math.min(skipping, suites.length);
    skipping -= skipped;
    if (skipped < suites.length) emit(skipped === 0 ? suites : suites.slice(skipped));
  };
}

/**
 * A first pass over a document (read again afterwards, for streamJUnitText): which case identities
 * occur more than once in each suite, so that the second pass knows which cases are final as soon
 * as they are read. Keeps no case and no text; one count per identity of the suite being read.
 * Throws ReportError as the parse does.
 */
export async function scanRepeatedCases(pieces: AsyncIterable<string>, pause: () => Promise<void>): Promise<RepeatedCases> {
  const repeats: RepeatedCases = new Map();
  const document = parseDocument([], { cases: 0, suites: 0 }, new Set(), { scan: repeats });
  document.next(null);
  for await (const piece of pieces) {
    for (let offset = 0; offset < piece.length; offset += SLICE_CHARS) {
      document.next(piece.length <= SLICE_CHARS ? piece : piece.slice(offset, offset + SLICE_CHARS));
      await pause();
    }
  }
  document.next(null);
  return repeats;
}
