/**
 * Notification settings, through the admin API: an organization's webhook endpoints (each with
 * its signing secret, shown once and stored sealed: webhook-secrets.ts; at most
 * WEBHOOKS_PER_ORGANIZATION of them), their delivery logs, and an alert's notification cooldown.
 */
import { and, count, desc, eq } from "drizzle-orm";
import { alerts, notificationDeliveries, organizations, projects, webhookEndpoints } from "../../db/schema";
import type { Database } from "../../db/types";
import { transactionWithRetry } from "../../db/transaction-retry";
import { ApiError, notFound, validationFailed } from "../../lib/errors";
import { isUuid } from "../../lib/ids";
import { DEFAULT_WEBHOOKS_PER_ORGANIZATION, outboundUrlProblem } from "../../notifications/outbound-policy";
import { presentDelivery, presentWebhookEndpoint } from "./notification-presenters";
import type { NotificationDeps } from "./notifications";
import { presentAlert } from "../../contract/presenters";
import { sealSigningSecret } from "./webhook-secrets";

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
  input: { url: string; projectId?: string | null; description?: string | null },
) {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const problem = outboundUrlProblem(input.url, deps.urlPolicy);
  if (problem) throw validationFailed([{ field: "url", message: problem }]);
  if (input.projectId) {
    if (!isUuid(input.projectId)) throw validationFailed([{ field: "project_id", message: "is not a project of this organization" }]);
    const [project] = await deps.db
      .select({ id: projects.id })
      .from(projects)
      .where(and(eq(projects.id, input.projectId), eq(projects.organizationId, organizationId)))
      .limit(1);
    if (!project) throw validationFailed([{ field: "project_id", message: "is not a project of this organization" }]);
  }
  const secret = randomSigningSecret();
  // The id is chosen here because the sealed secret is bound to its row.
  const id = crypto.randomUUID();
  const sealed = await sealSigningSecret(deps.secrets, id, secret);
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
        url: input.url,
        description: input.description ?? null,
        signingSecretEncrypted: sealed,
        createdAt: deps.clock.now(),
      })
      .returning();
    return inserted!;
  });
  return { webhook: presentWebhookEndpoint(row), signing_secret: secret };
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
