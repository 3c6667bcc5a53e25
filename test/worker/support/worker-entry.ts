/**
 * The Worker as the workerd suite runs it (vitest.config.ts, the workerd tier `main`): the deployed
 * entry, composed with a clock and a rate policy the tests move. This module owns them, so
 * production code has no mutable runtime settings; the harness sets `testRuntime` and SELF
 * requests, queue batches and the Durable Objects all read it.
 */
import { DEFAULT_RATE_LIMIT, type RateLimitPolicy } from "../../../src/lib/rate-limit";
import { type Clock, systemClock } from "../../../src/lib/clock";
import { KeyCounterObject as DeployedKeyCounterObject, createWorkerHandler } from "../../../src/worker/index";

export const testRuntime: { clock: Clock; rateLimitPolicy: RateLimitPolicy } = { clock: systemClock, rateLimitPolicy: DEFAULT_RATE_LIMIT };

const testClock: Clock = { now: () => testRuntime.clock.now() };

export class KeyCounterObject extends DeployedKeyCounterObject {
  override clock: Clock = testClock;
  protected override get policy(): RateLimitPolicy {
    return testRuntime.rateLimitPolicy;
  }
}

export class UploadCounterObject extends KeyCounterObject {}

export { EdgeCacheObject } from "../../../src/worker/index";

export default createWorkerHandler({ clock: testClock });
