/**
 * Notification settings, through the admin API and the project settings page: an organization's
 * channels (signed webhooks, each with its signing secret, shown once and stored sealed; Slack and
 * Teams channels, whose URL is sealed and masked on every read but the answer to its creation:
 * webhook-secrets.ts; at most WEBHOOKS_PER_ORGANIZATION of them), their events and owner filter,
 * their delivery logs, a test message, and an alert's notification cooldown.
 */
import { and, count, desc, eq } from "drizzle-orm";
import { alerts, notificationDeliveries, organizations, projects, webhookEndpoints } from "../../db/schema";
import { maskedChannelUrl } from "../../notifications/channel-messages";
import { CHANNEL_EVENTS, type ChannelEvent, type ChannelKind } from "../../lib/vocabulary";
import type { RunQueue } from "../../ingest/run-queue";
import type { Logger } from "../../lib/logger";
import { queueDeliveries } from "../tests/test-events";
import type { Database } from "../../db/types";
import { transactionWithRetry } from "../../db/transaction-retry";
import { ApiError, notFound, validationFailed } from "../../lib/errors";
import { isUuid } from "../../lib/ids";
import { DEFAULT_WEBHOOKS_PER_ORGANIZATION, outboundUrlProblem } from "../../notifications/outbound-policy";
import { presentDelivery, presentWebhookEndpoint } from "./notification-presenters";
import type { NotificationDeps } from "./notifications";
import { presentAlert } from "../../contract/presenters";
import { sealChannelUrl, sealSigningSecret } from "./webhook-secrets";
import { checkChannelAddresses } from "./email-channel";

/** What a new channel is: its kind, URL (an e-mail channel: its members' addresses instead) and scope, the events it hears, and whose tests. */
export type ChannelInput = {
  url?: string;
  addresses?: readonly string[];
  projectId?: string | null;
  description?: string | null;
  kind?: ChannelKind;
  events?: readonly ChannelEvent[];
  ownerFilter?: string | null;
};

/** A CODEOWNERS owner as an owner filter takes it: `@org/team`, `@user` or an e-mail address, compared without case. */
export function ownerFilterProblem(owner: string): string | null {
  if (owner.length > 255) return "is too long (maximum is 255 characters)";
  if (!/^@[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/.test(owner) && !/^[^\s@]+@[^\s@]+$/.test(owner))
    return "must be a CODEOWNERS owner: @org/team, @user or an e-mail address";
  return null;
}

function randomSigningSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Adds an endpoint, within the organization's cap: every endpoint multiplies what one event sends
 * (each delivery retried up to six times), so the count is bounded (`quota_exceeded`, 429). The
 * count and the insert share a transaction holding the organization's row, so two concurrent
 * additions cannot both take the last place.
 */
export async function createWebhookEndpoint(
  deps: Pick<NotificationDeps, "db" | "clock" | "urlPolicy" | "secrets">,
  organizationId: string,
  input: ChannelInput,
) {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const kind = input.kind ?? "webhook";
  const { url, addresses } = await channelDestination(deps, organizationId, kind, input);
  const events = CHANNEL_EVENTS.filter((event) => (input.events ?? CHANNEL_EVENTS).includes(event));
  if (events.length === 0) throw validationFailed([{ field: "events", message: "must name at least one event" }]);
  const ownerFilter = input.ownerFilter?.trim() || null;
  const ownerProblem = ownerFilter === null ? null : ownerFilterProblem(ownerFilter);
  if (ownerProblem) throw validationFailed([{ field: "owner_filter", message: ownerProblem }]);
  if (input.projectId) {
    if (!isUuid(input.projectId)) throw validationFailed([{ field: "project_id", message: "is not a project of this organization" }]);
    const [project] = await deps.db
      .select({ id: projects.id })
      .from(projects)
      .where(and(eq(projects.id, input.projectId), eq(projects.organizationId, organizationId)))
      .limit(1);
    if (!project) throw validationFailed([{ field: "project_id", message: "is not a project of this organization" }]);
  }
  // The id is chosen here because the sealed secret (or URL) is bound to its row.
  const id = crypto.randomUUID();
  const secret = kind === "webhook" ? randomSigningSecret() : null;
  const sealed = secret === null ? null : await sealSigningSecret(deps.secrets, id, secret);
  const sealedUrl = kind === "webhook" || kind === "email" ? null : await sealChannelUrl(deps.secrets, id, url);
  const cap = deps.urlPolicy.webhooksPerOrganization ?? DEFAULT_WEBHOOKS_PER_ORGANIZATION;
  const row = await transactionWithRetry(deps.db, async (tx) => {
    const [organization] = await tx
      .select({ id: organizations.id })
      .from(organizations)
      .where(eq(organizations.id, organizationId))
      .for("no key update");
    if (!organization) throw notFound("Organization");
    const [existing] = await tx
      .select({ endpoints: count() })
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.organizationId, organizationId));
    if (existing!.endpoints >= cap) {
      throw new ApiError(
        "quota_exceeded",
        `This organization already has ${existing!.endpoints} webhooks, the most it may have (${cap}). Remove one before adding another.`,
      );
    }
    const [inserted] = await tx
      .insert(webhookEndpoints)
      .values({
        id,
        organizationId,
        projectId: input.projectId ?? null,
        kind,
        // A channel's URL is its credential: only its masked form is kept in the clear.
        url: sealedUrl === null ? url : maskedChannelUrl(url),
        urlEncrypted: sealedUrl,
        emailAddresses: addresses,
        events,
        ownerFilter,
        description: input.description ?? null,
        signingSecretEncrypted: sealed,
        createdAt: deps.clock.now(),
      })
      .returning();
    return inserted!;
  });
  // The one answer that shows a channel's URL whole: to the admin who set it.
  return { webhook: { ...presentWebhookEndpoint(row), url }, signing_secret: secret };
}

/**
 * Where a new channel sends: a URL the outbound policy allows, or for an e-mail channel its
 * members' addresses (checked by checkChannelAddresses), kept as a `mailto:` URL too so that every
 * channel has one to show (to admins only).
 */
async function channelDestination(
  deps: Pick<NotificationDeps, "db" | "urlPolicy">,
  organizationId: string,
  kind: ChannelKind,
  input: ChannelInput,
): Promise<{ url: string; addresses: string[] | null }> {
  if (kind !== "email") {
    if (input.addresses !== undefined) throw validationFailed([{ field: "addresses", message: "is for an e-mail channel only" }]);
    const problem = outboundUrlProblem(input.url ?? "", deps.urlPolicy);
    if (problem) throw validationFailed([{ field: "url", message: problem }]);
    return { url: input.url!, addresses: null };
  }
  if (input.url) throw validationFailed([{ field: "url", message: "is not for an e-mail channel: give its addresses" }]);
  const [organization] = await deps.db
    .select({ id: organizations.id })
    .from(organizations)
    .where(eq(organizations.id, organizationId))
    .limit(1);
  if (!organization) throw notFound("Organization");
  const addresses = await checkChannelAddresses(deps.db, organizationId, input.addresses);
  return { url: `mailto:${addresses.join(",")}`, addresses };
}

export async function listWebhookEndpoints(db: Database, organizationId: string) {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const [organization] = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).limit(1);
  if (!organization) throw notFound("Organization");
  const rows = await db
    .select()
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.organizationId, organizationId))
    .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id))
    .limit(100);
  return { data: rows.map(presentWebhookEndpoint) };
}

export async function deleteWebhookEndpoint(db: Database, endpointId: string) {
  if (!isUuid(endpointId)) throw notFound("Webhook");
  const deleted = await db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId)).returning({ id: webhookEndpoints.id });
  if (deleted.length === 0) throw notFound("Webhook");
}

/** The newest deliveries of an endpoint (the delivery log). */
export async function listDeliveries(db: Database, endpointId: string) {
  if (!isUuid(endpointId)) throw notFound("Webhook");
  const [endpoint] = await db
    .select({ id: webhookEndpoints.id })
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.id, endpointId))
    .limit(1);
  if (!endpoint) throw notFound("Webhook");
  const rows = await db
    .select()
    .from(notificationDeliveries)
    .where(eq(notificationDeliveries.endpointId, endpointId))
    .orderBy(desc(notificationDeliveries.createdAt), desc(notificationDeliveries.id))
    .limit(100);
  return { data: rows.map(presentDelivery) };
}

export async function setNotificationCooldown(
  deps: Pick<NotificationDeps, "db" | "clock" | "webAppUrl">,
  alertId: string,
  cooldownSeconds: number,
) {
  if (!isUuid(alertId)) throw notFound("Alert");
  const [row] = await deps.db
    .update(alerts)
    .set({ notificationCooldownSeconds: cooldownSeconds, updatedAt: deps.clock.now() })
    .where(eq(alerts.id, alertId))
    .returning();
  if (!row) throw notFound("Alert");
  return { ...presentAlert(row, deps.clock.now(), deps.webAppUrl), notification_cooldown_seconds: row.notificationCooldownSeconds };
}

/**
 * A test message to one channel, through the outbox like any notification (the outbound policy,
 * the organization's deliveries per minute, retries, the delivery log): what an admin sends to
 * check a channel. `scope` limits the endpoint to an organization and, on a project's settings
 * page, to those the project's notifications reach.
 */
export async function sendTestMessage(
  deps: { db: Database; clock: NotificationDeps["clock"]; webAppUrl: string; queue: RunQueue; logger: Logger },
  endpointId: string,
  scope: { organizationId: string; projectId: string } | null = null,
) {
  if (!isUuid(endpointId)) throw notFound("Webhook");
  const [endpoint] = await deps.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId)).limit(1);
  const inScope =
    endpoint &&
    (scope === null ||
      (endpoint.organizationId === scope.organizationId && (endpoint.projectId === null || endpoint.projectId === scope.projectId)));
  if (!inScope) throw notFound("Webhook");
  const projectId = scope?.projectId ?? endpoint.projectId;
  const now = deps.clock.now();
  const base = deps.webAppUrl.replace(/\/+$/, "");
  const [delivery] = await deps.db
    .insert(notificationDeliveries)
    .values({
      endpointId,
      eventType: "test.message",
      eventIds: [],
      payload: {
        type: "test.message",
        occurred_at: now.toISOString(),
        project_id: projectId,
        endpoint_id: endpointId,
        url: projectId === null ? `${base}/` : `${base}/projects/${projectId}/settings`,
      },
      createdAt: now,
    })
    .returning();
  await queueDeliveries(deps, [delivery!.id]);
  return presentDelivery(delivery!);
}
