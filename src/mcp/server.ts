/**
 * The Model Context Protocol server behind `/mcp` (src/mcp/route.ts): the tools' list and calls
 * over the SDK's Streamable HTTP transport with JSON answers. Stateless: each request gets its
 * own server and transport, with no session id, so any process or Worker isolate can answer any
 * request and nothing outlives a request (docs/mcp.md). A tool's failure is an MCP tool error
 * (`isError`) whose text starts with the API's error code and message.
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
import { isDatabaseUnavailable } from "../db/errors";
import { ApiError, describeError } from "../lib/errors";
import { toJsonSchema } from "./json-schema";
import { TOOLS, type Tool, type ToolContext, readArguments } from "./tools";

const SERVER_INFO = { name: "ci-test-analytics", title: "CI test analytics", version: "1.0.0" };

const INSTRUCTIONS =
  "CI test analytics for one organization: its projects, their tests (health: healthy, flaky, broken; failure and flip rates; owners; quarantine), test runs and alerts. Start with list_projects for project ids. Lists return {data, pagination}: pass pagination.next_cursor as cursor for the next page. Ids are UUIDs; a run is named by its project and number (list_test_runs finds it by branch, commit or result). Is a run's failure caused by the change, already failing on the default branch, flaky or the infrastructure? list_run_failures gives each failure's verdict and reason. What flakiness costs a project in test time, and which tests cost most: get_flakiness_cost.";

/**
 * The server never validates data against a JSON Schema of its own (it asks clients for no
 * elicitation), so the SDK's default Ajv validator, built per server and thus per request, is
 * replaced by one that refuses.
 */
const noSchemaValidation: jsonSchemaValidator = {
  getValidator: () => () => ({
    valid: false,
    data: undefined,
    errorMessage: "This server validates no client data against a JSON Schema.",
  }),
};

/** The tools as `tools/list` shows them; their JSON Schemas are written once per app. */
function toolDefinitions(tools: Tool[]): ToolDefinition[] {
  return tools.map((tool) => {
    // One object of every argument; the body's refinements (quarantine's one-of) have no JSON Schema and are checked by readArguments.
    const input = toJsonSchema(tool.body ? tool.args.extend(tool.body.shape) : tool.args, "input");
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

/**
 * `code: message` (and one line per detail): what the caller reads in an MCP tool error. An
 * internal error's message asks for the Request-Id header, which an agent's user may never see,
 * so the id follows on its own line.
 */
function toolError(error: ApiError, requestId: string): CallToolResult {
  const details = error.details?.map((detail) => `\n- ${detail.field}: ${detail.message}`).join("") ?? "";
  const reference = error.code === "internal_error" ? `\nRequest-Id: ${requestId}` : "";
  return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}${details}${reference}` }] };
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

async function callTool(tool: Tool, rawArguments: unknown, context: ToolContext & { requestId: string }): Promise<CallToolResult> {
  try {
    const { args, body } = readArguments(tool, rawArguments);
    const result = await tool.run(context, args as never, body as never);
    return {
      structuredContent: result as Record<string, unknown>,
      content: [{ type: "text", text: tool.summarize(result, args as never) }],
    };
  } catch (error) {
    return toolError(error instanceof ApiError ? error : unexpected(error, { ...context, tool: tool.name }), context.requestId);
  }
}

/** The tools' definitions, written once per app: handleMcpMessage hands them out on every tools/list. */
export function mcpToolDefinitions(): ToolDefinition[] {
  return toolDefinitions(TOOLS);
}

const TOOLS_BY_NAME = new Map(TOOLS.map((tool) => [tool.name, tool]));

/**
 * Answers one JSON-RPC message (already read from `request`) with a server and a transport of
 * its own: the transport checks the request's Accept and Content-Type and the protocol version,
 * the server answers initialize, ping, tools/list and tools/call.
 */
export async function handleMcpMessage(
  request: Request,
  message: unknown,
  context: ToolContext & { requestId: string; definitions: ToolDefinition[] },
): Promise<Response> {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: noSchemaValidation,
  });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: context.definitions }));
  server.setRequestHandler(CallToolRequestSchema, (call) => {
    const tool = TOOLS_BY_NAME.get(call.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${call.params.name}. Call tools/list for the tools.`);
    return callTool(tool, call.params.arguments, context);
  });
  // Stateless (no session ids) with JSON answers: the answer is complete when the handler returns.
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, { parsedBody: message });
  } finally {
    await server.close();
  }
}
