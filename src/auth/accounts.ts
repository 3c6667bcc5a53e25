/**
 * Accounts proven by e-mail (docs/accounts.md): a sign-up becomes an account only when its e-mail
 * is confirmed, and a forgotten password is replaced through a link sent to the account's e-mail.
 *
 * - Links are single-use and expire (a sign-up's after 24 hours, a reset's after one hour); only
 *   their SHA-256 is stored (`account_tokens`), and using one deletes it in the statement that reads it.
 * - A sign-up stores what the account will be (name, organization name, the password's hash) and
 *   creates nothing else: no user exists before the e-mail is confirmed, so nobody can squat an
 *   address. Confirming creates the user, the organization and the admin membership and signs in,
 *   in one transaction.
 * - The answer never tells whether an e-mail has an account: a sign-up for a registered e-mail and
 *   a reset for an unregistered one write the same kind of link and the same page; the e-mail
 *   itself (to the address's owner) says what happened. Without a mail transport the page shows
 *   the link instead (see the pages), and only then does opening it tell.
 * - At most ACCOUNT_EMAILS_PER_HOUR account e-mails go to one address an hour; past that, the page
 *   answers the same and nothing is written (nobody can use the service to flood an inbox).
 */
import { and, count, eq, gt, inArray, lte } from "drizzle-orm";
import { accountTokens, accounts, emailOutbox, members, sessions, users } from "../db/schema";
import { type Transaction, transactionWithRetry } from "../db/transaction-retry";
import { base64UrlEncode, sha256Hex } from "../lib/crypto";
import type { ServiceDeps } from "../services/shared/context";
import { writeEmail } from "../services/shared/email-outbox";
import { createOrganization } from "../services/tenancy/organizations";
import { liftSignInLock } from "../services/tenancy/sign-in-throttle";
import { accountExistsEmail, noAccountResetEmail, passwordResetEmail, signUpConfirmationEmail } from "./account-emails";
import { type PeopleDeps, createCredentialUser, hashPassword, signInVerifiedEmail } from "./people";

const SIGN_UP_LINK_MS = 24 * 3_600_000;
const RESET_LINK_MS = 3_600_000;
const ACCOUNT_EMAILS_PER_HOUR = 5;
const ACCOUNT_EMAIL_KINDS = ["email_verification", "password_reset", "account_exists"] as const;

export type AccountDeps = Omit<PeopleDeps, "db"> & ServiceDeps;
/** What a request for a link answers: the link (shown on the page only without a mail transport) and the e-mail to queue, if one was written. */
export type LinkRequest = { link: string; emailId: string | null };

const tokenHash = (token: string) => sha256Hex(token);
const newToken = () => base64UrlEncode(crypto.getRandomValues(new Uint8Array(32)));
const normalEmail = (email: string) => email.trim().toLowerCase();
const pageUrl = (webAppUrl: string, path: string) => `${webAppUrl.replace(/\/+$/, "")}${path}`;

/** Whether one more account e-mail may go to this address within the hour. */
async function mayEmail(tx: Transaction, email: string, now: Date): Promise<boolean> {
  const [row] = await tx
    .select({ sent: count() })
    .from(emailOutbox)
    .where(
      and(
        eq(emailOutbox.toAddress, email),
        inArray(emailOutbox.kind, [...ACCOUNT_EMAIL_KINDS]),
        gt(emailOutbox.createdAt, new Date(now.getTime() - 3_600_000)),
      ),
    );
  return (row?.sent ?? 0) < ACCOUNT_EMAILS_PER_HOUR;
}

async function storeToken(tx: Transaction, values: Omit<typeof accountTokens.$inferInsert, "tokenHash">): Promise<string> {
  // Links nobody used are worth nothing after their expiry: the next one written sweeps them.
  await tx.delete(accountTokens).where(lte(accountTokens.expiresAt, values.createdAt));
  const token = newToken();
  await tx.insert(accountTokens).values({ ...values, tokenHash: tokenHash(token) });
  return token;
}

/**
 * A sign-up: stores it behind a confirmation link and e-mails the link (or, when the e-mail already
 * has an account, tells its owner instead). The caller has checked the fields and the SIGN_UP mode.
 */
export async function requestSignUp(
  deps: AccountDeps,
  input: { name: string; email: string; password: string; organizationName: string },
): Promise<LinkRequest> {
  const email = normalEmail(input.email);
  // Hashed whether or not the e-mail has an account: both answers take the same time.
  const passwordHash = await hashPassword(deps, input.password);
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + SIGN_UP_LINK_MS);
  return transactionWithRetry(deps.db, async (tx) => {
    const signUp = { name: input.name, organizationName: input.organizationName, passwordHash };
    const token = await storeToken(tx, { purpose: "sign_up", email, signUp, createdAt: now, expiresAt });
    const link = pageUrl(deps.webAppUrl, `/verify-email/${token}`);
    if (!(await mayEmail(tx, email, now))) return { link, emailId: null };
    const [existing] = await tx.select({ id: users.id }).from(users).where(eq(users.email, email)).limit(1);
    const message = existing
      ? accountExistsEmail({ signInLink: pageUrl(deps.webAppUrl, "/sign-in"), resetLink: pageUrl(deps.webAppUrl, "/reset-password") })
      : signUpConfirmationEmail({ organizationName: input.organizationName, link, expiresAt });
    const kind = existing ? "account_exists" : "email_verification";
    const emailId = await writeEmail(
      { db: tx, clock: deps.clock, secrets: deps.secrets },
      { organizationId: null, kind, to: email, ...message },
    );
    return { link, emailId };
  });
}

/** A sign-up's link that can still be used: its e-mail and organization name (the confirmation page), or null. */
export async function findPendingSignUp(
  deps: Pick<ServiceDeps, "db" | "clock">,
  token: string,
): Promise<{ email: string; organizationName: string } | null> {
  const [row] = await deps.db
    .select({ email: accountTokens.email, signUp: accountTokens.signUp })
    .from(accountTokens)
    .where(
      and(
        eq(accountTokens.tokenHash, tokenHash(token)),
        eq(accountTokens.purpose, "sign_up"),
        gt(accountTokens.expiresAt, deps.clock.now()),
      ),
    )
    .limit(1);
  return row?.signUp ? { email: row.email, organizationName: row.signUp.organizationName } : null;
}

/** Takes a link for good: its row if it was valid for `purpose` (it is deleted either way it matched). */
async function takeToken(tx: Transaction, token: string, purpose: "sign_up" | "password_reset", now: Date) {
  const [row] = await tx
    .delete(accountTokens)
    .where(and(eq(accountTokens.tokenHash, tokenHash(token)), eq(accountTokens.purpose, purpose)))
    .returning();
  return row && row.expiresAt.getTime() > now.getTime() ? row : null;
}

export type SignUpCompletion =
  | { outcome: "created"; cookies: string[]; organizationId: string; userId: string }
  | { outcome: "account_exists" }
  | { outcome: "invalid" };

/**
 * Confirms a sign-up's e-mail: the user (verified), the organization with its API key, the admin
 * membership and a session whose active organization is the new one, in one transaction. A link
 * used, expired or unknown is `invalid`; an e-mail that has an account by now is `account_exists`.
 */
export async function completeSignUp(deps: AccountDeps, token: string, requestHeaders: Headers): Promise<SignUpCompletion> {
  return transactionWithRetry(deps.db, async (tx) => {
    const row = await takeToken(tx, token, "sign_up", deps.clock.now());
    if (!row?.signUp) return { outcome: "invalid" } as const;
    const [existing] = await tx.select({ id: users.id }).from(users).where(eq(users.email, row.email)).limit(1);
    if (existing) return { outcome: "account_exists" } as const;
    const userId = await createCredentialUser(tx, deps.clock.now(), {
      name: row.signUp.name,
      email: row.email,
      passwordHash: row.signUp.passwordHash,
    });
    const { organization } = await createOrganization({ ...deps, db: tx }, { name: row.signUp.organizationName });
    await tx.insert(members).values({ organizationId: organization.id, userId, role: "admin", createdAt: deps.clock.now() });
    const cookies = await signInVerifiedEmail({ ...deps, db: tx }, { email: row.email, userId }, requestHeaders);
    await tx.update(sessions).set({ activeOrganizationId: organization.id }).where(eq(sessions.userId, userId));
    return { outcome: "created", cookies, organizationId: organization.id, userId } as const;
  });
}

/**
 * A password reset: a link to choose a new password, e-mailed to the address. An e-mail with no
 * account gets a link too (it leads to a page that says so) and a notice instead of the link, so
 * the answer is the same for both.
 */
export async function requestPasswordReset(deps: AccountDeps, input: { email: string; signUpOpen: boolean }): Promise<LinkRequest> {
  const email = normalEmail(input.email);
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + RESET_LINK_MS);
  return transactionWithRetry(deps.db, async (tx) => {
    const [user] = await tx.select({ id: users.id }).from(users).where(eq(users.email, email)).limit(1);
    const token = await storeToken(tx, { purpose: "password_reset", email, userId: user?.id ?? null, createdAt: now, expiresAt });
    const link = pageUrl(deps.webAppUrl, `/reset-password/${token}`);
    if (!(await mayEmail(tx, email, now))) return { link, emailId: null };
    const message = user
      ? passwordResetEmail({ link, expiresAt })
      : noAccountResetEmail({ signUpLink: input.signUpOpen ? pageUrl(deps.webAppUrl, "/sign-up") : null });
    const emailId = await writeEmail(
      { db: tx, clock: deps.clock, secrets: deps.secrets },
      { organizationId: null, kind: "password_reset", to: email, ...message },
    );
    return { link, emailId };
  });
}

/** A reset link that can still be used: its e-mail and whether an account uses it, or null. */
export async function findPasswordReset(
  deps: Pick<ServiceDeps, "db" | "clock">,
  token: string,
): Promise<{ email: string; hasAccount: boolean } | null> {
  const [row] = await deps.db
    .select({ email: accountTokens.email, userId: accountTokens.userId })
    .from(accountTokens)
    .where(
      and(
        eq(accountTokens.tokenHash, tokenHash(token)),
        eq(accountTokens.purpose, "password_reset"),
        gt(accountTokens.expiresAt, deps.clock.now()),
      ),
    )
    .limit(1);
  return row ? { email: row.email, hasAccount: row.userId !== null } : null;
}

export type ResetOutcome = { outcome: "changed"; email: string } | { outcome: "no_account" } | { outcome: "invalid" };

/**
 * Sets a new password through a reset link: the link is used up, every session of the account
 * ends, its other reset links go, the e-mail counts as verified (the link arrived there), and the
 * e-mail's sign-in lock is lifted (the reset proves the owner: src/services/tenancy/sign-in-throttle.ts).
 */
export async function resetPassword(deps: AccountDeps, token: string, newPassword: string): Promise<ResetOutcome> {
  const passwordHash = await hashPassword(deps, newPassword);
  const now = deps.clock.now();
  const outcome = await transactionWithRetry(deps.db, async (tx): Promise<ResetOutcome> => {
    const row = await takeToken(tx, token, "password_reset", now);
    if (!row) return { outcome: "invalid" };
    if (!row.userId) return { outcome: "no_account" };
    const updated = await tx
      .update(accounts)
      .set({ password: passwordHash, updatedAt: now })
      .where(and(eq(accounts.userId, row.userId), eq(accounts.providerId, "credential")))
      .returning({ id: accounts.id });
    if (updated.length === 0)
      await tx.insert(accounts).values({
        userId: row.userId,
        providerId: "credential",
        accountId: row.userId,
        password: passwordHash,
        createdAt: now,
        updatedAt: now,
      });
    await tx.update(users).set({ emailVerified: true, updatedAt: now }).where(eq(users.id, row.userId));
    await tx.delete(sessions).where(eq(sessions.userId, row.userId));
    await tx.delete(accountTokens).where(and(eq(accountTokens.userId, row.userId), eq(accountTokens.purpose, "password_reset")));
    return { outcome: "changed", email: row.email };
  });
  if (outcome.outcome === "changed") await liftSignInLock(deps, outcome.email);
  return outcome;
}
