/**
 * Postgres schema (Drizzle). Migrations under drizzle/ are generated from this file
 * with `npm run db:generate` and never edited by hand.
 *
 * Keyset columns (`created_at`, `triggered_at`) are `timestamptz(3)`: Postgres keeps
 * microseconds by default while JavaScript dates hold milliseconds, and a cursor built
 * from a truncated timestamp would skip or repeat rows. Millisecond columns round-trip
 * exactly through `Date`, and the id tiebreaker orders rows that share a millisecond.
 *
 * Keyset indexes are declared `DESC NULLS FIRST` because that is what `ORDER BY … DESC` means in
 * Postgres; drizzle-kit's default `DESC NULLS LAST` would not match the queries and every list
 * would sort all matching rows instead of reading the index.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  customType,
  boolean,
  check,
  date,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import {
  ALERT_TYPES,
  CASE_STATUSES,
  type CaseStatus,
  DELIVERY_STATUSES,
  EMAIL_KINDS,
  EMAIL_STATUSES,
  QUARANTINE_SOURCES,
  QUARANTINE_VIAS,
  RUN_RESULTS,
  RUN_STATUSES,
  TEST_HEALTHS,
  WEBHOOK_EVENT_TYPES,
  CHANNEL_KINDS,
  type ChannelEvent,
  VERDICTS,
  BASE_CHOICES,
  type Verdict,
} from "../lib/vocabulary";

/** Bytes, as Postgres' bytea (Uint8Array in, whatever the driver gives out: read with `bytesOf`). */
const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => "bytea" });

const timestampMs = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: "date" });

export const alertTypeEnum = pgEnum("alert_type", ALERT_TYPES);
export const runResultEnum = pgEnum("run_result", RUN_RESULTS);
export const runStatusEnum = pgEnum("run_status", RUN_STATUSES);
export const caseStatusEnum = pgEnum("case_status", CASE_STATUSES);
export const testHealthEnum = pgEnum("test_health", TEST_HEALTHS);
export const quarantineSourceEnum = pgEnum("quarantine_source", QUARANTINE_SOURCES);
export const quarantineViaEnum = pgEnum("quarantine_via", QUARANTINE_VIAS);

/**
 * An organization: the API's, and better-auth's `organization` model too (src/auth/people.ts maps
 * it here), so one organization has one id everywhere and keeps its API key. `slug`, `logo` and
 * `metadata` are the plugin's columns; organizations created by the admin API or sign-up have none.
 */
export const organizations = pgTable("organizations", {
  id: uuid("id").primaryKey().defaultRandom(),
  name: text("name").notNull(),
  timeZone: text("time_zone").notNull().default("UTC"),
  slug: text("slug").unique("organizations_slug_key"),
  logo: text("logo"),
  metadata: text("metadata"),
  createdAt: timestampMs("created_at").notNull().defaultNow(),
  updatedAt: timestampMs("updated_at").notNull().defaultNow(),
  /**
   * Counts the committed transactions that changed what the organization's /api/v1 GETs show: the
   * ETags' data version (docs/conditional-requests.md). Kept by triggers (drizzle/0020_data_versions.sql),
   * never by the app, so that no write path can forget it.
   */
  dataVersion: bigint("data_version", { mode: "number" }).notNull().default(0),
});

/**
 * The organizations a transaction has changed, until it commits: statement triggers note them here,
 * and a deferred trigger bumps each one's `data_version` at commit (drizzle/0020_data_versions.sql),
 * so the organization's row is locked for the commit only, not from the first write on.
 */
export const organizationDataChanges = pgTable(
  "organization_data_changes",
  {
    organizationId: uuid("organization_id").notNull(),
    transactionId: bigint("transaction_id", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.transactionId] })],
);

/**
 * When something an organization's GETs show changes by the passing of time alone (a snooze or a
 * quarantine ending): the ETags include the latest of these that has passed.
 */
export const organizationDeadlines = pgTable(
  "organization_deadlines",
  {
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    at: timestampMs("at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.at] })],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** SHA-256 of the full key, hex. The key itself is never stored. */
    keyHash: text("key_hash").notNull(),
    /** First characters of the key, safe to show so a human can tell keys apart. */
    displayPrefix: text("display_prefix").notNull(),
    /**
     * The key sealed under SECRETS_KEY (src/lib/secret-box.ts, context `api_keys/<id>/key`), so an
     * admin can reveal it on the team page. Null for keys made before it was kept: those cannot be
     * revealed until regenerated (only their hash exists).
     */
    keyEncrypted: text("key_encrypted"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    revokedAt: timestampMs("revoked_at"),
  },
  (t) => [
    uniqueIndex("api_keys_key_hash_key").on(t.keyHash),
    // One live key per organization: regeneration revokes the old row in the same transaction.
    uniqueIndex("api_keys_one_live_per_org")
      .on(t.organizationId)
      .where(sql`${t.revokedAt} is null`),
  ],
);

export const projects = pgTable(
  "projects",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    description: text("description"),
    /** SHA-256 of the upload token, hex. */
    uploadTokenHash: text("upload_token_hash").notNull(),
    /**
     * The upload token sealed under the server's keyring for this project's row (secret-box), so
     * that members can read it on the settings page. Null for tokens made before it was kept: those
     * cannot be shown until the token is rotated (docs/project-pages.md).
     */
    uploadTokenEncrypted: text("upload_token_encrypted"),
    /** Also the run-number allocator: incremented atomically when a run arrives. */
    testRunsCount: integer("test_runs_count").notNull().default(0),
    latestResult: runResultEnum("latest_result"),
    /** The branch whose runs feed the statistical checks; null → main, master, or runs without a branch. */
    defaultBranch: text("default_branch"),
    lastTestRunAt: timestampMs("last_test_run_at"),
    /** Tests known in the project, and how many are flaky or broken now (kept by run processing). */
    testsCount: integer("tests_count").notNull().default(0),
    flakyTestsCount: integer("flaky_tests_count").notNull().default(0),
    brokenTestsCount: integer("broken_tests_count").notNull().default(0),
    /**
     * Counts every change of the project's quarantines (quarantine, unquarantine): with the latest
     * expiry that has passed, it is the ETag of the CI's quarantine list (docs/quarantine.md).
     */
    quarantineVersion: integer("quarantine_version").notNull().default(0),
    /**
     * The test cases the project stores (its test_cases rows): what QUOTA_STORED_CASES caps, summed
     * over the organization's projects when an upload arrives (docs/quotas.md). Increased by run
     * processing in the statement that marks the run processed, in the transaction that stores its
     * cases; decreased by a trigger whenever cases are deleted (drizzle/0027_stored_cases_quota.sql),
     * so it changes in the same transaction as the cases, whatever deletes them.
     */
    storedCasesCount: bigint("stored_cases_count", { mode: "number" }).notNull().default(0),
    /**
     * Auto-quarantine (docs/quarantine.md): null is off; otherwise a test that turns flaky is
     * quarantined for this many days (1 to 90), with source `auto`.
     */
    autoQuarantineDays: integer("auto_quarantine_days"),
    /**
     * How many days the project's test cases and payloads are kept (docs/retention.md): null is the
     * deployment's RETENTION_DAYS; otherwise 1 to SUMMARY_RETENTION_DAYS.
     */
    retentionDays: integer("retention_days"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    updatedAt: timestampMs("updated_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("projects_upload_token_hash_key").on(t.uploadTokenHash),
    index("projects_org_keyset_idx").on(t.organizationId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  ],
);

export const testRuns = pgTable(
  "test_runs",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    number: integer("number").notNull(),
    status: runStatusEnum("status").notNull().default("pending"),
    failureReason: text("failure_reason"),
    result: runResultEnum("result"),
    branch: text("branch"),
    commitSha: text("commit_sha"),
    /** The commit the uploader names as the comparison's base (docs/verdicts.md). */
    baseCommitSha: text("base_commit_sha"),
    buildId: text("build_id"),
    buildUrl: text("build_url"),
    /** The configuration the run's tests ran in, normalized (`node=22,os=windows`; docs/tests.md, "Variants"); "": none. */
    variant: text("variant").notNull().default(""),
    tags: jsonb("tags").$type<string[]>().notNull().default([]),
    startedAt: timestampMs("started_at"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    processedAt: timestampMs("processed_at"),
    durationMs: integer("duration_ms"),
    testsCount: integer("tests_count").notNull().default(0),
    passedCount: integer("passed_count").notNull().default(0),
    failedCount: integer("failed_count").notNull().default(0),
    erroredCount: integer("errored_count").notNull().default(0),
    skippedCount: integer("skipped_count").notNull().default(0),
    /** Failed and errored cases of tests that were quarantined when the run was processed. */
    quarantinedFailuresCount: integer("quarantined_failures_count").notNull().default(0),
    /**
     * Failed and errored cases of tests that were flaky (and not quarantined) when the run arrived: with
     * `quarantined_failures_count`, whether a run failed only by flakiness (docs/flakiness-cost.md, re-runs).
     */
    flakyFailuresCount: integer("flaky_failures_count").notNull().default(0),
    /** Cases that passed after failed or errored attempts in this run (docs/retries.md). */
    passedOnRetryCount: integer("passed_on_retry_count").notNull().default(0),
    /** The reports' durations of every failed or errored attempt before a case's outcome, in ms (docs/retries.md). */
    failedAttemptsDurationMs: bigint("failed_attempts_duration_ms", { mode: "number" }).notNull().default(0),
    /** The failures' counts per verdict against the run's base (docs/verdicts.md); null until the run is compared. */
    verdictCounts: jsonb("verdict_counts").$type<Record<Verdict, number>>(),
    /** Suite-number allocator for this run. */
    suitesCount: integer("suites_count").notNull().default(0),
    /** The uploader's Idempotency-Key: a retried upload that already arrived returns this run. */
    idempotencyKey: text("idempotency_key"),
    /** Uploads with the same run key join this run as its parts (docs/uploads.md, "Runs in parts"); null: one upload, one run. */
    runKey: text("run_key"),
    /** The count of shards its parts declared (`shard=I/N`): the run completes when as many shards have arrived. */
    shardTotal: integer("shard_total"),
    /** Parts received (test_run_parts), retries included. */
    partsCount: integer("parts_count").notNull().default(0),
    /** A run with parts completes by itself at this time: its last part's arrival plus the quiet period. */
    completeAfter: timestampMs("complete_after"),
    /** When its completion was decided: no part but a retry is accepted after it. */
    completedAt: timestampMs("completed_at"),
    /** When the retention sweep deleted its cases and suites (docs/retention.md); null while they are kept. */
    casesDeletedAt: timestampMs("cases_deleted_at"),
  },
  (t) => [
    uniqueIndex("test_runs_project_number_key").on(t.projectId, t.number),
    uniqueIndex("test_runs_project_idempotency_key")
      .on(t.projectId, t.idempotencyKey)
      .where(sql`${t.idempotencyKey} is not null`),
    // A run key names one run per variant: matrix cells that share a CI job's key are runs of their own.
    uniqueIndex("test_runs_project_run_key")
      .on(t.projectId, t.runKey, t.variant)
      .where(sql`${t.runKey} is not null`),
    // The retention sweep (docs/retention.md): a project's oldest runs whose cases are still kept.
    index("test_runs_cases_kept_idx")
      .on(t.projectId, t.createdAt)
      .where(sql`${t.casesDeletedAt} is null`),
    // The quiet period's sweep: runs with parts whose completion is not decided yet.
    index("test_runs_complete_after_idx")
      .on(t.completeAfter)
      .where(sql`${t.completedAt} is null and ${t.completeAfter} is not null`),
    index("test_runs_project_keyset_idx").on(t.projectId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // GET …/test_runs?commit_sha= (commitShaCondition): a full SHA by equality in keyset order, an
    // abbreviated one as a prefix range (text_pattern_ops: LIKE 'abc1234%' whatever the collation).
    index("test_runs_project_commit_idx").on(
      t.projectId,
      sql`lower(${t.commitSha}) text_pattern_ops`,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
  ],
);

/**
 * A project's processed runs summed by UTC day of their arrival (`test_runs.created_at`), kept
 * by run processing in the run's transaction (src/services/shared/daily-rollups.ts) so the project
 * overview reads at most 60 rows instead of scanning runs. `duration_histogram` maps a bucket's number to
 * the count of runs whose duration falls in it (log-scale, 8 buckets per doubling: DURATION_BUCKET_BOUNDS);
 * `flaky_tests_count` is the project's number of flaky tests after the day's latest change.
 */
export const projectDailyRollups = pgTable(
  "project_daily_rollups",
  {
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    day: date("day", { mode: "string" }).notNull(),
    runsCount: integer("runs_count").notNull().default(0),
    passedRunsCount: integer("passed_runs_count").notNull().default(0),
    failedRunsCount: integer("failed_runs_count").notNull().default(0),
    erroredRunsCount: integer("errored_runs_count").notNull().default(0),
    /** Runs with a duration (the histogram's total). */
    durationsCount: integer("durations_count").notNull().default(0),
    durationSumMs: bigint("duration_sum_ms", { mode: "number" }).notNull().default(0),
    durationHistogram: jsonb("duration_histogram").$type<Record<string, number>>().notNull().default({}),
    casesCount: bigint("cases_count", { mode: "number" }).notNull().default(0),
    skippedCasesCount: bigint("skipped_cases_count", { mode: "number" }).notNull().default(0),
    flakyTestsCount: integer("flaky_tests_count"),
    // The cost of flakiness (docs/flakiness-cost.md): test time in ms spent on flakiness by the day's runs, per component.
    /** Failed attempts of cases that then passed on a retry in the same run. */
    retryMs: bigint("retry_ms", { mode: "number" }).notNull().default(0),
    /** Failing cases (with their failed attempts) of tests that were flaky when the run arrived, not quarantined. */
    flakyFailuresMs: bigint("flaky_failures_ms", { mode: "number" }).notNull().default(0),
    /** Failing cases (with their failed attempts) of tests quarantined when the run arrived. */
    quarantinedFailuresMs: bigint("quarantined_failures_ms", { mode: "number" }).notNull().default(0),
    /** The duration of the day's re-runs: runs of a commit whose previous run failed only by flaky or quarantined tests. */
    rerunMs: bigint("rerun_ms", { mode: "number" }).notNull().default(0),
    rerunsCount: integer("reruns_count").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.day] })],
);

/**
 * A test's share of the cost of flakiness (docs/flakiness-cost.md) per UTC day of its runs'
 * arrival: a row only for a day the test cost something, written by run processing in the run's
 * transaction (src/services/runs/flakiness-cost.ts) and read by a project's window (project and
 * day) or a test's. No foreign key on `test_id`: the row is written before a new test's row, in
 * the same transaction; tests are deleted only with their project, whose deletion cascades here.
 */
export const testDailyCosts = pgTable(
  "test_daily_costs",
  {
    testId: uuid("test_id").notNull(),
    day: date("day", { mode: "string" }).notNull(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    retryMs: bigint("retry_ms", { mode: "number" }).notNull().default(0),
    flakyFailuresMs: bigint("flaky_failures_ms", { mode: "number" }).notNull().default(0),
    quarantinedFailuresMs: bigint("quarantined_failures_ms", { mode: "number" }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.testId, t.day] }), index("test_daily_costs_project_day_idx").on(t.projectId, t.day)],
);

/**
 * A test's daily figures, packed (docs/retention.md): one row per test and period of 32 UTC days
 * (period = days since 1970-01-01 divided by 32), whose `days` holds a fixed-width slot per day of
 * the period up to its last packed day (src/services/shared/test-rollups.ts; the layout is in
 * drizzle/0044_retention.sql): executions, failures, passes on retry, time on failed attempts, and
 * a sketch of the day's durations for their p50. Written by the retention sweep from the day's
 * cases, a day at a time, once the day is over (test_rollup_progress). No foreign key on `test_id`, as test_daily_costs.
 */
export const testRollups = pgTable(
  "test_rollups",
  {
    testId: uuid("test_id").notNull(),
    period: integer("period").notNull(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    days: bytea("days").notNull(),
  },
  // The retention sweep deletes the periods past SUMMARY_RETENTION_DAYS by period.
  (t) => [primaryKey({ columns: [t.testId, t.period] }), index("test_rollups_period_idx").on(t.period)],
);

/**
 * How far the retention sweep has rolled a project's tests' days into test_rollups
 * (src/services/shared/test-rollups.ts, docs/retention.md): every day before `day` is rolled up;
 * `day` is the next to roll, its tests done up to (`after_name`, `after_id`) in
 * tests_project_name_idx's order, its cases' ids within `first_case`..`last_case` (read when the
 * day's first batch starts). A transaction that adds to or changes the cases of a run arrived on
 * a day already (being) rolled moves `day` back to it, so that the day is rolled again from its
 * cases; never before `cases_deleted_before`, the first day whose cases the sweep has not started
 * deleting. The days from `day` on are read from the cases themselves.
 */
export const testRollupProgress = pgTable(
  "test_rollup_progress",
  {
    projectId: uuid("project_id")
      .primaryKey()
      .references(() => projects.id, { onDelete: "cascade" }),
    day: date("day", { mode: "string" }).notNull(),
    afterName: text("after_name"),
    afterId: uuid("after_id"),
    firstCase: bigint("first_case", { mode: "number" }),
    lastCase: bigint("last_case", { mode: "number" }),
    casesDeletedBefore: date("cases_deleted_before", { mode: "string" }),
    /**
     * A lower bound of the ids of the cases of the days from `day` on (what a test's history reads
     * from its cases), set when the sweep moves to a day (at `unrolled_from_at`); null when not
     * known: after a move back, or when a transaction that began before it noted cases.
     */
    unrolledFromCase: bigint("unrolled_from_case", { mode: "number" }),
    unrolledFromAt: timestampMs("unrolled_from_at"),
  },
  (t) => [index("test_rollup_progress_day_idx").on(t.day)],
);

/**
 * The uploaded report of a run that is waiting to be processed: its text (Node), or the key of
 * the object that holds the body as received (the Worker, JUnit XML and JSON: R2,
 * src/ingest/payload-store.ts; Node on Postgres, a gzip body: payload_objects). Queue messages only carry the run's id (Cloudflare
 * Queue messages are capped at 128 KB); the row is deleted in the transaction that processes or
 * fails the run.
 */
export const uploadPayloads = pgTable(
  "upload_payloads",
  {
    testRunId: bigint("test_run_id", { mode: "number" })
      .notNull()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    /** 0 for a run of one upload; a run with parts keeps one payload per part (test_run_parts.part_number). */
    partNumber: integer("part_number").notNull().default(0),
    /** `junit_xml` (a raw XML body) or `json` (our JSON envelope). */
    format: text("format").notNull(),
    content: text("content"),
    /** The payload store's key of the body, when it is stored there instead of in `content`. */
    objectKey: text("object_key"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.testRunId, t.partNumber] }),
    check("upload_payloads_one_place", sql`(${t.content} is null) <> (${t.objectKey} is null)`),
  ],
);

/**
 * The payload store of a runtime without an object store (Node; src/services/runs/database-payload-store.ts):
 * an upload's body as sent (gzip stays compressed), written in chunks of at most 1 MiB as it
 * arrives and read back the same way, so neither the request nor the consumer holds the whole
 * report. An upload_payloads row names its object by `object_key`, as it names an R2 object on the
 * Worker. `size` is set once the last chunk is written; an object without it was never finished.
 * Keys are unguessable and reached only through their run's row (which is scoped by its project).
 */
export const payloadObjects = pgTable("payload_objects", {
  objectKey: text("object_key").primaryKey(),
  contentEncoding: text("content_encoding"),
  charset: text("charset"),
  size: bigint("size", { mode: "number" }),
  createdAt: timestampMs("created_at").notNull().defaultNow(),
});

export const payloadChunks = pgTable(
  "payload_chunks",
  {
    objectKey: text("object_key")
      .notNull()
      .references(() => payloadObjects.objectKey, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    bytes: bytea("bytes").notNull(),
  },
  (t) => [primaryKey({ columns: [t.objectKey, t.seq] })],
);

/**
 * The parts of a run uploaded in parts (docs/uploads.md, "Runs in parts"): one row per upload
 * with the run's key, numbered in arrival order. A part is read once when it arrives (its counts,
 * or why it cannot be read); the run's cases are stored from every readable part at once when the
 * run completes.
 */
export const testRunParts = pgTable(
  "test_run_parts",
  {
    testRunId: bigint("test_run_id", { mode: "number" })
      .notNull()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    partNumber: integer("part_number").notNull(),
    /** `shard=I/N`'s I, 1-based; null when the part declared none. */
    shardIndex: integer("shard_index"),
    /** `retry=true`: a re-run of failed tests, whose cases become further attempts of the run's tests. */
    retry: boolean("retry").notNull().default(false),
    /** pending (not read yet), ready (read), failed (unreadable: left out of the run), merged (a retry, applied). */
    status: text("status").notNull().default("pending"),
    failureReason: text("failure_reason"),
    testsCount: integer("tests_count").notNull().default(0),
    passedCount: integer("passed_count").notNull().default(0),
    failedCount: integer("failed_count").notNull().default(0),
    erroredCount: integer("errored_count").notNull().default(0),
    skippedCount: integer("skipped_count").notNull().default(0),
    durationMs: integer("duration_ms"),
    /** The part's Idempotency-Key: a retried upload of a part that already arrived returns the run again. */
    idempotencyKey: text("idempotency_key"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.testRunId, t.partNumber] }),
    uniqueIndex("test_run_parts_idempotency_key")
      .on(t.testRunId, t.idempotencyKey)
      .where(sql`${t.idempotencyKey} is not null`),
  ],
);

export const testSuites = pgTable(
  "test_suites",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    testRunId: bigint("test_run_id", { mode: "number" })
      .notNull()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    number: integer("number").notNull(),
    parentNumber: integer("parent_number"),
    name: text("name").notNull(),
    durationMs: integer("duration_ms"),
    testsCount: integer("tests_count").notNull().default(0),
    passedCount: integer("passed_count").notNull().default(0),
    failedCount: integer("failed_count").notNull().default(0),
    erroredCount: integer("errored_count").notNull().default(0),
    skippedCount: integer("skipped_count").notNull().default(0),
  },
  (t) => [uniqueIndex("test_suites_run_number_key").on(t.testRunId, t.number)],
);

export type CaseAttempt = { status: CaseStatus; duration_ms: number | null; failure_message: string | null };

/**
 * No foreign key on `test_run_id`: its per-row check was half the cost of storing a 10,000-case
 * run (BENCHMARKS.md). Cases are written only by storeTestRun, under the run's row lock, so
 * the run exists; deleting runs deletes their cases through a statement-level trigger
 * (drizzle/0004_delete_cases_of_deleted_runs.sql), which keeps ON DELETE CASCADE's meaning.
 */
/**
 * A test's identity within its project, as the one SQL expression both tables use: the project,
 * the classname and the name, with the file standing in for a missing classname, and the variant
 * (docs/tests.md, "Variants") when it is not ""; the suite is not part of it. Texts are taken as
 * written (whitespace and case kept). The id is the MD5 of that identity as a UUID, so a case's
 * test is known the moment its row is written, by Postgres, without a lookup (docs/tests.md).
 * The variant "" adds nothing: tests of runs without a variant kept their ids when variants came.
 */
export const testIdentitySql = (projectId: unknown, classname: unknown, file: unknown, name: unknown, variant: unknown) =>
  sql`md5(${projectId}::text || chr(31) || coalesce(${classname}, '') || chr(31) || case when ${classname} is null then coalesce(${file}, '') else '' end || chr(31) || ${name} || case when ${variant} = '' then '' else chr(31) || ${variant} end)::uuid`;

export const testCases = pgTable(
  "test_cases",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    testRunId: bigint("test_run_id", { mode: "number" }).notNull(),
    /** The run's project, written with the case so that its test id can be derived in the row. */
    projectId: uuid("project_id").notNull(),
    /** The run's variant, written with the case so that its test id can be derived in the row. */
    variant: text("variant").notNull().default(""),
    /** The test this case is an execution of (tests.id), derived from the project and the identity. */
    testId: uuid("test_id")
      .notNull()
      .generatedAlwaysAs(
        testIdentitySql(sql.raw("project_id"), sql.raw("classname"), sql.raw("file"), sql.raw("name"), sql.raw("variant")),
      ),
    suiteNumber: integer("suite_number").notNull(),
    name: text("name").notNull(),
    classname: text("classname"),
    file: text("file"),
    status: caseStatusEnum("status").notNull(),
    durationMs: integer("duration_ms"),
    failureType: text("failure_type"),
    failureMessage: text("failure_message"),
    /** The failure's full text (the stack trace), capped like the message; the message is often only its first line. */
    failureText: text("failure_text"),
    attempts: jsonb("attempts").$type<CaseAttempt[]>().notNull().default([]),
    /** Failed and errored cases: the signature of the failure's cause (docs/failure-groups.md). */
    failureSignature: text("failure_signature"),
    /** Whether the case's test was quarantined when the run was processed (kept as it was then). */
    quarantined: boolean("quarantined").notNull().default(false),
    /** First characters of the case's output (capped; never stored whole). */
    systemOut: text("system_out"),
    systemErr: text("system_err"),
  },
  (t) => [
    index("test_cases_run_suite_idx").on(t.testRunId, t.suiteNumber, t.id),
    index("test_cases_test_idx").on(t.testId, t.id.desc().nullsFirst()),
  ],
);

/**
 * A run's cases while it is stored in slices on a database of one session (PGlite,
 * src/services/runs/sliced-store.ts, docs/uploads.md, "On the embedded database"): written a slice at a time,
 * each slice its own short statement, and moved into test_cases by the transaction that marks
 * the run processed. Readers never look here, so a run is never seen half-stored; a process
 * killed mid-run leaves only these rows, which the run's next processing deletes first. `seq`
 * keeps the report's order (test_cases.id follows it when they are moved).
 */
export const stagedTestCases = pgTable(
  "staged_test_cases",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    testRunId: bigint("test_run_id", { mode: "number" })
      .notNull()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    projectId: uuid("project_id").notNull(),
    variant: text("variant").notNull().default(""),
    suiteNumber: integer("suite_number").notNull(),
    name: text("name").notNull(),
    classname: text("classname"),
    file: text("file"),
    status: caseStatusEnum("status").notNull(),
    durationMs: integer("duration_ms"),
    failureType: text("failure_type"),
    failureMessage: text("failure_message"),
    failureText: text("failure_text"),
    attempts: jsonb("attempts").$type<CaseAttempt[]>().notNull().default([]),
    failureSignature: text("failure_signature"),
    quarantined: boolean("quarantined").notNull().default(false),
    systemOut: text("system_out"),
    systemErr: text("system_err"),
  },
  (t) => [index("staged_test_cases_run_idx").on(t.testRunId, t.seq)],
);

/**
 * A test: the same test across the runs of a project (docs/tests.md). Every run rewrites the rows
 * of its tests, and its alert checks once more, so the table keeps room for in-page (HOT) updates
 * (fillfactor 50, set in drizzle/0046_hot_updates.sql: room for one new version of each row) and
 * has no index on what changes with nearly every run (the p95 duration: `sort=duration` sorts the
 * project's tests instead of reading an index).
 */
export const tests = pgTable(
  "tests",
  {
    /** The test_id of its cases (testIdentitySql). */
    id: uuid("id").primaryKey(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    classname: text("classname"),
    file: text("file"),
    /** The configuration it runs in (docs/tests.md, "Variants"), part of its identity; "": none. */
    variant: text("variant").notNull().default(""),
    /** Innermost suite of its latest execution. */
    suite: text("suite"),
    health: testHealthEnum("health").notNull().default("healthy"),
    healthChangedAt: timestampMs("health_changed_at"),
    executionsCount: integer("executions_count").notNull().default(0),
    lastStatus: caseStatusEnum("last_status"),
    lastExecutedAt: timestampMs("last_executed_at"),
    lastFailedAt: timestampMs("last_failed_at"),
    firstSeenAt: timestampMs("first_seen_at").notNull(),
    /** The newest run number that fed the window: an older run processed late does not rewind it. */
    lastRunNumber: integer("last_run_number").notNull().default(0),
    windowSize: integer("window_size").notNull().default(0),
    failureRate: doublePrecision("failure_rate"),
    flipRate: doublePrecision("flip_rate"),
    impact: integer("impact").notNull().default(0),
    /** Executions in the window that passed on retry (an `r` in window_outcomes). */
    passedOnRetryCount: integer("passed_on_retry_count").notNull().default(0),
    durationP50Ms: integer("duration_p50_ms"),
    durationP95Ms: integer("duration_p95_ms"),
    // What run processing keeps between runs, bounded: plain columns, since every run rewrites
    // them for each of its tests (a jsonb document cost several times as much to write).
    /** Outcomes of the last executions on the default branch, oldest first: p(assed), f(ailed), e(rrored), r (passed on retry). */
    windowOutcomes: text("window_outcomes").notNull().default(""),
    /** The streaming duration estimate of the window: mean and variance of ln(1 + ms), and its samples (≤ 50). */
    durationLogMean: doublePrecision("duration_log_mean").notNull().default(0),
    durationLogVar: doublePrecision("duration_log_var").notNull().default(0),
    durationSamples: integer("duration_samples").notNull().default(0),
    /** Recent commits and what the test did on them (bit 1 passed, bit 2 failed), `sha:bits` separated by spaces. */
    recentCommits: text("recent_commits").notNull().default(""),
    /** Consecutive default-branch executions that failed or errored / passed, up to the latest run. */
    failingStreak: integer("failing_streak").notNull().default(0),
    passingStreak: integer("passing_streak").notNull().default(0),
    /**
     * The test's quarantine (docs/quarantine.md), replaced whole by each quarantine. In force while
     * `quarantine_expires_at > now`, judged at read time: an expired one needs no job to end, and
     * stays stored (inert) until the test is quarantined again. Run processing never writes these
     * columns, so its updates stay in-page (HOT) despite the index below.
     */
    quarantineReason: text("quarantine_reason"),
    quarantineOwner: text("quarantine_owner"),
    quarantineIssueUrl: text("quarantine_issue_url"),
    quarantineCreatedAt: timestampMs("quarantine_created_at"),
    quarantineExpiresAt: timestampMs("quarantine_expires_at"),
    quarantineSource: quarantineSourceEnum("quarantine_source"),
    /** The quarantine names every variant of the test (docs/quarantine.md, "Variants"): runs of any variant, new ones too, treat it as quarantined. */
    quarantineAllVariants: boolean("quarantine_all_variants").notNull().default(false),
    /**
     * Who quarantined it, as they were named then (docs/quarantine.md, "Who quarantined it"): the
     * path it came through, the person's or API key's id (no foreign key: the record outlives a
     * removed member or a regenerated key), and their name and e-mail (a person's) at that moment.
     * All null for quarantines made before migration 0038 and for auto-quarantines' actor fields.
     */
    quarantineVia: quarantineViaEnum("quarantine_via"),
    quarantineActorId: uuid("quarantine_actor_id"),
    quarantineActorName: text("quarantine_actor_name"),
    quarantineActorEmail: text("quarantine_actor_email"),
    /**
     * The owners of the test's file under its project's latest CODEOWNERS (docs/codeowners.md):
     * set when the test is first stored, recomputed for every test of the project when a CODEOWNERS
     * is uploaded. Run processing's updates of known tests never write it (they stay in-page).
     */
    owners: text("owners")
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
  },
  (t) => [
    index("tests_project_impact_idx").on(t.projectId, t.impact.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("tests_project_health_impact_idx").on(t.projectId, t.health, t.impact.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("tests_project_failure_rate_idx").on(t.projectId, sql`coalesce(${t.failureRate}, -1) desc`, t.id.desc().nullsFirst()),
    index("tests_project_last_failed_idx").on(t.projectId, sql`coalesce(${t.lastFailedAt}, '-infinity') desc`, t.id.desc().nullsFirst()),
    index("tests_project_name_idx").on(t.projectId, t.name, t.id),
    // The `variant` filter in the default order (impact: one page reads one page, whatever the other
    // variants' impacts), and the project's variants read by skipping through it (listProjectVariants).
    index("tests_project_variant_impact_idx").on(t.projectId, t.variant, t.impact.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // The quarantines of a project, by expiry: the CI list and run processing read those in force
    // (`> now`), the list's ETag the latest that has passed (`<= now`), the `quarantined` filter both.
    index("tests_project_quarantine_idx")
      .on(t.projectId, t.quarantineExpiresAt)
      .where(sql`${t.quarantineExpiresAt} is not null`),
    // The tests list's `owner` filter (`owners @> array[…]`), beside the project's own indexes.
    index("tests_owners_idx").using("gin", t.owners),
  ],
);

/**
 * The alert checks' entries of a test, by detector version (`test_flakiness/2`, …): a run reads
 * and writes its own tests' entries only (src/services/alerts/alert-checks.ts). A narrow table of
 * their own rather than a column of `tests` (where they were about 450 of a row's ~770 bytes), so
 * that run processing's update of its tests and the checks' update of their entries each write
 * only their own bytes. A test without a row has no entry yet. Fillfactor 50 (the migration):
 * every run rewrites its tests' rows, kept in-page (HOT).
 */
export const testCheckStates = pgTable("test_check_states", {
  testId: uuid("test_id")
    .primaryKey()
    .references(() => tests.id, { onDelete: "cascade" }),
  state: jsonb("state").$type<Record<string, unknown>>().notNull(),
});

/**
 * The new entries of a large run's tests while its checks run in slices on a database of one
 * session (PGlite: src/db/single-session.ts): written a chunk at a time, and moved into
 * test_check_states a slice at a time once the run's checks committed (committed_check_slices). Rows
 * of a run without that mark are an attempt killed mid-checks: never read, and deleted by the
 * run's next checks.
 */
export const stagedTestCheckStates = pgTable(
  "staged_test_check_states",
  {
    testRunId: bigint("test_run_id", { mode: "number" })
      .notNull()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    testId: uuid("test_id").notNull(),
    state: jsonb("state").$type<Record<string, unknown>>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.testRunId, t.testId] })],
);

/**
 * A run whose checks, run in slices, committed while its entries are still in
 * staged_test_check_states: the checks' last transaction writes this row, so those entries count
 * from then on; they are moved into test_check_states a slice at a time, and every later check of
 * the project moves what is left first (src/services/alerts/alert-checks.ts).
 */
export const committedCheckSlices = pgTable("committed_check_slices", {
  testRunId: bigint("test_run_id", { mode: "number" })
    .primaryKey()
    .references(() => testRuns.id, { onDelete: "cascade" }),
  projectId: uuid("project_id").notNull(),
});

/**
 * A project's latest CODEOWNERS (PUT /uploads/v1/codeowners, docs/codeowners.md), as uploaded:
 * run processing reads it to give new tests their owners. A row of its own, not a column of
 * `projects`, whose row every upload updates.
 */
export const projectCodeowners = pgTable("project_codeowners", {
  projectId: uuid("project_id")
    .primaryKey()
    .references(() => projects.id, { onDelete: "cascade" }),
  content: text("content").notNull(),
  rulesCount: integer("rules_count").notNull(),
  updatedAt: timestampMs("updated_at").notNull(),
});

/**
 * A split plan (docs/splitting.md): the first plan made for a build's key, answered to every
 * shard of that build until it expires, so they agree even if the history changes between their
 * calls. `shards` holds each shard's items in placing order with their expected time; `items_hash`
 * is the SHA-256 of the sorted items, so a later call's list is compared without reading them.
 */
export const splitPlans = pgTable(
  "split_plans",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    by: text("by").$type<"file" | "classname">().notNull(),
    variant: text("variant").notNull().default(""),
    shardCount: integer("shard_count").notNull(),
    itemsCount: integer("items_count").notNull(),
    itemsHash: text("items_hash").notNull(),
    /** Items the history did not know, planned at the project's median. */
    unknownCount: integer("unknown_count").notNull(),
    shards: jsonb("shards").$type<{ items: string[]; expected_ms: number }[]>().notNull(),
    createdAt: timestampMs("created_at").notNull(),
    expiresAt: timestampMs("expires_at").notNull(),
  },
  (t) => [uniqueIndex("split_plans_project_key").on(t.projectId, t.key), index("split_plans_expires_idx").on(t.expiresAt)],
);

/**
 * A sharded run's split (docs/splitting.md, "The run's split"), recorded when the run is processed:
 * the plan its key made, copied (plans expire after 24 hours and are replaced), with the items of
 * each shard that reported no results in the run. The run page reads this row, never the run's cases.
 */
export const runSplits = pgTable("run_splits", {
  testRunId: bigint("test_run_id", { mode: "number" })
    .primaryKey()
    .references(() => testRuns.id, { onDelete: "cascade" }),
  key: text("key").notNull(),
  by: text("by").$type<"file" | "classname">().notNull(),
  /** Per shard, in order: its items and, of them, those that reported no results. */
  shards: jsonb("shards").$type<{ items: string[]; missing: string[] }[]>().notNull(),
  missingCount: integer("missing_count").notNull(),
  recordedAt: timestampMs("recorded_at").notNull(),
});

/** Every change of a test's health, with the run that caused it. */
export const testHealthTransitions = pgTable(
  "test_health_transitions",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    testId: uuid("test_id")
      .notNull()
      .references(() => tests.id, { onDelete: "cascade" }),
    fromHealth: testHealthEnum("from_health").notNull(),
    toHealth: testHealthEnum("to_health").notNull(),
    reason: text("reason").notNull(),
    testRunId: bigint("test_run_id", { mode: "number" })
      .notNull()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    createdAt: timestampMs("created_at").notNull(),
  },
  (t) => [
    index("test_health_transitions_test_idx").on(t.testId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // Deleting a run (the retention sweep, docs/retention.md) finds its transitions.
    index("test_health_transitions_run_idx").on(t.testRunId),
  ],
);

export const alerts = pgTable(
  "alerts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    alertType: alertTypeEnum("alert_type").notNull(),
    active: boolean("active").notNull().default(true),
    /** `snoozed` is derived from this (snoozed_until > now), so a snooze ends by itself. */
    snoozedUntil: timestampMs("snoozed_until"),
    lastNotifiedAt: timestampMs("last_notified_at"),
    eventsCount: integer("events_count").notNull().default(0),
    /** After a notification, further trips of this alert notify again only after this long. */
    notificationCooldownSeconds: integer("notification_cooldown_seconds").notNull().default(86_400),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    updatedAt: timestampMs("updated_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("alerts_project_type_key").on(t.projectId, t.alertType),
    index("alerts_org_keyset_idx").on(t.organizationId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("alerts_project_keyset_idx").on(t.projectId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  ],
);

export const alertEvents = pgTable(
  "alert_events",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    alertId: uuid("alert_id")
      .notNull()
      .references(() => alerts.id, { onDelete: "cascade" }),
    testRunId: bigint("test_run_id", { mode: "number" })
      .notNull()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull().default({}),
    triggeredAt: timestampMs("triggered_at").notNull().defaultNow(),
  },
  (t) => [
    index("alert_events_alert_keyset_idx").on(t.alertId, t.triggeredAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // The retention sweep keeps the runs an event refers to (docs/retention.md).
    index("alert_events_run_idx").on(t.testRunId),
  ],
);

export const channelKindEnum = pgEnum("channel_kind", CHANNEL_KINDS);

/**
 * Notification channels of an organization: for all its projects (project_id null) or one. A
 * signed webhook's signing secret must be readable because every delivery is signed with it, so
 * it is kept encrypted (src/lib/secret-box.ts, docs/secrets.md), not hashed; it is shown once, at
 * creation, and never returned again. A Slack or Teams channel has no signing secret: its URL is
 * the credential, sealed in `url_encrypted`, and `url` holds only its masked form.
 */
export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    projectId: uuid("project_id").references(() => projects.id, { onDelete: "cascade" }),
    kind: channelKindEnum("kind").notNull().default("webhook"),
    /** A signed webhook's URL; a Slack or Teams channel's masked URL (the URL itself is in url_encrypted). */
    url: text("url").notNull(),
    /** A Slack or Teams channel's URL, sealed for this row (src/services/notifications/webhook-secrets.ts); null for a signed webhook. */
    urlEncrypted: text("url_encrypted"),
    /** The events the channel hears (CHANNEL_EVENTS). */
    events: jsonb("events").$type<ChannelEvent[]>().notNull().default(["alerts", "health", "quarantine", "digest"]),
    /**
     * An e-mail channel's recipients, lower-cased: each a member's address when it was added, and
     * checked again at every send (someone who left the organization receives nothing). Null for
     * the other kinds. Not a secret, but shown to the organization's admins only.
     */
    emailAddresses: text("email_addresses").array(),
    /** Only tests (and alert events about tests) owned by this CODEOWNERS owner (`@org/team`, `@user`, an e-mail); null: every test. */
    ownerFilter: text("owner_filter"),
    description: text("description"),
    /** `v1:<key id>:<iv>:<ciphertext>`, sealed for this row under SECRETS_KEY (src/services/notifications/webhook-secrets.ts). */
    signingSecretEncrypted: text("signing_secret_encrypted"),
    /**
     * The secret in plain text, as rows made before migration 0009 kept it. SQL cannot encrypt
     * with the server's key, so the app seals such rows when it starts (reencryptSigningSecrets)
     * and clears this column; always null after that.
     */
    legacySigningSecret: text("signing_secret"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
  },
  (t) => [
    index("webhook_endpoints_org_idx").on(t.organizationId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    check(
      "webhook_endpoints_one_signing_secret",
      sql`${t.kind} <> 'webhook' or (${t.signingSecretEncrypted} is null) <> (${t.legacySigningSecret} is null)`,
    ),
    // Compared as text: a check naming an enum value added in the same migration would fail to validate.
    check("webhook_endpoints_channel_url", sql`(${t.kind}::text in ('webhook', 'email')) = (${t.urlEncrypted} is null)`),
    check("webhook_endpoints_email_addresses", sql`(${t.kind}::text = 'email') = (${t.emailAddresses} is not null)`),
  ],
);

export const deliveryStatusEnum = pgEnum("delivery_status", DELIVERY_STATUSES);
export const webhookEventTypeEnum = pgEnum("webhook_event_type", WEBHOOK_EVENT_TYPES);

/** The delivery log: one row per notification and endpoint, updated on every attempt. */
export const notificationDeliveries = pgTable(
  "notification_deliveries",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    endpointId: uuid("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    eventType: webhookEventTypeEnum("event_type").notNull().default("alert.triggered"),
    /** The alert that tripped (`alert.triggered`); null for a test's events, which no alert silences. */
    alertId: uuid("alert_id").references(() => alerts.id, { onDelete: "cascade" }),
    /** The run that tripped the alert or changed the test; null for a quarantine made through the API. */
    testRunId: bigint("test_run_id", { mode: "number" }).references(() => testRuns.id, { onDelete: "cascade" }),
    eventIds: jsonb("event_ids").$type<number[]>().notNull(),
    /**
     * A test's event: the body as sent, fixed when the event happened (the test as it was then,
     * not as it is at a retry). Null for `alert.triggered`, whose body is built at each attempt.
     */
    payload: jsonb("payload").$type<Record<string, unknown>>(),
    status: deliveryStatusEnum("status").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    lastAttemptAt: timestampMs("last_attempt_at"),
    deliveredAt: timestampMs("delivered_at"),
  },
  (t) => [
    index("notification_deliveries_endpoint_idx").on(t.endpointId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("notification_deliveries_alert_idx").on(t.alertId, t.createdAt),
    // A run's test events, queued once the run's processing and checks have committed (never attempted yet).
    index("notification_deliveries_test_events_idx")
      .on(t.testRunId)
      .where(sql`${t.attempts} = 0 and ${t.eventType} <> 'alert.triggered'`),
    // Deleting a run (the retention sweep, docs/retention.md) finds its deliveries.
    index("notification_deliveries_run_idx").on(t.testRunId),
  ],
);

/**
 * Webhook deliveries sent per organization in its current one-minute window: what holds an
 * organization to WEBHOOK_DELIVERIES_PER_MINUTE (src/services/notifications/delivery-rate.ts). One row per
 * organization that has sent any, updated in place by every attempt that goes out; an attempt
 * over the cap waits in the queue instead.
 */
export const webhookDeliveryWindows = pgTable("webhook_delivery_windows", {
  organizationId: uuid("organization_id")
    .primaryKey()
    .references(() => organizations.id, { onDelete: "cascade" }),
  windowStartedAt: timestampMs("window_started_at").notNull(),
  deliveries: integer("deliveries").notNull(),
});

/**
 * The request windows of API keys and upload tokens when Node scales out (SCALE_OUT=true,
 * src/auth/postgres-key-counter.ts): what one process alone keeps in memory, and the Worker in a
 * Durable Object per key. One row per key and counter, updated in place by every request; a window
 * starts with the first request after the last one ended. `revoked` is the mark a regenerated key
 * leaves for every process (a replaced key's row may have no organization).
 */
export const rateLimitWindows = pgTable(
  "rate_limit_windows",
  {
    /** Whose window: "api_key" (an API key's id) or "upload_token" (the project's id). */
    counter: text("counter").notNull(),
    keyId: text("key_id").notNull(),
    organizationId: uuid("organization_id").references(() => organizations.id, { onDelete: "cascade" }),
    revoked: boolean("revoked").notNull().default(false),
    windowStartedAt: timestampMs("window_started_at").notNull(),
    /** Requests of the window, counted up to one past the limit (those over it are refused). */
    requests: integer("requests").notNull(),
  },
  (t) => [primaryKey({ columns: [t.counter, t.keyId] })],
);

/**
 * Uploads accepted per organization in its current one-hour window: what holds an organization
 * to QUOTA_UPLOADS_PER_HOUR (src/services/tenancy/quotas.ts). One row per organization that has uploaded,
 * updated in place by every upload; a window starts with the first upload after the last one ended.
 */
export const uploadWindows = pgTable("upload_windows", {
  organizationId: uuid("organization_id")
    .primaryKey()
    .references(() => organizations.id, { onDelete: "cascade" }),
  windowStartedAt: timestampMs("window_started_at").notNull(),
  uploads: integer("uploads").notNull(),
});

/**
 * The exports running now, one lease each: what holds an organization to QUOTA_CONCURRENT_EXPORTS
 * (src/services/tenancy/quotas.ts). A lease is deleted when its stream ends and renewed while it runs; one
 * whose export died without ending (a crashed process or isolate) stops counting once it expires.
 */
export const exportLeases = pgTable(
  "export_leases",
  {
    id: uuid("id").primaryKey(),
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    expiresAt: timestampMs("expires_at").notNull(),
  },
  (t) => [index("export_leases_organization_idx").on(t.organizationId, t.expiresAt)],
);

/**
 * Each alert check's state for one project (bounded: ring buffers, decayed sums, per-test bit
 * windows; see src/checks). Updated in the transaction that records the check's events, with
 * the row locked, so concurrent runs of one project are checked one after the other.
 */
export const alertCheckStates = pgTable(
  "alert_check_states",
  {
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    alertType: alertTypeEnum("alert_type").notNull(),
    /** The runs' variant: each variant's runs keep their own baselines (docs/tests.md, "Variants"). */
    variant: text("variant").notNull().default(""),
    state: jsonb("state").$type<unknown>().notNull(),
    detectorVersion: text("detector_version").notNull(),
    /** The newest run number checked: an older run processed late is not fed in (windows never rewind). */
    lastRunNumber: integer("last_run_number").notNull().default(0),
    runsChecked: integer("runs_checked").notNull().default(0),
    updatedAt: timestampMs("updated_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.alertType, t.variant] })],
);

/** Server-side settings that must survive restarts, such as a generated cursor secret. */
export const appSettings = pgTable("app_settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

/** What a group of failures holds, per project or per test. */
const failureGroupColumns = () => ({
  signature: text("signature").notNull(),
  /** The normalized message (first line), what the group is about. */
  message: text("message").notNull(),
  occurrences: integer("occurrences").notNull().default(0),
  firstSeenAt: timestampMs("first_seen_at").notNull(),
  lastSeenAt: timestampMs("last_seen_at").notNull(),
  sampleTestCaseId: bigint("sample_test_case_id", { mode: "number" }).notNull(),
  sampleMessage: text("sample_message"),
  sampleText: text("sample_text"),
});

/**
 * Failures grouped by cause: one row per project and signature, kept by run processing. The
 * sample is the latest failure as written (unmasked).
 */
export const failureGroups = pgTable(
  "failure_groups",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    ...failureGroupColumns(),
    testsCount: integer("tests_count").notNull().default(0),
  },
  (t) => [
    uniqueIndex("failure_groups_project_signature_key").on(t.projectId, t.signature),
    index("failure_groups_project_keyset_idx").on(t.projectId, t.lastSeenAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  ],
);

/** The same groups per test. */
export const testFailureGroups = pgTable(
  "test_failure_groups",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    testId: uuid("test_id")
      .notNull()
      .references(() => tests.id, { onDelete: "cascade" }),
    ...failureGroupColumns(),
  },
  (t) => [
    uniqueIndex("test_failure_groups_test_signature_key").on(t.testId, t.signature),
    index("test_failure_groups_test_keyset_idx").on(t.testId, t.lastSeenAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  ],
);

/*
 * People and sessions: better-auth's tables (src/auth/people.ts maps its models onto them). Ids are
 * UUIDs made by the database; timestamps are milliseconds like every other column.
 */

/** The roles of a membership (docs/web-app.md): admins have every right, members read and act on alerts and tests. */
export const MEMBER_ROLES = ["admin", "member"] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

export const users = pgTable(
  "users",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    /** Lower-cased by better-auth before it is stored or looked up. */
    email: text("email").notNull(),
    emailVerified: boolean("email_verified").notNull().default(false),
    image: text("image"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    updatedAt: timestampMs("updated_at").notNull().defaultNow(),
  },
  (t) => [uniqueIndex("users_email_key").on(t.email)],
);

export const sessions = pgTable(
  "sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    /** The session cookie carries this token, signed; signing out deletes the row. */
    token: text("token").notNull(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    expiresAt: timestampMs("expires_at").notNull(),
    ipAddress: text("ip_address"),
    userAgent: text("user_agent"),
    /** The organization the pages show when a path names none (the organization plugin's field). */
    activeOrganizationId: uuid("active_organization_id").references(() => organizations.id, { onDelete: "set null" }),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    updatedAt: timestampMs("updated_at").notNull().defaultNow(),
  },
  (t) => [uniqueIndex("sessions_token_key").on(t.token), index("sessions_user_idx").on(t.userId)],
);

/** How a user signs in: here only `credential` (e-mail and password; `password` is better-auth's scrypt hash). */
export const accounts = pgTable(
  "accounts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: text("account_id").notNull(),
    providerId: text("provider_id").notNull(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    accessToken: text("access_token"),
    refreshToken: text("refresh_token"),
    idToken: text("id_token"),
    accessTokenExpiresAt: timestampMs("access_token_expires_at"),
    refreshTokenExpiresAt: timestampMs("refresh_token_expires_at"),
    scope: text("scope"),
    password: text("password"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    updatedAt: timestampMs("updated_at").notNull().defaultNow(),
  },
  (t) => [index("accounts_user_idx").on(t.userId)],
);

/** better-auth's one-time values (e-mail verification, password reset): unused by this slice, required by the library. */
export const verifications = pgTable(
  "verifications",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    identifier: text("identifier").notNull(),
    value: text("value").notNull(),
    expiresAt: timestampMs("expires_at").notNull(),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    updatedAt: timestampMs("updated_at").notNull().defaultNow(),
  },
  (t) => [index("verifications_identifier_idx").on(t.identifier)],
);

export const members = pgTable(
  "members",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    role: text("role").$type<MemberRole>().notNull().default("member"),
    /**
     * Whether the member gets the weekly digest e-mail (docs/notifications.md#the-weekly-digest);
     * null: the role's default, on for admins and off for members, so a promotion brings it.
     */
    weeklyDigest: boolean("weekly_digest"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("members_organization_user_key").on(t.organizationId, t.userId),
    index("members_user_idx").on(t.userId),
    check("members_role_check", sql`${t.role} in ('admin', 'member')`),
  ],
);

export const invitations = pgTable(
  "invitations",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    role: text("role").$type<MemberRole>(),
    /** pending, accepted, rejected or canceled (better-auth's). */
    status: text("status").notNull().default("pending"),
    expiresAt: timestampMs("expires_at").notNull(),
    /** Who invited: an admin of the organization (the team page), or null: the operator, through the admin API. */
    inviterId: uuid("inviter_id").references(() => users.id, { onDelete: "cascade" }),
    /** SHA-256 of the token of the invitation's link (`/invitations/:token`); the token itself is never stored. */
    tokenHash: text("token_hash"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
  },
  (t) => [
    index("invitations_organization_idx").on(t.organizationId),
    uniqueIndex("invitations_token_hash_key").on(t.tokenHash),
    index("invitations_email_idx").on(t.email),
    check("invitations_role_check", sql`${t.role} in ('admin', 'member')`),
  ],
);

/**
 * Sign-in throttle, one row per e-mail that failed to sign in (src/services/tenancy/sign-in-throttle.ts):
 * the times of its latest failures (epoch ms, at most 10, none older than the window) and, once
 * ten fell within the window, until when every attempt is refused. Past `expires_at` (the end of
 * the last failure's window or of the lock) a row tells nothing: such rows are deleted as failures come in.
 */
export const signInThrottles = pgTable(
  "sign_in_throttles",
  {
    email: text("email").primaryKey(),
    failures: jsonb("failures").$type<number[]>().notNull().default([]),
    lockedUntil: timestampMs("locked_until"),
    expiresAt: timestampMs("expires_at").notNull(),
  },
  (t) => [index("sign_in_throttles_expires_idx").on(t.expiresAt)],
);

/**
 * Sign-in throttle per client address (src/services/tenancy/sign-in-throttle.ts), one row per
 * address that failed to sign in, whatever the e-mail: `address` is its bucket (an IPv4 address,
 * an IPv6 /64 such as `2001:db8:1:2::/64`, or `unknown`), `failures` the times of its latest
 * failures (epoch ms, at most 16, none older than the window). Past `expires_at` (the end of the
 * last failure's window) a row tells nothing and is deleted as failures come in.
 */
export const signInAddressThrottles = pgTable(
  "sign_in_address_throttles",
  {
    address: text("address").primaryKey(),
    failures: jsonb("failures").$type<number[]>().notNull().default([]),
    expiresAt: timestampMs("expires_at").notNull(),
  },
  (t) => [index("sign_in_address_throttles_expires_idx").on(t.expiresAt)],
);

/**
 * The client addresses (buckets, as above) that signed in to an e-mail's account with its
 * password within the last 30 days: an attempt from one of them is not refused by the e-mail's
 * lock (the per-address limit still applies), so a stranger who keeps the e-mail locked does not
 * lock its owner out where they usually sign in. Written at each successful sign-in.
 */
export const signInKnownAddresses = pgTable(
  "sign_in_known_addresses",
  {
    email: text("email").notNull(),
    address: text("address").notNull(),
    lastSignedInAt: timestampMs("last_signed_in_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.email, t.address] }), index("sign_in_known_addresses_last_signed_in_idx").on(t.lastSignedInAt)],
);

export const emailKindEnum = pgEnum("email_kind", EMAIL_KINDS);
export const emailStatusEnum = pgEnum("email_status", EMAIL_STATUSES);

/**
 * The e-mail outbox (src/services/shared/email-outbox.ts, docs/e-mail.md): every e-mail is written here in
 * the transaction that decided it, then sent by background work after the commit, retried with
 * backoff. The body may carry a secret (an invitation's link), so it is sealed under SECRETS_KEY
 * (context `email_outbox/<id>/body`), never stored in plain text. Without a transport, rows are
 * `held` for the operator to read (GET /admin/v1/emails).
 */
export const emailOutbox = pgTable(
  "email_outbox",
  {
    id: uuid("id").primaryKey(),
    /**
     * The organization the e-mail is about: deleting the organization deletes its mail. Null for
     * the mail of a person's own account (a sign-up's confirmation, a password reset).
     */
    organizationId: uuid("organization_id").references(() => organizations.id, { onDelete: "cascade" }),
    kind: emailKindEnum("kind").notNull(),
    toAddress: text("to_address").notNull(),
    subject: text("subject").notNull(),
    bodyEncrypted: text("body_encrypted").notNull(),
    /** The HTML alternative of the body (a channel's notification, the digest), sealed like it (`email_outbox/<id>/html`); null: text only. */
    htmlEncrypted: text("html_encrypted"),
    /**
     * Extra headers as a JSON object (the digest's `List-Unsubscribe`, whose link unsubscribes
     * without signing in), sealed (`email_outbox/<id>/headers`); null: none.
     */
    headersEncrypted: text("headers_encrypted"),
    /** An alert's notification: snoozing or disabling the alert suppresses it, and sending it sets the alert's last_notified_at. */
    alertId: uuid("alert_id").references(() => alerts.id, { onDelete: "cascade" }),
    status: emailStatusEnum("status").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    createdAt: timestampMs("created_at").notNull().defaultNow(),
    lastAttemptAt: timestampMs("last_attempt_at"),
    sentAt: timestampMs("sent_at"),
  },
  (t) => [
    index("email_outbox_created_idx").on(t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("email_outbox_pending_idx")
      .on(t.status)
      .where(sql`${t.status} = 'pending'`),
    index("email_outbox_alert_idx").on(t.alertId, t.createdAt),
    // The hourly cap on account e-mails to one address (src/auth/accounts.ts) counts by recipient.
    index("email_outbox_recipient_idx").on(t.toAddress, t.createdAt),
  ],
);

/**
 * Single-use links of people's accounts (src/auth/accounts.ts, docs/accounts.md): a sign-up
 * waiting for its e-mail to be confirmed, and a password reset. Only the SHA-256 of the link's
 * token is kept; using a link deletes its row in the statement that reads it. A pending sign-up
 * keeps what the account will be made of (name, organization name, the password's hash), so no
 * user exists before its e-mail is confirmed: nobody can squat an address. A reset names its
 * user, or none when the e-mail had no account (the answer looks the same either way).
 */
export const accountTokens = pgTable(
  "account_tokens",
  {
    tokenHash: text("token_hash").primaryKey(),
    purpose: text("purpose", { enum: ["sign_up", "password_reset"] }).notNull(),
    /** Lower-cased. */
    email: text("email").notNull(),
    userId: uuid("user_id").references(() => users.id, { onDelete: "cascade" }),
    /** A sign-up's account: `{ name, organizationName, passwordHash }`. */
    signUp: jsonb("sign_up").$type<{ name: string; organizationName: string; passwordHash: string }>(),
    createdAt: timestampMs("created_at").notNull(),
    expiresAt: timestampMs("expires_at").notNull(),
  },
  (t) => [index("account_tokens_expires_idx").on(t.expiresAt), index("account_tokens_user_idx").on(t.userId)],
);

/**
 * One-time messages of the pages (src/services/shared/flash.ts, docs/web-app.md "Forms"): what a POST
 * has to say on the page it redirects to (a notice, a new upload token, a regenerated API key),
 * one per session (or signed-out visitor) and page. The body may carry a secret, so it is sealed
 * under SECRETS_KEY (context `flash_messages/<session id>/<page>`); it is deleted when read and
 * worth nothing after `expires_at`.
 */
export const flashMessages = pgTable(
  "flash_messages",
  {
    /**
     * Whose message: a signed-in person's session id, or a signed-out visitor's random id (the
     * `flash` cookie: sign-up and password-reset pages). No foreign key, since a visitor has no
     * session; messages expire within minutes either way.
     */
    sessionId: uuid("session_id").notNull(),
    /** The app path of the page that shows the message (`/settings/team`, `/projects/<id>/settings`). */
    page: text("page").notNull(),
    bodyEncrypted: text("body_encrypted").notNull(),
    expiresAt: timestampMs("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.page] }), index("flash_messages_expires_idx").on(t.expiresAt)],
);

export const verdictEnum = pgEnum("verdict", VERDICTS);
export const baseChoiceEnum = pgEnum("base_choice", BASE_CHOICES);

/**
 * A processed run compared with its base (docs/verdicts.md), written by run processing in the
 * run's transaction (src/services/runs/run-comparison.ts): one row per compared run. The counts
 * per verdict are also on the run (`test_runs.verdict_counts`), for the run object.
 */
export const runComparisons = pgTable(
  "run_comparisons",
  {
    testRunId: bigint("test_run_id", { mode: "number" })
      .primaryKey()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    baseRunId: bigint("base_run_id", { mode: "number" }).references(() => testRuns.id, { onDelete: "set null" }),
    baseChoice: baseChoiceEnum("base_choice").notNull(),
    /**
     * The run's `base_commit_sha` (lower case) while no processed default-branch run of it was
     * found (a fallback base was used): the run is compared again when one is processed, within
     * RECOMPARE_WITHIN_MS of its arrival. Null once it is, or when none was named.
     */
    awaitedBaseCommit: text("awaited_base_commit"),
    /** Why the run is a mass failure (every failure `infrastructure`); null when it is not. */
    infrastructureReason: text("infrastructure_reason"),
    quarantinedCount: integer("quarantined_count").notNull().default(0),
    infrastructureCount: integer("infrastructure_count").notNull().default(0),
    failingOnBaseCount: integer("failing_on_base_count").notNull().default(0),
    flakyCount: integer("flaky_count").notNull().default(0),
    newCount: integer("new_count").notNull().default(0),
    fixedCount: integer("fixed_count").notNull().default(0),
    comparedAt: timestampMs("compared_at").notNull(),
  },
  (t) => [
    // Deleting a run (the retention sweep, docs/retention.md) clears the comparisons it was the base of.
    index("run_comparisons_base_run_idx").on(t.baseRunId),
    // The runs waiting for their named base commit's run (the re-comparison's read), by project.
    index("run_comparisons_awaited_idx")
      .on(t.projectId, t.awaitedBaseCommit)
      .where(sql`${t.awaitedBaseCommit} is not null`),
  ],
);

/**
 * One row per failing test of a compared run (its latest failing case, or a case that passed on
 * retry): its verdict and the reason, in words. Listed by case id (report order), with or without
 * a verdict filter.
 */
export const runVerdicts = pgTable(
  "run_verdicts",
  {
    testRunId: bigint("test_run_id", { mode: "number" })
      .notNull()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    testCaseId: bigint("test_case_id", { mode: "number" }).notNull(),
    testId: uuid("test_id").notNull(),
    verdict: verdictEnum("verdict").notNull(),
    reason: text("reason").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.testRunId, t.testCaseId] }),
    index("run_verdicts_run_verdict_idx").on(t.testRunId, t.verdict, t.testCaseId),
  ],
);

/** Tests of a compared run that failed in its base and pass in it (`fixed`), by the passing case. */
export const runFixedTests = pgTable(
  "run_fixed_tests",
  {
    testRunId: bigint("test_run_id", { mode: "number" })
      .notNull()
      .references(() => testRuns.id, { onDelete: "cascade" }),
    testCaseId: bigint("test_case_id", { mode: "number" }).notNull(),
    testId: uuid("test_id").notNull(),
    /** The base's failing case of the test. */
    baseTestCaseId: bigint("base_test_case_id", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.testRunId, t.testCaseId] })],
);

/**
 * The weekly digests sent (src/services/notifications/digest.ts): one row per organization and
 * week (the date of the week's Monday in the organization's time zone), inserted in the transaction
 * that writes the digest's e-mails and deliveries. The primary key is the claim: of several
 * processes, or a cron that comes late and again, one inserts the row and sends; the others find it.
 */
export const digestWeeks = pgTable(
  "digest_weeks",
  {
    organizationId: uuid("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    week: date("week", { mode: "string" }).notNull(),
    sentAt: timestampMs("sent_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.week] })],
);
