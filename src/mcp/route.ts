/**
 * `/mcp`: the Model Context Protocol server for agents (src/mcp/server.ts), on both runtimes
 * through the one app. Admission is /api/v1's: the organization's API key as a Bearer token, then
 * the same per-key rate limit (every HTTP request to /mcp is one request of quota, so one tool
 * call is one), with 401, 429 and the RateLimit headers in the API's envelope and form. What is
 * refused before the MCP server reads it (no key, over the limit, a body that is not one JSON
 * message, GET and DELETE) is refused in the envelope (docs/mcp.md).
 */
import { Hono } from "hono";
import type { AppConfig, AppEnv } from "../app-env";
import type { KeyIdCache } from "../auth/key-gate";
import { ApiError } from "../lib/errors";
import { jsonTextDepth } from "../lib/json-depth";
import type { CursorCodec } from "../lib/pagination";
import { handleMcpMessage, mcpToolDefinitions } from "./server";
import { authenticateApiKey } from "../middleware/auth";
import { API_BODY_LIMIT_BYTES, API_JSON_MAX_DEPTH, limitBody } from "../middleware/json-body";

/** Reads the JSON-RPC message with /api/v1's body rules; a batch is refused (see docs/mcp.md). */
function readMessage(text: string): unknown {
  if (jsonTextDepth(text, API_JSON_MAX_DEPTH) > API_JSON_MAX_DEPTH) {
    throw new ApiError("invalid_request", `The request body nests arrays and objects deeper than ${API_JSON_MAX_DEPTH} levels.`);
  }
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid JSON: send one JSON-RPC message.");
  }
  if (Array.isArray(message)) {
    throw new ApiError(
      "invalid_request",
      "JSON-RPC batches are not accepted: send one message per request (each request, and so each tool call, is one request of the rate limit).",
    );
  }
  return message;
}

export type McpParts = { codec: CursorCodec; keyIdCache: KeyIdCache };

export function createMcpApi(config: AppConfig, parts: McpParts) {
  const api = new Hono<AppEnv>();
  const definitions = mcpToolDefinitions();

  api.use("*", authenticateApiKey({ webAppUrl: config.webAppUrl, keyIdCache: parts.keyIdCache }));

  api.post("/", limitBody(API_BODY_LIMIT_BYTES), async (c) => {
    const message = readMessage(await c.req.text());
    return handleMcpMessage(c.req.raw, message, {
      scope: c.get("scope"),
      apiKeyId: c.get("auth").apiKeyId,
      codec: parts.codec,
      queue: c.env.runQueue,
      logger: c.env.logger,
      requestId: c.get("requestId"),
      definitions,
    });
  });

  // No server-to-client stream (GET) and no session to end (DELETE) in stateless mode.
  api.all("/", () => {
    throw new ApiError(
      "method_not_allowed",
      "This path supports POST only: this MCP server is stateless (no SSE stream, no session to delete).",
      { headers: { Allow: "POST" } },
    );
  });
  return api;
}
