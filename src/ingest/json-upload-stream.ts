/**
 * The JSON envelope (src/ingest/json-report.ts) read as a stream, for the Worker, where a JSON
 * upload goes to the payload store as it arrives (src/ingest/streamed-upload.ts) and its run is
 * processed from the stored object: neither holds the whole report, only one case (or one
 * metadata value, or one string of `junit_xml`) at a time, and in the consumer one part of a
 * top-level suite (up to 1,000 cases) and its nested suites.
 *
 * The request's check (JsonEnvelopeCheck) answers exactly what readUploadRequest answers for the
 * same body read whole (the same status, code, message and details, in the same order): the same
 * Zod schemas validate each case, each suite's own fields and the envelope's, each with its path,
 * and the issues are put in the order Zod gives for the whole body (a schema's keys in their
 * order, an array's elements in theirs). Values the schemas judge only by their type (a `suites`
 * that is not an array, each string of `junit_xml`) are validated through a stand-in of the same
 * type, so they are not kept. The order of the checks is readUploadRequest's: the nesting of the
 * text (measured on the bytes, as jsonTextDepth measures the text), then the syntax, then a body
 * that is not an object, then the schemas, then the suites' depth, then the metadata.
 *
 * The consumer reads the object twice: a first pass keeps `junit_xml` and `duration_ms`, counts
 * the `suites` keys (JSON.parse keeps the last of a repeated key; the XML's suites come first
 * whatever the keys' order) and keeps each top-level suite's own fields (its name may come after
 * its cases), a second pass validates (the schemas' transforms: texts cut, attempts trimmed) and
 * emits the last `suites`: each top-level suite's cases 1,000 at a time as they are read, then the
 * rest with its nested suites.
 */
import { z } from "@hono/zod-openapi";
import { ApiError, validationFailed } from "../lib/errors";
import { yieldToEventLoop } from "../lib/yield-to-event-loop";
import { JsonByteDepth } from "../lib/json-depth";
import {
  JsonCaseSchema,
  JsonSuiteFieldsSchema,
  JsonSuiteSchema,
  UploadEnvelopeSchema,
  reportFromJsonSuites,
  suiteDepth,
  toReportCase,
} from "./json-report";
import { type ArraySink, JsonStreamReader, JsonSyntaxError, type ObjectSink, SKIP, type ValueSink, buildInto } from "./json-stream";
import { REPORT_LIMITS, ReportError, type ReportCase, type ReportSuite } from "./report";
import { MAX_JSON_DEPTH, METADATA_KEYS, envelopeIssues } from "./upload-request";

type Issue = { path: PropertyKey[]; message: string };

/** Sets `key` as JSON.parse does (an own property, `__proto__` included). */
function setMember(object: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

function issuesOf(
  schema: { safeParse(value: unknown): { success: boolean; error?: { issues: Issue[] } } },
  value: unknown,
  prefix: PropertyKey[],
): Issue[] {
  const parsed = schema.safeParse(value);
  if (parsed.success) return [];
  // Only the path and message are kept (Zod's issues may hold the input).
  return parsed.error!.issues.map((issue) => ({ path: [...prefix, ...issue.path], message: issue.message }));
}

/** A value of the same JSON type without its content: `{}`, `[]`, `""`, or the scalar itself. */
function standInInto(done: (value: unknown) => void): ValueSink {
  return {
    object: () => ({ member: () => SKIP, end: () => done({}) }),
    array: () => ({ element: () => SKIP, end: () => done([]) }),
    scalar: (value) => done(typeof value === "string" ? "" : value),
  };
}

/** `junit_xml`: a string, or an array whose elements' types alone matter to the schema. */
function junitXmlStandInInto(done: (value: unknown) => void): ValueSink {
  return {
    ...standInInto(done),
    array() {
      const elements: unknown[] = [];
      return { element: () => standInInto((value) => elements.push(value)), end: () => done(elements) };
    },
  };
}

/** Puts a schema's issues in its keys' order, with the issues of the arrays checked element by element in their key's place. */
function inKeyOrder(keys: readonly string[], own: Issue[], ownPrefixLength: number, elementIssues: Record<string, Issue[]>): Issue[] {
  const ordered: Issue[] = [];
  const placed = new Set<Issue>();
  for (const key of keys) {
    for (const issue of own) {
      if (issue.path[ownPrefixLength] === key) {
        ordered.push(issue);
        placed.add(issue);
      }
    }
    const elements = elementIssues[key];
    if (elements) for (const issue of elements) ordered.push(issue);
  }
  for (const issue of own) if (!placed.has(issue)) ordered.push(issue);
  return ordered;
}

/** Appends one by one: a spread of a large list (a suite of 200,000 bad cases) would overflow the stack. */
function append(into: Issue[], issues: readonly Issue[]): void {
  for (const issue of issues) into.push(issue);
}

const SUITE_KEYS = ["name", "duration_ms", "cases", "suites"] as const;
const ENVELOPE_KEYS = [...METADATA_KEYS, "duration_ms", "junit_xml", "suites"] as const;

/** Issues and nesting of one `suites` array, reported when it ends. */
type SuitesOutcome = { issues: Issue[]; height: number };

function casesArray(prefix: PropertyKey[], done: (issues: Issue[]) => void): ArraySink {
  const issues: Issue[] = [];
  return {
    element: (index) => buildInto((value) => append(issues, issuesOf(JsonCaseSchema, value, [...prefix, index]))),
    end: () => done(issues),
  };
}

function suitesArray(prefix: PropertyKey[], done: (outcome: SuitesOutcome) => void): ArraySink {
  const issues: Issue[] = [];
  let height = 0;
  return {
    element(index) {
      const path = [...prefix, index];
      const other = standInInto((value) => append(issues, issuesOf(JsonSuiteSchema, value, path)));
      return {
        object: () =>
          suiteObject(path, (outcome) => {
            append(issues, outcome.issues);
            height = Math.max(height, outcome.height);
          }),
        array: other.array,
        scalar: other.scalar,
      };
    },
    end: () => done({ issues, height }),
  };
}

/** One suite: its own fields validated together when it ends, its cases and nested suites as they come. */
function suiteObject(path: PropertyKey[], done: (outcome: SuitesOutcome) => void): ObjectSink {
  const shell: Record<string, unknown> = {};
  const elementIssues: Record<string, Issue[]> = {};
  let childHeight = 0;
  return {
    member(key) {
      if (key === "name" || key === "duration_ms") return buildInto((value) => setMember(shell, key, value));
      if (key === "cases") {
        elementIssues.cases = [];
        const other = standInInto((value) => setMember(shell, key, value));
        return {
          ...other,
          array: () => {
            setMember(shell, key, []);
            return casesArray([...path, "cases"], (issues) => (elementIssues.cases = issues));
          },
        };
      }
      if (key === "suites") {
        elementIssues.suites = [];
        childHeight = 0;
        const other = standInInto((value) => setMember(shell, key, value));
        return {
          ...other,
          array: () => {
            setMember(shell, key, []);
            return suitesArray([...path, "suites"], (outcome) => {
              elementIssues.suites = outcome.issues;
              childHeight = outcome.height;
            });
          },
        };
      }
      return SKIP;
    },
    end() {
      const own = issuesOf(JsonSuiteSchema, shell, path);
      done({ issues: inKeyOrder(SUITE_KEYS, own, path.length, elementIssues), height: 1 + childHeight });
    },
  };
}

const tooDeep = () => validationFailed([{ field: "suites", message: "is nested too deeply (suites nest at most 64 levels)" }]);

/**
 * Checks a JSON upload's bytes (after decompression, valid UTF-8: checked beside it) as they
 * arrive. `result()` after the last chunk either throws the request's error, as readUploadRequest
 * would, or gives the envelope's metadata as sent (it wins over the query string's).
 */
export class JsonEnvelopeCheck {
  private readonly depth = new JsonByteDepth(MAX_JSON_DEPTH);
  private readonly reader: JsonStreamReader;
  private syntaxError = false;
  private notAnObject = false;
  /** The envelope's fields the schema judges whole (a stand-in for `junit_xml` and for `suites`). */
  private readonly fields: Record<string, unknown> = {};
  private readonly metadata: Record<string, unknown> = {};
  /** The last `suites` key's outcome; null while it is being read or when it is not an array. */
  private suites: SuitesOutcome | null = null;

  constructor() {
    this.reader = new JsonStreamReader({
      object: () => this.envelope(),
      array: () => {
        this.notAnObject = true;
        return { element: () => SKIP, end() {} };
      },
      scalar: () => {
        this.notAnObject = true;
      },
    });
  }

  private envelope(): ObjectSink {
    return {
      member: (key) => {
        if ((METADATA_KEYS as readonly string[]).includes(key)) {
          return buildInto((value) => {
            setMember(this.fields, key, value);
            setMember(this.metadata, key, value);
          });
        }
        if (key === "duration_ms") return buildInto((value) => setMember(this.fields, key, value));
        if (key === "junit_xml") return junitXmlStandInInto((value) => setMember(this.fields, key, value));
        if (key === "suites") {
          this.suites = null;
          const other = standInInto((value) => setMember(this.fields, key, value));
          return {
            ...other,
            array: () => {
              setMember(this.fields, key, []);
              return suitesArray(["suites"], (outcome) => (this.suites = outcome));
            },
          };
        }
        return SKIP;
      },
      end() {},
    };
  }

  write(bytes: Uint8Array): void {
    this.depth.write(bytes);
    // Past the depth limit or a syntax error the answer is known; only the bytes' checks go on.
    if (this.depth.exceeded || this.syntaxError) return;
    this.read(() => this.reader.write(bytes));
  }

  private read(step: () => void): void {
    try {
      step();
    } catch (error) {
      if (!(error instanceof JsonSyntaxError)) throw error;
      this.syntaxError = true;
    }
  }

  /** The verdict once every byte was written (see the class). */
  result(): { metadata: Record<string, unknown> } {
    if (this.depth.exceeded) throw tooDeep();
    if (!this.syntaxError) this.read(() => this.reader.end());
    if (this.syntaxError) throw new ApiError("invalid_request", "The request body is not valid JSON.");
    if (this.notAnObject) throw new ApiError("invalid_request", "The request body must be a JSON object.");
    const own = issuesOf(UploadEnvelopeSchema, this.fields, []);
    const issues = inKeyOrder(ENVELOPE_KEYS, own, 0, { suites: this.suites?.issues ?? [] });
    if (issues.length > 0) throw envelopeIssues(issues);
    if ((this.suites?.height ?? 0) > REPORT_LIMITS.maxDepth) {
      throw validationFailed([{ field: "suites", message: `is nested too deeply (suites nest at most ${REPORT_LIMITS.maxDepth} levels)` }]);
    }
    return { metadata: { ...this.metadata } };
  }
}

/** Bytes handed to the reader at a time, with a pause after each (other work runs between). */
const SLICE_BYTES = 64 * 1024;

async function readAll(chunks: AsyncIterable<Uint8Array>, root: ValueSink, pause: () => Promise<void>): Promise<void> {
  const reader = new JsonStreamReader(root);
  try {
    for await (const chunk of chunks) {
      for (let offset = 0; offset < chunk.byteLength; offset += SLICE_BYTES) {
        reader.write(chunk.byteLength <= SLICE_BYTES ? chunk : chunk.subarray(offset, offset + SLICE_BYTES));
        await pause();
      }
    }
    reader.end();
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new ReportError("The JSON report is not valid JSON.");
    throw error;
  }
}

const objectOnly = (envelope: () => ObjectSink): ValueSink => ({
  object: envelope,
  array: () => {
    throw new ReportError("The JSON report is not a JSON object.");
  },
  scalar: () => {
    throw new ReportError("The JSON report is not a JSON object.");
  },
});

/** Cases of a large top-level suite handed out per part (ReportSuite.continued): what the store writes per chunk. */
const PART_CASES = 1_000;

/**
 * A top-level suite's own fields as the first read leaves them (the last of a repeated key, as
 * JSON.parse keeps it), and how many `cases` keys it has (the last one's array is its cases).
 */
type SuiteFields = { name?: unknown; duration_ms?: unknown; casesKeys: number };

const invalidSuite = () => new ReportError("The JSON report has an invalid suite.");
const refuse = (): never => {
  throw invalidSuite();
};

/** The first read of a `suites` array: each top-level suite's own fields, nothing of its cases. */
function suiteFieldsOf(into: SuiteFields[]): ArraySink {
  return {
    element: () => {
      const fields: SuiteFields = { casesKeys: 0 };
      into.push(fields);
      return {
        ...SKIP,
        object: () => ({
          member(key) {
            if (key === "name") return buildInto((value) => (fields.name = value));
            if (key === "duration_ms") return buildInto((value) => (fields.duration_ms = value));
            if (key === "cases") fields.casesKeys++;
            return SKIP;
          },
          end() {},
        }),
      };
    },
    end() {},
  };
}

/**
 * The second read of a top-level suite, given its own fields from the first: its cases validated
 * one by one as they are read and handed out PART_CASES at a time (each part `continued`), then
 * the rest with its nested suites (read whole, validated by the schema), so a suite of 100,000
 * cases is never held whole. What it emits adds up to what reportFromJsonSuites gives for it.
 */
function suiteInParts(fields: SuiteFields | undefined, emit: (suites: ReportSuite[]) => void): ValueSink {
  return {
    scalar: refuse,
    array: refuse,
    object() {
      const own = fields ? JsonSuiteFieldsSchema.safeParse({ name: fields.name, duration_ms: fields.duration_ms }) : null;
      if (!fields || !own?.success) throw invalidSuite();
      const name = own.data.name;
      const durationMs = own.data.duration_ms ?? null;
      let casesSeen = 0;
      let cases: ReportCase[] = [];
      let nested: unknown;
      const caseArray: ArraySink = {
        element: () =>
          buildInto((value) => {
            const parsed = JsonCaseSchema.safeParse(value);
            if (!parsed.success) throw invalidSuite();
            cases.push(toReportCase(parsed.data));
            if (cases.length < PART_CASES) return;
            emit([{ name, durationMs, cases, suites: [], continued: true }]);
            cases = [];
          }),
        end() {},
      };
      return {
        member(key) {
          // Only the last `cases` key's array counts, as in JSON.parse.
          if (key === "cases") return ++casesSeen < fields.casesKeys ? SKIP : { scalar: refuse, object: refuse, array: () => caseArray };
          if (key === "suites") return buildInto((value) => (nested = value));
          // Its own fields came from the first read; other keys the schema drops.
          return SKIP;
        },
        end() {
          let suites: ReportSuite[] = [];
          if (nested !== undefined) {
            const parsed = z.array(JsonSuiteSchema).safeParse(nested);
            if (!parsed.success) throw invalidSuite();
            if (suiteDepth(parsed.data) + 1 > REPORT_LIMITS.maxDepth)
              throw new ReportError(`Suites are nested deeper than ${REPORT_LIMITS.maxDepth} levels.`);
            suites = reportFromJsonSuites(parsed.data, null).suites;
          }
          emit([{ name, durationMs, cases, suites }]);
        },
      };
    },
  };
}

/**
 * Emits the suites of a stored JSON envelope (checked on arrival by JsonEnvelopeCheck): its XML
 * documents' first, then its own, in order, a large top-level suite in parts (suiteInParts). `open`
 * reads the object from its start (it is read twice); resolves to the run's duration as the
 * envelope states it.
 */
export async function streamJsonEnvelope(
  open: () => Promise<AsyncIterable<Uint8Array>>,
  emit: (suites: ReportSuite[]) => void,
  parseXml: (documents: string | string[]) => Promise<number | null>,
  pause: () => Promise<void> = yieldToEventLoop,
): Promise<number | null> {
  let junitXml: string | string[] | undefined;
  let durationMs: number | null | undefined;
  let suitesKeys = 0;
  /** The last `suites` key's top-level suites' own fields. */
  let suiteFields: SuiteFields[] = [];
  await readAll(
    await open(),
    objectOnly(() => ({
      member(key) {
        if (key === "junit_xml") return buildInto((value) => (junitXml = value as string | string[]));
        if (key === "duration_ms") return buildInto((value) => (durationMs = value as number | null));
        if (key !== "suites") return SKIP;
        suitesKeys++;
        suiteFields = [];
        return { ...SKIP, array: () => suiteFieldsOf(suiteFields) };
      },
      end() {},
    })),
    pause,
  );
  const xmlDuration = junitXml !== undefined ? await parseXml(junitXml) : null;
  if (suitesKeys > 0) {
    let seen = 0;
    await readAll(
      await open(),
      objectOnly(() => ({
        member(key) {
          if (key !== "suites" || ++seen < suitesKeys) return SKIP;
          const suites: ArraySink = { element: (index) => suiteInParts(suiteFields[index], emit), end() {} };
          return {
            ...SKIP,
            array: () => suites,
            object: () => {
              throw new ReportError("The JSON report's suites are not an array.");
            },
          };
        },
        end() {},
      })),
      pause,
    );
  }
  return durationMs ?? (suitesKeys > 0 ? null : xmlDuration);
}
