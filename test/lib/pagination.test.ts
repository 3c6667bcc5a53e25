/**
 * Unit tests of the pagination building blocks: parseLimit (spec part 8 limits), CursorCodec
 * (signed cursors bound to listing, organization and filters; docs/api-decisions.md) and toPage.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/lib/errors";
import {
  CursorCodec,
  DEFAULT_PAGE_SIZE,
  type KeysetPosition,
  type Listing,
  MAX_PAGE_SIZE,
  parseLimit,
  toPage,
} from "../../src/lib/pagination";

const SECRET = "unit-test-cursor-secret-0123";
const ORG = "3f1c2a4e-8b7d-4c6a-9e5f-0123456789ab";
const OTHER_ORG = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
const UUID_ID = "c0ffee00-1234-4abc-8def-0123456789ab";

const projects: Listing = { name: "projects", organizationId: ORG, filters: {}, idKind: "uuid" };
const alerts: Listing = {
  name: "alerts",
  organizationId: ORG,
  filters: { status: "all", project_id: null, alert_type: null },
  idKind: "uuid",
};
const events: Listing = { name: "alert_events", organizationId: ORG, filters: { alert_id: UUID_ID }, idKind: "bigint" };
const position: KeysetPosition = { ts: new Date("2026-03-04T05:06:07.089Z"), id: UUID_ID };

function expectInvalidRequest(error: unknown, field?: string) {
  expect(error).toBeInstanceOf(ApiError);
  const apiError = error as ApiError;
  expect(apiError.code).toBe("invalid_request");
  expect(apiError.status).toBe(400);
  if (field) expect(apiError.details?.map((d) => d.field)).toContain(field);
}

async function rejects(codec: CursorCodec, listing: Listing, cursor: string) {
  let caught: unknown = null;
  try {
    await codec.decode(listing, cursor);
  } catch (error) {
    caught = error;
  }
  expect(caught, `cursor ${JSON.stringify(cursor.slice(0, 80))} was accepted`).not.toBeNull();
  expectInvalidRequest(caught, "cursor");
}

/** A cursor with a valid signature over an arbitrary payload (what a holder of the secret could mint). */
function signed(payload: string | object, secret = SECRET): string {
  const bytes = Buffer.from(typeof payload === "string" ? payload : JSON.stringify(payload), "utf8");
  const signature = createHmac("sha256", secret).update(bytes).digest();
  return `${bytes.toString("base64url")}.${signature.toString("base64url")}`;
}

describe("parseLimit", () => {
  it("is 25 when absent", () => {
    expect(parseLimit(undefined)).toBe(25);
    expect(DEFAULT_PAGE_SIZE).toBe(25);
  });

  it.each([
    ["1", 1],
    ["7", 7],
    ["25", 25],
    ["99", 99],
    ["100", 100],
    ["101", 100],
    ["1000000000", 100],
    ["99999999999999999999999999999999", 100],
    ["007", 7],
  ])("%j → %i", (raw, expected) => {
    expect(parseLimit(raw)).toBe(expected);
  });

  it("caps at 100", () => {
    expect(MAX_PAGE_SIZE).toBe(100);
  });

  it.each(["0", "00", "-1", "-0", "1.5", "1.0", "abc", "", "1e2", " 5", "5 ", "+5", "0x10", "١٢", "Infinity", "NaN", "5\n", "1_000"])(
    "%j is a 400 invalid_request on limit",
    (raw) => {
      let caught: unknown = null;
      try {
        parseLimit(raw);
      } catch (error) {
        caught = error;
      }
      expectInvalidRequest(caught, "limit");
    },
  );
});

describe("CursorCodec", () => {
  const codec = new CursorCodec(SECRET);

  it("refuses a secret shorter than 16 characters", () => {
    expect(() => new CursorCodec("short-secret")).toThrow();
    expect(() => new CursorCodec("0123456789abcdef")).not.toThrow();
  });

  it("round-trips a uuid position with millisecond precision", async () => {
    const cursor = await codec.encode(projects, position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const decoded = await codec.decode(projects, cursor);
    expect(decoded.ts.toISOString()).toBe("2026-03-04T05:06:07.089Z");
    expect(decoded.id).toBe(UUID_ID);
  });

  it("round-trips a bigint position as a number", async () => {
    const cursor = await codec.encode(events, { ts: position.ts, id: 9_007_199_254_740_991 });
    const decoded = await codec.decode(events, cursor);
    expect(decoded).toEqual({ ts: position.ts, id: 9_007_199_254_740_991 });
  });

  it("is deterministic and stateless: another codec with the same secret accepts it", async () => {
    const cursor = await codec.encode(alerts, position);
    expect(await codec.encode(alerts, position)).toBe(cursor);
    expect(await new CursorCodec(SECRET).decode(alerts, cursor)).toEqual(position);
  });

  it("does not reveal the secret", async () => {
    const cursor = await codec.encode(projects, position);
    const payload = Buffer.from(cursor.split(".")[0]!, "base64url").toString("utf8");
    expect(payload).not.toContain(SECRET);
    expect(cursor).not.toContain(SECRET);
  });

  it("rejects a cursor signed with another secret", async () => {
    const foreign = await new CursorCodec("another-secret-0123456789").encode(projects, position);
    await rejects(codec, projects, foreign);
    await rejects(
      codec,
      projects,
      signed(JSON.parse(Buffer.from(foreign.split(".")[0]!, "base64url").toString()), "another-secret-0123456789"),
    );
  });

  it("rejects a cursor of another listing, organization or filter set", async () => {
    const cursor = await codec.encode(alerts, position);
    await rejects(codec, { ...alerts, name: "projects", filters: {} }, cursor);
    await rejects(codec, { ...alerts, name: "alerts_v2" }, cursor);
    await rejects(codec, { ...alerts, organizationId: OTHER_ORG }, cursor);
    await rejects(codec, { ...alerts, filters: { ...alerts.filters, status: "active" } }, cursor);
    await rejects(codec, { ...alerts, filters: { ...alerts.filters, project_id: UUID_ID } }, cursor);
    await rejects(codec, { ...alerts, filters: { ...alerts.filters, alert_type: "test_flakiness" } }, cursor);
    await rejects(codec, { ...alerts, filters: { status: "all", project_id: null } }, cursor);
    await rejects(codec, { ...alerts, filters: { ...alerts.filters, extra: "x" } }, cursor);
    const eventsCursor = await codec.encode(events, { ts: position.ts, id: 42 });
    await rejects(codec, { ...events, filters: { alert_id: "d0ffee00-1234-4abc-8def-0123456789ab" } }, eventsCursor);
  });

  it("does not depend on the order in which filters are listed", async () => {
    const cursor = await codec.encode(alerts, position);
    const reordered: Listing = { ...alerts, filters: { alert_type: null, status: "all", project_id: null } };
    expect(await codec.decode(reordered, cursor)).toEqual(position);
  });

  it("rejects a position of the wrong id kind even under the same listing name", async () => {
    const bigintCursor = await codec.encode({ ...projects, idKind: "bigint" }, { ts: position.ts, id: 42 });
    await rejects(codec, projects, bigintCursor);
    const uuidCursor = await codec.encode({ ...events, idKind: "uuid" }, position);
    await rejects(codec, events, uuidCursor);
  });

  it("rejects every single-character edit and every truncation", async () => {
    const cursor = await codec.encode(alerts, position);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
    for (let pos = 0; pos < cursor.length; pos++) {
      for (const replacement of [alphabet[(alphabet.indexOf(cursor[pos]!) + 1) % alphabet.length]!, "A", "."]) {
        if (replacement === cursor[pos]) continue;
        await rejects(codec, alerts, cursor.slice(0, pos) + replacement + cursor.slice(pos + 1));
      }
      await rejects(codec, alerts, cursor.slice(0, pos));
    }
  });

  it("rejects non-canonical base64url that decodes to the same bytes (stray bits in the last character)", async () => {
    const cursor = await codec.encode(alerts, position);
    const [payloadPart, signaturePart] = cursor.split(".") as [string, string];
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // A 32-byte signature is 43 characters: the last one carries 2 unused bits.
    const last = signaturePart.at(-1)!;
    const strayed = signaturePart.slice(0, -1) + alphabet[alphabet.indexOf(last) ^ 1];
    expect(Buffer.from(strayed, "base64url").equals(Buffer.from(signaturePart, "base64url"))).toBe(true);
    await rejects(codec, alerts, `${payloadPart}.${strayed}`);
    // Padding and the standard alphabet are not base64url as issued.
    await rejects(codec, alerts, `${payloadPart}.${signaturePart}=`);
    await rejects(codec, alerts, `${payloadPart}==.${signaturePart}`);
    const standard = `${Buffer.from(payloadPart, "base64url").toString("base64")}.${Buffer.from(signaturePart, "base64url").toString("base64")}`;
    if (standard !== cursor) await rejects(codec, alerts, standard);
  });

  it("rejects structural garbage, empty and over-long cursors", async () => {
    for (const garbage of [
      "",
      ".",
      "..",
      "a",
      "a.",
      ".a",
      "a.b.c",
      "AAAA.AAAA",
      "%%%.%%%",
      " ",
      "A".repeat(1025),
      `${"A".repeat(700)}.${"A".repeat(700)}`,
    ]) {
      await rejects(codec, projects, garbage);
    }
    const cursor = await codec.encode(projects, position);
    await rejects(codec, projects, `${cursor}.${cursor.split(".")[1]}`);
  });

  it("rejects a correctly signed payload that is not a well-formed position for this listing", async () => {
    const good = { v: 1, l: "projects", o: ORG, f: "[]", t: position.ts.toISOString(), i: UUID_ID };
    // Control: the hand-made cursor with the right shape is accepted, so the rejections below are about content.
    expect(await codec.decode(projects, signed(good))).toEqual(position);
    const bad: (string | object)[] = [
      "not json",
      "",
      "[]",
      "null",
      "42",
      '"string"',
      { ...good, v: 2 },
      { ...good, v: "1" },
      { ...good, l: undefined },
      { ...good, o: OTHER_ORG },
      { ...good, f: '[["status","all"]]' },
      { ...good, f: [] },
      { ...good, t: undefined },
      { ...good, t: "not a date" },
      { ...good, t: 1_700_000_000_000 },
      { ...good, i: undefined },
      { ...good, i: 42 },
      { ...good, i: "not-a-uuid" },
      { ...good, i: `${UUID_ID}x` },
    ];
    for (const payload of bad) await rejects(codec, projects, signed(payload));

    const goodEvents = { v: 1, l: "alert_events", o: ORG, f: JSON.stringify([["alert_id", UUID_ID]]), t: position.ts.toISOString(), i: 7 };
    expect(await codec.decode(events, signed(goodEvents))).toEqual({ ts: position.ts, id: 7 });
    for (const i of ["7", 1.5, 2 ** 53, -Infinity, null, UUID_ID]) await rejects(codec, events, signed({ ...goodEvents, i }));
  });
});

describe("toPage", () => {
  type R = { id: number; ts: Date };
  const rows = (n: number): R[] => Array.from({ length: n }, (_, i) => ({ id: 100 - i, ts: new Date(1_000_000 - i) }));
  const positionOf = (r: R): KeysetPosition => ({ ts: r.ts, id: r.id });
  const present = (r: R) => ({ id: r.id });

  it("an empty result is an empty last page", () => {
    expect(toPage([], 25, positionOf, present)).toEqual({ items: [], next: null });
  });

  it("fewer rows than the limit is a last page", () => {
    expect(toPage(rows(3), 5, positionOf, present)).toEqual({ items: [{ id: 100 }, { id: 99 }, { id: 98 }], next: null });
  });

  it("exactly `limit` rows (no look-ahead row) is a last page", () => {
    const page = toPage(rows(5), 5, positionOf, present);
    expect(page.items).toHaveLength(5);
    expect(page.next).toBeNull();
  });

  it("limit + 1 rows gives `limit` items and the position of the last item returned", () => {
    const input = rows(6);
    const page = toPage(input, 5, positionOf, present);
    expect(page.items).toEqual([{ id: 100 }, { id: 99 }, { id: 98 }, { id: 97 }, { id: 96 }]);
    expect(page.next).toEqual({ ts: input[4]!.ts, id: 96 });
  });

  it("limit 1 pages one row at a time", () => {
    const input = rows(2);
    expect(toPage(input, 1, positionOf, present)).toEqual({ items: [{ id: 100 }], next: { ts: input[0]!.ts, id: 100 } });
  });

  it("presents each returned row exactly once and never the look-ahead row", () => {
    const presented: number[] = [];
    toPage(rows(11), 10, positionOf, (r) => presented.push(r.id));
    expect(presented).toEqual(rows(10).map((r) => r.id));
  });
});
