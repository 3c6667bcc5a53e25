/**
 * Unit tests of the rolling-window rate limit (docs/api-decisions.md): at most `limit` accepted requests in
 * any `windowMs`, rejected requests not recorded, honest Retry-After; and InMemoryKeyCounter,
 * which applies it per key against an injected clock.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/lib/clock";
import { InMemoryKeyCounter } from "../../src/auth/in-memory-key-counter";
import type { Clock } from "../../src/lib/clock";
import { DEFAULT_RATE_LIMIT, type RateLimitDecision, type RateLimitPolicy, consumeRollingWindow } from "../../src/lib/rate-limit";

/** The key counter seen as a plain limiter: every key resolves to one organization. */
class InMemoryRateLimiter {
  readonly #counter: InMemoryKeyCounter;
  constructor(clock: Clock, policy?: RateLimitPolicy) {
    this.#counter = new InMemoryKeyCounter(clock, policy);
  }
  async consume(keyId: string): Promise<RateLimitDecision> {
    const admission = await this.#counter.admit(keyId, { organizationId: "org" });
    if (admission.status !== "admitted") throw new Error(`unexpected ${admission.status}`);
    return admission.decision;
  }
}

const small: RateLimitPolicy = { limit: 3, windowMs: 10_000 };

describe("consumeRollingWindow", () => {
  it("the default policy is 600 per 60 s", () => {
    expect(DEFAULT_RATE_LIMIT).toEqual({ limit: 600, windowMs: 60_000 });
  });

  it("accepts up to the limit at one instant, counting remaining down, then rejects", () => {
    const window: number[] = [];
    const decisions = [0, 1, 2, 3].map(() => consumeRollingWindow(window, 1_000, small));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0]);
    for (const d of decisions) {
      expect(d.limit).toBe(3);
      expect(d.windowSeconds).toBe(10);
      expect(d.resetSeconds).toBe(10);
    }
    expect(decisions.slice(0, 3).every((d) => d.retryAfterSeconds === undefined)).toBe(true);
    expect(decisions[3]!.retryAfterSeconds).toBe(10);
    expect(window).toEqual([1_000, 1_000, 1_000]);
  });

  it("does not record rejected requests", () => {
    const window = [0, 0, 0];
    for (let t = 1; t < 10_000; t += 997) {
      expect(consumeRollingWindow(window, t, small).allowed).toBe(false);
      expect(window).toEqual([0, 0, 0]);
    }
  });

  it("the window is the last windowMs: an entry leaves exactly windowMs after it was accepted", () => {
    const window = [0, 0, 0];
    expect(consumeRollingWindow(window, 9_999, small).allowed).toBe(false);
    const atBoundary = consumeRollingWindow(window, 10_000, small);
    expect(atBoundary.allowed).toBe(true);
    // All three entries at t=0 have expired; only this one counts.
    expect(window).toEqual([10_000]);
    expect(atBoundary.remaining).toBe(2);
  });

  it("slides: entries expire one by one in the order they were accepted", () => {
    const window: number[] = [];
    expect(consumeRollingWindow(window, 0, small).allowed).toBe(true);
    expect(consumeRollingWindow(window, 4_000, small).allowed).toBe(true);
    expect(consumeRollingWindow(window, 8_000, small).allowed).toBe(true);
    const full = consumeRollingWindow(window, 9_000, small);
    expect(full).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1, resetSeconds: 1 });
    // At 10.001 s the t=0 entry has gone: one slot.
    const one = consumeRollingWindow(window, 10_001, small);
    expect(one).toMatchObject({ allowed: true, remaining: 0 });
    expect(window).toEqual([4_000, 8_000, 10_001]);
    const next = consumeRollingWindow(window, 10_002, small);
    expect(next.allowed).toBe(false);
    // The next slot frees when the t=4 s entry leaves, at 14 s: 3.998 s → 4 whole seconds.
    expect(next.retryAfterSeconds).toBe(4);
    expect(consumeRollingWindow(window, 14_000, small)).toMatchObject({ allowed: true, remaining: 0 });
    expect(window).toEqual([8_000, 10_001, 14_000]);
  });

  it("300 at t=0 and 300 at t=30 s with the default policy: rejected at 45 s, 300 more at 60.001 s but not 301", () => {
    const window: number[] = [];
    for (let i = 0; i < 300; i++) expect(consumeRollingWindow(window, 0, DEFAULT_RATE_LIMIT).allowed).toBe(true);
    for (let i = 0; i < 300; i++) expect(consumeRollingWindow(window, 30_000, DEFAULT_RATE_LIMIT).allowed).toBe(true);
    const at45 = consumeRollingWindow(window, 45_000, DEFAULT_RATE_LIMIT);
    expect(at45).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 15 });
    for (let i = 0; i < 300; i++) {
      const d = consumeRollingWindow(window, 60_001, DEFAULT_RATE_LIMIT);
      expect(d.allowed).toBe(true);
      expect(d.remaining).toBe(299 - i);
    }
    const over = consumeRollingWindow(window, 60_001, DEFAULT_RATE_LIMIT);
    expect(over.allowed).toBe(false);
    expect(over.retryAfterSeconds).toBe(30); // 29.999 s until the t=30 s entries leave
    expect(window).toHaveLength(600);
  });

  it("Retry-After is at least 1 and honest: retrying after it succeeds, one second earlier fails", () => {
    for (const rejectAt of [0, 1, 999, 1_000, 1_001, 5_500, 9_000, 9_998, 9_999]) {
      const base = [0, 0, 0];
      const rejected = consumeRollingWindow([...base], rejectAt, small);
      expect(rejected.allowed).toBe(false);
      const retryAfter = rejected.retryAfterSeconds!;
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(consumeRollingWindow([...base], rejectAt + retryAfter * 1_000, small).allowed).toBe(true);
      if (retryAfter > 1) expect(consumeRollingWindow([...base], rejectAt + (retryAfter - 1) * 1_000, small).allowed).toBe(false);
    }
  });

  it("resetSeconds is 0 for an empty window and rounds up the time until the oldest entry leaves", () => {
    expect(consumeRollingWindow([], 0, { limit: 0, windowMs: 10_000 })).toMatchObject({ allowed: false, remaining: 0, resetSeconds: 0 });
    const window: number[] = [];
    consumeRollingWindow(window, 0, small);
    expect(consumeRollingWindow(window, 2_500, small).resetSeconds).toBe(8); // 7.5 s → 8
    // Third and last slot; the t=0 entry leaves in 1 ms → 1 s.
    expect(consumeRollingWindow(window, 9_999, small)).toMatchObject({ allowed: true, remaining: 0, resetSeconds: 1 });
  });

  it("drops expired entries from the front and keeps at most `limit` entries", () => {
    const window = [0, 5_000, 6_000];
    const d = consumeRollingWindow(window, 10_000, small);
    expect(d.allowed).toBe(true);
    expect(window).toEqual([5_000, 6_000, 10_000]);
    for (let i = 0; i < 100; i++) consumeRollingWindow(window, 10_000 + i, small);
    expect(window.length).toBeLessThanOrEqual(small.limit);
  });

  it("windowSeconds rounds a sub-second window up", () => {
    expect(consumeRollingWindow([], 0, { limit: 1, windowMs: 1_500 }).windowSeconds).toBe(2);
  });

  it("never accepts more than `limit` in any window-length interval (randomized timestamps)", () => {
    const policy = { limit: 5, windowMs: 1_000 };
    let seed = 12345;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const window: number[] = [];
    const accepted: number[] = [];
    let now = 0;
    for (let i = 0; i < 5_000; i++) {
      now += Math.floor(random() * 120);
      if (consumeRollingWindow(window, now, policy).allowed) accepted.push(now);
      else {
        // A rejection only happens when `limit` were accepted in the last windowMs.
        expect(accepted.filter((t) => t > now - policy.windowMs)).toHaveLength(policy.limit);
      }
    }
    for (let i = policy.limit; i < accepted.length; i++) {
      // The (limit+1)-th acceptance back must be at least windowMs earlier.
      expect(accepted[i]! - accepted[i - policy.limit]!).toBeGreaterThanOrEqual(policy.windowMs);
    }
  });
});

describe("InMemoryKeyCounter as a rate limiter", () => {
  it("uses the default policy of 600 per 60 s", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const limiter = new InMemoryRateLimiter(clock);
    let last = await limiter.consume("k");
    expect(last).toMatchObject({ allowed: true, limit: 600, windowSeconds: 60, remaining: 599, resetSeconds: 60 });
    for (let i = 1; i < 600; i++) last = await limiter.consume("k");
    expect(last).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limiter.consume("k")).toMatchObject({ allowed: false, retryAfterSeconds: 60 });
  });

  it("counts each key separately", async () => {
    const clock = new ManualClock(0);
    const limiter = new InMemoryRateLimiter(clock, { limit: 2, windowMs: 1_000 });
    expect((await limiter.consume("a")).allowed).toBe(true);
    expect((await limiter.consume("a")).allowed).toBe(true);
    expect((await limiter.consume("a")).allowed).toBe(false);
    expect(await limiter.consume("b")).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("follows the injected clock", async () => {
    const clock = new ManualClock(5_000);
    const limiter = new InMemoryRateLimiter(clock, { limit: 1, windowMs: 1_000 });
    expect((await limiter.consume("k")).allowed).toBe(true);
    clock.advance(999);
    expect(await limiter.consume("k")).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    clock.advance(1);
    expect((await limiter.consume("k")).allowed).toBe(true);
  });

  it("concurrent calls on one key are counted exactly", async () => {
    const limiter = new InMemoryRateLimiter(new ManualClock(0), { limit: 50, windowMs: 1_000 });
    const decisions = await Promise.all(Array.from({ length: 80 }, () => limiter.consume("k")));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(50);
    expect(
      decisions
        .filter((d) => d.allowed)
        .map((d) => d.remaining)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  it("evicting idle keys (past 10,000 keys) forgets only windows whose entries have all expired", async () => {
    const clock = new ManualClock(0);
    const limiter = new InMemoryRateLimiter(clock, { limit: 2, windowMs: 60_000 });
    for (let i = 0; i < 10_001; i++) await limiter.consume(`idle-${i}`);
    clock.set(30_000);
    expect((await limiter.consume("hot")).allowed).toBe(true);
    expect((await limiter.consume("hot")).allowed).toBe(true);
    clock.set(60_500); // the idle keys' entries have expired; hot's have not
    await limiter.consume("trigger-eviction");
    expect(await limiter.consume("hot")).toMatchObject({ allowed: false, retryAfterSeconds: 30 });
    // An evicted idle key starts afresh, exactly as if it had been kept.
    expect(await limiter.consume("idle-0")).toMatchObject({ allowed: true, remaining: 1 });
  });
});
