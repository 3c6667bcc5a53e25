/**
 * GET /api/v1/projects/:id/exports/test_runs and …/test_cases, the happy paths: NDJSON lines
 * field by field (runs as GET of a run shows them, cases with their run's fields), order by run
 * arrival then case id (runs of one millisecond included), the half-open window's edges, which
 * runs each export includes, an empty window, and exports that span many batches: a run larger
 * than the default batch, and the same data read 7 rows per statement giving the very same
 * bytes. Errors: exports.errors.test.ts; security: exports.security.test.ts.
 */
import { inArray } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testCases } from "../../../src/db/schema";
import type { Report } from "../../../src/services/runs/test-runs";
import { type Harness, createHarness, inProcessHarness } from "../../support/harness";

let h: Harness;
/** The same database, read 7 rows per statement. */
let small: Harness;
let key: string;
let projectId: string;
let since: Date;
let until: Date;
/** The runs of the window, in arrival order, and the ones just outside it. */
const inWindow: { id: number; number: number; status: string; createdAt: Date; branch: string | null; commitSha: string | null }[] = [];
let before: { number: number };
let atUntil: { number: number };

const TEST_CASE_KEYS = [
  "test_case_id",
  "test_id",
  "name",
  "classname",
  "file",
  "status",
  "duration_ms",
  "failure_type",
  "failure_message",
  "run_number",
  "branch",
  "commit_sha",
  "run_created_at",
];
const SMALL_BATCH = 7;
/** Larger than the default batch (2,000 rows), so one run's cases take several statements. */
const LARGE_RUN_CASES = 2_100;

const reportCase = (prefix: string, i: number) => ({
  name: `${prefix} case ${i}`,
  classname: i % 3 === 0 ? null : `com.example.${prefix}`,
  file: i % 2 === 0 ? `src/${prefix}.test.ts` : null,
  status: (["passed", "failed", "errored", "skipped"] as const)[i % 4]!,
  durationMs: i % 5 === 0 ? null : i * 3,
  // Failed and errored cases with a type (or none) and a message; a passed or skipped case's message (a JSON report
  // may send one, a skip gives its reason) is no failure, and the export leaves it out.
  failureType: i % 4 === 1 ? "AssertionError" : i % 4 === 2 && i % 3 !== 0 ? "TypeError" : null,
  failureMessage:
    i % 4 === 1 ? "expected 1 to be 2" : i % 4 === 2 ? `boom ${i}` : i % 4 === 3 ? "skipped on CI" : i % 8 === 0 ? "noise" : null,
});

/** `count` cases in three suites, one nested in the first: the export's order (case id) crosses suites. */
function report(prefix: string, count: number): Report {
  const cases = Array.from({ length: count }, (_, i) => reportCase(prefix, i));
  const third = Math.ceil(count / 3);
  return {
    suites: [
      {
        name: `${prefix} suite`,
        cases: cases.slice(0, third),
        suites: [{ name: `${prefix} nested`, cases: cases.slice(third, 2 * third) }],
      },
      { name: `${prefix} second suite`, cases: cases.slice(2 * third) },
    ],
  };
}

function lines(text: string): any[] {
  if (text === "") return [];
  expect(text.endsWith("\n")).toBe(true);
  return text
    .slice(0, -1)
    .split("\n")
    .map((line) => JSON.parse(line));
}

const exportPath = (resource: string, from: Date | string, to: Date | string, project = projectId) =>
  `/api/v1/projects/${project}/exports/${resource}?since=${encodeURIComponent(typeof from === "string" ? from : from.toISOString())}&until=${encodeURIComponent(typeof to === "string" ? to : to.toISOString())}`;

beforeAll(async () => {
  h = await createHarness();
  // The same database and clock, an app that reads 7 rows per statement.
  small = inProcessHarness(h.db, { overrides: { exportBatchRows: SMALL_BATCH, clock: h.clock } }, async () => {});
  const org = await h.newOrganization("Exports org");
  key = org.apiKey;
  projectId = (await h.newProject(org.organization.id, "exported")).project.id;

  const keep = (run: Awaited<ReturnType<Harness["newRun"]>>) =>
    inWindow.push({
      id: run.id,
      number: run.number,
      status: run.status,
      createdAt: run.createdAt,
      branch: run.branch,
      commitSha: run.commitSha,
    });

  // The window starts on a whole second; one run a millisecond before it.
  h.clock.advance(1_000);
  since = h.clock.now();
  h.clock.set(since.getTime() - 1);
  before = await h.newRun(projectId, { report: report("before", 2) });
  h.clock.set(since);
  keep(await h.newRun(projectId, { report: report("first", 5), meta: { branch: "main", commitSha: "a".repeat(40) } }));
  h.clock.advance(1_000);
  keep(await h.newRun(projectId, { outcome: "pending" }));
  h.clock.advance(1_000);
  keep(await h.newRun(projectId, { outcome: "failed" }));
  h.clock.advance(1_000);
  keep(await h.newRun(projectId, { report: report("large", LARGE_RUN_CASES), meta: { branch: "feature/x" } }));
  // Three runs in one millisecond, then runs with no case at all and small ones, enough for several batches of runs.
  h.clock.advance(1_000);
  for (const name of ["tie-a", "tie-b", "tie-c"]) keep(await h.newRun(projectId, { report: report(name, 3) }));
  h.clock.advance(1_000);
  keep(await h.newRun(projectId, { report: { suites: [] } }));
  for (let i = 0; i < 10; i++) {
    h.clock.advance(10);
    keep(await h.newRun(projectId, { report: report(`small-${i}`, 1 + (i % 4)) }));
  }
  // The window's end, excluded: a run exactly then is not in it.
  h.clock.advance(1_000);
  until = h.clock.now();
  atUntil = await h.newRun(projectId, { report: report("after", 2) });
  h.clock.advance(1_000);
});
afterAll(async () => {
  await small?.close();
  await h?.close();
});

describe("GET /projects/:id/exports/test_runs", () => {
  it("streams every run that arrived in [since, until), whatever its status, each line as GET of the run shows it", async () => {
    const res = await h.get(exportPath("test_runs", since, until), key);
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("ratelimit")).toMatch(/^"default";r=\d+;t=\d+$/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("etag")).toBeNull();
    const runs = lines(res.text);
    expect(runs.map((run) => run.number)).toEqual(inWindow.map((run) => run.number));
    expect(new Set(runs.map((run) => run.status))).toEqual(new Set(["pending", "processed", "failed"]));
    expect(runs.map((run) => run.number)).not.toContain(before.number);
    expect(runs.map((run) => run.number)).not.toContain(atUntil.number);
    for (const run of runs) {
      const one = await h.get(`/api/v1/projects/${projectId}/test_runs/${run.number}`, key);
      expect(run).toEqual(one.body);
      expect(Object.keys(run)).toEqual(Object.keys(one.body));
    }
  });

  it("gives the same bytes when read a few rows per statement", async () => {
    const [whole, batched] = await Promise.all([
      h.get(exportPath("test_runs", since, until), key),
      small.get(exportPath("test_runs", since, until), key),
    ]);
    expect(lines(batched.text).length).toBeGreaterThan(SMALL_BATCH * 2);
    expect(batched.text).toBe(whole.text);
  });

  it("takes the window's bounds in any time zone: the instant counts", async () => {
    const offset = (date: Date) => new Date(date.getTime() + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
    const res = await h.get(exportPath("test_runs", offset(since), offset(until)), key);
    expect(res.status, res.text).toBe(200);
    expect(lines(res.text).map((run) => run.number)).toEqual(inWindow.map((run) => run.number));
  });

  it("an empty window is a 200 with an empty body", async () => {
    const res = await h.get(exportPath("test_runs", new Date(until.getTime() + 60_000), new Date(until.getTime() + 120_000)), key);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.text).toBe("");
  });

  it("a window of one millisecond holds the run of that millisecond only", async () => {
    const res = await h.get(exportPath("test_runs", since, new Date(since.getTime() + 1)), key);
    expect(lines(res.text).map((run) => run.number)).toEqual([inWindow[0]!.number]);
  });
});

const isFailure = (status: string) => status === "failed" || status === "errored";

describe("GET /projects/:id/exports/test_cases", () => {
  async function expectedLines() {
    const processed = inWindow.filter((run) => run.status === "processed");
    const rows = await h.db
      .select()
      .from(testCases)
      .where(
        inArray(
          testCases.testRunId,
          processed.map((run) => run.id),
        ),
      );
    const position = new Map(processed.map((run, i) => [run.id, i]));
    rows.sort((a, b) => position.get(a.testRunId)! - position.get(b.testRunId)! || a.id - b.id);
    const runOf = new Map(processed.map((run) => [run.id, run]));
    return rows.map((row) => {
      const run = runOf.get(row.testRunId)!;
      return {
        test_case_id: row.id,
        test_id: row.testId,
        name: row.name,
        classname: row.classname,
        file: row.file,
        status: row.status,
        duration_ms: row.durationMs,
        failure_type: isFailure(row.status) ? row.failureType : null,
        failure_message: isFailure(row.status) ? row.failureMessage : null,
        run_number: run.number,
        branch: run.branch,
        commit_sha: run.commitSha,
        run_created_at: run.createdAt.toISOString(),
      };
    });
  }

  it("streams the cases of the window's processed runs, by run arrival then case id, with their run's fields", async () => {
    const res = await h.get(exportPath("test_cases", since, until), key);
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("etag")).toBeNull();
    const cases = lines(res.text);
    const expected = await expectedLines();
    expect(cases.length).toBe(5 + LARGE_RUN_CASES + 3 * 3 + [1, 2, 3, 4, 1, 2, 3, 4, 1, 2].reduce((a, b) => a + b, 0));
    expect(cases).toEqual(expected);
    for (const line of cases) expect(Object.keys(line)).toEqual(TEST_CASE_KEYS);
    // Runs of one millisecond come in arrival order (their numbers), each run's cases together.
    const numbers = cases.map((line) => line.run_number);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(cases.some((line) => line.run_number === before.number || line.run_number === atUntil.number)).toBe(false);
  });

  it("carries each failed or errored case's failure_type and failure_message, null for the others", async () => {
    const cases = lines((await h.get(exportPath("test_cases", since, until), key)).text);
    const byStatus = (status: string) => cases.filter((line) => line.status === status);
    expect(byStatus("failed").length).toBeGreaterThan(0);
    for (const line of byStatus("failed"))
      expect(line).toMatchObject({ failure_type: "AssertionError", failure_message: "expected 1 to be 2" });
    const errored = byStatus("errored");
    expect(errored.some((line) => line.failure_type === "TypeError")).toBe(true);
    expect(errored.some((line) => line.failure_type === null)).toBe(true);
    for (const line of errored) expect(line.failure_message).toMatch(/^boom \d+$/);
    for (const line of [...byStatus("passed"), ...byStatus("skipped")])
      expect(line).toMatchObject({ failure_type: null, failure_message: null });
    // As the case's own GET shows them.
    for (const line of [errored[0]!, byStatus("failed")[0]!]) {
      const one = await h.get(`/api/v1/test_cases/${line.test_case_id}`, key);
      expect(one.body).toMatchObject({ failure_type: line.failure_type, failure_message: line.failure_message });
    }
  });

  it("a line agrees with the case and the test the API shows", async () => {
    const cases = lines((await h.get(exportPath("test_cases", since, until), key)).text);
    const sample = cases.find((line) => line.status === "errored" && line.classname !== null && line.file !== null)!;
    const one = await h.get(`/api/v1/test_cases/${sample.test_case_id}`, key);
    expect(one.body).toMatchObject({
      id: sample.test_case_id,
      test_id: sample.test_id,
      name: sample.name,
      classname: sample.classname,
      file: sample.file,
      status: "errored",
    });
    expect(one.body.test_run_number).toBe(sample.run_number);
    const test = await h.get(`/api/v1/tests/${sample.test_id}`, key);
    expect(test.status, test.text).toBe(200);
    expect(test.body).toMatchObject({ name: sample.name, classname: sample.classname, file: sample.file });
    const first = cases.find((line) => line.run_number === inWindow[0]!.number)!;
    expect(first).toMatchObject({ branch: "main", commit_sha: "a".repeat(40), run_created_at: since.toISOString() });
  });

  it("gives the same bytes when read 7 rows per statement", async () => {
    const [whole, batched] = await Promise.all([
      h.get(exportPath("test_cases", since, until), key),
      small.get(exportPath("test_cases", since, until), key),
    ]);
    expect(batched.status).toBe(200);
    expect(batched.text).toBe(whole.text);
  });

  it("the window's edges: a run at since is in, a run at until is not, and a window around one run holds its cases only", async () => {
    const justFirst = lines((await h.get(exportPath("test_cases", since, new Date(since.getTime() + 1)), key)).text);
    expect(justFirst.map((line) => line.run_number)).toEqual(Array(5).fill(inWindow[0]!.number));
    const atEnd = lines((await h.get(exportPath("test_cases", until, new Date(until.getTime() + 1)), key)).text);
    expect(atEnd.map((line) => line.run_number)).toEqual([atUntil.number, atUntil.number]);
  });

  it("a window with runs but none processed, and an empty window, are 200s with empty bodies", async () => {
    const pending = inWindow.find((run) => run.status === "pending")!;
    const res = await h.get(exportPath("test_cases", pending.createdAt, new Date(pending.createdAt.getTime() + 1)), key);
    expect(res.status).toBe(200);
    expect(res.text).toBe("");
    // An empty window within retention (one before it is a 410 past_retention: past-retention.test.ts).
    const tomorrow = h.clock.now().getTime() + 86_400_000;
    const empty = await h.get(exportPath("test_cases", new Date(tomorrow), new Date(tomorrow + 86_400_000)), key);
    expect(empty.status).toBe(200);
    expect(empty.headers.get("content-type")).toBe("application/x-ndjson");
    expect(empty.text).toBe("");
  });
});

describe("the OpenAPI document", () => {
  it("lists both exports with their window parameters and the NDJSON media type", async () => {
    const doc = (await h.get("/api/v1/openapi.json")).body;
    for (const resource of ["test_runs", "test_cases"]) {
      const operation = doc.paths[`/projects/{id}/exports/${resource}`].get;
      expect(operation.tags).toEqual(["Exports"]);
      const params = Object.fromEntries(operation.parameters.map((p: any) => [p.name, p]));
      expect(params.since).toMatchObject({ in: "query", required: true });
      expect(params.until).toMatchObject({ in: "query", required: true });
      expect(params.id).toMatchObject({ in: "path", required: true });
      expect(Object.keys(operation.responses["200"].content)).toEqual(["application/x-ndjson"]);
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["400", "401", "404", "429", "503"]));
    }
    expect(doc.components.schemas.TestCaseExportLine.required).toEqual(TEST_CASE_KEYS);
  });
});
