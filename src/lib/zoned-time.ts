/**
 * Wall-clock times of an IANA time zone (organizations.time_zone), through Intl, which both Node
 * and workerd carry with their time-zone data: the weekly digest goes out at Monday 09:00 where the
 * organization is, daylight saving time included.
 */

type WallClock = { year: number; month: number; day: number; hour: number; minute: number; second: number; weekday: number };

const formatters = new Map<string, Intl.DateTimeFormat>();
const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/** The wall clock of `instant` in the zone; `weekday` 0 is Monday. Throws a RangeError for an unknown zone. */
function wallClock(instant: Date, timeZone: string): WallClock {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      weekday: "short",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formatters.set(timeZone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(instant).map((part) => [part.type, part.value]));
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
    weekday: WEEKDAYS.indexOf(parts.weekday!),
  };
}

/** How far the zone's wall clock is ahead of UTC at `instant`, in ms. */
function offsetAt(instant: number, timeZone: string): number {
  const wall = wallClock(new Date(instant), timeZone);
  const asUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** The instant a wall-clock time of the zone names (in a spring-forward gap, the hour after it). */
function instantOf(date: { year: number; month: number; day: number }, hour: number, timeZone: string): Date {
  const guess = Date.UTC(date.year, date.month - 1, date.day, hour);
  const first = guess - offsetAt(guess, timeZone);
  const second = guess - offsetAt(first, timeZone);
  return new Date(second);
}

const isoDate = (date: { year: number; month: number; day: number }) =>
  `${date.year}-${String(date.month).padStart(2, "0")}-${String(date.day).padStart(2, "0")}`;

/** A calendar date `days` later (or earlier). */
function shiftDate(date: { year: number; month: number; day: number }, days: number) {
  const shifted = new Date(Date.UTC(date.year, date.month - 1, date.day + days));
  return { year: shifted.getUTCFullYear(), month: shifted.getUTCMonth() + 1, day: shifted.getUTCDate() };
}

/**
 * The latest Monday at `hour` o'clock in the zone at or before `now`: its date there (the week's
 * name, `YYYY-MM-DD`) and its instant. Throws a RangeError for an unknown zone.
 */
export function latestMondayAt(now: Date, timeZone: string, hour: number): { week: string; at: Date } {
  const wall = wallClock(now, timeZone);
  let monday = shiftDate(wall, -wall.weekday);
  let at = instantOf(monday, hour, timeZone);
  if (at.getTime() > now.getTime()) {
    monday = shiftDate(monday, -7);
    at = instantOf(monday, hour, timeZone);
  }
  return { week: isoDate(monday), at };
}
