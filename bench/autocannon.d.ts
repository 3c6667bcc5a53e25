/** The small part of autocannon 8's programmatic API the benchmark uses (the package ships no types). */
declare module "autocannon" {
  import type { EventEmitter } from "node:events";

  export type Options = {
    url: string;
    connections?: number;
    duration?: number;
    pipelining?: number;
    timeout?: number;
    headers?: Record<string, string>;
  };

  export type Histogram = { average: number; mean: number; stddev: number; min: number; max: number; p50: number; p99: number };

  export type Result = {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    "2xx": number;
    statusCodeStats: Record<string, { count: number }>;
    latency: Histogram;
    requests: Histogram & { total: number; sent: number };
  };

  /** Emits `response` (client, statusCode, bytes, responseTimeMs) for every response. */
  export type Instance = EventEmitter & { stop(): void };

  function autocannon(options: Options, callback: (error: Error | null, result: Result) => void): Instance;
  export default autocannon;
}
