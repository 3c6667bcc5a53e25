/**
 * The JSON Schema side of the fuzz suite, over the service's own OpenAPI 3.1 documents: values
 * generated from a schema (valid ones, and the near misses a client sends by mistake), and
 * validation of real responses against the schema their operation declares. Validation uses
 * @cfworker/json-schema, which needs no code generation (`eval`), so the same code runs on Node
 * and inside workerd.
 */
import { Validator } from "@cfworker/json-schema";

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  [keyword: string]: unknown;
};

export type Components = { schemas?: Record<string, JsonSchema> };

/** A seeded source of choices: mulberry32 (src/lib/seeded-random.ts) with helpers. */
export class Choices {
  constructor(readonly next: () => number) {}
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(probability: number): boolean {
    return this.next() < probability;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  uuid(): string {
    const hex = () => this.int(0, 15).toString(16);
    const part = (n: number) => Array.from({ length: n }, hex).join("");
    return `${part(8)}-${part(4)}-4${part(3)}-${this.pick(["8", "9", "a", "b"])}${part(3)}-${part(12)}`;
  }
}

/** Strings a client might send anywhere a string goes: odd characters, odd lengths, odd meanings. */
export const ODD_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\u0007\u001b[31mred",
  "\ud800",
  "😀".repeat(3),
  "ñandú ü",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "../../etc/passwd",
  "%00",
  "null",
  "true",
  "-1",
  "0",
  "1e309",
  "x".repeat(300),
  "\u202etxt.exe",
  "__proto__",
];

/** The schema a `$ref` names, followed until it is not a reference. */
function resolve(schema: JsonSchema, components: Components): JsonSchema {
  let current = schema;
  for (let hops = 0; current.$ref && hops < 20; hops++) {
    const name = current.$ref.replace("#/components/schemas/", "");
    current = components.schemas?.[name] ?? {};
  }
  return current;
}

function typesOf(schema: JsonSchema): string[] {
  if (Array.isArray(schema.type)) return schema.type;
  if (typeof schema.type === "string") return [schema.type];
  if (schema.properties) return ["object"];
  if (schema.items) return ["array"];
  return ["string"];
}

function stringFor(schema: JsonSchema, choices: Choices, name: string): string {
  if (schema.format === "uuid") return choices.uuid();
  if (schema.format === "date-time" || name.endsWith("_at"))
    return new Date(Date.UTC(2026, choices.int(0, 11), choices.int(1, 28), choices.int(0, 23))).toISOString();
  // Anything that looks like a URL points at this machine's discard port: a webhook the fuzz
  // registers must never make a delivery leave loopback.
  if (schema.format === "uri" || /url$/.test(name))
    return choices.pick(["http://127.0.0.1:9/fuzz", "http://localhost:9/hook", "https://127.0.0.1:9/x"]);
  if (name === "time_zone") return choices.pick(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]);
  const max = Math.min(schema.maxLength ?? 24, 24);
  const min = Math.min(schema.minLength ?? 1, max);
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_ .";
  const length = choices.int(Math.max(min, 1), Math.max(max, 1));
  return (
    Array.from({ length }, () => choices.pick(alphabet.split("")))
      .join("")
      .trim() || "x"
  );
}

function numberFor(schema: JsonSchema, choices: Choices, integer: boolean): number {
  const low = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 0);
  const high = Math.min(
    schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : low + 1000),
    low + 100_000,
  );
  const value = low + choices.next() * (high - low);
  return integer ? Math.round(value) : value;
}

/** A value the schema accepts (as far as its keywords say; refinements in prose are not known here). */
export function valid(schema: JsonSchema, components: Components, choices: Choices, name = "", depth = 0): unknown {
  const s = resolve(schema, components);
  if (s.const !== undefined) return s.const;
  if (s.enum) return choices.pick(s.enum);
  const branches = s.oneOf ?? s.anyOf;
  if (branches?.length) return valid(choices.pick(branches), components, choices, name, depth);
  if (s.allOf?.length) {
    const merged: Record<string, unknown> = {};
    for (const part of s.allOf) Object.assign(merged, valid(part, components, choices, name, depth) as object);
    return merged;
  }
  const types = typesOf(s);
  const type =
    types.includes("null") && types.length > 1 && choices.chance(0.8)
      ? choices.pick(types.filter((t) => t !== "null"))
      : choices.pick(types);
  switch (type) {
    case "null":
      return null;
    case "boolean":
      return choices.chance(0.5);
    case "integer":
      return numberFor(s, choices, true);
    case "number":
      return numberFor(s, choices, false);
    case "array": {
      if (depth > 4) return [];
      const count = choices.int(s.minItems ?? 0, Math.min(s.maxItems ?? 3, 3));
      return Array.from({ length: count }, () => valid(s.items ?? {}, components, choices, name, depth + 1));
    }
    case "object": {
      const object: Record<string, unknown> = {};
      for (const [key, property] of Object.entries(s.properties ?? {})) {
        if (depth > 4 && !s.required?.includes(key)) continue;
        if (s.required?.includes(key) || choices.chance(0.5)) object[key] = valid(property, components, choices, key, depth + 1);
      }
      return object;
    }
    default:
      return stringFor(s, choices, name);
  }
}

/** A value that breaks the schema somewhere, or a valid one with something added. */
export function nearMiss(schema: JsonSchema, components: Components, choices: Choices): unknown {
  const base = valid(schema, components, choices);
  const s = resolve(schema, components);
  const wrongValues: unknown[] = [null, 0, -1, 1.5, 1e308, "", "x".repeat(70), true, [], {}, [1, "a"], ...ODD_STRINGS];
  if (typeof base !== "object" || base === null || Array.isArray(base)) return choices.pick(wrongValues);
  const object = { ...(base as Record<string, unknown>) };
  const keys = Object.keys(s.properties ?? {});
  switch (choices.int(0, 4)) {
    case 0:
      // A required field dropped.
      if (s.required?.length) delete object[choices.pick(s.required)];
      return object;
    case 1:
      // A field of the wrong type or out of range.
      if (keys.length) object[choices.pick(keys)] = choices.pick(wrongValues);
      return object;
    case 2:
      // Unknown fields, including the prototype's names.
      return { ...object, unknown_field: choices.pick(wrongValues), ["__proto__"]: { polluted: true }, constructor: { prototype: 1 } };
    case 3:
      // Every field a string too long for any limit.
      for (const key of keys) object[key] = "y".repeat(choices.pick([256, 2049, 10_001]));
      return object;
    default:
      // A bare value where an object goes.
      return choices.pick([[object], "text", 42, null, true]);
  }
}

/**
 * Every property an object schema names, through `$ref`, `allOf` and the branches of
 * `anyOf`/`oneOf`; `open` when some object branch allows others (or says nothing about them).
 */
function propertiesOf(schema: JsonSchema, components: Components, depth = 0): { properties: Record<string, JsonSchema>; open: boolean } {
  const s = resolve(schema, components);
  const parts = [...(s.allOf ?? []), ...(s.anyOf ?? []), ...(s.oneOf ?? [])];
  const objectCapable = s.type === undefined || typesOf(s).includes("object");
  const properties: Record<string, JsonSchema> = { ...(s.properties ?? {}) };
  let open =
    objectCapable && ((s.additionalProperties !== undefined && s.additionalProperties !== false) || (!s.properties && parts.length === 0));
  for (const part of depth < 10 ? parts : []) {
    const inner = propertiesOf(part, components, depth + 1);
    for (const [key, value] of Object.entries(inner.properties)) properties[key] ??= value;
    open ||= inner.open;
  }
  return { properties, open };
}

/** Fields of `value` its schema does not name: the documents never say `additionalProperties`, so the validator alone would let them pass. */
function undocumentedFields(schema: JsonSchema, value: unknown, components: Components, at = "#"): string[] {
  if (Array.isArray(value)) {
    const s = resolve(schema, components);
    const items = s.items ?? [...(s.anyOf ?? []), ...(s.oneOf ?? [])].map((b) => resolve(b, components)).find((b) => b.items)?.items;
    return items ? value.flatMap((item, i) => undocumentedFields(items, item, components, `${at}/${i}`)) : [];
  }
  if (typeof value !== "object" || value === null) return [];
  const { properties, open } = propertiesOf(schema, components);
  const problems: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    const property = properties[key];
    if (!property) {
      if (!open) problems.push(`${at}: field "${key}" is not in the document`);
      continue;
    }
    problems.push(...undocumentedFields(property, child, components, `${at}/${key}`));
  }
  return problems;
}

/** Validators by schema, against the document's components (refs like `#/components/schemas/X`). */
export class ResponseValidators {
  readonly #cache = new Map<unknown, Validator>();
  constructor(private readonly components: Components) {}
  /** Problems of `value` against `schema` (empty when valid), as JSON pointers with messages. */
  check(schema: JsonSchema, value: unknown): string[] {
    let validator = this.#cache.get(schema);
    if (!validator) {
      validator = new Validator({ components: this.components, ...schema } as never, "2020-12", false);
      this.#cache.set(schema, validator);
    }
    const result = validator.validate(value);
    const errors = result.valid
      ? []
      : result.errors
          .filter((e) => e.keyword !== "$ref" && !e.error.startsWith("A subschema"))
          .map((e) => `${e.instanceLocation}: ${e.error}`);
    return [...errors, ...undocumentedFields(schema, value, this.components)];
  }
}
