/**
 * The bulk exports' failures: a missing, malformed, reversed, empty or too wide window is a 400
 * in the envelope before anything is read; an unknown or malformed project a 404; no key a 401;
 * and a database that fails after the first byte: the stream ends with one `{"error": …}` line
 * after the lines already sent (simulated by a database whose reads of the export's table fail
 * after the first). Happy paths: exports.happy.test.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { testCases, testRuns } from "../../../src/db/schema";
import type { Database } from "../../../src/db/types";
import { type CallResult, type Harness, createHarness, inProcessHarness } from "../../support/harness";

let h: Harness;
let key: string;
let projectId: string;
let since: string;
let until: string;
const UNKNOWN_UUID = "7d3e2f1a-0b9c-4d8e-9f7a-6b5c4d3e2f1a";
const RESOURCES = ["test_runs", "test_cases"] as const;

beforeAll(async () => {
  h = await createHarness();
  const org = await h.newOrganization("Export errors org");
  key = org.apiKey;
  projectId = (await h.newProject(org.organization.id, "exported")).project.id;
  since = h.clock.now().toISOString();
  for (let i = 0; i < 5; i++) {
    h.clock.advance(1_000);
    await h.newRun(projectId, {
      report: { suites: [{ name: "s", cases: Array.from({ length: 4 }, (_, c) => ({ name: `case ${c}`, status: "passed" as const })) }] },
    });
  }
  h.clock.advance(1_000);
  until = h.clock.now().toISOString();
});
afterAll(() => h.close());
beforeEach(() => h.clock.advance(61_000));

function expectError(res: CallResult, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.message.length).toBeGreaterThan(0);
}

const path = (resource: string, query: string, project = projectId) => `/api/v1/projects/${project}/exports/${resource}${query}`;

describe.each(RESOURCES)("GET /projects/:id/exports/%s", (resource) => {
  it.each([
    ["no window", ""],
    ["no until", "?since=2026-11-01T00:00:00Z"],
    ["no since", "?until=2026-11-02T00:00:00Z"],
    ["an empty since", "?since=&until=2026-11-02T00:00:00Z"],
    ["not a date", "?since=yesterday&until=2026-11-02T00:00:00Z"],
    ["a date without a time", "?since=2026-11-01&until=2026-11-02T00:00:00Z"],
    ["a time without a zone", "?since=2026-11-01T00:00:00&until=2026-11-02T00:00:00Z"],
    ["an impossible date", "?since=2026-02-30T00:00:00Z&until=2026-03-02T00:00:00Z"],
    ["since after until", "?since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z"],
    ["since equal to until", "?since=2026-11-01T00:00:00Z&until=2026-11-01T00:00:00Z"],
    ["the same instant in two zones", "?since=2026-11-01T02:00:00%2B02:00&until=2026-11-01T00:00:00Z"],
    ["a window of 31 days and 1 ms", "?since=2026-10-01T00:00:00Z&until=2026-11-01T00:00:00.001Z"],
    ["a window of a year", "?since=2025-11-01T00:00:00Z&until=2026-11-01T00:00:00Z"],
    ["a window in the year 0000, which no database timestamp holds", "?since=0000-01-01T00:00:00Z&until=0000-01-02T00:00:00Z"],
    ["a window past 9999-12-31 UTC through its offset", "?since=9999-12-31T00:00:00-14:00&until=9999-12-31T12:00:00-14:00"],
  ])("%s is a 400 invalid_request naming the parameter", async (_, query) => {
    const res = await h.get(path(resource, query), key);
    expectError(res, 400, "invalid_request");
    expect(res.body.error.message).toMatch(/since|until/);
    expect(res.headers.get("ratelimit")).toMatch(/^"default";r=\d+;t=\d+$/);
  });

  it("a window of exactly 31 days is accepted", async () => {
    const res = await h.get(path(resource, "?since=2026-10-01T00:00:00Z&until=2026-11-01T00:00:00Z"), key);
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
  });

  it("an unknown or malformed project is the same 404", async () => {
    const window = `?since=${since}&until=${until}`;
    const unknown = await h.get(path(resource, window, UNKNOWN_UUID), key);
    expectError(unknown, 404, "not_found");
    const malformed = await h.get(path(resource, window, "not-a-uuid"), key);
    expectError(malformed, 404, "not_found");
    expect(malformed.body).toEqual(unknown.body);
  });

  it("no key is a 401, another method a 405", async () => {
    expectError(await h.get(path(resource, `?since=${since}&until=${until}`), null), 401, "unauthorized");
    expectError(await h.post(path(resource, `?since=${since}&until=${until}`), key), 405, "method_not_allowed");
  });
});

/**
 * The harness's database, except that reads from `table` fail once `table` was read `healthyReads`
 * times: `error` is what the driver would throw. Every other query (authentication, the project) works.
 */
function failingAfter(db: Database, table: object, healthyReads: number, error: Error): Database {
  let reads = 0;
  const failing: any = new Proxy(() => {}, {
    get: (_, property) => (property === "then" ? (_resolve: unknown, reject: (e: Error) => void) => reject(error) : () => failing),
  });
  return new Proxy(db, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== "select") return value;
      return (...args: unknown[]) => {
        const builder = value.apply(target, args);
        return new Proxy(builder, {
          get(b, p, r) {
            const member = Reflect.get(b, p, r);
            if (p !== "from") return typeof member === "function" ? member.bind(b) : member;
            return (source: object) => (source === table && ++reads > healthyReads ? failing : member.call(b, source));
          },
        });
      };
    },
  }) as Database;
}

describe("a database that fails after the first byte", () => {
  const connectionLost = () => Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
  const query = () => `?since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`;

  it("test_cases: the lines sent, then one error line with the envelope's error object (service_unavailable)", async () => {
    // Two cases per statement; the first read of test_cases works, the second fails.
    const faulty = inProcessHarness(
      h.db,
      { overrides: { db: failingAfter(h.db, testCases, 1, connectionLost()), exportBatchRows: 8, clock: h.clock } },
      async () => {},
    );
    const res = await faulty.get(path("test_cases", query()), key);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    const lines = res.text
      .slice(0, -1)
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines.length).toBe(9);
    expect(lines.slice(0, 8).every((line) => typeof line.test_case_id === "number")).toBe(true);
    expect(lines.at(-1)).toEqual({ error: { code: "service_unavailable", message: expect.any(String) } });
    expect(res.text.endsWith("\n")).toBe(true);
    expect(faulty.logs.some((line) => line.includes("database unavailable during an export"))).toBe(true);
  });

  it("test_runs: any other fault is an internal_error line that says nothing of it", async () => {
    const faulty = inProcessHarness(
      h.db,
      { overrides: { db: failingAfter(h.db, testRuns, 1, new Error("secret detail of the fault")), exportBatchRows: 2, clock: h.clock } },
      async () => {},
    );
    const res = await faulty.get(path("test_runs", query()), key);
    expect(res.status).toBe(200);
    const lines = res.text
      .slice(0, -1)
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines.slice(0, 2).map((line) => line.number)).toEqual([1, 2]);
    expect(lines.length).toBe(3);
    expect(lines[2]).toEqual({ error: { code: "internal_error", message: expect.any(String) } });
    expect(res.text).not.toContain("secret detail");
    expect(
      faulty.logs.some((line) => line.includes("export failed after its first byte") && line.includes(res.headers.get("request-id")!)),
    ).toBe(true);
  });

  it("a failure before the first byte is an ordinary error response", async () => {
    const faulty = inProcessHarness(
      h.db,
      { overrides: { db: failingAfter(h.db, testRuns, 0, connectionLost()), clock: h.clock } },
      async () => {},
    );
    const res = await faulty.get(path("test_runs", query()), key);
    expectError(res, 503, "service_unavailable");
  });
});
