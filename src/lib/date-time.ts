/**
 * Date-times the service takes from clients. Zod's ISO check accepts any four-digit year, 0000
 * included, which the database's timestamps refuse (there is no year 0): past the first byte of a
 * response that would be a 500. Instants from 0001-01-01 to 9999-12-31 UTC are the ones every
 * client library writes and Postgres stores.
 */
import { z } from "zod";

const EARLIEST = new Date("0001-01-01T00:00:00.000Z").getTime();
const LATEST = new Date("9999-12-31T23:59:59.999Z").getTime();

const DATE_TIME_RANGE_MESSAGE = "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z";

/** True for an ISO 8601 text whose instant is within the storable range. */
function isStorableInstant(text: string): boolean {
  const time = Date.parse(text);
  return Number.isFinite(time) && time >= EARLIEST && time <= LATEST;
}

/** An ISO 8601 date-time with a time zone (Z or an offset), within the storable range. */
export const isoDateTimeWithZone = (error: string) =>
  // The range is checked only on a well-formed date-time: one message per field.
  z.iso
    .datetime({ offset: true, error })
    .refine(isStorableInstant, { message: DATE_TIME_RANGE_MESSAGE, when: (payload) => payload.issues.length === 0 });
