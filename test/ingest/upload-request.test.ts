/**
 * An upload request becomes one typed value in one place: format, text, metadata (query string
 * and JSON envelope together, the envelope winning) and the payload processing will read.
 */
import { describe, expect, it } from "vitest";
import { REPORT_LIMITS } from "../../src/ingest/report";
import { type ReceivedUpload, readUploadRequest } from "../../src/ingest/upload-request";
import { ApiError } from "../../src/lib/errors";

const received = (overrides: Partial<ReceivedUpload>): ReceivedUpload => ({
  contentType: "application/json",
  contentEncoding: undefined,
  idempotencyKey: undefined,
  query: {},
  body: new Uint8Array(),
  ...overrides,
});
const jsonBody = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

async function failure(input: ReceivedUpload) {
  try {
    await readUploadRequest(input);
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, body: error.toBody() };
    throw error;
  }
  throw new Error("expected the request to be refused");
}

describe("readUploadRequest", () => {
  it("merges query and envelope metadata (the envelope wins) and stores the envelope as validated", async () => {
    const longName = "x".repeat(REPORT_LIMITS.maxNameLength + 50);
    const upload = await readUploadRequest(
      received({
        query: { branch: ["query-branch"], tags: ["a,b", "b"], commit_sha: ["abc"], base_commit_sha: ["0123456"] },
        idempotencyKey: " key-1 ",
        body: jsonBody({
          branch: "envelope-branch",
          base_commit_sha: "89abcdef",
          started_at: "",
          suites: [{ name: "s", cases: [{ name: longName, status: "passed" }] }],
        }),
      }),
    );
    expect(upload.metadata).toEqual({
      branch: "envelope-branch",
      commitSha: "abc",
      baseCommitSha: "89abcdef",
      buildId: null,
      buildUrl: null,
      tags: ["a", "b"],
      startedAt: null,
      variant: "",
      idempotencyKey: "key-1",
    });
    expect(upload.payload.format).toBe("json");
    const stored = JSON.parse(upload.payload.content);
    // What processing reads is what the schema made of the body: the name is already cut.
    expect(stored.suites[0].cases[0].name).toHaveLength(REPORT_LIMITS.maxNameLength);
  });

  it("keeps XML as text, with NUL replaced as the parser would", async () => {
    const upload = await readUploadRequest(
      received({ contentType: "application/xml", body: new TextEncoder().encode("<testsuite name='a\u0000'/>") }),
    );
    expect(upload.payload).toEqual({ format: "junit_xml", content: "<testsuite name='a\uFFFD'/>" });
  });

  it("refuses what is wrong with the request itself, in the envelope", async () => {
    expect(await failure(received({ contentType: "text/plain", body: jsonBody({}) }))).toMatchObject({ status: 415 });
    expect(await failure(received({ body: new Uint8Array() }))).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_request" } },
    });
    expect(await failure(received({ body: new TextEncoder().encode("[1]") }))).toMatchObject({ status: 400 });
    expect(await failure(received({ body: jsonBody({ branch: "main" }) }))).toMatchObject({
      status: 422,
      body: { error: { details: [{ field: "suites" }] } },
    });
    expect(await failure(received({ query: { started_at: ["yesterday"] }, body: jsonBody({ suites: [] }) }))).toMatchObject({
      status: 422,
      body: { error: { details: [{ field: "started_at" }] } },
    });
    expect(await failure(received({ idempotencyKey: "é", body: jsonBody({ suites: [] }) }))).toMatchObject({
      status: 422,
      body: { error: { details: [{ field: "Idempotency-Key", message: "must be 1 to 255 visible ASCII characters" }] } },
    });
  });
});
