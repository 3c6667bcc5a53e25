/**
 * /uploads/v1: how test results come in. A project's upload token (not an API key) sends a JUnit
 * XML or JSON report; the run is recorded at once (202) and processed through the run queue.
 * Documented at /uploads/v1/openapi.json and in docs/uploads.md.
 *
 * Request-level problems (token, size, media type, encoding, metadata, malformed JSON) are
 * answered in the envelope and record nothing; problems with the report's content (malformed
 * XML, a DTD, too many cases…) fail the recorded run with a reason. With the same token, CI reads
 * the quarantined tests (docs/quarantine.md), sends the repository's CODEOWNERS
 * (docs/codeowners.md) and reads its own runs' comparisons with their bases (docs/verdicts.md,
 * for the uploader's merge gate and pull request comment).
 */
import { askCompletion } from "../../services/runs/run-parts";
import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppConfig } from "../../app-env";
import { counterAdmit } from "../../auth/key-gate";
import { pageBody, readListRequest } from "../../lib/lists";
import { CursorCodec } from "../../lib/pagination";
import { UploadEnvelopeSchema } from "../../ingest/json-report";
import {
  INFLATED_LIMIT_BYTES,
  UPLOAD_LIMIT_BYTES,
  type UploadLimits,
  bodyCompression,
  describeByteLimit,
  readCodeownersText,
  tooLarge,
  uploadFormat,
} from "../../ingest/upload-body";
import { streamUploadToStore } from "../../ingest/streamed-upload";
import type { PayloadStore } from "../../ingest/payload-store";
import type { Database } from "../../db/types";
import { DatabasePayloadStore } from "../../services/runs/database-payload-store";
import { METADATA_KEYS, readUploadRequest } from "../../ingest/upload-request";
import { CODEOWNERS_LIMIT_BYTES } from "../../lib/codeowners";
import { admitBearer } from "../../middleware/auth";
import { limitBody } from "../../middleware/json-body";
import { MAX_IGNORED_LINES_LISTED, putCodeowners } from "../../services/tests/codeowners";
import { MAX_QUARANTINED_TESTS, listQuarantinedTests, quarantineListTag } from "../../services/tests/quarantine";
import { ifNoneMatchNames } from "../../lib/entity-tags";
import {
  MAX_RUN_FAILED_TESTS,
  acceptUpload,
  findProjectByUploadToken,
  findProjectCountingUpload,
  getUploadedRun,
  listRunFailedTests,
  presentUploadedRun,
} from "../../services/runs/uploads";
import { getRunComparison, listRunVerdicts, runVerdictList } from "../../services/runs/run-comparison-reads";
import type { OrgScope } from "../../services/shared/context";
import { addMethodNotAllowed } from "../method-not-allowed";
import { documentConfig, documentResponse, servedOnce } from "../openapi-document";
import { errorResponses } from "../responses";
import {
  QuarantinedTestsForCiSchema,
  RunComparisonSchema,
  RunFailedTestSchema,
  RunVerdictSchema,
  RunVerdictsQuerySchema,
  TestRunSchema,
  listDescription,
  listOf,
  variantFilter,
} from "../../contract/schemas";
import { validationHook } from "../validation";
import { registerSplitting } from "./splitting";
import type { UploadEnv } from "./upload-env";
import { resolveQuotas } from "../../lib/quotas";
import { tellEdgeCache } from "../../middleware/edge-admission";

/** Whether the Content-Type names a report format (JUnit XML or JSON); another type is a 415, answered by readUploadRequest. */
function isReportUpload(contentType: string | undefined): boolean {
  try {
    uploadFormat(contentType);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where a report upload streams to, or null when it is read whole: the runtime's payload store
 * (the Worker's R2) for every report; without one, when the server takes gzip reports larger
 * once inflated than a body (`inflates`: Node on a Postgres server), the database's store
 * (src/services/runs/database-payload-store.ts) for a gzip body, which is then never held whole.
 * An unknown Content-Encoding is read whole, to be answered its 415.
 */
function reportStoreOf(
  env: { db: Database; payloadStore?: PayloadStore },
  contentType: string | undefined,
  contentEncoding: string | undefined,
  inflates: boolean,
): PayloadStore | null {
  if (!isReportUpload(contentType)) return null;
  if (env.payloadStore) return env.payloadStore;
  if (!inflates) return null;
  try {
    return bodyCompression(contentEncoding) === "gzip" ? new DatabasePayloadStore(env.db) : null;
  } catch {
    return null;
  }
}

const UploadedRunSchema = TestRunSchema.extend({
  api_url: z.string().url().openapi({ description: "The run in /api/v1 (read it with an API key)." }),
}).openapi("UploadedTestRun");

const METADATA_DESCRIPTIONS: Record<(typeof METADATA_KEYS)[number], string> = {
  branch: "Branch the tests ran on.",
  commit_sha: "Commit under test.",
  base_commit_sha:
    "The commit this run is compared with (its default-branch run is the base, docs/verdicts.md): 7 to 64 hexadecimal characters.",
  build_id: "The CI system's build or job identifier.",
  build_url: "Link to the CI build (http or https).",
  tags: "Labels, comma-separated (`tags=linux,unit`) or repeated (`tags=linux&tags=unit`).",
  started_at: "When the tests started, RFC 3339 with a time zone.",
  run_key: 'Uploads with the same run key join one run as its parts (docs/uploads.md, "Runs in parts"), e.g. the CI\'s run id and job.',
  retry:
    "`true`: a re-run of failed tests of the run named by run_key; its cases become further attempts of the run's tests, even after it completed. Needs run_key.",
  variant:
    'The configuration the tests ran in, e.g. `os=windows,node=22` (at most 100 characters once normalized): part of each test\'s identity (docs/tests.md, "Variants"); a run key names one run per variant.',
  shard: "This part's shard, `I/N` (1-based, e.g. `2/4`; N ≤ 1000): the run completes when N shards have arrived. Needs run_key.",
};

/**
 * The metadata query parameters, as documented. They are read (and validated once, together
 * with the JSON envelope's metadata) by readUploadRequest; a repeated parameter is allowed, and
 * for all but `tags` the last one counts.
 */
const UploadQuerySchema = z.object(
  Object.fromEntries(
    METADATA_KEYS.map((name) => [
      name,
      z
        .union([z.string(), z.array(z.string())])
        .optional()
        .openapi({ param: { name, in: "query" }, description: METADATA_DESCRIPTIONS[name], type: "string" } as object),
    ]),
  ),
);

const UploadHeadersSchema = z.object({
  // Hono reads headers in lower case; the document names it as clients write it.
  "Idempotency-Key": z
    .string()
    .optional()
    .openapi({
      description: "Makes retries safe: one run per key and project (1 to 255 visible ASCII characters).",
      maxLength: 255,
    } as object),
});

/** The run as GET /uploads/v1/test_runs/{number} answers it: with `failed_tests` when asked for. */
const UploadedRunWithFailuresSchema = UploadedRunSchema.extend({
  failed_tests: z
    .array(RunFailedTestSchema)
    .nullable()
    .optional()
    .openapi({
      description: `Only with \`include=failed_tests\`: the failed and errored cases of the processed run, in report order (at most ${MAX_RUN_FAILED_TESTS.toLocaleString("en-US")}; fewer than \`failed_count + errored_count\` means the list was cut), each with its test's id and page. Null while the run is pending or when its processing failed.`,
    }),
}).openapi("UploadedTestRunWithFailures");

const UploadedRunQuerySchema = z.object({
  include: z
    .enum(["failed_tests"], { error: "must be failed_tests" })
    .optional()
    .openapi({
      param: { name: "include", in: "query" },
      description: "`failed_tests` adds the run's failed and errored tests (`failed_tests`), for the uploader's summary.",
    }),
});

const RunNumberParams = z.object({
  number: z.string().openapi({
    param: { name: "number", in: "path" },
    type: "integer",
    minimum: 1,
    description: "The run's number in its project.",
  } as object),
});

const tokenSecurity = [{ uploadToken: [] }];
const json = <T>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });

const UPLOADS_TAG = {
  name: "Uploads",
  description:
    "Test reports and the CODEOWNERS file in; test runs, the quarantined tests, the timings and split plans out (outside /api/v1: authenticated with a project's upload token).",
};

function uploadsDocumentConfig(publicBaseUrl: string) {
  return documentConfig({
    title: "CI test analytics uploads API",
    description:
      "How test results come in: JUnit XML or JSON, authenticated with a project's upload token. Runs are then readable in /api/v1 (`/api/v1/openapi.json`, which also lists these operations). The uploader CLI (`ci-test-analytics upload`, packages/uploader and action.yml in the repository) wraps these endpoints.",
    serverUrl: `${publicBaseUrl}/uploads/v1`,
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
 * (`/uploads/v1/…`), each path carrying its own server (the public base URL) since the document's
 * server is `/api/v1`, with the schemas and the `uploadToken` scheme they use.
 */
export function uploadsDocumentPart(uploadsApi: OpenAPIHono<UploadEnv>, publicBaseUrl: string): UploadsDocumentPart {
  const document = uploadsApi.getOpenAPI31Document(uploadsDocumentConfig(publicBaseUrl));
  const paths: UploadsDocumentPart["paths"] = {};
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    paths[`/uploads/v1${path}`] = { servers: [{ url: publicBaseUrl, description: "This server (uploads are outside /api/v1)" }], ...item };
  }
  return {
    paths,
    schemas: document.components?.schemas ?? {},
    securitySchemes: document.components?.securitySchemes ?? {},
    tag: UPLOADS_TAG,
  };
}

/** The upload operation, described with this server's limits (the Worker's body limit may be below the interface's 32 MiB). */
const uploadTestRunRoute = ({ body: limit, inflated }: UploadLimits) =>
  createRoute({
    method: "post",
    path: "/test_runs",
    operationId: "uploadTestRun",
    tags: ["Uploads"],
    summary: "Upload a test report; it becomes a test run",
    description: [
      "The run is recorded at once (it counts in the project's `test_runs_count` and sets `last_test_run_at`) and processed in the background: `status` goes from `pending` to `processed`, or to `failed` with a `failure_reason` when the report cannot be read (malformed XML, a DTD, more than 500,000 cases…). Poll `GET /uploads/v1/test_runs/{number}`.",
      "Body: JUnit XML (`application/xml` or `text/xml`) with metadata in the query string, or the JSON envelope (`application/json`) carrying metadata and either `junit_xml` or `suites`; envelope metadata wins over the query string. `Content-Encoding: gzip` is accepted.",
      "Retries: send an `Idempotency-Key` header (e.g. a UUID, the same on every retry of one upload). If a run of this project already has that key, nothing new is recorded and that run is returned, with `Idempotent-Replayed: true`; the first upload's report wins.",
      `Limits: ${describeByteLimit(limit)} per body as sent on this server, compressed or not${limit < UPLOAD_LIMIT_BYTES ? ` (below the interface's ${describeByteLimit(UPLOAD_LIMIT_BYTES)})` : ""}, and ${describeByteLimit(inflated)} once a gzip body is inflated${inflated < INFLATED_LIMIT_BYTES ? ` (the interface's ${describeByteLimit(INFLATED_LIMIT_BYTES)}, what a report of 500,000 cases sent gzip-compressed needs, is taken by the Worker and by Node on a Postgres server)` : ": a report of 500,000 cases is sent gzip-compressed"} (413 \`payload_too_large\` past either, also for chunked bodies); 600 uploads per rolling 60 seconds per project, and QUOTA_UPLOADS_PER_HOUR per organization and hour (default 10,000; docs/quotas.md): 429 \`rate_limited\` with \`Retry-After\`. Details: docs/uploads.md.`,
      "Stored cases: an organization stores at most QUOTA_STORED_CASES test cases, all its projects' runs together (default 50,000,000; docs/quotas.md). An upload is accepted while the organization stores fewer (so the run that crosses the quota is stored whole); at or over it, every upload is a 429 `quota_exceeded` without `Retry-After`, checked before the body is read. Waiting frees nothing: do not retry, ask the operator.",
    ].join("\n\n"),
    security: tokenSecurity,
    request: {
      query: UploadQuerySchema,
      headers: UploadHeadersSchema,
      body: {
        required: true,
        // Described here, read by readUploadRequest: the body may be gzip-compressed or in another
        // charset, which a JSON validator on the raw body could not read.
        content: {
          "application/json": { schema: { $ref: "#/components/schemas/UploadEnvelope" } },
          "application/xml": { schema: { type: "string", description: "A JUnit XML document." } },
          "text/xml": { schema: { type: "string", description: "A JUnit XML document." } },
        },
      },
    },
    responses: {
      202: {
        description: "The run was recorded and queued; `Location` points at it in /api/v1.",
        headers: {
          Location: { description: "The run in /api/v1.", schema: { type: "string" } },
          "Idempotent-Replayed": {
            description: "`true` when an earlier upload with the same Idempotency-Key is returned.",
            schema: { type: "string" },
          },
        },
        content: { "application/json": { schema: UploadedRunSchema } },
      },
      ...errorResponses(400, 401, 413, 422, 429, 500, 503),
      415: json(
        errorResponses(400)[400].content["application/json"].schema,
        "unsupported_media_type: the Content-Type, Content-Encoding or XML encoding is not accepted.",
      ),
      429: {
        ...errorResponses(429)[429],
        description:
          "rate_limited: the project's 600 uploads a minute or the organization's QUOTA_UPLOADS_PER_HOUR are used; wait Retry-After seconds. quota_exceeded: the organization stores QUOTA_STORED_CASES test cases or more (docs/quotas.md); no Retry-After, since waiting frees nothing: do not retry.",
      },
    },
  });

const getUploadedTestRunRoute = createRoute({
  method: "get",
  path: "/test_runs/{number}",
  operationId: "getUploadedTestRun",
  tags: ["Uploads"],
  summary: "Get a run of the token's project (to follow its processing)",
  security: tokenSecurity,
  request: { params: RunNumberParams, query: UploadedRunQuerySchema },
  responses: { 200: json(UploadedRunWithFailuresSchema, "The run."), ...errorResponses(400, 401, 404, 429, 500, 503) },
});

const completeUploadedTestRunRoute = createRoute({
  method: "post",
  path: "/test_runs/{number}/complete",
  operationId: "completeUploadedTestRun",
  tags: ["Uploads"],
  summary: 'Say that every part of a run in parts is in: it completes now (docs/uploads.md, "Runs in parts")',
  description:
    "For a run uploaded in parts (`run_key`) that declared no shard count, or to end it before its quiet period: no part but a retry is accepted after this (409 `run_completed`), and the run is stored once the parts that arrived are read. Asking again is harmless (202). A run of one upload is a 409 `run_completed`.",
  security: tokenSecurity,
  request: { params: RunNumberParams },
  responses: { 202: json(UploadedRunSchema, "The run, its completion decided."), ...errorResponses(401, 404, 409, 429, 500, 503) },
});

/** POST /test_runs/:number/complete: a run in parts' completion, asked for by the uploader. */
function registerCompletion(api: OpenAPIHono<UploadEnv>, config: AppConfig): void {
  api.openapi(completeUploadedTestRunRoute, async (c) => {
    const { db, clock, runQueue } = c.env;
    const run = await getUploadedRun(db, c.get("uploader"), c.req.valid("param").number);
    const completed = await askCompletion({ db, clock, queue: runQueue }, run);
    return c.json(presentUploadedRun(completed, config.webAppUrl, config.publicBaseUrl), 202);
  });
}

const NOT_PROCESSED =
  "The same answer as the /api/v1 operation of the same name, for a run of the token's project only (the uploader's `--wait`, `--fail-on new` and `--pr-comment` read it; docs/verdicts.md). A run not processed yet, or whose processing failed, is a 409 `run_not_processed`; a run processed before comparisons existed has none: 404.";

const getUploadedRunComparisonRoute = createRoute({
  method: "get",
  path: "/test_runs/{number}/comparison",
  operationId: "getUploadedTestRunComparison",
  tags: ["Uploads"],
  summary: "A run of the token's project compared with its base: counts per verdict, the base, the fixed count",
  description: NOT_PROCESSED,
  security: tokenSecurity,
  request: { params: RunNumberParams },
  responses: { 200: json(RunComparisonSchema, "The comparison."), ...errorResponses(401, 404, 409, 429, 500, 503) },
});

const listUploadedRunVerdictsRoute = createRoute({
  method: "get",
  path: "/test_runs/{number}/comparison/failures",
  operationId: "listUploadedTestRunComparisonFailures",
  tags: ["Uploads"],
  summary: "A run of the token's project: its failing tests with their verdicts, by descending case id",
  description: listDescription(`Cursor-paginated like every list. ${NOT_PROCESSED}`),
  security: tokenSecurity,
  request: { params: RunNumberParams, query: RunVerdictsQuerySchema },
  responses: {
    200: json(listOf(RunVerdictSchema, "RunVerdictList"), "A page of failures."),
    ...errorResponses(400, 401, 404, 409, 429, 500, 503),
  },
});

const listQuarantinedTestsRoute = createRoute({
  method: "get",
  path: "/quarantined_tests",
  operationId: "listQuarantinedTests",
  tags: ["Uploads"],
  summary: "The token's project's quarantined tests, for CI",
  description: [
    "The quarantines in force now for one variant (`variant`; docs/quarantine.md): CI matches its failing tests against them (by `classname` and `name`, or `file` and `name` when there is no classname) and need not fail the build for those. Not paginated: a project holds at most 10,000 quarantines in force (quarantining one more is refused), so this is always the whole list, ordered by classname, name and test id.",
    "Conditional requests: the response carries an `ETag` that changes whenever the list does, a quarantine ending by itself included. Send it back in `If-None-Match`: while the list is unchanged the answer is a 304 with the `ETag` and no body, which costs one small query.",
  ].join("\n\n"),
  security: tokenSecurity,
  request: {
    query: z.object({
      variant: variantFilter(
        'The variant whose quarantines CI needs (docs/tests.md, "Variants"), normalized as uploads are; absent or empty: the variant of runs without one. Quarantines that name every variant are in every list.',
      ),
    }),
    headers: z.object({
      "If-None-Match": z.string().optional().openapi({ description: "The `ETag` of the list you hold." }),
    }),
  },
  responses: {
    200: {
      description: `The quarantines in force (at most ${MAX_QUARANTINED_TESTS}).`,
      headers: { ETag: { description: "Names this version of the list.", schema: { type: "string" } } },
      content: { "application/json": { schema: QuarantinedTestsForCiSchema } },
    },
    304: {
      description: "The list is unchanged since the `If-None-Match` tag: no body.",
      headers: { ETag: { description: "The list's current tag (the one sent).", schema: { type: "string" } } },
    },
    ...errorResponses(400, 401, 429, 500, 503),
  },
});

const CodeownersUploadSchema = z
  .object({
    rules_count: z
      .number()
      .int()
      .openapi({ description: "Rules read from the file (lines with a pattern GitHub applies, with or without owners)." }),
    ignored_lines: z
      .array(
        z.object({
          line: z.number().int().openapi({ description: "Line number, from 1." }),
          reason: z.string().openapi({
            description:
              "Why GitHub would not apply the line (negation, a character range, an escaped `#`, an owner that is not `@user`, `@org/team` or an e-mail address…), or why the service does not (more than 200 patterns that must be tried one by one, docs/codeowners.md).",
          }),
        }),
      )
      .openapi({
        description: `Lines that are neither blank, comments nor rules: they match nothing. The first ${MAX_IGNORED_LINES_LISTED}.`,
      }),
    ignored_lines_count: z.number().int().openapi({ description: "All ignored lines." }),
    changed: z.boolean().openapi({ description: "False when the file is the one already stored: nothing was recomputed." }),
    tests_count: z.number().int().openapi({ description: "The project's tests." }),
    tests_with_owners_count: z.number().int().openapi({ description: "Those with at least one owner under this file." }),
    files_over_budget_count: z.number().int().openapi({
      description:
        "Test files whose matching ran out of its step budget (docs/codeowners.md, bounded work): they keep the latest rule found before. 0 for any real file; 0 when `changed` is false.",
    }),
    updated_at: z.string().datetime().openapi({ description: "When the stored CODEOWNERS last changed." }),
  })
  .openapi("CodeownersUpload");

const putCodeownersRoute = createRoute({
  method: "put",
  path: "/codeowners",
  operationId: "putCodeowners",
  tags: ["Uploads"],
  summary: "Store the token's project's CODEOWNERS; its tests' owners follow it",
  description: [
    "The body is the repository's CODEOWNERS file as it is (`.github/CODEOWNERS`, else `CODEOWNERS`, else `docs/CODEOWNERS`), as `text/plain` in UTF-8. It replaces the project's previous one, and every test's `owners` is recomputed from it at once (tests stored later get theirs when first seen).",
    "GitHub's rules: gitignore-style patterns matched case-sensitively against the test's `file` (backslashes read as `/`, a leading `./` dropped); the last matching rule gives the owners, and a matching rule without owners gives none; `#` starts a comment. Lines GitHub does not apply (`!` negation, `[ ]` ranges, an escaped leading `#`, owners that are not `@user`, `@org/team` or e-mail addresses) are reported in `ignored_lines` and match nothing. Details: docs/codeowners.md.",
    `Limits: ${CODEOWNERS_LIMIT_BYTES} bytes (3 MiB; GitHub ignores larger files), 413 beyond. Another Content-Type, a charset other than UTF-8 or a Content-Encoding is a 415; bytes that are not UTF-8, or NUL characters, a 400.`,
  ].join("\n\n"),
  security: tokenSecurity,
  request: {
    body: {
      required: true,
      // Read by readCodeownersText (the media type is checked there, as for reports).
      content: {
        "text/plain": {
          schema: { type: "string", description: "A CODEOWNERS file.", example: "* @acme/core\n/services/checkout/ @acme/checkout\n" },
        },
      },
    },
  },
  responses: {
    200: json(CodeownersUploadSchema, "Stored (or unchanged), with what was read and how many tests have owners now."),
    ...errorResponses(400, 401, 413, 429, 500, 503),
    415: json(
      errorResponses(400)[400].content["application/json"].schema,
      "unsupported_media_type: the Content-Type is not text/plain, its charset is not UTF-8, or a Content-Encoding was sent.",
    ),
  },
});

/** The comparison reads of /api/v1 (docs/verdicts.md), scoped to the token's project and its organization. */
function registerComparisonReads(api: OpenAPIHono<UploadEnv>, config: AppConfig): void {
  const codec = new CursorCodec(config.cursorSecret);
  const scopeOf = (c: Context<UploadEnv>): OrgScope => {
    const { db, clock } = c.env;
    return { db, clock, webAppUrl: config.webAppUrl, organizationId: c.get("uploader").organizationId };
  };
  api.openapi(getUploadedRunComparisonRoute, async (c) => {
    const { projectId } = c.get("uploader");
    return c.json(await getRunComparison(scopeOf(c), projectId, c.req.valid("param").number), 200);
  });
  api.openapi(listUploadedRunVerdictsRoute, async (c) => {
    const scope = scopeOf(c);
    const query = c.req.valid("query");
    const filters = { project_id: c.get("uploader").projectId, run: c.req.valid("param").number, verdict: query.verdict ?? null };
    const request = readListRequest(codec, runVerdictList, { organizationId: scope.organizationId, filters }, query);
    return c.json(pageBody(codec, runVerdictList, request, await listRunVerdicts(scope, request)), 200);
  });
}

/** The quarantine list CI reads (docs/quarantine.md), with its ETag. */
function registerQuarantineList(api: OpenAPIHono<UploadEnv>): void {
  api.openapi(listQuarantinedTestsRoute, async (c) => {
    const { db, clock } = c.env;
    const { projectId } = c.get("uploader");
    const now = clock.now();
    // The tag is read before the list: a quarantine changed in between gives a list newer than its
    // tag, which only costs the client one more full read, never a stale list kept as current.
    const variant = c.req.valid("query").variant ?? "";
    const etag = await quarantineListTag(db, projectId, now, variant);
    // May be stored by the client, but must be revalidated (the app sets no-store elsewhere).
    const headers = { ETag: etag, "Cache-Control": "private, no-cache" };
    if (ifNoneMatchNames(c.req.header("if-none-match"), etag)) return c.body(null, 304, headers);
    const data = await listQuarantinedTests(db, projectId, now, variant);
    // The edge serves this list until its first quarantine ends, never at or after that moment (docs/edge-path.md).
    for (const test of data) c.env.edgeCache?.expires(new Date(test.expires_at).getTime());
    return c.json({ data }, 200, headers);
  });
}

export function createUploadsApi(config: AppConfig) {
  const api = new OpenAPIHono<UploadEnv>({ defaultHook: validationHook });

  api.openAPIRegistry.registerComponent("securitySchemes", "uploadToken", {
    type: "http",
    scheme: "bearer",
    description: "The project's upload token: `Authorization: Bearer ctu_…` (not an API key).",
  });
  api.openAPIRegistry.register("UploadEnvelope", UploadEnvelopeSchema);

  // Public, before authentication; built at its first request, then served from memory with its ETag.
  const served = servedOnce(() => api.getOpenAPI31Document(uploadsDocumentConfig(config.publicBaseUrl)));
  api.get("/openapi.json", (c) => documentResponse(c, served()));

  const quotas = resolveQuotas(config.quotas);
  /** A report's upload (POST /test_runs): what the hourly quota counts; reads and CODEOWNERS are not uploads of runs. */
  const isReportUploadRequest = (method: string, path: string) => method === "POST" && path.endsWith("/test_runs");
  // Authentication, then the rate limit, then the body (so a stranger's large body is refused unread).
  api.use(
    "*",
    admitBearer<UploadEnv>({
      name: "upload token",
      invalidMessage: "Invalid upload token: it is malformed, unknown or has been replaced.",
      limitMessage: (d) => `Upload limit of ${d.limit} per ${d.windowSeconds} seconds reached; retry after ${d.retryAfterSeconds} seconds.`,
      admit: async (c, token) => {
        // A report's upload is checked against its organization's stored cases and counted in its hourly quota by the
        // same statement that finds its project: refused before its body is read, at no round trip of its own.
        const uploader = isReportUploadRequest(c.req.method, c.req.path)
          ? await findProjectCountingUpload({ db: c.env.db, clock: c.env.clock }, token, quotas)
          : await findProjectByUploadToken(c.env.db, token);
        if (!uploader) return null;
        const admission = await counterAdmit(c.env.uploadCounter, uploader.projectId, { organizationId: uploader.organizationId });
        if (admission.status !== "admitted") return null;
        c.set("uploader", uploader);
        const credential = { organizationId: uploader.organizationId, counter: "upload" as const, counterId: uploader.projectId };
        await tellEdgeCache(c.env.edgeCache, credential, admission.decision.allowed);
        return admission.decision;
      },
    }),
  );

  const uploadLimit = config.uploadLimitBytes ?? UPLOAD_LIMIT_BYTES;
  const limits: UploadLimits = { body: uploadLimit, inflated: Math.max(uploadLimit, config.inflatedLimitBytes ?? uploadLimit) };
  const inflates = limits.inflated > limits.body;
  const uploadBodyLimit = limitBody(uploadLimit, tooLarge(uploadLimit).message);
  api.use("/test_runs", (c, next) => {
    // A body streamed to a payload store is counted as it goes (streamUploadToStore): only a
    // declared length is checked here, since the limit middleware reads a chunked body whole first.
    if (c.req.method === "POST" && reportStoreOf(c.env, c.req.header("content-type"), c.req.header("content-encoding"), inflates)) {
      const length = c.req.header("content-length");
      if (length !== undefined && c.req.header("transfer-encoding") === undefined && Number(length) > uploadLimit)
        throw tooLarge(uploadLimit);
      return next();
    }
    return uploadBodyLimit(c, next);
  });
  // On PUT only: another method's body is ignored, so it cannot turn the 405 into a 413.
  const codeownersLimit = limitBody(
    CODEOWNERS_LIMIT_BYTES,
    `The CODEOWNERS file exceeds ${CODEOWNERS_LIMIT_BYTES} bytes (3 MiB); GitHub ignores a file that large too.`,
  );
  api.use("/codeowners", (c, next) => (c.req.method === "PUT" ? codeownersLimit(c, next) : next()));

  api.openapi(uploadTestRunRoute(limits), async (c) => {
    const { db, clock, runQueue, logger } = c.env;
    const request = {
      contentType: c.req.header("content-type"),
      contentEncoding: c.req.header("content-encoding"),
      idempotencyKey: c.req.header("idempotency-key"),
      query: c.req.queries(),
    };
    // A report goes to the payload store as it arrives, where there is one (the Worker's R2),
    // checked on its way (a JSON envelope as a stream: src/ingest/json-upload-stream.ts); else a
    // gzip body that may inflate past the body limit goes to the database's store the same way
    // (reportStoreOf), and any other is read whole (at most the body limit) and stored as text.
    const store = reportStoreOf(c.env, request.contentType, request.contentEncoding, inflates);
    const upload = store
      ? await streamUploadToStore(store, { ...request, body: c.req.raw.body }, limits)
      : await readUploadRequest({ ...request, body: new Uint8Array(await c.req.arrayBuffer()) }, limits);
    const { run, replayed } = await acceptUpload(
      { db, clock, runQueue, logger, payloadStore: store ?? undefined, quietPeriodMs: config.runQuietPeriodMs },
      c.get("uploader"),
      upload.metadata,
      upload.payload,
    );
    const body = presentUploadedRun(run, config.webAppUrl, config.publicBaseUrl);
    c.header("Location", body.api_url);
    if (replayed) c.header("Idempotent-Replayed", "true");
    return c.json(body, 202);
  });

  api.openapi(getUploadedTestRunRoute, async (c) => {
    const run = await getUploadedRun(c.env.db, c.get("uploader"), c.req.valid("param").number);
    const body = presentUploadedRun(run, config.webAppUrl, config.publicBaseUrl);
    if (c.req.valid("query").include !== "failed_tests") return c.json(body, 200);
    return c.json({ ...body, failed_tests: await listRunFailedTests(c.env.db, run, config.webAppUrl) }, 200);
  });

  registerCompletion(api, config);
  registerComparisonReads(api, config);
  registerSplitting(api);

  registerQuarantineList(api);

  api.openapi(putCodeownersRoute, async (c) => {
    const text = readCodeownersText(
      c.req.header("content-type"),
      c.req.header("content-encoding"),
      new Uint8Array(await c.req.arrayBuffer()),
    );
    const { db, clock } = c.env;
    return c.json(await putCodeowners({ db, clock }, c.get("uploader").projectId, text), 200);
  });

  addMethodNotAllowed(api);
  return api;
}
