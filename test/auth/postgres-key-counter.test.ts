/**
 * The key counter of processes that scale out (src/auth/postgres-key-counter.ts): two counters
 * over one database stand for two processes. They share a key's window (600 a minute across
 * both), its organization and its revoked mark, and an API key regenerated through one app is
 * rejected by the other on its very next request, its cache entry warm.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresKeyCounter } from "../../src/auth/postgres-key-counter";
import { ManualClock } from "../../src/lib/clock";
import { type Harness, createHarness, testDatabaseUrl } from "../support/harness";

const MINUTE = 60_000;
/** On PGlite (one connection) a revocation from inside the regenerating transaction would wait for that transaction: scaled out is Postgres only. */
const onPostgres = (await testDatabaseUrl()) !== null;
let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h.close();
});

/** Two "processes" on the harness's database, with a clock of their own. */
function twoProcesses(counter: "api_key" | "upload_token" = "api_key", policy = { limit: 600, windowMs: MINUTE }) {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
  return {
    clock,
    a: new PostgresKeyCounter({ db: h.db, clock }, counter, policy),
    b: new PostgresKeyCounter({ db: h.db, clock }, counter, policy),
  };
}

describe("a key's window, shared by every process", () => {
  it("admits 600 requests a minute across both, refuses the 601st on either, and opens a new window once the minute ended", async () => {
    const { organization } = await h.newOrganization();
    const { clock, a, b } = twoProcesses();
    const keyId = crypto.randomUUID();
    expect(await a.admit(keyId)).toEqual({ status: "unresolved" });
    const first = await a.admit(keyId, { organizationId: organization.id });
    expect(first).toMatchObject({ status: "admitted", organizationId: organization.id, decision: { allowed: true, remaining: 599 } });
    for (let i = 1; i < 600; i++) {
      clock.advance(10);
      const admission = await (i % 2 ? b : a).admit(keyId);
      expect(admission).toMatchObject({ status: "admitted", decision: { allowed: true } });
    }
    for (const counter of [a, b]) {
      const refused = await counter.admit(keyId);
      expect(refused).toMatchObject({ status: "admitted", decision: { allowed: false, remaining: 0, limit: 600, windowSeconds: 60 } });
      if (refused.status === "admitted") expect(refused.decision.retryAfterSeconds).toBe(55);
    }
    clock.advance(MINUTE - 5_990);
    expect(await b.admit(keyId)).toMatchObject({ status: "admitted", decision: { allowed: true, remaining: 599, resetSeconds: 60 } });
  });

  it("keeps API keys' and upload tokens' windows apart, and each key's", async () => {
    const { organization } = await h.newOrganization();
    const { a: keys } = twoProcesses("api_key", { limit: 2, windowMs: MINUTE });
    const { a: uploads } = twoProcesses("upload_token", { limit: 2, windowMs: MINUTE });
    const id = crypto.randomUUID();
    const resolution = { organizationId: organization.id };
    for (let i = 0; i < 2; i++) expect(await keys.admit(id, resolution)).toMatchObject({ decision: { allowed: true } });
    expect(await keys.admit(id)).toMatchObject({ decision: { allowed: false } });
    expect(await uploads.admit(id, resolution)).toMatchObject({ decision: { allowed: true } });
    expect(await keys.admit(crypto.randomUUID(), resolution)).toMatchObject({ decision: { allowed: true } });
  });
});

describe("the revoked mark", () => {
  it("is seen by every process, for a key counted before and for one never seen", async () => {
    const { organization } = await h.newOrganization();
    const { a, b } = twoProcesses();
    const counted = crypto.randomUUID();
    const unseen = crypto.randomUUID();
    await a.admit(counted, { organizationId: organization.id });
    await a.revoke([counted, unseen]);
    expect(await b.admit(counted)).toEqual({ status: "revoked" });
    expect(await b.admit(unseen, { organizationId: organization.id })).toEqual({ status: "revoked" });
    await b.revoke([]);
  });

  it.skipIf(!onPostgres)(
    "rejects a regenerated API key through the other process's app although its cache entry there is warm",
    async () => {
      const clock = new ManualClock(Date.now());
      const counter = () => new PostgresKeyCounter({ db: h.db, clock }, "api_key");
      const one = await createHarness({ overrides: { keyCounter: counter() } });
      const other = await createHarness({ overrides: { keyCounter: counter() } });
      try {
        const { organization, apiKey } = await one.newOrganization();
        expect((await other.get("/api/v1/projects", apiKey)).status).toBe(200);
        const regenerated = await one.admin("POST", `/organizations/${organization.id}/api_key/regenerate`);
        expect(regenerated.status).toBe(200);
        expect((await other.get("/api/v1/projects", apiKey)).status).toBe(401);
        expect((await other.get("/api/v1/projects", regenerated.body.api_key.secret)).status).toBe(200);
      } finally {
        await one.close();
        await other.close();
      }
    },
  );
});
