/**
 * People and sessions (docs/web-app.md): better-auth with its Drizzle adapter and organization
 * plugin, built per request from the request's dependencies (its database or transaction, the
 * secret derived from SECRETS_KEY, the web app's public origin): no module-level client, nothing
 * kept between requests, so the same code runs in a Node process and in a Worker isolate.
 *
 * - better-auth's `organization` model is our `organizations` table: an organization has one id
 *   everywhere (API key, projects, members). Users, sessions, accounts, verifications, members and
 *   invitations are tables of src/db/schema.ts; ids are UUIDs made by Postgres.
 * - better-auth's HTTP endpoints are not mounted: the pages call them in process through
 *   `auth.handler` with a request built here (JSON body, the browser's Cookie, Origin, Referer and
 *   Sec-Fetch-* headers), so better-auth's own origin checks run against `trustedOrigins` = the
 *   web app's origin, and nothing else (its organization creation, for one) is reachable.
 * - `better-auth/minimal`: the initializer without Kysely, which the Drizzle adapter does not need
 *   (a smaller Worker bundle).
 * - Telemetry off, rate limiting off (the e-mail throttle is ours: src/services/tenancy/sign-in-throttle.ts,
 *   kept in Postgres for both runtimes), no IP tracking (the addresses it would read are client-set).
 */
import { drizzleAdapter } from "@better-auth/drizzle-adapter";
import { createEmailVerificationToken } from "better-auth/api";
import { betterAuth } from "better-auth/minimal";
import { organization } from "better-auth/plugins/organization";
import { eq } from "drizzle-orm";
import { accounts, invitations, members, organizations, sessions, users, verifications } from "../db/schema";
import { type Transaction, transactionWithRetry } from "../db/transaction-retry";
import type { Database } from "../db/types";
import type { SecretKeyring } from "../lib/secret-box";
import type { ServiceDeps } from "../services/shared/context";
import { acceptInvitationIn } from "../services/tenancy/team";

/** Where better-auth believes it is mounted; requests to it are built in process only (never routed). */
const AUTH_BASE_PATH = "/api/auth";
/** What `deriveSecret` is asked for: better-auth signs its session cookies with it. */
export const BETTER_AUTH_SECRET_PURPOSE = "better-auth";
export const MIN_PASSWORD_LENGTH = 8;
/** The life of the token signInVerifiedEmail mints and spends at once. */
const VERIFY_TOKEN_SECONDS = 60;
export const MAX_PASSWORD_LENGTH = 128;

export type PeopleDeps = {
  db: Database | Transaction;
  secrets: SecretKeyring;
  /** The web app's public base URL (WEB_APP_URL): its origin is the only trusted one (with its loopback alias: `webOrigins`). */
  webAppUrl: string;
  webAppLoopbackAliases?: boolean;
};

/** The web app's origin (`https://app.example.com`), from configuration, never from a request. */
export const webOrigin = (webAppUrl: string) => new URL(webAppUrl).origin;

const LOOPBACK_NAMES = ["localhost", "127.0.0.1"];

/**
 * The origins whose form posts are the pages' own: the web app's; with `loopbackAliases` (WEB_APP_URL
 * unset) and the pages on a loopback name, both loopback names at the same scheme and port.
 * From configuration only, never from a request's Host.
 */
export function webOrigins(webAppUrl: string, loopbackAliases = false): string[] {
  const url = new URL(webAppUrl);
  if (!loopbackAliases || !LOOPBACK_NAMES.includes(url.hostname)) return [url.origin];
  return LOOPBACK_NAMES.map((name) => {
    const alias = new URL(url.origin);
    alias.hostname = name;
    return alias.origin;
  }).sort((a, b) => (a === url.origin ? -1 : b === url.origin ? 1 : 0));
}

/** The better-auth instance of one request (or of one transaction of it). */
export async function createPeopleAuth(deps: PeopleDeps) {
  const origin = webOrigin(deps.webAppUrl);
  return betterAuth({
    appName: "CI test analytics",
    baseURL: origin,
    basePath: AUTH_BASE_PATH,
    secret: await deps.secrets.deriveSecret(BETTER_AUTH_SECRET_PURPOSE),
    trustedOrigins: webOrigins(deps.webAppUrl, deps.webAppLoopbackAliases),
    telemetry: { enabled: false },
    rateLimit: { enabled: false },
    database: drizzleAdapter(deps.db, {
      provider: "pg",
      schema: { users, sessions, accounts, verifications, organizations, members, invitations },
    }),
    user: { modelName: "users" },
    session: { modelName: "sessions" },
    account: { modelName: "accounts" },
    verification: { modelName: "verifications" },
    emailAndPassword: {
      enabled: true,
      // Accounts are made verified by src/auth/accounts.ts and invitations; one that is not can never sign in.
      requireEmailVerification: true,
      autoSignIn: false,
      minPasswordLength: MIN_PASSWORD_LENGTH,
      maxPasswordLength: MAX_PASSWORD_LENGTH,
    },
    // Only signInVerifiedEmail reaches /verify-email, in process, with a token minted here: it is how a confirmed account gets its session.
    emailVerification: { autoSignInAfterVerification: true, expiresIn: VERIFY_TOKEN_SECONDS },
    advanced: {
      database: { generateId: "uuid" },
      // Secure (and `__Secure-` names) exactly when the pages are served over https.
      useSecureCookies: origin.startsWith("https:"),
      defaultCookieAttributes: { httpOnly: true, sameSite: "lax", path: "/" },
      ipAddress: { disableIpTracking: true },
      // Explicit, because better-auth turns its origin checks off by itself when NODE_ENV is "test".
      disableOriginCheck: false,
      disableCSRFCheck: false,
    },
    logger: { level: "error" },
    plugins: [
      organization({
        // The creator is an admin, our highest role (there is no separate owner: docs/web-app.md).
        creatorRole: "admin",
        // Organizations are created by sign-up through our service (with their API key), never by the plugin.
        allowUserToCreateOrganization: false,
        schema: {
          organization: { modelName: "organizations" },
          member: { modelName: "members" },
          invitation: { modelName: "invitations" },
        },
      }),
    ],
  });
}

type PeopleAuth = Awaited<ReturnType<typeof createPeopleAuth>>;

/** A password's hash as better-auth makes and checks it (its scrypt, from the request's instance). */
export async function hashPassword(deps: PeopleDeps, password: string): Promise<string> {
  const context = await (await createPeopleAuth(deps)).$context;
  return context.password.hash(password);
}

/** Request headers better-auth needs from the browser's request: its cookies and what its origin checks read. */
const FORWARDED_HEADERS = ["cookie", "origin", "referer", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest", "user-agent"];

/** Calls one of better-auth's endpoints in process, as the browser's request would have. */
/** The browser request's headers better-auth reads (FORWARDED_HEADERS), its cookies unless `withCookies` is false. */
function forwardedHeaders(from: Headers, withCookies = true): Headers {
  const headers = new Headers();
  for (const name of FORWARDED_HEADERS) {
    const value = from.get(name);
    if (value !== null && (withCookies || name !== "cookie")) headers.set(name, value);
  }
  return headers;
}

async function callAuth(auth: PeopleAuth, webAppUrl: string, path: string, body: unknown, from: Headers): Promise<Response> {
  const headers = forwardedHeaders(from);
  headers.set("content-type", "application/json");
  // A browser that sent no Origin but `Sec-Fetch-Site: same-origin` has been let through by the
  // pages' own check (src/web/security.ts) as coming from the web app; better-auth wants that as an Origin.
  if (!headers.has("origin") && headers.get("sec-fetch-site") === "same-origin") headers.set("origin", webOrigin(webAppUrl));
  return auth.handler(
    new Request(`${webOrigin(webAppUrl)}${AUTH_BASE_PATH}${path}`, { method: "POST", headers, body: JSON.stringify(body ?? {}) }),
  );
}

/** better-auth's error answer: `{code, message}`. */
async function authError(response: Response): Promise<{ code: string; message: string }> {
  const body = (await response.json().catch(() => ({}))) as { code?: string; message?: string };
  return { code: body.code ?? `HTTP_${response.status}`, message: body.message ?? "The request was refused." };
}

/** A sign-up, sign-in or sign-out better-auth refused, with its code (e.g. `INVALID_EMAIL_OR_PASSWORD`). */
export class AuthRefused extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "AuthRefused";
  }
}

/** Signs in with e-mail and password: the new session's Set-Cookie values, or AuthRefused. The throttle is the caller's. */
export async function signIn(
  deps: PeopleDeps,
  input: { email: string; password: string },
  requestHeaders: Headers,
): Promise<{ cookies: string[] }> {
  const auth = await createPeopleAuth(deps);
  const response = await callAuth(
    auth,
    deps.webAppUrl,
    "/sign-in/email",
    { email: input.email, password: input.password, rememberMe: true },
    requestHeaders,
  );
  if (!response.ok) {
    const { code, message } = await authError(response);
    throw new AuthRefused(code, message, response.status);
  }
  return { cookies: response.headers.getSetCookie() };
}

/** Ends the request's session on the server (its row is deleted) and returns the Set-Cookie values that clear it. */
export async function signOut(deps: PeopleDeps, requestHeaders: Headers): Promise<{ cookies: string[] }> {
  const auth = await createPeopleAuth(deps);
  const response = await callAuth(auth, deps.webAppUrl, "/sign-out", {}, requestHeaders);
  if (!response.ok) {
    const { code, message } = await authError(response);
    throw new AuthRefused(code, message, response.status);
  }
  return { cookies: response.headers.getSetCookie() };
}

export type SignedInPerson = {
  userId: string;
  name: string;
  email: string;
  sessionId: string;
  activeOrganizationId: string | null;
};

/**
 * The request's session, or null when signed out (no cookie, a bad signature, an expired or
 * ended session). `cookies` are set when better-auth refreshed the session's expiry.
 */
export async function currentPerson(
  deps: PeopleDeps,
  requestHeaders: Headers,
): Promise<{ person: SignedInPerson; cookies: string[] } | null> {
  if (!requestHeaders.get("cookie")) return null;
  const auth = await createPeopleAuth(deps);
  const { headers, response } = await auth.api.getSession({ headers: requestHeaders, returnHeaders: true });
  if (!response) return null;
  const session = response.session as typeof response.session & { activeOrganizationId?: string | null };
  return {
    person: {
      userId: response.user.id,
      name: response.user.name,
      email: response.user.email,
      sessionId: session.id,
      activeOrganizationId: session.activeOrganizationId ?? null,
    },
    cookies: headers.getSetCookie(),
  };
}

/**
 * Creates a user who signs in with this password (the demo's people, tests): verified, with
 * better-auth's own password hashing, without a session.
 */
export async function createPasswordUser(
  deps: PeopleDeps & { clock?: { now(): Date } },
  input: { name: string; email: string; password: string },
): Promise<{ id: string }> {
  const passwordHash = await hashPassword(deps, input.password);
  const now = deps.clock?.now() ?? new Date();
  const id = await transactionWithRetry(deps.db as Database, (tx) =>
    createCredentialUser(tx, now, { name: input.name, email: input.email.toLowerCase(), passwordHash, emailVerified: true }),
  );
  return { id };
}

/**
 * A user with a password; by default their e-mail is not verified yet (signInVerifiedEmail
 * verifies it and opens the first session, which better-auth does only for an e-mail it verifies).
 */
export async function createCredentialUser(
  tx: Transaction,
  now: Date,
  input: { name: string; email: string; passwordHash: string; emailVerified?: boolean },
): Promise<string> {
  const [user] = await tx
    .insert(users)
    .values({ name: input.name, email: input.email, emailVerified: input.emailVerified ?? false, createdAt: now, updatedAt: now })
    .returning({ id: users.id });
  await tx.insert(accounts).values({
    userId: user!.id,
    providerId: "credential",
    accountId: user!.id,
    password: input.passwordHash,
    createdAt: now,
    updatedAt: now,
  });
  return user!.id;
}

/**
 * Marks a new account's e-mail verified and opens its first session, through better-auth's own
 * verification endpoint, called in process with a token minted here and spent at once (the
 * endpoint is not mounted: nobody else can reach it). Proof of the e-mail is the caller's: a
 * confirmed sign-up link, an invitation that arrived there. Returns the session's Set-Cookie values.
 */
export async function signInVerifiedEmail(
  deps: PeopleDeps,
  user: { email: string; userId: string },
  requestHeaders: Headers,
): Promise<string[]> {
  const auth = await createPeopleAuth(deps);
  const context = await auth.$context;
  const token = await createEmailVerificationToken(context.secret, user.email, undefined, VERIFY_TOKEN_SECONDS, { userId: user.userId });
  // Without the browser's cookies: the session opened is the new account's, whoever was signed in.
  const headers = forwardedHeaders(requestHeaders, false);
  const response = await auth.handler(
    new Request(`${webOrigin(deps.webAppUrl)}${AUTH_BASE_PATH}/verify-email?token=${encodeURIComponent(token)}`, { headers }),
  );
  if (!response.ok) {
    const { code, message } = await authError(response);
    throw new AuthRefused(code, message, response.status);
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length === 0) throw new Error("better-auth verified the e-mail but opened no session");
  return cookies;
}

/**
 * Sign-up through an invitation's link (`/invitations/:token`): the user, their password, the
 * membership the invitation grants and a session, in one transaction. The e-mail is the invited
 * address and the invitation arrived there, so it counts as verified; no organization is
 * created. A link that is no longer valid, or an e-mail that has an account by now, leaves
 * nothing behind (AuthRefused `INVITATION_INVALID`, 404).
 */
export async function signUpThroughInvitation(
  deps: Omit<PeopleDeps, "db"> & ServiceDeps,
  input: { name: string; email: string; password: string; token: string },
  requestHeaders: Headers,
): Promise<{ cookies: string[]; organizationId: string; userId: string }> {
  const passwordHash = await hashPassword(deps, input.password);
  const email = input.email.trim().toLowerCase();
  return transactionWithRetry(deps.db, async (tx) => {
    const [existing] = await tx.select({ id: users.id }).from(users).where(eq(users.email, email)).limit(1);
    if (existing) throw new AuthRefused("USER_ALREADY_EXISTS", "An account with this e-mail already exists: sign in instead.", 400);
    const userId = await createCredentialUser(tx, deps.clock.now(), { name: input.name, email, passwordHash });
    // Verified and signed in first: better-auth opens a session only for an e-mail it verifies now,
    // and accepting the invitation marks the e-mail verified too. A refusal below rolls all of it back.
    const cookies = await signInVerifiedEmail({ ...deps, db: tx }, { email, userId }, requestHeaders);
    const joined = await acceptInvitationIn(tx, deps.clock, input.token, { id: userId, email });
    if (!joined) throw new AuthRefused("INVITATION_INVALID", "This invitation is no longer valid.", 404);
    await tx.update(sessions).set({ activeOrganizationId: joined.organizationId }).where(eq(sessions.userId, userId));
    return { cookies, organizationId: joined.organizationId, userId };
  });
}
