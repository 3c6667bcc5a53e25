/**
 * /admin/v1: what the web app does on behalf of its users (create organizations and projects,
 * replace keys and tokens, invite people: an organization's first admin). Enabled only when
 * ADMIN_TOKEN is configured; otherwise every path here is a 404, as if the surface did not exist.
 */
import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows";
import type { Database } from "../../db/types";
import { isUuid } from "../../lib/ids";
import type { Clock } from "../../lib/clock";
import type { AppConfig, AppEnv } from "../../app-env";
import { revokeApiKeys } from "../../auth/key-gate";
import { secretsEqual } from "../../lib/crypto";
import { CHANNEL_EVENTS, CHANNEL_KINDS, DELIVERY_STATUSES, WEBHOOK_EVENT_TYPES } from "../../lib/vocabulary";
import { ApiError, notFound } from "../../lib/errors";
import { bearerToken, unauthorized } from "../../middleware/auth";
import { jsonBodyOn } from "../../middleware/json-body";
import { createOrganization, regenerateApiKey } from "../../services/tenancy/organizations";
import { type OutboxEmail, findEmail, listEmails, queueEmails } from "../../services/shared/email-outbox";
import { EMAIL_KINDS, EMAIL_STATUSES } from "../../lib/vocabulary";
import { createProject, regenerateUploadToken, setProjectCheckSettings } from "../../services/tenancy/projects";
import { MAX_AUTO_QUARANTINE_DAYS } from "../../services/tests/quarantine";
import { addMethodNotAllowed } from "../method-not-allowed";
import { errorResponses } from "../responses";
import {
  AlertSchema,
  ApiKeySchema,
  IdParamSchema,
  OrganizationSchema,
  ProjectSchema,
  TestSchema,
  displayNameSchema,
  freeTextSchema,
} from "../../contract/schemas";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  listDeliveries,
  listWebhookEndpoints,
  sendTestMessage,
  setNotificationCooldown,
} from "../../services/notifications/notification-admin";
import { validationHook } from "../validation";
import { sendProjectDigest } from "../../services/notifications/digest";
import { documentResponse, servedOnce } from "../openapi-document";
import { resolveQuotas } from "../../lib/quotas";
import { registerInvitations } from "./invitations";

const CreateOrganizationBody = z
  .object({
    name: displayNameSchema(),
    time_zone: z
      .string({ error: "must be a string" })
      .refine((value) => !value.includes("\u0000"), "is not a known IANA time zone name")
      .optional()
      .openapi({ description: "IANA time zone name; default UTC.", example: "Europe/Berlin" }),
  })
  .openapi("CreateOrganizationRequest");

/** A branch name: trimmed, at most 255 characters, no control characters; "" or null → the default rule. */
const defaultBranchSchema = () =>
  z
    .string({ error: "must be a string or null" })
    .trim()
    .max(255, "is too long (maximum is 255 characters)")
    .refine((value) => !/[\u0000-\u001f\u007f]/.test(value), "must not contain control characters")
    .transform((value) => (value === "" ? null : value))
    .nullable()
    .openapi({
      description:
        "The branch whose runs feed the checks' statistical windows (flip window, durations, failure share, skips). Null: `main`, `master` and runs without a branch.",
      example: "develop",
    });

const CreateProjectBody = z
  .object({
    name: displayNameSchema(),
    description: freeTextSchema().nullable().optional(),
    default_branch: defaultBranchSchema().optional(),
  })
  .openapi("CreateProjectRequest");

const autoQuarantineDaysSchema = () =>
  z
    .number({ error: `must be a whole number of days from 1 to ${MAX_AUTO_QUARANTINE_DAYS}, or null` })
    .int(`must be a whole number of days from 1 to ${MAX_AUTO_QUARANTINE_DAYS}, or null`)
    .min(1, "must be at least 1")
    .max(MAX_AUTO_QUARANTINE_DAYS, `must be at most ${MAX_AUTO_QUARANTINE_DAYS}`)
    .nullable()
    .openapi({
      description:
        "Auto-quarantine: a test that turns flaky is quarantined (source `auto`) for this many days from the run that made it flaky. Null (the default): off. docs/quarantine.md.",
      example: 14,
    });

const retentionDaysSchema = () =>
  z
    .number({ error: "must be a whole number of days from 1 to SUMMARY_RETENTION_DAYS, or null" })
    .int("must be a whole number of days from 1 to SUMMARY_RETENTION_DAYS, or null")
    .min(1, "must be at least 1")
    .max(36_500, "must be at most SUMMARY_RETENTION_DAYS")
    .nullable()
    .openapi({
      description:
        "How many days the project's test cases and payloads are kept, from 1 to the deployment's SUMMARY_RETENTION_DAYS (422 above it). Null (the default): the deployment's RETENTION_DAYS. docs/retention.md.",
      example: 30,
    });

/** A PATCH: the fields given are set, the others kept; at least one is given. */
const CheckSettingsBody = z
  .object({
    default_branch: defaultBranchSchema().optional(),
    auto_quarantine_days: autoQuarantineDaysSchema().optional(),
    retention_days: retentionDaysSchema().optional(),
  })
  .refine((body) => body.default_branch !== undefined || body.auto_quarantine_days !== undefined || body.retention_days !== undefined, {
    message: "give default_branch, auto_quarantine_days, retention_days or several",
    path: ["default_branch"],
  })
  .openapi("ProjectCheckSettingsRequest");
const CheckSettingsSchema = z
  .object({
    project_id: z.string().uuid(),
    default_branch: z.string().nullable(),
    auto_quarantine_days: z.number().int().nullable().openapi({ description: "Null: auto-quarantine is off." }),
    retention_days: z.number().int().nullable().openapi({ description: "Null: the deployment's RETENTION_DAYS (docs/retention.md)." }),
  })
  .openapi("ProjectCheckSettings");

const ApiKeyWithSecretSchema = ApiKeySchema.extend({
  secret: z.string().openapi({
    description:
      "The key itself. The API shows it only in this response; an admin of the organization can reveal it again on the team page.",
  }),
}).openapi("ApiKeyWithSecret");

const UploadTokenSchema = z.string().openapi({
  description:
    "The project's upload token. The API shows it only in this response; members reveal it again on the project's settings page.",
});

const adminSecurity = [{ adminToken: [] }];
const json = <T>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
const OrganizationIdParam = IdParamSchema("id", "Organization identifier (UUID).");
const ProjectIdParam = IdParamSchema("id", "Project identifier (UUID).");

const createOrganizationRoute = createRoute({
  method: "post",
  path: "/organizations",
  operationId: "adminCreateOrganization",
  tags: ["Admin"],
  summary: "Create an organization and its API key",
  security: adminSecurity,
  request: { body: { required: true, content: { "application/json": { schema: CreateOrganizationBody } } } },
  responses: {
    201: json(
      z.object({ organization: OrganizationSchema, api_key: ApiKeyWithSecretSchema }),
      "The organization and its key (with the secret, shown only here).",
    ),
    ...errorResponses(400, 401, 404, 413, 422, 500, 503),
  },
});

const regenerateApiKeyRoute = createRoute({
  method: "post",
  path: "/organizations/{id}/api_key/regenerate",
  operationId: "adminRegenerateApiKey",
  tags: ["Admin"],
  summary: "Replace the organization's API key",
  description: "The previous key gets 401 from its next request on.",
  security: adminSecurity,
  request: { params: OrganizationIdParam },
  responses: { 200: json(z.object({ api_key: ApiKeyWithSecretSchema }), "The new key."), ...errorResponses(401, 404, 500, 503) },
});

const flushEdgeCacheRoute = createRoute({
  method: "post",
  path: "/organizations/{id}/edge_cache/flush",
  operationId: "adminFlushEdgeCache",
  tags: ["Admin"],
  summary: "Drop the organization's edge-cached answers",
  description:
    "For a change made directly in the database: the edge answers the organization's next reads from the database again. Every other write of the API, the pages, the uploads and the queue does this by itself (docs/edge-path.md).",
  security: adminSecurity,
  request: { params: OrganizationIdParam },
  responses: { 204: { description: "Dropped (or nothing was cached)." }, ...errorResponses(400, 401, 500, 503) },
});

/** The envelope of a count quota reached (webhooks, projects per organization): no Retry-After, since waiting makes no room. */
const QuotaExceededSchema = z
  .object({
    error: z.object({ code: z.literal("quota_exceeded"), message: z.string().openapi({ description: "For humans only; may change." }) }),
  })
  .openapi("QuotaExceededError");

const createProjectRoute = createRoute({
  method: "post",
  path: "/organizations/{id}/projects",
  operationId: "adminCreateProject",
  tags: ["Admin"],
  summary: "Create a project with its upload token and its four alerts",
  description:
    "An organization has at most QUOTA_PROJECTS projects (default 1,000; docs/quotas.md): one more is a 429 `quota_exceeded`, without Retry-After.",
  security: adminSecurity,
  request: { params: OrganizationIdParam, body: { required: true, content: { "application/json": { schema: CreateProjectBody } } } },
  responses: {
    201: json(z.object({ project: ProjectSchema, upload_token: UploadTokenSchema }), "The project and its upload token."),
    ...errorResponses(400, 401, 404, 413, 422, 500, 503),
    429: json(
      QuotaExceededSchema,
      "quota_exceeded: the organization has as many projects as it may (QUOTA_PROJECTS, default 1,000; docs/quotas.md). No Retry-After: waiting makes no room.",
    ),
  },
});

const checkSettingsRoute = createRoute({
  method: "patch",
  path: "/projects/{id}/check_settings",
  operationId: "adminSetProjectCheckSettings",
  tags: ["Admin"],
  summary: "Set the project's check settings: its default branch, auto-quarantine, and its retention",
  description:
    "Fields left out are kept. Takes effect from the next processed run; the checks' stored windows are kept, and turning auto-quarantine on or off changes no quarantine already made.",
  security: adminSecurity,
  request: { params: ProjectIdParam, body: { required: true, content: { "application/json": { schema: CheckSettingsBody } } } },
  responses: { 200: json(CheckSettingsSchema, "The project's check settings."), ...errorResponses(400, 401, 404, 413, 422, 500, 503) },
});

const regenerateUploadTokenRoute = createRoute({
  method: "post",
  path: "/projects/{id}/upload_token/regenerate",
  operationId: "adminRegenerateUploadToken",
  tags: ["Admin"],
  summary: "Replace a project's upload token",
  security: adminSecurity,
  request: { params: ProjectIdParam },
  responses: { 200: json(z.object({ upload_token: UploadTokenSchema }), "The new upload token."), ...errorResponses(401, 404, 500, 503) },
});

const WebhookSchema = z
  .object({
    id: z.string().uuid(),
    organization_id: z.string().uuid(),
    project_id: z.string().uuid().nullable().openapi({ description: "Null: notifications of every project of the organization." }),
    kind: z.enum(CHANNEL_KINDS).openapi({
      description:
        "`webhook`: signed JSON (docs/notifications.md); `slack`: a Slack incoming webhook (Block Kit); `teams`: a Microsoft Teams incoming webhook or Workflow (an Adaptive Card); `email`: e-mail (HTML and text) to members of the organization.",
    }),
    url: z.string().openapi({
      description:
        "A signed webhook's URL. A Slack or Teams channel's URL is its credential: whole only in the answer to its creation, masked everywhere else (`https://hooks.slack.com/services/T…/…/…••••`). An e-mail channel's: `mailto:` and its addresses.",
    }),
    addresses: z
      .array(z.string())
      .nullable()
      .openapi({ description: "An e-mail channel's addresses (members of the organization), lower-cased; null for the other kinds." }),
    events: z.array(z.enum(CHANNEL_EVENTS)).openapi({
      description:
        "What the channel hears: `alerts` (alert.triggered), `health` (test.health_changed; Slack, Teams and e-mail only the changes to flaky or broken), `quarantine` (test.quarantined, test.unquarantined), `digest` (digest.weekly: the weekly digest, Monday 09:00 in the organization's time zone).",
    }),
    owner_filter: z.string().nullable().openapi({
      description: "Only tests owned by this CODEOWNERS owner (and alert events naming such tests); null: every test.",
      example: "@acme/payments",
    }),
    description: z.string().nullable(),
    created_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Webhook");

const DeliverySchema = z
  .object({
    id: z.number().int(),
    endpoint_id: z.string().uuid(),
    event_type: z
      .enum(WEBHOOK_EVENT_TYPES)
      .openapi({ description: "What the delivery is about: an alert's trip, or a test's event (docs/notifications.md)." }),
    alert_id: z.string().uuid().nullable().openapi({ description: "The alert of an `alert.triggered` delivery; null for a test's event." }),
    event_ids: z.array(z.number().int()).openapi({ description: "The alert events sent; empty for a test's event." }),
    status: z
      .enum(DELIVERY_STATUSES)
      .openapi({ description: "`suppressed`: not sent because the alert was snoozed or disabled before the attempt (retries included)." }),
    attempts: z.number().int(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: z.string().openapi({ format: "date-time" }),
    last_attempt_at: z.string().nullable().openapi({ format: "date-time" }),
    delivered_at: z.string().nullable().openapi({ format: "date-time" }),
  })
  .openapi("WebhookDelivery");

/** What a webhook receives for a test's event (docs/notifications.md#test-events): a component of the admin document. */
const TestWebhookPayloadSchema = z
  .object({
    type: z
      .enum(WEBHOOK_EVENT_TYPES)
      .exclude(["alert.triggered", "test.message"])
      .openapi({ description: "Also in the `CTA-Event-Type` header." }),
    occurred_at: z.string().openapi({
      format: "date-time",
      description: "When the test was quarantined, unquarantined, or its health changed (its run's processing or check).",
    }),
    project_id: z.string().uuid(),
    test: TestSchema.openapi({
      description: "The test as the API presented it when the event happened (after the change), not at a retry.",
    }),
  })
  .openapi("TestWebhookPayload", {
    description:
      "Body of `test.quarantined`, `test.unquarantined` and `test.health_changed` deliveries: signed, retried and logged like `alert.triggered`, never silenced by an alert's snooze or cooldown.",
  });

const CreateWebhookBody = z
  .object({
    url: z.string({ error: "must be a string" }).max(2048).optional().openapi({
      description:
        "https only; never a private, loopback or link-local address. Redirects are not followed. Required, except for an e-mail channel (which takes `addresses`).",
    }),
    kind: z.enum(CHANNEL_KINDS).optional().openapi({ description: "Default `webhook` (signed JSON)." }),
    addresses: z
      .array(z.string({ error: "must be a string" }).max(254, "is too long (maximum is 254 characters)"), {
        error: "must be a list of e-mail addresses",
      })
      .max(20, "must name at most 20 addresses")
      .optional()
      .openapi({
        description:
          "An e-mail channel's addresses (required for `kind: email`, refused otherwise): each must be the address of a member of the organization (422 naming the address otherwise); checked again at every send.",
        example: ["ada@example.com"],
      }),
    project_id: z
      .string()
      .nullable()
      .optional()
      .openapi({ description: "Only this project's alerts; omit for every project of the organization." }),
    events: z
      .array(z.enum(CHANNEL_EVENTS))
      .min(1, "must name at least one event")
      .optional()
      .openapi({ description: "Default: all of them." }),
    owner_filter: z
      .string({ error: "must be a string or null" })
      .max(255, "is too long (maximum is 255 characters)")
      .nullable()
      .optional()
      .openapi({ description: "A CODEOWNERS owner (`@org/team`, `@user`, an e-mail address): only the tests it owns." }),
    description: freeTextSchema(500).nullable().optional(),
  })
  .openapi("CreateWebhookRequest");

const AlertNotificationSettingsBody = z
  .object({
    notification_cooldown_seconds: z
      .number({ error: "must be a number of seconds" })
      .int("must be a whole number of seconds")
      .min(0, "must be at least 0")
      .max(30 * 86_400, "must be at most 2592000 (30 days)")
      .openapi({
        description: "After a notification, further trips of this alert notify again only after this long. Default 86400 (24 hours).",
      }),
  })
  .openapi("AlertNotificationSettings");

const WebhookIdParam = IdParamSchema("id", "Webhook identifier (UUID).");
const AlertIdParam = IdParamSchema("id", "Alert identifier (UUID).");

const createWebhookRoute = createRoute({
  method: "post",
  path: "/organizations/{id}/webhooks",
  operationId: "adminCreateWebhook",
  tags: ["Admin"],
  summary: "Add a webhook for the organization's (or one project's) alert notifications and test events",
  description:
    'Deliveries are POSTs of JSON signed with `CTA-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(signing_secret, "<t>.<body>")>` (docs/notifications.md): alert trips (`alert.triggered`) and tests\' events (`test.quarantined`, `test.unquarantined`, `test.health_changed`, body `TestWebhookPayload`). The signing secret is shown only in this response. The URL must be https to a public host (no private, loopback, link-local or reserved address in any spelling, no internal host name; http only to hosts the operator allows for local development: docs/outbound-policy.md). An organization has at most WEBHOOKS_PER_ORGANIZATION webhooks (default 10): one more is a 429 `quota_exceeded`.',
  security: adminSecurity,
  request: { params: OrganizationIdParam, body: { required: true, content: { "application/json": { schema: CreateWebhookBody } } } },
  responses: {
    201: json(
      z.object({
        webhook: WebhookSchema,
        signing_secret: z
          .string()
          .nullable()
          .openapi({ description: "A signed webhook's secret (shown only here); null for Slack and Teams." }),
      }),
      "The channel (a Slack or Teams channel's URL whole, only here) and a signed webhook's signing secret (shown only here).",
    ),
    ...errorResponses(400, 401, 404, 413, 422, 500, 503),
    429: json(
      QuotaExceededSchema,
      "quota_exceeded: the organization has as many webhooks as it may (WEBHOOKS_PER_ORGANIZATION, default 10); remove one first.",
    ),
  },
});

const listWebhooksRoute = createRoute({
  method: "get",
  path: "/organizations/{id}/webhooks",
  operationId: "adminListWebhooks",
  tags: ["Admin"],
  summary: "List the organization's webhooks (newest first, at most 100)",
  security: adminSecurity,
  request: { params: OrganizationIdParam },
  responses: { 200: json(z.object({ data: z.array(WebhookSchema) }), "The webhooks."), ...errorResponses(401, 404, 500, 503) },
});

const deleteWebhookRoute = createRoute({
  method: "delete",
  path: "/webhooks/{id}",
  operationId: "adminDeleteWebhook",
  tags: ["Admin"],
  summary: "Remove a webhook (its pending deliveries are dropped)",
  security: adminSecurity,
  request: { params: WebhookIdParam },
  responses: { 204: { description: "Removed." }, ...errorResponses(401, 404, 500, 503) },
});

const listDeliveriesRoute = createRoute({
  method: "get",
  path: "/webhooks/{id}/deliveries",
  operationId: "adminListWebhookDeliveries",
  tags: ["Admin"],
  summary: "The webhook's delivery log (newest first, at most 100)",
  security: adminSecurity,
  request: { params: WebhookIdParam },
  responses: {
    200: json(z.object({ data: z.array(DeliverySchema) }), "Deliveries with their attempts and last error."),
    ...errorResponses(401, 404, 500, 503),
  },
});

const testMessageRoute = createRoute({
  method: "post",
  path: "/webhooks/{id}/test",
  operationId: "adminSendTestMessage",
  tags: ["Admin"],
  summary: "Send a test message to a channel",
  description:
    "Queues a `test.message` delivery to the webhook, Slack or Teams channel: sent, retried and logged like any notification (its outcome is in the delivery log).",
  security: adminSecurity,
  request: { params: WebhookIdParam },
  responses: { 202: json(DeliverySchema, "The delivery, queued."), ...errorResponses(401, 404, 500, 503) },
});

const DigestSentSchema = z
  .object({
    project_id: z.string().uuid(),
    week: z.object({
      from: z.string().openapi({ format: "date-time", description: "The first of the seven UTC days the digest covers." }),
      to: z.string().openapi({ format: "date-time", description: "The end (excluded): the start of today, UTC." }),
    }),
    deliveries: z
      .number()
      .int()
      .openapi({ description: "`digest.weekly` deliveries queued: one per channel that chose `digest` and hears the project." }),
    emails: z.number().int().openapi({ description: "Digest e-mails queued: one per member who keeps the weekly digest on." }),
  })
  .openapi("DigestSent");

const sendDigestRoute = createRoute({
  method: "post",
  path: "/projects/{id}/digest",
  operationId: "adminSendProjectDigest",
  tags: ["Admin"],
  summary: "Send a project's weekly digest now",
  description:
    "The digest the Monday schedule sends (docs/notifications.md#the-weekly-digest), for this project, now: to the channels that chose `digest` and hear the project, and by e-mail to the members of its organization who keep the digest on. It does not count as the organization's weekly digest: Monday's goes out as planned.",
  security: adminSecurity,
  request: { params: ProjectIdParam },
  responses: { 202: json(DigestSentSchema, "The digest, queued."), ...errorResponses(401, 404, 500, 503) },
});

const alertNotificationSettingsRoute = createRoute({
  method: "patch",
  path: "/alerts/{id}/notification_settings",
  operationId: "adminSetAlertNotificationSettings",
  tags: ["Admin"],
  summary: "Set an alert's notification cooldown",
  security: adminSecurity,
  request: { params: AlertIdParam, body: { required: true, content: { "application/json": { schema: AlertNotificationSettingsBody } } } },
  responses: {
    200: json(AlertSchema.extend({ notification_cooldown_seconds: z.number().int() }), "The alert with its cooldown."),
    ...errorResponses(400, 401, 404, 413, 422, 500, 503),
  },
});

const OutboxEmailSchema = z
  .object({
    id: z.string().uuid(),
    organization_id: z.string().uuid().nullable().openapi({
      description: "The organization the e-mail is about; null for a person's own account (a sign-up's confirmation, a password reset).",
    }),
    kind: z.enum(EMAIL_KINDS),
    to: z.string(),
    subject: z.string(),
    text: z.string().openapi({ description: "The body, opened for the operator. An invitation's holds its link: a secret." }),
    status: z.enum(EMAIL_STATUSES),
    attempts: z.number().int(),
    last_error: z.string().nullable(),
    created_at: z.string(),
    sent_at: z.string().nullable(),
  })
  .openapi("OutboxEmail");

const presentEmail = (email: OutboxEmail) => ({
  id: email.id,
  organization_id: email.organizationId,
  kind: email.kind,
  to: email.to,
  subject: email.subject,
  text: email.text,
  status: email.status,
  attempts: email.attempts,
  last_error: email.lastError,
  created_at: email.createdAt.toISOString(),
  sent_at: email.sentAt?.toISOString() ?? null,
});

const listEmailsRoute = createRoute({
  method: "get",
  path: "/emails",
  operationId: "adminListEmails",
  tags: ["Admin"],
  summary: "The e-mail outbox, newest first (at most 100)",
  description:
    "Every e-mail the service wrote (invitations, API key notices, alerts) with its status. Without SMTP_URL they are `held` here for the operator to read (docs/e-mail.md).",
  security: adminSecurity,
  request: { query: z.object({ status: z.enum(EMAIL_STATUSES).optional() }) },
  responses: { 200: json(z.object({ data: z.array(OutboxEmailSchema) }), "The outbox."), ...errorResponses(400, 401, 500, 503) },
});

const getEmailRoute = createRoute({
  method: "get",
  path: "/emails/{id}",
  operationId: "adminGetEmail",
  tags: ["Admin"],
  summary: "One e-mail of the outbox",
  security: adminSecurity,
  request: { params: z.object({ id: z.string() }) },
  responses: { 200: json(OutboxEmailSchema, "The e-mail."), ...errorResponses(401, 404, 500, 503) },
});

const adminDocumentConfig = (publicBaseUrl: string) => ({
  openapi: "3.1.0",
  info: {
    title: "CI test analytics admin API",
    version: "1.0.0",
    description: "What the web app does: organizations, projects, keys and tokens, invitations (an organization's first admin).",
  },
  servers: [{ url: `${publicBaseUrl}/admin/v1` }],
});

/** The notification channels (webhooks, Slack, Teams, e-mail), their delivery logs and test messages, and a project's digest sent now. */
function registerChannelRoutes(
  admin: OpenAPIHono<AppEnv>,
  config: AppConfig,
  serviceDeps: (c: Context<AppEnv>) => { db: Database; clock: Clock; webAppUrl: string },
): void {
  // No operator allowances unless the entry gives them (OUTBOUND_ALLOW_HOSTS): https to public hosts only.
  const urlPolicy = config.webhookUrlPolicy ?? {};
  admin.openapi(createWebhookRoute, async (c) => {
    const body = c.req.valid("json");
    const created = await createWebhookEndpoint({ ...serviceDeps(c), urlPolicy, secrets: config.secrets }, c.req.valid("param").id, {
      url: body.url,
      addresses: body.addresses,
      kind: body.kind,
      projectId: body.project_id ?? null,
      events: body.events,
      ownerFilter: body.owner_filter ?? null,
      description: body.description ?? null,
    });
    return c.json(created, 201);
  });
  admin.openapi(testMessageRoute, async (c) =>
    c.json(await sendTestMessage({ ...serviceDeps(c), queue: c.env.runQueue, logger: c.env.logger }, c.req.valid("param").id), 202),
  );
  admin.openapi(sendDigestRoute, async (c) => {
    const deps = { ...serviceDeps(c), queue: c.env.runQueue, logger: c.env.logger, secrets: config.secrets };
    return c.json(await sendProjectDigest(deps, c.req.valid("param").id), 202);
  });
  admin.openapi(listWebhooksRoute, async (c) => c.json(await listWebhookEndpoints(c.env.db, c.req.valid("param").id), 200));
  admin.openapi(deleteWebhookRoute, async (c) => {
    await deleteWebhookEndpoint(c.env.db, c.req.valid("param").id);
    return c.body(null, 204);
  });
}

export function createAdminApi(config: AppConfig) {
  const admin = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  const adminToken = config.adminToken;
  const quotas = resolveQuotas(config.quotas);
  /** The request's database and clock with the configured web app address: what the services take. */
  const serviceDeps = (c: Context<AppEnv>) => ({ db: c.env.db, clock: c.env.clock, webAppUrl: config.webAppUrl });

  admin.openAPIRegistry.registerComponent("securitySchemes", "adminToken", {
    type: "http",
    scheme: "bearer",
    description: "ADMIN_TOKEN from configuration.",
  });
  // Not the answer of any route: what webhooks receive, so receivers can generate a type for it.
  admin.openAPIRegistry.register("TestWebhookPayload", TestWebhookPayloadSchema);

  admin.use("*", async (c, next) => {
    if (!adminToken) throw new ApiError("not_found", `No route for ${c.req.method} ${new URL(c.req.url).pathname}.`);
    const presented = bearerToken(c.req.header("authorization"));
    if (!secretsEqual(presented, adminToken)) throw unauthorized("Invalid admin token.");
    await next();
  });
  // The edge cache (the Worker only): a write brackets the organization it changes (docs/edge-path.md).
  admin.use("*", async (c, next) => {
    const edgeCache = c.env.edgeCache;
    if (edgeCache?.writes) {
      const organizationId = await organizationOfAdminPath(c.env.db, new URL(c.req.url).pathname);
      if (organizationId) await edgeCache.beforeWrite(organizationId);
    }
    await next();
  });
  // Its bracket (above) is the flush: the bypass drops the organization's answers, its release drops them again.
  admin.openapi(flushEdgeCacheRoute, (c) => c.body(null, 204));
  // Behind the admin token; built at its first request, then served from memory with its ETag.
  const served = servedOnce(() => admin.getOpenAPI31Document(adminDocumentConfig(config.publicBaseUrl)));
  admin.get("/openapi.json", (c) => documentResponse(c, served(), { "Cache-Control": "private, no-cache" }));
  // Only the operations that take a body read one (jsonBodyOn says why): regenerating a key or a
  // token and deleting a webhook ignore whatever body comes with them, as /api/v1 does.
  admin.use("/organizations", jsonBodyOn("POST"));
  admin.use("/organizations/:id/projects", jsonBodyOn("POST"));
  admin.use("/organizations/:id/webhooks", jsonBodyOn("POST"));
  admin.use("/projects/:id/check_settings", jsonBodyOn("PATCH"));
  admin.use("/alerts/:id/notification_settings", jsonBodyOn("PATCH"));
  registerInvitations(admin, (c) => ({ ...serviceDeps(c), secrets: config.secrets }));

  admin.openapi(createOrganizationRoute, async (c) => {
    const body = c.req.valid("json");
    return c.json(
      await createOrganization({ ...serviceDeps(c), secrets: config.secrets }, { name: body.name, timeZone: body.time_zone }),
      201,
    );
  });

  admin.openapi(regenerateApiKeyRoute, async (c) => {
    const revokeKeys = (keyIds: string[]) => revokeApiKeys(c.env.keyCounter, keyIds);
    const { api_key, emailIds } = await regenerateApiKey(
      { ...serviceDeps(c), secrets: config.secrets, revokeKeys },
      c.req.valid("param").id,
    );
    await queueEmails({ queue: c.env.runQueue, logger: c.env.logger }, emailIds);
    return c.json({ api_key }, 200);
  });

  admin.openapi(createProjectRoute, async (c) => {
    const body = c.req.valid("json");
    const input = { name: body.name, description: body.description, defaultBranch: body.default_branch ?? null };
    return c.json(
      await createProject({ ...serviceDeps(c), secrets: config.secrets, maxProjects: quotas.projects }, c.req.valid("param").id, input),
      201,
    );
  });
  admin.openapi(checkSettingsRoute, async (c) => {
    const body = c.req.valid("json");
    return c.json(
      await setProjectCheckSettings({ ...serviceDeps(c), retention: config.retention }, c.req.valid("param").id, {
        defaultBranch: body.default_branch,
        autoQuarantineDays: body.auto_quarantine_days,
        retentionDays: body.retention_days,
      }),
      200,
    );
  });

  admin.openapi(regenerateUploadTokenRoute, async (c) =>
    c.json(await regenerateUploadToken({ ...serviceDeps(c), secrets: config.secrets }, c.req.valid("param").id), 200),
  );

  registerChannelRoutes(admin, config, serviceDeps);
  admin.openapi(listEmailsRoute, async (c) => {
    const emails = await listEmails({ db: c.env.db, secrets: config.secrets }, { status: c.req.valid("query").status, limit: 100 });
    return c.json({ data: emails.map(presentEmail) }, 200);
  });
  admin.openapi(getEmailRoute, async (c) => {
    const email = await findEmail({ db: c.env.db, secrets: config.secrets }, c.req.valid("param").id);
    if (!email) throw notFound("E-mail");
    return c.json(presentEmail(email), 200);
  });
  admin.openapi(listDeliveriesRoute, async (c) => c.json(await listDeliveries(c.env.db, c.req.valid("param").id), 200));
  admin.openapi(alertNotificationSettingsRoute, async (c) =>
    c.json(await setNotificationCooldown(serviceDeps(c), c.req.valid("param").id, c.req.valid("json").notification_cooldown_seconds), 200),
  );

  addMethodNotAllowed(admin);
  return admin;
}

/**
 * The organization an admin write changes, for the edge cache's bracket: named by the path
 * (/organizations/:id/…), or the organization of the project or alert it names (one statement).
 * Null for the writes that change nothing the edge caches (webhooks, e-mails, new organizations).
 */
async function organizationOfAdminPath(db: Database, path: string): Promise<string | null> {
  const [, kind, id] = /\/(organizations|projects|alerts)\/([^/]+)/.exec(path) ?? [];
  if (!kind || !id || !isUuid(id)) return null;
  if (kind === "organizations") return id;
  const query =
    kind === "projects"
      ? sql`select organization_id from projects where id = ${id}`
      : sql`select organization_id from alerts where id = ${id}`;
  const [row] = await rowsOf<{ organization_id: string }>(db.execute(query));
  return row?.organization_id ?? null;
}
