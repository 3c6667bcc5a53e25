/**
 * `/mcp`: the Model Context Protocol server (Streamable HTTP transport, JSON responses), on
 * both runtimes through the one app. Stateless: every POST gets its own MCP server and transport,
 * built from the request and dropped with it, with no session id, so any process or Worker
 * isolate can answer any request and nothing outlives a request (docs/mcp.md).
 *
 * Admission is /api/v1's: the organization's API key as a Bearer token, then the same per-key
 * rate limit (every HTTP request to /mcp is one request of quota, so one tool call is one), with
 * 401, 429 and the RateLimit headers in the API's envelope and form. A tool's failure is an MCP
 * tool error (`isError`) whose text starts with the API's error code and message.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool as ToolDefinition,
} from "@modelcontextprotocol/sdk/types.js";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { Hono } from "hono";
import type { AppConfig, AppEnv } from "../app-env";
import type { KeyIdCache } from "../auth/key-gate";
import { isDatabaseUnavailable } from "../db/errors";
import { ApiError, describeError } from "../lib/errors";
import { jsonTextDepth } from "../lib/json-depth";
import type { CursorCodec } from "../lib/pagination";
import { authenticateApiKey } from "../middleware/auth";
import { API_BODY_LIMIT_BYTES, API_JSON_MAX_DEPTH, limitBody } from "../middleware/json-body";
import { toJsonSchema } from "./json-schema";
import { TOOLS, type Tool, type ToolContext, readArguments } from "./tools";

const SERVER_INFO = { name: "ci-test-analytics", title: "CI test analytics", version: "1.0.0" };

const INSTRUCTIONS =
  "CI test analytics for one organization: its projects, their tests (health: healthy, flaky, broken; failure and flip rates; owners; quarantine), test runs and alerts. Start with list_projects for project ids. Lists return {data, pagination}: pass pagination.next_cursor as cursor for the next page. Ids are UUIDs; a run is named by its project and number.";

/**
 * The server never validates data against a JSON Schema of its own (it asks clients for no
 * elicitation), so the SDK's default Ajv validator, built per server and thus per request, is
 * replaced by one that refuses.
 */
const noSchemaValidation: jsonSchemaValidator = {
  getValidator: () => () => ({ valid: false, data: undefined, errorMessage: "This server validates no client data against a JSON Schema." }),
};

/** The tools as `tools/list` shows them; their JSON Schemas are written once per app. */
function toolDefinitions(tools: Tool[]): ToolDefinition[] {
  return tools.map((tool) => {
    const input = toJsonSchema(tool.body ? tool.args.extend(inputShapeOf(tool)) : tool.args, "input");
    // Unknown arguments are refused (readArguments), and the schema says so.
    input.additionalProperties = false;
    return {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: input as ToolDefinition["inputSchema"],
      outputSchema: toJsonSchema(tool.output, "output") as ToolDefinition["outputSchema"],
      annotations: { title: tool.title, ...tool.annotations },
    };
  });
}

/** The body schema's fields, for the input JSON Schema (its refinements, e.g. quarantine's one-of, are checked by readArguments). */
function inputShapeOf(tool: Tool) {
  return (tool.body as unknown as { shape: Record<string, never> }).shape;
}

/** `code: message` (and one line per detail): what the caller reads in an MCP tool error. */
function toolError(error: ApiError): CallToolResult {
  const details = error.details?.map((detail) => `\n- ${detail.field}: ${detail.message}`).join("") ?? "";
  return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}${details}` }] };
}

/** What app.ts's error handler would answer for an error that is not an ApiError. */
function unexpected(error: unknown, context: { logger: ToolContext["logger"]; requestId: string; tool: string }): ApiError {
  if (isDatabaseUnavailable(error)) {
    context.logger.error("database unavailable", { requestId: context.requestId, error: describeError(error) });
    return new ApiError("service_unavailable", "The database is momentarily unavailable; retry shortly.");
  }
  context.logger.error("unhandled error", { requestId: context.requestId, path: "/mcp", tool: context.tool, error: describeError(error) });
  return new ApiError("internal_error", "An unexpected error occurred. Quote the Request-Id header when reporting it.");
}

export async function callTool(tool: Tool, rawArguments: unknown, context: ToolContext & { requestId: string }): Promise<CallToolResult> {
  try {
    const { args, body } = readArguments(tool, rawArguments);
    const result = await tool.run(context, args as never, body as never);
    return { structuredContent: result as Record<string, unknown>, content: [{ type: "text", text: tool.summarize(result, args as never) }] };
  } catch (error) {
    return toolError(error instanceof ApiError ? error : unexpected(error, { ...context, tool: tool.name }));
  }
}

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
    throw new ApiError("invalid_request", "JSON-RPC batches are not accepted: send one message per request (each request, and so each tool call, is one request of the rate limit).");
  }
  return message;
}

export type McpParts = { codec: CursorCodec; keyIdCache: KeyIdCache };

export function createMcpApi(config: AppConfig, parts: McpParts) {
  const api = new Hono<AppEnv>();
  const tools = new Map(TOOLS.map((tool) => [tool.name, tool]));
  const definitions = toolDefinitions(TOOLS);

  api.use("*", authenticateApiKey({ webAppUrl: config.webAppUrl, keyIdCache: parts.keyIdCache }));

  api.post("/", limitBody(API_BODY_LIMIT_BYTES), async (c) => {
    const message = readMessage(await c.req.text());
    const context: ToolContext & { requestId: string } = {
      scope: c.get("scope"),
      codec: parts.codec,
      queue: c.env.runQueue,
      logger: c.env.logger,
      requestId: c.get("requestId"),
    };
    const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: noSchemaValidation });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: definitions }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const tool = tools.get(request.params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}. Call tools/list for the tools.`);
      return callTool(tool, request.params.arguments, context);
    });
    // Stateless (no session ids) with JSON answers: the answer is complete when the handler returns.
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(c.req.raw, { parsedBody: message });
    } finally {
      await server.close();
    }
  });

  // No server-to-client stream (GET) and no session to end (DELETE) in stateless mode.
  api.all("/", () => {
    throw new ApiError("method_not_allowed", "This path supports POST only: this MCP server is stateless (no SSE stream, no session to delete).", { headers: { Allow: "POST" } });
  });
  return api;
}
