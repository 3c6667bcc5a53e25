/** RETENTION_DAYS and SUMMARY_RETENTION_DAYS (src/lib/retention.ts): defaults, bounds, and the first kept instant. */
import { describe, expect, it } from "vitest";
import { keptFrom, retentionFrom } from "../../src/lib/retention";

describe("retentionFrom", () => {
  it("defaults to 90 and 400 days, unset or empty", () => {
    expect(retentionFrom({})).toEqual({ days: 90, summaryDays: 400 });
    expect(retentionFrom({ RETENTION_DAYS: " ", SUMMARY_RETENTION_DAYS: "" })).toEqual({ days: 90, summaryDays: 400 });
  });

  it("reads whole numbers of days", () => {
    expect(retentionFrom({ RETENTION_DAYS: "30", SUMMARY_RETENTION_DAYS: "365" })).toEqual({ days: 30, summaryDays: 365 });
    expect(retentionFrom({ RETENTION_DAYS: "400" })).toEqual({ days: 400, summaryDays: 400 });
  });

  it("refuses what is not a day count from 1 to 36,500, and cases kept longer than summaries", () => {
    for (const bad of ["0", "-1", "1.5", "90d", "36501", "1e3"])
      expect(() => retentionFrom({ RETENTION_DAYS: bad })).toThrow(/RETENTION_DAYS must be a whole number of days from 1 to 36500/);
    expect(() => retentionFrom({ SUMMARY_RETENTION_DAYS: "abc" })).toThrow(/SUMMARY_RETENTION_DAYS must be/);
    expect(() => retentionFrom({ RETENTION_DAYS: "500" })).toThrow(/must not exceed SUMMARY_RETENTION_DAYS \(400\)/);
  });
});

describe("keptFrom", () => {
  it("is midnight (UTC) the given number of days before today's: a whole day more than the days, never less", () => {
    expect(keptFrom(new Date("2026-03-31T23:59:59.999Z"), 90).toISOString()).toBe("2025-12-31T00:00:00.000Z");
    expect(keptFrom(new Date("2026-04-01T00:00:00Z"), 1).toISOString()).toBe("2026-03-31T00:00:00.000Z");
  });
});
