/** Default-branch run counting over a simulated stream, shared by the detection benchmark's scorers. */
import type { SimStream } from "../src/simulator/streams";

export type StreamIndex = { stream: SimStream; mainPrefix: Int32Array; lastRun: number };

export function indexStream(stream: SimStream): StreamIndex {
  const mainPrefix = new Int32Array(stream.runs.length + 1);
  for (const run of stream.runs) mainPrefix[run.number] = mainPrefix[run.number - 1]! + (run.branch === "main" ? 1 : 0);
  return { stream, mainPrefix, lastRun: stream.runs.length };
}

/** Default-branch runs with number in [from, to]. */
export function mainCount(index: StreamIndex, from: number, to: number): number {
  if (to < from) return 0;
  return index.mainPrefix[Math.min(to, index.lastRun)]! - index.mainPrefix[Math.max(0, from - 1)]!;
}
