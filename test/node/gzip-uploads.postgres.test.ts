/**
 * Gzip reports larger once inflated than a body may be (docs/uploads.md#limits), on Node on a
 * Postgres server: streamed to the database's payload store as sent, checked as they inflate,
 * processed from it, and the object deleted with the run's payload; past the inflated limit, or a
 * body past its own limit, a 413 payload_too_large that says which, with nothing recorded and no
 * object left. The limits are lowered here (a body of 256 KiB, a report of 4 MiB) so that the
 * reports stay small; the server's own 256 MiB is checked with a gzip bomb, which costs little.
 *
 * Postgres only: on PGlite the consumer's read of the store would wait for the run's own
 * transaction (one session), so Node on PGlite reads a gzip body whole (src/node/server.ts).
 */
import { gzipSync } from "node:zlib";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payloadObjects, testRuns, uploadPayloads } from "../../src/db/schema";
import { INFLATED_LIMIT_BYTES } from "../../src/ingest/upload-body";
import { rowsOf } from "../../src/db/rows";
import { type Harness, createHarness, testDatabaseUrl } from "../support/harness";

if (!(await testDatabaseUrl())) throw new Error("gzip-uploads.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");

const BODY_LIMIT = 256 * 1024;
const INFLATED_LIMIT = 4 * 1024 * 1024;

let small: Harness;
let real: Harness;
beforeAll(async () => {
  small = await createHarness({ overrides: { uploadLimitBytes: BODY_LIMIT, inflatedLimitBytes: INFLATED_LIMIT } });
  real = await createHarness({ overrides: { inflatedLimitBytes: INFLATED_LIMIT_BYTES } });
});
afterAll(async () => {
  await small?.close();
  await real?.close();
});

/** A JUnit report of `cases` cases, every tenth failing, each with some output: about 190 bytes a case. */
function junit(cases: number): string {
  const parts = ['<?xml version="1.0" encoding="UTF-8"?><testsuites>'];
  for (let s = 0; s < cases / 100; s++) {
    parts.push(`<testsuite name="pkg.Suite${s}">`);
    for (let i = 0; i < 100 && s * 100 + i < cases; i++) {
      const n = s * 100 + i;
      const outcome = n % 10 === 3 ? `<failure message="expected ${n}">at pkg.Suite${s}.test${i}(Suite${s}.java:${i})</failure>` : "";
      parts.push(`<testcase classname="pkg.Suite${s}" name="test${i}" time="0.012">${outcome}<system-out>out ${n}</system-out></testcase>`);
    }
    parts.push("</testsuite>");
  }
  parts.push("</testsuites>");
  return parts.join("");
}

const gzip = (text: string) => new Uint8Array(gzipSync(text));
const objectCount = async (h: Harness) =>
  Number((await rowsOf<{ n: number }>(h.db.execute(sql`select count(*)::int as n from ${payloadObjects}`)))[0]!.n);

async function newUploader(h: Harness) {
  const { organization } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  return { projectId: project.id as string, token: uploadToken };
}

describe("a gzip report larger once inflated than a body may be", () => {
  it("is accepted, stored as sent in the database's store, processed from it, and the object deleted", async () => {
    const { projectId, token } = await newUploader(small);
    const text = junit(15_000);
    const body = gzip(text);
    expect(text.length).toBeGreaterThan(BODY_LIMIT);
    expect(text.length).toBeLessThan(INFLATED_LIMIT);
    expect(body.byteLength).toBeLessThan(BODY_LIMIT);
    const objectsBefore = await objectCount(small);
    const res = await small.upload(token, body, { headers: { "content-encoding": "gzip" } });
    expect(res.status, res.text).toBe(202);
    const run = await small.waitForRun(token, res.body.number);
    expect(run).toMatchObject({ status: "processed", tests_count: 15_000, failed_count: 1_500 });
    const [row] = await small.db.select().from(testRuns).where(eq(testRuns.projectId, projectId));
    expect(await small.db.select().from(uploadPayloads).where(eq(uploadPayloads.testRunId, row!.id))).toEqual([]);
    expect(await objectCount(small)).toBe(objectsBefore);
  });

  it("as the JSON envelope too", async () => {
    const { token } = await newUploader(small);
    const text = JSON.stringify({ branch: "main", junit_xml: junit(12_000) });
    expect(text.length).toBeGreaterThan(BODY_LIMIT);
    const res = await small.upload(token, gzip(text), { contentType: "application/json", headers: { "content-encoding": "gzip" } });
    expect(res.status, res.text).toBe(202);
    expect(await small.waitForRun(token, res.body.number)).toMatchObject({ status: "processed", tests_count: 12_000, branch: "main" });
  });

  it("past the inflated limit by one byte: a 413 that names it; nothing recorded, no object left", async () => {
    const { projectId, token } = await newUploader(small);
    const head = '<testsuite name="s"><testcase name="a"/></testsuite><!--';
    const text = `${head}${"x".repeat(INFLATED_LIMIT + 1 - head.length - 3)}-->`;
    expect(text.length).toBe(INFLATED_LIMIT + 1);
    const objectsBefore = await objectCount(small);
    const res = await small.upload(token, gzip(text), { headers: { "content-encoding": "gzip" } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
    expect(res.body.error.message).toContain(`inflates to more than ${INFLATED_LIMIT} bytes (4 MiB)`);
    expect(await small.db.select().from(testRuns).where(eq(testRuns.projectId, projectId))).toEqual([]);
    expect(await objectCount(small)).toBe(objectsBefore);
  });

  it("at the inflated limit exactly: accepted", async () => {
    const { token } = await newUploader(small);
    const head = '<testsuite name="s"><testcase name="a"/></testsuite><!--';
    const text = `${head}${"x".repeat(INFLATED_LIMIT - head.length - 3)}-->`;
    const res = await small.upload(token, gzip(text), { headers: { "content-encoding": "gzip" } });
    expect(res.status, res.text).toBe(202);
    expect(await small.waitForRun(token, res.body.number)).toMatchObject({ status: "processed", tests_count: 1 });
  });

  it("a plain body past the body limit: a 413 that names the body's limit", async () => {
    const { projectId, token } = await newUploader(small);
    const res = await small.upload(token, junit(5_000));
    expect(res.status).toBe(413);
    expect(res.body.error.message).toContain(`exceeds ${BODY_LIMIT} bytes (0.3 MiB) as sent`);
    expect(await small.db.select().from(testRuns).where(eq(testRuns.projectId, projectId))).toEqual([]);
  });

  it("with the server's own limits, a gzip body inflating past 256 MiB is a 413, refused as it inflates", async () => {
    const { projectId, token } = await newUploader(real);
    // Members of 1 MiB of spaces one after another: 257 MiB once inflated, 260 KiB as sent.
    const member = new Uint8Array(gzipSync(new Uint8Array(1024 * 1024).fill(0x20)));
    const members = INFLATED_LIMIT_BYTES / (1024 * 1024) + 1;
    const bomb = new Uint8Array(member.byteLength * members);
    for (let i = 0; i < members; i++) bomb.set(member, i * member.byteLength);
    const objectsBefore = await objectCount(real);
    const res = await real.upload(token, bomb, { headers: { "content-encoding": "gzip" } });
    expect(res.status).toBe(413);
    expect(res.body.error.message).toContain("inflates to more than 268435456 bytes (256 MiB)");
    expect(await real.db.select().from(testRuns).where(eq(testRuns.projectId, projectId))).toEqual([]);
    expect(await objectCount(real)).toBe(objectsBefore);
  });
});
