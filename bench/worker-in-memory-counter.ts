/**
 * Worker entry for the limiter benchmark (bench/limiter-bench.ts): the Worker exactly as
 * deployed (src/worker/index.ts) but with one isolate-scope in-memory key counter instead of the
 * per-key Durable Object, so the two differ only in the limiter. Run with
 * `wrangler dev bench/worker-in-memory-counter.ts --config wrangler.toml` (the script argument
 * overrides `main`). KeyCounterObject is re-exported only so wrangler.toml's Durable Object
 * binding still resolves; this entry never calls it.
 *
 * The reference line above: the root tsconfig (Node types) type-checks bench/, and this file's
 * imports pull in src/worker, which needs the Workers types (src/worker/tsconfig.json adds them
 * the same way).
 */
import { InMemoryKeyCounter } from "../src/auth/in-memory-key-counter";
import { systemClock } from "../src/lib/clock";
import { createWorkerHandler } from "../src/worker/index";

export { KeyCounterObject, UploadCounterObject } from "../src/worker/key-counter-object";
export { EdgeCacheObject } from "../src/worker/edge-cache-object";

/** One per isolate, like the key-id cache in src/worker/index.ts. */
const counter = new InMemoryKeyCounter(systemClock);

export default createWorkerHandler({ keyCounter: () => counter });
