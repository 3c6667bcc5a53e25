import { getTableColumns } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";

/** Rows of a raw statement, whichever driver ran it (node-postgres, Neon and PGlite answer `{rows}`). */
export async function rowsOf<T>(result: Promise<unknown>): Promise<T[]> {
  const value = (await result) as { rows?: T[] } | T[];
  return Array.isArray(value) ? value : (value.rows ?? []);
}

/**
 * A row of `table` as row_to_json writes it (snake_case names, timestamps as text; as a string or
 * already parsed, depending on the driver), as Drizzle's select would return it: for statements
 * that return rows of several tables, or rows with other work, in one round trip.
 */
export function rowFromJson<T extends PgTable>(table: T, value: unknown): T["$inferSelect"] {
  const json = (typeof value === "string" ? JSON.parse(value) : value) as Record<string, unknown>;
  const row: Record<string, unknown> = {};
  for (const [property, column] of Object.entries(getTableColumns(table))) {
    const raw = json[column.name];
    row[property] = raw === null || raw === undefined ? null : column.mapFromDriverValue(raw);
  }
  return row as T["$inferSelect"];
}
