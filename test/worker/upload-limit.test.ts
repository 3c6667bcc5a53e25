/**
 * The Worker's upload limits (UPLOAD_LIMIT_BYTES and INFLATED_LIMIT_BYTES in wrangler.toml): a body
 * past 32 MiB as sent, or a gzip body whose report inflates past 256 MiB, is refused with a 413 in
 * the envelope before anything is recorded; a body of exactly the limit is accepted and processed.
 * The OpenAPI document states this server's limits.
 */
import { SELF, env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { projects, testRuns } from "../../src/db/schema";
import { INFLATED_LIMIT_BYTES, UPLOAD_LIMIT_BYTES } from "../../src/ingest/upload-body";
import { inflatedLimitOf, uploadLimitOf } from "../../src/worker";
import { type Harness, createHarness } from "./support/harness";

let h: Harness;
let limit: number;
beforeAll(async () => {
  h = await createHarness();
  limit = uploadLimitOf(env);
});
afterAll(() => h.close());

/** A valid JUnit document of exactly `bytes` bytes: two cases, then an XML comment as padding. */
function junitOfSize(bytes: number): Uint8Array {
  const head = `<testsuite name="limit"><testcase name="a"/><testcase name="b"/></testsuite>\n<!--`;
  const tail = "-->\n";
  return new TextEncoder().encode(head + "x".repeat(bytes - head.length - tail.length) + tail);
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
}

async function upload(token: string, body: Uint8Array, headers: Record<string, string> = {}) {
  const response = await SELF.fetch("http://worker.test/uploads/v1/test_runs", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/xml", ...headers },
    body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function runsCount(projectId: string): Promise<number | undefined> {
  return (await h.db.select({ count: projects.testRunsCount }).from(projects).where(eq(projects.id, projectId)))[0]?.count;
}

async function newProject() {
  const { organization } = await h.newOrganization();
  return h.newProject(organization.id);
}

describe("the Worker's upload limit", () => {
  it("is the interface's 32 MiB in wrangler.toml: the Worker processes every report the interface accepts", () => {
    expect(limit).toBe(UPLOAD_LIMIT_BYTES);
  });

  it("accepts and processes a body of exactly the limit", async () => {
    const { project, uploadToken } = await newProject();
    const accepted = await upload(uploadToken, junitOfSize(limit));
    expect(accepted.status).toBe(202);
    const run = async () =>
      (
        await h.db
          .select()
          .from(testRuns)
          .where(and(eq(testRuns.projectId, project.id), eq(testRuns.number, accepted.body.number)))
      )[0];
    // 32 MiB is read twice by the consumer (a first pass, then the parse): up to two minutes on a loaded machine.
    for (let i = 0; i < 2_400 && (await run())?.status === "pending"; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await run()).toMatchObject({ status: "processed", testsCount: 2 });
  });

  it("refuses a body one byte over the limit with a 413 that names it, and records nothing", async () => {
    const { project, uploadToken } = await newProject();
    const refused = await upload(uploadToken, junitOfSize(limit + 1));
    expect(refused.status).toBe(413);
    expect(refused.body.error.code).toBe("payload_too_large");
    expect(refused.body.error.message).toContain(`${limit} bytes`);
    expect(await runsCount(project.id)).toBe(0);
  });

  it("refuses a gzip body that inflates past the inflated limit (256 MiB), however small it is compressed", async () => {
    const { project, uploadToken } = await newProject();
    const inflated = inflatedLimitOf(env);
    expect(inflated).toBe(INFLATED_LIMIT_BYTES);
    // Members of 1 MiB of spaces one after another: 257 MiB once inflated, made without holding it inflated.
    const member = await gzip(new Uint8Array(1024 * 1024).fill(0x20));
    const members = inflated / (1024 * 1024) + 1;
    const compressed = new Uint8Array(member.byteLength * members);
    for (let i = 0; i < members; i++) compressed.set(member, i * member.byteLength);
    expect(compressed.byteLength).toBeLessThan(1024 * 1024);
    const refused = await upload(uploadToken, compressed, { "content-encoding": "gzip" });
    expect(refused.status).toBe(413);
    expect(refused.body.error.code).toBe("payload_too_large");
    expect(refused.body.error.message).toContain(`inflates to more than ${inflated} bytes (256 MiB)`);
    expect(await runsCount(project.id)).toBe(0);
  });

  it("is stated in the OpenAPI document's description of the upload", async () => {
    const document = (await (await SELF.fetch("http://worker.test/api/v1/openapi.json")).json()) as {
      paths: Record<string, { post?: { description?: string } }>;
    };
    expect(document.paths["/uploads/v1/test_runs"]?.post?.description).toContain(`${limit} bytes`);
    expect(document.paths["/uploads/v1/test_runs"]?.post?.description).toContain(
      `${INFLATED_LIMIT_BYTES} bytes (256 MiB) once a gzip body is inflated`,
    );
  });
});

describe("UPLOAD_LIMIT_BYTES", () => {
  it("is read as a whole number of bytes up to 32 MiB; unset or empty is 32 MiB", () => {
    expect(uploadLimitOf({})).toBe(UPLOAD_LIMIT_BYTES);
    expect(uploadLimitOf({ UPLOAD_LIMIT_BYTES: " " })).toBe(UPLOAD_LIMIT_BYTES);
    expect(uploadLimitOf({ UPLOAD_LIMIT_BYTES: "4194304" })).toBe(4_194_304);
    expect(uploadLimitOf({ UPLOAD_LIMIT_BYTES: String(UPLOAD_LIMIT_BYTES) })).toBe(UPLOAD_LIMIT_BYTES);
  });

  it("refuses anything else, so a typo cannot lift the limit", () => {
    for (const value of ["4 MiB", "4e6", "-1", "1.5", "1000", String(UPLOAD_LIMIT_BYTES + 1)]) {
      expect(() => uploadLimitOf({ UPLOAD_LIMIT_BYTES: value }), value).toThrow(/UPLOAD_LIMIT_BYTES/);
    }
  });
});

describe("INFLATED_LIMIT_BYTES", () => {
  it("is read as a whole number of bytes up to 256 MiB; unset or empty is 256 MiB", () => {
    expect(inflatedLimitOf({})).toBe(INFLATED_LIMIT_BYTES);
    expect(inflatedLimitOf({ INFLATED_LIMIT_BYTES: "" })).toBe(INFLATED_LIMIT_BYTES);
    expect(inflatedLimitOf({ INFLATED_LIMIT_BYTES: "67108864" })).toBe(64 * 1024 * 1024);
    for (const value of ["256 MiB", "1e9", String(INFLATED_LIMIT_BYTES + 1)]) {
      expect(() => inflatedLimitOf({ INFLATED_LIMIT_BYTES: value }), value).toThrow(/INFLATED_LIMIT_BYTES/);
    }
  });
});
