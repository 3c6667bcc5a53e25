/**
 * The organization's edge cache object inside workerd (src/worker/edge-cache-object.ts): an
 * answer read before a write can never be stored after it, nothing is served or stored while a
 * bypass is open, a lapsed lease drops the answers instead of serving them, an answer is never
 * served at or past its expiry, and the state survives eviction.
 */
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/lib/clock";
import type { EdgeCacheObject, StoredAnswer } from "../../src/worker/edge-cache-object";

const ANSWER: StoredAnswer = { status: 200, headers: [["etag", '"v1"']], body: '{"name":"before"}' };
const LATER: StoredAnswer = { status: 200, headers: [["etag", '"v2"']], body: '{"name":"after"}' };

async function cacheWithClock(name: string, start = Date.UTC(2026, 11, 7)) {
  const stub = env.EDGE_CACHE!.getByName(name);
  const clock = new ManualClock(start);
  await runInDurableObject(stub, (instance: EdgeCacheObject) => {
    instance.clock = clock;
  });
  return { stub, clock };
}

describe("EdgeCacheObject", () => {
  it("stores a miss's answer with its ticket and serves it", async () => {
    const { stub } = await cacheWithClock("org:store");
    const miss = await stub.lookup("k");
    expect(miss).toMatchObject({ answer: null, ticket: expect.any(Number) });
    expect(await stub.store("k", miss.ticket!, ANSWER, null)).toBe(true);
    expect((await stub.lookup("k")).answer).toEqual(ANSWER);
  });

  it("refuses an answer read before a write that was bracketed and released meanwhile", async () => {
    const { stub } = await cacheWithClock("org:race");
    const miss = await stub.lookup("k");
    const token = await stub.bypass();
    await stub.release(token);
    expect(await stub.store("k", miss.ticket!, ANSWER, null)).toBe(false);
    expect((await stub.lookup("k")).answer).toBeNull();
  });

  it("serves nothing, gives no ticket and stores nothing while a bypass is open; drops what it held", async () => {
    const { stub } = await cacheWithClock("org:bypass");
    const miss = await stub.lookup("k");
    await stub.store("k", miss.ticket!, ANSWER, null);
    const token = await stub.bypass();
    expect(await stub.lookup("k")).toEqual({ answer: null, ticket: null });
    expect(await stub.store("k", miss.ticket!, LATER, null)).toBe(false);
    const second = await stub.bypass();
    await stub.release(token);
    expect(await stub.lookup("k")).toEqual({ answer: null, ticket: null });
    await stub.release(second);
    const after = await stub.lookup("k");
    expect(after.answer).toBeNull();
    expect(await stub.store("k", after.ticket!, LATER, null)).toBe(true);
    expect((await stub.lookup("k")).answer).toEqual(LATER);
  });

  it("a bypass never released lapses with its lease by dropping the answers, never by serving them", async () => {
    const { stub, clock } = await cacheWithClock("org:lease");
    const miss = await stub.lookup("k");
    await stub.store("k", miss.ticket!, ANSWER, null);
    await stub.bypass(60_000);
    clock.advance(59_999);
    expect((await stub.lookup("k")).ticket).toBeNull();
    clock.advance(1);
    const lapsed = await stub.lookup("k");
    expect(lapsed.answer).toBeNull();
    expect(lapsed.ticket).not.toBeNull();
    expect(await stub.inspect()).toMatchObject({ bypasses: 0, entries: 0 });
  });

  it("never serves an answer at or past its expiry, nor stores one already expired", async () => {
    const { stub, clock } = await cacheWithClock("org:expiry");
    const start = clock.now().getTime();
    const miss = await stub.lookup("k");
    expect(await stub.store("k", miss.ticket!, ANSWER, start + 1_000)).toBe(true);
    clock.advance(999);
    expect((await stub.lookup("k")).answer).toEqual(ANSWER);
    clock.advance(1);
    const expired = await stub.lookup("k");
    expect(expired.answer).toBeNull();
    expect(await stub.store("k", expired.ticket!, ANSWER, start + 1_000)).toBe(false);
  });

  it("flush drops the answers and the tickets given before it", async () => {
    const { stub } = await cacheWithClock("org:flush");
    const miss = await stub.lookup("k");
    await stub.store("k", miss.ticket!, ANSWER, null);
    const pending = await stub.lookup("other");
    await stub.flush();
    expect((await stub.lookup("k")).answer).toBeNull();
    expect(await stub.store("other", pending.ticket!, ANSWER, null)).toBe(false);
  });

  it("keeps its answers, bypasses and generation across eviction", async () => {
    const stub = env.EDGE_CACHE!.getByName("org:evicted");
    const miss = await stub.lookup("k");
    await stub.store("k", miss.ticket!, ANSWER, null);
    const token = await stub.bypass();
    await evictDurableObject(stub);
    expect(await stub.lookup("k")).toEqual({ answer: null, ticket: null });
    await stub.release(token);
    await evictDurableObject(stub);
    expect(await stub.inspect()).toMatchObject({ bypasses: 0, entries: 0, generation: (miss.ticket ?? 0) + 2 });
  });

  it("a hit is admitted by the credential's counter in the same call; a miss does not count; a revoked key is refused", async () => {
    const { stub } = await cacheWithClock("org:admitted");
    const key = { counter: "key" as const, counterId: "edge-cache-admitted-key" };
    const counter = env.KEY_COUNTER.getByName(key.counterId);
    await counter.admit({ organizationId: "2b3c4d5e-0000-4000-8000-0000000000aa" });
    const miss = await stub.lookupAdmitted("k", key);
    expect(miss).toMatchObject({ answer: null, admission: null });
    await stub.store("k", miss.ticket!, ANSWER, null);
    const hit = await stub.lookupAdmitted("k", key);
    expect(hit.answer).toEqual(ANSWER);
    // The counter's first admission above, then this hit: the miss was not counted.
    expect(hit.admission).toMatchObject({ status: "admitted", decision: { allowed: true, remaining: 598 } });
    await counter.revoke();
    expect((await stub.lookupAdmitted("k", key)).admission).toEqual({ status: "revoked" });
  });
});
