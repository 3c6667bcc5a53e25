/** Settings shared by the benchmark driver (bench/api-bench.ts) and its server process (bench/servers.ts). */

/** Quota high enough never to throttle the benchmark; the real in-memory key counter (rate limiter) still runs on every request. */
export const BENCH_RATE_LIMIT = { limit: 1e9, windowMs: 60_000 };
