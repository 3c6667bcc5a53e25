/**
 * Report files: patterns expanded to files, files read and decoded as the service decodes them,
 * and the upload envelope built within the service's limits (checked here so that a request the
 * service would refuse is never sent).
 */
import { readFile, stat } from "node:fs/promises";
import { gzipSync } from "node:zlib";
import { extname, resolve } from "node:path";
import { MAX_XML_DOCUMENTS } from "../ingest/report";
import { INFLATED_LIMIT_BYTES, UPLOAD_LIMIT_BYTES, byteOrderMarkEncoding, decodeStrictly, xmlEncoding } from "../ingest/upload-body";
import { UsageError } from "./exit-codes";
import { displayPath, formatBytes } from "./format";
import { type FileResolver, addFilesToJUnit, addFilesToSuites } from "./test-files";
import { relativizeJUnitFiles, relativizeSuiteFiles } from "./workspace-paths";

/** The service's limit on one request body as sent (413 `payload_too_large` above it). */
export const MAX_BODY_BYTES = UPLOAD_LIMIT_BYTES;
/**
 * The service's limit on a gzip body's report once inflated (413 above it): a body larger than
 * MAX_BODY_BYTES is sent gzip-compressed, and may hold this much (a Postgres-backed server or the
 * Worker; one on the embedded PGlite takes MAX_BODY_BYTES inflated, and answers a 413 past it).
 */
const MAX_REPORT_BYTES = INFLATED_LIMIT_BYTES;
/** XML documents in one upload (the service's limit: as many as a run may have suites). */
export { MAX_XML_DOCUMENTS };

export type RunMetadata = {
  branch?: string;
  commit_sha?: string;
  /** The pull request's merge base (else its base commit); never read from a report file. */
  base_commit_sha?: string;
  /** --run-key and --shard: this upload is a part of a run (docs/uploads.md, "Runs in parts"); never read from a report file. */
  run_key?: string;
  shard?: string;
  retry?: boolean;
  /** --variant, normalized (docs/tests.md, "Variants"); never read from a report file. */
  variant?: string;
  build_id?: string;
  build_url?: string;
  tags?: string[];
  started_at?: string;
  /**
   * Branch and commit from git in the working directory: used only where the flags, the CI and
   * the JSON reports leave them empty; never sent as such.
   */
  fromGit?: { branch?: string; commit_sha?: string };
};

export type Envelope = Omit<RunMetadata, "fromGit"> & { junit_xml?: string[]; suites?: unknown[] };

/** One report file as read, for the CLI's own view of the results (src/cli/results.ts). */
export type ReadReport = { name: string } & ({ kind: "xml"; text: string } | { kind: "json"; suites: unknown[] });

type ReportKind = "xml" | "json";

const METADATA_KEYS = ["branch", "commit_sha", "build_id", "build_url", "started_at"] as const;

/**
 * Expand file arguments into a sorted, deduplicated list of absolute paths. An existing file is
 * taken as is (even with glob characters in its name), a directory stands for every .xml and
 * .json file below it, anything else is a glob.
 */
export async function expandFiles(patterns: string[], options: { cwd?: string } = {}): Promise<{ files: string[]; unmatched: string[] }> {
  const cwd = options.cwd ?? process.cwd();
  const found = new Set<string>();
  const unmatched: string[] = [];
  // Loaded on first use: --help, --version and argument errors do without it.
  let glob: typeof import("tinyglobby").glob | undefined;
  const loadGlob = async () => (glob ??= (await import("tinyglobby")).glob);
  for (const pattern of patterns) {
    const literal = resolve(cwd, pattern);
    const info = await stat(literal).catch(() => null);
    let matches: string[];
    if (info?.isFile()) matches = [literal];
    else if (info?.isDirectory()) {
      matches = await (
        await loadGlob()
      )(["**/*.{xml,json,XML,JSON}"], {
        cwd: literal,
        absolute: true,
        onlyFiles: true,
        dot: false,
      });
    } else {
      // Globs use forward slashes, also on Windows.
      const normalized = process.platform === "win32" ? pattern.replaceAll("\\", "/") : pattern;
      matches = await (
        await loadGlob()
      )([normalized], {
        cwd,
        absolute: true,
        onlyFiles: true,
        dot: false,
        expandDirectories: false,
      });
    }
    if (matches.length === 0) unmatched.push(pattern);
    for (const match of matches) found.add(resolve(match));
  }
  return { files: [...found].sort(), unmatched };
}

/**
 * A report file's bytes as text, the way the service reads an XML body (src/ingest/upload-body.ts,
 * without a Content-Type charset): its byte-order mark, else its XML declaration's encoding, else
 * UTF-8. JSON: UTF-16 by its byte-order mark, else UTF-8. The text travels in a UTF-8 JSON
 * envelope, so a UTF-16 or Latin-1 file must be decoded here, and bytes invalid in the file's
 * encoding are an error, never replaced silently.
 * @param name for messages
 */
export function decodeReport(bytes: Uint8Array, kind: ReportKind, name: string): string {
  const label = kind === "xml" ? xmlEncoding(bytes).label : (byteOrderMarkEncoding(bytes) ?? "utf-8");
  // The decoder drops a byte-order mark.
  const decoded = decodeStrictly(bytes, label);
  if (decoded.ok) return decoded.text;
  if (decoded.error === "unsupported-encoding") {
    throw new UsageError(`${name}: declares encoding '${label}', which this Node.js cannot decode; save it as UTF-8`);
  }
  throw new UsageError(`${name}: not valid ${label === "utf-8" ? "UTF-8" : label} text`);
}

function errorCode(error: unknown): unknown {
  return (error as { code?: unknown } | null | undefined)?.code;
}

/** A `.json` report's document: an object with a `suites` array (its fields are checked one by one where they are read). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a parsed report, checked field by field by its readers.
function parseJsonReport(text: string, name: string): any {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${name}: not valid JSON (${(error as Error).message})`);
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc) || !Array.isArray(doc.suites)) {
    throw new UsageError(`${name}: not a JSON report (expected an object with a "suites" array)`);
  }
  return doc;
}

/** A JUnit document's absolute test files below the workspace made relative, then files added to classname-only cases. */
function rewriteJUnitFiles(text: string, resolver: FileResolver | null, workspaceRoot: string | null) {
  const relative = workspaceRoot === null ? { text, changed: 0 } : relativizeJUnitFiles(text, workspaceRoot);
  const withFiles = resolver === null ? { text: relative.text, added: 0 } : addFilesToJUnit(relative.text, resolver);
  return { text: withFiles.text, relativized: relative.changed, added: withFiles.added };
}

/**
 * The envelope as the request's body: as it is up to the service's body limit, gzip-compressed
 * above it (Content-Encoding: gzip), as the service takes it; a usage error past either limit.
 */
function requestBody(envelope: Envelope, fileCount: number): { body: string; bytes: number; gzip: Uint8Array | null } {
  const body = JSON.stringify(envelope);
  const bytes = Buffer.byteLength(body);
  const advice = fileCount > 1 ? "; upload the files in smaller groups or with --run-per-file" : "";
  if (bytes > MAX_REPORT_BYTES) {
    throw new UsageError(
      `the request would be ${formatBytes(bytes)}, above the service's ${formatBytes(MAX_REPORT_BYTES)} report limit${advice}`,
    );
  }
  const gzip = bytes > MAX_BODY_BYTES ? new Uint8Array(gzipSync(body)) : null;
  if (gzip && gzip.byteLength > MAX_BODY_BYTES) {
    throw new UsageError(
      `the request would be ${formatBytes(gzip.byteLength)} gzip-compressed, above the service's ${formatBytes(MAX_BODY_BYTES)} request limit${advice}`,
    );
  }
  return { body, bytes, gzip };
}

/**
 * Read report files into one upload envelope. `.xml` files go to `junit_xml` whole; `.json`
 * files (`{"suites": [...]}`) have their suites merged. Metadata found in JSON reports fills
 * only what `metadata` (flags, then the CI environment) left empty, and git's branch and commit
 * what is still empty. With `resolver`, cases named by classname only get their file from the
 * workspace (src/cli/test-files.ts); `filesAdded` counts them.
 * @param files absolute paths
 */
export async function buildUpload(
  files: string[],
  metadata: RunMetadata,
  options: { cwd?: string; onFileRead?: () => void; resolver?: FileResolver | null; workspaceRoot?: string | null } = {},
): Promise<{
  envelope: Envelope;
  body: string;
  bytes: number;
  /** The body gzip-compressed, when it is larger than a request may be as it is. */
  gzip: Uint8Array | null;
  reports: ReadReport[];
  filesAdded: number;
  filesRelativized: number;
}> {
  const resolver = options.resolver ?? null;
  const workspaceRoot = options.workspaceRoot ?? null;
  let filesAdded = 0;
  let filesRelativized = 0;
  const cwd = options.cwd ?? process.cwd();
  const xml: string[] = [];
  const suites: unknown[] = [];
  const reports: ReadReport[] = [];
  const fromFiles: RunMetadata = {};
  const fileTags: string[] = [];
  let hasJson = false;

  const inputs: { file: string; kind: ReportKind; size: number }[] = [];
  let rawBytes = 0;
  for (const file of files) {
    const name = displayPath(file, cwd);
    const ext = extname(file).toLowerCase();
    if (ext !== ".xml" && ext !== ".json") {
      throw new UsageError(`${name}: unsupported file type (expected .xml JUnit or .json report)`);
    }
    const info = await stat(file).catch((error: unknown) => {
      throw new UsageError(
        `${name}: cannot read (${errorCode(error) ?? (error as { message?: unknown } | null | undefined)?.message ?? error})`,
      );
    });
    if (!info.isFile()) throw new UsageError(`${name}: not a file`);
    inputs.push({ file, kind: ext === ".xml" ? "xml" : "json", size: info.size });
    rawBytes += info.size;
  }
  // JSON only grows what it encodes, so files already above the limit need not be read.
  if (rawBytes > MAX_REPORT_BYTES) {
    throw new UsageError(
      `the reports add up to ${formatBytes(rawBytes)}, above the service's ${formatBytes(MAX_REPORT_BYTES)} report limit` +
        (files.length > 1 ? "; upload them in smaller groups or with --run-per-file" : ""),
    );
  }

  for (const { file, kind } of inputs) {
    const name = displayPath(file, cwd);
    let bytes: Uint8Array;
    try {
      bytes = await readFile(file);
    } catch (error) {
      throw new UsageError(`${name}: cannot read (${errorCode(error) ?? error})`);
    }
    let text = decodeReport(bytes, kind, name);
    if (text.trim() === "") throw new UsageError(`${name}: the file is empty`);
    if (kind === "xml") {
      const rewritten = rewriteJUnitFiles(text, resolver, workspaceRoot);
      text = rewritten.text;
      filesRelativized += rewritten.relativized;
      filesAdded += rewritten.added;
      xml.push(text);
      reports.push({ name, kind, text });
    } else {
      hasJson = true;
      const doc = parseJsonReport(text, name);
      if (workspaceRoot !== null) filesRelativized += relativizeSuiteFiles(doc.suites, workspaceRoot);
      if (resolver !== null) filesAdded += addFilesToSuites(doc.suites, resolver);
      suites.push(...doc.suites);
      reports.push({ name, kind, suites: doc.suites });
      for (const key of METADATA_KEYS) {
        if (fromFiles[key] === undefined && typeof doc[key] === "string" && doc[key] !== "") fromFiles[key] = doc[key];
      }
      if (Array.isArray(doc.tags)) fileTags.push(...doc.tags.filter((t: unknown) => typeof t === "string"));
    }
    options.onFileRead?.();
  }

  const envelope: Envelope = {};
  for (const key of METADATA_KEYS) {
    const value = metadata[key] ?? fromFiles[key] ?? (key === "branch" || key === "commit_sha" ? metadata.fromGit?.[key] : undefined);
    if (value !== undefined) envelope[key] = value;
  }
  if (metadata.base_commit_sha !== undefined) envelope.base_commit_sha = metadata.base_commit_sha;
  if (metadata.run_key !== undefined) envelope.run_key = metadata.run_key;
  if (metadata.shard !== undefined) envelope.shard = metadata.shard;
  if (metadata.retry) envelope.retry = true;
  if (metadata.variant !== undefined) envelope.variant = metadata.variant;
  const tags = metadata.tags && metadata.tags.length > 0 ? metadata.tags : [...new Set(fileTags)];
  if (tags.length > 0) envelope.tags = tags;
  if (xml.length > MAX_XML_DOCUMENTS) {
    throw new UsageError(
      `${xml.length} XML files make one run, above the service's ${MAX_XML_DOCUMENTS.toLocaleString("en-US")}; upload them in smaller groups or with --run-per-file`,
    );
  }
  if (xml.length > 0) envelope.junit_xml = xml;
  if (hasJson) envelope.suites = suites;

  const { body, bytes, gzip } = requestBody(envelope, files.length);
  return { envelope, body, bytes, gzip, reports, filesAdded, filesRelativized };
}
