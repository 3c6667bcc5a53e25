/**
 * Issue 32's size: a report of 500,000 cases (bench/junit-generator.ts, Surefire-shaped: 135 MiB of
 * XML) sent gzip-compressed (11 MiB) to Node on a Postgres server with its own limits (32 MiB as
 * sent, 256 MiB inflated) is accepted and processed with every case; one case more fails the run
 * on the case limit. Slow tier: each report takes minutes to store on a loaded 2-core machine.
 * Its time and memory: `npm run bench:huge`.
 */
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateJUnit } from "../../bench/junit-generator";
import { INFLATED_LIMIT_BYTES, UPLOAD_LIMIT_BYTES } from "../../src/ingest/upload-body";
import { REPORT_LIMITS } from "../../src/ingest/report";
import { type Harness, createHarness, testDatabaseUrl } from "../support/harness";

if (!(await testDatabaseUrl())) throw new Error("huge-upload.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");

let h: Harness;
beforeAll(async () => {
  // As src/node/server.ts on a Postgres server; a rate limit that minutes of polling every 20 ms do not reach.
  h = await createHarness({ overrides: { inflatedLimitBytes: INFLATED_LIMIT_BYTES }, rateLimit: { limit: 1e9, windowMs: 60_000 } });
});
afterAll(async () => {
  await h?.close();
});

async function uploadGzip(cases: number) {
  const { organization } = await h.newOrganization();
  const { uploadToken } = await h.newProject(organization.id);
  const xml = generateJUnit({ cases, seed: 32 });
  const body = new Uint8Array(gzipSync(xml));
  expect(xml.length).toBeGreaterThan(UPLOAD_LIMIT_BYTES);
  expect(body.byteLength).toBeLessThan(UPLOAD_LIMIT_BYTES);
  const res = await h.upload(uploadToken, body, { headers: { "content-encoding": "gzip" } });
  expect(res.status, res.text.slice(0, 300)).toBe(202);
  return h.waitForRun(uploadToken, res.body.number, 20 * 60_000);
}

describe("a report of 500,000 cases, gzip-compressed, on Node on Postgres", () => {
  it("is accepted and processed with every case", { timeout: 25 * 60_000 }, async () => {
    expect(REPORT_LIMITS.maxCases).toBe(500_000);
    expect(await uploadGzip(500_000)).toMatchObject({ status: "processed", tests_count: 500_000 });
  });

  it("one case more fails the run on the case limit", { timeout: 25 * 60_000 }, async () => {
    expect(await uploadGzip(500_001)).toMatchObject({ status: "failed", failure_reason: "The report has more than 500000 test cases." });
  });
});
