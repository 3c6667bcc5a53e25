/**
 * EXPLAIN ANALYZE of the exact SQL the list endpoints run (built by the same Drizzle calls, see
 * bench/bare-app.ts), summarized as one line per query, so the report shows whether each keyset
 * page walks its `(…, ts DESC, id DESC)` index or sorts every matching row.
 */
import type pg from "pg";
import type { Database } from "../src/db/types";
import type { KeysetPosition } from "../src/lib/pagination";
import { alertEventsQuery, alertsQuery, projectsQuery } from "./bare-app";

type PlanNode = {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
};

export type PlanSummary = { query: string; plan: string; sorts: boolean; executionMs: number };

function describe(node: PlanNode): string {
  let label = node["Node Type"];
  if (node["Index Name"]) label += ` using ${node["Index Name"]}`;
  else if (node["Relation Name"]) label += ` on ${node["Relation Name"]}`;
  const children = node.Plans ?? [];
  if (children.length === 1) return `${label} → ${describe(children[0]!)}`;
  if (children.length > 1) return `${label} (${children.map(describe).join("; ")})`;
  return label;
}

function hasSort(node: PlanNode): boolean {
  return node["Node Type"].includes("Sort") || (node.Plans ?? []).some(hasSort);
}

async function explain(client: pg.Client, name: string, query: { toSQL(): { sql: string; params: unknown[] } }): Promise<PlanSummary> {
  const { sql, params } = query.toSQL();
  let result: { Plan: PlanNode; "Execution Time": number } | undefined;
  // First runs warm the caches; the last one is reported.
  for (let i = 0; i < 3; i++) {
    const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode; "Execution Time": number }] }>(
      `explain (analyze, format json) ${sql}`,
      params,
    );
    result = rows[0]!["QUERY PLAN"][0];
  }
  return { query: name, plan: describe(result!.Plan), sorts: hasSort(result!.Plan), executionMs: result!["Execution Time"] };
}

export async function explainListQueries(
  client: pg.Client,
  db: Database,
  ids: { organizationId: string; alertId: string; deepPosition: KeysetPosition; deepRows: number },
): Promise<PlanSummary[]> {
  return [
    await explain(client, "GET /projects (first page)", projectsQuery(db, ids.organizationId)),
    await explain(client, "GET /alerts (first page, status=active)", alertsQuery(db, ids.organizationId, new Date())),
    await explain(client, "GET /alerts/:id/events (first page)", alertEventsQuery(db, ids.alertId, null)),
    await explain(
      client,
      `GET /alerts/:id/events (after ${ids.deepRows.toLocaleString("en-US")} rows)`,
      alertEventsQuery(db, ids.alertId, ids.deepPosition),
    ),
  ];
}

/** Definitions of the keyset indexes as they exist in the benchmark database. */
export async function keysetIndexDefinitions(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ indexdef: string }>(
    `select indexdef from pg_indexes where schemaname = 'public' and indexname like '%keyset_idx' order by indexname`,
  );
  return rows.map((r) => r.indexdef.replace(/^CREATE INDEX (\S+) ON public\.(\S+) USING btree /, "$1 ON $2 "));
}
