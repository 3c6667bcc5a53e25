/**
 * Reading an upload's body: size-capped (also when chunked and after decompression), optionally
 * gzip-compressed, decoded to text with its declared encoding. Problems here are the request's
 * (4xx in the envelope, no run recorded); problems with the report's content fail the run later.
 */
import { ApiError } from "../lib/errors";
import { gunzipStream } from "./gunzip-stream";

/**
 * Largest body accepted as sent, compressed or not: 32 MiB, the upload interface's limit. A
 * runtime may set less (AppConfig.uploadLimitBytes; the Worker's UPLOAD_LIMIT_BYTES in wrangler.toml).
 */
export const UPLOAD_LIMIT_BYTES = 32 * 1024 * 1024;

/**
 * Largest report once a gzip body is inflated: 256 MiB, what 500,000 realistic cases take
 * (bench/junit-generator.ts: 500,000 Surefire cases are 135 MiB of XML, 11 MiB gzip-compressed).
 * Such a report is never held whole: it is streamed to the payload store as sent and parsed as a
 * stream (src/ingest/streamed-upload.ts). AppConfig.inflatedLimitBytes may set less.
 */
export const INFLATED_LIMIT_BYTES = 256 * 1024 * 1024;

/** A server's two size limits: the body as sent, and the report once inflated (the body's own size when it is not compressed). */
export type UploadLimits = { body: number; inflated: number };

export const DEFAULT_UPLOAD_LIMITS: UploadLimits = { body: UPLOAD_LIMIT_BYTES, inflated: INFLATED_LIMIT_BYTES };

/** A byte limit as the messages and documents state it: "33554432 bytes (32 MiB)". */
export function describeByteLimit(limit: number): string {
  const mib = limit / (1024 * 1024);
  return `${limit} bytes (${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB)`;
}

import type { UploadFormat } from "../lib/vocabulary";

export type { UploadFormat } from "../lib/vocabulary";

const XML_TYPE = /^(application|text)\/([\w.-]+\+)?xml$/;
const JSON_TYPE = /^application\/([\w.-]+\+)?json$/;

/** The report format named by a Content-Type header, or a 415 that says what is accepted. */
export function uploadFormat(contentType: string | undefined): UploadFormat {
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (XML_TYPE.test(mediaType)) return "junit_xml";
  if (JSON_TYPE.test(mediaType)) return "json";
  throw new ApiError(
    "unsupported_media_type",
    `Content-Type ${mediaType ? `'${mediaType.slice(0, 100)}'` : "(none)"} is not accepted: send JUnit XML as application/xml or text/xml, or JSON as application/json.`,
  );
}

/** The 413 of a body larger than `limit` as sent. */
export function tooLarge(limit = UPLOAD_LIMIT_BYTES): ApiError {
  return new ApiError(
    "payload_too_large",
    `The upload exceeds ${describeByteLimit(limit)} as sent, this server's limit for a request body. Split the report, or compress it with Content-Encoding: gzip.`,
  );
}

/** The 413 of a gzip body whose report inflates past `limit`. */
export function inflatesTooLarge(limit = INFLATED_LIMIT_BYTES): ApiError {
  return new ApiError(
    "payload_too_large",
    `The upload inflates to more than ${describeByteLimit(limit)} (Content-Encoding: gzip), this server's limit for a report. Split the report.`,
  );
}

/** A request with no body, or an empty one (400). */
export const emptyBody = (): ApiError =>
  new ApiError("invalid_request", "The request body is empty: send a JUnit XML document or a JSON report.");

/** A body sent with Content-Encoding: gzip that does not inflate (400). */
export const invalidGzip = (): ApiError => new ApiError("invalid_request", "The body is not valid gzip data (Content-Encoding: gzip).");

/**
 * Inflates a gzip body, stopping as soon as the output passes the limit (a gzip bomb costs at most
 * the limit: gunzipStream inflates only as it is read, where workerd's DecompressionStream would
 * inflate the whole body at once).
 */
async function gunzip(bytes: Uint8Array, limit: number): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(gunzipStream());
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        await reader.cancel().catch(() => {});
        throw inflatesTooLarge(limit);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw invalidGzip();
  }
  const output = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    output.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return output;
}

/** Applies Content-Encoding (identity or gzip; anything else is a 415); the decompressed report may not pass `limit`. */
export async function decodeContentEncoding(
  bytes: Uint8Array,
  contentEncoding: string | undefined,
  limit = INFLATED_LIMIT_BYTES,
): Promise<Uint8Array> {
  return bodyCompression(contentEncoding) === "gzip" ? gunzip(bytes, limit) : bytes;
}

/** The encoding a byte-order mark names (UTF-8, UTF-16LE, UTF-16BE), or null without one. */
export function byteOrderMarkEncoding(bytes: Uint8Array): "utf-8" | "utf-16le" | "utf-16be" | null {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return "utf-8";
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return "utf-16le";
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return "utf-16be";
  return null;
}

/** The encoding an XML document declares, read from its first bytes (ASCII-compatible encodings only). */
function declaredXmlEncoding(bytes: Uint8Array): string | null {
  const head = String.fromCharCode(...bytes.subarray(0, 200));
  const match = /^\s*<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']/.exec(head);
  return match ? match[1]!.toLowerCase() : null;
}

/** The `charset` parameter of a Content-Type header, lower-cased, if any. */
export function charsetOf(contentType: string | undefined): string | null {
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? "");
  const charset = (match?.[1] ?? match?.[2] ?? "").trim().toLowerCase();
  return charset === "" ? null : charset;
}

/**
 * The encoding to read an XML document in, RFC 7303's order: its byte-order mark, else the
 * Content-Type's `charset`, else its declaration's `encoding`, else UTF-8 ("utf8" read as
 * "utf-8"). `source` says where the label came from, for messages. The uploader CLI (src/cli/)
 * reads XML files with it (without a charset), so a file is decoded as the service decodes it.
 */
export function xmlEncoding(
  bytes: Uint8Array,
  charset: string | null = null,
): { label: string; source: "byte-order mark" | "charset" | "declaration" | "default" } {
  const bom = byteOrderMarkEncoding(bytes);
  if (bom) return { label: bom, source: "byte-order mark" };
  if (charset) return { label: charset === "utf8" ? "utf-8" : charset, source: "charset" };
  const declared = declaredXmlEncoding(bytes);
  if (declared && declared !== "utf8") return { label: declared, source: "declaration" };
  return { label: "utf-8", source: declared ? "declaration" : "default" };
}

/**
 * Bytes → text in the encoding `label` names, dropping a byte-order mark. Never replaces bytes:
 * a label this runtime cannot decode, or bytes invalid in the encoding, give an error kind that
 * the caller turns into its own message (the route a 4xx, the CLI a usage error).
 */
export function decodeStrictly(
  bytes: Uint8Array,
  label: string,
): { ok: true; text: string } | { ok: false; error: "unsupported-encoding" | "invalid-bytes" } {
  let decoder: InstanceType<typeof TextDecoder>;
  try {
    decoder = new TextDecoder(label, { fatal: true, ignoreBOM: false });
  } catch {
    return { ok: false, error: "unsupported-encoding" };
  }
  try {
    return { ok: true, text: decoder.decode(bytes) };
  } catch {
    return { ok: false, error: "invalid-bytes" };
  }
}

/** The request's error for a text it cannot decode: a 415 for an encoding this runtime lacks, a 400 for invalid bytes. */
export function textDecodingError(
  label: string,
  source: "declaration" | "charset",
  error: "unsupported-encoding" | "invalid-bytes",
): ApiError {
  if (error === "unsupported-encoding") {
    return new ApiError(
      "unsupported_media_type",
      source === "charset"
        ? `Content-Type names charset '${label.slice(0, 50)}', which is not supported; use UTF-8.`
        : `The XML declares encoding '${label.slice(0, 50)}', which is not supported; use UTF-8.`,
    );
  }
  return new ApiError("invalid_request", `The body is not valid ${label === "utf-8" ? "UTF-8" : label} text.`);
}

function decodeWith(label: string, bytes: Uint8Array, source: "declaration" | "charset"): string {
  const decoded = decodeStrictly(bytes, label);
  if (decoded.ok) return decoded.text;
  throw textDecodingError(label, source, decoded.error);
}

/** Content-Encoding: gzip, or none (identity); anything else is a 415. */
export function bodyCompression(contentEncoding: string | undefined): "gzip" | null {
  const encoding = (contentEncoding ?? "").trim().toLowerCase();
  if (encoding === "" || encoding === "identity") return null;
  if (encoding === "gzip" || encoding === "x-gzip") return "gzip";
  throw new ApiError(
    "unsupported_media_type",
    `Content-Encoding '${encoding.slice(0, 50)}' is not supported: send the body as is or gzip-compressed.`,
  );
}

/**
 * Bytes → text. JSON must be UTF-8. XML follows RFC 7303's order (`xmlEncoding`): its byte-order
 * mark, else the Content-Type's `charset`, else its declaration's `encoding`, else UTF-8. Invalid
 * byte sequences are a 400, never replaced silently.
 */
export function decodeUploadText(bytes: Uint8Array, format: UploadFormat, charset: string | null = null): string {
  if (format === "json") return decodeWith("utf-8", bytes, "charset");
  const { label, source } = xmlEncoding(bytes, charset);
  return decodeWith(label, bytes, source === "charset" ? "charset" : "declaration");
}

/**
 * A CODEOWNERS upload's body as text (PUT /uploads/v1/codeowners, docs/codeowners.md): like the
 * reports, the Content-Type is read and must say what the body is, `text/plain`, in UTF-8 (no
 * charset, `utf-8` or its ASCII subset); a file is small, so no Content-Encoding. Invalid UTF-8
 * and NUL characters (not text, and not storable) are a 400. The size is capped before (413).
 */
export function readCodeownersText(contentType: string | undefined, contentEncoding: string | undefined, bytes: Uint8Array): string {
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (mediaType !== "text/plain") {
    throw new ApiError(
      "unsupported_media_type",
      `Content-Type ${mediaType ? `'${mediaType.slice(0, 100)}'` : "(none)"} is not accepted: send the CODEOWNERS file as text/plain (UTF-8).`,
    );
  }
  const charset = charsetOf(contentType);
  if (charset !== null && !["utf-8", "utf8", "us-ascii"].includes(charset)) {
    throw new ApiError(
      "unsupported_media_type",
      `Content-Type names charset '${charset.slice(0, 50)}': send the CODEOWNERS file in UTF-8.`,
    );
  }
  const encoding = (contentEncoding ?? "").trim().toLowerCase();
  if (encoding !== "" && encoding !== "identity") {
    throw new ApiError(
      "unsupported_media_type",
      `Content-Encoding '${encoding.slice(0, 50)}' is not supported here: send the CODEOWNERS file as is.`,
    );
  }
  const decoded = decodeStrictly(bytes, "utf-8");
  if (!decoded.ok) throw new ApiError("invalid_request", "The body is not valid UTF-8 text.");
  if (decoded.text.includes("\u0000"))
    throw new ApiError("invalid_request", "The body contains NUL characters: a CODEOWNERS file is text.");
  return decoded.text;
}
