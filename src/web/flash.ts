/**
 * POST-redirect-GET for the pages (docs/web-app.md "Forms"): a POST that did its work leaves what
 * it has to say for the page it redirects to (src/services/shared/flash.ts: server-side, bound to the
 * session, read once) and answers 303 to that page, so the URL never carries a secret and a reload
 * repeats nothing. `page` is the app path (without WEB_APP_URL's prefix) that reads the message.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { putFlash, takeFlash } from "../services/shared/flash";
import type { WebConfig, WebEnv, WebPaths } from "./env";

/** Leaves `message` for the next GET of `page` in the person's session and answers 303 there. */
export async function redirectWithFlash(
  c: Context<WebEnv>,
  config: WebConfig,
  paths: WebPaths,
  page: string,
  message: unknown,
): Promise<Response> {
  await putFlash({ db: c.env.db, clock: c.env.clock, secrets: config.secrets }, c.var.person.sessionId, page, message);
  return c.redirect(paths.to(page), 303);
}

/** The message a POST left for `page` in the person's session, deleted as it is read; null if none. */
export async function readFlash<T>(c: Context<WebEnv>, config: WebConfig, page: string): Promise<T | null> {
  const message = await takeFlash<T>({ db: c.env.db, clock: c.env.clock, secrets: config.secrets }, c.var.person.sessionId, page);
  // The page may show a secret: no cache keeps it (the back button asks the server again, which shows it no more).
  if (message !== null) c.header("Cache-Control", "no-store");
  return message;
}

/**
 * A signed-out visitor's messages (sign-up, password reset): no session to bind them to, so the
 * POST binds them to a random id in a short-lived cookie (HttpOnly, SameSite=Lax, five minutes:
 * the flash's own life), which the GET reads and clears. Only this browser can read the message.
 */
const visitorCookie = (config: WebConfig) => (config.webAppUrl.startsWith("https:") ? "__Host-cta_flash" : "cta_flash");
const VISITOR_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export async function redirectVisitorWithFlash(
  c: Context<WebEnv>,
  config: WebConfig,
  paths: WebPaths,
  page: string,
  message: unknown,
): Promise<Response> {
  const visitorId = crypto.randomUUID();
  await putFlash({ db: c.env.db, clock: c.env.clock, secrets: config.secrets }, visitorId, page, message);
  setCookie(c, visitorCookie(config), visitorId, {
    httpOnly: true,
    sameSite: "Lax",
    path: "/",
    maxAge: 300,
    secure: config.webAppUrl.startsWith("https:"),
  });
  return c.redirect(paths.to(page), 303);
}

/** The message a signed-out POST left for `page` in this browser, deleted as it is read; null if none. */
export async function readVisitorFlash<T>(c: Context<WebEnv>, config: WebConfig, page: string): Promise<T | null> {
  const visitorId = getCookie(c, visitorCookie(config));
  if (!visitorId || !VISITOR_ID.test(visitorId)) return null;
  deleteCookie(c, visitorCookie(config), { path: "/", secure: config.webAppUrl.startsWith("https:") });
  const message = await takeFlash<T>({ db: c.env.db, clock: c.env.clock, secrets: config.secrets }, visitorId, page);
  if (message !== null) c.header("Cache-Control", "no-store");
  return message;
}
