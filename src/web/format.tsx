/** Small pieces of display shared by the pages: times, results. */
import type { FC } from "hono/jsx";
import type { RunResult } from "../lib/vocabulary";

/** "1 execution", "3 executions": a count and its noun, plural unless the count is one. */
export const counted = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? "" : "s"}`;

/** "3 hours ago", "2 days ago": how long before `now`, in the largest whole unit. */
function timeAgo(at: Date, now: Date): string {
  const seconds = Math.max(0, Math.round((now.getTime() - at.getTime()) / 1000));
  const units: [number, string][] = [
    [86_400, "day"],
    [3_600, "hour"],
    [60, "minute"],
  ];
  for (const [size, name] of units) {
    const n = Math.floor(seconds / size);
    if (n >= 1) return `${n} ${name}${n === 1 ? "" : "s"} ago`;
  }
  return "just now";
}

/** `2026-11-24 09:05 UTC` */
export const utcText = (at: Date) => `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;

export const TimeAgo: FC<{ at: Date | null; now: Date }> = ({ at, now }) =>
  at ? (
    <time datetime={at.toISOString()} title={utcText(at)}>
      {timeAgo(at, now)}
    </time>
  ) : (
    <span class="muted">never</span>
  );

const RESULTS: Record<RunResult, { label: string; className: string }> = {
  tests_passed: { label: "Passed", className: "result-passed" },
  tests_failed: { label: "Tests failed", className: "result-failed" },
  tests_errored: { label: "Tests errored", className: "result-failed" },
};

export const Result: FC<{ result: RunResult | null }> = ({ result }) =>
  result ? <span class={RESULTS[result].className}>{RESULTS[result].label}</span> : <span class="muted">no result yet</span>;
