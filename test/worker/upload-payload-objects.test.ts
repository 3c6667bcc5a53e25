/**
 * JUnit XML uploads on the Worker go to its R2 bucket (PAYLOADS, simulated by miniflare) as they
 * arrive, and the consumer parses them from there: the object holds the body as sent, is deleted
 * when the request is refused and once its run is processed or failed, and the run's counts are
 * the file's. The services are driven directly where the object's key must be seen (a store that
 * records the keys it is given, around the real bucket); the whole path through SELF too.
 */
import { SELF, env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { testCases, testRuns, uploadPayloads } from "../../src/db/schema";
import { systemClock } from "../../src/lib/clock";
import { consoleLogger } from "../../src/lib/logger";
import type { PayloadListPage, PayloadObjectMetadata, PayloadStore } from "../../src/ingest/payload-store";
import { streamUploadToStore } from "../../src/ingest/streamed-upload";
import { processTestRun } from "../../src/services/runs/run-processing";
import { recordTestRunArrival } from "../../src/services/runs/test-runs";
import { acceptUpload } from "../../src/services/runs/uploads";
import { CloudflareRunQueue } from "../../src/worker/run-queue";
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

/** A JUnit report of `cases` cases (every seventh failed, every eleventh skipped), with an ANSI colour in failure messages. */
function junit(cases: number): string {
  const parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>'];
  for (let suite = 0; suite * 100 < cases; suite++) {
    parts.push(`<testsuite name="suite ${suite}">`);
    for (let i = suite * 100; i < Math.min(cases, (suite + 1) * 100); i++) {
      const outcome = i % 7 === 0 ? `<failure message="expected &#x1B;[31m${i}">trace ${i}</failure>` : i % 11 === 0 ? "<skipped/>" : "";
      parts.push(`<testcase classname="pkg.Class${suite}" name="test ${i} é" time="0.01">${outcome}</testcase>`);
    }
    parts.push("</testsuite>");
  }
  parts.push("</testsuites>\n");
  return parts.join("\n");
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

const streamOf = (bytes: Uint8Array, pieceBytes = 64 * 1024) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.byteLength; at += pieceBytes) controller.enqueue(bytes.slice(at, at + pieceBytes));
      controller.close();
    },
  });

async function sha256(bytes: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
}

const received = (body: Uint8Array, headers: { contentEncoding?: string; contentType?: string } = {}) => ({
  contentType: headers.contentType ?? "application/xml",
  contentEncoding: headers.contentEncoding,
  idempotencyKey: undefined,
  query: { branch: ["main"] },
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

describe("an XML upload streamed to the bucket", () => {
  it("is written as sent (gzip stays compressed), and the run's payload row keeps the object's key", async () => {
    const store = new RecordingStore();
    const report = new TextEncoder().encode(junit(300));
    const body = await gzip(report);
    const { metadata, payload } = await streamUploadToStore(store, received(body, { contentEncoding: "gzip" }), {
      body: limit,
      inflated: limit,
    });
    expect(metadata.branch).toBe("main");
    expect(payload).toEqual({ format: "junit_xml", objectKey: store.written[0] });
    const object = await env.PAYLOADS!.get(payload.objectKey);
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(body);
    expect(object!.customMetadata).toMatchObject({ contentEncoding: "gzip" });

    const { project } = await newProject();
    const { run } = await recordTestRunArrival({ db: h.db, clock: systemClock }, project.id, metadata, payload);
    const [row] = await h.db.select().from(uploadPayloads).where(eq(uploadPayloads.testRunId, run.id));
    expect(row).toMatchObject({ format: "junit_xml", content: null, objectKey: payload.objectKey });
  });

  it("takes a body of more than two multipart parts (5 MiB each) in parts, byte for byte", async () => {
    const store = new RecordingStore();
    const bytes = new TextEncoder().encode(junit(130_000));
    expect(bytes.byteLength).toBeGreaterThan(2 * 5 * 1024 * 1024);
    const { payload } = await streamUploadToStore(store, received(bytes), { body: 32 * 1024 * 1024, inflated: 32 * 1024 * 1024 });
    const object = await env.PAYLOADS!.get(payload.objectKey);
    expect(object!.size).toBe(bytes.byteLength);
    // Compared by digest: a failing comparison of two 11 MiB arrays would print them.
    expect(await sha256(new Uint8Array(await object!.arrayBuffer()))).toBe(await sha256(bytes));
    await env.PAYLOADS!.delete(payload.objectKey);
  });

  it("is deleted when the body passes the limit, compressed or once inflated, or is not what it says", async () => {
    const big = new TextEncoder().encode(`<testsuite name="s"><testcase name="a"/></testsuite><!--${"x".repeat(limit)}-->`);
    const refusals: [Uint8Array, { contentEncoding?: string; contentType?: string }, number][] = [
      [big, {}, 413],
      [await gzip(big), { contentEncoding: "gzip" }, 413],
      [new Uint8Array([0x3c, 0x61, 0x3e, 0xff, 0xfe, 0x3c]), {}, 400],
      [new TextEncoder().encode("not gzip at all"), { contentEncoding: "gzip" }, 400],
      [new TextEncoder().encode("<testsuite/>"), { contentType: "application/xml; charset=x-unknown" }, 415],
      [new Uint8Array(), {}, 400],
    ];
    for (const [body, headers, status] of refusals) {
      const store = new RecordingStore();
      const refused = await streamUploadToStore(store, received(body, headers), { body: limit, inflated: limit }).then(
        () => null,
        (error: { status?: number }) => error,
      );
      expect(refused?.status, `${headers.contentEncoding ?? ""} ${headers.contentType ?? ""} ${body.byteLength}`).toBe(status);
      for (const key of store.written) expect(await env.PAYLOADS!.head(key)).toBeNull();
    }
  });

  it("is parsed from the bucket by the consumer, with the file's counts, and deleted once the run is processed", async () => {
    const store = new RecordingStore();
    const { project } = await newProject();
    const cases = 2_345;
    const { metadata, payload } = await streamUploadToStore(
      store,
      received(await gzip(new TextEncoder().encode(junit(cases))), { contentEncoding: "gzip" }),
      { body: limit, inflated: limit },
    );
    const { run } = await recordTestRunArrival({ db: h.db, clock: systemClock }, project.id, metadata, payload);
    const outcome = await processTestRun(
      { db: h.db, clock: systemClock, webAppUrl: "http://web.test", logger: consoleLogger, payloadStore: store },
      run.id,
      { finalAttempt: false },
    );
    expect(outcome).toBe("processed");
    const [processed] = await h.db.select().from(testRuns).where(eq(testRuns.id, run.id));
    expect(processed).toMatchObject({ status: "processed", ...expectedCounts(cases) });
    expect(await env.PAYLOADS!.head(payload.objectKey)).toBeNull();
    expect(await h.db.select().from(uploadPayloads).where(eq(uploadPayloads.testRunId, run.id))).toEqual([]);
  });

  it("is deleted when its run fails (a malformed report), the run failed with the parser's reason", async () => {
    const store = new RecordingStore();
    const { project } = await newProject();
    const { metadata, payload } = await streamUploadToStore(
      store,
      received(new TextEncoder().encode("<testsuite name='s'><testcase name='t'></testsuite>")),
      { body: limit, inflated: limit },
    );
    const { run } = await recordTestRunArrival({ db: h.db, clock: systemClock }, project.id, metadata, payload);
    const outcome = await processTestRun(
      { db: h.db, clock: systemClock, webAppUrl: "http://web.test", logger: consoleLogger, payloadStore: store },
      run.id,
      { finalAttempt: false },
    );
    expect(outcome).toBe("failed");
    const [failed] = await h.db.select().from(testRuns).where(eq(testRuns.id, run.id));
    expect(failed!.failureReason).toMatch(/not well-formed/);
    expect(await env.PAYLOADS!.head(payload.objectKey)).toBeNull();
  });
});

describe("through the Worker", () => {
  it("processes a streamed upload, plain and gzip, with the file's counts", async () => {
    const { project, uploadToken } = await newProject();
    const cases = 1_500;
    const report = new TextEncoder().encode(junit(cases));
    for (const [body, headers] of [
      [report, {}],
      [await gzip(report), { "content-encoding": "gzip" }],
    ] as const) {
      const response = await SELF.fetch("http://worker.test/uploads/v1/test_runs?branch=main", {
        method: "POST",
        headers: { authorization: `Bearer ${uploadToken}`, "content-type": "application/xml", ...headers },
        body,
      });
      expect(response.status).toBe(202);
      const { number } = (await response.json()) as { number: number };
      expect(await waitForRun(project.id, number)).toMatchObject({ status: "processed", ...expectedCounts(cases) });
    }
  });
});

describe("a large single suite through the Worker", () => {
  it("is processed from two reads of the object, its retried test merged as in one piece", async () => {
    const { project, uploadToken } = await newProject();
    // One <testsuite> of 6,000 cases (over 512 KiB: read twice, handed to the store in parts), test 10 retried at the end.
    const entries = Array.from(
      { length: 6_000 },
      (_, i) =>
        `<testcase classname="pkg.Single" name="test ${i}" time="0.01">${i === 10 ? "<failure message='first try'>trace</failure>" : "<system-out>out</system-out>"}</testcase>`,
    );
    entries.push(`<testcase classname="pkg.Single" name="test 10" time="0.02"/>`);
    const report = new TextEncoder().encode(`<testsuites><testsuite name="single">${entries.join("\n")}</testsuite></testsuites>`);
    expect(report.byteLength).toBeGreaterThan(512 * 1024);
    const response = await SELF.fetch("http://worker.test/uploads/v1/test_runs?branch=main", {
      method: "POST",
      headers: { authorization: `Bearer ${uploadToken}`, "content-type": "application/xml" },
      body: report,
    });
    expect(response.status).toBe(202);
    const { number } = (await response.json()) as { number: number };
    const run = await waitForRun(project.id, number);
    expect(run).toMatchObject({ status: "processed", testsCount: 6_000, passedCount: 6_000, failedCount: 0 });
    const [retried] = await h.db
      .select()
      .from(testCases)
      .where(and(eq(testCases.testRunId, run!.id), eq(testCases.name, "test 10")));
    expect(retried).toMatchObject({
      status: "passed",
      durationMs: 20,
      attempts: [{ status: "failed", duration_ms: 10, failure_message: "first try" }],
    });
    // The case keeps its first entry's place: the eleventh of its suite.
    const first = await h.db
      .select({ name: testCases.name })
      .from(testCases)
      .where(eq(testCases.testRunId, run!.id))
      .orderBy(testCases.id)
      .limit(11);
    expect(first.at(-1)).toEqual({ name: "test 10" });
  });
});

describe("a chunked upload (no Content-Length) through the Worker", () => {
  const sendChunked = (token: string, bytes: Uint8Array) =>
    SELF.fetch("http://worker.test/uploads/v1/test_runs", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/xml" },
      body: streamOf(bytes),
    });

  it("is streamed and processed", async () => {
    const { project, uploadToken } = await newProject();
    const response = await sendChunked(uploadToken, new TextEncoder().encode(junit(250)));
    expect(response.status).toBe(202);
    const { number } = (await response.json()) as { number: number };
    expect(await waitForRun(project.id, number)).toMatchObject({ status: "processed", ...expectedCounts(250) });
  });

  it("is refused with a 413 once it passes the limit, and records nothing", async () => {
    const { project, uploadToken } = await newProject();
    const response = await sendChunked(
      uploadToken,
      new TextEncoder().encode(`<testsuite name="s"><testcase name="a"/></testsuite><!--${"x".repeat(limit)}-->`),
    );
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
    expect(await h.db.select().from(testRuns).where(eq(testRuns.projectId, project.id))).toEqual([]);
  });
});

describe("an upload replayed with its Idempotency-Key", () => {
  it("returns the first run, and the replay's object is deleted", async () => {
    const store = new RecordingStore();
    const { project } = await newProject();
    const deps = {
      db: h.db,
      clock: systemClock,
      runQueue: new CloudflareRunQueue(env.RUN_QUEUE),
      logger: consoleLogger,
      payloadStore: store,
    };
    const upload = async () => {
      const { metadata, payload } = await streamUploadToStore(
        store,
        { ...received(new TextEncoder().encode(junit(10))), idempotencyKey: "once" },
        { body: limit, inflated: limit },
      );
      return {
        payload,
        ...(await acceptUpload(deps, { projectId: project.id, organizationId: project.organizationId }, metadata, payload)),
      };
    };
    const first = await upload();
    const replay = await upload();
    expect(replay.replayed).toBe(true);
    expect(replay.run.id).toBe(first.run.id);
    expect(await env.PAYLOADS!.head(replay.payload.objectKey)).toBeNull();
    expect(await waitForRun(project.id, first.run.number)).toMatchObject({ status: "processed", ...expectedCounts(10) });
  });
});
