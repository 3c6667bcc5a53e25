/**
 * `/sign-up`: name, e-mail, password and organization name. Creates the organization through the
 * admin API's service (so with its API key), the user, an admin membership and a session, in one
 * transaction (src/auth/people.ts), then opens `/`. No e-mail verification (docs/web-app.md).
 */
import type { Hono } from "hono";
import { AuthRefused, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, currentPerson, signUp } from "../auth/people";
import type { WebConfig, WebEnv, WebPaths } from "./env";
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
        <input type="email" name="email" autocomplete="username" required value={values?.email ?? ""} />
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

function checkSignUp(values: SignUpValues, password: string): string[] {
  const errors = [
    checkName(values.name, "Your name"),
    checkEmail(values.email),
    checkName(values.organization, "Organization name"),
    checkNewPassword(password),
  ];
  return errors.filter((error): error is string => error !== null);
}

const REFUSALS: Record<string, string> = {
  USER_ALREADY_EXISTS: "An account with this e-mail already exists: sign in instead.",
  USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL: "An account with this e-mail already exists: sign in instead.",
  INVALID_EMAIL: "Enter an e-mail address such as name@example.com.",
};

export function registerSignUp(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  web.get("/sign-up", async (c) => {
    if (await currentPerson(peopleDeps(c, config), c.req.raw.headers)) return c.redirect(paths.to("/"), 302);
    return c.html(<SignUpPage paths={paths} />);
  });

  web.post("/sign-up", async (c) => {
    const form = await formFields(c, ["name", "email", "password", "organization"]);
    const values = { name: form.name!.trim(), email: form.email!.trim(), organization: form.organization!.trim() };
    const errors = checkSignUp(values, form.password!);
    if (errors.length > 0) return c.html(<SignUpPage paths={paths} values={values} errors={errors} />, 400);
    try {
      const { cookies } = await signUp(
        { ...peopleDeps(c, config), clock: c.env.clock },
        { name: values.name, email: values.email, password: form.password!, organizationName: values.organization },
        c.req.raw.headers,
      );
      return withCookies(c.redirect(paths.to("/"), 303), cookies);
    } catch (error) {
      if (!(error instanceof AuthRefused)) throw error;
      const message =
        error.status === 403
          ? "This form was sent from another site; open the sign-up page and try again."
          : (REFUSALS[error.code] ?? `Signing up was refused: ${error.message}`);
      return c.html(<SignUpPage paths={paths} values={values} errors={[message]} />, error.status === 403 ? 403 : 400);
    }
  });
}
