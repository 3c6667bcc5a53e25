/**
 * Split plans (docs/splitting.md): `POST /uploads/v1/split_plans` makes a plan once per build key
 * (longest-processing-time-first over the timings) and answers every later call with that key with
 * the same plan until it expires, so every shard of a build runs its part of one split even when
 * the history changes between their calls. Plain functions over the database, scoped by project.
 */
import { and, eq, gt, lte } from "drizzle-orm";
import { splitPlans } from "../../db/schema";
import type { Database } from "../../db/types";
import type { Clock } from "../../lib/clock";
import { ApiError } from "../../lib/errors";
import { type SplitBy, SuffixMatcher, compareStrings, planShards } from "../../lib/split";
import { readTimings, timingRuns } from "./timings";

/** A plan is answered for this long after it was made: longer than any build, short enough to forget. */
const PLAN_TTL_MS = 24 * 3_600_000;
/** Items named per side in a 409's message: enough to see the cause. */
const NAMED_DIFFERENCES = 5;

export type SplitPlanInput = { projectId: string; key: string; shards: number; by: SplitBy; variant: string; items: string[] };
type PlanRow = typeof splitPlans.$inferSelect;

export type SplitPlan = {
  key: string;
  by: SplitBy;
  variant: string;
  shards_count: number;
  items_count: number;
  unknown_items_count: number;
  created: boolean;
  created_at: string;
  expires_at: string;
  shards: { shard: number; items: string[]; expected_ms: number }[];
};

/** The plan for the input's key: the stored one (its items must be the input's), else a new one. */
export async function splitPlanFor(deps: { db: Database; clock: Clock }, input: SplitPlanInput): Promise<SplitPlan> {
  const { db, clock } = deps;
  const items = [...new Set(input.items)].sort(compareStrings);
  const hash = await itemsHash(items);
  const now = clock.now();
  const stored = await storedPlan(db, input.projectId, input.key, now);
  if (stored) return presentPlan(checkSamePlan(stored, input, items, hash), false);
  const made = await makePlan(db, input, items);
  const [inserted] = await db
    .insert(splitPlans)
    .values({
      ...made,
      projectId: input.projectId,
      key: input.key,
      itemsHash: hash,
      createdAt: now,
      expiresAt: new Date(now.getTime() + PLAN_TTL_MS),
    })
    // An expired plan of the key is replaced; a live one (another shard's, made a moment ago) wins.
    .onConflictDoUpdate({
      target: [splitPlans.projectId, splitPlans.key],
      set: { ...made, itemsHash: hash, createdAt: now, expiresAt: new Date(now.getTime() + PLAN_TTL_MS) },
      setWhere: lte(splitPlans.expiresAt, now),
    })
    .returning();
  if (inserted) {
    await db.delete(splitPlans).where(and(eq(splitPlans.projectId, input.projectId), lte(splitPlans.expiresAt, now)));
    return presentPlan(inserted, true);
  }
  const raced = await storedPlan(db, input.projectId, input.key, now);
  if (!raced) throw new ApiError("service_unavailable", "The split plan could not be stored; retry.");
  return presentPlan(checkSamePlan(raced, input, items, hash), false);
}

async function storedPlan(db: Database, projectId: string, key: string, now: Date): Promise<PlanRow | undefined> {
  const [row] = await db
    .select()
    .from(splitPlans)
    .where(and(eq(splitPlans.projectId, projectId), eq(splitPlans.key, key), gt(splitPlans.expiresAt, now)))
    .limit(1);
  return row;
}

/** The plan over the timings: known items at their expected time, the others at the project's median (1 ms without history). */
async function makePlan(db: Database, input: SplitPlanInput, items: string[]) {
  const timingsInput = { projectId: input.projectId, by: input.by, variant: input.variant };
  const timings = await readTimings(db, timingsInput, await timingRuns(db, timingsInput));
  const expected = new Map(timings.data.map((t) => [t.key, t.expected_ms]));
  const matcher = new SuffixMatcher(expected.keys(), input.by);
  const fallback = Math.max(1, timings.default_ms);
  let unknown = 0;
  const weighted = items.map((item) => {
    const key = matcher.match(item);
    if (key === undefined) unknown++;
    return { item, expectedMs: key === undefined ? fallback : expected.get(key)! };
  });
  const shards = planShards(weighted, input.shards).map((s) => ({ items: s.items, expected_ms: s.expectedMs }));
  return { by: input.by, variant: input.variant, shardCount: input.shards, itemsCount: items.length, unknownCount: unknown, shards };
}

/** The stored plan when the call asks for the same split; else a 409 that names what differs. */
function checkSamePlan(row: PlanRow, input: SplitPlanInput, items: string[], hash: string): PlanRow {
  if (row.shardCount !== input.shards || row.by !== input.by)
    throw new ApiError(
      "split_plan_mismatch",
      `The plan of key "${input.key}" splits by ${row.by} into ${row.shardCount} shards; this call asks for ${input.by} into ${input.shards}.`,
    );
  if (row.itemsHash === hash) return row;
  const planned = new Set(row.shards.flatMap((s) => s.items));
  const given = new Set(items);
  const extra = items.filter((item) => !planned.has(item));
  const missing = [...planned].filter((item) => !given.has(item)).sort(compareStrings);
  const name = (list: string[]) =>
    list
      .slice(0, NAMED_DIFFERENCES)
      .map((i) => JSON.stringify(i))
      .join(", ") + (list.length > NAMED_DIFFERENCES ? ", …" : "");
  const parts = [
    extra.length > 0 ? `${extra.length} item(s) not in the plan (${name(extra)})` : "",
    missing.length > 0 ? `${missing.length} item(s) of the plan missing (${name(missing)})` : "",
  ].filter((p) => p !== "");
  throw new ApiError("split_plan_mismatch", `The items differ from the plan of key "${input.key}": ${parts.join("; ")}.`);
}

function presentPlan(row: PlanRow, created: boolean): SplitPlan {
  return {
    key: row.key,
    by: row.by,
    variant: row.variant,
    shards_count: row.shardCount,
    items_count: row.itemsCount,
    unknown_items_count: row.unknownCount,
    created,
    created_at: row.createdAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    shards: row.shards.map((s, k) => ({ shard: k + 1, items: s.items, expected_ms: s.expected_ms })),
  };
}

/** SHA-256 (hex) of the sorted, distinct items, one per line: WebCrypto, on Node and the Worker alike. */
async function itemsHash(sortedItems: string[]): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(sortedItems.join("\n")));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
