/**
 * The organization a queue message writes, for the edge cache's bracket (docs/edge-path.md,
 * "Edge-cached reads"): a run's (processing, auto-quarantine, the checks). Deliveries and e-mails
 * change nothing the edge caches. An upload's message names its organization; a run queued
 * without one (the stalled-work sweep, a run's completion) is looked up, one statement.
 */
import { sql } from "drizzle-orm";
import { rowsOf } from "../db/rows";
import type { Database } from "../db/types";
import type { QueueMessage } from "../ingest/run-queue";

export async function organizationOfQueuedMessage(db: Database, message: QueueMessage): Promise<string | null> {
  if (!("testRunId" in message)) return null;
  if (message.organizationId) return message.organizationId;
  const [row] = await rowsOf<{ organization_id: string }>(
    db.execute(sql`select p.organization_id from test_runs r join projects p on p.id = r.project_id where r.id = ${message.testRunId}`),
  );
  return row?.organization_id ?? null;
}
