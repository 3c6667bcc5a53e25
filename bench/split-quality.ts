/**
 * The split's quality on suites shaped like real ones (bench/split-bench.ts): heavy-tailed file
 * durations (most take seconds, a few take minutes), the plan made from measured history (the
 * median of 5 noisy runs, as the timings give it), judged with the true durations against the
 * lower bound max(total / shards, longest item); beside it the naive split by count (the
 * uploader's fallback: sorted, round-robin). Pure and seeded.
 */
import { fallbackShard, median, planShards } from "../src/lib/split";
import { mulberry32 } from "../src/lib/seeded-random";

const normal = (random: () => number) => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());

/** True durations (ms): lognormal around 3 s (σ 1), and 3 % of files between 1 and 5 minutes. */
export function suite(items: number, random: () => number): { item: string; trueMs: number }[] {
  return Array.from({ length: items }, (_, i) => ({
    item: `test/file-${String(i).padStart(5, "0")}.test.ts`,
    trueMs: random() < 0.03 ? 60_000 + random() * 240_000 : Math.round(3000 * Math.exp(normal(random))),
  }));
}

/** What the timings would say: the median of 5 runs, each the true time × lognormal noise (σ 0.15). */
export function measured(trueMs: number, random: () => number): number {
  return median(Array.from({ length: 5 }, () => Math.round(trueMs * Math.exp(0.15 * normal(random)))));
}

export type Quality = { shards: number; items: number; exact: number; planned: number; naive: number; unseenPlanned: number };

/** The longest shard over the lower bound, for the plan, the naive split, and the plan with `unseen` of the items never seen. */
export function quality(shards: number, items: number, seed: number, unseen = 0.2): Quality {
  // Seeded: the same suites on every run.
  const random = mulberry32(seed);
  const files = suite(items, random);
  const truth = new Map(files.map((f) => [f.item, f.trueMs]));
  const total = files.reduce((sum, f) => sum + f.trueMs, 0);
  const bound = Math.max(total / shards, ...files.map((f) => f.trueMs));
  const longest = (plan: string[][]) => Math.max(...plan.map((items) => items.reduce((sum, item) => sum + truth.get(item)!, 0)));
  const known = files.map((f) => ({ item: f.item, expectedMs: measured(f.trueMs, random) }));
  const planned = planShards(known, shards).map((s) => s.items);
  const exact = planShards(
    files.map((f) => ({ item: f.item, expectedMs: f.trueMs })),
    shards,
  ).map((s) => s.items);
  const naive = Array.from({ length: shards }, (_, k) =>
    fallbackShard(
      files.map((f) => f.item),
      k + 1,
      shards,
    ),
  );
  // Unseen items drawn at random get the project's median, as the service gives them.
  const isUnseen = new Set(files.filter(() => random() < unseen).map((f) => f.item));
  const projectMedian = median(known.filter((k) => !isUnseen.has(k.item)).map((k) => k.expectedMs));
  const partial = known.map((k) => (isUnseen.has(k.item) ? { item: k.item, expectedMs: projectMedian } : k));
  const unseenPlanned = planShards(partial, shards).map((s) => s.items);
  return {
    shards,
    items,
    exact: longest(exact) / bound,
    planned: longest(planned) / bound,
    naive: longest(naive) / bound,
    unseenPlanned: longest(unseenPlanned) / bound,
  };
}
