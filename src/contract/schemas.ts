/**
 * Zod schemas shared by validation and the OpenAPI document. Response schemas describe what the
 * presenters in src/contract/presenters.ts produce; test/openapi tests check real responses against them.
 */
import { z } from "@hono/zod-openapi";
import { isoDateTimeWithZone } from "../lib/date-time";
import { MAX_RAW_VARIANT_LENGTH, MAX_VARIANT_LENGTH, normalizeVariant } from "../lib/variant";
import {
  ALERT_STATUSES,
  ALERT_TYPES,
  CASE_STATUSES,
  ERROR_CODES,
  QUARANTINED_FILTER_VALUES,
  QUARANTINE_DURATIONS,
  QUARANTINE_SOURCES,
  QUARANTINE_VIAS,
  type QuarantineDuration,
  RUN_RESULTS,
  RUN_STATUSES,
  SNOOZE_DURATIONS,
  type SnoozeDuration,
  TEST_HEALTHS,
  TEST_SORTS,
  VERDICTS,
  BASE_CHOICES,
  type Verdict,
} from "../lib/vocabulary";

const SNOOZE_DURATION_NAMES = Object.keys(SNOOZE_DURATIONS) as [SnoozeDuration, ...SnoozeDuration[]];
const QUARANTINE_DURATION_NAMES = Object.keys(QUARANTINE_DURATIONS) as [QuarantineDuration, ...QuarantineDuration[]];

const timestamp = (description: string) => z.string().openapi({ format: "date-time", description, example: "2026-11-21T18:30:00.000Z" });
const nullableTimestamp = (description: string) =>
  z.string().nullable().openapi({ format: "date-time", description, example: "2026-11-21T18:30:00.000Z" });

const ErrorCodeSchema = z.enum(ERROR_CODES).openapi({ description: "Machine-readable error code: branch on this, not on the message." });

export const ErrorEnvelopeSchema = z
  .object({
    error: z.object({
      code: ErrorCodeSchema,
      message: z.string().openapi({ description: "For humans only; may change." }),
      details: z
        .array(z.object({ field: z.string(), message: z.string() }))
        .optional()
        .openapi({ description: "Present with validation_failed (and some invalid_request errors): one entry per rejected field." }),
    }),
  })
  .openapi("Error");

export const PaginationSchema = z
  .object({
    next_cursor: z.string().nullable().openapi({ description: "Opaque; pass exactly as received. Null on the last page." }),
    has_more: z.boolean().openapi({ description: "False on the last page." }),
  })
  .openapi("Pagination");

export const ApiKeySchema = z
  .object({ id: z.string().uuid(), name: z.string(), created_at: timestamp("When the key was created.") })
  .openapi("ApiKey", { description: "The key used for the request. The key value itself is never returned." });

export const OrganizationSchema = z
  .object({
    id: z.string().uuid(),
    name: z.string(),
    time_zone: z.string().openapi({ description: "IANA time zone name.", example: "Europe/Berlin" }),
    created_at: timestamp("ISO 8601 UTC."),
    api_key: ApiKeySchema,
  })
  .openapi("Organization");

const RunResultSchema = z.enum(RUN_RESULTS);

export const ProjectSchema = z
  .object({
    id: z.string().uuid(),
    name: z.string(),
    description: z.string().nullable(),
    test_runs_count: z.number().int().openapi({ description: "Total runs ever recorded, including runs that failed to process." }),
    latest_result: RunResultSchema.nullable().openapi({
      description: "Result of the most recent processed run; null until a run finishes processing.",
    }),
    last_test_run_at: nullableTimestamp("When the most recent run arrived."),
    tests_count: z.number().int().openapi({ description: "Distinct tests seen in the project's runs (GET /projects/{id}/tests)." }),
    flaky_tests_count: z.number().int().openapi({ description: "Tests whose health is `flaky` now." }),
    broken_tests_count: z.number().int().openapi({ description: "Tests whose health is `broken` now." }),
    created_at: timestamp("ISO 8601 UTC."),
    updated_at: timestamp("ISO 8601 UTC."),
    url: z.string().url().openapi({ description: "The project's page in the web app." }),
  })
  .openapi("Project");

const AlertTypeSchema = z.enum(ALERT_TYPES).openapi("AlertType");

export const AlertSchema = z
  .object({
    id: z.string().uuid(),
    project_id: z.string().uuid(),
    alert_type: AlertTypeSchema,
    name: z.string().openapi({ description: "Human-readable name of the type." }),
    active: z.boolean().openapi({ description: "Whether the check runs against new test runs." }),
    snoozed: z.boolean().openapi({ description: "Whether notifications are currently suppressed (derived from snoozed_until)." }),
    snoozed_until: nullableTimestamp("When the current snooze ends; null when not snoozed (an expired snooze reads as null)."),
    last_notified_at: nullableTimestamp("When a notification last went out."),
    events_count: z.number().int().openapi({ description: "Total events ever recorded." }),
    created_at: timestamp("ISO 8601 UTC."),
    updated_at: timestamp("ISO 8601 UTC."),
    url: z.string().url().openapi({ description: "The alert's page in the web app." }),
  })
  .openapi("Alert");

/** A run's failures counted per verdict against its base (docs/verdicts.md). */
const VerdictCountsSchema = z
  .object(Object.fromEntries(VERDICTS.map((verdict) => [verdict, z.number().int()])) as Record<Verdict, z.ZodNumber>)
  .openapi("VerdictCounts", {
    description:
      "The run's failing tests counted per verdict against its base (docs/verdicts.md): each failing test (or test that passed on retry) has exactly one.",
  });

/** A variant as answers carry it: normalized, at most 100 characters, "" for none (src/lib/variant.ts). */
const VariantSchema = z.string().max(100);

export const TestRunSchema = z
  .object({
    number: z.number().int().openapi({ description: "Counts up within the project: the Nth run." }),
    project_id: z.string().uuid(),
    status: z.enum(RUN_STATUSES).openapi({ description: "Processing state of the uploaded report." }),
    failure_reason: z.string().nullable().openapi({ description: "Why processing failed; null otherwise." }),
    result: RunResultSchema.nullable().openapi({ description: "Null until processed." }),
    branch: z.string().nullable(),
    commit_sha: z.string().nullable(),
    base_commit_sha: z
      .string()
      .nullable()
      .openapi({ description: "The commit the uploader named as the comparison's base (docs/verdicts.md); null when none was named." }),
    build_id: z.string().nullable(),
    build_url: z.string().nullable(),
    variant: VariantSchema.openapi({
      description:
        'The configuration its tests ran in, normalized (`node=22,os=windows`; docs/tests.md, "Variants"); "" for a run without one. Its run-level checks and comparison use runs of the same variant.',
    }),
    tags: z.array(z.string()),
    started_at: nullableTimestamp("When the CI job started, as reported by the uploader."),
    created_at: timestamp("When the run arrived."),
    processed_at: nullableTimestamp("When processing finished (processed or failed)."),
    duration_ms: z.number().int().nullable(),
    tests_count: z.number().int(),
    passed_count: z.number().int(),
    failed_count: z.number().int(),
    errored_count: z.number().int(),
    skipped_count: z.number().int(),
    quarantined_failures_count: z.number().int().openapi({
      description:
        "Failed and errored cases of tests that were quarantined when the run was processed (docs/quarantine.md). They still count in `failed_count`, `errored_count` and `result`.",
    }),
    run_key: z.string().nullable().openapi({
      description:
        'The key its uploads shared (docs/uploads.md, "Runs in parts"): every upload with it joined this run as a part. Null: a run of one upload.',
    }),
    shard_total: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The count of shards its parts declared (`shard=I/N`); null when none did." }),
    parts_count: z.number().int().openapi({
      description:
        "Parts received (GET …/test_runs/{number}/parts); 0 for a run of one upload. While a run in parts is pending, its counts are those of the parts read so far.",
    }),
    completed_at: nullableTimestamp(
      "When the completion of a run in parts was decided (all declared shards in, asked for, or its quiet period ended); later parts are refused (409 `run_completed`). Null for a run of one upload.",
    ),
    passed_on_retry_count: z.number().int().openapi({
      description:
        "Cases that failed or errored, then passed on a retry within this run (their attempts, docs/retries.md). They count as passed in `passed_count`.",
    }),
    failed_attempts_duration_ms: z.number().int().openapi({
      description:
        "Time the reports give to failed and errored attempts before each case's outcome (the price of retries), in milliseconds; attempts without a duration count 0.",
    }),
    verdict_counts: VerdictCountsSchema.nullable().openapi({
      description:
        "The run's failing tests counted per verdict against its base (GET …/test_runs/{number}/comparison, docs/verdicts.md); null until the run is processed and compared.",
    }),
    url: z.string().url(),
  })
  .openapi("TestRun");

export const RunPartSchema = z
  .object({
    number: z.number().int().openapi({ description: "The part's number in its run, in arrival order (1, 2, …)." }),
    shard_index: z.number().int().nullable().openapi({ description: "The shard it declared (`shard=I/N`'s I); null when none." }),
    retry: z.boolean(),
    status: z.enum(["pending", "ready", "failed"]).openapi({
      description:
        "pending: not read yet; ready: read, its counts below (stored with the run when it completes); failed: its report could not be read (`failure_reason`), and the run is stored without it.",
    }),
    failure_reason: z.string().nullable(),
    tests_count: z.number().int(),
    passed_count: z.number().int(),
    failed_count: z.number().int(),
    errored_count: z.number().int(),
    skipped_count: z.number().int(),
    duration_ms: z.number().int().nullable(),
    created_at: timestamp("When the part arrived."),
  })
  .openapi("TestRunPart");

const countsDescription = "Counts are over final outcomes: a test that failed then passed on retry counts once, as passed.";

export const TestSuiteSchema = z
  .object({
    number: z.number().int().openapi({ description: "Counts up within the run, in document order (parents before their nested suites)." }),
    parent_number: z.number().int().nullable().openapi({ description: "The enclosing suite's number; null for a top-level suite." }),
    name: z.string(),
    duration_ms: z.number().int().nullable().openapi({ description: "As reported (JUnit `time`); null when the report gave none." }),
    tests_count: z
      .number()
      .int()
      .openapi({ description: `Cases in this suite and its nested suites. ${countsDescription}` }),
    passed_count: z.number().int(),
    failed_count: z.number().int(),
    errored_count: z.number().int(),
    skipped_count: z.number().int(),
  })
  .openapi("TestSuite");

const CaseStatusEnum = z.enum(CASE_STATUSES);

const TestCaseAttemptSchema = z
  .object({
    status: CaseStatusEnum,
    duration_ms: z.number().int().nullable(),
    failure_message: z.string().nullable().openapi({ description: "Capped at 4,096 characters." }),
  })
  .openapi("TestCaseAttempt");

export const TestCaseSchema = z
  .object({
    id: z.number().int().openapi({ description: "Global identifier (GET /test_cases/{id})." }),
    project_id: z.string().uuid(),
    test_run_number: z.number().int(),
    suite_number: z.number().int(),
    test_id: z.string().uuid().openapi({ description: "The test this case is an execution of (GET /tests/{id})." }),
    name: z.string(),
    classname: z.string().nullable(),
    file: z.string().nullable(),
    status: CaseStatusEnum.openapi({ description: "The final outcome, after any retries." }),
    duration_ms: z.number().int().nullable(),
    failure_type: z.string().nullable(),
    failure_message: z.string().nullable().openapi({
      description:
        "The `message` attribute of the JUnit `<failure>` or `<error>`, else its text. Capped at 4,096 characters. Uploaded test output: escape it before rendering.",
    }),
    failure_text: z.string().nullable().openapi({
      description:
        "The full text of the `<failure>` or `<error>` (usually the stack trace), kept even when a `message` attribute gave `failure_message`; null when the report gave none (passed and skipped cases, runs stored before the field existed). Capped at 4,096 characters. Uploaded test output: escape it before rendering.",
    }),
    attempts: z.array(TestCaseAttemptSchema).openapi({
      description:
        "Earlier tries of the same test in this run, oldest first (at most 20). A failure then a pass on retry is status `passed` with the failed attempt here.",
    }),
    quarantined: z.boolean().openapi({
      description: "Whether the case's test was quarantined when the run was processed (kept as it was then; docs/quarantine.md).",
    }),
    system_out: z.string().nullable().openapi({ description: "The first 4,096 characters of the case's output." }),
    system_err: z.string().nullable().openapi({ description: "The first 4,096 characters of the case's error output." }),
    url: z.string().url().openapi({
      description:
        "The run's page in the web app: a failed or errored case's at its anchor (`#case-{id}`, where the page lists the failure), a passed or skipped case's without one (the page lists no passed cases).",
    }),
  })
  .openapi("TestCase");

export const AlertEventSchema = z
  .object({
    id: z.number().int().openapi({ description: "Event identifier; does not restart per alert." }),
    alert_id: z.string().uuid(),
    metadata: z.record(z.string(), z.unknown()).openapi({
      description: [
        "Why the check tripped: the subject, the window, the baseline, the observed value, the statistic and its threshold. Plain JSON data derived from uploaded test output: escape before rendering. Strings are capped and lists bounded (about 16 KiB per event). Every event has `detector_version` (e.g. `test_flakiness/2`), `statistic`, `observed` and `threshold`. Keys by alert type:",
        "- **test_flakiness** (one event per newly flagged test): `subject` (`test`), `test_key` (the test's id, as `test_id`), `suite`, `classname`, `name`, `rule` (`same_commit`, `passed_on_retry`, `burst_recurred`, `same_commit_bursts`, `burst_same_commit` or `history_flips`), `test_id` (the test in GET /tests/{id}), `owners` (the test's owners from CODEOWNERS when the event was recorded; `[]` for none), `run_number`, `branch`, `commit_sha`, `window_runs`, `failures`, `passes`, `failure_rate` with `failure_rate_ci95_low`/`_high` (Wilson), `flips`, `flip_rate`, `runs_test_z`, `decayed_flip_score`, `evidence` (up to 8: `kind`, `commit_sha`, `branch`, `run_number`, `passed`, `failed`), `first_failure_run_number`, `last_failure_run_number`, `baseline`, `branch_scope`, `infra_excluded_runs_in_window`, `burst_runs_in_window` (default-branch runs in the window whose failures were a co-failure burst: evidence only when the same tests burst together again, docs/alert-checks.md), `thresholds`.",
        "- **performance_regression** (run duration, or one of the slowest tests): `subject` (`run_duration` or `test_duration`), `test_key` (the test's id) with `test_id`, `owners` (from CODEOWNERS) and `name` for tests, `baseline` (`from_run_number`, `to_run_number`, `n`, `median_ms`, `mad_ms`), `recent` (`from_run_number`, `to_run_number`, `n`, `median_ms`), `delta_ms`, `rel_change`, `effect_size_mads`, `p_value` (one-sided Mann–Whitney U), `window_kind` (`short`: the last 8 runs against up to 30 before them; `long`, for smaller sustained shifts: the last 20 against up to 20 for a test, the last 24 against up to 48 for the run duration), `min_rel_change` and `min_effect_size_mads` (that window's thresholds), `alpha` (Bonferroni-corrected for tests), `monitored_series`, `window`, `top_contributors` (run duration: the tests that slowed most).",
        "- **failure_rate_spike**: `subject` (`run`), `executed`, `failed`, `errored` (both without the failures of quarantined tests), `quarantined_failing_count` (failed and errored cases of quarantined tests: in `executed`, not in the failing count), `failure_rate`, `baseline_failure_rate`, `baseline_effective_runs`, `overdispersion_rho`, `ratio_to_baseline`, `delta_pp`, `p_value` (beta-binomial tail), `alpha`, `thresholds`, `window`, `newly_failing_tests` (up to 20 names) and `newly_failing_count`, `persistent_failing_count` (failing tests that also failed last time, left out of the infrastructure guard), `recurrent_failing_count` (failing tests that also failed within the previous 50 default-branch runs), `fresh_failing_count` and `p_value_fresh` (the fresh failures must trip on their own), `infra_suspect` and `infra_suspect_reason`.",
        "- **skipped_test_count_creep**: `subject` (`run`), `skipped_count`, `total_tests`, `skipped_ratio`, `baseline_skipped_count`, `baseline_ratio`, `baseline_run_number`, `delta`, `rel_delta`, `window_runs`, `mann_kendall_s`, `mann_kendall_p`, `sen_slope_per_run`, `pattern` (`step` or `gradual`), `newly_skipped_tests` (up to 50 names) and `newly_skipped_count`, `newly_unskipped_count`, `thresholds`.",
        "Details and defaults: docs/alert-checks.md.",
      ].join("\n"),
    }),
    triggered_at: timestamp("When the event was recorded."),
    test_run: TestRunSchema,
  })
  .openapi("AlertEvent");

export const listOf = <T extends z.ZodTypeAny>(item: T, name: string) =>
  z.object({ data: z.array(item), pagination: PaginationSchema }).openapi(name);

/**
 * `limit` is validated by parseLimit (src/lib/pagination.ts) so that the rules are exact:
 * absent → 25, above 100 → 100, anything but an integer ≥ 1 → 400.
 */
/**
 * Every list's description ends with this: lists ignore query parameters they do not know
 * (clients must be lenient both ways), which makes a misspelled filter silently unfiltered.
 */
const UNKNOWN_QUERY_PARAMETERS_NOTE =
  "Query parameters this list does not know are ignored, not refused, so that clients and servers of different versions keep working together: a misspelled filter (`?reslt=tests_failed`) filters nothing. Check filter names against this document when a list looks unfiltered.";

/** A list operation's description: its own text, then the rule every list shares. */
export const listDescription = (text?: string) => (text ? `${text}\n\n${UNKNOWN_QUERY_PARAMETERS_NOTE}` : UNKNOWN_QUERY_PARAMETERS_NOTE);

export const PageQuerySchema = z.object({
  limit: z
    .string()
    .optional()
    .openapi({
      param: { name: "limit", in: "query" },
      type: "integer",
      minimum: 1,
      default: 25,
      description: "Page size: default 25, maximum 100 (larger values are capped); below 1 or not an integer → 400.",
    } as object),
  cursor: z
    .string()
    .optional()
    .openapi({
      param: { name: "cursor", in: "query" },
      description: "next_cursor of the previous page, exactly as received. Valid only for the listing (and filters) that issued it.",
    }),
});

export const AlertsQuerySchema = PageQuerySchema.extend({
  status: z
    .enum(ALERT_STATUSES, { error: `must be one of ${ALERT_STATUSES.join(", ")}` })
    .optional()
    .openapi({
      param: { name: "status", in: "query" },
      description: "active (default): active and not snoozed; snoozed: active and snoozed; inactive: not active; all.",
    }),
  project_id: z
    .string()
    .optional()
    .openapi({ param: { name: "project_id", in: "query" }, description: "Only this project's alerts; unknown → 404." }),
  alert_type: z
    .enum(ALERT_TYPES, { error: `must be one of ${ALERT_TYPES.join(", ")}` })
    .optional()
    .openapi({ param: { name: "alert_type", in: "query" } }),
});

const enumFilter = <const T extends readonly [string, ...string[]]>(values: T, name: string, description: string) =>
  z
    .enum(values, { error: `must be one of ${values.join(", ")}` })
    .optional()
    .openapi({ param: { name, in: "query" }, description });

export const TestRunsQuerySchema = PageQuerySchema.extend({
  branch: z
    .string()
    .max(255)
    .refine((value) => !value.includes("\u0000"), "must not contain NUL characters")
    .optional()
    .openapi({ param: { name: "branch", in: "query" }, description: "Only runs of this branch (exact match)." }),
  commit_sha: z
    .string()
    .regex(/^[0-9a-fA-F]{7,64}$/, "must be a commit SHA: 7 to 64 hexadecimal characters")
    .optional()
    .openapi({
      param: { name: "commit_sha", in: "query" },
      description:
        "Only runs of this commit, case-insensitive. A full SHA (40 hexadecimal characters, or 64 for SHA-256) matches the runs whose `commit_sha` is exactly it; a shorter one, of at least 7 characters, is a prefix: the runs whose `commit_sha` starts with it (an abbreviated SHA may match several commits). A run uploaded with an abbreviated `commit_sha` matches only a prefix of it, never the full SHA. Anything else is a 400 `invalid_request`.",
      example: "9fceb02",
    }),
  result: enumFilter(RUN_RESULTS, "result", "Only processed runs with this result."),
  status: enumFilter(RUN_STATUSES, "status", "Only runs in this processing state."),
});

export const TestCasesQuerySchema = PageQuerySchema.extend({
  status: enumFilter(CASE_STATUSES, "status", "Only cases with this final outcome."),
});

export const IdParamSchema = <N extends string>(name: N, description: string) =>
  z.object({ [name]: z.string().openapi({ param: { name, in: "path" }, description }) } as Record<N, z.ZodString>);

/** Postgres text cannot hold NUL, so it is rejected as a validation error instead of failing the query. */
const hasNoNul = (value: string) => !value.includes("\u0000");

/** A required-when-present display name: non-blank string of at most `max` characters, stored as sent. */
export const displayNameSchema = (max = 255) =>
  z
    .string({ error: (issue) => (issue.input === undefined || issue.input === null ? "can't be blank" : "must be a string") })
    .refine((value) => value.trim().length > 0, "can't be blank")
    .refine((value) => value.length <= max, `is too long (maximum is ${max} characters)`)
    .refine(hasNoNul, "must not contain NUL characters");

/** Free-form text; null (or "") clears it where the field is nullable. */
export const freeTextSchema = (max = 10_000) =>
  z
    .string({ error: "must be a string or null" })
    .max(max, `is too long (maximum is ${max} characters)`)
    .refine(hasNoNul, "must not contain NUL characters");

export const ProjectPatchSchema = z
  .object({
    name: displayNameSchema().optional().openapi({ description: "Non-blank display name.", example: "Checkout service" }),
    description: freeTextSchema().nullable().optional().openapi({ description: "Free-form; an empty string (or null) clears it." }),
  })
  .openapi("ProjectUpdate", {
    description: "Only name and description can change. Unknown fields are ignored; a body with neither is a 400.",
  });

export const SnoozeBodySchema = z
  .object({
    duration: z
      .enum(SNOOZE_DURATION_NAMES, { error: `must be one of ${SNOOZE_DURATION_NAMES.join(", ")}` })
      .openapi({ description: "How long to suppress notifications." }),
  })
  .openapi("SnoozeRequest");

const TestHealthSchema = z.enum(TEST_HEALTHS).openapi("TestHealth", {
  description:
    "`flaky`: passed and failed on the same code; `broken`: failing consistently on the default branch; otherwise `healthy` (docs/tests.md).",
});

const TestRunSummarySchema = z
  .object({
    number: z.number().int(),
    branch: z.string().nullable(),
    commit_sha: z.string().nullable(),
    created_at: timestamp("When the run arrived."),
    url: z.string().url().openapi({ description: "The run's page in the web app." }),
  })
  .openapi("TestRunSummary");

const QuarantinedBySchema = z
  .object({
    via: z.enum(QUARANTINE_VIAS).openapi({
      description:
        "`page`: a person on the test's page; `api`: an API key through /api/v1; `mcp`: an API key through /mcp; `auto`: the service (auto-quarantine).",
    }),
    id: z
      .string()
      .uuid()
      .nullable()
      .openapi({ description: "The person's user id (`page`) or the API key's id (`api`, `mcp`); null for `auto`." }),
    name: z
      .string()
      .nullable()
      .openapi({ description: "The person's or the API key's name when the test was quarantined; null for `auto`." }),
    email: z.string().nullable().openapi({ description: "The person's e-mail when the test was quarantined (`page` only)." }),
  })
  .openapi("QuarantinedBy");

export const QuarantineSchema = z
  .object({
    reason: z.string(),
    owner: z.string().nullable().openapi({ description: "An e-mail address or a `@org/team` handle; null when none was given." }),
    issue_url: z.string().nullable().openapi({ description: "The issue that tracks the fix (http or https); null when none was given." }),
    created_at: timestamp("When the test was quarantined (this quarantine: a new one replaces it whole)."),
    expires_at: timestamp("When the quarantine ends by itself."),
    source: z.enum(QUARANTINE_SOURCES).openapi({ description: "`manual`: through the API; `auto`: by the service (a later setting)." }),
    all_variants: z.boolean().openapi({
      description:
        'The quarantine names every variant of the test, new ones too (docs/quarantine.md, "Variants"); false: this variant only.',
    }),
    quarantined_by: QuarantinedBySchema.nullable().openapi({
      description: "Who quarantined the test and through what; null for quarantines made before this was recorded.",
    }),
  })
  .openapi("Quarantine");

const rate = (description: string) => z.number().min(0).max(1).nullable().openapi({ description });

export const TestSchema = z
  .object({
    id: z.string().uuid(),
    project_id: z.string().uuid(),
    name: z.string(),
    classname: z.string().nullable(),
    file: z.string().nullable(),
    variant: VariantSchema.openapi({
      description:
        'The configuration the test runs in (`os=windows,node=22`, normalized), part of its identity: the same name in another variant is another test, a sibling (docs/tests.md, "Variants"); "" without one.',
    }),
    owners: z.array(z.string()).openapi({
      description:
        "The owners of `file` under the project's latest CODEOWNERS (`PUT /uploads/v1/codeowners`): `@user`, `@org/team` or e-mail addresses, as written there; the last matching rule gives them. `[]` without a CODEOWNERS, without a `file`, when no rule matches, or when the last matching rule names none (docs/codeowners.md).",
      example: ["@acme/checkout"],
    }),
    suite: z.string().nullable().openapi({ description: "Innermost suite of the latest execution." }),
    health: TestHealthSchema,
    health_changed_at: nullableTimestamp("When the health last changed; null while it never has."),
    executions_count: z.number().int().openapi({ description: "Executions on every branch, all time (skipped ones included)." }),
    failing_streak: z.number().int().min(0).openapi({
      description:
        'The test\'s latest consecutive default-branch executions that failed or errored, up to its latest run; 0 when the latest passed. At 10 a test turns `broken`; below that a `healthy` test with a streak reads "failing (N in a row)" on the pages and in the MCP summaries.',
    }),
    last_status: z.enum(CASE_STATUSES).nullable(),
    last_executed_at: nullableTimestamp("When the run of its latest execution arrived."),
    last_failed_at: nullableTimestamp("When the run of its latest failure or error arrived."),
    first_seen_at: timestamp("When the run of its first execution arrived."),
    failure_rate: rate("Failed or errored executions / executions in the window; null while the window is empty."),
    flip_rate: rate("Changes between passing and failing / (executions − 1) in the window; null below two executions."),
    impact: z.number().int().openapi({ description: "Executions in the window that failed or errored." }),
    passed_on_retry_count: z.number().int().openapi({
      description:
        "Executions in the window that passed on retry: a failed or errored attempt, then passed (in the same report, or a retry part of the run; docs/retries.md). They count as passes in `failure_rate`, `flip_rate` and `impact`, and as same-commit evidence of flakiness.",
    }),
    duration_p50_ms: z.number().int().nullable().openapi({
      description:
        "Median duration over the window: a streaming log-normal estimate (docs/tests.md), exact mean of ln(1 + ms) over the first 50 durations, then exponentially weighted (1/50).",
    }),
    duration_p95_ms: z.number().int().nullable().openapi({
      description:
        "95th percentile duration over the window, from the same log-normal estimate: e^(mean + 1.645·sd) − 1 of ln(1 + ms). Can exceed the slowest execution seen.",
    }),
    window: z
      .object({
        executions: z.number().int().openapi({ description: "Executions the rates cover (skipped ones are not in the window)." }),
        max_executions: z.number().int().openapi({ description: "The window's size: the last 50 executions." }),
        branch: z
          .string()
          .nullable()
          .openapi({ description: "The project's default branch; null: `main`, `master` and runs without a branch." }),
      })
      .openapi({ description: "What the rates, impact and durations cover: the last executions on the project's default branch." }),
    quarantined: z.boolean().openapi({
      description: "Whether a quarantine is in force now (derived from its `expires_at`: an expired quarantine reads as false).",
    }),
    quarantine: QuarantineSchema.nullable().openapi({
      description: "The quarantine in force; null when the test is not quarantined (never, unquarantined or expired).",
    }),
    url: z.string().url().openapi({ description: "The test's page in the web app." }),
  })
  .openapi("Test");

export const TestExecutionSchema = TestCaseSchema.extend({ test_run: TestRunSummarySchema }).openapi("TestExecution");

export const HealthTransitionSchema = z
  .object({
    id: z.number().int(),
    test_id: z.string().uuid(),
    from: TestHealthSchema,
    to: TestHealthSchema,
    reason: z.string().openapi({ description: "Why, in words (the rule and the evidence)." }),
    test_run: TestRunSummarySchema,
    created_at: timestamp("When the run that caused it arrived."),
  })
  .openapi("TestHealthTransition");

export const TestsQuerySchema = PageQuerySchema.extend({
  health: enumFilter([...TEST_HEALTHS, "all"] as const, "health", "Only tests with this health; `all` (the default) lists every test."),
  q: z
    .string()
    .max(255)
    .refine((value) => !value.includes("\u0000"), "must not contain NUL characters")
    .optional()
    .openapi({ param: { name: "q", in: "query" }, description: "Case-insensitive substring of the name, classname or file." }),
  sort: enumFilter(
    TEST_SORTS,
    "sort",
    "`impact` (default), `failure_rate`, `duration` (p95), `last_failed`: descending; `name`: ascending. Ties by id.",
  ),
  quarantined: enumFilter(
    QUARANTINED_FILTER_VALUES,
    "quarantined",
    "`true`: only tests quarantined now; `false`: only tests that are not (expired quarantines included). Absent: every test.",
  ),
  owner: z
    .string()
    .min(1)
    .max(255)
    .refine((value) => !value.includes("\u0000"), "must not contain NUL characters")
    .optional()
    .openapi({
      param: { name: "owner", in: "query" },
      description: "Only tests with this owner among their `owners` (from CODEOWNERS): exact, case-sensitive, e.g. `@acme/checkout`.",
      example: "@acme/checkout",
    }),
  variant: variantFilter(
    'Only tests of this variant (docs/tests.md, "Variants"), normalized as uploads are (`os=windows, node=22` is `node=22,os=windows`); empty (`variant=`): the tests of runs without a variant. Absent: every variant.',
  ),
});

/** A `variant` query parameter: normalized as an upload's (src/lib/variant.ts); "" names the variant of runs without one. */
export function variantFilter(description: string) {
  return z
    .string()
    .max(MAX_RAW_VARIANT_LENGTH, `is too long (maximum is ${MAX_RAW_VARIANT_LENGTH} characters)`)
    .refine((value) => !/[\u0000-\u001F\u007F]/.test(value), "must not contain control characters")
    .transform(normalizeVariant)
    .refine((value) => value.length <= MAX_VARIANT_LENGTH, `is too long (maximum is ${MAX_VARIANT_LENGTH} characters once normalized)`)
    .optional()
    .openapi({ param: { name: "variant", in: "query" }, description, example: "node=22,os=windows", type: "string" } as object);
}

const OWNER_PATTERN = /^(?:[^\s@]+@[^\s@]+\.[^\s@]+|@[A-Za-z0-9][A-Za-z0-9-]*\/[A-Za-z0-9][A-Za-z0-9._-]*)$/;

const isHttpUrl = (value: string) => {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
};

/** The one of `expires_at` and `duration` a quarantine needs: neither or both is a detail on `duration`. */
const presence = (value: unknown) => value !== undefined && value !== null;

/**
 * The body of POST /tests/{id}/quarantine: shapes here; the rules that need the clock (in the
 * future, at most 90 days ahead) in src/services/tests/quarantine.ts. `null` counts as absent.
 */
export const QuarantineBodySchema = z
  .object({
    reason: displayNameSchema(1_000).openapi({
      description: "Why the test is quarantined: non-blank, at most 1,000 characters.",
      example: "Times out on the ARM runners",
    }),
    expires_at: isoDateTimeWithZone("must be an ISO 8601 date-time with a time zone, e.g. 2026-12-01T00:00:00Z").nullish().openapi({
      description: "When the quarantine ends: in the future, at most 90 days ahead. Give this or `duration`.",
      example: "2026-12-01T00:00:00Z",
    }),
    duration: z
      .enum(QUARANTINE_DURATION_NAMES, { error: `must be one of ${QUARANTINE_DURATION_NAMES.join(", ")}` })
      .nullish()
      .openapi({ description: "How long from now the quarantine lasts. Give this or `expires_at`." }),
    owner: z
      .string({ error: "must be a string or null" })
      .max(255, "is too long (maximum is 255 characters)")
      .regex(OWNER_PATTERN, "must be an e-mail address or a @org/team handle")
      .nullish()
      .openapi({ description: "Who looks after the fix: an e-mail address or a `@org/team` handle.", example: "@acme/checkout" }),
    issue_url: z
      .string({ error: "must be a string or null" })
      .max(2_048, "is too long (maximum is 2048 characters)")
      .refine(isHttpUrl, "must be an http or https URL")
      .nullish()
      .openapi({ description: "The issue that tracks the fix (http or https).", example: "https://github.com/acme/shop/issues/42" }),
    all_variants: z.boolean({ error: "must be true or false" }).nullish().openapi({
      description:
        '`true`: the quarantine names every variant of the test (docs/quarantine.md, "Variants"): its siblings in the project\'s other variants get the same quarantine, and the CI list of any variant, new ones too, holds it. Ending it on any of them ends it on all. Absent or `false`: this variant only.',
    }),
  })
  .check(
    z.refine((body: { expires_at?: unknown; duration?: unknown }) => presence(body.duration) || presence(body.expires_at), {
      path: ["duration"],
      message: `is required unless expires_at is given: one of ${QUARANTINE_DURATION_NAMES.join(", ")}`,
      // Also when other fields were rejected (every detail in one answer), but not a second detail on an invalid duration.
      when: (payload) =>
        typeof payload.value === "object" && payload.value !== null && !payload.issues.some((issue) => issue.path?.[0] === "duration"),
    }),
    z.refine((body: { expires_at?: unknown; duration?: unknown }) => !(presence(body.duration) && presence(body.expires_at)), {
      path: ["duration"],
      message: "can't be given with expires_at: give one of the two",
      when: (payload) =>
        typeof payload.value === "object" && payload.value !== null && !payload.issues.some((issue) => issue.path?.[0] === "duration"),
    }),
  )
  .openapi("QuarantineRequest", { description: "`reason` and exactly one of `expires_at` and `duration`; `null` counts as absent." });

const QuarantinedTestForCiSchema = z
  .object({
    test_id: z.string().uuid().openapi({ description: "The test (GET /api/v1/tests/{id})." }),
    classname: z.string().nullable(),
    name: z.string(),
    file: z
      .string()
      .nullable()
      .openapi({ description: "Stands in for the classname when the report gave none (the test's identity: docs/tests.md)." }),
    variant: VariantSchema.openapi({
      description: "The variant the list was asked for (`variant`); the entry matches that variant's test.",
    }),
    all_variants: z.boolean().openapi({
      description: "The quarantine names every variant of the test (`all_variants`), this one included even if it is new.",
    }),
    reason: z.string(),
    expires_at: timestamp("When the quarantine ends by itself."),
  })
  .openapi("QuarantinedTestForCi");

export const RunFailedTestSchema = z
  .object({
    test_id: z.string().uuid().openapi({ description: "The test this case is an execution of (GET /api/v1/tests/{id})." }),
    classname: z.string().nullable(),
    name: z.string(),
    file: z.string().nullable(),
    status: z.enum(["failed", "errored"]).openapi({ description: "The case's final outcome." }),
    quarantined: z.boolean().openapi({ description: "Whether the test was quarantined when the run was processed." }),
    url: z.string().url().openapi({ description: "The test's page in the web app." }),
  })
  .openapi("RunFailedTest");

export const QuarantinedTestsForCiSchema = z.object({ data: z.array(QuarantinedTestForCiSchema) }).openapi("QuarantinedTestsForCi");

export const TestExecutionsQuerySchema = PageQuerySchema.extend({
  status: enumFilter(CASE_STATUSES, "status", "Only executions with this final outcome."),
  branch: z
    .string()
    .max(255)
    .refine((value) => !value.includes("\u0000"), "must not contain NUL characters")
    .optional()
    .openapi({ param: { name: "branch", in: "query" }, description: "Only executions in runs of this branch (exact match)." }),
});

export const FailureGroupSchema = z
  .object({
    signature: z
      .string()
      .openapi({ description: "Hash of the failure's type, normalized message and first frames (docs/failure-groups.md)." }),
    message: z.string().openapi({ description: "The normalized message (first line): volatile parts masked." }),
    occurrences: z.number().int().openapi({ description: "Failed or errored cases with this signature." }),
    tests_count: z.number().int().openapi({ description: "Distinct tests that failed this way (1 in a test's own groups)." }),
    first_seen_at: timestamp("When the run of its first occurrence arrived."),
    last_seen_at: timestamp("When the run of its latest occurrence arrived."),
    sample: z
      .object({
        test_case_id: z.number().int(),
        message: z.string().nullable(),
        text: z.string().nullable(),
      })
      .openapi({ description: "The latest failure as written, unmasked (GET /test_cases/{id})." }),
  })
  .openapi("FailureGroup");

export const RunFailureGroupSchema = FailureGroupSchema.extend({
  run_occurrences: z.number().int().openapi({ description: "Cases of this run in the group." }),
  run_tests_count: z.number().int().openapi({ description: "Tests of this run in the group." }),
  test_case_ids: z.array(z.number().int()).openapi({ description: "This run's cases in the group, newest first." }),
}).openapi("RunFailureGroup");

const VerdictSchema = z.enum(VERDICTS).openapi("Verdict", {
  description:
    "A failure's verdict against the run's base, the first that applies in this order (docs/verdicts.md): `quarantined` (the test was quarantined when the run arrived), `infrastructure` (the run is a mass failure), `failing_on_base` (it failed in the base too, or is broken on the default branch), `flaky` (flaky health, or it passed on retry in this run), `new`.",
});

const testPageUrl = z.string().url().openapi({ description: "The test's page in the web app." });

export const RunComparisonSchema = z
  .object({
    run_number: z.number().int(),
    project_id: z.string().uuid(),
    base_choice: z.enum(BASE_CHOICES).openapi({
      description:
        "How the base was chosen: `base_commit` (the default branch's run on the uploaded `base_commit_sha`), `latest_default_before` (the latest default-branch run before this one: no base commit named, or none of its runs processed yet), `previous_default` (this run is on the default branch: the previous one), `none` (no default-branch run to compare with).",
    }),
    base: z
      .object({
        number: z.number().int(),
        branch: z.string().nullable(),
        commit_sha: z.string().nullable(),
        url: z.string().url().openapi({ description: "The base run's page in the web app." }),
      })
      .nullable()
      .openapi({ description: "The base run; null when there is none (`base_choice` `none`, or the base run was deleted)." }),
    awaited_base_commit: z.string().nullable().openapi({
      description:
        "The named `base_commit_sha` while it has no processed default-branch run (a fallback base is used meanwhile); the run is compared again when one is processed within 7 days. Null otherwise.",
    }),
    infrastructure_reason: z
      .string()
      .nullable()
      .openapi({ description: "Why the run counts as a mass failure (every failure `infrastructure`); null when it does not." }),
    verdict_counts: VerdictCountsSchema,
    fixed_count: z.number().int().openapi({ description: "Tests that failed in the base and pass in this run." }),
    compared_at: timestamp("When the comparison was made (processing, or the comparison made again)."),
  })
  .openapi("RunComparison");

export const RunVerdictSchema = z
  .object({
    test_id: z.string().uuid().openapi({ description: "The test (GET /api/v1/tests/{id})." }),
    classname: z.string().nullable(),
    name: z.string(),
    file: z.string().nullable(),
    test_case_id: z
      .number()
      .int()
      .openapi({ description: "The failing case (GET /api/v1/test_cases/{id}); for a pass on retry, the passing case." }),
    status: z.enum(CASE_STATUSES).openapi({ description: "The case's final outcome (`passed` for a pass on retry)." }),
    verdict: VerdictSchema,
    reason: z.string().openapi({ description: "One line a person can read, e.g. `also failed on main in run #57 (28335f0)`." }),
    failure_signature: z.string().nullable().openapi({ description: "The failure group's signature (docs/failure-groups.md)." }),
    failure_message: z.string().nullable(),
    url: testPageUrl,
  })
  .openapi("RunVerdict");

export const RunFixedTestSchema = z
  .object({
    test_id: z.string().uuid(),
    classname: z.string().nullable(),
    name: z.string(),
    file: z.string().nullable(),
    test_case_id: z.number().int().openapi({ description: "The passing case in this run." }),
    base_test_case_id: z.number().int().openapi({ description: "The failing case in the base run." }),
    url: testPageUrl,
  })
  .openapi("RunFixedTest");

export const RunVerdictsQuerySchema = PageQuerySchema.extend({
  verdict: enumFilter(VERDICTS, "verdict", "Only the failures with this verdict."),
});

/** A UTC calendar day, `YYYY-MM-DD`, that exists (no 2026-02-30). */
function isCalendarDay(value: string): boolean {
  const at = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
  return !Number.isNaN(at) && new Date(at).toISOString().slice(0, 10) === value;
}
const costDay = (name: string, description: string) =>
  z
    .string()
    .refine(isCalendarDay, { error: "must be a date, YYYY-MM-DD" })
    .optional()
    .openapi({ param: { name, in: "query" }, format: "date", description, example: "2026-11-01" });

export const FlakinessCostQuerySchema = z.object({
  from: costDay("from", "First UTC day of the window, included. Default: 29 days before `to` (a 30-day window)."),
  to: costDay(
    "to",
    "Last UTC day of the window, included. Default: today (UTC). At most 366 days from `from` to `to`, both included; `from` after `to` is a 400.",
  ),
});

const ms = (description: string) => z.number().int().openapi({ description });
const costShare = (description: string) => z.number().min(0).max(1).nullable().openapi({ description });

const TestCostFiguresShape = {
  total_ms: ms("The sum of the components, in ms of test time."),
  retry_ms: ms("Failed and errored attempts of cases that then passed on a retry in the same run."),
  flaky_failures_ms: ms(
    "Failing cases (their duration and their failed attempts') of tests that were flaky when their run arrived, not quarantined.",
  ),
  quarantined_failures_ms: ms("Failing cases (their duration and their failed attempts') of tests quarantined when their run arrived."),
};

const CostFiguresSchema = z
  .object({
    ...TestCostFiguresShape,
    total_ms: ms("The sum of the components (re-runs included), in ms."),
    rerun_ms: ms(
      "The durations of re-runs: runs of a commit whose previous build (same branch and tags, another build id) failed only by flaky or quarantined tests.",
    ),
    reruns_count: z.number().int().openapi({ description: "Those re-runs." }),
    runs_count: z.number().int().openapi({ description: "Processed runs (arrived that day or in the window), for scale." }),
  })
  .openapi("FlakinessCostFigures");

export const FlakinessCostSchema = z
  .object({
    project_id: z.string().uuid(),
    from: z.string().openapi({ format: "date", description: "First UTC day of the window, included." }),
    to: z.string().openapi({ format: "date", description: "Last UTC day of the window, included." }),
    totals: CostFiguresSchema,
    days: z
      .array(CostFiguresSchema.extend({ day: z.string().openapi({ format: "date" }) }))
      .openapi({ description: "Every day of the window, oldest first (zeros for a day without runs)." }),
    top_tests: z
      .array(
        z.object({
          test_id: z.string().uuid().openapi({ description: "The test (GET /api/v1/tests/{id})." }),
          name: z.string(),
          classname: z.string().nullable(),
          file: z.string().nullable(),
          ...TestCostFiguresShape,
          share: costShare("The test's total over the project's (re-runs included); null when the project's is 0."),
          url: z.string().url().openapi({ description: "The test's page in the web app." }),
        }),
      )
      .openapi({ description: "The 10 most costly tests over the window, most costly first (ties by test id)." }),
  })
  .openapi("FlakinessCost", {
    description: "The cost of flakiness of a project over a window of UTC days, in ms of test time (docs/flakiness-cost.md).",
  });

export const TestFlakinessCostSchema = z
  .object({
    test_id: z.string().uuid(),
    project_id: z.string().uuid(),
    from: z.string().openapi({ format: "date" }),
    to: z.string().openapi({ format: "date" }),
    totals: z.object(TestCostFiguresShape),
    project_total_ms: ms("The project's total over the same window, re-runs included."),
    share: costShare("`totals.total_ms` over `project_total_ms`; null when the project's is 0."),
    days: z
      .array(z.object({ day: z.string().openapi({ format: "date" }), ...TestCostFiguresShape }))
      .openapi({ description: "Every day of the window, oldest first." }),
  })
  .openapi("TestFlakinessCost", {
    description: "A test's share of its project's cost of flakiness over a window of UTC days (docs/flakiness-cost.md).",
  });
