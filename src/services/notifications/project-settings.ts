/**
 * What a project's settings page reads and changes besides the project's own row (projects.ts):
 * the webhooks that receive its events. Every query is scoped by the organization, and removing
 * one is scoped by the project: the page can only remove the project's own endpoints. Webhook URLs
 * often carry the receiver's credential, so only admins read them whole (redactedWebhookUrl).
 */
import type { Retention } from "../../lib/retention";
import { and, desc, eq, inArray, isNull, or } from "drizzle-orm";
import { notificationDeliveries, webhookEndpoints } from "../../db/schema";
import { transactionWithRetry } from "../../db/transaction-retry";
import { notFound } from "../../lib/errors";
import { isUuid } from "../../lib/ids";
import type { ServiceDeps } from "../shared/context";
import { redactedWebhookUrl } from "./notification-presenters";
import type { ChannelEvent, ChannelKind } from "../../lib/vocabulary";
import { setProjectCheckSettings, updateProject } from "../tenancy/projects";

/** At most this many endpoints are listed (the admin API's list has the same cap). */
const PROJECT_WEBHOOKS_LIMIT = 100;

export type ProjectWebhook = {
  id: string;
  kind: ChannelKind;
  url: string;
  /** An e-mail channel's addresses: for admins only (null for members, and for the other kinds). */
  addresses: string[] | null;
  /** How many addresses an e-mail channel has (what a member reads instead of them); 0 for the other kinds. */
  addressCount: number;
  events: ChannelEvent[];
  ownerFilter: string | null;
  description: string | null;
  createdAt: Date;
  allProjects: boolean;
  /** The newest delivery of the delivery log (its outcome: a test message's, for one). */
  lastDelivery: LastDelivery | null;
};

type LastDelivery = Pick<typeof notificationDeliveries.$inferSelect, "eventType" | "status" | "lastStatusCode" | "lastError" | "createdAt">;

/** Who reads the list: an admin of the organization sees whole URLs, anyone else scheme and host only. */
export type WebhookViewer = { admin: boolean };

/**
 * The project's own endpoints and the organization's endpoints for every project, newest first.
 * The URLs are redacted unless the viewer is said to be an admin: a caller that does not say gets
 * the safe answer. A Slack or Teams channel's URL is masked for admins too (it is stored so).
 */
export async function listProjectWebhooks(
  deps: Pick<ServiceDeps, "db">,
  organizationId: string,
  projectId: string,
  viewer: WebhookViewer = { admin: false },
): Promise<ProjectWebhook[]> {
  const rows = await deps.db
    .select({
      id: webhookEndpoints.id,
      kind: webhookEndpoints.kind,
      url: webhookEndpoints.url,
      emailAddresses: webhookEndpoints.emailAddresses,
      events: webhookEndpoints.events,
      ownerFilter: webhookEndpoints.ownerFilter,
      description: webhookEndpoints.description,
      createdAt: webhookEndpoints.createdAt,
      projectId: webhookEndpoints.projectId,
    })
    .from(webhookEndpoints)
    .where(
      and(
        eq(webhookEndpoints.organizationId, organizationId),
        or(eq(webhookEndpoints.projectId, projectId), isNull(webhookEndpoints.projectId)),
      ),
    )
    .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id))
    .limit(PROJECT_WEBHOOKS_LIMIT);
  const last = await lastDeliveries(
    deps,
    rows.map((row) => row.id),
  );
  return rows.map(({ projectId: endpointProject, url, emailAddresses, ...row }) => ({
    ...row,
    // E-mail addresses are not secrets, but members' addresses are for the organization's admins to see.
    url: viewer.admin ? url : row.kind === "email" ? "mailto:…" : redactedWebhookUrl(url),
    addresses: viewer.admin ? emailAddresses : null,
    addressCount: emailAddresses?.length ?? 0,
    allProjects: endpointProject === null,
    lastDelivery: last.get(row.id) ?? null,
  }));
}

/** Each endpoint's newest delivery (the delivery log's index on endpoint and time serves it). */
async function lastDeliveries(deps: Pick<ServiceDeps, "db">, endpointIds: string[]): Promise<Map<string, LastDelivery>> {
  if (endpointIds.length === 0) return new Map();
  const d = notificationDeliveries;
  const rows = await deps.db
    .selectDistinctOn([d.endpointId], {
      endpointId: d.endpointId,
      eventType: d.eventType,
      status: d.status,
      lastStatusCode: d.lastStatusCode,
      lastError: d.lastError,
      createdAt: d.createdAt,
    })
    .from(d)
    .where(inArray(d.endpointId, endpointIds))
    .orderBy(d.endpointId, desc(d.createdAt), desc(d.id));
  return new Map(rows.map(({ endpointId, ...row }) => [endpointId, row]));
}

/** Removes one of the project's own endpoints; another project's or organization-wide one is not found. */
export async function deleteProjectWebhook(
  deps: Pick<ServiceDeps, "db">,
  organizationId: string,
  projectId: string,
  webhookId: string,
): Promise<void> {
  if (!isUuid(webhookId)) throw notFound("Webhook");
  const deleted = await deps.db
    .delete(webhookEndpoints)
    .where(
      and(
        eq(webhookEndpoints.id, webhookId),
        eq(webhookEndpoints.organizationId, organizationId),
        eq(webhookEndpoints.projectId, projectId),
      ),
    )
    .returning({ id: webhookEndpoints.id });
  if (deleted.length === 0) throw notFound("Webhook");
}

export type ProjectSettingsInput = {
  name: string;
  description: string | null;
  defaultBranch: string | null;
  autoQuarantineDays: number | null;
  /** Null: the deployment's RETENTION_DAYS (docs/retention.md). */
  retentionDays: number | null;
};

/** The settings form's fields, all set together in one transaction (no half-saved form). */
export async function saveProjectSettings(
  deps: ServiceDeps & { retention?: Retention },
  organizationId: string,
  projectId: string,
  input: ProjectSettingsInput,
): Promise<void> {
  await transactionWithRetry(deps.db, async (tx) => {
    const scoped = { ...deps, db: tx };
    await updateProject({ ...scoped, organizationId }, projectId, { name: input.name, description: input.description ?? "" });
    await setProjectCheckSettings(scoped, projectId, {
      defaultBranch: input.defaultBranch,
      autoQuarantineDays: input.autoQuarantineDays,
      retentionDays: input.retentionDays,
    });
  });
}
