/** The pages' 404: a resource that does not exist and one of an organization the person is not a member of look the same. */
import type { Context } from "hono";
import { type SignedInPerson, webOrigin } from "../auth/people";
import { defaultMembership } from "../services/tenancy/memberships";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { webPaths } from "./env";
import { ErrorContent, Layout, PlainPage } from "./layout";
import { pageSecurityHeaders } from "./security";

export async function pageNotFound(c: Context<WebEnv>, person: SignedInPerson, paths: WebPaths): Promise<Response> {
  const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
  return c.html(
    <Layout title="Not found" page={{ person, membership, paths }}>
      <ErrorContent
        heading="Not found"
        message="There is no such page, or it belongs to an organization you are not a member of."
        paths={paths}
      />
    </Layout>,
    404,
  );
}

/** The APIs' prefixes: an unknown URL under them is an API's 404 (the JSON envelope) whoever asks. */
const API_PREFIXES = ["/api/", "/admin/", "/uploads/", "/mcp"];

/** A browser asking for a page: GET or HEAD, `text/html` accepted by name (API clients send `*\/*` or JSON), not an API's path. */
function wantsPage(request: Request): boolean {
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  if (!/\btext\/html\b/i.test(request.headers.get("accept") ?? "")) return false;
  const path = new URL(request.url).pathname;
  return !API_PREFIXES.some((api) => path === api.replace(/\/$/, "") || path.startsWith(api));
}

/**
 * The app's 404 for a URL no route serves, when a browser asks for a page (docs/web-app.md): the
 * pages' HTML "Not found" with their security headers; null for anyone else, who keeps the APIs'
 * JSON envelope. It reads no session: the same page signed in or not.
 */
export function browserNotFound(config: WebConfig): (c: Context) => Promise<Response> | null {
  const paths = webPaths(config.webAppUrl);
  const headers = pageSecurityHeaders(webOrigin(config.webAppUrl).startsWith("https:"));
  return (c) => {
    if (!wantsPage(c.req.raw)) return null;
    return (async () => {
      await headers(c as Context<WebEnv>, async () => {
        c.res = await c.html(
          <PlainPage title="Not found" paths={paths}>
            <h1>Not found</h1>
            <p>There is no page at this address.</p>
            <p>
              <a href={paths.to("/")}>Back to your projects</a>
            </p>
          </PlainPage>,
          404,
        );
      });
      return c.res;
    })();
  };
}
