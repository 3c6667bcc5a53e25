/**
 * Pagination of the three lists (/projects, /alerts, /alerts/:alert_id/events): the limit rules,
 * the response shape, exact keyset traversal over rows that share a timestamp, and cursor
 * integrity (spec part 8 and part 7;  docs/api-decisions.md: cursors are signed and bound to the listing,
 * its filters and the organization, not to the page size).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CursorCodec } from "../../../src/lib/pagination";
import { type CallResult, type Harness, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  // Traversals with limit 1 make several hundred requests per key.
  h = await createHarness({ rateLimit: { limit: 1_000_000, windowMs: 60_000 } });
});
afterAll(() => h.close());

const PROJECTS = 130;

type Row = { id: string | number; ts: string };

/** Newest first: (timestamp desc, id desc), ids compared as Postgres does (uuid bytes = lowercase hex; bigint numerically). */
function compareNewestFirst(a: Row, b: Row): number {
  const ta = Date.parse(a.ts);
  const tb = Date.parse(b.ts);
  if (ta !== tb) return tb - ta;
  if (typeof a.id === "number" && typeof b.id === "number") return b.id - a.id;
  const ia = String(a.id).toLowerCase();
  const ib = String(b.id).toLowerCase();
  return ia < ib ? 1 : ia > ib ? -1 : 0;
}

function expectStrictlyNewestFirst(rows: Row[]) {
  for (let i = 1; i < rows.length; i++) {
    const cmp = compareNewestFirst(rows[i - 1]!, rows[i]!);
    if (cmp >= 0)
      throw new Error(`rows ${i - 1} and ${i} are out of order: ${JSON.stringify(rows[i - 1])} then ${JSON.stringify(rows[i])}`);
  }
}

function expectEnvelope(res: CallResult, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe("string");
}

function expectListShape(res: CallResult) {
  expect(res.status, res.text).toBe(200);
  expect(Object.keys(res.body).sort()).toEqual(["data", "pagination"]);
  expect(Array.isArray(res.body.data)).toBe(true);
  expect(Object.keys(res.body.pagination).sort()).toEqual(["has_more", "next_cursor"]);
  expect(typeof res.body.pagination.has_more).toBe("boolean");
  if (res.body.pagination.has_more) expect(typeof res.body.pagination.next_cursor).toBe("string");
  else expect(res.body.pagination.next_cursor).toBeNull();
}

const withQuery = (path: string, query: string) => `${path}${path.includes("?") ? "&" : "?"}${query}`;
const withCursor = (path: string, cursor: string, extra = "") => withQuery(path, `cursor=${encodeURIComponent(cursor)}${extra}`);

/**
 * One organization with more than 100 rows in each list:
 * - 130 projects: 15 in distinct milliseconds, then 100 sharing one instant, then 15 more in
 *   distinct milliseconds (so 520 alerts, 400 of them sharing one instant);
 * - one alert with 130 events: 15 distinct, 100 sharing one instant (over 3 runs), 15 distinct;
 * - a second alert with 5 events.
 */
type Big = {
  key: string;
  orgId: string;
  projects: Row[];
  alerts: Row[];
  events: Row[];
  eventsAlertId: string;
  otherEventsAlertId: string;
  projectIds: string[];
};
let big: Big;

async function buildBig(): Promise<Big> {
  const { organization, apiKey } = await h.newOrganization("Big org");
  const projects: Row[] = [];
  const alerts: Row[] = [];
  const projectIds: string[] = [];
  const addProject = async (i: number) => {
    const { project, alertIds } = await h.newProject(organization.id, `P${i}`);
    projects.push({ id: project.id, ts: project.created_at });
    projectIds.push(project.id);
    // The four alerts are created with their project, at the same instant.
    expect(Object.keys(alertIds)).toHaveLength(4);
    for (const id of Object.values(alertIds)) alerts.push({ id, ts: project.created_at });
  };
  let n = 0;
  for (let i = 0; i < 15; i++) {
    h.clock.advance(1);
    await addProject(n++);
  }
  h.clock.advance(1);
  for (let i = 0; i < 100; i++) await addProject(n++);
  for (let i = 0; i < 15; i++) {
    h.clock.advance(1);
    await addProject(n++);
  }
  expect(projects.length).toBe(PROJECTS);
  const tied = projects.filter((p) => p.ts === projects[20]!.ts);
  expect(tied.length).toBe(100);

  expect(alerts.length).toBe(4 * PROJECTS);

  // Events on the test_flakiness alert of the first project.
  const { project: eventsProject, alertIds } = await h.newProject(organization.id, "Events project");
  projectIds.push(eventsProject.id);
  projects.push({ id: eventsProject.id, ts: eventsProject.created_at });
  for (const id of Object.values(alertIds)) alerts.push({ id, ts: eventsProject.created_at });
  const eventsAlertId = alertIds.test_flakiness!;
  const otherEventsAlertId = alertIds.failure_rate_spike!;
  const runs = [await h.newRun(eventsProject.id), await h.newRun(eventsProject.id), await h.newRun(eventsProject.id)];
  const events: Row[] = [];
  const addEvent = async (i: number) => {
    const event = await h.newEvent(eventsAlertId, runs[i % 3]!.id, { i });
    events.push({ id: event.id, ts: event.triggeredAt.toISOString() });
  };
  let e = 0;
  for (let i = 0; i < 15; i++) {
    h.clock.advance(1);
    await addEvent(e++);
  }
  h.clock.advance(1);
  for (let i = 0; i < 100; i++) await addEvent(e++);
  for (let i = 0; i < 15; i++) {
    h.clock.advance(1);
    await addEvent(e++);
  }
  for (let i = 0; i < 5; i++) {
    h.clock.advance(1);
    await h.newEvent(otherEventsAlertId, runs[0]!.id, { other: i });
  }
  h.clock.advance(1);
  return { key: apiKey, orgId: organization.id, projects, alerts, events, eventsAlertId, otherEventsAlertId, projectIds };
}

const sorted = (rows: Row[]) => [...rows].sort(compareNewestFirst);

beforeAll(async () => {
  big = await buildBig();
}, 120_000);

type Endpoint = { name: string; path: () => string; total: () => number; expected: () => Row[]; tsField: string };
const endpoints: Endpoint[] = [
  {
    name: "GET /projects",
    path: () => "/api/v1/projects",
    total: () => big.projects.length,
    expected: () => sorted(big.projects),
    tsField: "created_at",
  },
  {
    name: "GET /alerts?status=all",
    path: () => "/api/v1/alerts?status=all",
    total: () => big.alerts.length,
    expected: () => sorted(big.alerts),
    tsField: "created_at",
  },
  {
    name: "GET /alerts/:alert_id/events",
    path: () => `/api/v1/alerts/${big.eventsAlertId}/events`,
    total: () => big.events.length,
    expected: () => sorted(big.events),
    tsField: "triggered_at",
  },
];

describe.each(endpoints)("limit on $name", (endpoint) => {
  it("fixture has more than 100 rows", () => {
    expect(endpoint.total()).toBeGreaterThan(100);
  });

  it("defaults to 25 items when more exist, with only data and pagination (no total count)", async () => {
    const res = await h.get(endpoint.path(), big.key);
    expectListShape(res);
    expect(res.body.data).toHaveLength(25);
    expect(res.body.pagination.has_more).toBe(true);
    expect(typeof res.body.pagination.next_cursor).toBe("string");
    expect(res.body.pagination.next_cursor.length).toBeGreaterThan(0);
  });

  it.each([
    ["1", 1],
    ["100", 100],
    ["101", 100],
    ["1000000000", 100],
    ["99999999999999999999999999", 100],
  ])("limit=%s returns %i items", async (limit, count) => {
    const res = await h.get(withQuery(endpoint.path(), `limit=${limit}`), big.key);
    expectListShape(res);
    expect(res.body.data).toHaveLength(count);
    expect(res.body.pagination.has_more).toBe(true);
    expect(res.body.data.map((r: { id: string | number }) => r.id)).toEqual(
      endpoint
        .expected()
        .slice(0, count)
        .map((r) => r.id),
    );
  });

  it.each(["0", "-1", "1.5", "abc", "", "1e2", " 5", "5 ", "+5", "00", "0x10", "-0", "1,2"])(
    "limit=%j is a 400 invalid_request",
    async (limit) => {
      const res = await h.get(withQuery(endpoint.path(), `limit=${encodeURIComponent(limit)}`), big.key);
      expectEnvelope(res, 400, "invalid_request");
    },
  );

  it("pages of 100 are full until the last one, which has has_more false and next_cursor null", async () => {
    let res = await h.get(withQuery(endpoint.path(), "limit=100"), big.key);
    let seen = 0;
    for (;;) {
      expectListShape(res);
      seen += res.body.data.length;
      if (!res.body.pagination.has_more) break;
      expect(res.body.data).toHaveLength(100);
      res = await h.get(withCursor(endpoint.path(), res.body.pagination.next_cursor, "&limit=100"), big.key);
    }
    expect(res.body.data).toHaveLength(endpoint.total() % 100 || 100);
    expect(res.body.pagination).toEqual({ next_cursor: null, has_more: false });
    expect(seen).toBe(endpoint.total());
  });
});

describe("list shape at the edges", () => {
  it("an empty list is data [] with has_more false and next_cursor null, on every list", async () => {
    const { organization, apiKey } = await h.newOrganization("Empty org");
    const empty = { data: [], pagination: { next_cursor: null, has_more: false } };
    for (const path of ["/api/v1/projects", "/api/v1/alerts?status=all", "/api/v1/alerts"]) {
      const res = await h.get(path, apiKey);
      expectListShape(res);
      expect(res.body).toEqual(empty);
    }
    const { alertIds } = await h.newProject(organization.id, "No events");
    const res = await h.get(`/api/v1/alerts/${alertIds.test_flakiness}/events`, apiKey);
    expectListShape(res);
    expect(res.body).toEqual(empty);
    const limited = await h.get(`/api/v1/alerts/${alertIds.test_flakiness}/events?limit=1`, apiKey);
    expect(limited.body).toEqual(empty);
  });

  it("a list holding exactly `limit` rows is one page with has_more false (no empty trailing page)", async () => {
    const { organization, apiKey } = await h.newOrganization("Three projects");
    for (let i = 0; i < 3; i++) {
      h.clock.advance(1);
      await h.newProject(organization.id, `P${i}`);
    }
    const exact = await h.get("/api/v1/projects?limit=3", apiKey);
    expectListShape(exact);
    expect(exact.body.data).toHaveLength(3);
    expect(exact.body.pagination).toEqual({ next_cursor: null, has_more: false });

    const first = await h.get("/api/v1/projects?limit=2", apiKey);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.pagination.has_more).toBe(true);
    const last = await h.get(withCursor("/api/v1/projects", first.body.pagination.next_cursor, "&limit=2"), apiKey);
    expectListShape(last);
    expect(last.body.data).toHaveLength(1);
    expect(last.body.pagination).toEqual({ next_cursor: null, has_more: false });
    expect(last.body.data[0].name).toBe("P0");
  });

  it("the default page (no limit) of a short list returns everything with has_more false", async () => {
    const { organization, apiKey } = await h.newOrganization("Two projects");
    await h.newProject(organization.id, "A");
    await h.newProject(organization.id, "B");
    const res = await h.get("/api/v1/projects", apiKey);
    expectListShape(res);
    expect(res.body.data).toHaveLength(2);
    expect(res.body.pagination).toEqual({ next_cursor: null, has_more: false });
  });
});

describe.each(endpoints)("full traversal of $name", (endpoint) => {
  it.each([1, 7, 25, 100])("with limit %i returns every row exactly once, strictly newest first", async (limit) => {
    const { items, pages } = await collectAll(h, endpoint.path(), big.key, limit);
    const rows: Row[] = items.map((item) => ({ id: item.id, ts: item[endpoint.tsField] }));
    const ids = rows.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(endpoint.expected().map((r) => r.id));
    expectStrictlyNewestFirst(rows);
    expect(pages).toBe(Math.ceil(endpoint.total() / limit));
  });
});

describe("limit between pages", () => {
  it("may change from one page to the next with the same cursor", async () => {
    const expected = sorted(big.projects).map((r) => r.id);
    const first = await h.get("/api/v1/projects?limit=10", big.key);
    expect(first.body.data.map((p: { id: string }) => p.id)).toEqual(expected.slice(0, 10));
    const cursor = first.body.pagination.next_cursor as string;

    const small = await h.get(withCursor("/api/v1/projects", cursor, "&limit=3"), big.key);
    expectListShape(small);
    expect(small.body.data.map((p: { id: string }) => p.id)).toEqual(expected.slice(10, 13));

    const large = await h.get(withCursor("/api/v1/projects", cursor, "&limit=50"), big.key);
    expect(large.body.data.map((p: { id: string }) => p.id)).toEqual(expected.slice(10, 60));

    const defaulted = await h.get(withCursor("/api/v1/projects", cursor), big.key);
    expect(defaulted.body.data.map((p: { id: string }) => p.id)).toEqual(expected.slice(10, 35));

    const rest = await h.get(withCursor("/api/v1/projects", small.body.pagination.next_cursor, "&limit=1000"), big.key);
    expect(rest.body.data.map((p: { id: string }) => p.id)).toEqual(expected.slice(13, 113));

    // The same cursor stays valid: reusing it gives the same page again.
    const again = await h.get(withCursor("/api/v1/projects", cursor, "&limit=3"), big.key);
    expect(again.body.data).toEqual(small.body.data);
  });

  it("a traversal that changes limit on every page still returns each row once, in order", async () => {
    const expected = sorted(big.alerts).map((r) => r.id);
    const seen: string[] = [];
    const limits = [1, 100, 3, 17, 64, 2, 99, 5];
    let cursor: string | null = null;
    let i = 0;
    do {
      const limit = limits[i++ % limits.length]!;
      const path = cursor ? withCursor("/api/v1/alerts?status=all", cursor, `&limit=${limit}`) : `/api/v1/alerts?status=all&limit=${limit}`;
      const res = await h.get(path, big.key);
      expectListShape(res);
      expect(res.body.data.length).toBeLessThanOrEqual(limit);
      seen.push(...res.body.data.map((a: { id: string }) => a.id));
      cursor = res.body.pagination.next_cursor;
    } while (cursor);
    expect(seen).toEqual(expected);
  });
});

describe("cursor integrity", () => {
  let cursor: string;
  beforeAll(async () => {
    const res = await h.get("/api/v1/projects?limit=20", big.key);
    cursor = res.body.pagination.next_cursor;
  });
  const projectsWith = (c: string) => withCursor("/api/v1/projects", c, "&limit=5");

  it("the untouched cursor works (control)", async () => {
    const res = await h.get(projectsWith(cursor), big.key);
    expectListShape(res);
    expect(res.body.data.map((p: { id: string }) => p.id)).toEqual(
      sorted(big.projects)
        .slice(20, 25)
        .map((r) => r.id),
    );
  });

  it("every single-character substitution is a 400 invalid_request", async () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const failures: string[] = [];
    for (let pos = 0; pos < cursor.length; pos++) {
      const original = cursor[pos]!;
      const index = alphabet.indexOf(original);
      // A neighbouring alphabet character (flips the low bits), or a letter when the original is the "." separator.
      const replacement = index === -1 ? "A" : alphabet[(index + 1) % alphabet.length]!;
      const edited = cursor.slice(0, pos) + replacement + cursor.slice(pos + 1);
      const res = await h.get(projectsWith(edited), big.key);
      if (res.status !== 400 || res.body?.error?.code !== "invalid_request") failures.push(`pos ${pos}: ${res.status}`);
    }
    expect(failures).toEqual([]);
  });

  it("~50 sampled positions with other edits (case flip, high-bit flip, deletion, insertion) are 400", async () => {
    const failures: string[] = [];
    const positions = Array.from({ length: 50 }, (_, k) => Math.floor((k * (cursor.length - 1)) / 49));
    for (const pos of positions) {
      const ch = cursor[pos]!;
      const flipped = ch === ch.toUpperCase() ? ch.toLowerCase() : ch.toUpperCase();
      const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
      const far = alphabet[(Math.max(0, alphabet.indexOf(ch)) + 32) % 64]!;
      const variants = [
        flipped !== ch ? cursor.slice(0, pos) + flipped + cursor.slice(pos + 1) : null,
        cursor.slice(0, pos) + far + cursor.slice(pos + 1),
        cursor.slice(0, pos) + cursor.slice(pos + 1),
        `${cursor.slice(0, pos)}A${cursor.slice(pos)}`,
      ];
      for (const edited of variants) {
        if (edited === null || edited === cursor) continue;
        const res = await h.get(projectsWith(edited), big.key);
        if (res.status !== 400 || res.body?.error?.code !== "invalid_request")
          failures.push(`pos ${pos} ${JSON.stringify(edited)}: ${res.status}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("every truncation (lengths 0 … length-1) is a 400 invalid_request", async () => {
    const failures: string[] = [];
    for (let length = 0; length < cursor.length; length++) {
      const res = await h.get(projectsWith(cursor.slice(0, length)), big.key);
      if (res.status !== 400 || res.body?.error?.code !== "invalid_request") failures.push(`length ${length}: ${res.status}`);
    }
    expect(failures).toEqual([]);
    // Truncation from the front as well.
    for (let start = 1; start < cursor.length; start += 7) {
      const res = await h.get(projectsWith(cursor.slice(start)), big.key);
      expectEnvelope(res, 400, "invalid_request");
    }
  });

  it.each(["A", "AA", "AAA", "AAAA", "=", "==", ".", ".A", ".abc", "x", " ", "%", "\n", "é", `.${"A".repeat(43)}`])(
    "appending %j is a 400 invalid_request",
    async (suffix) => {
      const res = await h.get(projectsWith(cursor + suffix), big.key);
      expectEnvelope(res, 400, "invalid_request");
    },
  );

  it("prepending characters or repeating the cursor is a 400 invalid_request", async () => {
    for (const edited of [`A${cursor}`, `.${cursor}`, `${cursor}${cursor}`, `${cursor}.${cursor}`, ` ${cursor}`]) {
      expectEnvelope(await h.get(projectsWith(edited), big.key), 400, "invalid_request");
    }
  });

  it.each([
    "abc",
    "null",
    "undefined",
    "0",
    "-1",
    "true",
    "{}",
    "[]",
    ".",
    "..",
    "a.b",
    "a.b.c",
    "AAAA.AAAA",
    "eyJ2IjoxfQ",
    "eyJ2IjoxfQ.",
    "%00",
    "\u0000",
    "😀.😀",
    "A".repeat(1025),
    `${"A".repeat(600)}.${"A".repeat(600)}`,
    "x".repeat(20_000),
  ])("garbage cursor %# is a 400 invalid_request", async (garbage) => {
    const res = await h.get(projectsWith(garbage), big.key);
    expectEnvelope(res, 400, "invalid_request");
  });

  it("an empty cursor parameter is a 400 invalid_request", async () => {
    expectEnvelope(await h.get("/api/v1/projects?cursor=", big.key), 400, "invalid_request");
  });

  it("base64 of a well-formed JSON payload without a valid signature is a 400 invalid_request", async () => {
    const [payloadPart, signaturePart] = cursor.split(".") as [string, string];
    const decoded = JSON.parse(Buffer.from(payloadPart, "base64url").toString("utf8"));
    // The real payload really is JSON naming this listing (so the forgeries below only lack a signature).
    expect(decoded).toMatchObject({ l: "projects", o: big.orgId });

    const forgedPayload = { ...decoded, t: new Date(Date.parse(decoded.t) + 3_600_000).toISOString() };
    const forged = Buffer.from(JSON.stringify(forgedPayload)).toString("base64url");
    const forgedStd = Buffer.from(JSON.stringify(forgedPayload)).toString("base64");
    const candidates = [
      payloadPart,
      `${payloadPart}.`,
      forged,
      `${forged}.`,
      `${forged}.${signaturePart}`,
      forgedStd,
      `${forgedStd}.${signaturePart}`,
      Buffer.from(JSON.stringify(decoded)).toString("base64"),
      `${Buffer.from(JSON.stringify({ ...decoded })).toString("base64url")}.${Buffer.from("not-a-signature").toString("base64url")}`,
      `${payloadPart}.${Buffer.alloc(32).toString("base64url")}`,
    ];
    for (const candidate of candidates) {
      const res = await h.get(projectsWith(candidate), big.key);
      expectEnvelope(res, 400, "invalid_request");
    }
  });

  it("a payload of one cursor with the signature of another is a 400 invalid_request", async () => {
    const other = (await h.get("/api/v1/projects?limit=40", big.key)).body.pagination.next_cursor as string;
    expect(other).not.toBe(cursor);
    const [p1, s1] = cursor.split(".");
    const [p2, s2] = other.split(".");
    expectEnvelope(await h.get(projectsWith(`${p1}.${s2}`), big.key), 400, "invalid_request");
    expectEnvelope(await h.get(projectsWith(`${p2}.${s1}`), big.key), 400, "invalid_request");
    expect((await h.get(projectsWith(other), big.key)).status).toBe(200);
  });
});

describe("a cursor is valid only for the listing that issued it", () => {
  const cursorOf = async (path: string, key: string) => {
    const res = await h.get(withQuery(path, "limit=2"), key);
    expectListShape(res);
    expect(res.body.pagination.has_more).toBe(true);
    return res.body.pagination.next_cursor as string;
  };

  it("a /projects cursor is rejected on /alerts and on events, and vice versa", async () => {
    const projects = await cursorOf("/api/v1/projects", big.key);
    const alertsAll = await cursorOf("/api/v1/alerts?status=all", big.key);
    const alertsDefault = await cursorOf("/api/v1/alerts", big.key);
    const events = await cursorOf(`/api/v1/alerts/${big.eventsAlertId}/events`, big.key);
    const eventsPath = `/api/v1/alerts/${big.eventsAlertId}/events`;

    // Controls: each cursor works where it was issued.
    expect((await h.get(withCursor("/api/v1/projects", projects), big.key)).status).toBe(200);
    expect((await h.get(withCursor("/api/v1/alerts?status=all", alertsAll), big.key)).status).toBe(200);
    expect((await h.get(withCursor("/api/v1/alerts", alertsDefault), big.key)).status).toBe(200);
    expect((await h.get(withCursor(eventsPath, events), big.key)).status).toBe(200);

    const misuse: [string, string][] = [
      ["/api/v1/alerts?status=all", projects],
      ["/api/v1/alerts", projects],
      [eventsPath, projects],
      ["/api/v1/projects", alertsAll],
      ["/api/v1/projects", alertsDefault],
      [eventsPath, alertsAll],
      ["/api/v1/projects", events],
      ["/api/v1/alerts?status=all", events],
      ["/api/v1/alerts", events],
    ];
    for (const [path, c] of misuse) {
      const res = await h.get(withCursor(path, c), big.key);
      expectEnvelope(res, 400, "invalid_request");
    }
  });

  it("an events cursor of alert A is rejected on alert B's events", async () => {
    const pathA = `/api/v1/alerts/${big.eventsAlertId}/events`;
    const pathB = `/api/v1/alerts/${big.otherEventsAlertId}/events`;
    const cursorA = await cursorOf(pathA, big.key);
    const cursorB = await cursorOf(pathB, big.key);
    expectEnvelope(await h.get(withCursor(pathB, cursorA), big.key), 400, "invalid_request");
    expectEnvelope(await h.get(withCursor(pathA, cursorB), big.key), 400, "invalid_request");
    expect((await h.get(withCursor(pathB, cursorB), big.key)).status).toBe(200);
  });

  it("an /alerts cursor issued with status=all is rejected with any other status", async () => {
    const c = await cursorOf("/api/v1/alerts?status=all", big.key);
    for (const status of ["active", "snoozed", "inactive"]) {
      expectEnvelope(await h.get(withCursor(`/api/v1/alerts?status=${status}`, c), big.key), 400, "invalid_request");
    }
    // No status means the default (active), which is not `all` either.
    expectEnvelope(await h.get(withCursor("/api/v1/alerts", c), big.key), 400, "invalid_request");
    const active = await cursorOf("/api/v1/alerts?status=active", big.key);
    expectEnvelope(await h.get(withCursor("/api/v1/alerts?status=all", active), big.key), 400, "invalid_request");
  });

  it("an /alerts cursor is bound to its project_id filter", async () => {
    const [p1, p2] = big.projectIds as [string, string];
    const c = await cursorOf(`/api/v1/alerts?status=all&project_id=${p1}`, big.key);
    expect((await h.get(withCursor(`/api/v1/alerts?status=all&project_id=${p1}`, c), big.key)).status).toBe(200);
    expectEnvelope(await h.get(withCursor(`/api/v1/alerts?status=all&project_id=${p2}`, c), big.key), 400, "invalid_request");
    expectEnvelope(await h.get(withCursor("/api/v1/alerts?status=all", c), big.key), 400, "invalid_request");
    const unfiltered = await cursorOf("/api/v1/alerts?status=all", big.key);
    expectEnvelope(await h.get(withCursor(`/api/v1/alerts?status=all&project_id=${p1}`, unfiltered), big.key), 400, "invalid_request");
  });

  it("an /alerts cursor is bound to its alert_type filter", async () => {
    const c = await cursorOf("/api/v1/alerts?status=all&alert_type=test_flakiness", big.key);
    expect((await h.get(withCursor("/api/v1/alerts?status=all&alert_type=test_flakiness", c), big.key)).status).toBe(200);
    for (const other of ["performance_regression", "skipped_test_count_creep", "failure_rate_spike"]) {
      expectEnvelope(await h.get(withCursor(`/api/v1/alerts?status=all&alert_type=${other}`, c), big.key), 400, "invalid_request");
    }
    expectEnvelope(await h.get(withCursor("/api/v1/alerts?status=all", c), big.key), 400, "invalid_request");
    const unfiltered = await cursorOf("/api/v1/alerts?status=all", big.key);
    expectEnvelope(
      await h.get(withCursor("/api/v1/alerts?status=all&alert_type=test_flakiness", unfiltered), big.key),
      400,
      "invalid_request",
    );
  });

  it("a cursor issued to organization A is rejected for organization B's key on the same listing", async () => {
    const { organization: orgB, apiKey: keyB } = await h.newOrganization("Org B");
    for (let i = 0; i < 3; i++) await h.newProject(orgB.id, `B${i}`);
    for (const path of ["/api/v1/projects", "/api/v1/alerts?status=all", "/api/v1/alerts"]) {
      const fromA = await cursorOf(path, big.key);
      const fromB = await cursorOf(path, keyB);
      expectEnvelope(await h.get(withCursor(path, fromA), keyB), 400, "invalid_request");
      expectEnvelope(await h.get(withCursor(path, fromB), big.key), 400, "invalid_request");
      expect((await h.get(withCursor(path, fromB), keyB)).status).toBe(200);
    }
  });

  it("a cursor signed with another secret is rejected", async () => {
    // Another app with another cursor secret (and its own database) issues a cursor of the same shape.
    const other = await createHarness({ overrides: { cursorSecret: "another-secret-0123456789" } });
    try {
      const { organization, apiKey } = await other.newOrganization("Elsewhere");
      for (let i = 0; i < 3; i++) await other.newProject(organization.id, `E${i}`);
      const foreign = (await other.get("/api/v1/projects?limit=1", apiKey)).body.pagination.next_cursor as string;
      expect(typeof foreign).toBe("string");
      expectEnvelope(await h.get(withCursor("/api/v1/projects", foreign), big.key), 400, "invalid_request");
    } finally {
      await other.close();
    }

    // Sharper: the same listing, organization and a real position, differing only in the secret.
    const position = sorted(big.projects)[9]!;
    const listing = { name: "projects", organizationId: big.orgId, filters: {}, idKind: "uuid" as const };
    const foreignCodec = new CursorCodec("another-secret-0123456789");
    const sameCodec = new CursorCodec(h.deps.cursorSecret);
    const forged = await foreignCodec.encode(listing, { ts: new Date(position.ts), id: position.id });
    const genuine = await sameCodec.encode(listing, { ts: new Date(position.ts), id: position.id });
    expect(forged.split(".")[0]).toBe(genuine.split(".")[0]);
    expectEnvelope(await h.get(withCursor("/api/v1/projects", forged), big.key), 400, "invalid_request");
    const control = await h.get(withCursor("/api/v1/projects", genuine, "&limit=3"), big.key);
    expect(control.status).toBe(200);
    expect(control.body.data.map((p: { id: string }) => p.id)).toEqual(
      sorted(big.projects)
        .slice(10, 13)
        .map((r) => r.id),
    );
  });
});
