/**
 * An organization's data version, what /api/v1's ETags are made of (docs/conditional-requests.md):
 * `data_version`, which the database adds one to at the commit of every transaction that changes
 * what the organization's GETs show (drizzle/0020_data_versions.sql), and the latest deadline
 * (a snooze's or a quarantine's end) that has passed, since those change what the GETs show by
 * the passing of time alone. Reading it is one index lookup; a conditional GET compares it
 * without running the list's query.
 *
 * A GET that will answer 200 reads it in its first statement (a column of that statement, see
 * `dataVersionFields`), before any row it shows: a tag never claims content newer than what the
 * answer holds, so a write racing the request costs at most one more 200, never a stale 304.
 */
import { type SQL, sql } from "drizzle-orm";
import { rowsOf } from "../../db/rows";
import type { Database } from "../../db/types";
import type { DataVersionSink, OrgScope } from "./context";

export type { DataVersionSink };

/**
 * The version as one text column: `<data_version>:<latest passed deadline, ms or empty>`; null for
 * no organization. A PL/pgSQL function (drizzle/0042_organization_data_version_function.sql), so
 * that its two lookups are planned once per session rather than with every GET's statement.
 */
function dataVersionSql(organizationId: string, asOf: Date): SQL<string | null> {
  return sql<string | null>`organization_data_version(${organizationId}::uuid, ${asOf.toISOString()}::timestamptz)`;
}

/** The one statement of a conditional GET's check. */
export async function readDataVersion(db: Database, organizationId: string, asOf: Date): Promise<string | null> {
  const [row] = await rowsOf<{ version: string | null }>(db.execute(sql`select ${dataVersionSql(organizationId, asOf)} as version`));
  return row?.version ?? null;
}

/** Whether this request still wants the version from its next statement. */
function wantsVersion(scope: OrgScope): scope is OrgScope & { dataVersion: DataVersionSink } {
  return scope.dataVersion !== undefined && scope.dataVersion.value === undefined;
}

/** The column to add to a GET's first statement, or nothing when the request needs no version (or has it). */
function dataVersionFields(scope: OrgScope): { dataVersion?: SQL<string | null> } {
  return wantsVersion(scope) ? { dataVersion: dataVersionSql(scope.organizationId, scope.dataVersion.asOf) } : {};
}

/**
 * Runs a GET's first statement with the version column (when wanted) and keeps the version. When
 * the statement finds no row there is no column to read: a lookup whose absence is a 404
 * (`emptyIs: "not_found"`) needs none; a list that is empty reads the version on its own, then
 * runs again, so that the version still comes before the content it tags.
 */
export async function selectWithDataVersion<Row>(
  scope: OrgScope,
  run: (fields: { dataVersion?: SQL<string | null> }) => Promise<Row[]>,
  emptyIs: "not_found" | "empty_list",
): Promise<Row[]> {
  if (!wantsVersion(scope)) return run({});
  const sink = scope.dataVersion;
  const rows = await run(dataVersionFields(scope));
  if (rows.length > 0) {
    sink.value = (rows[0] as { dataVersion?: string | null }).dataVersion ?? null;
    return rows;
  }
  if (emptyIs === "not_found") return rows;
  sink.value = await readDataVersion(scope.db, scope.organizationId, sink.asOf);
  return run({});
}
