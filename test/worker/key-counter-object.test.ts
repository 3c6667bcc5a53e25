/**
 * The per-key Durable Object inside workerd: exact rolling-window counting, independence of keys,
 * state that survives eviction, sticky revocation, and a window that slides on an injected clock.
 */
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { KeyAdmission } from "../../src/auth/key-state";
import { ManualClock } from "../../src/lib/clock";
import type { KeyCounterObject } from "../../src/worker/key-counter-object";

const ORG = { organizationId: "2b3c4d5e-0000-4000-8000-000000000001" };

/** A fresh key's object with a manual clock installed. */
async function counterWithClock(name: string, start = Date.UTC(2026, 10, 21)) {
  const stub = env.KEY_COUNTER.getByName(name);
  const clock = new ManualClock(start);
  await runInDurableObject(stub, (instance: KeyCounterObject) => {
    instance.clock = clock;
  });
  return { stub, clock };
}

const admitted = (a: KeyAdmission) => a.status === "admitted" && a.decision.allowed;

describe("KeyCounterObject", () => {
  it("a burst of 650 on one key: exactly 600 admitted, 50 rate limited with Retry-After; another key unaffected", async () => {
    const { stub } = await counterWithClock("burst-key");
    const results = await Promise.all(Array.from({ length: 650 }, () => stub.admit(ORG) as Promise<KeyAdmission>));
    expect(results.filter(admitted)).toHaveLength(600);
    const limited = results.filter((a) => a.status === "admitted" && !a.decision.allowed);
    expect(limited).toHaveLength(50);
    for (const a of limited) if (a.status === "admitted") expect(a.decision.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    const other = await env.KEY_COUNTER.getByName("burst-other-key").admit(ORG);
    expect(other).toMatchObject({ status: "admitted", decision: { allowed: true, remaining: 599 } });
  });

  it("counts survive eviction", async () => {
    // Real time here: the instance that comes back after eviction runs on the system clock.
    const stub = env.KEY_COUNTER.getByName("evicted-key");
    for (let i = 0; i < 10; i++) await stub.admit(ORG);
    await evictDurableObject(stub);
    const after = (await stub.admit()) as KeyAdmission;
    // The organization was remembered and the ten earlier requests still count.
    expect(after).toMatchObject({ status: "admitted", organizationId: ORG.organizationId, decision: { remaining: 589 } });
  });

  it("the window slides on the injected clock, and rejected requests consume nothing", async () => {
    const { stub, clock } = await counterWithClock("sliding-key");
    for (let i = 0; i < 300; i++) await stub.admit(ORG);
    clock.advance(30_000);
    for (let i = 0; i < 300; i++) await stub.admit(ORG);
    clock.advance(15_000);
    expect(await stub.admit(ORG)).toMatchObject({ status: "admitted", decision: { allowed: false, retryAfterSeconds: 15 } });
    clock.advance(15_001); // the first 300 left the window
    const again = await Promise.all(Array.from({ length: 301 }, () => stub.admit(ORG) as Promise<KeyAdmission>));
    expect(again.filter(admitted)).toHaveLength(300);
  });

  it("revocation is sticky and survives eviction; an unknown key stays unresolved without counting", async () => {
    const { stub } = await counterWithClock("revoked-key");
    expect(await stub.admit(ORG)).toMatchObject({ status: "admitted" });
    await stub.revoke();
    expect(await stub.admit(ORG)).toEqual({ status: "revoked" });
    await evictDurableObject(stub);
    expect(await stub.admit(ORG)).toEqual({ status: "revoked" });

    const fresh = env.KEY_COUNTER.getByName("never-resolved-key");
    expect(await fresh.admit()).toEqual({ status: "unresolved" });
    expect((await fresh.inspect()).window).toEqual([]);
  });
});
