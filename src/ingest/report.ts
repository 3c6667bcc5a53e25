/**
 * The parsed shape of one uploaded report, whatever format it came in (JUnit XML or our JSON),
 * and the limits every parser enforces. Parsers produce this; `completeTestRun` stores it.
 */
import type { CaseStatus } from "../lib/vocabulary";

export type { CaseStatus } from "../lib/vocabulary";

export type ReportAttempt = { status: CaseStatus; durationMs: number | null; failureMessage: string | null };

/** Parsers fill every field; the optional ones let seeds and tests write short reports. */
export type ReportCase = {
  name: string;
  classname?: string | null;
  file?: string | null;
  status: CaseStatus;
  durationMs?: number | null;
  failureType?: string | null;
  failureMessage?: string | null;
  /** The full text of the failure or error (usually the stack trace), whether or not it also had a message. */
  failureText?: string | null;
  /** Earlier tries of the same test in this run, oldest first. */
  attempts?: ReportAttempt[];
  systemOut?: string | null;
  systemErr?: string | null;
};

export type ReportSuite = {
  name: string;
  durationMs?: number | null;
  cases: ReportCase[];
  suites?: ReportSuite[];
  /**
   * A part of a top-level suite handed out while it is read (streamJUnitText with a first pass's
   * findings): more of its cases follow, and the next suite emitted is the rest of the same suite.
   */
  continued?: boolean;
};

export type Report = { suites: ReportSuite[]; durationMs?: number | null };

/**
 * Caps on what one report may hold. Texts are cut, not rejected (test output is often huge);
 * structure beyond the limits fails the run with a reason. Documented in docs/uploads.md.
 */
export const REPORT_LIMITS = {
  /** Test cases in one run (after retries are merged). */
  maxCases: 500_000,
  /** Suites in one run, nested ones included. */
  maxSuites: 50_000,
  /** Nesting of elements in an XML document, or of suites in JSON. */
  maxDepth: 64,
  /** Attempts kept per case (earlier ones are dropped). */
  maxAttempts: 20,
  /** Characters kept of names, classnames, file paths and failure types. */
  maxNameLength: 1_000,
  /** Characters kept of a failure message (per case and per attempt) and of a case's failure text. */
  maxMessageLength: 4_096,
  /** Characters kept of a case's system-out and of its system-err. */
  maxOutputLength: 4_096,
} as const;

/**
 * XML documents in one upload (`junit_xml`): a run holds at most this many suites, and a real
 * file holds at least one. Here rather than beside the envelope's schema so that the uploader CLI
 * (src/cli/) checks the same number without importing Zod.
 */
export const MAX_XML_DOCUMENTS = REPORT_LIMITS.maxSuites;

/** A problem with the report's content: the run fails with this message as its reason. */
export class ReportError extends Error {
  override name = "ReportError";
}

/**
 * Cuts a text to its cap and makes it storable: Postgres text and jsonb cannot hold NUL, and
 * jsonb rejects unpaired surrogates (which a JSON body can smuggle in as "\ud800"); both become
 * U+FFFD. Other control characters are kept: they are data, returned as JSON strings.
 */
export function cleanText(value: string, maxLength: number): string {
  let cut = value.length > maxLength ? value.slice(0, maxLength) : value;
  if (!cut.isWellFormed()) cut = cut.toWellFormed();
  return cut.includes("\u0000") ? cut.replaceAll("\u0000", "\uFFFD") : cut;
}

export function cleanOptionalText(value: string | null | undefined, maxLength: number): string | null {
  if (value === null || value === undefined) return null;
  const cleaned = cleanText(value, maxLength);
  return cleaned.length === 0 ? null : cleaned;
}

/** Shards a run may declare (`shard=I/N`, docs/uploads.md "Runs in parts"). */
const MAX_SHARDS = 1_000;

/** `I/N` with 1 ≤ I ≤ N ≤ MAX_SHARDS, or null: the upload's `shard` and the uploader's `--shard` alike. */
export function shardOf(value: string): { index: number; total: number } | null {
  const match = /^(\d{1,4})\/(\d{1,4})$/.exec(value);
  if (!match) return null;
  const index = Number(match[1]);
  const total = Number(match[2]);
  return index >= 1 && index <= total && total <= MAX_SHARDS ? { index, total } : null;
}
