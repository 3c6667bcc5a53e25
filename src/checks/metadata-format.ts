/** Formatting of event metadata, shared by the checks: capped strings and rounded numbers. */

/** The text cut to `max` characters (null stays null). */
export function cap<T extends string | null>(text: T, max: number): T {
  if (text === null || text === undefined) return null as T;
  return (text.length > max ? text.slice(0, max) : text) as T;
}

/** Rounded to `digits` decimals; null for null and non-finite values; never -0. */
export function round(value: number | null, digits: number): number | null {
  if (value === null || !Number.isFinite(value)) return null;
  const factor = 10 ** digits;
  const rounded = Math.round(value * factor) / factor;
  return Object.is(rounded, -0) ? 0 : rounded;
}
