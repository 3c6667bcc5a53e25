/**
 * `/sign-in`: the form (GET) and signing in (POST), throttled per client address and per e-mail
 * (src/services/tenancy/sign-in-throttle.ts: after 5 failures from an address within an hour, it
 * waits 1 s, 2 s, 4 s… up to 15 minutes between attempts; after 10 failures for an e-mail within
 * 15 minutes, attempts for it are refused for 15 minutes, except from addresses its owner signs
 * in from), then back to `next` (same-origin paths only).
 */
import type { Hono } from "hono";
import { AuthRefused, currentPerson, signIn } from "../auth/people";
import { reserveSignInAttempt, signInSucceeded } from "../services/tenancy/sign-in-throttle";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { checkEmail, formFields } from "./forms";
import { PlainPage } from "./layout";
import { readVisitorFlash } from "./flash";
import { signInRefusal } from "./sign-in-refusal";
import { peopleDeps, safeNextPath, withCookies } from "./session";

type SignInPageProps = { paths: WebPaths; next: string; signUpOpen: boolean; email?: string; error?: string; notice?: string };

const SignInPage = ({ paths, next, signUpOpen, email, error, notice }: SignInPageProps) => (
  <PlainPage title="Sign in" paths={paths}>
    <h1>Sign in</h1>
    {notice ? (
      <p class="notice-done" role="status">
        {notice}
      </p>
    ) : null}
    {error ? (
      <p class="notice" role="alert">
        {error}
      </p>
    ) : null}
    <form class="card" method="post" action={paths.to("/sign-in")}>
      <input type="hidden" name="next" value={next} />
      <label>
        E-mail
        <input type="email" name="email" autocomplete="username" required value={email ?? ""} />
      </label>
      <label>
        Password
        <input type="password" name="password" autocomplete="current-password" required />
      </label>
      <button type="submit">Sign in</button>
    </form>
    <p>
      <a href={paths.to("/reset-password")}>Forgot your password?</a>
    </p>
    {signUpOpen ? (
      <p>
        New here? <a href={paths.to("/sign-up")}>Create an organization</a>
      </p>
    ) : null}
  </PlainPage>
);

export function registerSignIn(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  const signUpOpen = (config.signUp ?? "open") === "open";
  web.get("/sign-in", async (c) => {
    const next = safeNextPath(c.req.query("next"));
    // Already signed in: straight on.
    if (await currentPerson(peopleDeps(c, config), c.req.raw.headers)) return c.redirect(paths.to(next), 302);
    // A password reset's notice (src/web/reset-password.tsx).
    const flash = await readVisitorFlash<{ notice: string }>(c, config, "/sign-in");
    return c.html(<SignInPage paths={paths} next={next} signUpOpen={signUpOpen} notice={flash?.notice} />);
  });

  web.post("/sign-in", async (c) => {
    const form = await formFields(c, ["email", "password", "next"]);
    const next = safeNextPath(form.next);
    const email = form.email!.trim();
    const render = (status: 400 | 401 | 403 | 429, error: string) =>
      c.html(<SignInPage paths={paths} next={next} signUpOpen={signUpOpen} email={email} error={error} />, status);
    const tooMany = (refusal: { message: string; retryAfter: number }) => {
      c.header("Retry-After", String(refusal.retryAfter));
      return render(429, refusal.message);
    };
    if (!email || !form.password) return render(400, "Enter your e-mail and password.");
    // Before the throttle's queries: every account's address passed this rule when it was made.
    const emailProblem = checkEmail(email);
    if (emailProblem) return render(400, emailProblem);
    const throttleDeps = { db: c.env.db, clock: c.env.clock };
    const reservation = await reserveSignInAttempt(throttleDeps, email, c.env.clientAddress);
    if (reservation.refusedUntil) return tooMany(signInRefusal(reservation.refusedFor, reservation.refusedUntil, c.env.clock.now()));
    try {
      const { cookies } = await signIn(peopleDeps(c, config), { email, password: form.password! }, c.req.raw.headers);
      await signInSucceeded(throttleDeps, email, reservation);
      return withCookies(c.redirect(paths.to(next), 303), cookies);
    } catch (error) {
      if (!(error instanceof AuthRefused)) throw error;
      // Only after the right password: accounts are made verified, so this is an account the upgrade's rules missed.
      if (error.code === "EMAIL_NOT_VERIFIED")
        return render(
          403,
          "This account's e-mail is not confirmed yet: choose a new password through “Forgot your password?” to confirm it.",
        );
      if (error.status === 403) return render(403, "This form was sent from another site; open the sign-in page and try again.");
      const locked = reservation.lockStartedUntil;
      if (locked) return tooMany(signInRefusal("account", locked, c.env.clock.now()));
      return render(401, "Wrong e-mail or password.");
    }
  });
}
