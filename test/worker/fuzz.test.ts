/**
 * The fault and fuzz suite's short profile inside workerd (test/support/fuzz/fuzz.ts has the
 * invariants): the same seeded requests as on Node, handed to the Worker's fetch handler (the
 * test composition of src/worker/index.ts: Neon driver over the local bridge, the Durable Object
 * counters, the Cloudflare Queue), some with a binding down: the database (DATABASE_URL on a port
 * where nothing listens), the counters' Durable Objects (every stub throws), the run queue (send
 * rejects).
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { WorkerEnv } from "../../src/worker/env";
import { type Harness, createHarness } from "./support/harness";
import { type Fault, type FuzzTarget, createFuzzFixtures, runFuzz, summaryLine } from "../support/fuzz/fuzz";
import { createWorkerHandler } from "../../src/worker/index";
import worker from "./support/worker-entry";

const SEED = 20261124;
const COUNT = 300;

const unavailable = (what: string) => () => {
  throw new Error(`${what} is unavailable (injected by the fuzz suite)`);
};
const downNamespace = {
  getByName: unavailable("the Durable Object"),
  idFromName: unavailable("the Durable Object"),
  get: unavailable("the Durable Object"),
};

const envs: Record<Fault, WorkerEnv> = {
  database: { ...env, DATABASE_URL: "postgres://nobody:nothing@127.0.0.1:9/none" },
  counter: { ...env, KEY_COUNTER: downNamespace as never, UPLOAD_COUNTER: downNamespace as never },
  queue: {
    ...env,
    RUN_QUEUE: {
      send: () => Promise.reject(new Error("the run queue is unavailable")),
      sendBatch: () => Promise.reject(new Error("the run queue is unavailable")),
    } as never,
  },
};

const target: FuzzTarget = {
  faults: ["database", "counter", "queue"],
  async send(request, fault) {
    const ctx = createExecutionContext();
    const response = await worker.fetch!(request as never, fault ? envs[fault] : env, ctx);
    // The body is read before the request's background work (the pool's end) is awaited.
    const body = await response.arrayBuffer();
    await waitOnExecutionContext(ctx);
    return new Response(response.status === 204 ? null : body, { status: response.status, headers: response.headers });
  },
};

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

it(`${COUNT} seeded requests through the Worker: no 5xx, every error in the envelope, every 2xx as documented, every status declared`, async () => {
  const fixtures = await createFuzzFixtures(h);
  const summary = await runFuzz({ target, fixtures, seed: SEED, count: COUNT });
  console.log(summaryLine("workerd", summary));
  expect(summary.violations.slice(0, 10)).toEqual([]);
  expect(summary.operationsCovered).toBe(summary.operations);
  expect(summary.faulted).toBeGreaterThan(0);
});

it("a database unreachable before the app exists (no CURSOR_SECRET to start from): 503 in the envelope with Retry-After and a Request-Id", async () => {
  const fresh = createWorkerHandler();
  const ctx = createExecutionContext();
  const response = await fresh.fetch!(
    new Request("http://fuzz.test/api/v1/projects") as never,
    { ...envs.database, CURSOR_SECRET: undefined },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  expect(response.status).toBe(503);
  expect(await response.json()).toEqual({ error: { code: "service_unavailable", message: expect.any(String) } });
  expect(response.headers.get("retry-after")).toBe("1");
  expect(response.headers.get("request-id")).toMatch(/^[0-9a-f-]{36}$/);
});
