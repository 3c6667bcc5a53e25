/**
 * /uploads/v1: how test results come in. A project's upload token (not an API key) sends a JUnit
 * XML or JSON report; the run is recorded at once (202) and processed through the run queue.
 * Documented at /uploads/v1/openapi.json and in docs/uploads.md.
 *
 * Request-level problems (token, size, media type, encoding, metadata, malformed JSON) are
 * answered in the envelope and record nothing; problems with the report's content (malformed
 * XML, a DTD, too many cases…) fail the recorded run with a reason.
 */
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppConfig, AppEnv } from "../../app-env";
import { counterUnavailable } from "../../auth/key-gate";
import { ApiError, validationFailed } from "../../lib/errors";
import { admitBearer } from "../../middleware/auth";
import { limitBody } from "../../middleware/json-body";
import { RunMetadataSchema, UploadEnvelopeSchema, jsonDepth, suiteDepth } from "../../ingest/json-report";
import { REPORT_LIMITS } from "../../ingest/report";
import { UPLOAD_LIMIT_BYTES, charsetOf, decodeContentEncoding, decodeUploadText, uploadFormat } from "../../ingest/upload-body";
import { MAX_JSON_DEPTH } from "../../services/run-processing";
import { type UploadingProject, acceptUpload, findProjectByUploadToken, getUploadedRun, presentUploadedRun } from "../../services/uploads";
import type { RunMetadata } from "../../services/test-runs";
import { addMethodNotAllowed } from "../method-not-allowed";
import { documentConfig } from "../openapi-document";
import { errorResponses } from "../responses";
import { TestRunSchema } from "../schemas";

type UploadEnv = AppEnv & { Variables: { uploader: UploadingProject } };

const METADATA_KEYS = ["branch", "commit_sha", "build_id", "build_url", "tags", "started_at"] as const;

const UploadedRunSchema = TestRunSchema.extend({
  api_url: z.string().url().openapi({ description: "The run in /api/v1 (read it with an API key)." }),
}).openapi("UploadedTestRun");

const metadataQueryParameters = [
  { name: "branch", description: "Branch the tests ran on." },
  { name: "commit_sha", description: "Commit under test." },
  { name: "build_id", description: "The CI system's build or job identifier." },
  { name: "build_url", description: "Link to the CI build (http or https)." },
  { name: "tags", description: "Labels, comma-separated (`tags=linux,unit`) or repeated (`tags=linux&tags=unit`)." },
  { name: "started_at", description: "When the tests started, RFC 3339 with a time zone." },
].map(({ name, description }) => ({ name, in: "query" as const, required: false, description, schema: { type: "string" as const } }));

/** Metadata from the query string; `tags` may repeat and be comma-separated. Empty values are absent. */
function metadataFromQuery(query: Record<string, string[]>): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  for (const key of METADATA_KEYS) {
    const values = query[key];
    if (!values?.length) continue;
    if (key === "tags") metadata.tags = values.flatMap((value) => value.split(",")).map((tag) => tag.trim()).filter((tag) => tag !== "");
    else metadata[key] = values.at(-1);
  }
  return metadata;
}

/** `Idempotency-Key`: 1–255 visible ASCII characters, or absent. */
function idempotencyKeyOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  const key = header.trim();
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw validationFailed([{ field: "Idempotency-Key", message: "must be 1 to 255 visible ASCII characters" }]);
  }
  return key;
}

function detailsOf(issues: { path: PropertyKey[]; message: string }[]) {
  return issues.map((issue) => ({ field: issue.path.map(String).join(".") || "body", message: issue.message }));
}

function toRunMetadata(input: Record<string, unknown>): RunMetadata {
  const parsed = RunMetadataSchema.safeParse(input);
  if (!parsed.success) throw validationFailed(detailsOf(parsed.error.issues));
  const data = parsed.data;
  return {
    branch: data.branch ?? null,
    commitSha: data.commit_sha ?? null,
    buildId: data.build_id ?? null,
    buildUrl: data.build_url ?? null,
    tags: [...new Set(data.tags ?? [])],
    startedAt: data.started_at ? new Date(data.started_at) : null,
  };
}

/** The JSON envelope's metadata (which wins over the query string); a 400/422 for a body that cannot be a report. */
function metadataFromJsonBody(text: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid JSON.");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new ApiError("invalid_request", "The request body must be a JSON object.");
  if (jsonDepth(body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw validationFailed([{ field: "suites", message: "is nested too deeply (suites nest at most 64 levels)" }]);
  }
  const parsed = UploadEnvelopeSchema.safeParse(body);
  if (!parsed.success) throw validationFailed(detailsOf(parsed.error.issues));
  if (suiteDepth(parsed.data.suites) > REPORT_LIMITS.maxDepth) {
    throw validationFailed([{ field: "suites", message: `is nested too deeply (suites nest at most ${REPORT_LIMITS.maxDepth} levels)` }]);
  }
  const metadata: Record<string, unknown> = {};
  for (const key of METADATA_KEYS) {
    if (Object.hasOwn(body, key) && (body as Record<string, unknown>)[key] !== undefined) metadata[key] = (body as Record<string, unknown>)[key];
  }
  return metadata;
}

const tokenSecurity = [{ uploadToken: [] }];
const json = (schema: unknown, description: string) => ({ description, content: { "application/json": { schema } } });

const UPLOADS_TAG = { name: "Uploads", description: "Test reports in, test runs out (outside /api/v1: authenticated with a project's upload token)." };

function uploadsDocumentConfig(origin: string) {
  return documentConfig({
    title: "CI test analytics uploads API",
    description:
      "How test results come in: JUnit XML or JSON, authenticated with a project's upload token. Runs are then readable in /api/v1 (`/api/v1/openapi.json`, which also lists these operations). The uploader CLI (`npx ci-test-analytics upload`) wraps this endpoint.",
    serverUrl: `${origin}/uploads/v1`,
    tags: [UPLOADS_TAG],
  });
}

type OpenApi31Document = ReturnType<OpenAPIHono["getOpenAPI31Document"]>;
type Components = NonNullable<OpenApi31Document["components"]>;
export type UploadsDocumentPart = {
  paths: NonNullable<OpenApi31Document["paths"]>;
  schemas: NonNullable<Components["schemas"]>;
  securitySchemes: NonNullable<Components["securitySchemes"]>;
  tag: typeof UPLOADS_TAG;
};

/**
 * The upload operations as they appear in the /api/v1 document: under their full paths
 * (`/uploads/v1/…`), each path carrying its own server (the origin) since the document's server is
 * `/api/v1`, with the schemas and the `uploadToken` scheme they use.
 */
export function uploadsDocumentPart(uploadsApi: OpenAPIHono<UploadEnv>, origin: string): UploadsDocumentPart {
  const document = uploadsApi.getOpenAPI31Document(uploadsDocumentConfig(origin));
  const paths: UploadsDocumentPart["paths"] = {};
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    paths[`/uploads/v1${path}`] = { servers: [{ url: origin, description: "This server (uploads are outside /api/v1)" }], ...item };
  }
  return {
    paths,
    schemas: document.components?.schemas ?? {},
    securitySchemes: document.components?.securitySchemes ?? {},
    tag: UPLOADS_TAG,
  };
}

export function createUploadsApi(config: AppConfig) {
  const api = new OpenAPIHono<UploadEnv>();

  api.openAPIRegistry.registerComponent("securitySchemes", "uploadToken", {
    type: "http",
    scheme: "bearer",
    description: "The project's upload token: `Authorization: Bearer ctu_…` (not an API key).",
  });
  api.openAPIRegistry.registerPath({
    method: "post",
    path: "/test_runs",
    operationId: "uploadTestRun",
    tags: ["Uploads"],
    summary: "Upload a test report; it becomes a test run",
    description: [
      "The run is recorded at once (it counts in the project's `test_runs_count` and sets `last_test_run_at`) and processed in the background: `status` goes from `pending` to `processed`, or to `failed` with a `failure_reason` when the report cannot be read (malformed XML, a DTD, more than 200,000 cases…). Poll `GET /uploads/v1/test_runs/{number}`.",
      "Body: JUnit XML (`application/xml` or `text/xml`) with metadata in the query string, or the JSON envelope (`application/json`) carrying metadata and either `junit_xml` or `suites`; envelope metadata wins over the query string. `Content-Encoding: gzip` is accepted.",
      "Retries: send an `Idempotency-Key` header (e.g. a UUID, the same on every retry of one upload). If a run of this project already has that key, nothing new is recorded and that run is returned, with `Idempotent-Replayed: true`; the first upload's report wins.",
      `Limits: ${UPLOAD_LIMIT_BYTES} bytes (32 MiB) per body, compressed or decompressed (413, also for chunked bodies); 600 uploads per rolling 60 seconds per project (429). Details: docs/uploads.md.`,
    ].join("\n\n"),
    security: tokenSecurity,
    request: {
      params: undefined,
      body: {
        required: true,
        content: {
          "application/json": { schema: UploadEnvelopeSchema },
          "application/xml": { schema: { type: "string", description: "A JUnit XML document." } },
          "text/xml": { schema: { type: "string", description: "A JUnit XML document." } },
        },
      },
    },
    parameters: [
      ...metadataQueryParameters,
      { name: "Idempotency-Key", in: "header", required: false, description: "Makes retries safe: one run per key and project.", schema: { type: "string", maxLength: 255 } },
    ],
    responses: {
      202: {
        description: "The run was recorded and queued; `Location` points at it in /api/v1.",
        headers: {
          Location: { description: "The run in /api/v1.", schema: { type: "string" } },
          "Idempotent-Replayed": { description: "`true` when an earlier upload with the same Idempotency-Key is returned.", schema: { type: "string" } },
        },
        content: { "application/json": { schema: UploadedRunSchema } },
      },
      ...errorResponses(400, 401, 413, 422, 429, 500, 503),
      415: json(errorResponses(400)[400].content["application/json"].schema, "unsupported_media_type: the Content-Type, Content-Encoding or XML encoding is not accepted."),
    },
  } as never);
  api.openAPIRegistry.registerPath({
    method: "get",
    path: "/test_runs/{number}",
    operationId: "getUploadedTestRun",
    tags: ["Uploads"],
    summary: "Get a run of the token's project (to follow its processing)",
    security: tokenSecurity,
    parameters: [{ name: "number", in: "path", required: true, schema: { type: "integer", minimum: 1 }, description: "The run's number in its project." }],
    responses: { 200: json(UploadedRunSchema, "The run."), ...errorResponses(401, 404, 429, 500) },
  } as never);

  api.doc31("/openapi.json", (c) => uploadsDocumentConfig(new URL(c.req.url).origin));

  // Authentication, then the rate limit, then the body (so a stranger's large body is refused unread).
  api.use(
    "*",
    admitBearer<UploadEnv>({
      name: "upload token",
      invalidMessage: "Invalid upload token: it is malformed, unknown or has been replaced.",
      limitMessage: (d) => `Upload limit of ${d.limit} per ${d.windowSeconds} seconds reached; retry after ${d.retryAfterSeconds} seconds.`,
      admit: async (c, token) => {
        const uploader = await findProjectByUploadToken(c.env.db, token);
        if (!uploader) return null;
        let admission;
        try {
          admission = await c.env.uploadCounter.admit(uploader.projectId, { organizationId: uploader.organizationId });
        } catch (error) {
          throw counterUnavailable(error);
        }
        if (admission.status !== "admitted") return null;
        c.set("uploader", uploader);
        return admission.decision;
      },
    }),
  );

  api.post("/test_runs", limitBody(UPLOAD_LIMIT_BYTES), async (c) => {
    const contentType = c.req.header("content-type");
    const format = uploadFormat(contentType);
    const received = new Uint8Array(await c.req.arrayBuffer());
    const bytes = await decodeContentEncoding(received, c.req.header("content-encoding"));
    if (bytes.byteLength === 0) throw new ApiError("invalid_request", "The request body is empty: send a JUnit XML document or a JSON report.");
    // Postgres text cannot hold NUL: in XML it becomes U+FFFD before storage, as the parser would make it (junit.ts).
    const text = decodeUploadText(bytes, format, charsetOf(contentType));
    const content = format === "junit_xml" ? text.replaceAll("\u0000", "\uFFFD") : text;

    let metadataInput = metadataFromQuery(c.req.queries());
    if (format === "json") metadataInput = { ...metadataInput, ...metadataFromJsonBody(content) };
    const metadata = { ...toRunMetadata(metadataInput), idempotencyKey: idempotencyKeyOf(c.req.header("idempotency-key")) };

    const { db, clock, runQueue, logger } = c.env;
    const { run, replayed } = await acceptUpload({ db, clock, runQueue, logger }, c.get("uploader"), metadata, { format, content });
    const body = presentUploadedRun(run, config.webAppUrl, new URL(c.req.url).origin);
    c.header("Location", body.api_url);
    if (replayed) c.header("Idempotent-Replayed", "true");
    return c.json(body, 202);
  });

  api.get("/test_runs/:number", async (c) => {
    const run = await getUploadedRun(c.env.db, c.get("uploader"), c.req.param("number"));
    return c.json(presentUploadedRun(run, config.webAppUrl, new URL(c.req.url).origin), 200);
  });

  addMethodNotAllowed(api);
  return api;
}
