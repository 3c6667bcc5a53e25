/**
 * `/docs`: the interactive API reference (Scalar) for /api/v1 and the upload interface, from the
 * same OpenAPI document the API serves (`/api/v1/openapi.json` lists the upload operations too).
 * Public, like the document. Every asset is served by this service (public/assets: the vendored
 * Scalar bundle and the script that starts it), and the page's Content-Security-Policy keeps
 * every request on this origin: no CDN, no fonts, no telemetry (docs/api-reference.md).
 */
import type { Context } from "hono";

/**
 * Scalar's options. Its defaults load fonts from fonts.scalar.com, send telemetry, and offer an
 * "Ask AI" agent and an MCP generator that are Scalar's hosted services: all off.
 */
const CONFIGURATION = {
  sources: [{ url: "/api/v1/openapi.json", title: "CI Test Analytics API", slug: "api" }],
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  // Its toolbar (shown on localhost by default) offers sharing and deploying through scalar.com.
  showToolbar: "never",
  showDeveloperTools: "never",
  mcp: { disabled: true },
  hideClientButton: false,
  // Requests from "Try it" go straight to this origin (same origin, no proxy.scalar.com).
  proxyUrl: "",
  theme: "default",
  // The system's fonts, named outright since Scalar's own (Inter) are not loaded.
  customCss:
    ":root { --scalar-font: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; --scalar-font-code: ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace; }",
  metaData: { title: "CI Test Analytics API reference" },
};

/** `script-src 'self'`: no inline script; styles are Scalar's own (inline style attributes). */
const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join("; ");

// JSON inside a script element: `<` is escaped so the text cannot close the element.
const configurationJson = JSON.stringify(CONFIGURATION).replace(/</g, "\\u003c");

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>CI Test Analytics API reference</title>
    <link rel="icon" href="data:," />
  </head>
  <body>
    <noscript>This reference needs JavaScript. The OpenAPI document itself is at <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</noscript>
    <div id="reference"></div>
    <script id="reference-configuration" type="application/json">${configurationJson}</script>
    <script src="/assets/vendor/scalar/api-reference.js"></script>
    <script src="/assets/docs.js"></script>
  </body>
</html>
`;

export function docsPage(c: Context): Response {
  return c.html(PAGE, 200, { "content-security-policy": DOCS_CONTENT_SECURITY_POLICY, "cache-control": "public, max-age=300" });
}
