/**
 * Password reset (docs/accounts.md): `/reset-password` takes an e-mail and sends a link (the same
 * answer whether or not an account uses it, src/auth/accounts.ts); `/reset-password/:token`
 * takes the new password, which ends every session of the account and lifts the e-mail's
 * sign-in lock, then sends the person to sign in.
 *
 * Without a mail transport, the link is shown on the page only when the web app is a local one
 * (http on a loopback host, as on `npm start`): anywhere else that would let anyone reset anyone's
 * password, so the page says no e-mail was sent and the operator can read the held message
 * (GET /admin/v1/emails).
 */
import type { Hono } from "hono";
import { findPasswordReset, requestPasswordReset, resetPassword } from "../auth/accounts";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../auth/people";
import { isLocalWebApp } from "../mail/transport";
import { queueEmails } from "../services/shared/email-outbox";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { readVisitorFlash, redirectVisitorWithFlash } from "./flash";
import { checkEmail, checkNewPassword, formFields } from "./forms";
import { PlainPage } from "./layout";
import { peopleDeps } from "./session";
import { LinkGonePage, isLinkToken } from "./sign-up";

const RequestPage = ({ paths, email, error }: { paths: WebPaths; email?: string; error?: string }) => (
  <PlainPage title="Reset your password" paths={paths}>
    <h1>Reset your password</h1>
    {error ? (
      <p class="notice" role="alert">
        {error}
      </p>
    ) : null}
    <form class="card" method="post" action={paths.to("/reset-password")}>
      <label>
        E-mail
        <input type="email" name="email" autocomplete="username" required value={email ?? ""} />
      </label>
      <button type="submit">Send me a link</button>
    </form>
    <p>
      Remembered it? <a href={paths.to("/sign-in")}>Sign in</a>
    </p>
  </PlainPage>
);

/** What `/reset-password/sent` shows. `link`: only on a local instance without a mail transport. */
type SentMessage = { email: string; mailed: boolean; link: string | null };

const SentPage = ({ paths, sent }: { paths: WebPaths; sent: SentMessage | null }) => (
  <PlainPage title="Check your e-mail" paths={paths}>
    <h1>Check your e-mail</h1>
    {sent === null || sent.mailed ? (
      <p>
        We sent an e-mail to <strong>{sent?.email ?? "the address you gave"}</strong>. If an account uses it, the e-mail holds a link to
        choose a new password; it works once, within an hour.
      </p>
    ) : sent.link ? (
      <>
        <p class="notice-info" role="status">
          No e-mail was sent: this instance has no mail transport (SMTP_URL is not set). This is a local instance, so the link is shown
          here; it works once, within an hour.
        </p>
        <p>
          <a href={sent.link} data-testid="reset-link">
            {sent.link}
          </a>
        </p>
      </>
    ) : (
      <p class="notice-info" role="status">
        No e-mail was sent: this instance has no mail transport (SMTP_URL is not set). Its operator can read the message, with its link, in
        the outbox (GET /admin/v1/emails).
      </p>
    )}
  </PlainPage>
);

const NewPasswordPage = ({ paths, token, email, error }: { paths: WebPaths; token: string; email: string; error?: string }) => (
  <PlainPage title="Choose a new password" paths={paths}>
    <h1>Choose a new password</h1>
    {error ? (
      <p class="notice" role="alert">
        {error}
      </p>
    ) : null}
    <form class="card" method="post" action={paths.to(`/reset-password/${token}`)}>
      <input type="hidden" name="email" autocomplete="username" value={email} />
      <label>
        New password for {email}
        <input
          type="password"
          name="password"
          autocomplete="new-password"
          required
          minlength={MIN_PASSWORD_LENGTH}
          maxlength={MAX_PASSWORD_LENGTH}
        />
      </label>
      <button type="submit">Set the new password</button>
    </form>
    <p class="muted">Setting it signs this account out everywhere.</p>
  </PlainPage>
);

const GonePage = ({ paths }: { paths: WebPaths }) => (
  <LinkGonePage paths={paths}>
    <a href={paths.to("/reset-password")}>Ask for a new link</a>
  </LinkGonePage>
);

const NoAccountPage = ({ paths, email, signUpOpen }: { paths: WebPaths; email: string; signUpOpen: boolean }) => (
  <PlainPage title="No account" paths={paths}>
    <h1>No account uses this e-mail</h1>
    <p>
      There is no account for <strong>{email}</strong>.{" "}
      {signUpOpen ? <a href={paths.to("/sign-up")}>Create one</a> : "Ask for an invitation to create one."}
    </p>
  </PlainPage>
);

export function registerResetPassword(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  const signUpOpen = (config.signUp ?? "open") === "open";
  web.get("/reset-password", (c) => c.html(<RequestPage paths={paths} />));

  web.post("/reset-password", async (c) => {
    const email = (await formFields(c, ["email"])).email!.trim();
    const problem = checkEmail(email);
    if (problem) return c.html(<RequestPage paths={paths} email={email} error={problem} />, 400);
    const { link, emailId } = await requestPasswordReset({ ...peopleDeps(c, config), clock: c.env.clock }, { email, signUpOpen });
    if (emailId) await queueEmails({ queue: c.env.runQueue, logger: c.env.logger }, [emailId]);
    const mailed = Boolean(config.mailConfigured);
    const shown = !mailed && isLocalWebApp(config.webAppUrl) ? link : null;
    return redirectVisitorWithFlash(c, config, paths, "/reset-password/sent", { email: email.toLowerCase(), mailed, link: shown });
  });

  web.get("/reset-password/sent", async (c) => {
    const sent = await readVisitorFlash<SentMessage>(c, config, "/reset-password/sent");
    return c.html(<SentPage paths={paths} sent={sent} />);
  });

  web.get("/reset-password/:token", async (c) => {
    const token = c.req.param("token");
    const reset = isLinkToken(token) ? await findPasswordReset(c.env, token) : null;
    if (!reset) return c.html(<GonePage paths={paths} />, 404);
    if (!reset.hasAccount) return c.html(<NoAccountPage paths={paths} email={reset.email} signUpOpen={signUpOpen} />);
    return c.html(<NewPasswordPage paths={paths} token={token} email={reset.email} />);
  });

  web.post("/reset-password/:token", async (c) => {
    const token = c.req.param("token");
    const reset = isLinkToken(token) ? await findPasswordReset(c.env, token) : null;
    if (!reset) return c.html(<GonePage paths={paths} />, 404);
    const { password } = await formFields(c, ["password"]);
    const problem = checkNewPassword(password!);
    if (problem) return c.html(<NewPasswordPage paths={paths} token={token} email={reset.email} error={problem} />, 400);
    const done = await resetPassword({ ...peopleDeps(c, config), clock: c.env.clock }, token, password!);
    if (done.outcome === "invalid") return c.html(<GonePage paths={paths} />, 404);
    if (done.outcome === "no_account") return c.html(<NoAccountPage paths={paths} email={reset.email} signUpOpen={signUpOpen} />);
    return redirectVisitorWithFlash(c, config, paths, "/sign-in", { notice: "Your password was changed. Sign in with it." });
  });
}
