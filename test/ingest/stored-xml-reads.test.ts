/**
 * A stored XML report (gzip, or larger than SCAN_ABOVE_BYTES) is read once while none of its
 * top-level suites grows large enough to be handed out in parts (readJUnitTextOnce), and three
 * times otherwise (from there: a first pass, then the second pass past the suites already handed
 * out). Either way the store is handed exactly what the two passes over the whole document handed
 * it before (the same emissions, parts included, and duration), and a report that cannot be read
 * fails with the error the first pass met first.
 */
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import type { PayloadListPage, PayloadObjectMetadata, PayloadStore } from "../../src/ingest/payload-store";
import { REPORT_LIMITS, type ReportSuite } from "../../src/ingest/report";
import { scanRepeatedCases, streamJUnitText } from "../../src/ingest/junit";
import { mulberry32 } from "../../src/lib/seeded-random";
import { suiteSourceOf } from "../../src/services/runs/run-processing";

/** A store of gzip objects that counts how often each is opened. */
class CountingStore implements PayloadStore {
  readonly objects = new Map<string, Uint8Array>();
  reads = 0;
  async write(key: string, body: ReadableStream<Uint8Array>, _metadata: PayloadObjectMetadata) {
    this.objects.set(key, new Uint8Array(await new Response(body).arrayBuffer()));
  }
  async read(key: string) {
    const bytes = this.objects.get(key);
    if (!bytes) return null;
    this.reads++;
    // Pieces of 64 KiB, as a store streams them.
    let offset = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(offset, (offset += 64 * 1024)));
      },
    });
    return { body, metadata: { contentEncoding: "gzip" as const, charset: null }, size: bytes.length };
  }
  async delete(key: string) {
    this.objects.delete(key);
  }
  async list(_page: PayloadListPage) {
    return { objects: [], cursor: null };
  }
}

async function* piecesOf(xml: string, size = 64 * 1024): AsyncIterable<string> {
  for (let i = 0; i < xml.length; i += size) yield xml.slice(i, i + size);
}
const pause = async () => {};

type Outcome = { emissions: ReportSuite[]; durationMs: unknown } | { reason: string };

/** What the store was handed before: a first pass over the whole document, then the second with its findings. */
async function twoPasses(xml: string): Promise<Outcome> {
  const emissions: ReportSuite[] = [];
  try {
    const repeats = await scanRepeatedCases(piecesOf(xml), pause);
    const durationMs = await streamJUnitText(piecesOf(xml), (suites) => emissions.push(...suites), pause, repeats);
    return { emissions, durationMs };
  } catch (error) {
    return { reason: (error as Error).message };
  }
}

/** What the store is handed now, from the report stored gzip-compressed, and how often it was opened. */
async function processed(xml: string): Promise<{ outcome: Outcome; reads: number }> {
  const store = new CountingStore();
  store.objects.set("report", new Uint8Array(gzipSync(xml)));
  const emissions: ReportSuite[] = [];
  try {
    const durationMs = await suiteSourceOf({ format: "junit_xml", objectKey: "report" }, store)(
      (suites) => emissions.push(...suites),
      pause,
    );
    return { outcome: { emissions, durationMs }, reads: store.reads };
  } catch (error) {
    return { outcome: { reason: (error as Error).message }, reads: store.reads };
  }
}

const testcase = (name: string, body = "") => `<testcase classname="app.Spec" name="${name}" time="0.010">${body}</testcase>`;
const suite = (name: string, cases: string[], inner = "") => `<testsuite name="${name}">${cases.join("")}${inner}</testsuite>`;
const cases = (count: number, prefix = "t") => Array.from({ length: count }, (_, i) => testcase(`${prefix}${i}`));

/** The run's limits, lowered for a test (the object is read at each check); restored after it. */
const limits = { ...REPORT_LIMITS };
const lowered = REPORT_LIMITS as { -readonly [K in keyof typeof REPORT_LIMITS]: number };
afterEach(() => Object.assign(lowered, limits));

describe("a stored XML report", () => {
  it("is read once when its suites are small, and hands the store what the two passes did", async () => {
    const xml = `<testsuites time="3.5">${Array.from({ length: 300 }, (_, s) => suite(`s${s}`, cases(40))).join("")}</testsuites>`;
    const { outcome, reads } = await processed(xml);
    expect(reads).toBe(1);
    expect(outcome).toEqual(await twoPasses(xml));
  });

  it("is read three times from a large suite on, the suites before it handed out once, the large one in parts", async () => {
    // A retry right after its first entry, as pytest-rerunfailures writes it.
    const big = cases(4_000);
    big.splice(6, 0, testcase("t5", '<failure message="boom">at spec:1</failure>'));
    const xml = `<testsuites>${suite("small 1", cases(900))}${suite("small 2", cases(10))}${suite("big", big)}${suite("after", cases(5))}</testsuites>`;
    const { outcome, reads } = await processed(xml);
    expect(reads).toBe(3);
    const before = await twoPasses(xml);
    expect(outcome).toEqual(before);
    expect("emissions" in before && before.emissions.filter((s) => s.continued).length).toBeGreaterThan(1);
  });

  it("gives the two passes' emissions on random reports: suites small and large, nested, cases straight under the root", async () => {
    const random = mulberry32(32);
    for (let round = 0; round < 16; round++) {
      const parts: string[] = [];
      for (let s = 0; s < 1 + Math.floor(random() * 5); s++) {
        const count = Math.floor(random() * (random() < 0.5 ? 300 : 2_600));
        const names = Math.max(1, Math.floor(count * (0.5 + random() / 2)));
        const entries = Array.from({ length: count }, () => {
          const n = Math.floor(random() * names);
          return testcase(`t${n}`, random() < 0.1 ? `<failure message="f${n}">at spec:1</failure>` : "");
        });
        if (random() < 0.1) parts.push(testcase(`loose ${s}`));
        const nested = random() < 0.2 ? suite(`nested ${s}`, entries.slice(0, 30)) : "";
        parts.push(suite(`suite ${s}`, entries, random() < 0.5 ? nested : ""));
      }
      const xml = `<testsuites time="1.25">${parts.join("")}</testsuites>`;
      expect((await processed(xml)).outcome).toEqual(await twoPasses(xml));
    }
  });

  it("fails with the error the first pass met first: a malformed end before the case limit's", async () => {
    lowered.maxCases = 100;
    const xml = `<testsuites>${suite("s", cases(150))}<testsuite name="broken"></testsuites>`;
    const { outcome } = await processed(xml);
    expect(outcome).toEqual(await twoPasses(xml));
    expect(outcome).toEqual({ reason: expect.stringContaining("not well-formed") });
  });

  it("fails with the case limit when nothing else is wrong, and with the suite limit the first pass checks", async () => {
    lowered.maxCases = 100;
    const overCases = `<testsuites>${suite("s", cases(150))}</testsuites>`;
    expect((await processed(overCases)).outcome).toEqual({ reason: "The report has more than 100 test cases." });
    expect((await processed(overCases)).outcome).toEqual(await twoPasses(overCases));
    lowered.maxSuites = 20;
    const overBoth = `<testsuites>${suite("s", cases(150))}${Array.from({ length: 30 }, (_, i) => suite(`e${i}`, [])).join("")}</testsuites>`;
    expect((await processed(overBoth)).outcome).toEqual({ reason: "The report has more than 20 test suites." });
    expect((await processed(overBoth)).outcome).toEqual(await twoPasses(overBoth));
  });
});
