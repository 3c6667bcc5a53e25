/**
 * Set up before every file of the workerd tier. The tier runs its files one after another in one
 * isolate (isolate: false), so what a file's harness set on the Worker's test runtime (a manual
 * clock, a rate policy) would otherwise reach the next file, even one that talks to SELF directly.
 */
import { beforeAll } from "vitest";
import { DEFAULT_RATE_LIMIT } from "../../../src/lib/rate-limit";
import { systemClock } from "../../../src/lib/clock";
import { testRuntime } from "./worker-entry";

beforeAll(() => {
  testRuntime.clock = systemClock;
  testRuntime.rateLimitPolicy = DEFAULT_RATE_LIMIT;
});
