/**
 * The service's words, each list written once: the database enums (src/db/schema.ts), the Zod
 * schemas of validation and the OpenAPI document (src/contract/schemas.ts, src/ingest/json-report.ts)
 * and the TypeScript types all derive from these.
 */

/** The four alert checks; a project has one alert of each. */
export const ALERT_TYPES = ["performance_regression", "test_flakiness", "skipped_test_count_creep", "failure_rate_spike"] as const;
export type AlertType = (typeof ALERT_TYPES)[number];

/** The `status` filter of GET /alerts: states that do not overlap, and `all`. */
export const ALERT_STATUSES = ["active", "snoozed", "inactive", "all"] as const;
export type AlertStatus = (typeof ALERT_STATUSES)[number];

/** How long POST /alerts/:id/snooze silences an alert, in milliseconds. */
export const SNOOZE_DURATIONS = { "1h": 3_600_000, "4h": 14_400_000, "24h": 86_400_000, "1w": 604_800_000 } as const;
export type SnoozeDuration = keyof typeof SNOOZE_DURATIONS;

/** A test run's processing: recorded on arrival (pending), then processed or failed. */
export const RUN_STATUSES = ["pending", "processed", "failed"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** A processed run's result: errored if any case errored, else failed if any failed, else passed. */
export const RUN_RESULTS = ["tests_passed", "tests_failed", "tests_errored"] as const;
export type RunResult = (typeof RUN_RESULTS)[number];

/** A test case's (or one attempt's) outcome. */
export const CASE_STATUSES = ["passed", "failed", "errored", "skipped"] as const;
export type CaseStatus = (typeof CASE_STATUSES)[number];

/**
 * What a webhook delivery is about (its `type` and `CTA-Event-Type`): an alert's trip, a test
 * quarantined, unquarantined or changing health, or an admin's test message (docs/notifications.md).
 * Only `alert.triggered` follows the alert's snooze and cooldown.
 */
export const WEBHOOK_EVENT_TYPES = [
  "alert.triggered",
  "test.quarantined",
  "test.unquarantined",
  "test.health_changed",
  "test.message",
  "digest.weekly",
] as const;
type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** The webhook events about a test, sent whatever the alerts' snoozes and cooldowns. */
export type TestEventType = Exclude<WebhookEventType, "alert.triggered" | "test.message" | "digest.weekly">;

/**
 * What kind of notification channel an endpoint is (docs/notifications.md): a signed webhook (JSON
 * of our own, signed), a Slack incoming webhook (Block Kit), a Microsoft Teams incoming webhook or
 * Workflow (an Adaptive Card), or e-mail to members of the organization (HTML and text, through the
 * e-mail outbox). Slack's and Teams' URLs are credentials: sealed at rest, masked on reads.
 */
export const CHANNEL_KINDS = ["webhook", "slack", "teams", "email"] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

/**
 * The events a channel chooses: alerts tripping, tests' health changes (Slack, Teams and e-mail: only
 * to flaky or broken), quarantines made and ended, the weekly digest (Monday 09:00 in the
 * organization's time zone).
 */
export const CHANNEL_EVENTS = ["alerts", "health", "quarantine", "digest"] as const;
export type ChannelEvent = (typeof CHANNEL_EVENTS)[number];

/** A webhook delivery's state; `suppressed`: the alert was snoozed or disabled before an attempt. */
export const DELIVERY_STATUSES = ["pending", "delivered", "failed", "suppressed"] as const;

/**
 * What an e-mail of the outbox is about (docs/e-mail.md): an invitation, the organization's API key
 * regenerated (to every admin), an alert that tripped (to every member), a notification of an
 * e-mail channel (to the members it names), the weekly digest (to the members who keep it on); and a person's own
 * account (docs/accounts.md, no organization): the link that confirms a sign-up's e-mail, a
 * password reset's link, and the notice that a sign-up named an e-mail that already has an account.
 */
export const EMAIL_KINDS = [
  "invitation",
  "api_key_regenerated",
  "alert",
  "email_verification",
  "password_reset",
  "account_exists",
  "notification",
  "digest",
] as const;
export type EmailKind = (typeof EMAIL_KINDS)[number];

/**
 * An outbox e-mail's state: `pending` (to be sent, retried with backoff), `sent` (the SMTP server
 * accepted it), `held` (no transport is configured: kept for the operator to read), `failed`
 * (every attempt failed), `suppressed` (an alert's, snoozed or disabled before it went out).
 */
export const EMAIL_STATUSES = ["pending", "sent", "held", "failed", "suppressed"] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

/** The report formats an upload may carry. */
export type UploadFormat = "junit_xml" | "json";

/**
 * Every error code of the envelope, with its HTTP status. `request_timeout` and
 * `request_header_fields_too_large` are answered only by the Node server, below the app, when a
 * request cannot be read (src/node/http-server.ts). `quota_exceeded` (429): a count the operator
 * caps per organization (webhooks, projects, stored cases: docs/quotas.md) is reached; unlike `rate_limited`, it
 * comes without Retry-After, since waiting makes no room, and clients do not retry it.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  /** A run's comparison asked for before the run is processed (docs/verdicts.md). */
  run_not_processed: 409,
  /** A part (not a retry) for a run with parts whose completion was decided (docs/uploads.md, "Runs in parts"). */
  run_completed: 409,
  /** A split plan's key asked again with other items, shards or kind (docs/splitting.md). */
  split_plan_mismatch: 409,
  request_timeout: 408,
  /** Test cases (or an export's window) from before their project's retention: deleted, or about to be (docs/retention.md). */
  past_retention: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_failed: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  request_header_fields_too_large: 431,
  internal_error: 500,
  service_unavailable: 503,
} as const;
export type ErrorCode = keyof typeof ERROR_STATUS;
/** Codes answered outside /api/v1 and /uploads/v1 only: left out of the codes their documents list (none today). */
const ADMIN_ONLY_ERROR_CODES: readonly ErrorCode[] = [];
/** The codes of the envelope's schema (the /api/v1 contract's, docs/analytics-api-v1.md). */
export const ERROR_CODES = Object.keys(ERROR_STATUS).filter((code) => !ADMIN_ONLY_ERROR_CODES.includes(code as ErrorCode)) as [
  ErrorCode,
  ...ErrorCode[],
];

/**
 * A test's health: `flaky` (passes and fails on the same code), `broken` (failing consistently on
 * the default branch), otherwise `healthy`. docs/tests.md has the rules.
 */
export const TEST_HEALTHS = ["healthy", "flaky", "broken"] as const;
export type TestHealth = (typeof TEST_HEALTHS)[number];

/**
 * A test's health as the pages and the MCP summaries say it: a `healthy` test whose latest
 * default-branch executions failed (fewer in a row than make it `broken`) reads "failing (N in a
 * row)"; otherwise the health itself. `failingStreak` is the test object's `failing_streak`.
 */
export function healthText(health: TestHealth, failingStreak: number): string {
  if (health === "healthy" && failingStreak > 0) return `failing (${failingStreak} in a row)`;
  return health;
}

/** The `sort` of GET /projects/:id/tests. */
export const TEST_SORTS = ["impact", "failure_rate", "duration", "last_failed", "name"] as const;
export type TestSort = (typeof TEST_SORTS)[number];

/**
 * How long POST /tests/:id/quarantine keeps a test quarantined when `duration` is given, in
 * milliseconds. The longest is also the furthest an `expires_at` may be: every quarantine ends.
 */
export const QUARANTINE_DURATIONS = {
  "1d": 86_400_000,
  "7d": 604_800_000,
  "14d": 1_209_600_000,
  "30d": 2_592_000_000,
  "90d": 7_776_000_000,
} as const;
export type QuarantineDuration = keyof typeof QUARANTINE_DURATIONS;

/** Who quarantined a test: a person through the API (`manual`) or the service when the test turned flaky (`auto`, the project's `auto_quarantine_days`). */
export const QUARANTINE_SOURCES = ["manual", "auto"] as const;

/**
 * The path a quarantine came through (docs/quarantine.md, "Who quarantined it"): a person on the
 * test's page, an API key through the REST API or the MCP server, or the service (auto-quarantine).
 */
export const QUARANTINE_VIAS = ["page", "api", "mcp", "auto"] as const;
export type QuarantineVia = (typeof QUARANTINE_VIAS)[number];

/** The `quarantined` filter of GET /projects/:id/tests. */
export const QUARANTINED_FILTER_VALUES = ["true", "false"] as const;

/**
 * A failure's verdict against the run's base (docs/verdicts.md), in the order they are tried: the
 * first that applies is the failure's.
 */
export const VERDICTS = ["quarantined", "infrastructure", "failing_on_base", "flaky", "new"] as const;
export type Verdict = (typeof VERDICTS)[number];
/** The same verdicts in the order a person reads them: what this change probably caused first. */
export const VERDICTS_BY_CONCERN = [
  "new",
  "failing_on_base",
  "flaky",
  "quarantined",
  "infrastructure",
] as const satisfies readonly Verdict[];

/**
 * How a run's base was chosen (docs/verdicts.md): the default branch's run on the named
 * `base_commit_sha`; else the latest default-branch run before it; for a default-branch run, the
 * previous one; or none.
 */
export const BASE_CHOICES = ["base_commit", "latest_default_before", "previous_default", "none"] as const;
