/**
 * `/invitations/:token`: the page an invitation's e-mail links to (docs/e-mail.md). Signed out, the
 * invitee creates their account (name and password; the e-mail is the invited address) or, when
 * the address has one, signs in (throttled like /sign-in); either way they join the organization
 * with the invitation's role and land on `/`. Signed in as the invited address, one button
 * joins. A link that was used, revoked, replaced or has expired is a 404 that says so.
 */
import type { Context, Hono } from "hono";
import { AuthRefused, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, currentPerson, signIn, signUpThroughInvitation } from "../auth/people";
import { findUserByEmail } from "../services/tenancy/memberships";
import { reserveSignInAttempt, signInSucceeded } from "../services/tenancy/sign-in-throttle";
import { type OpenInvitation, acceptInvitation, findOpenInvitation } from "../services/tenancy/team";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { checkName, checkNewPassword, formFields } from "./forms";
import { PlainPage } from "./layout";
import { signInRefusal } from "./sign-in-refusal";
import { peopleDeps, withCookies } from "./session";

const Invalid = ({ paths }: { paths: WebPaths }) => (
  <PlainPage title="Invitation not valid" paths={paths}>
    <h1>This invitation is not valid</h1>
    <p>It was already used, revoked or replaced by a newer one, or it has expired. Ask an admin of the organization to invite you again.</p>
    <p>
      <a href={paths.to("/sign-in")}>Sign in</a>
    </p>
  </PlainPage>
);

/** `closed`: no account for the address, and SIGN_UP=off creates none (docs/accounts.md). */
type Mode = { kind: "sign-up" } | { kind: "sign-in" } | { kind: "join" } | { kind: "other-account"; email: string } | { kind: "closed" };

const InvitationPage = ({
  paths,
  token,
  invitation,
  mode,
  error,
  name,
}: {
  paths: WebPaths;
  token: string;
  invitation: OpenInvitation;
  mode: Mode;
  error?: string;
  name?: string;
}) => (
  <PlainPage title="Invitation" paths={paths}>
    <h1>Join {invitation.organizationName}</h1>
    <p>
      {invitation.invitedBy ?? "The operator of CI test analytics"} invites <strong>{invitation.email}</strong> to join{" "}
      <strong>{invitation.organizationName}</strong> as {invitation.role === "admin" ? "an admin" : "a member"}.
    </p>
    {error ? (
      <p class="notice" role="alert">
        {error}
      </p>
    ) : null}
    {mode.kind === "join" ? (
      <form class="card" method="post" action={paths.to(`/invitations/${token}/accept`)}>
        <button type="submit">Join {invitation.organizationName}</button>
      </form>
    ) : mode.kind === "other-account" ? (
      <p>
        You are signed in as {mode.email}. This invitation is for {invitation.email}: sign out, then open the link again.
      </p>
    ) : mode.kind === "closed" ? (
      <p>This instance does not create new accounts, and no account uses {invitation.email}. Ask its operator.</p>
    ) : mode.kind === "sign-in" ? (
      <form class="card" method="post" action={paths.to(`/invitations/${token}/sign-in`)}>
        <p>An account with this e-mail exists: sign in to join.</p>
        <label>
          E-mail
          <input type="email" name="email" autocomplete="username" value={invitation.email} readonly />
        </label>
        <label>
          Password
          <input type="password" name="password" autocomplete="current-password" required />
        </label>
        <button type="submit">Sign in and join</button>
      </form>
    ) : (
      <form class="card" method="post" action={paths.to(`/invitations/${token}/sign-up`)}>
        <label>
          E-mail
          <input type="email" name="email" autocomplete="username" value={invitation.email} readonly />
        </label>
        <label>
          Your name
          <input type="text" name="name" autocomplete="name" required maxlength={255} value={name ?? ""} />
        </label>
        <label>
          Password
          <input
            type="password"
            name="password"
            autocomplete="new-password"
            required
            minlength={MIN_PASSWORD_LENGTH}
            maxlength={MAX_PASSWORD_LENGTH}
            aria-describedby="password-hint"
          />
          <span id="password-hint" class="muted">
            At least {MIN_PASSWORD_LENGTH} characters.
          </span>
        </label>
        <button type="submit">Create account and join</button>
      </form>
    )}
  </PlainPage>
);

export function registerInvitation(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  const invalid = (c: Context<WebEnv>) => c.html(<Invalid paths={paths} />, 404);

  /** What the page offers: joining, the right account's sign-in or sign-up, or a word about the wrong account. */
  async function modeFor(
    c: Context<WebEnv>,
    invitation: OpenInvitation,
  ): Promise<{ mode: Mode; person: { userId: string; email: string } | null; cookies: string[] }> {
    const found = await currentPerson(peopleDeps(c, config), c.req.raw.headers);
    if (found) {
      const mode: Mode = found.person.email === invitation.email ? { kind: "join" } : { kind: "other-account", email: found.person.email };
      return { mode, person: { userId: found.person.userId, email: found.person.email }, cookies: found.cookies };
    }
    const hasAccount = await findUserByEmail(c.env, invitation.email);
    const mode: Mode = hasAccount ? { kind: "sign-in" } : config.signUp === "off" ? { kind: "closed" } : { kind: "sign-up" };
    return { mode, person: null, cookies: [] };
  }

  web.get("/invitations/:token", async (c) => {
    const token = c.req.param("token");
    const invitation = await findOpenInvitation(c.env, token);
    if (!invitation) return invalid(c);
    const { mode, cookies } = await modeFor(c, invitation);
    return withCookies(await c.html(<InvitationPage paths={paths} token={token} invitation={invitation} mode={mode} />), cookies);
  });

  web.post("/invitations/:token/accept", async (c) => {
    const token = c.req.param("token");
    const invitation = await findOpenInvitation(c.env, token);
    if (!invitation) return invalid(c);
    const { mode, person } = await modeFor(c, invitation);
    if (mode.kind !== "join" || !person)
      return c.html(<InvitationPage paths={paths} token={token} invitation={invitation} mode={mode} />, 403);
    const joined = await acceptInvitation(c.env, token, { id: person.userId, email: person.email });
    if (!joined) return invalid(c);
    return c.redirect(paths.to("/"), 303);
  });

  web.post("/invitations/:token/sign-up", async (c) => {
    const token = c.req.param("token");
    const invitation = await findOpenInvitation(c.env, token);
    if (!invitation) return invalid(c);
    const form = await formFields(c, ["name", "password"]);
    const name = form.name!.trim();
    const page = (status: 400 | 403, error: string) =>
      c.html(
        <InvitationPage paths={paths} token={token} invitation={invitation} mode={{ kind: "sign-up" }} error={error} name={name} />,
        status,
      );
    if (config.signUp === "off") return page(403, "This instance does not create new accounts.");
    const problem = checkName(name, "Your name") ?? checkNewPassword(form.password!);
    if (problem) return page(400, problem);
    try {
      const { cookies } = await signUpThroughInvitation(
        { ...peopleDeps(c, config), clock: c.env.clock },
        { name, email: invitation.email, password: form.password!, token },
        c.req.raw.headers,
      );
      return withCookies(c.redirect(paths.to("/"), 303), cookies);
    } catch (error) {
      if (!(error instanceof AuthRefused)) throw error;
      if (error.code === "INVITATION_INVALID") return invalid(c);
      if (error.status === 403) return page(403, "This form was sent from another site; open the invitation's link and try again.");
      if (error.code.startsWith("USER_ALREADY_EXISTS"))
        return page(400, "An account with this e-mail exists now: open the link again to sign in.");
      return page(400, `Signing up was refused: ${error.message}`);
    }
  });

  web.post("/invitations/:token/sign-in", async (c) => {
    const token = c.req.param("token");
    const invitation = await findOpenInvitation(c.env, token);
    if (!invitation) return invalid(c);
    const form = await formFields(c, ["password"]);
    const email = invitation.email;
    const page = (status: 400 | 401 | 403 | 429, error: string) =>
      c.html(<InvitationPage paths={paths} token={token} invitation={invitation} mode={{ kind: "sign-in" }} error={error} />, status);
    if (!form.password) return page(400, "Enter your password.");
    const tooMany = (refusedFor: "address" | "account" | null, until: Date) => {
      const refusal = signInRefusal(refusedFor, until, c.env.clock.now());
      c.header("Retry-After", String(refusal.retryAfter));
      return page(429, refusal.message);
    };
    const throttleDeps = { db: c.env.db, clock: c.env.clock };
    const reservation = await reserveSignInAttempt(throttleDeps, email, c.env.clientAddress);
    if (reservation.refusedUntil) return tooMany(reservation.refusedFor, reservation.refusedUntil);
    let cookies: string[];
    try {
      ({ cookies } = await signIn(peopleDeps(c, config), { email, password: form.password }, c.req.raw.headers));
    } catch (error) {
      if (!(error instanceof AuthRefused)) throw error;
      if (error.status === 403) return page(403, "This form was sent from another site; open the invitation's link and try again.");
      if (reservation.lockStartedUntil) return tooMany("account", reservation.lockStartedUntil);
      return page(401, "Wrong password.");
    }
    await signInSucceeded(throttleDeps, email, reservation);
    const user = await findUserByEmail(c.env, email);
    const joined = user ? await acceptInvitation(c.env, token, { id: user.id, email }) : null;
    if (!joined) return invalid(c);
    return withCookies(c.redirect(paths.to("/"), 303), cookies);
  });
}
