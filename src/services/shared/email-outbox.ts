/**
 * The e-mail outbox (docs/e-mail.md). Every e-mail is written to `email_outbox` in the transaction
 * that decided it (an invitation, a regenerated API key, an alert's trip), its body sealed under
 * SECRETS_KEY (an invitation's link is a secret), and sent by background work once that
 * transaction has committed: a queue message carries the row's id. Each attempt is recorded;
 * a failed one is retried with backoff through the queue, and the last failure marks the row
 * `failed`. Without a transport the row is `held`: kept, and readable by the operator through
 * GET /admin/v1/emails, never silently dropped.
 */
import { and, desc, eq, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import { alerts, emailOutbox, members, users } from "../../db/schema";
import { type Transaction, transactionWithRetry } from "../../db/transaction-retry";
import type { Database } from "../../db/types";
import type { RunQueue } from "../../ingest/run-queue";
import type { Clock } from "../../lib/clock";
import { describeError } from "../../lib/errors";
import type { Logger } from "../../lib/logger";
import type { SecretKeyring } from "../../lib/secret-box";
import type { EmailKind, EmailStatus } from "../../lib/vocabulary";
import type { MailSettings } from "../../mail/transport";
import { isSnoozed } from "../../contract/presenters";

/** Attempts per e-mail, the first included; then it is marked failed. */
export const MAX_EMAIL_ATTEMPTS = 6;
/** Seconds before attempt n+1 (n = attempts so far): 10 s, 1 min, 5 min, 30 min, 2 h. */
const RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200];

/**
 * `organizationId` null: the mail of a person's own account (src/auth/accounts.ts). `html`: an
 * alternative to the text (a channel's notification, the digest); `headers`: extra headers (the
 * digest's List-Unsubscribe).
 */
export type NewEmail = {
  organizationId: string | null;
  kind: EmailKind;
  to: string;
  subject: string;
  text: string;
  html?: string;
  headers?: Record<string, string>;
  alertId?: string;
};

const bodyContext = (id: string) => `email_outbox/${id}/body`;
const htmlContext = (id: string) => `email_outbox/${id}/html`;
const headersContext = (id: string) => `email_outbox/${id}/headers`;

/** The kinds sent to members only (docs/e-mail.md): whoever left the organization before the attempt gets nothing. */
const MEMBERS_ONLY_KINDS: readonly EmailKind[] = ["notification", "digest"];

/** Writes one e-mail to the outbox (in the caller's transaction) and returns its id; nothing is sent before `queueEmails`. */
export async function writeEmail(
  deps: { db: Database | Transaction; clock: Clock; secrets: SecretKeyring },
  email: NewEmail,
): Promise<string> {
  if (/[\r\n]/.test(email.to) || /[\r\n]/.test(email.subject)) throw new Error("An e-mail's address and subject are one line each.");
  if (Object.entries(email.headers ?? {}).some(([name, value]) => /[\r\n:]/.test(name) || /[\r\n]/.test(value)))
    throw new Error("An e-mail's headers are one line each.");
  const id = crypto.randomUUID();
  await deps.db.insert(emailOutbox).values({
    id,
    organizationId: email.organizationId,
    kind: email.kind,
    toAddress: email.to,
    subject: email.subject,
    bodyEncrypted: await deps.secrets.encrypt(email.text, bodyContext(id)),
    htmlEncrypted: email.html === undefined ? null : await deps.secrets.encrypt(email.html, htmlContext(id)),
    headersEncrypted: email.headers === undefined ? null : await deps.secrets.encrypt(JSON.stringify(email.headers), headersContext(id)),
    alertId: email.alertId ?? null,
    createdAt: deps.clock.now(),
  });
  return id;
}

/**
 * Hands committed e-mails to the background work. A message the queue refuses stays `pending`
 * in the outbox (logged): on Node it is queued again at the next start (`recoverPendingEmails`).
 */
export async function queueEmails(deps: { queue: RunQueue; logger: Logger }, emailIds: readonly string[]): Promise<void> {
  for (const emailId of emailIds) {
    try {
      await deps.queue.send({ emailId });
    } catch (error) {
      deps.logger.error("could not queue an e-mail; it stays pending in the outbox", { emailId, error: describeError(error) });
    }
  }
}

/** Queues every e-mail still pending (Node, at start: the in-process queue's messages do not outlive a process). */
export async function recoverPendingEmails(db: Database, queue: RunQueue): Promise<number> {
  const pending = await db
    .select({ id: emailOutbox.id })
    .from(emailOutbox)
    .where(eq(emailOutbox.status, "pending"))
    .orderBy(emailOutbox.createdAt);
  for (const { id } of pending) await queue.send({ emailId: id });
  return pending.length;
}

export type EmailDeps = {
  db: Database;
  clock: Clock;
  logger: Logger;
  secrets: SecretKeyring;
  queue: RunQueue;
  mail: MailSettings;
  /** Seconds before each retry; RETRY_DELAYS_SECONDS by default (tests shorten them). */
  retryDelaysSeconds?: number[];
};

export type EmailOutcome = "sent" | "held" | "retrying" | "failed" | "suppressed" | "gone" | "claimed";

/** How long a claimed attempt holds its e-mail: well above an SMTP exchange's timeouts. */
export const SEND_LEASE_SECONDS = 120;

/**
 * One attempt at one outbox e-mail. An alert's e-mail is first checked against its alert: one
 * snoozed or disabled since is `suppressed`; sending one sets the alert's last_notified_at.
 * Logs name the e-mail's id, kind and outcome, never its address's body or a link (except a held
 * message's text on a local run, MailSettings.logHeldBodies).
 */
export async function deliverEmail(deps: EmailDeps, emailId: string): Promise<EmailOutcome> {
  const now = deps.clock.now();
  // The attempt is claimed before anything is sent: a second delivery of the same message (queues
  // deliver at least once) finds the claim and sends nothing. An attempt under way is one with a
  // start and no outcome yet (last_error null); one that died (a crash mid-send) lapses after
  // SEND_LEASE_SECONDS, and a later delivery takes it over.
  const [email] = await deps.db
    .update(emailOutbox)
    .set({ attempts: sql`${emailOutbox.attempts} + 1`, lastAttemptAt: now, lastError: null })
    .where(
      and(
        eq(emailOutbox.id, emailId),
        eq(emailOutbox.status, "pending"),
        or(
          isNull(emailOutbox.lastAttemptAt),
          isNotNull(emailOutbox.lastError),
          lt(emailOutbox.lastAttemptAt, new Date(now.getTime() - SEND_LEASE_SECONDS * 1000)),
        ),
      ),
    )
    .returning();
  if (!email) return claimedElsewhere(deps, emailId, now);

  if (email.alertId !== null) {
    const [alert] = await deps.db
      .select({ active: alerts.active, snoozedUntil: alerts.snoozedUntil })
      .from(alerts)
      .where(eq(alerts.id, email.alertId))
      .limit(1);
    if (!alert) return "gone";
    const silencedBy = !alert.active ? "disabled" : isSnoozed(alert.snoozedUntil, now) ? "snoozed" : null;
    if (silencedBy) {
      await setStatus(deps.db, email.id, {
        status: "suppressed",
        attempts: email.attempts - 1,
        lastError: `not sent: the alert was ${silencedBy} before this attempt`,
      });
      deps.logger.info("e-mail suppressed", { emailId: email.id, kind: email.kind, reason: silencedBy });
      return "suppressed";
    }
  }

  const gone = MEMBERS_ONLY_KINDS.includes(email.kind) ? await recipientGone(deps.db, email) : null;
  if (gone) {
    await setStatus(deps.db, email.id, { status: "suppressed", attempts: email.attempts - 1, lastError: `not sent: ${gone}` });
    deps.logger.info("e-mail suppressed", { emailId: email.id, kind: email.kind, reason: gone });
    return "suppressed";
  }

  if (!deps.mail.transport) {
    await setStatus(deps.db, email.id, {
      status: "held",
      attempts: email.attempts - 1,
      lastError: "not sent: no e-mail transport is configured (SMTP_URL)",
    });
    const fields: Record<string, unknown> = {
      emailId: email.id,
      kind: email.kind,
      subject: email.subject,
      readWith: `GET /admin/v1/emails/${email.id}`,
    };
    if (deps.mail.logHeldBodies)
      Object.assign(fields, { to: email.toAddress, text: await deps.secrets.decrypt(email.bodyEncrypted, bodyContext(email.id)) });
    deps.logger.info("e-mail kept in the outbox (SMTP_URL is not set)", fields);
    return "held";
  }

  const attempt = email.attempts;
  let error: string | null = null;
  try {
    const text = await deps.secrets.decrypt(email.bodyEncrypted, bodyContext(email.id));
    const html = email.htmlEncrypted === null ? undefined : await deps.secrets.decrypt(email.htmlEncrypted, htmlContext(email.id));
    const headers =
      email.headersEncrypted === null
        ? undefined
        : (JSON.parse(await deps.secrets.decrypt(email.headersEncrypted, headersContext(email.id))) as Record<string, string>);
    await deps.mail.transport.send({ from: deps.mail.from, to: email.toAddress, subject: email.subject, text, html, headers });
  } catch (cause) {
    // The SMTP server's reply, without the message: it never holds the body.
    error = cause instanceof Error ? cause.message.slice(0, 500) : "could not send";
  }

  if (!error) {
    await transactionWithRetry(deps.db, async (tx) => {
      await tx.update(emailOutbox).set({ status: "sent", lastError: null, sentAt: now }).where(eq(emailOutbox.id, email.id));
      if (email.alertId === null) return;
      await tx
        .update(alerts)
        .set({ lastNotifiedAt: now })
        .where(and(eq(alerts.id, email.alertId), or(isNull(alerts.lastNotifiedAt), lt(alerts.lastNotifiedAt, now))));
    });
    deps.logger.info("e-mail sent", { emailId: email.id, kind: email.kind, attempt });
    return "sent";
  }

  const final = attempt >= MAX_EMAIL_ATTEMPTS;
  // The outcome (last_error) releases the claim: the retry below takes the next one.
  await setStatus(deps.db, email.id, { status: final ? "failed" : "pending", lastError: error });
  deps.logger.info("e-mail attempt failed", { emailId: email.id, kind: email.kind, attempt, error, final });
  if (final) return "failed";
  const delays = deps.retryDelaysSeconds ?? RETRY_DELAYS_SECONDS;
  try {
    await deps.queue.send({ emailId: email.id }, { delaySeconds: delays[attempt - 1] ?? delays.at(-1)! });
  } catch (queueError) {
    deps.logger.error("could not queue an e-mail retry", { emailId: email.id, error: describeError(queueError) });
  }
  return "retrying";
}

/**
 * Why a members-only e-mail must not go out, checked at each attempt: its recipient is no longer a
 * member of the organization (an e-mail channel's address, a digest's reader), or, for the digest,
 * turned it off (unsubscribed) since it was written. Null: send it.
 */
async function recipientGone(db: Database, email: typeof emailOutbox.$inferSelect): Promise<string | null> {
  if (email.organizationId === null) return "the recipient is not a member of an organization";
  const [member] = await db
    .select({ keepsDigest: sql<boolean>`coalesce(${members.weeklyDigest}, ${members.role} = 'admin')` })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.organizationId, email.organizationId), eq(users.email, email.toAddress.toLowerCase())))
    .limit(1);
  if (!member) return "the recipient is no longer a member of the organization";
  if (email.kind === "digest" && !member.keepsDigest) return "the recipient turned the weekly digest off";
  return null;
}

/**
 * A delivery that found no claimable e-mail: gone (sent, held, failed, suppressed, unknown), or
 * claimed by an attempt under way; then the message comes back once that claim would lapse, in
 * case the attempt dies without a word.
 */
async function claimedElsewhere(deps: EmailDeps, emailId: string, now: Date): Promise<EmailOutcome> {
  const [row] = await deps.db
    .select({ status: emailOutbox.status, lastAttemptAt: emailOutbox.lastAttemptAt, lastError: emailOutbox.lastError })
    .from(emailOutbox)
    .where(eq(emailOutbox.id, emailId))
    .limit(1);
  if (row?.status !== "pending" || !row.lastAttemptAt || row.lastError !== null) return "gone";
  const lapsesInSeconds = Math.max(1, Math.ceil((row.lastAttemptAt.getTime() + SEND_LEASE_SECONDS * 1000 - now.getTime()) / 1000));
  try {
    await deps.queue.send({ emailId }, { delaySeconds: lapsesInSeconds });
  } catch (queueError) {
    deps.logger.error("could not queue an e-mail's check", { emailId, error: describeError(queueError) });
  }
  return "claimed";
}

async function setStatus(db: Database, id: string, values: Partial<typeof emailOutbox.$inferInsert>): Promise<void> {
  await db
    .update(emailOutbox)
    .set(values)
    .where(and(eq(emailOutbox.id, id), eq(emailOutbox.status, "pending")));
}

export type OutboxEmail = {
  id: string;
  organizationId: string | null;
  kind: EmailKind;
  to: string;
  subject: string;
  text: string;
  status: EmailStatus;
  attempts: number;
  lastError: string | null;
  createdAt: Date;
  sentAt: Date | null;
};

/** The outbox for the operator, newest first (body opened): at most `limit` rows, optionally of one status. */
export async function listEmails(
  deps: { db: Database; secrets: SecretKeyring },
  filter: { status?: EmailStatus; limit: number },
): Promise<OutboxEmail[]> {
  const rows = await deps.db
    .select()
    .from(emailOutbox)
    .where(filter.status ? eq(emailOutbox.status, filter.status) : sql`true`)
    .orderBy(desc(emailOutbox.createdAt), desc(emailOutbox.id))
    .limit(filter.limit);
  return Promise.all(rows.map((row) => present(deps.secrets, row)));
}

export async function findEmail(deps: { db: Database; secrets: SecretKeyring }, id: string): Promise<OutboxEmail | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
  const [row] = await deps.db.select().from(emailOutbox).where(eq(emailOutbox.id, id)).limit(1);
  return row ? present(deps.secrets, row) : null;
}

async function present(secrets: SecretKeyring, row: typeof emailOutbox.$inferSelect): Promise<OutboxEmail> {
  return {
    id: row.id,
    organizationId: row.organizationId,
    kind: row.kind,
    to: row.toAddress,
    subject: row.subject,
    text: await secrets
      .decrypt(row.bodyEncrypted, bodyContext(row.id))
      .catch(() => "(the body is sealed under a key that is not configured)"),
    status: row.status,
    attempts: row.attempts,
    lastError: row.lastError,
    createdAt: row.createdAt,
    sentAt: row.sentAt,
  };
}
