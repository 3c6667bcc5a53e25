/**
 * /mcp on the Worker: the SDK's client talks to the Worker's fetch (SELF), through its Neon
 * driver and the API key's Durable Object. The tools themselves are tested on Node
 * (test/mcp/server.test.ts); here, that the same server runs in workerd.
 */
import { SELF } from "cloudflare:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
// Ajv compiles with `new Function`, which workerd refuses: the client checks output schemas with this one.
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

async function connect(key: string) {
  const transport = new StreamableHTTPClientTransport(new URL("http://worker.test/mcp"), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
    fetch: (input, init) => SELF.fetch(input, init),
  });
  const client = new Client({ name: "worker-test", version: "1.0.0" }, { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
  await client.connect(transport);
  return client;
}

describe("/mcp on the Worker", () => {
  it("initializes, lists the tools and answers a tool call as the REST API does", async () => {
    const { organization, apiKey } = await h.newOrganization("Worker MCP");
    const { project } = await h.newProject(organization.id, "edge");
    h.clock.advance(1_000);
    await h.newRun(project.id, {
      meta: { branch: "main", commitSha: "abc" },
      report: {
        suites: [
          {
            name: "s",
            cases: [
              { name: "works", status: "passed", durationMs: 3 },
              { name: "breaks", status: "failed", durationMs: 4, failureMessage: "nope" },
            ],
          },
        ],
      },
    });

    const client = await connect(apiKey);
    try {
      expect(client.getServerVersion()).toMatchObject({ name: "ci-test-analytics" });
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(12);
      expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["list_test_runs", "list_run_failures"]));

      const result = (await client.callTool({ name: "list_tests", arguments: { project_id: project.id } })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      const rest = await h.get(`/api/v1/projects/${project.id}/tests`, apiKey);
      expect(result.structuredContent).toEqual(rest.body);
      expect((result.content[0] as { text: string }).text).toMatch(/^2 tests, most failing first/);

      const run = (await client.callTool({ name: "get_test_run", arguments: { project_id: project.id, number: 1 } })) as CallToolResult;
      expect(run.structuredContent).toMatchObject({
        number: 1,
        result: "tests_failed",
        comparison: { base_choice: "none", verdict_counts: { new: 1 } },
        failure_groups: [{ message: "nope", run_occurrences: 1 }],
      });

      const failures = (await client.callTool({
        name: "list_run_failures",
        arguments: { project_id: project.id, number: 1 },
      })) as CallToolResult;
      expect(failures.structuredContent).toMatchObject({
        data: [{ name: "breaks", verdict: "new", reason: "no base run to compare with" }],
      });

      const missing = (await client.callTool({ name: "get_test", arguments: { test_id: crypto.randomUUID() } })) as CallToolResult;
      expect(missing).toMatchObject({ isError: true, content: [{ type: "text", text: "not_found: Test not found." }] });
    } finally {
      await client.close();
    }
  });

  it("401 in the envelope without a key; RateLimit headers from the key's Durable Object with one", async () => {
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    const refused = await SELF.fetch("http://worker.test/mcp", { method: "POST", headers, body });
    expect(refused.status).toBe(401);
    expect((await refused.json<{ error: { code: string } }>()).error.code).toBe("unauthorized");

    const { apiKey } = await h.newOrganization("Worker MCP 2");
    const admitted = await SELF.fetch("http://worker.test/mcp", {
      method: "POST",
      headers: { ...headers, authorization: `Bearer ${apiKey}` },
      body,
    });
    expect(admitted.status).toBe(200);
    expect(admitted.headers.get("ratelimit")).toMatch(/^"default";r=\d+;t=\d+$/);
    expect(await admitted.json()).toMatchObject({ id: 1, result: { serverInfo: { name: "ci-test-analytics" } } });
  });
});
