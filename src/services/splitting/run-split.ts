/**
 * A sharded run's split (docs/splitting.md, "The run's split"): the plan its key made (the plan's
 * key is the run key by default, both the CI's run id and job), each shard's items, and the items
 * of the plan that reported no results in the run: a shard that fell back to the deterministic
 * split while the others got the plan, or a shard that never reported, shows here.
 */
import { and, eq, sql } from "drizzle-orm";
import { splitPlans, testCases } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import type { Database } from "../../db/types";
import { SuffixMatcher } from "../../lib/split";
import type { RunRow } from "../tenancy/memberships";

/** Unreported items named per shard at most: the page shows the count beyond. */
const MISSING_NAMED = 50;

export type RunSplit = {
  key: string;
  by: "file" | "classname";
  shards: { shard: number; itemsCount: number; missing: string[]; missingCount: number }[];
  missingCount: number;
};

/** The run's split, or null when the run has no key, no plan was made for it, or it is not processed. */
export async function runSplitOf(db: Database, run: Pick<RunRow, "id" | "projectId" | "runKey" | "status">): Promise<RunSplit | null> {
  if (run.runKey === null || run.status !== "processed") return null;
  const [plan] = await db
    .select()
    .from(splitPlans)
    .where(and(eq(splitPlans.projectId, run.projectId), eq(splitPlans.key, run.runKey)))
    .limit(1);
  if (!plan) return null;
  const key = plan.by === "file" ? sql`file` : sql`classname`;
  const reported = await rowsOf<{ key: string }>(
    db.execute(sql`select distinct ${key} as key from ${testCases} where test_run_id = ${run.id} and ${key} is not null`),
  );
  const matcher = new SuffixMatcher(
    reported.map((r) => r.key),
    plan.by,
  );
  const shards = plan.shards.map((s, k) => {
    const missing = s.items.filter((item) => matcher.match(item) === undefined);
    return { shard: k + 1, itemsCount: s.items.length, missing: missing.slice(0, MISSING_NAMED), missingCount: missing.length };
  });
  return { key: plan.key, by: plan.by, shards, missingCount: shards.reduce((sum, s) => sum + s.missingCount, 0) };
}
