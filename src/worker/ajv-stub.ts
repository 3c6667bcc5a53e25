/**
 * Stands in for `ajv` and `ajv-formats` in the Worker bundle (wrangler.toml `[alias]`). The MCP
 * SDK's server imports its Ajv-based JSON Schema validator whether or not it is used; /mcp gives
 * the server a validator of its own (src/mcp/server.ts), and Ajv compiles validators with
 * `new Function`, which workerd refuses anyway. Without this, ~130 KiB of minified code that
 * could never run would ship with every Worker.
 */
export default class AjvUnavailable {
  constructor() {
    throw new Error("Ajv is not bundled in the Worker: pass the MCP server a jsonSchemaValidator.");
  }
}
