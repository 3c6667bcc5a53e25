/**
 * What every page answer carries and every state-changing page request must pass (docs/web-app.md):
 *
 * - Content-Security-Policy: nothing but our own stylesheet and, later, scripts carrying the
 *   page's nonce (`script-src 'nonce-…'`, no 'unsafe-inline'); forms post only to us; no framing.
 *   Plus X-Content-Type-Options, Referrer-Policy, X-Frame-Options and, under https, HSTS
 *   (secure-headers' defaults otherwise).
 * - CSRF: a POST is accepted only when its Origin is the web app's configured origin (WEB_APP_URL,
 *   never the request's Host); without an Origin header, only with `Sec-Fetch-Site: same-origin`;
 *   with neither, it is refused. SameSite=Lax session cookies are the second line.
 */
import type { MiddlewareHandler } from "hono";
import { NONCE, secureHeaders } from "hono/secure-headers";
import type { WebEnv } from "./env";

/** `https`: the pages are served over https (WEB_APP_URL), so browsers are told to keep to it (HSTS). */
export const pageSecurityHeaders = (https: boolean): MiddlewareHandler<WebEnv> =>
  secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      scriptSrc: [NONCE],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", "data:"],
      formAction: ["'self'"],
      baseUri: ["'none'"],
      frameAncestors: ["'none'"],
    },
    referrerPolicy: "same-origin",
    xFrameOptions: "DENY",
    strictTransportSecurity: https ? "max-age=15552000" : false,
    crossOriginEmbedderPolicy: false,
  });

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Whether a request may change state: a safe method, or sent by a page of one of `origins` (src/auth/people.ts webOrigins). */
export function isSameOriginRequest(method: string, headers: Headers, origins: readonly string[]): boolean {
  if (SAFE_METHODS.has(method.toUpperCase())) return true;
  const requestOrigin = headers.get("origin");
  if (requestOrigin !== null) return origins.includes(requestOrigin);
  return headers.get("sec-fetch-site") === "same-origin";
}
