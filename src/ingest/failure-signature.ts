/**
 * Failure signatures: a failed or errored case's failure reduced to what stays the same from run
 * to run (type, message, the frames where it failed), hashed, so that failures with the same cause
 * group together across tests and runs. The rules are documented for users in
 * docs/failure-groups.md; keep the two in step.
 *
 * Pure and synchronous (runs in Node and in Workers). Every regular expression below can start a
 * match only where the run it repeats starts (a look-behind on that run's class, `^`, or a literal
 * first character), so each one scans the text a bounded number of times: a 4 KiB adversarial
 * message costs well under a millisecond, never the quadratic (or worse) backtracking a loose
 * pattern would cost on a long run of digits or hex.
 *
 * Changing any rule changes the signatures of cases it touches: stored signatures must then be
 * recomputed (or the version in the hash input bumped and old groups left as they are).
 */
import { sha256Hex } from "../lib/crypto";
import type { CaseStatus } from "../lib/vocabulary";
import { REPORT_LIMITS } from "./report";

export type FailureSignatureInput = {
  status: CaseStatus;
  failureType?: string | null;
  failureMessage?: string | null;
  failureText?: string | null;
};

export type FailureSignature = {
  /** 16 lowercase hex characters: the first 64 bits of a SHA-256. */
  signature: string;
  /** The normalized message's first line (without a leading `Type: `), at most 500 characters. */
  message: string;
};

/** Part of every hash input: bump it when a rule changes, so old and new signatures never collide by accident. */
const SIGNATURE_VERSION = "failure-signature/1";
/** Frames after the message that go into the hash: enough to tell call sites apart, few enough that deeper (shared) setup code does not split a cause. */
const FRAME_COUNT = 3;
const MESSAGE_DISPLAY_LENGTH = 500;
/**
 * 64 bits: groups are per project, and even a million distinct causes in one project collide
 * with a probability of about 3 in 100 million (birthday bound n²/2⁶⁵).
 */
const SIGNATURE_HEX_LENGTH = 16;

// ---------------------------------------------------------------------------------------------
// Normalization

/** Terminal colour codes: jest and others colour their messages when the CI has a TTY, not otherwise. */
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

/** One path component, as found after a temp root: no separators, spaces, quotes or brackets. */
const SEG = String.raw`[^\s/\\:"'\`<>()\[\]{}|,;]+`;
/**
 * A temp root, then pytest's per-user and per-session directories if present, then the first name
 * below (the randomly named directory or file): all of it becomes <tmp>; the rest of the path
 * (usually names the test chose) is kept. The look-behind keeps `/home/x/tmp/` out.
 */
const TEMP_PATH = new RegExp(
  String.raw`(?<![\w.~-])(?:` +
    [
      String.raw`(?:/private)?/tmp/`,
      String.raw`/var/tmp/`,
      String.raw`(?:/private)?/var/folders/${SEG}/${SEG}/[TC]/`,
      String.raw`/dev/shm/`,
      String.raw`/home/runner/work/_temp/`,
      String.raw`[a-z]:[\\/]Users[\\/]${SEG}[\\/]AppData[\\/]Local[\\/]Temp[\\/]`,
      String.raw`[a-z]:[\\/]Windows[\\/]Temp[\\/]`,
      String.raw`[a-z]:[\\/]a[\\/]_temp[\\/]`,
    ].join("|") +
    String.raw`)(?:pytest-of-${SEG}[\\/]pytest-(?:\d+|current)[\\/])?(?:${SEG})?`,
  "gi",
);

const MONTH =
  "(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)";
const WEEKDAY = "(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? )";
const CLOCK = String.raw`\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?: ?[AP]M)?`;
/** Zone suffixes: Z or an offset glued to the time; a spaced offset only with four digits (so `10:00 -12` keeps its number). */
const ZONE = String.raw`(?:Z|[+-]\d{2}(?::?\d{2})?| ?(?:[+-]\d{4}|(?:UTC|GMT)(?:[+-]\d{1,2}(?::?\d{2})?)?|[A-Z]{1,2}[SD]T|[CEW]ES?T|BST|IST|JST|KST|MSK))`;
/** Timestamps, most specific first. Spaces are literal (never \s) so that no timestamp spans two lines. */
const TIMESTAMPS = [
  // ISO 8601 / RFC 3339 and the `2024-03-12 10:15:32,123` of Python's and log4j's default layouts.
  new RegExp(String.raw`(?<![\w.])\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?${ZONE}?)?(?!\d)`, "g"),
  // Apache / nginx access logs: 12/Mar/2024:10:15:32 +0000.
  new RegExp(String.raw`(?<!\w)\d{1,2}/${MONTH}/\d{4}(?::\d{2}:\d{2}:\d{2})?(?: [+-]\d{4})?(?!\w)`, "g"),
  // Month first: syslog `Mar 12 10:15:32`, Java's Date `Tue Mar 12 10:15:32 UTC 2024`, JavaScript's Date `Tue Mar 12 2024 10:15:32 GMT+0000`, `Mar 12, 2024`.
  new RegExp(String.raw`(?<!\w)${WEEKDAY}?${MONTH} {1,2}\d{1,2}(?:,? \d{4}(?: ${CLOCK})?| ${CLOCK})${ZONE}?(?: \d{4})?(?!\w)`, "g"),
  // Day first (RFC 1123 / 2822, HTTP dates): Tue, 12 Mar 2024 10:15:32 GMT.
  new RegExp(String.raw`(?<!\w)${WEEKDAY}?\d{1,2} ${MONTH} \d{4}(?: ${CLOCK}${ZONE}?)?(?!\w)`, "g"),
  // A time of day alone, with seconds (so `file.js:10:15` stays a location): 10:15:32.123.
  new RegExp(String.raw`(?<![\w:.])\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?: ?[AP]M)?${ZONE}?(?!\w)`, "g"),
];

const UUID = /(?<!\w)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?!\w)/gi;
/** Java's default toString, `com.acme.Cart@1b6d3586`: the identity hash changes every run. */
const JAVA_IDENTITY = /(?<=[\w$])@[0-9a-f]{5,8}(?!\w)/gi;
/** Addresses and other 0x literals: `0x7ffd5c1e`, JavaScript's `object@0x…`, Python's `<Foo object at 0x…>`, Go's `+0x1d`. */
const HEX_LITERAL = /(?<!\w)0x[0-9a-f]+/gi;
/** Runs of 8 or more hex digits with at least one digit and one letter (object ids, commit SHAs, hashes); all-digit runs are numbers. */
const HEX_RUN = /(?<!\w)(?=[0-9a-f]*\d)(?=\d*[a-f])[0-9a-f]{8,}(?!\w)/gi;
/** `file.ext:line:col` and `file.ext:line` (Java's `Foo.java:123` too) become `file.ext:<n>`: line numbers shift with every edit. */
const FILE_LINE = /(?<![\w$.-])([\w$.-]*\.[a-z]\w{0,9}):\d+(?::\d+)?(?!\w)/gi;
/** Durations and sizes glued to their unit, Go's `1m30.5s` included: the number goes, the unit stays. */
const QUANTITY = /(?<![\w.])(?:\d+(?:\.\d+)?(?:ns|us|µs|μs|ms|secs|sec|s|mins|min|m|hrs|hr|h|d|[KMGT]i?B|kB|B))+(?!\w)/g;
/** A run of digits with no letter, digit or underscore right before or after it; `utf8`, `sha256`, `Test3`, `v2` keep theirs. */
const NUMBER = /(?<!\w)\d+(?!\w)/g;
const INLINE_SPACE = /[^\S\r\n]+/g;
const LINE_BREAK = /\r\n?|\n/;

/**
 * Masks the parts of a failure text that change from run to run (see docs/failure-groups.md for
 * every rule, with examples). Line breaks are kept, so that messages and traces still have lines:
 * spaces and tabs collapse to one space, lines are trimmed, blank lines dropped.
 */
export function normalizeFailureText(text: string): string {
  let out = text.replace(ANSI, "");
  // Temp paths first: their random names would otherwise be half-masked by the hex and number rules.
  out = out.replace(TEMP_PATH, "<tmp>");
  for (const timestamp of TIMESTAMPS) out = out.replace(timestamp, "<time>");
  out = out.replace(UUID, "<uuid>");
  // Before the 0x rule: in `…Lambda/0x0000000800c03000@5a2e4553` the identity hash needs the word character before its @.
  out = out.replace(JAVA_IDENTITY, "@<hex>");
  out = out.replace(HEX_LITERAL, "<hex>");
  out = out.replace(HEX_RUN, "<hex>");
  out = out.replace(FILE_LINE, "$1:<n>");
  out = out.replace(QUANTITY, (quantity) => quantity.replace(/\d+(?:\.\d+)?/g, "<n>"));
  out = out.replace(NUMBER, "<n>");
  const lines: string[] = [];
  for (const line of out.split(LINE_BREAK)) {
    const collapsed = line.replace(INLINE_SPACE, " ").trim();
    if (collapsed !== "") lines.push(collapsed);
  }
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------
// Frames

/** A stack line: Java, Kotlin, .NET and JavaScript (`at …(` or `at …:<n>`), Python (`File "…", line <n>`). */
const STACK_LINE = /^(?:at \S.*(?:\(|:<n>|:line <n>)|File ".*", line <n>)/;
/**
 * A line that starts with a file location: pytest's `tests/test_x.py:<n>: in test_x`, Go's
 * `foo_test.go:<n>: …` and `/src/foo.go:<n> +<hex>`, Ruby's `./spec/x_spec.rb:<n>:in …`. Anchored at the
 * start so that Playwright's title line (`[chromium] › a.spec.ts:<n> › Suite › title`) is not a frame.
 */
const LOCATION = /^\S*\.[a-z]\w*:<n>/i;
/** A line that is only a location (googletest and PHPUnit write them among the message's lines): a frame, not message. */
const LOCATION_ONLY = /^\S*\.[a-z]\w*:<n>:?$/i;
/** PHPUnit starts its failure text with the test's name, which would keep every test in a group of its own. */
const PHPUNIT_TEST_NAME = /^[\w\\]*Test::\w+(?: with data set .*)?$/;

/**
 * Frames of test frameworks, assertion libraries and runtimes: they say how the failure was
 * reported, not where it happened, and they change with library versions. Matched on the
 * normalized line, before directories are dropped. JVM class names may carry a class loader or
 * module prefix (`app//`, `java.base@<n>.<n>.<n>/`), hence the optional `…/`.
 */
const FRAMEWORK_FRAMES: RegExp[] = [
  // JVM: JUnit, TestNG, Surefire, Gradle, the JDK, Kotlin, Scala, assertion and waiting libraries.
  /^at (?:\S*\/)?(?:org\.junit\.|junit\.|org\.testng\.|org\.apache\.maven\.surefire\.|org\.gradle\.|worker\.org\.gradle\.|java\.|javax\.|jdk\.|sun\.|com\.sun\.|kotlin\.|kotlinx\.coroutines\.|scala\.|org\.scalatest\.|org\.opentest4j\.|org\.assertj\.|org\.hamcrest\.|com\.google\.common\.truth\.|org\.awaitility\.|org\.mockito\.|org\.spockframework\.|org\.codehaus\.groovy\.)/,
  // .NET: the runtime, the test platform, NUnit, xUnit, MSTest, FluentAssertions, Shouldly.
  /^at (?:System\.|Microsoft\.VisualStudio\.Test|Microsoft\.TestPlatform\.|NUnit\.|Xunit\.|FluentAssertions\.|Shouldly\.)/,
  // JavaScript: Node's internals, anything installed (jest-circus, expect, mocha, vitest), native and async glue, Cypress's runner.
  /\bnode:|\(internal\/|node_modules[\\/]|\(<anonymous>\)|^at <anonymous>|\(index <n>\)|\/__cypress\/runner\//,
  // Python: pytest and pluggy, the standard library (not site-packages: tox installs the project there), frozen bootstrap modules.
  /(?:site|dist)-packages[\\/](?:_pytest|pluggy|pytest_\w+)[\\/]|[\\/]lib[\\/]python\d[\w.<>]*[\\/](?!site-packages|dist-packages)|\\Lib\\(?!site-packages)|<frozen /,
  // Go: the testing package and the runtime (panics).
  /testing\.tRunner|[\\/]src[\\/]testing[\\/]|[\\/]src[\\/]runtime[\\/]/,
  // Ruby and PHP test frameworks.
  /[\\/]gems[\\/](?:rspec|minitest|test-unit)[\w.<>-]*[\\/]|[\\/]vendor[\\/]phpunit[\\/]/,
];

/** Directories in a frame: the same frame reads `/home/runner/work/app/app/src/a.ts` on one runner and `/builds/x/0/app/src/a.ts` on another. */
const FRAME_DIRECTORY = /(?<![^\s()"'`[\]])[^\s()"'`[\]]*[\\/]/g;

function isFrameworkFrame(line: string): boolean {
  return FRAMEWORK_FRAMES.some((pattern) => pattern.test(line));
}

/** `Type: rest` or `Type : rest` (NUnit) → `rest`; `Type` alone → "". Null when the line does not start with the type. */
function withoutTypePrefix(line: string, type: string): string | null {
  if (type === "" || !line.startsWith(type)) return null;
  const rest = line.slice(type.length);
  if (rest === "") return "";
  const match = /^ ?: ?/.exec(rest);
  return match ? rest.slice(match[0].length) : null;
}

function afterFirstColon(line: string): string | null {
  const at = line.indexOf(": ");
  return at === -1 ? null : line.slice(at + 2);
}

/** Reports cut messages and texts at this length. */
const TEXT_CAP = REPORT_LIMITS.maxMessageLength;

function isAtCap(raw: string): boolean {
  return raw.length >= TEXT_CAP;
}

function nonBlank(value: string | null | undefined): string | null {
  return value !== null && value !== undefined && value.trim() !== "" ? value : null;
}

// ---------------------------------------------------------------------------------------------
// Signature

/**
 * The signature of a failed or errored case (null for passed and skipped ones). Hashes the
 * failure type as written (trimmed), the normalized message (its lines up to the first stack
 * line, without a leading `Type: `), and the first FRAME_COUNT frames of the normalized trace that
 * are not the message's own lines and not framework frames, without their directories. A trace
 * with no frame-like line at all (Go's `--- FAIL: TestX` output) gives its first lines instead. A
 * last line cut by the 4,096-character cap is left out. A case with no message and no text still
 * gets a signature (from its type, or the empty one).
 */
export function failureSignature(input: FailureSignatureInput): FailureSignature | null {
  if (input.status !== "failed" && input.status !== "errored") return null;
  const type = input.failureType?.trim() ?? "";
  const rawMessage = nonBlank(input.failureMessage) ?? nonBlank(input.failureText) ?? "";
  const rawTrace = nonBlank(input.failureText) ?? nonBlank(input.failureMessage) ?? "";

  // The message is what precedes the first stack line: jest-junit and others put the stack in the message too.
  const messageLines: string[] = [];
  let stackReached = false;
  for (const line of normalizeFailureText(rawMessage).split("\n")) {
    if (line === "") break;
    if (STACK_LINE.test(line)) {
      stackReached = true;
      break;
    }
    if (!LOCATION_ONLY.test(line)) messageLines.push(line);
  }
  // The trace usually repeats the message, as is or after `Type: `: those lines are not frames.
  const ownLines = new Set(messageLines);
  if (messageLines[0] !== undefined && PHPUNIT_TEST_NAME.test(messageLines[0])) messageLines.shift();
  // Gradle writes `org.opentest4j.AssertionFailedError: expected…` where Surefire writes `expected…`: same message.
  const first = messageLines[0];
  if (first !== undefined) {
    const rest = withoutTypePrefix(first, normalizeFailureText(type));
    if (rest === "") messageLines.shift();
    else if (rest !== null) {
      messageLines[0] = rest;
      ownLines.add(rest);
    }
  }
  // A failure with no message of its own (a bare NullPointerException) is shown by its type.
  const message = displayMessage(messageLines[0] ?? normalizeFailureText(type));
  // A line cut by the parsers' length cap ends wherever the cap fell, which moves with every masked
  // value before it: it stays out of the hash.
  const hashedMessage = isAtCap(rawMessage) && !stackReached ? messageLines.slice(0, -1) : messageLines;

  const isOwnLine = (line: string) => ownLines.has(line) || ownLines.has(afterFirstColon(line) ?? line);
  const traceLines = normalizeFailureText(rawTrace).split("\n");
  if (isAtCap(rawTrace)) traceLines.pop();
  const candidates = traceLines.filter((line) => line !== "" && !isOwnLine(line));
  const frameLike = candidates.filter((line) => STACK_LINE.test(line) || LOCATION.test(line));
  const chosen = frameLike.length > 0 ? frameLike.filter((line) => !isFrameworkFrame(line)) : candidates;
  const frames = chosen.slice(0, FRAME_COUNT).map((line) => line.replace(FRAME_DIRECTORY, ""));

  const hashInput = JSON.stringify([SIGNATURE_VERSION, type, hashedMessage.join("\n"), frames]);
  return { signature: sha256Hex(hashInput).slice(0, SIGNATURE_HEX_LENGTH), message };
}

function displayMessage(line: string): string {
  if (line.length <= MESSAGE_DISPLAY_LENGTH) return line;
  // Never cut a surrogate pair in half: the API returns this as JSON text.
  const end = /[\uD800-\uDBFF]/.test(line[MESSAGE_DISPLAY_LENGTH - 1]!) ? MESSAGE_DISPLAY_LENGTH - 1 : MESSAGE_DISPLAY_LENGTH;
  return line.slice(0, end);
}
