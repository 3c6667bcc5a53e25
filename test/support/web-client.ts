/**
 * A browser stand-in for the pages' tests on both runtimes: a cookie jar over a RequestTarget
 * (the app in process on Node, the Worker through SELF.fetch in workerd), forms posted as
 * application/x-www-form-urlencoded with the Origin a page of WEB_APP_URL would send. Redirects
 * are not followed: tests look at each answer.
 */
import type { RequestTarget } from "./harness-core";
import { WEB_APP_URL } from "./constants";

export const WEB_ORIGIN = new URL(WEB_APP_URL).origin;

export type WebAnswer = { status: number; headers: Headers; text: string; location: string | null; setCookies: string[] };

export class WebClient {
  /** name → value of the cookies the app set and has not cleared. */
  readonly cookies = new Map<string, string>();

  /** `origin`: the web app's origin the forms come from (WEB_APP_URL's by default). */
  constructor(
    private readonly app: RequestTarget,
    private readonly origin: string = WEB_ORIGIN,
  ) {}

  cookieHeader(): string | undefined {
    return this.cookies.size === 0 ? undefined : [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }

  async request(
    method: string,
    path: string,
    init: { form?: Record<string, string | string[]>; headers?: Record<string, string> } = {},
  ): Promise<WebAnswer> {
    const headers: Record<string, string> = { ...init.headers };
    const cookie = this.cookieHeader();
    if (cookie && !("cookie" in headers)) headers.cookie = cookie;
    let body: string | undefined;
    if (init.form) {
      // A list is one field sent once per value (checkboxes).
      body = new URLSearchParams(
        Object.entries(init.form).flatMap(([name, value]) =>
          (Array.isArray(value) ? value : [value]).map((one): [string, string] => [name, one]),
        ),
      ).toString();
      headers["content-type"] ??= "application/x-www-form-urlencoded";
    }
    const response = await this.app.request(path, { method, headers, body, redirect: "manual" });
    const setCookies = response.headers.getSetCookie();
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(";");
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === "";
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return {
      status: response.status,
      headers: response.headers,
      text: await response.text(),
      location: response.headers.get("location"),
      setCookies,
    };
  }

  get(path: string, headers?: Record<string, string>) {
    return this.request("GET", path, { headers });
  }

  /** A form post as a page of the web app sends it (Origin: WEB_APP_URL's origin), unless `headers` say otherwise. */
  post(path: string, form: Record<string, string | string[]>, headers: Record<string, string> = { origin: this.origin }) {
    return this.request("POST", path, { form, headers });
  }

  /**
   * POST-redirect-GET (docs/web-app.md "Forms"): the post, then, when it answered 303, the GET of
   * its Location (where a one-time message shows what the post did). A post that answered anything
   * else (a refusal, a form with its problems) is returned as it is.
   */
  async postAndFollow(
    path: string,
    form: Record<string, string | string[]>,
    headers?: Record<string, string>,
  ): Promise<WebAnswer & { posted: WebAnswer }> {
    const posted = await this.post(path, form, headers);
    if (posted.status !== 303 || !posted.location) return { ...posted, posted };
    return { ...(await this.get(posted.location)), posted };
  }

  /**
   * Signs up a new person and organization as a person would on an instance without a mail
   * transport (the harness's): the form, the page that shows the confirmation link, and the
   * link's one click. The client keeps the session cookie; the answer is the click's (303 to `/`).
   */
  async signUp(input: { name?: string; email: string; password?: string; organization: string }) {
    const posted = await this.post("/sign-up", {
      name: input.name ?? "Ada Lovelace",
      email: input.email,
      password: input.password ?? PASSWORD,
      organization: input.organization,
    });
    if (posted.status !== 303 || !posted.location) throw new Error(`sign-up failed: ${posted.status} ${posted.text.slice(0, 500)}`);
    const sent = await this.get(posted.location);
    const link = linkOnPage(sent.text, "confirmation-link");
    if (!link) throw new Error(`sign-up showed no confirmation link: ${sent.status} ${sent.text.slice(0, 500)}`);
    const confirmed = await this.post(link, {});
    if (confirmed.status !== 303) throw new Error(`confirming the sign-up failed: ${confirmed.status} ${confirmed.text.slice(0, 500)}`);
    return confirmed;
  }

  signIn(email: string, password = PASSWORD, next?: string) {
    return this.post("/sign-in", { email, password, ...(next !== undefined ? { next } : {}) });
  }
}

export const PASSWORD = "correct horse battery";

/**
 * The path (with WEB_APP_URL's prefix stripped, as the app routes it) of the link a page shows
 * under `data-testid="<testId>"` (the confirmation or reset link shown without a mail transport), or null.
 */
export function linkOnPage(html: string, testId: string): string | null {
  const match = new RegExp(`href="([^"]+)" data-testid="${testId}"`).exec(html);
  if (!match) return null;
  const url = new URL(match[1]!.replaceAll("&amp;", "&"));
  const prefix = new URL(WEB_APP_URL).pathname.replace(/\/+$/, "");
  return url.pathname.slice(prefix.length) + url.search;
}

let counter = 0;
/** An e-mail no other test uses (files share the database on Postgres). */
export function uniqueEmail(label = "person"): string {
  counter += 1;
  return `${label}-${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
}
