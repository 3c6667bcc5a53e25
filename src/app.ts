/**
 * createApp(config) builds the one Hono app from what lives as long as a process or isolate.
 * A request's dependencies (database, counters, queue, clock, logger) come with the request:
 * the runtime's entry passes them as `app.fetch(request, deps)` and handlers read `c.env`.
 * Nothing in here reads process.env or Worker bindings.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { docsPage } from "./routes/docs-page";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AppConfig, AppEnv } from "./app-env";
import { KeyIdCache } from "./auth/key-gate";
import { isDatabaseUnavailable } from "./db/errors";
import { ApiError, describeError } from "./lib/errors";
import { consoleLogger } from "./lib/logger";
import { CursorCodec } from "./lib/pagination";
import { createAdminApi } from "./routes/admin";
import { createHealthRoutes } from "./routes/health";
import { createUploadsApi, uploadsDocumentPart } from "./routes/uploads";
import { createUploaderRoutes } from "./routes/uploader";
import { createV1Api } from "./routes/v1";
import { createWebApp } from "./web";
import { browserNotFound } from "./web/not-found";
import { createMcpApi } from "./mcp/route";

export type { AppConfig, RequestDeps } from "./app-env";

const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

function errorResponse(c: Context<AppEnv>, error: ApiError): Response {
  const response = c.json(error.toBody(), error.status);
  for (const [name, value] of Object.entries(error.headers ?? {})) response.headers.set(name, value);
  return response;
}

/** Maps Hono's own exceptions (bad JSON in a validator, body limits…) into the envelope. */
function fromHttpException(error: HTTPException): ApiError {
  switch (error.status) {
    case 400:
      return new ApiError("invalid_request", error.message || "The request is invalid.");
    case 401:
      return new ApiError("unauthorized", "Authentication is required.");
    case 404:
      return new ApiError("not_found", "Not found.");
    case 413:
      return new ApiError("payload_too_large", "The request body is too large.");
    case 415:
      return new ApiError("unsupported_media_type", error.message || "Unsupported media type.");
    default:
      return new ApiError(
        error.status >= 500 ? "internal_error" : "invalid_request",
        error.status >= 500 ? "An unexpected error occurred." : error.message,
      );
  }
}

export function createApp(config: AppConfig) {
  const app = new OpenAPIHono<AppEnv>();
  const codec = new CursorCodec(config.cursorSecret);
  const keyIdCache = config.keyIdCache ?? new KeyIdCache();
  /** The request's logger; the console's when a request came without its dependencies. */
  const loggerOf = (c: Context<AppEnv>) => c.env?.logger ?? consoleLogger;

  app.use("*", async (c, next) => {
    const requestId = crypto.randomUUID();
    c.set("requestId", requestId);
    await next();
    c.res.headers.set("Request-Id", requestId);
    c.res.headers.set("X-Content-Type-Options", "nosniff");
    // A route that can be revalidated (an ETag) says so itself; every other answer is not to be stored.
    if (!c.res.headers.has("Cache-Control")) c.res.headers.set("Cache-Control", "no-store");
    const type = c.res.headers.get("content-type");
    if (type?.toLowerCase().startsWith("application/json")) c.res.headers.set("content-type", JSON_CONTENT_TYPE);
  });

  // A request without its dependencies is a wiring mistake of the runtime's entry, not a client's.
  app.use("*", async (c, next) => {
    if (!c.env?.db) throw new Error("The request came without its dependencies: call app.fetch(request, deps).");
    await next();
  });

  // Liveness and readiness probes (src/routes/health.ts): public, never rate limited.
  app.route("/", createHealthRoutes());
  const uploadsApi = createUploadsApi(config);
  app.route(
    "/api/v1",
    createV1Api(config, { codec, keyIdCache, uploadsDocument: () => uploadsDocumentPart(uploadsApi, config.publicBaseUrl) }),
  );
  app.route("/admin/v1", createAdminApi(config));
  app.route("/uploads/v1", uploadsApi);
  app.get("/docs", docsPage);
  // The uploader CLI this version was built with, public: what the pages' upload command runs (src/routes/uploader.ts).
  app.route("/", createUploaderRoutes());
  // The MCP server for agents: the same key, rate limit and services as /api/v1 (docs/mcp.md).
  app.route("/mcp", createMcpApi(config, { codec, keyIdCache }));
  // The web app's pages, at the root of the origin (docs/web-app.md); its routes are page paths only.
  app.route("/", createWebApp(config));

  // A browser asking for a page gets the pages' HTML 404; API clients the JSON envelope (docs/web-app.md).
  const pageNotFoundFor = browserNotFound(config);
  app.notFound(
    (c) =>
      pageNotFoundFor(c) ?? errorResponse(c, new ApiError("not_found", `No route for ${c.req.method} ${new URL(c.req.url).pathname}.`)),
  );

  app.onError((error, c) => {
    if (error instanceof ApiError) return errorResponse(c, error);
    if (error instanceof HTTPException) return errorResponse(c, fromHttpException(error));
    // The database cannot take the request right now (src/db/errors.ts): retryable, so 503 rather than 500.
    if (isDatabaseUnavailable(error)) {
      loggerOf(c).error("database unavailable", { requestId: c.get("requestId"), error: describeError(error) });
      return errorResponse(
        c,
        new ApiError("service_unavailable", "The database is momentarily unavailable; retry shortly.", { headers: { "Retry-After": "1" } }),
      );
    }
    // Details go to the log only, never to the client. The log never includes request headers.
    loggerOf(c).error("unhandled error", {
      requestId: c.get("requestId"),
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      error: describeError(error),
    });
    return errorResponse(c, new ApiError("internal_error", "An unexpected error occurred. Quote the Request-Id header when reporting it."));
  });

  return app;
}

export type App = ReturnType<typeof createApp>;
