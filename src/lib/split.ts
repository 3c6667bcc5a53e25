/**
 * Splitting a suite across shards (docs/splitting.md): pure functions shared by the service (the
 * plan), the uploader (its fallback) and the benchmark. No database, no Hono: the bundle imports it.
 */

/** What a plan splits by: test files, or classes for JVM reports whose cases carry no file. */
export const SPLIT_BY = ["file", "classname"] as const;
export type SplitBy = (typeof SPLIT_BY)[number];

/** Shards of one plan at most: the upload's `--shard` takes N ≤ 1,000 too. */
export const MAX_SHARDS = 1000;
/** Items of one plan at most (each ≤ MAX_ITEM_LENGTH): bounded work and a bounded stored row. */
export const MAX_SPLIT_ITEMS = 50_000;
export const MAX_ITEM_LENGTH = 1000;

/**
 * The documented fallback when the service cannot be reached: the items sorted (by UTF-16 code
 * units, as every runtime sorts strings) and dealt round-robin, item k to shard (k mod N) + 1. Every
 * shard computes the same split from the same list, with no history.
 */
export function fallbackShard(items: readonly string[], index: number, total: number): string[] {
  const sorted = [...new Set(items)].sort(compareStrings);
  return sorted.filter((_, k) => k % total === index - 1);
}

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One shard of a plan: its items in the order they were placed, and the sum of their expected durations. */
export type PlannedShard = { items: string[]; expectedMs: number };

/**
 * Longest-processing-time-first: items by expected duration, longest first (ties by name), each to
 * the shard with the least expected time so far (ties to the lowest index). Deterministic, so the
 * same list and durations always give the same plan; within 4/3 of the optimum in theory and far
 * closer on heavy-tailed suites (BENCHMARKS.md, "split").
 */
export function planShards(items: readonly { item: string; expectedMs: number }[], shards: number): PlannedShard[] {
  const order = [...items].sort((a, b) => b.expectedMs - a.expectedMs || compareStrings(a.item, b.item));
  const plan: PlannedShard[] = Array.from({ length: shards }, () => ({ items: [], expectedMs: 0 }));
  const heap = new MinHeap(shards);
  for (const { item, expectedMs } of order) {
    const k = heap.popLeast();
    plan[k]!.items.push(item);
    plan[k]!.expectedMs += expectedMs;
    heap.push(k, plan[k]!.expectedMs);
  }
  return plan;
}

/** Shards by (load, index): the least loaded first, the lowest index among equals. O(log N) per item. */
class MinHeap {
  private readonly keys: number[] = [];
  private readonly loads: number[] = [];
  constructor(size: number) {
    for (let k = 0; k < size; k++) this.push(k, 0);
  }
  private less(i: number, j: number): boolean {
    return this.loads[i]! < this.loads[j]! || (this.loads[i] === this.loads[j] && this.keys[i]! < this.keys[j]!);
  }
  private swap(i: number, j: number): void {
    [this.keys[i], this.keys[j]] = [this.keys[j]!, this.keys[i]!];
    [this.loads[i], this.loads[j]] = [this.loads[j]!, this.loads[i]!];
  }
  push(key: number, load: number): void {
    this.keys.push(key);
    this.loads.push(load);
    for (let i = this.keys.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }
  popLeast(): number {
    const top = this.keys[0]!;
    const last = this.keys.length - 1;
    this.swap(0, last);
    this.keys.pop();
    this.loads.pop();
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.keys.length && this.less(l, m)) m = l;
      if (r < this.keys.length && this.less(r, m)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
    return top;
  }
}

/** A key's or an item's segments: path parts for files (either slash), dotted parts for classes. */
function segmentsOf(value: string, by: SplitBy): string[] {
  const parts = by === "file" ? value.split(/[\\/]+/) : value.split(".");
  return parts.filter((part) => part !== "" && part !== ".");
}

/**
 * Matches items to the keys the history knows when one is the other with a leading prefix, by
 * whole segments: `/home/runner/work/app/src/a.test.ts` and `src/a.test.ts` are one file, whatever
 * prefix the runner or the report wrote, and so are `com.acme.CartTest` and `CartTest`. Their
 * longest common suffix must be all of one of them: `a/index.test.ts` is not `b/index.test.ts`.
 * A key equal to the item wins; among keys an item is a suffix of, the first in sorted order wins, so matching is deterministic.
 */
export class SuffixMatcher {
  private readonly bySuffix = new Map<string, string>();
  private readonly whole = new Map<string, string>();
  constructor(
    keys: Iterable<string>,
    private readonly by: SplitBy,
  ) {
    for (const key of [...keys].sort(compareStrings)) {
      const segments = segmentsOf(key, by);
      if (segments.length === 0) continue;
      // Suffixes built from the end, each from the previous: linear in the key's length.
      let suffix = "";
      for (let n = segments.length - 1; n >= 0; n--) {
        suffix = suffix === "" ? segments[n]! : `${segments[n]}/${suffix}`;
        if (!this.bySuffix.has(suffix)) this.bySuffix.set(suffix, key);
      }
      if (!this.whole.has(suffix)) this.whole.set(suffix, key);
    }
  }
  /** The key this item is, or undefined when none is the item with a prefix more or less. */
  match(item: string): string | undefined {
    const segments = segmentsOf(item, this.by);
    if (segments.length === 0) return undefined;
    // The same key first; then the item whole as a key's suffix (the key has the longer prefix),
    // else a key as the item's.
    const joined = segments.join("/");
    const exact = this.whole.get(joined) ?? this.bySuffix.get(joined);
    if (exact !== undefined) return exact;
    // The longest of the item's proper suffixes that is a whole key.
    let found: string | undefined;
    let suffix = "";
    for (let n = segments.length - 1; n >= 1; n--) {
      suffix = suffix === "" ? segments[n]! : `${segments[n]}/${suffix}`;
      found = this.whole.get(suffix) ?? found;
    }
    return found;
  }
}

/** The median of numbers (the mean of the middle two for an even count); 0 for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
}
