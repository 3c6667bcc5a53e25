/** How the project pages write figures: durations, shares and their changes. */

/** `850 ms`, `12.3 s`, `4 min 12 s`, `1 h 03 min`. */
export function durationText(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
  const minutes = Math.round(seconds / 60);
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
}

/** A share (0…1) as `92.5 %`. */
export const percentText = (share: number) => `${(share * 100).toFixed(1)} %`;

const signed = (value: number, text: string) => (value > 0 ? `+${text}` : value < 0 ? `−${text.replace(/^-/, "")}` : "±0");

/**
 * The change of a figure against the previous window, in words: counts by difference, shares in
 * percentage points, durations in per cent of the previous value; null when either side is missing.
 */
export function changeText(kind: "count" | "share" | "duration", current: number | null, previous: number | null): string | null {
  if (current === null || previous === null) return null;
  const difference = current - previous;
  if (kind === "count") return signed(difference, String(Math.abs(difference)));
  if (kind === "share") return signed(difference, `${Math.abs(difference * 100).toFixed(1)} pts`);
  if (previous === 0) return difference === 0 ? "±0" : null;
  const relative = difference / previous;
  return signed(Math.round(relative * 1000), `${Math.abs(relative * 100).toFixed(1)} %`);
}
