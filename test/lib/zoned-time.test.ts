/** The weekly digest's moment: the latest Monday 09:00 of a time zone, daylight saving time included. */
import { describe, expect, it } from "vitest";
import { latestMondayAt } from "../../src/lib/zoned-time";

describe("latestMondayAt", () => {
  it.each([
    // New York switches to EDT on Sunday 2021-03-14: Monday 09:00 is 13:00 UTC, the Monday before 14:00 UTC.
    ["2021-03-15T13:00:00Z", "America/New_York", "2021-03-15", "2021-03-15T13:00:00.000Z"],
    ["2021-03-15T12:59:59Z", "America/New_York", "2021-03-08", "2021-03-08T14:00:00.000Z"],
    ["2021-03-21T23:00:00Z", "America/New_York", "2021-03-15", "2021-03-15T13:00:00.000Z"],
    // Auckland is ahead of UTC: its Monday 09:00 is Sunday evening UTC.
    ["2021-03-14T20:00:00Z", "Pacific/Auckland", "2021-03-15", "2021-03-14T20:00:00.000Z"],
    ["2021-03-15T09:00:00Z", "UTC", "2021-03-15", "2021-03-15T09:00:00.000Z"],
    ["2021-03-15T05:30:00Z", "Asia/Kolkata", "2021-03-15", "2021-03-15T03:30:00.000Z"],
  ])("at %s in %s: the week of %s, at %s", (now, zone, week, at) => {
    const moment = latestMondayAt(new Date(now), zone, 9);
    expect({ week: moment.week, at: moment.at.toISOString() }).toEqual({ week, at });
  });

  it("an unknown zone is a RangeError", () => {
    expect(() => latestMondayAt(new Date(), "Mars/Olympus_Mons", 9)).toThrow(RangeError);
  });
});
