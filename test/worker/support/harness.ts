/**
 * workerd test harness: the same fixtures as on Node (harness-core.ts), but requests go through
 * `SELF.fetch` to the Worker of wrangler.toml: its entry, the Neon driver over the local
 * WebSocket bridge, the per-key Durable Object. The test/worker config aliases the contract
 * files' `support/harness` import to this module, so the v1 contract suite runs here unchanged.
 *
 * Time: the harness installs its manual clock in the test composition of the Worker
 * (worker-entry.ts), which the Worker and its Durable Objects read. A harness that needs dependencies the Worker
 * cannot take per request (overrides, a disabled admin API, or a second rate policy in one
 * file) builds the same app in process inside workerd, over the same Neon driver.
 */
import { SELF, env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/neon-serverless";
import * as schema from "../../../src/db/schema";
import type { Database } from "../../../src/db/types";
import { DEFAULT_RATE_LIMIT, type RateLimitPolicy } from "../../../src/lib/rate-limit";
import { inflatedLimitOf, uploadLimitOf } from "../../../src/worker";
import { systemClock } from "../../../src/lib/clock";
import { configureLocalProxy, requestPool } from "../../../src/worker/neon";
import { testRuntime } from "./worker-entry";
import {
  CURSOR_SECRET,
  type HarnessOptions,
  buildHarness,
  harnessClock,
  inProcessHarness,
  uniqueClientAddress,
} from "../../support/harness-core";

export * from "../../support/harness-core";

/** The rate policy the Worker runs with in this isolate, once a SELF harness of the current file has set it. */
let workerPolicy: RateLimitPolicy | undefined;

/**
 * Before each file (test/worker/support/per-file.ts): the workerd tier runs its files one after
 * another in one isolate (isolate: false), so what the previous file set on the Worker's test
 * runtime (a manual clock, a rate policy) must not reach the next one, even one that talks to
 * SELF directly.
 */
export function resetWorkerRuntime(): void {
  workerPolicy = undefined;
  testRuntime.clock = systemClock;
  testRuntime.rateLimitPolicy = DEFAULT_RATE_LIMIT;
}

export async function createHarness(options: HarnessOptions = {}) {
  configureLocalProxy(env);
  const pool = requestPool(env, "test");
  const db = drizzle(pool, { schema }) as unknown as Database;
  const policy = options.rateLimit ?? DEFAULT_RATE_LIMIT;
  const policyFits = workerPolicy === undefined || (workerPolicy.limit === policy.limit && workerPolicy.windowMs === policy.windowMs);

  if (options.overrides === undefined && !("adminToken" in options) && policyFits) {
    workerPolicy = policy;
    testRuntime.rateLimitPolicy = policy;
    const clock = harnessClock();
    testRuntime.clock = clock;
    // The test plays Cloudflare's edge, which sets CF-Connecting-IP on every request: a new address
    // each time, unless a request names its own (fromAddress; null sends none).
    const send = (path: string, init: RequestInit | undefined, address: string | null) => {
      const headers = new Headers(init?.headers);
      if (address !== null) headers.set("cf-connecting-ip", address);
      return SELF.fetch(new URL(path, "http://api.test").toString(), { ...init, headers });
    };
    const app = {
      request: (path: string, init?: RequestInit) =>
        send(path, init, new Headers(init?.headers).get("cf-connecting-ip") ?? uniqueClientAddress()),
    };
    return buildHarness({
      app,
      fromAddress: (address) => ({ request: (path, init) => send(path, init, address) }),
      db,
      clock,
      logs: [],
      deps: { cursorSecret: env.CURSOR_SECRET ?? CURSOR_SECRET },
      close: () => pool.end(),
      uploadLimitBytes: uploadLimitOf(env),
      inflatedLimitBytes: inflatedLimitOf(env),
    });
  }

  return inProcessHarness(db, options, () => pool.end());
}
