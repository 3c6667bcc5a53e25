/**
 * Our JSON upload format: an envelope with the run's metadata and either JUnit XML documents
 * (`junit_xml`) or suites in JSON (`suites`). The same Zod schemas validate uploads and describe
 * them in /uploads/v1/openapi.json. Unknown keys are ignored (and so never reach storage), which
 * also makes `__proto__` and friends inert.
 */
import { z } from "@hono/zod-openapi";
import { CASE_STATUSES } from "../lib/vocabulary";
import {
  MAX_XML_DOCUMENTS,
  type Report,
  type ReportCase,
  type ReportSuite,
  REPORT_LIMITS,
  ReportError,
  cleanOptionalText,
  cleanText,
  shardOf,
} from "./report";
import { isoDateTimeWithZone } from "../lib/date-time";
import { MAX_RAW_VARIANT_LENGTH, MAX_VARIANT_LENGTH, normalizeVariant } from "../lib/variant";

const CaseStatusSchema = z.enum(CASE_STATUSES).openapi("TestCaseStatus");

const durationMs = z.number().int().min(0).max(2_147_483_647).nullish().openapi({ description: "Milliseconds (whole number)." });
/** Texts are cut to the documented caps rather than rejected: test output is often long. */
const cutText = (max: number) => z.string().transform((value) => cleanText(value, max));
const optionalCutText = (max: number) =>
  z
    .string()
    .nullish()
    .transform((value) => cleanOptionalText(value, max));

const JsonAttemptSchema = z
  .object({
    status: CaseStatusSchema,
    duration_ms: durationMs,
    failure_message: optionalCutText(REPORT_LIMITS.maxMessageLength),
  })
  .openapi("UploadAttempt");

export const JsonCaseSchema = z
  .object({
    name: cutText(REPORT_LIMITS.maxNameLength).pipe(z.string().min(1, "must not be empty")),
    classname: optionalCutText(REPORT_LIMITS.maxNameLength),
    file: optionalCutText(REPORT_LIMITS.maxNameLength),
    status: CaseStatusSchema,
    duration_ms: durationMs,
    failure_type: optionalCutText(REPORT_LIMITS.maxNameLength),
    failure_message: optionalCutText(REPORT_LIMITS.maxMessageLength),
    failure_text: optionalCutText(REPORT_LIMITS.maxMessageLength).openapi({
      description: `The failure's full text, such as its stack trace (optional; cut at ${REPORT_LIMITS.maxMessageLength.toLocaleString("en-US")} characters).`,
    }),
    // Cut like XML retries: the latest attempts are kept.
    attempts: z
      .array(JsonAttemptSchema)
      .optional()
      .transform((attempts) => attempts?.slice(-REPORT_LIMITS.maxAttempts))
      .openapi({
        description: `Earlier tries of this case in the run, oldest first; only the latest ${REPORT_LIMITS.maxAttempts} are kept.`,
      }),
    system_out: optionalCutText(REPORT_LIMITS.maxOutputLength),
    system_err: optionalCutText(REPORT_LIMITS.maxOutputLength),
  })
  .openapi("UploadTestCase");

type JsonSuiteInput = {
  name: string;
  duration_ms?: number | null;
  cases?: z.input<typeof JsonCaseSchema>[];
  suites?: JsonSuiteInput[];
};
type JsonSuiteOutput = {
  name: string;
  duration_ms?: number | null;
  cases?: z.output<typeof JsonCaseSchema>[];
  suites?: JsonSuiteOutput[];
};

/** A suite's own fields, as JsonSuiteSchema reads them. */
const suiteName = cutText(REPORT_LIMITS.maxNameLength).pipe(z.string().min(1, "must not be empty"));

export const JsonSuiteSchema: z.ZodType<JsonSuiteOutput, JsonSuiteInput> = z
  .object({
    name: suiteName,
    duration_ms: durationMs,
    cases: z.array(JsonCaseSchema).optional(),
    get suites() {
      return z.array(JsonSuiteSchema).optional();
    },
  })
  .openapi("UploadTestSuite", { description: "A suite with its cases and nested suites (at most 64 levels deep)." });

/** A suite's own fields alone (its cases and nested suites read apart: src/ingest/json-upload-stream.ts). */
export const JsonSuiteFieldsSchema = z.object({ name: suiteName, duration_ms: durationMs });

const CONTROL_CHARACTERS = /[\u0000-\u001F\u007F]/;
/** A metadata string: trimmed, "" → null (CI variables are often set but empty), no control characters. */
const metadataText = (max: number) =>
  z
    .string({ error: "must be a string" })
    .transform((value) => value.toWellFormed().trim())
    .pipe(
      z
        .string()
        .max(max, `is too long (maximum is ${max} characters)`)
        .refine((value) => !CONTROL_CHARACTERS.test(value), "must not contain control characters"),
    )
    .transform((value) => (value === "" ? null : value))
    .nullish();

/** A run takes at most this many parts, retries included. */
export const MAX_RUN_PARTS = 2_000;

const isHttpUrl = (value: string) => {
  try {
    const url = new URL(value);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
};

const metadataFields = {
  branch: metadataText(255).openapi({ description: "Branch the tests ran on, e.g. `main`." }),
  commit_sha: metadataText(64).openapi({
    description: "Commit under test (full or abbreviated SHA). Runs of the same commit let the flakiness check compare outcomes.",
  }),
  base_commit_sha: metadataText(64)
    .refine((value) => value === null || value === undefined || /^[0-9a-fA-F]{7,64}$/.test(value), "must be 7 to 64 hexadecimal characters")
    .openapi({
      description:
        "The commit this run is compared with (docs/verdicts.md): the default branch's run on it is the comparison's base. A full or abbreviated SHA, 7 to 64 hexadecimal characters.",
    }),
  build_id: metadataText(255).openapi({ description: "The CI system's build or job identifier." }),
  run_key: metadataText(255).openapi({
    description:
      'Uploads with the same run key join one run as its parts (docs/uploads.md, "Runs in parts"), e.g. the CI\'s run id and job; absent: the upload is a run of its own.',
  }),
  shard: metadataText(9)
    .refine((value) => value === null || value === undefined || shardOf(value) !== null, "must be I/N with 1 ≤ I ≤ N ≤ 1000, e.g. 2/4")
    .transform((value) => (value === null || value === undefined ? value : shardOf(value)))
    .openapi({
      description:
        "This part's shard, `I/N`, 1-based as in Jest and Playwright (e.g. `2/4`): the run completes when N shards have arrived.",
    }),
  retry: z
    .union([z.boolean(), z.enum(["true", "false", ""])], { error: "must be true or false" })
    .transform((value) => value === true || value === "true")
    .nullish()
    .openapi({
      description:
        '`true`: a re-run of failed tests of the run its run key names: its cases become further attempts of the run\'s tests, even after the run completed (docs/uploads.md, "Runs in parts").',
    }),
  variant: metadataText(MAX_RAW_VARIANT_LENGTH)
    .transform((value) => (value === null || value === undefined ? value : normalizeVariant(value)))
    .refine(
      (value) => value === null || value === undefined || value.length <= MAX_VARIANT_LENGTH,
      `is too long (maximum is ${MAX_VARIANT_LENGTH} characters once normalized)`,
    )
    .openapi({
      description:
        'The configuration the tests ran in, e.g. `os=windows,node=22` (at most 100 characters): part of each test\'s identity, so a matrix cell\'s tests are tests of their own (docs/tests.md, "Variants"). Normalized: parts trimmed, repeats dropped, sorted (`node=22,os=windows`). Absent or empty: the variant "", as before variants.',
    }),
  build_url: metadataText(2048)
    .refine((value) => value === null || value === undefined || isHttpUrl(value), "must be an http or https URL")
    .openapi({ description: "Link to the CI build (http or https only)." }),
  tags: z
    .array(
      z
        .string({ error: "must be a string" })
        .trim()
        .max(100, "is too long (maximum is 100 characters)")
        .refine((value) => !CONTROL_CHARACTERS.test(value), "must not contain control characters")
        .transform((value) => value.toWellFormed()),
    )
    .nullish()
    // Blank labels are dropped, as in the query string (CI variables are often set but empty).
    .transform((tags) => (tags ?? []).filter((tag) => tag !== ""))
    .pipe(z.array(z.string()).max(50, "has too many items (maximum is 50)"))
    .openapi({ description: "Free labels such as the job name or platform; blank ones and duplicates are dropped." }),
  started_at: z
    .string({ error: "must be an RFC 3339 date-time with a time zone, e.g. 2026-11-21T10:00:00Z" })
    .trim()
    .pipe(z.union([z.literal(""), isoDateTimeWithZone("must be an RFC 3339 date-time with a time zone, e.g. 2026-11-21T10:00:00Z")]))
    .transform((value) => (value === "" ? null : value))
    .nullish()
    .openapi({ description: "When the tests started (RFC 3339 with Z or an offset); empty counts as absent." }),
};

export const RunMetadataSchema = z.object(metadataFields);

/** Documents in one JSON upload (defined in ./report, beside the limits it follows from). */

export const UploadEnvelopeSchema = z
  .object({
    ...metadataFields,
    duration_ms: durationMs.openapi({
      description:
        "Wall-clock duration of the run; by default the `<testsuites time>` of the XML, else the sum of the top-level suites that state one, else null.",
    }),
    junit_xml: z
      .union([z.string(), z.array(z.string()).min(1, "must not be empty").max(MAX_XML_DOCUMENTS)], {
        error: `must be a string (one XML document) or an array of 1 to ${MAX_XML_DOCUMENTS.toLocaleString("en-US")} strings`,
      })
      .optional()
      .openapi({
        description: `One JUnit XML document, or several (at most ${MAX_XML_DOCUMENTS.toLocaleString("en-US")}, as many as a run may have suites) that together make one run (e.g. one file per test class).`,
      }),
    suites: z
      .array(JsonSuiteSchema)
      .optional()
      .openapi({ description: "The run's suites in JSON. With `junit_xml` too, the JSON suites come after the XML ones in the same run." }),
  })
  .refine((body) => body.junit_xml !== undefined || body.suites !== undefined, {
    message: "is required: send junit_xml, suites, or both (they make one run together)",
    path: ["suites"],
  })
  .openapi("UploadEnvelope");

export type UploadEnvelope = z.output<typeof UploadEnvelopeSchema>;

/** How deep suites nest (1 = top-level suites only), iteratively. */
export function suiteDepth(suites: { suites?: unknown }[] | undefined): number {
  let deepest = 0;
  const stack: [{ suites?: unknown }[], number][] = suites ? [[suites, 1]] : [];
  while (stack.length > 0) {
    const [level, depth] = stack.pop()!;
    if (level.length === 0) continue;
    deepest = Math.max(deepest, depth);
    for (const suite of level) if (Array.isArray(suite.suites)) stack.push([suite.suites as { suites?: unknown }[], depth + 1]);
  }
  return deepest;
}

export function toReportCase(input: z.output<typeof JsonCaseSchema>): ReportCase {
  return {
    name: input.name,
    classname: input.classname,
    file: input.file,
    status: input.status,
    durationMs: input.duration_ms ?? null,
    failureType: input.failure_type,
    failureMessage: input.failure_message,
    failureText: input.failure_text,
    attempts: (input.attempts ?? []).map((attempt) => ({
      status: attempt.status,
      durationMs: attempt.duration_ms ?? null,
      failureMessage: attempt.failure_message,
    })),
    systemOut: input.system_out,
    systemErr: input.system_err,
  };
}

/** JSON suites → report suites, enforcing the same structural limits as the XML parser. */
export function reportFromJsonSuites(suites: JsonSuiteOutput[], durationMs: number | null): Report {
  if (suiteDepth(suites) > REPORT_LIMITS.maxDepth) throw new ReportError(`Suites are nested deeper than ${REPORT_LIMITS.maxDepth} levels.`);
  let caseCount = 0;
  let suiteCount = 0;
  const convert = (input: JsonSuiteOutput): ReportSuite => {
    if (++suiteCount > REPORT_LIMITS.maxSuites) throw new ReportError(`The report has more than ${REPORT_LIMITS.maxSuites} test suites.`);
    caseCount += input.cases?.length ?? 0;
    if (caseCount > REPORT_LIMITS.maxCases) throw new ReportError(`The report has more than ${REPORT_LIMITS.maxCases} test cases.`);
    return {
      name: input.name,
      durationMs: input.duration_ms ?? null,
      cases: (input.cases ?? []).map(toReportCase),
      suites: (input.suites ?? []).map(convert),
    };
  };
  return { suites: suites.map(convert), durationMs };
}
