/**
 * The web app (docs/web-app.md): server-rendered pages at the root of the origin, next to the
 * routes they serve, mounted by createApp beside the APIs. Page paths only: the APIs' routes and
 * their answers do not change. Every page answer carries the security headers of ./security.ts,
 * every POST must come from the web app's own origin, and every signed-in page goes through
 * `signedIn` (./session.ts).
 */
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { webOrigin, webOrigins } from "../auth/people";
import { isDatabaseUnavailable } from "../db/errors";
import { ApiError, describeError } from "../lib/errors";
import type { WebConfig, WebEnv } from "./env";
import { webPaths } from "./env";
import { CursorCodec } from "../lib/pagination";
import { registerAlerts } from "./alerts";
import { registerHome } from "./home";
import { PlainPage } from "./layout";
import { registerProject } from "./project";
import { registerNewProject } from "./project-new";
import { registerProjectSettings } from "./project-settings";
import { registerRuns } from "./runs";
import { isSameOriginRequest, pageSecurityHeaders } from "./security";
import { registerSignIn } from "./sign-in";
import { registerSignOut } from "./sign-out";
import { registerSignUp } from "./sign-up";
import { registerResetPassword } from "./reset-password";
import { registerInvitation } from "./invitation";
import { registerTeam } from "./team";
import { APP_CSS } from "./styles";
import { COPY_JS } from "./copy";
import { registerTests } from "./tests";
import { registerOrganizations } from "./organizations";
import { registerDigestUnsubscribe } from "./digest-unsubscribe";

/**
 * Every page route: the security headers, the form-size limit and the CSRF check apply to these.
 * One pattern each, applied once: `/projects/:id` also covers `/projects/new`, and
 * `/projects/:id/settings/*` the settings page itself.
 */
export const PAGE_PATHS = [
  "/",
  "/sign-in",
  "/sign-up",
  "/sign-up/sent",
  "/verify-email/:token",
  "/reset-password",
  "/reset-password/*",
  "/sign-out",
  "/projects/:id",
  "/projects/:id/settings/*",
  "/projects/:id/created",
  "/alerts",
  "/settings/team",
  "/settings/team/*",
  "/invitations/:token",
  "/invitations/:token/*",
  "/projects/:id/runs",
  "/projects/:id/runs/:number",
  "/projects/:id/runs/:number/failures",
  "/projects/:id/runs/:number/fixed",
  "/projects/:id/tests",
  "/projects/:id/tests/:test_id",
  "/projects/:id/tests/:test_id/quarantine",
  "/projects/:id/tests/:test_id/unquarantine",
  "/alerts/:id",
  "/alerts/:id/snooze",
  "/alerts/:id/unsnooze",
  "/alerts/:id/enable",
  "/alerts/:id/disable",
  "/organizations",
  "/organizations/:id/switch",
  "/digest/unsubscribe/:token",
] as const;
/**
 * Page paths whose posts come from outside the pages, so the Origin check is not theirs: the
 * digest's unsubscribe link, posted by mail clients (RFC 8058), its signed token the authority
 * (./digest-unsubscribe.tsx says why that is safe).
 */
const CROSS_SITE_POST_PATHS: readonly string[] = ["/digest/unsubscribe/:token"];
/** Forms are small: name, e-mail, password, organization. */
const FORM_MAX_BYTES = 16 * 1024;

export function createWebApp(config: WebConfig): Hono<WebEnv> {
  const web = new Hono<WebEnv>();
  const paths = webPaths(config.webAppUrl);
  const origin = webOrigin(config.webAppUrl);
  const origins = webOrigins(config.webAppUrl, config.webAppLoopbackAliases);

  /** A short HTML page with one message (refusals and errors outside a signed-in layout). */
  const message = (status: 400 | 403 | 413 | 500 | 503, heading: string, text: string) => (c: Context<WebEnv>) =>
    c.html(
      <PlainPage title={heading} paths={paths}>
        <h1>{heading}</h1>
        <p>{text}</p>
        <p>
          <a href={paths.to("/")}>Back to your projects</a>
        </p>
      </PlainPage>,
      status,
    );
  const crossSite = message(403, "Refused", "This form was sent from another site. Open the page on this site and send it again.");

  const sameOrigin: MiddlewareHandler<WebEnv> = async (c, next) => {
    if (!isSameOriginRequest(c.req.method, c.req.raw.headers, origins)) return crossSite(c);
    await next();
  };
  const headersAndLimit = [
    pageSecurityHeaders(origin.startsWith("https:")),
    bodyLimit({ maxSize: FORM_MAX_BYTES, onError: message(413, "Too large", "The form sent was too large.") }),
  ];
  for (const path of PAGE_PATHS)
    web.use(path, ...(CROSS_SITE_POST_PATHS.includes(path) ? headersAndLimit : [...headersAndLimit, sameOrigin]));

  web.get("/assets/app.css", (c) =>
    c.body(APP_CSS, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "public, max-age=3600" }),
  );
  web.get("/assets/copy.js", (c) =>
    c.body(COPY_JS, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=3600" }),
  );

  registerSignUp(web, config, paths);
  registerResetPassword(web, config, paths);
  registerSignIn(web, config, paths);
  registerSignOut(web, config, paths);
  registerHome(web, config, paths);
  // Before /projects/:id, which would take "new" for an id.
  registerNewProject(web, config, paths);
  registerProject(web, config, paths);
  registerProjectSettings(web, config, paths);
  registerTeam(web, config, paths);
  registerOrganizations(web, config, paths);
  registerInvitation(web, config, paths);
  registerDigestUnsubscribe(web, config, paths);
  // The API's cursors: a page's "next" link carries the same signed cursor as GET /api/v1/….
  const codec = new CursorCodec(config.cursorSecret);
  registerRuns(web, config, paths, codec);
  registerTests(web, config, paths, codec);
  registerAlerts(web, config, paths, codec);

  web.onError((error, c) => {
    if (isDatabaseUnavailable(error)) {
      c.env.logger.error("database unavailable", { requestId: c.get("requestId"), error: describeError(error) });
      c.header("Retry-After", "1");
      return message(503, "Unavailable", "The database is momentarily unavailable; try again shortly.")(c);
    }
    if (error instanceof ApiError && error.status < 500) return message(400, "Not accepted", error.message)(c);
    // An invitation's path carries its token, a secret: the log gets the route, not the token.
    const path = new URL(c.req.url).pathname.replace(/^\/invitations\/[^/]+/, "/invitations/:token");
    c.env.logger.error("unhandled error", { requestId: c.get("requestId"), method: c.req.method, path, error: describeError(error) });
    return message(500, "Something went wrong", "An unexpected error occurred. Quote the Request-Id header when reporting it.")(c);
  });
  return web;
}
