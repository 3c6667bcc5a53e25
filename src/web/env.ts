/** The web app's Hono environment: the app's (a request's dependencies as `c.env`) plus what pages add. */
import type { AppConfig, AppEnv } from "../app-env";
import type { SignedInPerson } from "../auth/people";
import type { Membership } from "../services/tenancy/memberships";

export type WebEnv = {
  Bindings: AppEnv["Bindings"];
  Variables: AppEnv["Variables"] & {
    /** Set by hono's secure-headers middleware: the nonce of this page's Content-Security-Policy. */
    secureHeadersNonce?: string;
    /** Set by `signedIn` (src/web/session.ts). */
    person: SignedInPerson;
  };
};

/** What every page's rendering needs from configuration. */
/** `cursorSecret`: the pages page through lists with the API's own signed cursors. */
export type WebConfig = Pick<
  AppConfig,
  | "secrets"
  | "webAppUrl"
  | "webAppLoopbackAliases"
  | "publicBaseUrl"
  | "webhookUrlPolicy"
  | "cursorSecret"
  | "quotas"
  | "signUp"
  | "mailConfigured"
  | "retention"
>;

/** The header's organization and the person, for the layout. */
export type PageContext = { person: SignedInPerson; membership: Membership | null; paths: WebPaths };

/**
 * Paths as the browser sees them: WEB_APP_URL's path prefix (if the service sits under one behind
 * a proxy) followed by the app's own route.
 */
export type WebPaths = { to(path: string): string };

export function webPaths(webAppUrl: string): WebPaths {
  const prefix = new URL(webAppUrl).pathname.replace(/\/+$/, "");
  return { to: (path) => `${prefix}${path}` };
}
