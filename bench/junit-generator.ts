/**
 * Deterministic generator of large, realistic JUnit XML reports for benchmarking the upload path.
 *
 * The output is shaped like Maven Surefire 3.x reports aggregated under one <testsuites> root:
 * one <testsuite> per test class (package.Class), a <properties> block, <testcase> elements named
 * after test methods (some parameterized, "method(String)[n]"), times in seconds with 3 decimals,
 * <failure>/<error> elements with an XML-escaped message attribute and stack trace, <skipped/>,
 * Surefire rerun elements (<flakyFailure> with nested <stackTrace>) for flaky tests that passed on
 * a rerun, and <system-out>/<system-err> CDATA blocks. The same options always give the same bytes.
 *
 * Usage as a script:
 *   npx tsx bench/junit-generator.ts 10000 > out.xml
 *   npx tsx bench/junit-generator.ts 50000 --suites=800 --seed=7 --failure-rate=0.05 --system-out-bytes=2048
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { mulberry32 } from "../src/lib/seeded-random";

export type GenerateJUnitOptions = {
  /** Number of distinct test cases (final outcomes) in the report. */
  cases: number;
  /** Number of <testsuite> elements (test classes). Default: one per ~25 cases. */
  suites?: number;
  /** PRNG seed. Default 1. */
  seed?: number;
  /** Share of cases that end in <failure>. Default 0.03. */
  failureRate?: number;
  /** Share of cases that end in <skipped/>. Default 0.02. */
  skipRate?: number;
  /** Share of cases that end in <error>. Default 0.01. */
  errorRate?: number;
  /** Share of the passing cases that passed only on a rerun (1–2 <flakyFailure> children). Default 0.02. */
  flakyRate?: number;
  /**
   * Approximate size in bytes of each <system-out> block. Failed and errored cases always get one,
   * about 1 in 5 passing cases too. 0 disables captured output. Default 256.
   */
  systemOutBytes?: number;
  /** Lines kept of each stack trace (its first ones; the PRNG draws stay the same). Default: all of them. */
  traceLines?: number;
};

type Rng = () => number;

function pick<T>(rng: Rng, items: readonly T[]): T {
  const item = items[Math.floor(rng() * items.length)];
  if (item === undefined) throw new Error("pick() from an empty list");
  return item;
}

function int(rng: Rng, min: number, max: number): number {
  return min + Math.floor(rng() * (max - min + 1));
}

/** Escapes text for an XML attribute value or element content. */
export function escapeXml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;")
    .replace(/\n/g, "&#10;");
}

/** Escapes element text (newlines and tabs kept as-is, like Surefire's stack traces). */
function escapeText(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Wraps text in CDATA, splitting any "]]>" so the section cannot end early. */
function cdata(text: string): string {
  return `<![CDATA[${text.replace(/]]>/g, "]]]]><![CDATA[>")}]]>`;
}

const DOMAINS = [
  "billing",
  "inventory",
  "search",
  "notifications",
  "checkout",
  "identity",
  "payments",
  "shipping",
  "catalog",
  "reporting",
  "pricing",
  "orders",
] as const;
const LAYERS = ["", ".service", ".api", ".persistence", ".domain", ".web", ".client", ".jobs"] as const;
const NOUNS = [
  "Invoice",
  "Order",
  "Cart",
  "StockLedger",
  "Session",
  "AccessToken",
  "Shipment",
  "PriceRule",
  "CatalogItem",
  "Report",
  "Webhook",
  "Refund",
  "Customer",
  "Warehouse",
  "Coupon",
  "TaxTable",
  "Subscription",
  "Payout",
  "AuditLog",
  "SearchIndex",
  "EmailDispatcher",
  "RateLimiter",
] as const;
const ROLES = [
  "ServiceTest",
  "RepositoryTest",
  "ControllerTest",
  "ClientTest",
  "MapperTest",
  "ValidatorTest",
  "SerializerTest",
  "HandlerTest",
  "SchedulerTest",
  "IT",
] as const;
const VERBS = [
  "creates",
  "rejects",
  "updates",
  "deletes",
  "calculates",
  "parses",
  "serializes",
  "retries",
  "caches",
  "validates",
  "publishes",
  "loads",
  "exports",
  "merges",
  "reserves",
  "refunds",
  "renders",
] as const;
const OBJECTS = [
  "Invoice",
  "LineItems",
  "Total",
  "Discount",
  "Token",
  "Payload",
  "Reservation",
  "Batch",
  "Webhook",
  "Currency",
  "Address",
  "Page",
  "Snapshot",
  "Receipt",
  "Schedule",
  "Quota",
] as const;
const CONDITIONS = [
  "",
  "",
  "",
  "WhenEmpty",
  "WithNullInput",
  "ForUnknownCustomer",
  "AfterTimeout",
  "OnConflict",
  "WithoutPermission",
  "ForLargeBatch",
  "InParallel",
  "WhenExpired",
  "ForEuAddresses",
] as const;
const PARAM_TYPES = ["String", "int", "BigDecimal", "Locale", "String, int"] as const;

type FaultKind = { type: string; message: (rng: Rng) => string; frames: readonly string[] };

const FAILURES: readonly FaultKind[] = [
  {
    type: "org.opentest4j.AssertionFailedError",
    message: (rng) => `expected: <${int(rng, 1, 500)}> but was: <${int(rng, 1, 500)}>`,
    frames: [
      "org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)",
      "org.junit.jupiter.api.AssertionFailureBuilder.buildAndThrow(AssertionFailureBuilder.java:132)",
      "org.junit.jupiter.api.AssertEquals.failNotEqual(AssertEquals.java:197)",
      "org.junit.jupiter.api.AssertEquals.assertEquals(AssertEquals.java:182)",
    ],
  },
  {
    type: "java.lang.AssertionError",
    message: (rng) => `\nExpected: a string containing "${pick(rng, OBJECTS).toLowerCase()}"\n     but: was "<empty>"`,
    frames: ["org.hamcrest.MatcherAssert.assertThat(MatcherAssert.java:20)", "org.hamcrest.MatcherAssert.assertThat(MatcherAssert.java:6)"],
  },
  {
    type: "org.opentest4j.AssertionFailedError",
    message: (rng) =>
      `Expecting actual:\n  [${int(rng, 1, 9)}, ${int(rng, 10, 99)}]\nto contain exactly (and in same order):\n  [${int(rng, 1, 9)}]`,
    frames: ["org.assertj.core.api.AbstractIterableAssert.containsExactly(AbstractIterableAssert.java:297)"],
  },
];

const ERRORS: readonly FaultKind[] = [
  {
    type: "java.lang.NullPointerException",
    message: (rng) => `Cannot invoke "${pick(rng, NOUNS)}.getId()" because "existing" is null`,
    frames: [],
  },
  {
    type: "java.lang.IllegalStateException",
    message: (rng) => `${pick(rng, NOUNS)} is in state <CLOSED> & cannot accept ${pick(rng, OBJECTS).toLowerCase()}`,
    frames: ["java.base/java.util.Objects.requireNonNull(Objects.java:259)"],
  },
  {
    type: "java.net.SocketTimeoutException",
    message: () => "Read timed out",
    frames: [
      "java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:278)",
      "org.apache.http.impl.io.SessionInputBufferImpl.fillBuffer(SessionInputBufferImpl.java:153)",
    ],
  },
  {
    type: "org.postgresql.util.PSQLException",
    message: (rng) =>
      `ERROR: duplicate key value violates unique constraint "${pick(rng, OBJECTS).toLowerCase()}_pkey"\n  Detail: Key (id)=(${int(rng, 1, 99999)}) already exists.`,
    frames: [
      "org.postgresql.core.v3.QueryExecutorImpl.receiveErrorResponse(QueryExecutorImpl.java:2713)",
      "org.postgresql.jdbc.PgPreparedStatement.executeUpdate(PgPreparedStatement.java:152)",
    ],
  },
];

const LOG_LEVELS = ["DEBUG", "INFO ", "INFO ", "WARN "] as const;
const LOG_MESSAGES = [
  "opening connection to jdbc:postgresql://localhost:5432/test",
  "cache miss for key=<tenant:42>",
  "request POST /api/v1/orders -> 201 in 12 ms",
  "retrying after 250 ms (attempt 2/3)",
  "loaded 128 fixtures from classpath:fixtures/orders.json",
  "flushing 3 pending events & closing session",
] as const;

function stackTrace(rng: Rng, kind: FaultKind, message: string, className: string, method: string): string {
  const lines = [`${kind.type}: ${message}`];
  for (const frame of kind.frames) lines.push(`\tat ${frame}`);
  const simpleClass = className.slice(className.lastIndexOf(".") + 1);
  const baseMethod = method.replace(/\(.*$/, "");
  lines.push(`\tat ${className}.${baseMethod}(${simpleClass}.java:${int(rng, 20, 400)})`);
  lines.push("\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)");
  lines.push("\tat java.base/java.util.ArrayList.forEach(ArrayList.java:1596)");
  return `${lines.join("\n")}\n`;
}

function logOutput(rng: Rng, className: string, bytes: number): string {
  const logger = className.replace(/^com\.acme\./, "c.a.");
  const out: string[] = [];
  let size = 0;
  let ms = int(rng, 0, 3_600_000);
  while (size < bytes) {
    ms += int(rng, 0, 400);
    const h = String(9 + Math.floor(ms / 3_600_000)).padStart(2, "0");
    const m = String(Math.floor(ms / 60_000) % 60).padStart(2, "0");
    const s = String(Math.floor(ms / 1000) % 60).padStart(2, "0");
    const frac = String(ms % 1000).padStart(3, "0");
    const line = `${h}:${m}:${s}.${frac} [main] ${pick(rng, LOG_LEVELS)} ${logger} -- ${pick(rng, LOG_MESSAGES)}\n`;
    out.push(line);
    size += line.length;
  }
  return out.join("");
}

/** Test duration in seconds: mostly milliseconds, a long tail of slow (integration-style) tests. */
function duration(rng: Rng): number {
  const r = rng();
  if (r < 0.6) return rng() * 0.02;
  if (r < 0.9) return 0.02 + rng() * 0.3;
  if (r < 0.99) return 0.3 + rng() * 3;
  return 3 + rng() * 30;
}

function checkRate(name: string, value: number): number {
  if (!(value >= 0 && value <= 1)) throw new RangeError(`${name} must be between 0 and 1, got ${value}`);
  return value;
}

export function generateJUnit(options: GenerateJUnitOptions): string {
  const cases = options.cases;
  if (!Number.isInteger(cases) || cases < 0) throw new RangeError(`cases must be a non-negative integer, got ${cases}`);
  const suiteCount = options.suites ?? Math.max(1, Math.ceil(cases / 25));
  if (!Number.isInteger(suiteCount) || suiteCount < 1) throw new RangeError(`suites must be a positive integer, got ${suiteCount}`);
  const failureRate = checkRate("failureRate", options.failureRate ?? 0.03);
  const skipRate = checkRate("skipRate", options.skipRate ?? 0.02);
  const errorRate = checkRate("errorRate", options.errorRate ?? 0.01);
  const flakyRate = checkRate("flakyRate", options.flakyRate ?? 0.02);
  if (failureRate + skipRate + errorRate > 1) throw new RangeError("failureRate + skipRate + errorRate must not exceed 1");
  const systemOutBytes = options.systemOutBytes ?? 256;
  if (!Number.isInteger(systemOutBytes) || systemOutBytes < 0)
    throw new RangeError(`systemOutBytes must be a non-negative integer, got ${systemOutBytes}`);
  const traceLines = options.traceLines ?? Number.POSITIVE_INFINITY;
  if (!(traceLines >= 1)) throw new RangeError(`traceLines must be at least 1, got ${traceLines}`);
  const trimmed = (trace: string) => (Number.isFinite(traceLines) ? `${trace.split("\n").slice(0, traceLines).join("\n")}\n` : trace);
  const rng = mulberry32(options.seed ?? 1);

  const usedClassNames = new Set<string>();
  const suiteXml: string[] = [];
  let totals = { tests: 0, failures: 0, errors: 0, skipped: 0, time: 0 };

  for (let s = 0; s < suiteCount; s++) {
    const caseCount = Math.floor(cases / suiteCount) + (s < cases % suiteCount ? 1 : 0);

    let className = `com.acme.${pick(rng, DOMAINS)}${pick(rng, LAYERS)}.${pick(rng, NOUNS)}${pick(rng, ROLES)}`;
    for (let n = 2; usedClassNames.has(className); n++) className = className.replace(/\d*$/, "") + n;
    usedClassNames.add(className);

    const usedMethods = new Set<string>();
    const body: string[] = [];
    const counts = { failures: 0, errors: 0, skipped: 0, time: 0 };

    for (let c = 0; c < caseCount; c++) {
      const base = `${pick(rng, VERBS)}${pick(rng, OBJECTS)}${pick(rng, CONDITIONS)}`;
      const params = rng() < 0.08 ? `(${pick(rng, PARAM_TYPES)})[${int(rng, 1, 6)}]` : "";
      let method = `${base}${params}`;
      for (let n = 2; usedMethods.has(method); n++) method = `${base}${n}${params}`;
      usedMethods.add(method);

      const r = rng();
      const outcome =
        r < errorRate ? "error" : r < errorRate + failureRate ? "failure" : r < errorRate + failureRate + skipRate ? "skipped" : "passed";
      const flaky = outcome === "passed" && rng() < flakyRate;
      const seconds = outcome === "skipped" ? 0 : duration(rng);
      counts.time += seconds;

      const open = `    <testcase name="${escapeXml(method)}" classname="${className}" time="${seconds.toFixed(3)}"`;
      const wantsOutput = systemOutBytes > 0 && (outcome === "failure" || outcome === "error" || (outcome === "passed" && rng() < 0.2));
      const output = wantsOutput ? `      <system-out>${cdata(logOutput(rng, className, systemOutBytes))}</system-out>\n` : "";

      if (outcome === "passed" && !flaky) {
        body.push(output ? `${open}>\n${output}    </testcase>\n` : `${open}/>\n`);
      } else if (outcome === "skipped") {
        const reason =
          rng() < 0.5 ? ` message="${escapeXml(`Disabled until ${pick(rng, NOUNS)} migration <ACME-${int(rng, 100, 999)}> ships`)}"` : "";
        body.push(`${open}>\n      <skipped${reason}/>\n    </testcase>\n`);
        counts.skipped++;
      } else if (flaky) {
        const kind = pick(rng, FAILURES);
        const reruns: string[] = [];
        for (let k = int(rng, 1, 2); k > 0; k--) {
          const message = kind.message(rng);
          reruns.push(
            `      <flakyFailure message="${escapeXml(message)}" type="${kind.type}">\n` +
              `        <stackTrace>${escapeText(trimmed(stackTrace(rng, kind, message, className, method)))}</stackTrace>\n` +
              (systemOutBytes > 0
                ? `        <system-out>${cdata(logOutput(rng, className, Math.ceil(systemOutBytes / 2)))}</system-out>\n`
                : "") +
              "      </flakyFailure>\n",
          );
        }
        body.push(`${open}>\n${reruns.join("")}${output}    </testcase>\n`);
      } else {
        const kind = outcome === "error" ? pick(rng, ERRORS) : pick(rng, FAILURES);
        const message = kind.message(rng);
        const trace = escapeText(trimmed(stackTrace(rng, kind, message, className, method)));
        const err =
          outcome === "error" && rng() < 0.5
            ? `      <system-err>${cdata(`WARN  ${className} -- ${kind.type}: ${message}\n`)}</system-err>\n`
            : "";
        body.push(
          `${open}>\n      <${outcome} message="${escapeXml(message)}" type="${kind.type}">${trace}</${outcome}>\n${output}${err}    </testcase>\n`,
        );
        if (outcome === "error") counts.errors++;
        else counts.failures++;
      }
    }

    const properties =
      "    <properties>\n" +
      '      <property name="java.specification.version" value="17"/>\n' +
      '      <property name="java.version" value="17.0.11"/>\n' +
      '      <property name="os.name" value="Linux"/>\n' +
      '      <property name="user.dir" value="/home/runner/work/app/app"/>\n' +
      '      <property name="line.separator" value="&#10;"/>\n' +
      "    </properties>\n";
    suiteXml.push(
      `  <testsuite name="${className}" time="${counts.time.toFixed(3)}" tests="${caseCount}" errors="${counts.errors}" skipped="${counts.skipped}" failures="${counts.failures}">\n` +
        properties +
        body.join("") +
        "  </testsuite>\n",
    );
    totals = {
      tests: totals.tests + caseCount,
      failures: totals.failures + counts.failures,
      errors: totals.errors + counts.errors,
      skipped: totals.skipped + counts.skipped,
      time: totals.time + counts.time,
    };
  }

  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<testsuites name="surefire" time="${totals.time.toFixed(3)}" tests="${totals.tests}" errors="${totals.errors}" skipped="${totals.skipped}" failures="${totals.failures}">\n` +
    suiteXml.join("") +
    "</testsuites>\n"
  );
}

function parseCli(argv: readonly string[]): GenerateJUnitOptions {
  const usage =
    "usage: tsx bench/junit-generator.ts <cases> [--suites=N] [--seed=N] [--failure-rate=F] [--skip-rate=F] " +
    "[--error-rate=F] [--flaky-rate=F] [--system-out-bytes=N] [--trace-lines=N]";
  const [first, ...rest] = argv;
  const cases = Number(first);
  if (first === undefined || !Number.isInteger(cases) || cases < 0) throw new Error(usage);
  const options: GenerateJUnitOptions = { cases };
  for (const arg of rest) {
    const match = /^--([a-z-]+)=(.+)$/.exec(arg);
    const value = Number(match?.[2]);
    if (!match || !Number.isFinite(value)) throw new Error(`bad argument ${arg}\n${usage}`);
    switch (match[1]) {
      case "suites":
        options.suites = value;
        break;
      case "seed":
        options.seed = value;
        break;
      case "failure-rate":
        options.failureRate = value;
        break;
      case "skip-rate":
        options.skipRate = value;
        break;
      case "error-rate":
        options.errorRate = value;
        break;
      case "flaky-rate":
        options.flakyRate = value;
        break;
      case "system-out-bytes":
        options.systemOutBytes = value;
        break;
      case "trace-lines":
        options.traceLines = value;
        break;
      default:
        throw new Error(`unknown option --${match[1]}\n${usage}`);
    }
  }
  return options;
}

const invokedPath = process.argv[1];
if (invokedPath !== undefined && path.resolve(invokedPath) === fileURLToPath(import.meta.url)) {
  try {
    process.stdout.write(generateJUnit(parseCli(process.argv.slice(2))));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  }
}

export { mulberry32 };
