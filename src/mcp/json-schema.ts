/**
 * The MCP tools' input and output JSON Schemas, from the Zod schemas of /api/v1. Zod writes the
 * JSON Schema; the descriptions and examples live in the schemas' OpenAPI metadata (`.openapi()`,
 * the same text as /api/v1/openapi.json), which Zod does not read, so they are copied in here.
 */
import { getOpenApiMetadata } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";

type JsonSchema = Record<string, unknown>;

/** `io: "input"` for arguments (what a caller may send), `"output"` for results (what comes back). */
export function toJsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const json = z.toJSONSchema(schema, {
    io,
    // Refinements (NUL checks, URL checks, the quarantine's one-of rule) have no JSON Schema: the Zod schema still applies them.
    unrepresentable: "any",
    override: ({ zodSchema, jsonSchema }) => {
      const metadata = getOpenApiMetadata(zodSchema as never) as { description?: string; example?: unknown; format?: string };
      if (metadata.description && jsonSchema.description === undefined) jsonSchema.description = metadata.description;
      if (metadata.example !== undefined && jsonSchema.examples === undefined) jsonSchema.examples = [metadata.example];
      if (metadata.format && jsonSchema.format === undefined && jsonSchema.type === "string") jsonSchema.format = metadata.format;
      // Zod's UUID pattern insists on an RFC 9562 version and variant; ids are any 8-4-4-4-12 hex, which `format: uuid` says.
      if (jsonSchema.format === "uuid") delete jsonSchema.pattern;
    },
  }) as JsonSchema;
  delete json.$schema;
  return json;
}
