/**
 * A JSON upload checked as a stream (streamUploadToStore → JsonEnvelopeCheck) answers exactly what
 * readUploadRequest answers for the same body read whole: the same error (status, code, message,
 * details in the same order) or the same metadata; and the stored object, processed as a stream
 * (streamJsonEnvelope), gives the same suites and duration as the stored envelope. Compared on
 * hand-picked bodies and on many generated ones, cut into chunks of random sizes.
 */
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, readUploadRequest } from "../../src/ingest/upload-request";
import type { PayloadListPage, PayloadObjectMetadata, PayloadStore } from "../../src/ingest/payload-store";
import { streamUploadToStore } from "../../src/ingest/streamed-upload";
import { tooLarge } from "../../src/ingest/upload-body";
import { REPORT_LIMITS, type ReportSuite } from "../../src/ingest/report";
import type { UploadPayload } from "../../src/ingest/run-queue";
import { ApiError } from "../../src/lib/errors";
import { suiteSourceOf } from "../../src/services/runs/run-processing";
import { joinedParts } from "../support/suite-parts";

class MemoryStore implements PayloadStore {
  readonly objects = new Map<string, { bytes: Uint8Array; metadata: PayloadObjectMetadata; uploaded: Date }>();
  async write(key: string, body: ReadableStream<Uint8Array>, metadata: PayloadObjectMetadata) {
    const bytes = new Uint8Array(await new Response(body).arrayBuffer());
    this.objects.set(key, { bytes, metadata, uploaded: new Date() });
  }
  /** The interface's listing (the sweep's; unused here): the cursor is the page's last key. */
  async list(page: PayloadListPage) {
    const after = page.cursor ?? page.startAfter;
    const keys = [...this.objects.keys()].filter((key) => key.startsWith(page.prefix) && (after === undefined || key > after)).sort();
    const listed = keys.slice(0, page.limit);
    return {
      objects: listed.map((key) => ({ key, uploaded: this.objects.get(key)!.uploaded })),
      cursor: keys.length > page.limit ? listed.at(-1)! : null,
    };
  }
  async read(key: string) {
    const object = this.objects.get(key);
    return object ? { body: new Response(object.bytes).body!, metadata: object.metadata } : null;
  }
  async delete(key: string) {
    this.objects.delete(key);
  }
}

/** A seeded generator, so a failing body can be found again. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]! };
}

function chunked(bytes: Uint8Array, sizes: () => number): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      const size = Math.max(1, sizes());
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
}

type Outcome = { error: { status: number; body: unknown } } | { metadata: unknown };
const outcomeOf = (error: unknown): Outcome => {
  if (error instanceof ApiError) return { error: { status: error.status, body: error.toBody() } };
  throw error;
};

type Request = { body: Uint8Array; gzip?: boolean; query?: Record<string, string[]>; idempotencyKey?: string };

async function wholeBody(request: Request, limit: number): Promise<{ outcome: Outcome; payload?: UploadPayload }> {
  try {
    // The route's body limit (limitBody) refuses a body over the limit before it is read.
    if (request.body.byteLength > limit && !request.gzip) throw tooLarge(limit);
    const upload = await readUploadRequest(
      {
        contentType: "application/json",
        contentEncoding: request.gzip ? "gzip" : undefined,
        idempotencyKey: request.idempotencyKey,
        query: request.query ?? {},
        body: request.gzip ? new Uint8Array(gzipSync(request.body)) : request.body,
      },
      { body: limit, inflated: limit },
    );
    return { outcome: { metadata: upload.metadata }, payload: upload.payload };
  } catch (error) {
    return { outcome: outcomeOf(error) };
  }
}

async function streamed(
  request: Request,
  limit: number,
  sizes: () => number,
): Promise<{ outcome: Outcome; store: MemoryStore; objectKey?: string }> {
  const store = new MemoryStore();
  const body = request.gzip ? new Uint8Array(gzipSync(request.body)) : request.body;
  try {
    const upload = await streamUploadToStore(
      store,
      {
        contentType: "application/json; charset=utf-8",
        contentEncoding: request.gzip ? "gzip" : undefined,
        idempotencyKey: request.idempotencyKey,
        query: request.query ?? {},
        body: chunked(body, sizes),
      },
      { body: limit, inflated: limit },
    );
    expect(upload.payload.format).toBe("json");
    return { outcome: { metadata: upload.metadata }, store, objectKey: upload.payload.objectKey };
  } catch (error) {
    return { outcome: outcomeOf(error), store };
  }
}

/** The suites a source emits, a large suite's parts joined (the store joins them the same way). */
async function suitesOf(
  source: ReturnType<typeof suiteSourceOf>,
): Promise<{ suites: ReportSuite[]; durationMs: unknown } | { reason: string }> {
  const emitted: ReportSuite[] = [];
  try {
    const durationMs = await source(
      (suites) => emitted.push(...suites),
      async () => {},
    );
    return { suites: joinedParts(emitted).suites, durationMs };
  } catch (error) {
    return { reason: (error as Error).message };
  }
}

/** Both ways, compared; returns the outcome. */
async function compare(request: Request, sizes: () => number, limit: number = REPORT_LIMITS.maxCases * 1000): Promise<Outcome> {
  const whole = await wholeBody(request, limit);
  const stream = await streamed(request, limit, sizes);
  expect(stream.outcome).toEqual(whole.outcome);
  if ("error" in whole.outcome) {
    expect(stream.store.objects.size, "no object is left behind").toBe(0);
  } else {
    const fromText = await suitesOf(suiteSourceOf(whole.payload!));
    const fromObject = await suitesOf(suiteSourceOf({ format: "json", objectKey: stream.objectKey! }, stream.store));
    expect(fromObject).toEqual(fromText);
  }
  return whole.outcome;
}

const enc = (text: string) => new TextEncoder().encode(text);
/** Cases of every kind, for a large suite. */
const manyCases = (count: number, prefix = "case") =>
  Array.from({ length: count }, (_, i) => ({
    name: `${prefix} ${i}`,
    classname: `c${i % 7}`,
    status: (["passed", "failed", "skipped", "errored"] as const)[i % 4],
    duration_ms: i,
    ...(i % 4 === 1 ? { failure_message: `boom ${i}`, attempts: [{ status: "failed" }] } : {}),
  }));
const json = (value: unknown) => enc(JSON.stringify(value));
const deepSuites = (levels: number) => {
  let suite: Record<string, unknown> = { name: "leaf", cases: [{ name: "c", status: "passed", attempts: [{ status: "failed" }] }] };
  for (let i = 1; i < levels; i++) suite = { name: `level ${levels - i}`, suites: [suite] };
  return suite;
};

const HAND_PICKED: [string, Request][] = [
  [
    "a valid report with XML and suites",
    {
      body: json({
        branch: "main",
        tags: ["a", "a", " "],
        junit_xml: '<testsuite name="x"><testcase name="t"/></testsuite>',
        suites: [{ name: "s", duration_ms: 5, cases: [{ name: "c", status: "failed", failure_message: "m".repeat(5000) }] }],
      }),
    },
  ],
  [
    "suites before junit_xml (the XML's suites still come first)",
    { body: enc('{"suites":[{"name":"json"}],"junit_xml":["<testsuite name=\\"a\\"/>","<testsuite name=\\"b\\"/>"],"duration_ms":7}') },
  ],
  [
    "a repeated suites key: the last one counts",
    { body: enc('{"suites":[{"name":"first","cases":[{"name":"","status":"x"}]}],"suites":[{"name":"second"}]}') },
  ],
  [
    "a repeated cases key in a suite",
    { body: enc('{"suites":[{"name":"s","cases":[{"name":"bad"}],"cases":[{"name":"ok","status":"passed"}]}]}') },
  ],
  [
    "__proto__ keys",
    {
      body: enc(
        '{"__proto__":{"suites":1},"suites":[{"__proto__":{"name":"x"},"name":"s","cases":[{"__proto__":{"status":"passed"},"name":"c","status":"skipped"}]}]}',
      ),
    },
  ],
  [
    "metadata from the query string, the envelope's winning",
    {
      body: json({ branch: "", commit_sha: "abc", suites: [] }),
      query: { branch: ["q"], tags: ["x,y"], build_id: ["b"] },
      idempotencyKey: " k ",
    },
  ],
  ["an invalid query string overridden by the envelope", { body: json({ branch: "ok", suites: [] }), query: { branch: ["bad\u0007"] } }],
  ["an invalid query string", { body: json({ suites: [] }), query: { started_at: ["yesterday"] } }],
  ["an invalid Idempotency-Key", { body: json({ suites: [] }), idempotencyKey: "a b" }],
  ["an invalid Idempotency-Key and an invalid body", { body: json({ suites: 1 }), idempotencyKey: "a b" }],
  [
    "errors in several places, in Zod's order",
    {
      body: enc(
        '{"suites":[{"cases":[{"status":"no","name":1}],"suites":[{"name":""},7],"duration_ms":-1,"name":""},"x"],"tags":[1],"branch":2,"junit_xml":[]}',
      ),
    },
  ],
  ["neither junit_xml nor suites", { body: json({ branch: "main" }) }],
  ["neither, with another error", { body: json({ branch: 1 }) }],
  ["suites is an object", { body: json({ suites: { name: "s" } }) }],
  ["suites is a string", { body: json({ suites: "s" }) }],
  ["junit_xml is an empty array", { body: json({ junit_xml: [] }) }],
  ["junit_xml has 50,001 documents", { body: json({ junit_xml: Array.from({ length: 50_001 }, () => "<testsuite/>") }) }],
  ["junit_xml holds a number", { body: json({ junit_xml: ["<a/>", 1, { x: 1 }, [2]] }) }],
  ["junit_xml is a number", { body: json({ junit_xml: 1 }) }],
  ["suites nested 1,000 deep", { body: json({ suites: [deepSuites(1000)] }) }],
  ["suites nested one past the limit", { body: json({ suites: [deepSuites(REPORT_LIMITS.maxDepth + 1)] }) }],
  ["suites nested at the limit", { body: json({ suites: [deepSuites(REPORT_LIMITS.maxDepth)] }) }],
  [
    "suites nested past the limit, and an invalid case",
    { body: json({ suites: [deepSuites(REPORT_LIMITS.maxDepth + 1), { name: "s", cases: [{ name: "c" }] }] }) },
  ],
  ["arrays nested 100,000 deep in an unknown key", { body: enc(`{"suites":[],"x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`) }],
  ["nested too deep after a syntax error", { body: enc(`{"suites":[}, ${"[".repeat(MAX_JSON_DEPTH + 1)}`) }],
  [
    "nested exactly to the text's limit",
    { body: enc(`{"suites":[],"x":${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}}`) },
  ],
  ["brackets inside strings, escaped quotes", { body: enc(`{"suites":[{"name":"\\"${"[".repeat(200)}"}]}`) }],
  ["duration_ms of 1e400", { body: enc('{"duration_ms":1e400,"suites":[]}') }],
  ["empty body", { body: enc("") }],
  ["whitespace only", { body: enc("  \n") }],
  ["an array body", { body: enc("[]") }],
  ["a number body", { body: enc("42") }],
  ["a string body", { body: enc('"<testsuite/>"') }],
  ["null", { body: enc("null") }],
  ["truncated JSON", { body: enc('{"suites":[{"name":"s"') }],
  ["a raw NUL in a string", { body: enc('{"suites":[{"name":"a\u0000b"}]}') }],
  ["XML sent as JSON", { body: enc('<testsuite name="s"/>') }],
  ["invalid UTF-8", { body: new Uint8Array([...enc('{"suites":[{"name":"'), 0xfe, 0xff, ...enc('"}]}')]) }],
  ["invalid UTF-8 in a syntax error", { body: new Uint8Array([...enc("{x"), 0xc3, 0x28]) }],
  ["a byte-order mark", { body: new Uint8Array([0xef, 0xbb, 0xbf, ...json({ suites: [] })]) }],
  ["two byte-order marks", { body: new Uint8Array([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, ...json({ suites: [] })]) }],
  // More invalid values than an answer lists (MAX_LISTED_ISSUES): one detail, on both paths (Zod's own gathering overflowed the stack: a 500).
  ["200,000 cases that are not cases", { body: json({ suites: [{ name: "s", cases: Array.from({ length: 200_000 }, () => ({})) }] }) }],
  [
    "40,000 cases that are not cases (80,000 issues, all listed)",
    { body: json({ suites: [{ name: "s", cases: Array.from({ length: 40_000 }, () => ({})) }] }) },
  ],
  ["whitespace, then a byte-order mark", { body: new Uint8Array([0x20, 0xef, 0xbb, 0xbf, ...json({ suites: [] })]) }],
  [
    "a byte-order mark, whitespace, then another",
    { body: new Uint8Array([0xef, 0xbb, 0xbf, 0x0a, 0xef, 0xbb, 0xbf, ...json({ suites: [] })]) },
  ],
  ["a byte-order mark, then whitespace", { body: new Uint8Array([0xef, 0xbb, 0xbf, 0x20, 0x0a, ...json({ suites: [] })]) }],
  [
    "halfwidth katakana (0xEF lead bytes) in a name",
    { body: json({ suites: [{ name: "\uff71\uff72", cases: [{ name: "\uff73", status: "passed" }] }] }) },
  ],
  ["two documents", { body: enc('{"suites":[]}{}') }],
  ["a number then another", { body: enc("01") }],
  ["trailing comma", { body: enc('{"suites":[],}') }],
  ["missing comma", { body: enc('{"suites":[{"name":"a"} {"name":"b"}]}') }],
  ["missing colon", { body: enc('{"suites" []}') }],
  [
    "a lone surrogate escaped in a name",
    { body: enc('{"suites":[{"name":"a\\ud800","cases":[{"name":"\\udc00\\u0000","status":"passed","failure_text":"x"}]}]}') },
  ],
  ["a gzip report", { body: json({ suites: [{ name: "s", cases: [{ name: "c", status: "passed" }] }] }), gzip: true }],
  ["a gzip report with an invalid case", { body: json({ suites: [{ name: "s", cases: [{ name: "c", status: "nope" }] }] }), gzip: true }],
  // Large top-level suites, which the consumer hands out in parts while it reads them.
  [
    "a suite of 2,500 cases between small ones",
    {
      body: json({
        suites: [{ name: "a", cases: manyCases(3) }, { name: "big", duration_ms: 12, cases: manyCases(2_500) }, { name: "z" }],
      }),
    },
  ],
  [
    "a large suite's name, nested suites and duration after its cases",
    {
      body: enc(
        `{"suites":[{"cases":${JSON.stringify(manyCases(2_100))},"suites":[{"name":"inner","cases":${JSON.stringify(manyCases(3))}}],"name":"late","duration_ms":5,"name":"later"}]}`,
      ),
    },
  ],
  [
    "a large suite with a repeated cases key: the last one counts",
    {
      body: enc(
        `{"suites":[{"name":"s","cases":${JSON.stringify(manyCases(1_500))},"cases":${JSON.stringify(manyCases(1_200, "second"))}}]}`,
      ),
    },
  ],
  [
    "a large suite with an invalid case after its first part",
    { body: json({ suites: [{ name: "s", cases: [...manyCases(1_800), { name: "c", status: "nope" }] }] }) },
  ],
];

describe("a JSON upload checked as a stream answers as the whole body", () => {
  it("hands a large top-level suite to the store in parts of 1,000 cases, not whole", async () => {
    const body = json({ suites: [{ name: "big", cases: manyCases(2_500) }] });
    const stream = await streamed({ body }, REPORT_LIMITS.maxCases * 1000, () => 4096);
    const emitted: ReportSuite[] = [];
    await suiteSourceOf({ format: "json", objectKey: stream.objectKey! }, stream.store)(
      (suites) => emitted.push(...suites),
      async () => {},
    );
    expect(emitted.map((suite) => [suite.cases.length, suite.continued === true])).toEqual([
      [1_000, true],
      [1_000, true],
      [500, false],
    ]);
  });

  // The largest bodies (200,000 cases that are not cases) take about 30 s on a loaded 2-core machine.
  it.each(HAND_PICKED)(
    "%s",
    async (_name, request) => {
      const rng = random(7);
      await compare(request, () => 1 + rng.int(7));
      await compare(request, () => 1 + rng.int(100_000));
    },
    180_000,
  );

  it("over the limit: 413 whether the body, its inflation, or a body with another error passes it", async () => {
    const big = json({ suites: [{ name: "s".repeat(3000) }] });
    const rng = random(3);
    expect(await compare({ body: big }, () => 1 + rng.int(500), 1000)).toMatchObject({ error: { status: 413 } });
    expect(await compare({ body: big, gzip: true }, () => 1 + rng.int(500), 1000)).toMatchObject({ error: { status: 413 } });
    const invalid = new Uint8Array([0xff, ...big]);
    expect(await compare({ body: invalid }, () => 1 + rng.int(500), 1000)).toMatchObject({ error: { status: 413 } });
  });

  it("broken gzip is a 400, also after an undecodable byte", async () => {
    const rng = random(5);
    const gz = new Uint8Array(gzipSync(new Uint8Array([0xff, ...json({ suites: [] })])));
    for (const body of [gz.subarray(0, gz.length - 6), enc("not gzip")]) {
      const whole = await wholeBody({ body }, 1 << 20).catch(() => null);
      const store = new MemoryStore();
      const stream = await streamUploadToStore(
        store,
        {
          contentType: "application/json",
          contentEncoding: "gzip",
          idempotencyKey: undefined,
          query: {},
          body: chunked(body, () => 1 + rng.int(9)),
        },
        { body: 1 << 20, inflated: 1 << 20 },
      ).then(
        () => null,
        (error: unknown) => outcomeOf(error),
      );
      const wholeGzip = await readUploadRequest(
        { contentType: "application/json", contentEncoding: "gzip", idempotencyKey: undefined, query: {}, body },
        { body: 1 << 20, inflated: 1 << 20 },
      ).then(
        () => null,
        (error: unknown) => outcomeOf(error),
      );
      expect(whole).not.toBeNull();
      expect(stream).toEqual(wholeGzip);
      expect(store.objects.size).toBe(0);
    }
  });

  it("generated reports, valid and not, give the same answer and the same suites", async () => {
    const rng = random(20261124);
    const text = () => rng.pick(["", "a", "x".repeat(1100), " b ", "\u0000", "é😀", "\u0007bell"]);
    const value = (): unknown => rng.pick([() => text(), () => rng.int(5) - 1, () => null, () => true, () => 1.5, () => [], () => ({})])();
    const maybe = (key: string, make: () => unknown, target: Record<string, unknown>, p = 0.5) => {
      if (rng.next() < p) target[key] = make();
    };
    const status = () => rng.pick(["passed", "failed", "errored", "skipped", "passed", "retried"]);
    const aCase = (): unknown => {
      if (rng.next() < 0.03) return value();
      const c: Record<string, unknown> = {};
      maybe("name", () => (rng.next() < 0.9 ? `case ${rng.int(1000)}` : value()), c, 0.97);
      maybe("status", () => (rng.next() < 0.95 ? status() : value()), c, 0.97);
      maybe("classname", () => (rng.next() < 0.9 ? text() : value()), c);
      maybe("duration_ms", () => (rng.next() < 0.9 ? rng.int(100) : value()), c);
      maybe("failure_message", text, c, 0.2);
      maybe("failure_text", text, c, 0.2);
      maybe(
        "attempts",
        () => Array.from({ length: rng.int(25) }, () => (rng.next() < 0.97 ? { status: status(), duration_ms: rng.int(9) } : value())),
        c,
        0.2,
      );
      maybe("extra", value, c, 0.1);
      return c;
    };
    const aSuite = (depth: number): unknown => {
      if (rng.next() < 0.03) return value();
      const s: Record<string, unknown> = {};
      maybe("name", () => (rng.next() < 0.93 ? `suite ${rng.int(100)}` : value()), s, 0.97);
      maybe("duration_ms", () => (rng.next() < 0.9 ? rng.int(1000) : value()), s);
      maybe("cases", () => (rng.next() < 0.97 ? Array.from({ length: rng.int(6) }, aCase) : value()), s, 0.8);
      if (depth < 4)
        maybe("suites", () => (rng.next() < 0.97 ? Array.from({ length: rng.int(3) }, () => aSuite(depth + 1)) : value()), s, 0.3);
      return s;
    };
    let accepted = 0;
    for (let i = 0; i < 400; i++) {
      const envelope: Record<string, unknown> = {};
      const keys: [string, () => unknown][] = [
        ["branch", () => (rng.next() < 0.8 ? "main" : value())],
        ["commit_sha", () => (rng.next() < 0.8 ? "abc" : value())],
        ["tags", () => (rng.next() < 0.8 ? ["a", "b"] : value())],
        ["started_at", () => rng.pick(["2026-11-21T10:00:00Z", "", "yesterday", 3])],
        ["build_url", () => rng.pick(["https://ci/1", "javascript:x", null])],
        ["duration_ms", () => (rng.next() < 0.8 ? rng.int(9999) : value())],
        [
          "junit_xml",
          () =>
            rng.pick<unknown>([
              '<testsuite name="x"><testcase name="t"/></testsuite>',
              ["<testsuite/>", '<testsuite name="y"/>'],
              [],
              1,
              "<not xml",
            ]),
        ],
        ["suites", () => (rng.next() < 0.95 ? Array.from({ length: rng.int(5) }, () => aSuite(1)) : value())],
        ["unknown", value],
      ];
      for (const [key, make] of keys.sort(() => rng.next() - 0.5)) maybe(key, make, envelope, key === "suites" ? 0.85 : 0.3);
      let body = JSON.stringify(envelope);
      // Sometimes a repeated key (JSON.parse keeps the last).
      if (rng.next() < 0.1) body = body.replace(/^\{/, `{"suites":[{"name":"dup","cases":[{"name":"d","status":"passed"}]}],`);
      const outcome = await compare(
        { body: enc(body), gzip: rng.next() < 0.2, query: rng.next() < 0.2 ? { branch: ["q"] } : {} },
        () => 1 + rng.int(rng.pick([4, 64, 4096])),
      );
      if ("metadata" in outcome) accepted++;
    }
    // Both kinds are exercised.
    expect(accepted).toBeGreaterThan(40);
    expect(accepted).toBeLessThan(360);
  });
});

describe("the consumer's reads of a JSON object", () => {
  it("a missing object or a failing store is an internal error (retried), not the report's", async () => {
    const { ReportError } = await import("../../src/ingest/report");
    const store = new MemoryStore();
    const missing = await suitesOf(suiteSourceOf({ format: "json", objectKey: "uploads/none" }, store));
    expect(missing).toEqual({ reason: expect.stringContaining("missing") });
    const failing = new MemoryStore();
    failing.read = () => Promise.reject(new Error("R2 is down"));
    const error = await suiteSourceOf({ format: "json", objectKey: "uploads/x" }, failing)(
      () => {},
      async () => {},
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(ReportError);
    expect((error as Error).message).toContain("could not be read");
  });

  it("a store that fails halfway through the object is retried too, XML or JSON, plain or gzip; a broken object fails the run", async () => {
    const { ReportError } = await import("../../src/ingest/report");
    const { PayloadReadError } = await import("../../src/ingest/payload-store");
    const { gzipSync } = await import("node:zlib");
    const xml = `<testsuites>${Array.from({ length: 200 }, (_, i) => `<testsuite name="s${i}"><testcase name="t${i}"/></testsuite>`).join("")}</testsuites>`;
    const json = JSON.stringify({
      suites: Array.from({ length: 200 }, (_, i) => ({ name: `s${i}`, cases: [{ name: `t${i}`, status: "passed" }] })),
    });
    for (const [format, text] of [
      ["junit_xml", xml],
      ["json", json],
    ] as const) {
      for (const gzip of [false, true]) {
        const bytes = gzip ? new Uint8Array(gzipSync(text)) : new TextEncoder().encode(text);
        // The store sends part of the object, then loses its connection.
        const cut = new MemoryStore();
        cut.read = async () => ({
          body: new ReadableStream<Uint8Array>({
            start(controller) {
              controller.enqueue(bytes.slice(0, Math.floor(bytes.length / 2)));
              controller.error(new Error("network connection lost"));
            },
          }),
          metadata: { contentEncoding: gzip ? "gzip" : null, charset: null },
        });
        const lost = await suiteSourceOf({ format, objectKey: "uploads/cut" }, cut)(
          () => {},
          async () => {},
        ).catch((caught: unknown) => caught);
        expect(lost, `${format}${gzip ? " gzip" : ""}`).toBeInstanceOf(PayloadReadError);
        // The same half of the object, ended by the store as if it were whole, is the report's fault.
        const half = new MemoryStore();
        await half.write("uploads/half", new Response(bytes.slice(0, Math.floor(bytes.length / 2))).body!, {
          contentEncoding: gzip ? "gzip" : null,
          charset: null,
        });
        const broken = await suiteSourceOf({ format, objectKey: "uploads/half" }, half)(
          () => {},
          async () => {},
        ).catch((caught: unknown) => caught);
        expect(broken, `${format}${gzip ? " gzip" : ""}`).toBeInstanceOf(ReportError);
      }
    }
  });

  it("a stored object that is not what the request checked fails the run with a reason", async () => {
    const { ReportError } = await import("../../src/ingest/report");
    const store = new MemoryStore();
    const stored: [string, string][] = [
      ["a", '{"suites":[{"name":"s"}'],
      ["b", "[1]"],
      ["c", '{"suites":[{"name":""}]}'],
    ];
    for (const [key, text] of stored) {
      await store.write(key, new Response(text).body!, { contentEncoding: null, charset: null });
      const error = await suiteSourceOf({ format: "json", objectKey: key }, store)(
        () => {},
        async () => {},
      ).catch((caught: unknown) => caught);
      expect(error, text).toBeInstanceOf(ReportError);
    }
  });
});
