import { type Clock, systemClock } from "../lib/clock";
import { DEFAULT_RATE_LIMIT, type RateLimitPolicy } from "../lib/rate-limit";

/**
 * Isolate-wide settings of the Worker and its Durable Objects. Production never changes them;
 * the workerd test suite replaces the clock (to move time without waiting) and, for a file that
 * needs it, the rate policy. They live here, not in bindings, because a clock is not configuration.
 */
export const workerRuntime: { clock: Clock; rateLimitPolicy: RateLimitPolicy } = {
  clock: systemClock,
  rateLimitPolicy: DEFAULT_RATE_LIMIT,
};
