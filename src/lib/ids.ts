/**
 * Identifier shapes checked before any query: a malformed id is the same 404 as a missing one,
 * without a round trip.
 */
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

const MAX_INT = 2_147_483_647;

/** A number in a path (run, suite): digits only, 1 to 2^31-1; null for anything else. */
export function parsePathNumber(raw: string): number | null {
  if (!/^[1-9][0-9]{0,9}$/.test(raw) || Number(raw) > MAX_INT) return null;
  return Number(raw);
}

/** A bigint id in a path (test cases): 1 to 2^53-1; null for anything else. */
export function parsePathBigintId(raw: string): number | null {
  if (!/^[1-9][0-9]{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) return null;
  return Number(raw);
}
