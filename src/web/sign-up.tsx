/**
 * Signing up (docs/accounts.md): `/sign-up` takes name, e-mail, password and organization name and
 * e-mails a link that confirms the address (src/auth/accounts.ts); `/sign-up/sent` says so (or,
 * without a mail transport, shows the link and says no e-mail was sent); `/verify-email/:token`
 * asks for one click, which creates the account, the organization (with its API key) and the
 * admin membership, and signs in. Nothing exists before that click, so nobody can squat an
 * address. Closed when SIGN_UP is not `open`.
 */
import type { Context, Hono } from "hono";
import type { Child } from "hono/jsx";
import { completeSignUp, findPendingSignUp, requestSignUp } from "../auth/accounts";
import { AuthRefused, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, currentPerson } from "../auth/people";
import { queueEmails } from "../services/shared/email-outbox";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { readVisitorFlash, redirectVisitorWithFlash } from "./flash";
import { checkEmail, checkName, checkNewPassword, formFields } from "./forms";
import { PlainPage } from "./layout";
import { peopleDeps, withCookies } from "./session";

type SignUpValues = { name: string; email: string; organization: string };

const SignUpPage = ({ paths, values, errors }: { paths: WebPaths; values?: SignUpValues; errors?: string[] }) => (
  <PlainPage title="Sign up" paths={paths}>
    <h1>Create your organization</h1>
    {errors && errors.length > 0 ? (
      <div class="notice" role="alert">
        <ul>
          {errors.map((error) => (
            <li>{error}</li>
          ))}
        </ul>
      </div>
    ) : null}
    <form class="card" method="post" action={paths.to("/sign-up")}>
      <label>
        Your name
        <input type="text" name="name" autocomplete="name" required maxlength={255} value={values?.name ?? ""} />
      </label>
      <label>
        E-mail
        <input type="email" name="email" autocomplete="username" required value={values?.email ?? ""} aria-describedby="email-hint" />
        <span id="email-hint" class="muted">
          We send a link there to confirm it.
        </span>
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
      <label>
        Organization name
        <input type="text" name="organization" autocomplete="organization" required maxlength={255} value={values?.organization ?? ""} />
      </label>
      <button type="submit">Create organization</button>
    </form>
    <p>
      Already have an account? <a href={paths.to("/sign-in")}>Sign in</a>
    </p>
  </PlainPage>
);

const ClosedPage = ({ paths, inviteOnly }: { paths: WebPaths; inviteOnly: boolean }) => (
  <PlainPage title="Sign-up is closed" paths={paths}>
    <h1>Sign-up is closed</h1>
    <p>
      {inviteOnly
        ? "On this instance, accounts are created through invitations only: ask an admin of your organization (or the instance's operator) to invite you."
        : "This instance does not create new accounts. If you have an account, sign in."}
    </p>
    <p>
      <a href={paths.to("/sign-in")}>Sign in</a>
    </p>
  </PlainPage>
);

/** What `/sign-up/sent` shows: the address, and the link itself when no e-mail could carry it. */
type SentMessage = { email: string; link: string | null };

const SentPage = ({ paths, sent }: { paths: WebPaths; sent: SentMessage | null }) => (
  <PlainPage title="Confirm your e-mail" paths={paths}>
    <h1>Confirm your e-mail</h1>
    {sent === null ? (
      <p>If you have just signed up, open the link we e-mailed you to create your account. It works once, within 24 hours.</p>
    ) : sent.link === null ? (
      <p>
        We sent a link to <strong>{sent.email}</strong>. Open it to create your account and your organization; it works once, within 24
        hours. Nothing arrived? Check your spam folder, or sign up again.
      </p>
    ) : (
      <>
        <p class="notice-info" role="status">
          No e-mail was sent: this instance has no mail transport (SMTP_URL is not set). Open this link to confirm{" "}
          <strong>{sent.email}</strong> and create your account; it works once, within 24 hours.
        </p>
        <p>
          <a href={sent.link} data-testid="confirmation-link">
            {sent.link}
          </a>
        </p>
      </>
    )}
  </PlainPage>
);

function checkSignUp(values: SignUpValues, password: string): string[] {
  const errors = [
    checkName(values.name, "Your name"),
    checkEmail(values.email),
    checkName(values.organization, "Organization name"),
    checkNewPassword(password),
  ];
  return errors.filter((error): error is string => error !== null);
}

const signUpClosed = (config: WebConfig) => (config.signUp ?? "open") !== "open";
const closed = (c: Context<WebEnv>, config: WebConfig, paths: WebPaths) =>
  c.html(<ClosedPage paths={paths} inviteOnly={config.signUp === "invite-only"} />, 403);

export function registerSignUp(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  web.get("/sign-up", async (c) => {
    if (await currentPerson(peopleDeps(c, config), c.req.raw.headers)) return c.redirect(paths.to("/"), 302);
    if (signUpClosed(config)) return closed(c, config, paths);
    return c.html(<SignUpPage paths={paths} />);
  });

  web.post("/sign-up", async (c) => {
    if (signUpClosed(config)) return closed(c, config, paths);
    const form = await formFields(c, ["name", "email", "password", "organization"]);
    const values = { name: form.name!.trim(), email: form.email!.trim(), organization: form.organization!.trim() };
    const errors = checkSignUp(values, form.password!);
    if (errors.length > 0) return c.html(<SignUpPage paths={paths} values={values} errors={errors} />, 400);
    const { link, emailId } = await requestSignUp(
      { ...peopleDeps(c, config), clock: c.env.clock },
      { name: values.name, email: values.email, password: form.password!, organizationName: values.organization },
    );
    if (emailId) await queueEmails({ queue: c.env.runQueue, logger: c.env.logger }, [emailId]);
    const sent: SentMessage = { email: values.email.toLowerCase(), link: config.mailConfigured ? null : link };
    return redirectVisitorWithFlash(c, config, paths, "/sign-up/sent", sent);
  });

  web.get("/sign-up/sent", async (c) => {
    const sent = await readVisitorFlash<SentMessage>(c, config, "/sign-up/sent");
    return c.html(<SentPage paths={paths} sent={sent} />);
  });

  registerConfirmation(web, config, paths);
}

/** A link's token as this service makes them (32 random bytes, base64url): anything else is not looked up. */
export const isLinkToken = (token: string) => token.length === 43 && /^[A-Za-z0-9_-]+$/.test(token);

/** An account link (a sign-up's or a reset's) used, expired or unknown; `children`: what to do instead. */
export const LinkGonePage = ({ paths, children }: { paths: WebPaths; children?: Child }) => (
  <PlainPage title="Link no longer valid" paths={paths}>
    <h1>This link is no longer valid</h1>
    <p>It was used already, it expired, or it was copied incompletely.</p>
    <p>
      {children ?? (
        <>
          <a href={paths.to("/sign-up")}>Sign up again</a> or <a href={paths.to("/sign-in")}>sign in</a>
        </>
      )}
    </p>
  </PlainPage>
);

const AccountExistsPage = ({ paths }: { paths: WebPaths }) => (
  <PlainPage title="You already have an account" paths={paths}>
    <h1>You already have an account</h1>
    <p>An account with this e-mail exists already; nothing was created.</p>
    <p>
      <a href={paths.to("/sign-in")}>Sign in</a> or <a href={paths.to("/reset-password")}>choose a new password</a>
    </p>
  </PlainPage>
);

/** `/verify-email/:token`: one click (a POST: mail scanners that open links must not use them up) creates the account. */
function registerConfirmation(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  web.get("/verify-email/:token", async (c) => {
    const token = c.req.param("token");
    const pending = isLinkToken(token) ? await findPendingSignUp(c.env, token) : null;
    if (!pending) return c.html(<LinkGonePage paths={paths} />, 404);
    return c.html(
      <PlainPage title="Confirm your e-mail" paths={paths}>
        <h1>Confirm your e-mail</h1>
        <p>
          Create the account of <strong>{pending.email}</strong> and the organization <strong>{pending.organizationName}</strong>.
        </p>
        <form class="card" method="post" action={paths.to(`/verify-email/${token}`)}>
          <button type="submit">Confirm and create</button>
        </form>
      </PlainPage>,
    );
  });

  web.post("/verify-email/:token", async (c) => {
    if (signUpClosed(config)) return closed(c, config, paths);
    const token = c.req.param("token");
    if (!isLinkToken(token)) return c.html(<LinkGonePage paths={paths} />, 404);
    try {
      const done = await completeSignUp({ ...peopleDeps(c, config), clock: c.env.clock }, token, c.req.raw.headers);
      if (done.outcome === "invalid") return c.html(<LinkGonePage paths={paths} />, 404);
      if (done.outcome === "account_exists") return c.html(<AccountExistsPage paths={paths} />, 409);
      return withCookies(c.redirect(paths.to("/"), 303), done.cookies);
    } catch (error) {
      if (!(error instanceof AuthRefused)) throw error;
      return c.html(<LinkGonePage paths={paths} />, 404);
    }
  });
}
