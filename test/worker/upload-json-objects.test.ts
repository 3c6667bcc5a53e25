/**
 * JSON uploads on the Worker go to its R2 bucket (PAYLOADS, simulated by miniflare) as they arrive,
 * checked as a stream on their way (src/ingest/json-upload-stream.ts), and the consumer reads the
 * suites from the object as a stream: the object holds the body as sent, the run's counts are the
 * report's, an invalid element deep in a large report is the 422 the whole body gets, and a
 * refused upload leaves no object.
 */
import { SELF, env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { testRuns, testSuites, uploadPayloads } from "../../src/db/schema";
import { systemClock } from "../../src/lib/clock";
import { consoleLogger } from "../../src/lib/logger";
import type { PayloadListPage, PayloadObjectMetadata, PayloadStore } from "../../src/ingest/payload-store";
import { streamUploadToStore } from "../../src/ingest/streamed-upload";
import { readUploadRequest } from "../../src/ingest/upload-request";
import { processTestRun } from "../../src/services/runs/run-processing";
import { recordTestRunArrival } from "../../src/services/runs/test-runs";
import { uploadLimitOf } from "../../src/worker";
import { R2PayloadStore } from "../../src/worker/r2-payload-store";
import { type Harness, createHarness } from "./support/harness";

let h: Harness;
let limit: number;
beforeAll(async () => {
  h = await createHarness();
  limit = uploadLimitOf(env);
});
afterAll(() => h.close());

/** The real bucket, remembering the keys written to it. */
class RecordingStore implements PayloadStore {
  readonly written: string[] = [];
  private readonly bucket = new R2PayloadStore(env.PAYLOADS!);
  async write(key: string, body: ReadableStream<Uint8Array>, metadata: PayloadObjectMetadata) {
    this.written.push(key);
    return this.bucket.write(key, body, metadata);
  }
  read(key: string) {
    return this.bucket.read(key);
  }
  delete(key: string) {
    return this.bucket.delete(key);
  }
  list(page: PayloadListPage) {
    return this.bucket.list(page);
  }
}

type JsonCase = { name: string; classname: string; status: string; duration_ms: number; failure_message?: string };

/** A JSON report of `cases` cases in suites of 100 (every seventh failed, every eleventh skipped), each suite with a nested one. */
function report(cases: number, junitXml?: string): { suites: unknown[]; junit_xml?: string; branch: string } {
  const suites: unknown[] = [];
  for (let suite = 0; suite * 100 < cases; suite++) {
    const own: JsonCase[] = [];
    for (let i = suite * 100; i < Math.min(cases, (suite + 1) * 100); i++) {
      const status = i % 7 === 0 ? "failed" : i % 11 === 0 ? "skipped" : "passed";
      own.push({
        name: `test ${i} é`,
        classname: `pkg.Class${suite}`,
        status,
        duration_ms: 10,
        ...(status === "failed" ? { failure_message: `expected ${i}` } : {}),
      });
    }
    suites.push({ name: `suite ${suite}`, cases: own.slice(0, 50), suites: [{ name: `suite ${suite} > nested`, cases: own.slice(50) }] });
  }
  return { branch: "json-branch", ...(junitXml ? { junit_xml: junitXml } : {}), suites };
}

const expectedCounts = (cases: number) => {
  let failed = 0;
  let skipped = 0;
  for (let i = 0; i < cases; i++) {
    if (i % 7 === 0) failed++;
    else if (i % 11 === 0) skipped++;
  }
  return { testsCount: cases, failedCount: failed, skippedCount: skipped, passedCount: cases - failed - skipped };
};

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const streamOf = (bytes: Uint8Array, pieceBytes = 64 * 1024) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.byteLength; at += pieceBytes) controller.enqueue(bytes.slice(at, at + pieceBytes));
      controller.close();
    },
  });

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
}

const received = (body: Uint8Array, contentEncoding?: string) => ({
  contentType: "application/json",
  contentEncoding,
  idempotencyKey: undefined,
  query: { branch: ["query-branch"], build_id: ["7"] },
  body: streamOf(body),
});

async function newProject() {
  const { organization } = await h.newOrganization();
  return h.newProject(organization.id);
}

async function waitForRun(projectId: string, number: number) {
  const run = async () =>
    (
      await h.db
        .select()
        .from(testRuns)
        .where(and(eq(testRuns.projectId, projectId), eq(testRuns.number, number)))
    )[0];
  for (let i = 0; i < 1200 && (await run())?.status === "pending"; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  return run();
}

const upload = (token: string, body: Uint8Array, headers: Record<string, string> = {}) =>
  SELF.fetch("http://worker.test/uploads/v1/test_runs", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body,
  });

describe("a JSON upload streamed to the bucket", () => {
  it("is written as sent, its row keeps the object's key, and the consumer reads it with the report's counts", async () => {
    const store = new RecordingStore();
    const cases = 2_345;
    const body = await gzip(encode(report(cases)));
    const { metadata, payload } = await streamUploadToStore(store, received(body, "gzip"), { body: limit, inflated: limit });
    expect(metadata).toMatchObject({ branch: "json-branch", buildId: "7" });
    expect(payload).toEqual({ format: "json", objectKey: store.written[0] });
    const object = await env.PAYLOADS!.get(payload.objectKey);
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(body);

    const { project } = await newProject();
    const { run } = await recordTestRunArrival({ db: h.db, clock: systemClock }, project.id, metadata, payload);
    const [row] = await h.db.select().from(uploadPayloads).where(eq(uploadPayloads.testRunId, run.id));
    expect(row).toMatchObject({ format: "json", content: null, objectKey: payload.objectKey });
    const outcome = await processTestRun(
      { db: h.db, clock: systemClock, webAppUrl: "http://web.test", logger: consoleLogger, payloadStore: store },
      run.id,
      { finalAttempt: false },
    );
    expect(outcome).toBe("processed");
    const [processed] = await h.db.select().from(testRuns).where(eq(testRuns.id, run.id));
    expect(processed).toMatchObject({ status: "processed", ...expectedCounts(cases) });
    // 24 top-level suites, each with one nested suite.
    expect(await h.db.select().from(testSuites).where(eq(testSuites.testRunId, run.id))).toHaveLength(48);
    expect(await env.PAYLOADS!.head(payload.objectKey)).toBeNull();
  });

  it("an invalid case deep in a large report: the whole body's 422, and no object left", async () => {
    const big = report(40_000);
    const last = (big.suites.at(-1) as { suites: { cases: JsonCase[] }[] }).suites[0]!.cases;
    last[last.length - 1]!.status = "retried";
    const body = encode(big);
    expect(body.byteLength).toBeGreaterThan(3 * 1024 * 1024);
    expect(body.byteLength).toBeLessThan(limit);
    const whole = await readUploadRequest({ ...received(body), body }, { body: limit, inflated: limit }).then(
      () => null,
      (error: { status: number; toBody(): unknown }) => ({ status: error.status, body: error.toBody() }),
    );
    expect(whole).toEqual({
      status: 422,
      body: {
        error: {
          code: "validation_failed",
          message: "The request was understood but its data was rejected.",
          details: [{ field: "suites.399.suites.0.cases.49.status", message: expect.any(String) }],
        },
      },
    });
    const store = new RecordingStore();
    const streamed = await streamUploadToStore(store, received(body), { body: limit, inflated: limit }).then(
      () => null,
      (error: { status: number; toBody(): unknown }) => ({ status: error.status, body: error.toBody() }),
    );
    expect(streamed).toEqual(whole);
    expect(store.written).toHaveLength(1);
    expect(await env.PAYLOADS!.head(store.written[0]!)).toBeNull();

    const { project, uploadToken } = await newProject();
    const response = await upload(uploadToken, body);
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual(whole!.body);
    expect(await h.db.select().from(testRuns).where(eq(testRuns.projectId, project.id))).toEqual([]);
  });
});

describe("through the Worker", () => {
  it("processes a JSON upload from the bucket, plain, gzip and chunked, with the report's counts", async () => {
    const { project, uploadToken } = await newProject();
    const cases = 1_500;
    const body = encode(report(cases));
    for (const [sent, headers] of [
      [body, {}],
      [await gzip(body), { "content-encoding": "gzip" }],
    ] as const) {
      const response = await upload(uploadToken, sent, headers);
      expect(response.status).toBe(202);
      const { number, branch } = (await response.json()) as { number: number; branch: string };
      expect(branch).toBe("json-branch");
      expect(await waitForRun(project.id, number)).toMatchObject({ status: "processed", ...expectedCounts(cases) });
    }
    const chunked = await SELF.fetch("http://worker.test/uploads/v1/test_runs", {
      method: "POST",
      headers: { authorization: `Bearer ${uploadToken}`, "content-type": "application/json" },
      body: streamOf(body),
    });
    expect(chunked.status).toBe(202);
    const { number } = (await chunked.json()) as { number: number };
    expect(await waitForRun(project.id, number)).toMatchObject({ status: "processed", ...expectedCounts(cases) });
  });

  it("puts the XML's suites first, whatever the keys' order", async () => {
    const { project, uploadToken } = await newProject();
    const xml = '<testsuite name="from xml"><testcase name="x"/><testcase name="y"><failure message="no"/></testcase></testsuite>';
    const { junit_xml, ...rest } = report(150, xml);
    const response = await upload(uploadToken, encode({ ...rest, junit_xml }));
    expect(response.status).toBe(202);
    const { number } = (await response.json()) as { number: number };
    const run = await waitForRun(project.id, number);
    expect(run).toMatchObject({ status: "processed", testsCount: 152, failedCount: expectedCounts(150).failedCount + 1 });
    const suites = await h.db.select().from(testSuites).where(eq(testSuites.testRunId, run!.id)).orderBy(testSuites.number);
    expect(suites.map((suite) => suite.name).slice(0, 2)).toEqual(["from xml", "suite 0"]);
  });
});
