/**
 * The security headers, the form-size limit and the CSRF (Origin) check apply to the paths listed
 * in PAGE_PATHS only. Every page route the web app registers must be covered by one of them, so a
 * new page, or a new form post, cannot slip past the CSRF check by being left out of the list.
 */
import { describe, expect, it } from "vitest";
import { PAGE_PATHS, createWebApp } from "../../src/web";
import { SecretKeyring, generateSecretsKey } from "../../src/lib/secret-box";

/** Hono's own matcher for one pattern: `:param` is one segment, a trailing `/*` anything below. */
function covers(pattern: string, path: string): boolean {
  const source = pattern
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment === "*" ? ".*" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}$`).test(path) || (pattern.endsWith("/*") && path === pattern.slice(0, -2));
}

describe("PAGE_PATHS", () => {
  it("covers every page route of the web app, GET and POST", () => {
    const web = createWebApp({
      secrets: new SecretKeyring({ current: generateSecretsKey() }),
      webAppUrl: "http://localhost:8787",
      publicBaseUrl: "http://localhost:8787",
      cursorSecret: "x".repeat(32),
    });
    // The static assets (the stylesheet, the copy buttons' script) are files, not pages: no page headers.
    const routes = web.routes.filter((route) => route.method !== "ALL" && !route.path.startsWith("/assets/"));
    expect(routes.length).toBeGreaterThan(20);
    const uncovered = routes
      .filter((route) => !PAGE_PATHS.some((pattern) => covers(pattern, route.path)))
      .map((route) => `${route.method} ${route.path}`);
    expect(uncovered).toEqual([]);
  });

  it("the matcher reads patterns as Hono does", () => {
    expect(covers("/projects/:id", "/projects/new")).toBe(true);
    expect(covers("/projects/:id", "/projects/:id/runs")).toBe(false);
    expect(covers("/settings/team/*", "/settings/team/invitations")).toBe(true);
    expect(covers("/settings/team/*", "/settings/team")).toBe(true);
  });
});
