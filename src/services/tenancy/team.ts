/**
 * The team of an organization (docs/e-mail.md, the team page): its members and roles, invitations
 * by e-mail link, removing a member. Only admins invite, revoke and remove: every function that
 * changes the team takes the acting person and checks, inside its transaction, that they are an
 * admin of the organization (a forged request from a member is refused here, not only hidden).
 *
 * An invitation's link carries a random token (256 bits); only its SHA-256 is stored. It lasts 7
 * days, opens once (accepted, it is spent), and an admin may revoke it. Inviting an address that
 * already has a pending invitation replaces it (the older link stops working). An organization
 * sends at most INVITATION_RATE.limit invitations an hour; the e-mail's wording is in
 * ./invitation-email.ts.
 *
 * The operator invites too, through the admin API (`inviteAsOperator`): the only way into an
 * organization the admin API created, which has no people. Such an invitation has no inviting
 * user (`inviter_id` null, shown as "the operator") and follows the same rules: the hourly bound,
 * one live link per address, the same e-mail through the outbox.
 */
import { and, asc, desc, eq, gt } from "drizzle-orm";
import { type MemberRole, invitations, members, organizations, sessions, users } from "../../db/schema";
import { type Transaction, transactionWithRetry } from "../../db/transaction-retry";
import type { Database } from "../../db/types";
import { base64UrlEncode, sha256Hex } from "../../lib/crypto";
import { ApiError, notFound, rateLimited } from "../../lib/errors";
import { secondsUntil } from "../../lib/rate-limit";
import { isUuid } from "../../lib/ids";
import type { SecretKeyring } from "../../lib/secret-box";
import type { ServiceDeps } from "../shared/context";
import { writeEmail } from "../shared/email-outbox";
import { invitationEmail } from "./invitation-email";

const INVITATION_LIFETIME_MS = 7 * 86_400_000;

export type TeamDeps = ServiceDeps & { secrets: SecretKeyring };
/** Who acts: the signed-in person, in the organization of the page. */
export type Actor = { userId: string; organizationId: string };

const onlyAdmins = () => new ApiError("forbidden", "Only an admin of the organization can do this.");

async function requireAdmin(db: Database | Transaction, actor: Actor): Promise<void> {
  const [row] = await db
    .select({ role: members.role })
    .from(members)
    .where(and(eq(members.organizationId, actor.organizationId), eq(members.userId, actor.userId)))
    .limit(1);
  if (row?.role !== "admin") throw onlyAdmins();
}

export type TeamMember = { memberId: string; userId: string; name: string; email: string; role: MemberRole; joinedAt: Date };

export async function listMembers(deps: Pick<ServiceDeps, "db">, organizationId: string): Promise<TeamMember[]> {
  return deps.db
    .select({
      memberId: members.id,
      userId: users.id,
      name: users.name,
      email: users.email,
      role: members.role,
      joinedAt: members.createdAt,
    })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(eq(members.organizationId, organizationId))
    .orderBy(asc(members.createdAt), asc(members.id));
}

export type PendingInvitation = {
  id: string;
  email: string;
  role: MemberRole;
  expiresAt: Date;
  createdAt: Date;
  /** The inviting admin's name; null: the operator, through the admin API. */
  invitedBy: string | null;
};

/** Invitations still usable (pending, not expired), newest first. */
export async function listPendingInvitations(
  deps: Pick<ServiceDeps, "db" | "clock">,
  organizationId: string,
): Promise<PendingInvitation[]> {
  const rows = await deps.db
    .select({
      id: invitations.id,
      email: invitations.email,
      role: invitations.role,
      expiresAt: invitations.expiresAt,
      createdAt: invitations.createdAt,
      invitedBy: users.name,
    })
    .from(invitations)
    .leftJoin(users, eq(users.id, invitations.inviterId))
    .where(
      and(eq(invitations.organizationId, organizationId), eq(invitations.status, "pending"), gt(invitations.expiresAt, deps.clock.now())),
    )
    .orderBy(desc(invitations.createdAt), desc(invitations.id));
  return rows.map((row) => ({ ...row, role: row.role ?? "member" }));
}

const tokenHash = (token: string) => sha256Hex(`invitation:${token}`);

/**
 * Invitations an organization may send within an hour. Each one e-mails any address with text
 * that quotes the organization's name: without a bound an organization is a mail relay.
 */
export const INVITATION_RATE = { limit: 20, windowMs: 3_600_000 };

/**
 * Refuses an invitation once the organization made INVITATION_RATE.limit within the window
 * (replaced and revoked ones count: each was an e-mail). Counted in the database under the
 * organization's row lock, so the bound holds across processes and between concurrent requests.
 */
async function checkInvitationRate(tx: Transaction, organizationId: string, now: Date): Promise<void> {
  await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).for("update");
  const recent = await tx
    .select({ createdAt: invitations.createdAt })
    .from(invitations)
    .where(
      and(eq(invitations.organizationId, organizationId), gt(invitations.createdAt, new Date(now.getTime() - INVITATION_RATE.windowMs))),
    )
    .orderBy(desc(invitations.createdAt))
    .limit(INVITATION_RATE.limit);
  if (recent.length < INVITATION_RATE.limit) return;
  // A slot frees when the oldest of the newest `limit` leaves the window.
  const seconds = secondsUntil(recent[recent.length - 1]!.createdAt.getTime() + INVITATION_RATE.windowMs, now.getTime());
  const minutes = Math.ceil(seconds / 60);
  throw rateLimited(
    `This organization has sent ${INVITATION_RATE.limit} invitations within the last hour, the most allowed. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`,
    seconds,
  );
}

/** An invitation just made: what the admin API answers, the link (a secret) and the outbox e-mail that carries it. */
export type CreatedInvitation = {
  invitation: { id: string; email: string; role: MemberRole; status: "pending"; expiresAt: Date; createdAt: Date };
  link: string;
  emailId: string;
};

/**
 * Writes the invitation of `email` with `role` to `organizationId`, and its e-mail, in the caller's
 * transaction: refused for a person who is already a member and past the organization's
 * INVITATION_RATE; a pending invitation of the same address is canceled first. `inviterId` null:
 * the operator.
 */
async function writeInvitation(
  tx: Transaction,
  deps: TeamDeps,
  organizationId: string,
  inviterId: string | null,
  input: { email: string; role: MemberRole },
): Promise<CreatedInvitation> {
  const email = input.email.trim().toLowerCase();
  const token = base64UrlEncode(crypto.getRandomValues(new Uint8Array(32)));
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + INVITATION_LIFETIME_MS);
  const [already] = await tx
    .select({ id: members.id })
    .from(members)
    .innerJoin(users, eq(users.id, members.userId))
    .where(and(eq(members.organizationId, organizationId), eq(users.email, email)))
    .limit(1);
  if (already) throw new ApiError("invalid_request", `${email} is already a member of the organization.`);
  await checkInvitationRate(tx, organizationId, now);
  // A new invitation replaces a pending one for the same address: one live link per address.
  await tx
    .update(invitations)
    .set({ status: "canceled" })
    .where(and(eq(invitations.organizationId, organizationId), eq(invitations.email, email), eq(invitations.status, "pending")));
  const [invitation] = await tx
    .insert(invitations)
    .values({
      organizationId,
      email,
      role: input.role,
      status: "pending",
      expiresAt,
      inviterId,
      tokenHash: tokenHash(token),
      createdAt: now,
    })
    .returning({ id: invitations.id });
  const [organization] = await tx.select({ name: organizations.name }).from(organizations).where(eq(organizations.id, organizationId));
  const [inviter] = inviterId ? await tx.select({ name: users.name }).from(users).where(eq(users.id, inviterId)) : [];
  const link = `${deps.webAppUrl.replace(/\/+$/, "")}/invitations/${token}`;
  const message = invitationEmail({
    organizationName: organization!.name,
    inviterName: inviter?.name ?? null,
    role: input.role,
    link,
    expiresAt,
  });
  const emailId = await writeEmail(
    { db: tx, clock: deps.clock, secrets: deps.secrets },
    { organizationId, kind: "invitation", to: email, ...message },
  );
  return {
    invitation: { id: invitation!.id, email, role: input.role, status: "pending", expiresAt, createdAt: now },
    link,
    emailId,
  };
}

/**
 * Invites `email` with `role` on behalf of an admin of the organization (the team page): the
 * invitation and its e-mail (the link with the token) are written in one transaction; the caller
 * queues `emailId` once it has committed. The link is returned too: without a mail transport the
 * team page shows it, once, to the admin who invited (nothing else would deliver it).
 */
export async function inviteMember(
  deps: TeamDeps,
  actor: Actor,
  input: { email: string; role: MemberRole },
): Promise<{ invitationId: string; emailId: string; link: string }> {
  return transactionWithRetry(deps.db, async (tx) => {
    await requireAdmin(tx, actor);
    const { invitation, emailId, link } = await writeInvitation(tx, deps, actor.organizationId, actor.userId, input);
    return { invitationId: invitation.id, emailId, link };
  });
}

/** The organization's row, locked (a malformed id is as unknown as a missing one: 404). */
async function lockOrganization(tx: Transaction, organizationId: string): Promise<void> {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const [row] = await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).for("update");
  if (!row) throw notFound("Organization");
}

/**
 * Invites `email` with `role` as the operator (the admin API): no inviting user, otherwise as
 * `inviteMember` (same bound, same replacement, same e-mail). Returns the link too: the operator
 * hands it over when no mail transport is configured. The caller queues `emailId` after the commit.
 */
export async function inviteAsOperator(
  deps: TeamDeps,
  organizationId: string,
  input: { email: string; role: MemberRole },
): Promise<CreatedInvitation> {
  return transactionWithRetry(deps.db, async (tx) => {
    await lockOrganization(tx, organizationId);
    return writeInvitation(tx, deps, organizationId, null, input);
  });
}

/** The organization's pending invitations for the operator (the admin API), newest first; 404 for an unknown organization. */
export async function listInvitationsAsOperator(
  deps: Pick<ServiceDeps, "db" | "clock">,
  organizationId: string,
): Promise<PendingInvitation[]> {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const [row] = await deps.db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId));
  if (!row) throw notFound("Organization");
  return listPendingInvitations(deps, organizationId);
}

/** Revokes a pending invitation of the actor's organization: its link stops working. */
export async function revokeInvitation(deps: Pick<ServiceDeps, "db">, actor: Actor, invitationId: string): Promise<void> {
  await transactionWithRetry(deps.db, async (tx) => {
    await requireAdmin(tx, actor);
    if (!isUuid(invitationId)) throw notFound("Invitation");
    const revoked = await tx
      .update(invitations)
      .set({ status: "canceled" })
      .where(and(eq(invitations.id, invitationId), eq(invitations.organizationId, actor.organizationId), eq(invitations.status, "pending")))
      .returning({ id: invitations.id });
    if (revoked.length === 0) throw notFound("Invitation");
  });
}

/** Removes a member (an admin may remove themself), never the organization's last admin. Their sessions stay; their pages of the organization become 404s. */
export async function removeMember(deps: Pick<ServiceDeps, "db">, actor: Actor, memberId: string): Promise<void> {
  await transactionWithRetry(deps.db, async (tx) => {
    await requireAdmin(tx, actor);
    if (!isUuid(memberId)) throw notFound("Member");
    // The organization's admins, locked: two admins removing each other at once cannot leave none.
    const admins = await tx
      .select({ id: members.id })
      .from(members)
      .where(and(eq(members.organizationId, actor.organizationId), eq(members.role, "admin")))
      .for("update");
    const [member] = await tx
      .select({ id: members.id, role: members.role })
      .from(members)
      .where(and(eq(members.id, memberId), eq(members.organizationId, actor.organizationId)))
      .limit(1);
    if (!member) throw notFound("Member");
    if (member.role === "admin" && admins.length <= 1)
      throw new ApiError("invalid_request", "The organization's last admin cannot be removed.");
    await tx.delete(members).where(eq(members.id, member.id));
  });
}

export type OpenInvitation = {
  id: string;
  organizationId: string;
  organizationName: string;
  email: string;
  role: MemberRole;
  /** The inviting admin's name; null: the operator, through the admin API. */
  invitedBy: string | null;
  expiresAt: Date;
};

/** The invitation of a link's token while it can be accepted (pending, not expired), else null. */
export async function findOpenInvitation(deps: Pick<ServiceDeps, "db" | "clock">, token: string): Promise<OpenInvitation | null> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
  const [row] = await deps.db
    .select({
      id: invitations.id,
      organizationId: invitations.organizationId,
      organizationName: organizations.name,
      email: invitations.email,
      role: invitations.role,
      invitedBy: users.name,
      expiresAt: invitations.expiresAt,
    })
    .from(invitations)
    .innerJoin(organizations, eq(organizations.id, invitations.organizationId))
    .leftJoin(users, eq(users.id, invitations.inviterId))
    .where(and(eq(invitations.tokenHash, tokenHash(token)), eq(invitations.status, "pending"), gt(invitations.expiresAt, deps.clock.now())))
    .limit(1);
  return row ? { ...row, role: row.role ?? "member" } : null;
}

/**
 * Accepts the invitation of `token` for the user (whose e-mail must be the invited address):
 * the membership with the invitation's role, the invitation spent, the user's sessions opened on
 * the organization, and the user's e-mail marked verified (the link was sent to that address, or
 * handed over by the operator who chose it); at most once (the row is locked). Null when the link is not (or no longer)
 * valid for this user. In the caller's transaction (sign-up through the link).
 */
export async function acceptInvitationIn(
  tx: Transaction,
  clock: ServiceDeps["clock"],
  token: string,
  user: { id: string; email: string },
): Promise<{ organizationId: string } | null> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
  const now = clock.now();
  const [invitation] = await tx
    .select({ id: invitations.id, organizationId: invitations.organizationId, email: invitations.email, role: invitations.role })
    .from(invitations)
    .where(and(eq(invitations.tokenHash, tokenHash(token)), eq(invitations.status, "pending"), gt(invitations.expiresAt, now)))
    .for("update");
  if (!invitation || invitation.email !== user.email.trim().toLowerCase()) return null;
  await tx.update(invitations).set({ status: "accepted" }).where(eq(invitations.id, invitation.id));
  await tx
    .insert(members)
    .values({ organizationId: invitation.organizationId, userId: user.id, role: invitation.role ?? "member", createdAt: now })
    .onConflictDoNothing({ target: [members.organizationId, members.userId] });
  await tx.update(sessions).set({ activeOrganizationId: invitation.organizationId }).where(eq(sessions.userId, user.id));
  await tx.update(users).set({ emailVerified: true, updatedAt: now }).where(eq(users.id, user.id));
  return { organizationId: invitation.organizationId };
}

/** `acceptInvitationIn`, in its own transaction (a signed-in person accepting). */
export function acceptInvitation(
  deps: Pick<ServiceDeps, "db" | "clock">,
  token: string,
  user: { id: string; email: string },
): Promise<{ organizationId: string } | null> {
  return transactionWithRetry(deps.db, (tx) => acceptInvitationIn(tx, deps.clock, token, user));
}
