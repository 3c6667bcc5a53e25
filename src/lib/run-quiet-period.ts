/**
 * RUN_QUIET_PERIOD_SECONDS (docs/uploads.md, "Runs in parts"): how long after its last part a run
 * in parts completes by itself when no declared shard count or explicit completion ends it
 * first. Unset or empty → 600 (10 minutes); otherwise a whole number of seconds from 10 to 86,400.
 */
export const DEFAULT_RUN_QUIET_PERIOD_SECONDS = 600;

export function runQuietPeriodMsFrom(text: string | undefined): number {
  const trimmed = text?.trim() ?? "";
  if (trimmed === "") return DEFAULT_RUN_QUIET_PERIOD_SECONDS * 1000;
  const seconds = /^\d{1,5}$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!(seconds >= 10 && seconds <= 86_400))
    throw new Error(`RUN_QUIET_PERIOD_SECONDS must be a whole number of seconds from 10 to 86400; it is '${trimmed.slice(0, 40)}'.`);
  return seconds * 1000;
}
