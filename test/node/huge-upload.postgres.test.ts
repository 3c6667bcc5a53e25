/**
 * Issue 32's size: a report of 500,000 cases (bench/junit-generator.ts, Surefire-shaped: 135 MiB of
 * XML) sent gzip-compressed (11 MiB) to Node on a Postgres server with its own limits (32 MiB as
 * sent, 256 MiB inflated) is accepted and processed with every case; one case more fails the run
 * on the case limit (a minimal report of 500,001 cases, through the same path). Slow tier: each report takes minutes to store on a loaded 2-core machine.
 * Its time and memory: `npm run bench:huge`.
 */
import { gzipSync } from "node:zlib";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateJUnit } from "../../bench/junit-generator";
import { INFLATED_LIMIT_BYTES, UPLOAD_LIMIT_BYTES } from "../../src/ingest/upload-body";
import { REPORT_LIMITS } from "../../src/ingest/report";
import { alerts } from "../../src/db/schema";
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

/** The smallest report of `cases` cases: what the case limit needs, at a fraction of a realistic report's parsing and storing. */
const minimalJUnit = (cases: number) =>
  `<testsuite name="big">${Array.from({ length: cases }, (_, i) => `<testcase classname="c" name="t${i}" time="0.001"/>`).join("")}</testsuite>`;

async function uploadGzip(xml: string) {
  const { organization } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  // What is tested is the run's storing; the alert checks after it (a minute of this run) are tested elsewhere.
  await h.db.update(alerts).set({ active: false }).where(eq(alerts.projectId, project.id));
  const body = new Uint8Array(gzipSync(xml));
  expect(body.byteLength).toBeLessThan(UPLOAD_LIMIT_BYTES);
  const res = await h.upload(uploadToken, body, { headers: { "content-encoding": "gzip" } });
  expect(res.status, res.text.slice(0, 300)).toBe(202);
  return h.waitForRun(uploadToken, res.body.number, 20 * 60_000);
}

describe("a report of 500,000 cases, gzip-compressed, on Node on Postgres", () => {
  it("is accepted and processed with every case", { timeout: 25 * 60_000 }, async () => {
    expect(REPORT_LIMITS.maxCases).toBe(500_000);
    const xml = generateJUnit({ cases: 500_000, seed: 32 });
    expect(xml.length).toBeGreaterThan(UPLOAD_LIMIT_BYTES);
    expect(await uploadGzip(xml)).toMatchObject({ status: "processed", tests_count: 500_000 });
  });

  it("one case more fails the run on the case limit", { timeout: 25 * 60_000 }, async () => {
    expect(await uploadGzip(minimalJUnit(500_001))).toMatchObject({
      status: "failed",
      failure_reason: "The report has more than 500000 test cases.",
    });
  });
});
