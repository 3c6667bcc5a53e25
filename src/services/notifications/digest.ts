/**
 * The weekly digest (docs/notifications.md#the-weekly-digest): every Monday at 09:00 in the
 * organization's time zone, each of its projects' week (digest-content.ts) goes to the channels
 * that chose `digest` (a `digest.weekly` delivery per channel and project, through the same outbox,
 * retries and log as every notification) and, as one e-mail per person with every project, to the
 * members who keep it on (digest-subscriptions.ts), with a one-click unsubscribe link and the
 * RFC 8058 headers.
 *
 * Sent once per organization and week: `sendDueDigests` (the Worker's cron, a timer on Node) claims
 * the week by inserting its `digest_weeks` row in the transaction that writes the e-mails and
 * deliveries, so of several processes, or a late cron that runs again, one sends and the others
 * find the row. A digest more than DIGEST_LATE_MS late is skipped (old news); an organization made
 * after the week's moment waits for the next one. The operator sends a project's digest at any
 * time (`sendProjectDigest`, the admin API), outside the weekly claim.
 */
import { and, asc, eq, inArray, isNull, lte, or, sql } from "drizzle-orm";
import { digestWeeks, members, organizations, projects, users, webhookEndpoints, notificationDeliveries } from "../../db/schema";
import type { Database } from "../../db/types";
import { type Transaction, transactionWithRetry } from "../../db/transaction-retry";
import type { RunQueue } from "../../ingest/run-queue";
import type { Clock } from "../../lib/clock";
import { describeError, notFound } from "../../lib/errors";
import { isUuid } from "../../lib/ids";
import type { Logger } from "../../lib/logger";
import type { SecretKeyring } from "../../lib/secret-box";
import { latestMondayAt } from "../../lib/zoned-time";
import { channelMessage } from "../../notifications/channel-messages";
import type { DigestPayload } from "../../notifications/digest-messages";
import { digestEmail } from "../../notifications/email-messages";
import { queueEmails, writeEmail } from "../shared/email-outbox";
import { queueDeliveries } from "../tests/test-events";
import { quotedName } from "../tenancy/invitation-email";
import { digestWindow, forOwner, isQuiet, projectDigest } from "./digest-content";
import { keepsDigestSql, unsubscribeToken } from "./digest-subscriptions";

/** When the digest goes out: Monday (the week's date) at this hour, in the organization's time zone. */
const DIGEST_HOUR = 9;
/** A digest this late (the processes were down, the cron stopped) is skipped rather than sent as old news. */
const DIGEST_LATE_MS = 24 * 3_600_000;
/**
 * Organizations one sweep writes digests for, at most: a sweep is bounded work (the Worker's cron
 * has a CPU budget). The rest are still due at the next sweep (every 10 minutes on the Worker, 5 on
 * Node): 100 a sweep is 14,400 organizations of one time zone within DIGEST_LATE_MS on the Worker.
 */
const DIGESTS_PER_SWEEP = 100;

export type DigestDeps = { db: Database; clock: Clock; logger: Logger; webAppUrl: string; queue: RunQueue; secrets: SecretKeyring };

type Organization = { id: string; name: string };
type Written = { deliveryIds: number[]; emailIds: string[] };

/**
 * Sends the digests that are due: per time zone in use, the organizations whose Monday 09:00 has
 * passed (by less than DIGEST_LATE_MS) and whose week has no digest yet. Returns the organizations
 * it sent for. An unknown time zone (none is accepted, but rows are data) is logged and skipped.
 * At most `limit` organizations are tried per sweep (DIGESTS_PER_SWEEP); the rest wait for the next.
 */
export async function sendDueDigests(deps: DigestDeps, limit = DIGESTS_PER_SWEEP): Promise<string[]> {
  const now = deps.clock.now();
  const zones = await deps.db.selectDistinct({ timeZone: organizations.timeZone }).from(organizations);
  const sent: string[] = [];
  let tried = 0;
  for (const { timeZone } of zones) {
    if (tried >= limit) break;
    let moment: { week: string; at: Date };
    try {
      moment = latestMondayAt(now, timeZone, DIGEST_HOUR);
    } catch (error) {
      deps.logger.error("weekly digest: unknown time zone", { timeZone, error: describeError(error) });
      continue;
    }
    if (now.getTime() - moment.at.getTime() >= DIGEST_LATE_MS) continue;
    const due = await deps.db
      .select({ id: organizations.id, name: organizations.name })
      .from(organizations)
      .leftJoin(digestWeeks, and(eq(digestWeeks.organizationId, organizations.id), eq(digestWeeks.week, moment.week)))
      .where(and(eq(organizations.timeZone, timeZone), lte(organizations.createdAt, moment.at), isNull(digestWeeks.week)))
      .orderBy(asc(organizations.id))
      .limit(limit - tried);
    for (const organization of due) {
      tried++;
      try {
        if (await sendWeek(deps, organization, moment.week)) sent.push(organization.id);
      } catch (error) {
        // One organization's failure does not hold the others; its week is not claimed, so the next run tries again.
        deps.logger.error("weekly digest failed", { organizationId: organization.id, error: describeError(error) });
      }
    }
  }
  return sent;
}

/** Claims the organization's week and writes its digest in one transaction; false when another process claimed it first. */
async function sendWeek(deps: DigestDeps, organization: Organization, week: string): Promise<boolean> {
  const now = deps.clock.now();
  const written = await transactionWithRetry(deps.db, async (tx) => {
    const claimed = await tx
      .insert(digestWeeks)
      .values({ organizationId: organization.id, week, sentAt: now })
      .onConflictDoNothing()
      .returning({ week: digestWeeks.week });
    if (claimed.length === 0) return null;
    const ids = await tx
      .select({ id: projects.id, name: projects.name })
      .from(projects)
      .where(eq(projects.organizationId, organization.id));
    return writeDigest(deps, tx, organization, ids, now);
  });
  if (written === null) return false;
  await queueWritten(deps, written);
  deps.logger.info("weekly digest sent", {
    organizationId: organization.id,
    week,
    deliveries: written.deliveryIds.length,
    emails: written.emailIds.length,
  });
  return true;
}

/** The operator's "send this project's digest now" (admin API): the same content and recipients, for one project, outside the weekly claim. */
export async function sendProjectDigest(deps: DigestDeps, projectId: string) {
  if (!isUuid(projectId)) throw notFound("Project");
  const now = deps.clock.now();
  const [found] = await deps.db
    .select({ project: { id: projects.id, name: projects.name }, organization: { id: organizations.id, name: organizations.name } })
    .from(projects)
    .innerJoin(organizations, eq(organizations.id, projects.organizationId))
    .where(eq(projects.id, projectId))
    .limit(1);
  if (!found) throw notFound("Project");
  const written = await transactionWithRetry(deps.db, (tx) =>
    writeDigest(deps, tx, found.organization, [found.project], now, { evenIfQuiet: true }),
  );
  await queueWritten(deps, written);
  const window = digestWindow(now);
  return {
    project_id: projectId,
    week: { from: window.from.toISOString(), to: window.to.toISOString() },
    deliveries: written.deliveryIds.length,
    emails: written.emailIds.length,
  };
}

async function queueWritten(deps: DigestDeps, written: Written): Promise<void> {
  await queueDeliveries(deps, written.deliveryIds);
  await queueEmails(deps, written.emailIds);
}

/**
 * The digest's deliveries and e-mails, written in the caller's transaction: one delivery per channel
 * that chose `digest` and project it hears (cut to its owner filter), one e-mail per member who keeps
 * it on with every project. Projects with nothing to say are left out, and nobody is e-mailed about
 * none (unless the operator asked for the project: `evenIfQuiet`).
 */
async function writeDigest(
  deps: DigestDeps,
  tx: Transaction,
  organization: Organization,
  projectRows: { id: string; name: string }[],
  now: Date,
  options: { evenIfQuiet?: boolean } = {},
): Promise<Written> {
  const digests: DigestPayload[] = [];
  for (const project of projectRows) {
    const digest = await projectDigest(tx, deps.webAppUrl, project, now);
    if (options.evenIfQuiet || !isQuiet(digest)) digests.push(digest);
  }
  if (digests.length === 0) return { deliveryIds: [], emailIds: [] };
  const deliveryIds = await writeChannelDeliveries(tx, organization.id, digests, now);
  const emailIds = await writeMemberEmails(deps, tx, organization, digests);
  return { deliveryIds, emailIds };
}

/** One `digest.weekly` delivery per channel that chose the digest and project it hears, its body fixed now. */
async function writeChannelDeliveries(tx: Transaction, organizationId: string, digests: DigestPayload[], now: Date): Promise<number[]> {
  const projectIds = digests.map((digest) => digest.project_id);
  const endpoints = await tx
    .select({ id: webhookEndpoints.id, projectId: webhookEndpoints.projectId, ownerFilter: webhookEndpoints.ownerFilter })
    .from(webhookEndpoints)
    .where(
      and(
        eq(webhookEndpoints.organizationId, organizationId),
        or(isNull(webhookEndpoints.projectId), inArray(webhookEndpoints.projectId, projectIds)),
        sql`${webhookEndpoints.events} @> '["digest"]'::jsonb`,
      ),
    );
  const values = endpoints.flatMap((endpoint) =>
    digests
      .filter((digest) => endpoint.projectId === null || endpoint.projectId === digest.project_id)
      .map((digest) => ({
        endpointId: endpoint.id,
        eventType: "digest.weekly" as const,
        eventIds: [],
        payload: forOwner(digest, endpoint.ownerFilter) as unknown as Record<string, unknown>,
        createdAt: now,
      })),
  );
  if (values.length === 0) return [];
  return (await tx.insert(notificationDeliveries).values(values).returning({ id: notificationDeliveries.id })).map((row) => row.id);
}

/** One e-mail per member who keeps the digest on: every project's section, the unsubscribe link, List-Unsubscribe (RFC 8058). */
async function writeMemberEmails(
  deps: DigestDeps,
  tx: Transaction,
  organization: Organization,
  digests: DigestPayload[],
): Promise<string[]> {
  const readers = await tx
    .select({ memberId: members.id, email: users.email })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.organizationId, organization.id), keepsDigestSql))
    .orderBy(asc(members.createdAt), asc(members.id));
  const base = deps.webAppUrl.replace(/\/+$/, "");
  // The organization's name is data typed at sign-up: quoted and defused as in every e-mail that names it.
  const organizationName = quotedName(organization.name, 60);
  const messages = digests.map((digest) => channelMessage(digest, { projectName: digest.project.name, runNumber: null })!);
  const ids: string[] = [];
  for (const reader of readers) {
    const unsubscribeUrl = `${base}/digest/unsubscribe/${await unsubscribeToken(deps.secrets, reader.memberId)}`;
    const bodies = digestEmail({ organizationName, messages, unsubscribeUrl, teamUrl: `${base}/settings/team` });
    const headers = { "List-Unsubscribe": `<${unsubscribeUrl}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" };
    ids.push(
      await writeEmail(
        { db: tx, clock: deps.clock, secrets: deps.secrets },
        { organizationId: organization.id, kind: "digest", to: reader.email, ...bodies, headers },
      ),
    );
  }
  return ids;
}
