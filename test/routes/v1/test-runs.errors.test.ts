/**
 * /api/v1 reads of test results, the failures: 400 for bad limits, cursors (edited, foreign,
 * from another listing, filter set, run or suite) and unknown filter values; 404 (identical
 * bodies) for unknown, malformed or foreign projects, run numbers, suite numbers and case ids;
 * 401 without a valid key; 405 for other methods. Happy paths: test-runs.happy.test.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { JUNIT_FIXTURES } from "../../fixtures/junit";
import { type CallResult, type Harness, createHarness } from "../../support/harness";
import type { Report } from "../../../src/services/runs/test-runs";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());
// Many requests per key here: keep every test inside a fresh rate-limit window.
beforeEach(() => h.clock.advance(61_000));

const UNKNOWN_UUID = "7d3e2f1a-0b9c-4d8e-9f7a-6b5c4d3e2f1a";
const RATE_LIMIT_RE = /^"default";r=\d+;t=\d+$/;

function expectError(res: CallResult, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  expect(res.body).toBeTypeOf("object");
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe("string");
  expect(res.body.error.message.length).toBeGreaterThan(0);
}

/** An authenticated failure: counted, so it carries the RateLimit headers. */
function expectAuthedError(res: CallResult, status: number, code: string) {
  expectError(res, status, code);
  expect(res.headers.get("ratelimit")).toMatch(RATE_LIMIT_RE);
  expect(res.headers.get("ratelimit-policy")).toBe('"default";q=600;w=60');
}

const expectInvalid = (res: CallResult) => expectAuthedError(res, 400, "invalid_request");
const expectNotFound = (res: CallResult) => expectAuthedError(res, 404, "not_found");

/** Every 404 of one group has exactly the same body (nothing tells foreign, missing and malformed apart). */
function expectIdenticalNotFound(responses: { label: string; res: CallResult }[]) {
  expect(responses.length).toBeGreaterThan(1);
  for (const { label, res } of responses) {
    expect(res.status, `${label}: ${res.text}`).toBe(404);
    expectNotFound(res);
  }
  const first = responses[0]!.res.text;
  for (const { label, res } of responses) expect(res.text, label).toBe(first);
}

const withQuery = (path: string, query: string) => `${path}${path.includes("?") ? "&" : "?"}${query}`;
const withCursor = (path: string, cursor: string, extra = "") => withQuery(path, `cursor=${encodeURIComponent(cursor)}${extra}`);

/** Three suites of three cases (one failed): enough for cursors at limit 1 everywhere. */
function smallReport(): Report {
  return {
    suites: ["a", "b", "c"].map((name) => ({
      name,
      cases: [
        { name: `${name}1`, status: "passed" as const },
        { name: `${name}2`, status: "passed" as const },
        { name: `${name}3`, status: "failed" as const, failureMessage: "no" },
      ],
    })),
  };
}

// Organization A: project P (runs 1: phpunit.xml, 7 suites; 2: surefire-rerun.xml; 3–6 small,
// on branches main/dev) and project P2 (2 runs). Organization B: project Q with its own runs.
let keyA: string;
let keyB: string;
let orgA: string;
let P: string;
let P2: string;
let Q: string;
let caseOfA: number;
let caseOfB: number;
let maxCaseId: number;

beforeAll(async () => {
  const a = await h.newOrganization("Org A");
  keyA = a.apiKey;
  orgA = a.organization.id;
  const p = await h.newProject(orgA, "P");
  P = p.project.id;
  await h.uploadAndWait(p.uploadToken, JUNIT_FIXTURES["phpunit.xml"], { query: "branch=main" });
  h.clock.advance(1000);
  await h.uploadAndWait(p.uploadToken, JUNIT_FIXTURES["surefire-rerun.xml"], { query: "branch=dev" });
  for (let i = 0; i < 4; i++) {
    h.clock.advance(1000);
    await h.newRun(P, { meta: { branch: i % 2 ? "dev" : "main" }, report: smallReport() });
  }
  P2 = (await h.newProject(orgA, "P2")).project.id;
  await h.newRun(P2, { meta: { branch: "main" }, report: smallReport() });
  await h.newRun(P2, { meta: { branch: "main" }, report: smallReport() });

  const b = await h.newOrganization("Org B");
  keyB = b.apiKey;
  const q = await h.newProject(b.organization.id, "Q");
  Q = q.project.id;
  await h.uploadAndWait(q.uploadToken, JUNIT_FIXTURES["phpunit.xml"], { query: "branch=main" });
  await h.newRun(Q, { meta: { branch: "main" }, report: smallReport() });
  await h.newRun(Q, { meta: { branch: "main" }, report: smallReport() });

  caseOfA = (await h.get(`/api/v1/projects/${P}/test_runs/1/test_suites/3/test_cases?limit=1`, keyA)).body.data[0].id;
  caseOfB = (await h.get(`/api/v1/projects/${Q}/test_runs/1/test_suites/3/test_cases?limit=1`, keyB)).body.data[0].id;
  const newest = (await h.get(`/api/v1/projects/${Q}/test_runs/3/test_suites/3/test_cases?limit=1`, keyB)).body.data[0].id;
  maxCaseId = Math.max(caseOfA, caseOfB, newest);
  expect(typeof caseOfA).toBe("number");
  expect(typeof caseOfB).toBe("number");
});

const runs = (project: string) => `/api/v1/projects/${project}/test_runs`;
const run = (project: string, number: string | number) => `${runs(project)}/${number}`;
const suites = (project: string, number: string | number) => `${run(project, number)}/test_suites`;
const cases = (project: string, number: string | number, suite: string | number) => `${suites(project, number)}/${suite}/test_cases`;
const testCase = (id: string | number) => `/api/v1/test_cases/${id}`;

/** The four listings of org A's data, each with more than one item. */
const LISTINGS = () => ({
  runs: runs(P),
  suites: suites(P, 1),
  cases: cases(P, 1, 4),
  casesFiltered: `${cases(P, 1, 4)}?status=passed`,
});

describe("400 invalid_request: limit", () => {
  const BAD_LIMITS = [
    "0",
    "-1",
    "abc",
    "1.5",
    "1e2",
    "",
    " ",
    "%20",
    "+5",
    "0x10",
    "00",
    "-0",
    "10abc",
    "NaN",
    "Infinity",
    "%EF%BC%95",
    "1%00",
    "five",
  ];

  it.each(BAD_LIMITS)("limit=%j is a 400 on every listing, with a limit detail", async (limit) => {
    for (const [name, path] of Object.entries(LISTINGS())) {
      const res = await h.get(withQuery(path, `limit=${limit}`), keyA);
      expectInvalid(res);
      expect(
        res.body.error.details?.map((d: { field: string }) => d.field),
        name,
      ).toEqual(["limit"]);
    }
  });

  it("controls: 1, 007, 100 and 101 are accepted on every listing", async () => {
    for (const path of Object.values(LISTINGS())) {
      for (const limit of ["1", "007", "100", "101"])
        expect((await h.get(withQuery(path, `limit=${limit}`), keyA)).status, `${path} ${limit}`).toBe(200);
    }
  });

  it("a bad limit is a 400 even with a valid cursor", async () => {
    for (const path of Object.values(LISTINGS())) {
      const cursor = (await h.get(withQuery(path, "limit=1"), keyA)).body.pagination.next_cursor as string;
      expectInvalid(await h.get(withCursor(path, cursor, "&limit=0"), keyA));
      expect((await h.get(withCursor(path, cursor, "&limit=2"), keyA)).status).toBe(200);
    }
  });
});

describe("400 invalid_request: cursors", () => {
  const GARBAGE = [
    "abc",
    "null",
    "0",
    "-1",
    "{}",
    ".",
    "..",
    "a.b",
    "a.b.c",
    "AAAA.AAAA",
    "eyJ2IjoxfQ",
    "eyJ2IjoxfQ.",
    "%00",
    "😀.😀",
    "A".repeat(1025),
    "x".repeat(5000),
  ];

  it.each(GARBAGE.map((g, i) => [i, g] as const))("garbage cursor #%i is a 400 on every listing", async (_i, garbage) => {
    for (const path of Object.values(LISTINGS())) {
      const res = await h.get(withCursor(path, garbage), keyA);
      expectInvalid(res);
      expect(res.body.error.details?.map((d: { field: string }) => d.field)).toEqual(["cursor"]);
    }
  });

  it("an empty cursor parameter is a 400", async () => {
    for (const path of Object.values(LISTINGS())) expectInvalid(await h.get(withQuery(path, "cursor="), keyA));
  });

  it("every single-character edit, truncation and extension of a real cursor is a 400 (runs, suites, cases)", async () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (const path of [runs(P), suites(P, 1), cases(P, 1, 4)]) {
      const first = await h.get(withQuery(path, "limit=1"), keyA);
      const cursor = first.body.pagination.next_cursor as string;
      expect(typeof cursor).toBe("string");
      expect((await h.get(withCursor(path, cursor), keyA)).status).toBe(200);
      const failures: string[] = [];
      const check = async (label: string, edited: string) => {
        const res = await h.get(withCursor(path, edited), keyA);
        if (res.status !== 400 || res.body?.error?.code !== "invalid_request") failures.push(`${label}: ${res.status}`);
      };
      // Every position, substituted (sampled every 3rd to keep the request count modest).
      for (let pos = 0; pos < cursor.length; pos += 3) {
        const index = alphabet.indexOf(cursor[pos]!);
        const replacement = index === -1 ? "A" : alphabet[(index + 1) % alphabet.length]!;
        await check(`sub ${pos}`, cursor.slice(0, pos) + replacement + cursor.slice(pos + 1));
      }
      for (let length = 0; length < cursor.length; length += 5) if (length > 0) await check(`trunc ${length}`, cursor.slice(0, length));
      await check("trunc -1", cursor.slice(0, -1));
      await check("front -1", cursor.slice(1));
      for (const suffix of ["A", "=", ".", ".A", "AAAA"]) await check(`suffix ${suffix}`, cursor + suffix);
      await check("doubled", `${cursor}${cursor}`);
      const [payload, signature] = cursor.split(".") as [string, string];
      await check("payload only", payload);
      await check("signature only", signature);
      await check("swapped", `${signature}.${payload}`);
      expect(failures, path).toEqual([]);
      h.clock.advance(61_000);
    }
  });

  it("a forged payload (the real one, edited, without a valid signature) is a 400", async () => {
    const cursor = (await h.get(`${runs(P)}?limit=1`, keyA)).body.pagination.next_cursor as string;
    const [payload, signature] = cursor.split(".") as [string, string];
    const b64urlDecode = (s: string) =>
      new TextDecoder().decode(
        Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4)), (c) => c.charCodeAt(0)),
      );
    const b64urlEncode = (s: string) =>
      btoa(String.fromCharCode(...new TextEncoder().encode(s)))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, "");
    const decoded = JSON.parse(b64urlDecode(payload));
    expect(decoded).toMatchObject({ l: "test_runs", o: orgA });
    for (const forged of [
      { ...decoded, i: decoded.i + 1 },
      { ...decoded, f: "[]" },
      { ...decoded, o: UNKNOWN_UUID },
      { ...decoded, l: "test_suites" },
    ]) {
      expectInvalid(await h.get(withCursor(runs(P), `${b64urlEncode(JSON.stringify(forged))}.${signature}`), keyA));
    }
  });

  it("a cursor works only on the listing, filters, project, run and suite that issued it", async () => {
    const paths: Record<string, string> = {
      runs: runs(P),
      runsMain: `${runs(P)}?branch=main`,
      runsDev: `${runs(P)}?branch=dev`,
      runsPassed: `${runs(P)}?result=tests_failed`,
      runsProcessed: `${runs(P)}?status=processed`,
      runsMainProcessed: `${runs(P)}?branch=main&status=processed`,
      runsP2: runs(P2),
      suitesRun1: suites(P, 1),
      suitesRun3: suites(P, 3),
      suitesRun4: suites(P, 4),
      suitesP2Run1: suites(P2, 1),
      casesRun1Suite4: cases(P, 1, 4),
      casesRun1Suite3: cases(P, 1, 3),
      casesRun3Suite1: cases(P, 3, 1),
      casesRun4Suite1: cases(P, 4, 1),
      casesRun1Suite4Passed: `${cases(P, 1, 4)}?status=passed`,
      casesRun3Suite1Passed: `${cases(P, 3, 1)}?status=passed`,
      projects: "/api/v1/projects",
      alerts: "/api/v1/alerts?status=all",
    };
    const cursors: Record<string, string> = {};
    for (const [name, path] of Object.entries(paths)) {
      const res = await h.get(withQuery(path, "limit=1"), keyA);
      expect(res.status, `${name}: ${res.text}`).toBe(200);
      expect(res.body.pagination.has_more, name).toBe(true);
      cursors[name] = res.body.pagination.next_cursor;
    }
    h.clock.advance(61_000);
    const wrong: string[] = [];
    for (const [issuedBy, cursor] of Object.entries(cursors)) {
      for (const [usedOn, path] of Object.entries(paths)) {
        const res = await h.get(withCursor(path, cursor, "&limit=1"), keyA);
        if (issuedBy === usedOn) {
          if (res.status !== 200) wrong.push(`${issuedBy} on its own listing: ${res.status}`);
        } else if (res.status !== 400 || res.body?.error?.code !== "invalid_request") {
          wrong.push(`${issuedBy} on ${usedOn}: ${res.status}`);
        }
      }
      h.clock.advance(61_000);
    }
    expect(wrong).toEqual([]);
  });

  it("a filtered cursor is rejected without its filters, and an unfiltered one with any filter", async () => {
    const filtered = (await h.get(`${runs(P)}?branch=main&limit=1`, keyA)).body.pagination.next_cursor as string;
    const unfiltered = (await h.get(`${runs(P)}?limit=1`, keyA)).body.pagination.next_cursor as string;
    expectInvalid(await h.get(withCursor(runs(P), filtered), keyA));
    expectInvalid(await h.get(withCursor(`${runs(P)}?branch=main&status=processed`, filtered), keyA));
    expectInvalid(await h.get(withCursor(`${runs(P)}?branch=Main`, filtered), keyA));
    for (const q of ["branch=main", "status=processed", "result=tests_passed", "status=pending", "branch="]) {
      expectInvalid(await h.get(withCursor(`${runs(P)}?${q}`, unfiltered), keyA));
    }
    const caseCursor = (await h.get(`${cases(P, 1, 4)}?limit=1`, keyA)).body.pagination.next_cursor as string;
    for (const status of ["passed", "failed", "errored", "skipped"])
      expectInvalid(await h.get(withCursor(`${cases(P, 1, 4)}?status=${status}`, caseCursor), keyA));
    // Controls: unknown parameters do not change the listing.
    expect((await h.get(withCursor(`${runs(P)}?branch=main&foo=1`, filtered), keyA)).status).toBe(200);
    expect((await h.get(withCursor(`${runs(P)}?foo=1`, unfiltered), keyA)).status).toBe(200);
  });

  it("a cursor of organization A is useless to organization B: same answer as for an unknown project", async () => {
    for (const [path, unknownPath] of [
      [runs(P), runs(UNKNOWN_UUID)],
      [suites(P, 1), suites(UNKNOWN_UUID, 1)],
      [cases(P, 1, 4), cases(UNKNOWN_UUID, 1, 4)],
    ] as const) {
      const cursor = (await h.get(withQuery(path, "limit=1"), keyA)).body.pagination.next_cursor as string;
      const onForeign = await h.get(withCursor(path, cursor), keyB);
      const onUnknown = await h.get(withCursor(unknownPath, cursor), keyB);
      expect([400, 404]).toContain(onForeign.status);
      expect(onForeign.status).toBe(onUnknown.status);
      expect(onForeign.text).toBe(onUnknown.text);
    }
    // B's own listing of the same shape rejects A's cursor.
    const cursorA = (await h.get(`${runs(P)}?limit=1`, keyA)).body.pagination.next_cursor as string;
    expectInvalid(await h.get(withCursor(runs(Q), cursorA), keyB));
    const suitesA = (await h.get(`${suites(P, 1)}?limit=1`, keyA)).body.pagination.next_cursor as string;
    expectInvalid(await h.get(withCursor(suites(Q, 1), suitesA), keyB));
    const casesA = (await h.get(`${cases(P, 1, 4)}?limit=1`, keyA)).body.pagination.next_cursor as string;
    expectInvalid(await h.get(withCursor(cases(Q, 1, 4), casesA), keyB));
    expect((await h.get(withCursor(cases(P, 1, 4), casesA), keyA)).status).toBe(200);
  });
});

describe("400 invalid_request: unknown filter values", () => {
  const RESULT_DETAIL = { field: "result", message: "must be one of tests_passed, tests_failed, tests_errored" };
  const RUN_STATUS_DETAIL = { field: "status", message: "must be one of pending, processed, failed" };
  const CASE_STATUS_DETAIL = { field: "status", message: "must be one of passed, failed, errored, skipped" };

  it.each([
    "passed",
    "failed",
    "TESTS_PASSED",
    "Tests_Passed",
    "tests_passed%20",
    "",
    "tests_skipped",
    "null",
    "all",
    "processed",
    "tests_passed,tests_failed",
  ])("test_runs?result=%s → 400 with the result detail", async (value) => {
    const res = await h.get(`${runs(P)}?result=${value}`, keyA);
    expectInvalid(res);
    expect(res.body.error.details).toEqual([RESULT_DETAIL]);
  });

  it.each(["processing", "PENDING", "", "all", "tests_passed", "done", "passed", "error", "pending,failed"])(
    "test_runs?status=%s → 400 with the status detail",
    async (value) => {
      const res = await h.get(`${runs(P)}?status=${value}`, keyA);
      expectInvalid(res);
      expect(res.body.error.details).toEqual([RUN_STATUS_DETAIL]);
    },
  );

  it.each(["pass", "PASSED", "error", "fail", "", "pending", "all", "flaky", "processed", "tests_passed", "passed,failed"])(
    "test_cases?status=%s → 400 with the status detail",
    async (value) => {
      const res = await h.get(`${cases(P, 1, 3)}?status=${value}`, keyA);
      expectInvalid(res);
      expect(res.body.error.details).toEqual([CASE_STATUS_DETAIL]);
    },
  );

  it("both bad filters are reported; a bad filter is a 400 with a good one beside it", async () => {
    const res = await h.get(`${runs(P)}?result=nope&status=nope`, keyA);
    expectInvalid(res);
    expect(res.body.error.details).toEqual([RESULT_DETAIL, RUN_STATUS_DETAIL]);
    expectInvalid(await h.get(`${runs(P)}?branch=main&result=tests_passed&status=bogus`, keyA));
    expectInvalid(await h.get(`${runs(P)}?branch=main&result=bogus&status=processed`, keyA));
  });

  it("a repeated filter is a 400", async () => {
    expectInvalid(await h.get(`${runs(P)}?result=tests_passed&result=tests_failed`, keyA));
    expectInvalid(await h.get(`${runs(P)}?status=pending&status=processed`, keyA));
    expectInvalid(await h.get(`${cases(P, 1, 3)}?status=passed&status=failed`, keyA));
  });

  it("a branch longer than 255 characters is a 400 (255 is fine)", async () => {
    expect((await h.get(`${runs(P)}?branch=${"b".repeat(255)}`, keyA)).status).toBe(200);
    const res = await h.get(`${runs(P)}?branch=${"b".repeat(256)}`, keyA);
    expectInvalid(res);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(["branch"]);
  });

  it("a branch containing NUL is a 400 on branch, not a database error (Postgres text cannot hold NUL)", async () => {
    for (const branch of ["%00", "a%00b", `main%00`]) {
      const res = await h.get(`${runs(P)}?branch=${branch}`, keyA);
      expectInvalid(res);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(["branch"]);
    }
    // Other unusual branches are just unmatched.
    for (const branch of ["%C3%BC", "%F0%9F%98%80", encodeURIComponent("a\tb"), encodeURIComponent(`${"x".repeat(10)}\u202e`)]) {
      const res = await h.get(`${runs(P)}?branch=${branch}`, keyA);
      expect(res.status, `${branch}: ${res.text}`).toBe(200);
      expect(res.body.data).toEqual([]);
    }
  });

  it("the runs filters are not the cases filter, and vice versa", async () => {
    expectInvalid(await h.get(`${runs(P)}?status=skipped`, keyA));
    expectInvalid(await h.get(`${cases(P, 1, 3)}?status=pending`, keyA));
    // Controls.
    expect((await h.get(`${runs(P)}?status=failed`, keyA)).status).toBe(200);
    expect((await h.get(`${cases(P, 1, 3)}?status=failed`, keyA)).status).toBe(200);
  });
});

describe("404 not_found, identical bodies", () => {
  const BAD_PROJECT_IDS = () => [
    ["unknown", UNKNOWN_UUID],
    ["nil uuid", "00000000-0000-0000-0000-000000000000"],
    ["another organization's", Q],
    ["not a uuid", "abc"],
    ["a number", "1"],
    ["uuid with a suffix", `${P}x`],
    ["uuid without dashes", P.replace(/-/g, "")],
    ["truncated uuid", P.slice(0, -1)],
  ];

  it("unknown, malformed and foreign projects: one body on every project-scoped path", async () => {
    const responses: { label: string; res: CallResult }[] = [];
    for (const [label, id] of BAD_PROJECT_IDS()) {
      for (const [kind, path] of [
        ["runs", runs(id!)],
        ["runs filtered", `${runs(id!)}?branch=main&status=processed`],
        ["run", run(id!, 1)],
        ["suites", suites(id!, 1)],
        ["cases", cases(id!, 1, 3)],
        ["cases filtered", `${cases(id!, 1, 3)}?status=passed`],
      ]) {
        responses.push({ label: `${label} project, ${kind}`, res: await h.get(path!, keyA) });
      }
    }
    expectIdenticalNotFound(responses);
    // Controls: B sees its own project; A sees P.
    expect((await h.get(run(Q, 1), keyB)).status).toBe(200);
    expect((await h.get(cases(P, 1, 3), keyA)).status).toBe(200);
  });

  const BAD_RUN_NUMBERS = [
    "0",
    "-1",
    "abc",
    "1.5",
    "99999999999",
    "2147483648",
    "2147483647",
    "999",
    "7",
    "01",
    "+1",
    "1e0",
    "0x1",
    "%201",
    "1%20",
    "1.0",
    "%EF%BC%91",
    "-0",
    "NaN",
  ];

  it("malformed and nonexistent run numbers: one body on the run, its suites and its cases", async () => {
    const responses: { label: string; res: CallResult }[] = [];
    for (const number of BAD_RUN_NUMBERS) {
      responses.push({ label: `run ${number}`, res: await h.get(run(P, number), keyA) });
      responses.push({ label: `suites of run ${number}`, res: await h.get(suites(P, number), keyA) });
      responses.push({ label: `cases of run ${number}`, res: await h.get(cases(P, number, 1), keyA) });
    }
    // P2 has runs 1 and 2 only; run 3 of P exists.
    responses.push({ label: "P2 run 3", res: await h.get(run(P2, 3), keyA) });
    responses.push({ label: "P2 run 3 suites", res: await h.get(suites(P2, 3), keyA) });
    expectIdenticalNotFound(responses);
    expect((await h.get(run(P, 6), keyA)).status).toBe(200);
    expect((await h.get(run(P2, 2), keyA)).status).toBe(200);
  });

  it("a run of another organization's project is the same 404 as an unknown project's", async () => {
    const foreign = await h.get(run(Q, 1), keyA);
    const unknown = await h.get(run(UNKNOWN_UUID, 1), keyA);
    expectNotFound(foreign);
    expect(foreign.text).toBe(unknown.text);
    const foreignSuites = await h.get(suites(Q, 1), keyA);
    expect(foreignSuites.text).toBe(unknown.text);
    const foreignCases = await h.get(cases(Q, 1, 3), keyA);
    expect(foreignCases.text).toBe(unknown.text);
  });

  it("malformed and nonexistent suite numbers: one body", async () => {
    const responses: { label: string; res: CallResult }[] = [];
    for (const suite of [
      "0",
      "-1",
      "abc",
      "1.5",
      "99999999999",
      "2147483648",
      "2147483647",
      "8",
      "999",
      "01",
      "+1",
      "1e0",
      "%201",
      "%EF%BC%91",
    ]) {
      responses.push({ label: `suite ${suite}`, res: await h.get(cases(P, 1, suite), keyA) });
      responses.push({ label: `suite ${suite}, filtered`, res: await h.get(`${cases(P, 1, suite)}?status=failed`, keyA) });
    }
    // Run 1 has 7 suites, run 2 has 1, run 3 has 3: suite 5 exists only in run 1.
    responses.push({ label: "run 2 suite 5", res: await h.get(cases(P, 2, 5), keyA) });
    responses.push({ label: "run 3 suite 4", res: await h.get(cases(P, 3, 4), keyA) });
    responses.push({ label: "P2 run 1 suite 5", res: await h.get(cases(P2, 1, 5), keyA) });
    expectIdenticalNotFound(responses);
    expect((await h.get(cases(P, 1, 7), keyA)).status).toBe(200);
    expect((await h.get(cases(P, 3, 3), keyA)).status).toBe(200);
  });

  it("malformed, nonexistent and another organization's case ids: one body", async () => {
    const responses: { label: string; res: CallResult }[] = [];
    for (const id of [
      "0",
      "-1",
      "abc",
      "1.5",
      "1e3",
      "01",
      "+1",
      "0x1",
      "%201",
      "99999999999999999999",
      "9007199254740993",
      "9007199254740991",
      String(maxCaseId + 1000),
      String(maxCaseId + 1),
      "2147483648",
      UNKNOWN_UUID,
      String(caseOfB),
    ]) {
      responses.push({ label: `case ${id}`, res: await h.get(testCase(id), keyA) });
    }
    responses.push({ label: "A's case with B's key", res: await h.get(testCase(caseOfA), keyB) });
    expectIdenticalNotFound(responses);
    // Controls: each organization reads its own.
    expect((await h.get(testCase(caseOfA), keyA)).status).toBe(200);
    expect((await h.get(testCase(caseOfB), keyB)).status).toBe(200);
  });

  it("B's key sees none of A's runs, suites or cases, even with A's ids and numbers", async () => {
    for (const path of [runs(P), run(P, 1), suites(P, 1), cases(P, 1, 3), `${runs(P)}?status=processed`])
      expectNotFound(await h.get(path, keyB));
  });
});

describe("401 unauthorized", () => {
  const PATHS = () => [runs(P), `${runs(P)}?status=processed`, run(P, 1), suites(P, 1), cases(P, 1, 3), testCase(caseOfA)];

  it("without a key, or with a bad, revoked, foreign-scheme or upload key, on every path", async () => {
    const revoked = await h.newOrganization("Revoked");
    const regen = await h.admin("POST", `/organizations/${revoked.organization.id}/api_key/regenerate`);
    expect(regen.status).toBe(200);
    const { uploadToken } = await h.newProject(revoked.organization.id, "R");
    const variants: [string, Record<string, string>][] = [
      ["no header", {}],
      ["empty bearer", { authorization: "Bearer " }],
      ["garbage bearer", { authorization: "Bearer cta_invalid" }],
      ["key with a typo", { authorization: `Bearer ${keyA.slice(0, -1)}${keyA.endsWith("A") ? "B" : "A"}` }],
      ["revoked key", { authorization: `Bearer ${revoked.apiKey}` }],
      ["upload token", { authorization: `Bearer ${uploadToken}` }],
      ["basic scheme", { authorization: `Basic ${btoa(`${keyA}:`)}` }],
      ["key without scheme", { authorization: keyA }],
    ];
    for (const path of PATHS()) {
      for (const [label, headers] of variants) {
        const res = await h.get(path, null, { headers });
        expectError(res, 401, "unauthorized");
        expect(res.headers.get("www-authenticate"), label).toBe('Bearer realm="api"');
        expect(res.headers.get("ratelimit"), label).toBeNull();
      }
      // A key in the query string is ignored.
      expectError(await h.get(withQuery(path, `api_key=${keyA}`), null), 401, "unauthorized");
    }
    // Control: the same paths with the key.
    for (const path of PATHS()) expect((await h.get(path, keyA)).status).toBe(200);
  });

  it("authentication comes before validation and lookups", async () => {
    for (const path of [
      `${runs(P)}?limit=0`,
      `${runs(P)}?status=bogus`,
      run(P, "abc"),
      run(UNKNOWN_UUID, 1),
      testCase("0"),
      `${runs(P)}?cursor=garbage`,
    ]) {
      expectError(await h.get(path, null), 401, "unauthorized");
    }
  });
});

describe("405 method_not_allowed", () => {
  const templates = () => [
    ["runs", runs(P)],
    ["run", run(P, 1)],
    ["suites", suites(P, 1)],
    ["cases", cases(P, 1, 3)],
    ["case", testCase(caseOfA)],
    ["runs of an unknown project", runs(UNKNOWN_UUID)],
    ["unknown run", run(P, 999)],
    ["unknown case", testCase(maxCaseId + 1000)],
  ];

  it.each(["POST", "PUT", "PATCH", "DELETE"])("%s on every test-result path is a 405 with Allow: GET", async (method) => {
    for (const [label, path] of templates()) {
      const res = await h.call(method, path!, { key: keyA, body: method === "DELETE" ? undefined : { status: "failed" } });
      expectError(res, 405, "method_not_allowed");
      const allow = res.headers.get("allow");
      expect(allow, label).not.toBeNull();
      const methods = allow!.split(",").map((m) => m.trim().toUpperCase());
      expect(methods, label).toContain("GET");
      expect(methods, label).not.toContain(method);
    }
    // Nothing changed.
    const after = await h.get(run(P, 1), keyA);
    expect(after.body).toMatchObject({ status: "processed", result: "tests_errored", tests_count: 10 });
    expect((await h.get(testCase(caseOfA), keyA)).status).toBe(200);
  });
});
