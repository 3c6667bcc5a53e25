/**
 * An upload request turned into one typed value, in one place: the report (format and text, as
 * stored for processing) and the run's metadata, each validated once. `limits.inflated` caps the
 * report after decompression (the body itself is capped before it is read). Everything that is wrong
 * with the request itself is answered here in the envelope (400, 413, 415, 422) and records
 * nothing; what is wrong with the report's content (malformed XML, a DTD…) fails the run when it
 * is processed.
 */
import { ApiError, validationFailed } from "../lib/errors";
import { jsonTextDepth } from "../lib/json-depth";
import { type UploadEnvelope, RunMetadataSchema, UploadEnvelopeSchema, suiteDepth } from "./json-report";
import { REPORT_LIMITS } from "./report";
import type { UploadPayload } from "./run-queue";
import {
  DEFAULT_UPLOAD_LIMITS,
  type UploadLimits,
  charsetOf,
  decodeContentEncoding,
  decodeUploadText,
  emptyBody,
  uploadFormat,
} from "./upload-body";

/** What an upload says about its run, besides the report. */
export type RunMetadata = {
  branch?: string | null;
  commitSha?: string | null;
  /** The commit the uploader names as the comparison's base (docs/verdicts.md). */
  baseCommitSha?: string | null;
  buildId?: string | null;
  buildUrl?: string | null;
  tags?: string[];
  startedAt?: Date | null;
  /** The uploader's Idempotency-Key, unique per project. */
  idempotencyKey?: string | null;
  /** Uploads with the same key join one run as its parts (docs/uploads.md, "Runs in parts"). */
  runKey?: string | null;
  shard?: { index: number; total: number } | null;
  retry?: boolean;
  /** The run's configuration, normalized (docs/tests.md, "Variants"); "" or absent: none. */
  variant?: string;
};

export type UploadRequest = { metadata: RunMetadata; payload: UploadPayload };

/** The request as it arrived: headers, query string (values as repeated) and the body's bytes. */
export type ReceivedUpload = {
  contentType: string | undefined;
  contentEncoding: string | undefined;
  idempotencyKey: string | undefined;
  query: Record<string, string[]>;
  body: Uint8Array;
};

/** Maximum nesting of a JSON upload: 64 levels of suites, each an object inside an array. */
export const MAX_JSON_DEPTH = 2 * 64 + 8;

export const METADATA_KEYS = [
  "branch",
  "commit_sha",
  "base_commit_sha",
  "build_id",
  "build_url",
  "tags",
  "started_at",
  "run_key",
  "shard",
  "retry",
  "variant",
] as const;

/** Metadata from the query string; `tags` may repeat and be comma-separated. Empty values are absent. */
function metadataFromQuery(query: Record<string, string[]>): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  for (const key of METADATA_KEYS) {
    const values = query[key];
    if (!values?.length) continue;
    if (key === "tags")
      metadata.tags = values
        .flatMap((value) => value.split(","))
        .map((tag) => tag.trim())
        .filter((tag) => tag !== "");
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

/**
 * Invalid values listed at most in one answer (a report with more, say 200,000 cases that are not
 * cases, gets one detail saying so): the whole body's check and the streamed one (json-upload-stream.ts)
 * answer alike.
 */
const MAX_LISTED_ISSUES = 100_000;

const tooManyIssues = () =>
  validationFailed([
    {
      field: "body",
      message: `has more than ${MAX_LISTED_ISSUES.toLocaleString("en-US")} invalid values, too many to list: check what writes the report`,
    },
  ]);

/** The envelope's issues as the 422's details, or tooManyIssues past MAX_LISTED_ISSUES. */
export function envelopeIssues(issues: { path: PropertyKey[]; message: string }[]): ApiError {
  return issues.length > MAX_LISTED_ISSUES ? tooManyIssues() : validationFailed(detailsOf(issues));
}

function toRunMetadata(input: Record<string, unknown>): RunMetadata {
  const parsed = RunMetadataSchema.safeParse(input);
  if (!parsed.success) throw validationFailed(detailsOf(parsed.error.issues));
  const data = parsed.data;
  return {
    branch: data.branch ?? null,
    commitSha: data.commit_sha ?? null,
    baseCommitSha: data.base_commit_sha ?? null,
    buildId: data.build_id ?? null,
    buildUrl: data.build_url ?? null,
    tags: [...new Set(data.tags ?? [])],
    startedAt: data.started_at ? new Date(data.started_at) : null,
    variant: data.variant ?? "",
    ...runKeyFields(data),
  };
}

/** The run key and what only a run key gives meaning to: a shard, a retry. */
function runKeyFields(data: { run_key?: string | null; shard?: { index: number; total: number } | null; retry?: boolean | null }) {
  const runKey = data.run_key ?? null;
  if (runKey === null) {
    const without = [...(data.shard ? ["shard"] : []), ...(data.retry ? ["retry"] : [])];
    if (without.length > 0)
      throw validationFailed(without.map((field) => ({ field, message: "needs a run_key: it describes a part of a run" })));
    return {};
  }
  return { runKey, shard: data.shard ?? null, retry: data.retry === true };
}

/** The JSON envelope, validated: a 400 for a body that is not a JSON object, a 422 for one that is not a report. */
function parseEnvelope(text: string): { envelope: UploadEnvelope; metadata: Record<string, unknown> } {
  // Measured on the text, before parsing: what reads the parsed value (the schema, JSON.stringify) recurses.
  if (jsonTextDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw validationFailed([{ field: "suites", message: "is nested too deeply (suites nest at most 64 levels)" }]);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid JSON.");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new ApiError("invalid_request", "The request body must be a JSON object.");
  let parsed: ReturnType<typeof UploadEnvelopeSchema.safeParse>;
  try {
    parsed = UploadEnvelopeSchema.safeParse(body);
  } catch (error) {
    // Zod gathers a large array's issues with one spread call, which overflows the stack past some 100,000.
    if (error instanceof RangeError) throw tooManyIssues();
    throw error;
  }
  if (!parsed.success) throw envelopeIssues(parsed.error.issues);
  if (suiteDepth(parsed.data.suites) > REPORT_LIMITS.maxDepth) {
    throw validationFailed([{ field: "suites", message: `is nested too deeply (suites nest at most ${REPORT_LIMITS.maxDepth} levels)` }]);
  }
  // The envelope's metadata, as sent (null included): it wins over the query string's.
  const metadata: Record<string, unknown> = {};
  for (const key of METADATA_KEYS) {
    if (Object.hasOwn(body, key) && (body as Record<string, unknown>)[key] !== undefined)
      metadata[key] = (body as Record<string, unknown>)[key];
  }
  return { envelope: parsed.data, metadata };
}

/**
 * Reads an upload. A JSON report is stored as its validated envelope (what the schema made of it:
 * texts cut, attempts trimmed), so processing reads it without validating it again.
 */
export async function readUploadRequest(received: ReceivedUpload, limits: UploadLimits = DEFAULT_UPLOAD_LIMITS): Promise<UploadRequest> {
  const format = uploadFormat(received.contentType);
  const bytes = await decodeContentEncoding(received.body, received.contentEncoding, limits.inflated);
  if (bytes.byteLength === 0) throw emptyBody();
  const text = decodeUploadText(bytes, format, charsetOf(received.contentType));

  let metadataInput = metadataFromQuery(received.query);
  let content: string;
  if (format === "json") {
    const { envelope, metadata } = parseEnvelope(text);
    metadataInput = { ...metadataInput, ...metadata };
    content = JSON.stringify(envelope);
  } else {
    // Postgres text cannot hold NUL: it becomes U+FFFD before storage, as the parser would make it (junit.ts).
    content = text.replaceAll("\u0000", "\uFFFD");
  }
  const metadata = { ...toRunMetadata(metadataInput), idempotencyKey: idempotencyKeyOf(received.idempotencyKey) };
  return { metadata, payload: { format, content } };
}

/**
 * The run's metadata of a JSON upload checked as a stream (src/ingest/json-upload-stream.ts): the
 * envelope's, as sent, over the query string's, validated together as readUploadRequest does.
 */
export function envelopeRunMetadata(
  received: Pick<ReceivedUpload, "query" | "idempotencyKey">,
  envelopeMetadata: Record<string, unknown>,
): RunMetadata {
  return {
    ...toRunMetadata({ ...metadataFromQuery(received.query), ...envelopeMetadata }),
    idempotencyKey: idempotencyKeyOf(received.idempotencyKey),
  };
}

/** The run's metadata of an upload whose report carries none (JUnit XML): the query string's and the Idempotency-Key. */
export function queryRunMetadata(received: Pick<ReceivedUpload, "query" | "idempotencyKey">): RunMetadata {
  return { ...toRunMetadata(metadataFromQuery(received.query)), idempotencyKey: idempotencyKeyOf(received.idempotencyKey) };
}
