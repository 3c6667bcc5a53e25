/**
 * A sharded run's split (docs/splitting.md, "The run's split"): the plan its key made (the plan's
 * key is the run key by default, both the CI's run id and job), each shard's items, and the items
 * of the plan that reported no results in the run: a shard that fell back to the deterministic
 * split while the others got the plan, or a shard that never reported, shows here.
 *
 * Recorded once, when the run is processed (recordRunSplit, from the processing's after-hook): the
 * plan is copied onto the run, since plans expire after 24 hours and a new plan of the key replaces
 * an expired one; the page then reads one row (runSplitOf), never the run's cases.
 */
import { and, eq, gt, sql } from "drizzle-orm";
import { runSplits, splitPlans, testCases } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import type { Database } from "../../db/types";
import type { Clock } from "../../lib/clock";
import { SuffixMatcher } from "../../lib/split";

export type RunSplit = {
  key: string;
  by: "file" | "classname";
  shards: { shard: number; items: string[]; missing: string[] }[];
  missingCount: number;
};

type SplitRun = { id: number; projectId: string; runKey: string | null };

/**
 * Copies the plan of the run's key, if one is in force, onto the run with each shard's items that
 * reported nothing; again for a run processed again (the row is replaced). One read of the run's
 * distinct files or classes.
 */
export async function recordRunSplit(deps: { db: Database; clock: Clock }, run: SplitRun): Promise<void> {
  if (run.runKey === null) return;
  const now = deps.clock.now();
  const [plan] = await deps.db
    .select({ key: splitPlans.key, by: splitPlans.by, shards: splitPlans.shards })
    .from(splitPlans)
    .where(and(eq(splitPlans.projectId, run.projectId), eq(splitPlans.key, run.runKey), gt(splitPlans.expiresAt, now)))
    .limit(1);
  if (!plan) return;
  const column = plan.by === "file" ? sql`file` : sql`classname`;
  const reported = await rowsOf<{ key: string }>(
    deps.db.execute(sql`select distinct ${column} as key from ${testCases} where test_run_id = ${run.id} and ${column} is not null`),
  );
  const matcher = new SuffixMatcher(
    reported.map((r) => r.key),
    plan.by,
  );
  const shards = plan.shards.map((s) => ({ items: s.items, missing: s.items.filter((item) => matcher.match(item) === undefined) }));
  const row = { key: plan.key, by: plan.by, shards, missingCount: shards.reduce((sum, s) => sum + s.missing.length, 0), recordedAt: now };
  await deps.db
    .insert(runSplits)
    .values({ testRunId: run.id, ...row })
    .onConflictDoUpdate({ target: runSplits.testRunId, set: row });
}

/** The run's recorded split, or null (no key, no plan in force when it was processed, or not processed yet). */
export async function runSplitOf(db: Database, run: { id: number; runKey: string | null }): Promise<RunSplit | null> {
  // Only a run with a key has a split: the others cost no statement.
  if (run.runKey === null) return null;
  const [row] = await db.select().from(runSplits).where(eq(runSplits.testRunId, run.id)).limit(1);
  if (!row) return null;
  return {
    key: row.key,
    by: row.by,
    shards: row.shards.map((s, k) => ({ shard: k + 1, items: s.items, missing: s.missing })),
    missingCount: row.missingCount,
  };
}
