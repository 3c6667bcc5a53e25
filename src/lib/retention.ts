/**
 * How long data is kept (docs/retention.md): RETENTION_DAYS for test cases and payloads (a
 * project may set its own, from 1 to SUMMARY_RETENTION_DAYS), SUMMARY_RETENTION_DAYS for runs'
 * summaries and the daily rollups. Unset or empty → 90 and 400; otherwise whole numbers of days
 * from 1 to 36,500, RETENTION_DAYS at most SUMMARY_RETENTION_DAYS.
 */
const DEFAULT_RETENTION_DAYS = 90;
export const DEFAULT_SUMMARY_RETENTION_DAYS = 400;
const MAX_DAYS = 36_500;
const DAY_MS = 86_400_000;

export type Retention = { days: number; summaryDays: number };

export const DEFAULT_RETENTION: Retention = { days: DEFAULT_RETENTION_DAYS, summaryDays: DEFAULT_SUMMARY_RETENTION_DAYS };

function daysFrom(name: string, text: string | undefined, fallback: number): number {
  const trimmed = text?.trim() ?? "";
  if (trimmed === "") return fallback;
  const days = /^\d{1,5}$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!(days >= 1 && days <= MAX_DAYS))
    throw new Error(`${name} must be a whole number of days from 1 to ${MAX_DAYS}; it is '${trimmed.slice(0, 40)}'.`);
  return days;
}

export function retentionFrom(env: { RETENTION_DAYS?: string; SUMMARY_RETENTION_DAYS?: string }): Retention {
  const days = daysFrom("RETENTION_DAYS", env.RETENTION_DAYS, DEFAULT_RETENTION_DAYS);
  const summaryDays = daysFrom("SUMMARY_RETENTION_DAYS", env.SUMMARY_RETENTION_DAYS, DEFAULT_SUMMARY_RETENTION_DAYS);
  if (days > summaryDays) throw new Error(`RETENTION_DAYS (${days}) must not exceed SUMMARY_RETENTION_DAYS (${summaryDays}).`);
  return { days, summaryDays };
}

/**
 * The first instant whose data is kept `days` days after `now`: data from before it is past
 * retention. Whole UTC days: data is kept from midnight (UTC) `days` days before today's.
 */
export function keptFrom(now: Date, days: number): Date {
  return new Date((Math.floor(now.getTime() / DAY_MS) - days) * DAY_MS);
}
