/**
 * /api/v1 reads of uploaded test results, the happy paths: real JUnit uploaded through
 * /uploads/v1 and read back field by field (runs, flat suites with parent_number, a suite's own
 * cases, retries as attempts, GET /test_cases/:id), the filters of GET /projects/:id/test_runs
 * alone and combined, newest-first order, and full cursor traversals (runs sharing one
 * created_at included) of runs, suites and cases. Errors live in test-runs.errors.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXPECTED, JUNIT_FIXTURES } from "../../fixtures/junit";
import { type CallResult, type Harness, WEB_APP_URL, collectAll, createHarness } from "../../support/harness";
import type { Report, ReportCase, ReportSuite } from "../../../src/services/runs/test-runs";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const RUN_KEYS = [
  "number",
  "project_id",
  "status",
  "failure_reason",
  "result",
  "branch",
  "commit_sha",
  "base_commit_sha",
  "build_id",
  "build_url",
  "variant",
  "tags",
  "started_at",
  "created_at",
  "processed_at",
  "duration_ms",
  "tests_count",
  "passed_count",
  "failed_count",
  "errored_count",
  "skipped_count",
  "quarantined_failures_count",
  "run_key",
  "shard_total",
  "parts_count",
  "completed_at",
  "passed_on_retry_count",
  "failed_attempts_duration_ms",
  "verdict_counts",
  "url",
];
const SUITE_KEYS = [
  "number",
  "parent_number",
  "name",
  "duration_ms",
  "tests_count",
  "passed_count",
  "failed_count",
  "errored_count",
  "skipped_count",
];
const CASE_KEYS = [
  "id",
  "project_id",
  "test_run_number",
  "suite_number",
  "test_id",
  "name",
  "classname",
  "file",
  "status",
  "duration_ms",
  "failure_type",
  "failure_message",
  "failure_text",
  "attempts",
  "quarantined",
  "system_out",
  "system_err",
  "url",
];
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RATE_LIMIT_RE = /^"default";r=\d+;t=\d+$/;
const CASE_STATUSES = ["passed", "failed", "errored", "skipped"] as const;
const now = () => h.clock.now().toISOString();

type Org = { apiKey: string; organizationId: string };

async function newOrg(name = "Test results org"): Promise<Org> {
  const { organization, apiKey } = await h.newOrganization(name);
  return { apiKey, organizationId: organization.id };
}

/** A 200 with the JSON conventions of /api/v1 (RateLimit headers included). */
function expectOk(res: CallResult) {
  expect(res.status, res.text).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  expect(res.headers.get("ratelimit")).toMatch(RATE_LIMIT_RE);
  expect(res.headers.get("ratelimit-policy")).toBe('"default";q=600;w=60');
}

function expectListShape(res: CallResult) {
  expectOk(res);
  expect(Object.keys(res.body).sort()).toEqual(["data", "pagination"]);
  expect(Array.isArray(res.body.data)).toBe(true);
  expect(Object.keys(res.body.pagination).sort()).toEqual(["has_more", "next_cursor"]);
  expect(res.body.pagination.has_more).toBe(res.body.pagination.next_cursor !== null);
  if (res.body.pagination.next_cursor !== null) expect(typeof res.body.pagination.next_cursor).toBe("string");
}

async function list(path: string, key: string) {
  const res = await h.get(path, key);
  expectListShape(res);
  return res.body as { data: any[]; pagination: { next_cursor: string | null; has_more: boolean } };
}

async function getOk(path: string, key: string) {
  const res = await h.get(path, key);
  expectOk(res);
  return res.body;
}

function expectIsoOrNull(value: unknown) {
  if (value === null) return;
  expect(value).toMatch(ISO_UTC);
  expect(new Date(value as string).toISOString()).toBe(value);
}

const isIntOrNull = (value: unknown) => value === null || (typeof value === "number" && Number.isInteger(value));

function expectRunTypes(run: any) {
  expect(Object.keys(run)).toEqual(RUN_KEYS);
  expect(Number.isInteger(run.number) && run.number >= 1).toBe(true);
  expect(run.project_id).toMatch(UUID_RE);
  expect(["pending", "processed", "failed"]).toContain(run.status);
  expect(run.failure_reason === null || typeof run.failure_reason === "string").toBe(true);
  expect([null, "tests_passed", "tests_failed", "tests_errored"]).toContain(run.result);
  for (const key of ["branch", "commit_sha", "build_id", "build_url"]) expect(run[key] === null || typeof run[key] === "string").toBe(true);
  expect(Array.isArray(run.tags) && run.tags.every((t: unknown) => typeof t === "string")).toBe(true);
  expectIsoOrNull(run.started_at);
  expect(run.created_at).toMatch(ISO_UTC);
  expectIsoOrNull(run.processed_at);
  expect(isIntOrNull(run.duration_ms)).toBe(true);
  for (const key of [
    "tests_count",
    "passed_count",
    "failed_count",
    "errored_count",
    "skipped_count",
    "passed_on_retry_count",
    "failed_attempts_duration_ms",
  ])
    expect(Number.isInteger(run[key]) && run[key] >= 0).toBe(true);
  expect(run.tests_count).toBe(run.passed_count + run.failed_count + run.errored_count + run.skipped_count);
  expect(run.url).toBe(`${WEB_APP_URL}/projects/${run.project_id}/runs/${run.number}`);
  // State consistency: only processed runs have a result; only failed ones a reason; pending ones no processed_at.
  expect(run.result === null).toBe(run.status !== "processed");
  expect(run.failure_reason === null).toBe(run.status !== "failed");
  expect(run.processed_at === null).toBe(run.status === "pending");
  // Compared when processed (docs/verdicts.md); null until then.
  expect(run.verdict_counts === null).toBe(run.status !== "processed");
}

function expectSuiteTypes(suite: any) {
  expect(Object.keys(suite)).toEqual(SUITE_KEYS);
  expect(Number.isInteger(suite.number) && suite.number >= 1).toBe(true);
  expect(suite.parent_number === null || (Number.isInteger(suite.parent_number) && suite.parent_number < suite.number)).toBe(true);
  expect(typeof suite.name).toBe("string");
  expect(isIntOrNull(suite.duration_ms)).toBe(true);
  expect(suite.tests_count).toBe(suite.passed_count + suite.failed_count + suite.errored_count + suite.skipped_count);
}

function expectCaseTypes(c: any, projectId: string, runNumber: number) {
  expect(Object.keys(c)).toEqual(CASE_KEYS);
  expect(typeof c.id).toBe("number");
  expect(Number.isSafeInteger(c.id) && c.id >= 1).toBe(true);
  expect(c.project_id).toBe(projectId);
  expect(c.test_run_number).toBe(runNumber);
  expect(Number.isInteger(c.suite_number) && c.suite_number >= 1).toBe(true);
  expect(typeof c.name).toBe("string");
  for (const key of ["classname", "file", "failure_type", "failure_message", "failure_text", "system_out", "system_err"])
    expect(c[key] === null || typeof c[key] === "string").toBe(true);
  expect(CASE_STATUSES).toContain(c.status);
  expect(isIntOrNull(c.duration_ms)).toBe(true);
  expect(Array.isArray(c.attempts)).toBe(true);
  for (const attempt of c.attempts) {
    expect(Object.keys(attempt)).toEqual(["status", "duration_ms", "failure_message"]);
    expect(CASE_STATUSES).toContain(attempt.status);
    expect(isIntOrNull(attempt.duration_ms)).toBe(true);
    expect(attempt.failure_message === null || typeof attempt.failure_message === "string").toBe(true);
  }
  // A failure's url is the run page at its anchor; a passed or skipped case's the run page (docs/web-app.md).
  const anchor = c.status === "failed" || c.status === "errored" ? `#case-${c.id}` : "";
  expect(c.url).toBe(`${WEB_APP_URL}/projects/${projectId}/runs/${runNumber}${anchor}`);
}

const runsPath = (projectId: string) => `/api/v1/projects/${projectId}/test_runs`;
const suitesPath = (projectId: string, run: number) => `${runsPath(projectId)}/${run}/test_suites`;
const casesPath = (projectId: string, run: number, suite: number) => `${suitesPath(projectId, run)}/${suite}/test_cases`;

/** Strictly decreasing and without duplicates. */
function expectStrictlyDescending(values: number[]) {
  for (let i = 1; i < values.length; i++) expect(values[i]!, `position ${i} of ${JSON.stringify(values)}`).toBeLessThan(values[i - 1]!);
}

describe("phpunit.xml (nested suites) uploaded and read back", () => {
  let org: Org;
  let projectId: string;
  let uploaded: any;
  let arrivedAt: string;
  const query = [
    "branch=main",
    "commit_sha=0123456789abcdef0123456789abcdef01234567",
    "build_id=build-7",
    `build_url=${encodeURIComponent("https://ci.example.test/builds/7?attempt=1")}`,
    "tags=php,unit",
    `started_at=${encodeURIComponent("2026-01-01T10:00:00.250+02:00")}`,
  ].join("&");

  beforeAll(async () => {
    org = await newOrg();
    const { project, uploadToken } = await h.newProject(org.organizationId, "Shop");
    projectId = project.id;
    h.clock.advance(1000);
    arrivedAt = now();
    uploaded = await h.uploadAndWait(uploadToken, JUNIT_FIXTURES["phpunit.xml"], { query });
  });

  it("GET /projects/:id/test_runs/:number returns every field of the run", async () => {
    const run = await getOk(`${runsPath(projectId)}/1`, org.apiKey);
    expect(run).toEqual({
      number: 1,
      project_id: projectId,
      status: "processed",
      failure_reason: null,
      result: "tests_errored",
      branch: "main",
      commit_sha: "0123456789abcdef0123456789abcdef01234567",
      base_commit_sha: null,
      build_id: "build-7",
      build_url: "https://ci.example.test/builds/7?attempt=1",
      variant: "",
      tags: ["php", "unit"],
      started_at: "2026-01-01T08:00:00.250Z",
      created_at: arrivedAt,
      processed_at: arrivedAt,
      // No <testsuites time>: the sum of the top-level suites (0.213702 s → 214 ms).
      duration_ms: 214,
      tests_count: 10,
      passed_count: 6,
      failed_count: 1,
      errored_count: 1,
      skipped_count: 2,
      quarantined_failures_count: 0,
      run_key: null,
      shard_total: null,
      parts_count: 0,
      completed_at: null,
      passed_on_retry_count: 0,
      failed_attempts_duration_ms: 0,
      // Compared with its base when processed (docs/verdicts.md): the first run has none, its two failures are new.
      verdict_counts: { quarantined: 0, infrastructure: 0, failing_on_base: 0, flaky: 0, new: 2 },
      url: `${WEB_APP_URL}/projects/${projectId}/runs/1`,
    });
    expectRunTypes(run);
    expect(run).toMatchObject(EXPECTED["phpunit.xml"]!.totals);
    // The upload interface reports the same object (plus its api_url).
    const { api_url: _apiUrl, ...uploadedRun } = uploaded;
    expect(uploadedRun).toEqual(run);
  });

  it("the run is listed, identical to its GET", async () => {
    const run = await getOk(`${runsPath(projectId)}/1`, org.apiKey);
    const page = await list(runsPath(projectId), org.apiKey);
    expect(page.data).toEqual([run]);
    expect(page.pagination).toEqual({ next_cursor: null, has_more: false });
  });

  it("test_suites lists every suite, nested ones included, by descending number with parent_number", async () => {
    const page = await list(suitesPath(projectId, 1), org.apiKey);
    expect(page.pagination).toEqual({ next_cursor: null, has_more: false });
    for (const suite of page.data) expectSuiteTypes(suite);
    expect(page.data.map((s: any) => s.number)).toEqual([7, 6, 5, 4, 3, 2, 1]);
    // `time` in seconds → whole milliseconds, rounded.
    const durations: Record<number, number> = { 1: 214, 2: 11, 3: 6, 4: 2, 5: 5, 6: 203, 7: 203 };
    const expected = [...EXPECTED["phpunit.xml"]!.suites].reverse().map((s) => ({ ...s, duration_ms: durations[s.number] }));
    expect(page.data).toEqual(expected);
    expect(page.data.find((s: any) => s.number === 4)).toEqual({
      number: 4,
      parent_number: 3,
      name: "App\\Tests\\Unit\\MoneyTest::testParse",
      duration_ms: 2,
      tests_count: 3,
      passed_count: 3,
      failed_count: 0,
      errored_count: 0,
      skipped_count: 0,
    });
    // Every parent_number names a suite of the same run.
    const numbers = new Set(page.data.map((s: any) => s.number));
    for (const s of page.data) if (s.parent_number !== null) expect(numbers.has(s.parent_number)).toBe(true);
  });

  it("test_cases lists a suite's own cases (not its nested suites'), by descending id, matching the fixture", async () => {
    const expectedCases = EXPECTED["phpunit.xml"]!.cases;
    const suites = (await list(suitesPath(projectId, 1), org.apiKey)).data;
    const byNumber = new Map(suites.map((s: any) => [s.number, s]));
    const all: any[] = [];
    for (let number = 1; number <= 7; number++) {
      const page = await list(casesPath(projectId, 1, number), org.apiKey);
      expect(page.pagination).toEqual({ next_cursor: null, has_more: false });
      for (const c of page.data) {
        expectCaseTypes(c, projectId, 1);
        expect(c.suite_number).toBe(number);
      }
      expectStrictlyDescending(page.data.map((c: any) => c.id));
      // Newest first: reverse document order within the suite.
      const own = expectedCases.filter((c) => c.suite_number === number);
      expect(page.data.map((c: any) => c.name)).toEqual(own.map((c) => c.name).reverse());
      // A suite's count = its own cases + its children's counts.
      const children = suites.filter((s: any) => s.parent_number === number);
      expect((byNumber.get(number) as any).tests_count).toBe(
        page.data.length + children.reduce((sum: number, s: any) => sum + s.tests_count, 0),
      );
      all.push(...page.data);
    }
    // The parents (1, 2, 6) hold no cases of their own: everything sits in the leaves and in suite 3.
    expect(all).toHaveLength(10);
    expect(new Set(all.map((c) => c.id)).size).toBe(10);
    const summary = (c: any) => ({
      suite_number: c.suite_number,
      classname: c.classname,
      name: c.name,
      status: c.status,
      duration_ms: c.duration_ms,
      attempt_statuses: c.attempts.map((a: any) => a.status),
    });
    const sortKey = (c: { suite_number: number; name: string }) => `${c.suite_number}|${c.name}`;
    expect(all.map(summary).sort((a, b) => sortKey(a).localeCompare(sortKey(b)))).toEqual(
      [...expectedCases].sort((a, b) => sortKey(a).localeCompare(sortKey(b))),
    );
    // Ids follow document order (run-wide).
    const idsInDocumentOrder = expectedCases.map((e) => all.find((c) => c.suite_number === e.suite_number && c.name === e.name)!.id);
    const inSuiteOrder = (suiteNumber: number) => idsInDocumentOrder.filter((_, i) => expectedCases[i]!.suite_number === suiteNumber);
    for (const n of [3, 4, 5, 7]) expectStrictlyDescending(inSuiteOrder(n).reverse());
  });

  it("every field of a failed, an errored, a skipped and a passed-with-output case", async () => {
    const money = (await list(casesPath(projectId, 1, 3), org.apiKey)).data;
    const slug = (await list(casesPath(projectId, 1, 5), org.apiKey)).data;
    const repo = (await list(casesPath(projectId, 1, 7), org.apiKey)).data;
    const parse = (await list(casesPath(projectId, 1, 4), org.apiKey)).data;
    const byName = (items: any[], name: string) => items.find((c) => c.name === name);
    const common = {
      project_id: projectId,
      test_run_number: 1,
      attempts: [],
      quarantined: false,
      system_err: null,
      test_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    };
    const urlOf = (c: any) =>
      `${WEB_APP_URL}/projects/${projectId}/runs/1${c.status === "failed" || c.status === "errored" ? `#case-${c.id}` : ""}`;

    const subtract = byName(money, "testSubtract");
    expect(subtract).toEqual({
      ...common,
      id: subtract.id,
      suite_number: 3,
      name: "testSubtract",
      classname: "App.Tests.Unit.MoneyTest",
      file: "/home/runner/work/shop/shop/tests/Unit/MoneyTest.php",
      status: "failed",
      duration_ms: 3,
      failure_type: "PHPUnit\\Framework\\ExpectationFailedException",
      failure_message:
        "App\\Tests\\Unit\\MoneyTest::testSubtract\nFailed asserting that 899 matches expected 900.\n\n/home/runner/work/shop/shop/tests/Unit/MoneyTest.php:27",
      // No message attribute: the text is the message and the text.
      failure_text:
        "App\\Tests\\Unit\\MoneyTest::testSubtract\nFailed asserting that 899 matches expected 900.\n\n/home/runner/work/shop/shop/tests/Unit/MoneyTest.php:27",
      system_out: null,
      url: urlOf(subtract),
    });

    const findByCustomer = byName(repo, "testFindByCustomer");
    expect(findByCustomer).toEqual({
      ...common,
      id: findByCustomer.id,
      suite_number: 7,
      name: "testFindByCustomer",
      classname: "App.Tests.Integration.OrderRepositoryTest",
      file: "/home/runner/work/shop/shop/tests/Integration/OrderRepositoryTest.php",
      status: "errored",
      duration_ms: 202,
      failure_type: "PDOException",
      failure_message:
        "App\\Tests\\Integration\\OrderRepositoryTest::testFindByCustomer\nPDOException: SQLSTATE[HY000] [2002] Connection refused\n\n/home/runner/work/shop/shop/src/Infrastructure/Db/ConnectionFactory.php:38\n/home/runner/work/shop/shop/tests/Integration/OrderRepositoryTest.php:14",
      failure_text:
        "App\\Tests\\Integration\\OrderRepositoryTest::testFindByCustomer\nPDOException: SQLSTATE[HY000] [2002] Connection refused\n\n/home/runner/work/shop/shop/src/Infrastructure/Db/ConnectionFactory.php:38\n/home/runner/work/shop/shop/tests/Integration/OrderRepositoryTest.php:14",
      system_out: null,
      url: urlOf(findByCustomer),
    });

    const skipped = byName(money, "testFormatForLocale");
    expect(skipped).toEqual({
      ...common,
      id: skipped.id,
      suite_number: 3,
      name: "testFormatForLocale",
      classname: "App.Tests.Unit.MoneyTest",
      file: "/home/runner/work/shop/shop/tests/Unit/MoneyTest.php",
      status: "skipped",
      duration_ms: 0,
      failure_type: null,
      failure_message: null,
      failure_text: null,
      system_out: null,
      url: urlOf(skipped),
    });

    const slugify = byName(slug, "testSlugify");
    expect(slugify).toEqual({
      ...common,
      id: slugify.id,
      suite_number: 5,
      name: "testSlugify",
      classname: "App.Tests.Unit.SlugTest",
      file: "/home/runner/work/shop/shop/tests/Unit/SlugTest.php",
      status: "passed",
      duration_ms: 4,
      failure_type: null,
      failure_message: null,
      failure_text: null,
      system_out: 'debug: slugify("Crème brûlée & café") => "creme-brulee-cafe"\n',
      url: urlOf(slugify),
    });

    // A <warning> is not an outcome: the case passed and carries no failure.
    expect(byName(slug, "testTransliteration")).toMatchObject({ status: "passed", failure_type: null, failure_message: null });
    // Entities in names are decoded.
    expect(byName(parse, 'testParse with data set "thousands separator"')).toMatchObject({ status: "passed", suite_number: 4 });
  });

  it("GET /test_cases/:id returns exactly the listing entry, for every case", async () => {
    let seen = 0;
    for (let number = 1; number <= 7; number++) {
      for (const entry of (await list(casesPath(projectId, 1, number), org.apiKey)).data) {
        expect(await getOk(`/api/v1/test_cases/${entry.id}`, org.apiKey)).toEqual(entry);
        seen++;
      }
    }
    expect(seen).toBe(10);
  });

  it("the status filter of test_cases", async () => {
    const statusesIn = async (suite: number, status: string) =>
      (await list(`${casesPath(projectId, 1, suite)}?status=${status}`, org.apiKey)).data.map((c: any) => c.name);
    expect(await statusesIn(3, "passed")).toEqual(["testAdd"]);
    expect(await statusesIn(3, "failed")).toEqual(["testSubtract"]);
    expect(await statusesIn(3, "skipped")).toEqual(["testFormatForLocale"]);
    expect(await statusesIn(3, "errored")).toEqual([]);
    expect(await statusesIn(7, "errored")).toEqual(["testFindByCustomer"]);
    expect(await statusesIn(7, "skipped")).toEqual(["testSaveAssignsId"]);
    expect(await statusesIn(4, "passed")).toEqual([
      'testParse with data set "thousands separator"',
      "testParse with data set #1",
      "testParse with data set #0",
    ]);
    // A parent with no cases of its own has none in any status either.
    for (const status of CASE_STATUSES) expect(await statusesIn(1, status)).toEqual([]);
  });
});

describe("gradle-retries.xml: what the retries cost", () => {
  it("counts the cases that passed on a retry and the time of every failed attempt, the final failures' included", async () => {
    const org = await newOrg();
    const { project, uploadToken } = await h.newProject(org.organizationId, "Mail");
    h.clock.advance(1000);
    await h.uploadAndWait(uploadToken, JUNIT_FIXTURES["gradle-retries.xml"]);
    const run = await getOk(`${runsPath(project.id)}/1`, org.apiKey);
    expectRunTypes(run);
    // retriesOnSmtpTimeout() failed in 1.004 s, then passed; sendsDailyDigest() failed in 0.217 s and 0.204 s before its final failure.
    expect(run).toMatchObject({ passed_on_retry_count: 1, failed_attempts_duration_ms: 1004 + 217 + 204 });
  });
});

describe("surefire-rerun.xml (retries) uploaded and read back", () => {
  let org: Org;
  let projectId: string;
  let cases: any[];

  beforeAll(async () => {
    org = await newOrg();
    const { project, uploadToken } = await h.newProject(org.organizationId, "Search");
    projectId = project.id;
    h.clock.advance(1000);
    await h.uploadAndWait(uploadToken, JUNIT_FIXTURES["phpunit.xml"]); // run 1, so the rerun report is run 2
    h.clock.advance(1000);
    await h.uploadAndWait(uploadToken, JUNIT_FIXTURES["surefire-rerun.xml"], { query: "branch=release%2F2.0&tags=java&tags=jdk21,java" });
    cases = (await list(casesPath(projectId, 2, 1), org.apiKey)).data;
  });

  it("the run: counts over final outcomes, duration from the root suite's time", async () => {
    const run = await getOk(`${runsPath(projectId)}/2`, org.apiKey);
    expectRunTypes(run);
    expect(run).toMatchObject({
      number: 2,
      status: "processed",
      result: "tests_errored",
      branch: "release/2.0",
      tags: ["java", "jdk21"],
      commit_sha: null,
      build_id: null,
      build_url: null,
      started_at: null,
      duration_ms: 4918,
      ...EXPECTED["surefire-rerun.xml"]!.totals,
      // indexesDocument (failed twice) and searchesByPrefix (errored once) passed on a rerun; Surefire gives reruns no time.
      passed_on_retry_count: 2,
      failed_attempts_duration_ms: 0,
    });
    expect((await list(runsPath(projectId), org.apiKey)).data.map((r: any) => r.number)).toEqual([2, 1]);
  });

  it("one top-level suite", async () => {
    const page = await list(suitesPath(projectId, 2), org.apiKey);
    expect(page.data).toEqual([
      {
        number: 1,
        parent_number: null,
        name: "com.acme.search.IndexClientTest",
        duration_ms: 4918,
        tests_count: 6,
        passed_count: 4,
        failed_count: 1,
        errored_count: 1,
        skipped_count: 0,
      },
    ]);
  });

  it("cases with their attempts, oldest first; a flaky case is passed with its failed attempts", async () => {
    expect(cases.map((c) => c.name)).toEqual([
      "handlesEmptyQuery",
      "reindexesAfterSchemaChange",
      "bulkDeletes",
      "searchesByPrefix",
      "indexesDocument",
      "connectsToCluster",
    ]);
    expectStrictlyDescending(cases.map((c) => c.id));
    for (const c of cases) expectCaseTypes(c, projectId, 2);
    const byName = (name: string) => cases.find((c) => c.name === name);
    for (const expected of EXPECTED["surefire-rerun.xml"]!.cases) {
      const c = byName(expected.name);
      expect(c).toMatchObject({
        suite_number: 1,
        classname: expected.classname,
        status: expected.status,
        duration_ms: expected.duration_ms,
        file: null,
      });
      expect(c.attempts.map((a: any) => a.status)).toEqual(expected.attempt_statuses);
    }

    const flaky = byName("indexesDocument");
    expect(flaky).toEqual({
      id: flaky.id,
      project_id: projectId,
      test_run_number: 2,
      suite_number: 1,
      test_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "indexesDocument",
      classname: "com.acme.search.IndexClientTest",
      file: null,
      status: "passed",
      duration_ms: 84,
      failure_type: null,
      failure_message: null,
      failure_text: null,
      attempts: [
        { status: "failed", duration_ms: null, failure_message: "expected: <1> but was: <0>" },
        { status: "failed", duration_ms: null, failure_message: "expected: <1> but was: <0>" },
      ],
      quarantined: false,
      // The attempt's own output belongs to the attempt, not to the case.
      system_out: null,
      system_err: null,
      // Passed (on retry): the run page, which lists no passed cases.
      url: `${WEB_APP_URL}/projects/${projectId}/runs/2`,
    });

    expect(byName("searchesByPrefix")).toMatchObject({
      status: "passed",
      failure_message: null,
      attempts: [{ status: "errored", duration_ms: null, failure_message: "Read timed out" }],
      system_err: null,
    });

    const bulk = "Bulk request had 2 failures: [sku-7: version_conflict_engine_exception, sku-9: version_conflict_engine_exception]";
    expect(byName("bulkDeletes")).toMatchObject({
      status: "failed",
      duration_ms: 532,
      failure_type: "com.acme.search.BulkFailureException",
      failure_message: bulk,
      // The message attribute does not replace the stack trace: both are kept.
      failure_text: `com.acme.search.BulkFailureException: ${bulk}\n\tat com.acme.search.IndexClient.bulk(IndexClient.java:141)\n\tat com.acme.search.IndexClientTest.bulkDeletes(IndexClientTest.java:81)`,
      attempts: [
        { status: "failed", duration_ms: null, failure_message: bulk },
        { status: "failed", duration_ms: null, failure_message: "Bulk request had 1 failures: [sku-9: version_conflict_engine_exception]" },
      ],
      system_out: "09:12:06.010 [main] INFO  c.a.search.IndexClient -- bulk: 3 actions, 2 failed\n",
      system_err: null,
    });

    expect(byName("reindexesAfterSchemaChange")).toMatchObject({
      status: "errored",
      failure_type: "com.acme.search.IndexExistsException",
      failure_message: "index [products_v2] already exists",
      attempts: [
        { status: "errored", duration_ms: null, failure_message: "index [products_v2] already exists" },
        { status: "errored", duration_ms: null, failure_message: "index [products_v2] already exists" },
      ],
    });
    expect(byName("connectsToCluster")).toMatchObject({ status: "passed", duration_ms: 211, attempts: [], failure_type: null });
  });

  it("GET /test_cases/:id of the flaky case (and every other) equals its listing entry", async () => {
    for (const entry of cases) expect(await getOk(`/api/v1/test_cases/${entry.id}`, org.apiKey)).toEqual(entry);
  });

  it("status filter: passed includes the cases that passed on retry", async () => {
    const names = async (status: string) =>
      (await list(`${casesPath(projectId, 2, 1)}?status=${status}`, org.apiKey)).data.map((c: any) => c.name);
    expect(await names("passed")).toEqual(["handlesEmptyQuery", "searchesByPrefix", "indexesDocument", "connectsToCluster"]);
    expect(await names("failed")).toEqual(["bulkDeletes"]);
    expect(await names("errored")).toEqual(["reindexesAfterSchemaChange"]);
    expect(await names("skipped")).toEqual([]);
  });

  it("run numbers are per project: run 1 of another project is another run", async () => {
    const other = await h.newProject(org.organizationId, "Other");
    await h.uploadAndWait(other.uploadToken, JUNIT_FIXTURES["surefire-rerun.xml"]);
    const mine = await getOk(`${runsPath(projectId)}/1`, org.apiKey);
    const theirs = await getOk(`${runsPath(other.project.id)}/1`, org.apiKey);
    expect(mine.tests_count).toBe(10);
    expect(theirs.tests_count).toBe(6);
    expect(theirs.project_id).toBe(other.project.id);
    expect((await list(runsPath(other.project.id), org.apiKey)).data.map((r: any) => r.number)).toEqual([1]);
    const theirCases = (await list(casesPath(other.project.id, 1, 1), org.apiKey)).data;
    expect(theirCases.map((c: any) => c.name)).toEqual(cases.map((c) => c.name));
    for (const c of theirCases) {
      expect(c.project_id).toBe(other.project.id);
      expect(cases.map((x) => x.id)).not.toContain(c.id);
    }
  });
});

/** A one-suite report whose result is `result`. */
function reportWith(result: "tests_passed" | "tests_failed" | "tests_errored" | null, cases = 1): Report {
  const status = result === "tests_failed" ? "failed" : result === "tests_errored" ? "errored" : "passed";
  return {
    suites: [
      {
        name: "s",
        durationMs: 10,
        cases: Array.from({ length: cases }, (_, i) => ({ name: `c${i}`, status: i === 0 ? status : ("passed" as const), durationMs: 1 })),
      },
    ],
  };
}

type RunSpec = { number: number; branch: string | null; status: "pending" | "processed" | "failed"; result: string | null };

describe("GET /projects/:id/test_runs filters", () => {
  const BRANCHES = ["main", "feature/login", null, "rel/ü & x=1?#"] as const;
  const RESULTS = ["tests_passed", "tests_failed", "tests_errored"] as const;
  const STATUSES = ["pending", "processed", "failed"] as const;
  let org: Org;
  let projectId: string;
  const runs: RunSpec[] = [];

  beforeAll(async () => {
    org = await newOrg();
    const { project } = await h.newProject(org.organizationId, "Filtered");
    const { project: sibling } = await h.newProject(org.organizationId, "Sibling");
    projectId = project.id;
    for (let i = 0; i < 36; i++) {
      // Some runs share an instant.
      if (i % 3 !== 0) h.clock.advance(1000);
      const branch = BRANCHES[i % 4]!;
      const status = i % 7 === 3 ? "pending" : i % 5 === 4 ? "failed" : "processed";
      const result = status === "processed" ? RESULTS[Math.floor(i / 4) % 3]! : null;
      const run = await h.newRun(project.id, { meta: { branch }, outcome: status, report: reportWith(result) });
      runs.push({ number: run.number, branch, status, result });
      // The sibling project has runs matching every filter; none may leak in.
      if (i % 6 === 0) await h.newRun(sibling.id, { meta: { branch }, outcome: status, report: reportWith(result) });
    }
    // Every value of every filter is represented, with pending and failed runs on several branches.
    for (const s of STATUSES) expect(runs.some((r) => r.status === s)).toBe(true);
    for (const r of RESULTS) expect(runs.some((x) => x.result === r)).toBe(true);
    for (const b of BRANCHES) {
      expect(runs.some((r) => r.branch === b && r.status === "pending")).toBe(true);
      expect(runs.some((r) => r.branch === b && r.status === "failed")).toBe(true);
    }
  });

  type Filters = { branch?: string | null; result?: string; status?: string };
  const queryOf = (f: Filters) =>
    [
      f.branch !== undefined && f.branch !== null ? `branch=${encodeURIComponent(f.branch)}` : null,
      f.result ? `result=${f.result}` : null,
      f.status ? `status=${f.status}` : null,
    ]
      .filter(Boolean)
      .join("&");
  const expectedFor = (f: Filters) =>
    runs
      .filter(
        (r) =>
          (f.branch === undefined || r.branch === f.branch) &&
          (f.result === undefined || r.result === f.result) &&
          (f.status === undefined || r.status === f.status),
      )
      .map((r) => r.number)
      .reverse();
  const pathOf = (f: Filters) => {
    const q = queryOf(f);
    return q ? `${runsPath(projectId)}?${q}` : runsPath(projectId);
  };

  it("no filter: every run of the project (none of the sibling's), newest first", async () => {
    const all = await collectAll(h, runsPath(projectId), org.apiKey, 100);
    expect(all.items.map((r) => r.number)).toEqual(runs.map((r) => r.number).reverse());
    for (const r of all.items) {
      expectRunTypes(r);
      expect(r.project_id).toBe(projectId);
    }
  });

  it.each(BRANCHES.filter((b) => b !== null))("branch=%s alone (exact match)", async (branch) => {
    const expected = expectedFor({ branch });
    expect(expected.length).toBeGreaterThan(3);
    for (const limit of [2, 100]) {
      const { items } = await collectAll(h, pathOf({ branch }), org.apiKey, limit);
      expect(items.map((r) => r.number)).toEqual(expected);
      for (const r of items) expect(r.branch).toBe(branch);
    }
  });

  it.each(RESULTS)("result=%s alone: only processed runs with that result", async (result) => {
    const expected = expectedFor({ result });
    expect(expected.length).toBeGreaterThan(0);
    for (const limit of [2, 100]) {
      const { items } = await collectAll(h, pathOf({ result }), org.apiKey, limit);
      expect(items.map((r) => r.number)).toEqual(expected);
      for (const r of items) expect(r).toMatchObject({ result, status: "processed" });
    }
  });

  it.each(STATUSES)("status=%s alone", async (status) => {
    const expected = expectedFor({ status });
    expect(expected.length).toBeGreaterThan(0);
    for (const limit of [2, 100]) {
      const { items } = await collectAll(h, pathOf({ status }), org.apiKey, limit);
      expect(items.map((r) => r.number)).toEqual(expected);
      for (const r of items) {
        expect(r.status).toBe(status);
        expectRunTypes(r);
      }
    }
    const { items } = await collectAll(h, pathOf({ status }), org.apiKey, 100);
    if (status === "pending")
      for (const r of items)
        expect(r).toMatchObject({ result: null, processed_at: null, failure_reason: null, duration_ms: null, tests_count: 0 });
    if (status === "failed")
      for (const r of items) expect(r).toMatchObject({ result: null, failure_reason: "could not parse the report", tests_count: 0 });
  });

  it("every combination of branch × result × status (absent included)", async () => {
    let nonEmpty = 0;
    for (const branch of [undefined, ...BRANCHES.filter((b) => b !== null)]) {
      for (const result of [undefined, ...RESULTS]) {
        for (const status of [undefined, ...STATUSES]) {
          const f: Filters = { branch, result, status };
          const expected = expectedFor(f);
          if (expected.length > 0) nonEmpty++;
          const page = await list(`${pathOf(f)}${queryOf(f) ? "&" : "?"}limit=100`, org.apiKey);
          expect(
            page.data.map((r: any) => r.number),
            JSON.stringify(f),
          ).toEqual(expected);
        }
      }
      h.clock.advance(60_000); // keep well inside the rate limit
    }
    expect(nonEmpty).toBeGreaterThan(20);
  });

  it("combined filters traverse with cursors (the cursor carries the filters)", async () => {
    for (const f of [
      { branch: "main", status: "pending" },
      { branch: "feature/login", status: "processed" },
      { branch: "main", result: "tests_failed" },
      { branch: "rel/ü & x=1?#", status: "failed" },
      { result: "tests_passed", status: "processed" },
    ] as Filters[]) {
      const expected = expectedFor(f);
      expect(expected.length, JSON.stringify(f)).toBeGreaterThan(0);
      const { items, pages } = await collectAll(h, pathOf(f), org.apiKey, 1);
      expect(
        items.map((r) => r.number),
        JSON.stringify(f),
      ).toEqual(expected);
      expect(pages).toBe(expected.length);
    }
  });

  it("a result filter never returns pending or failed runs; result with status pending or failed is empty", async () => {
    for (const result of RESULTS) {
      for (const status of ["pending", "failed"])
        expect((await list(`${runsPath(projectId)}?result=${result}&status=${status}`, org.apiKey)).data).toEqual([]);
    }
  });

  it("branch is an exact, case-sensitive match: prefixes, other cases and padding match nothing", async () => {
    for (const branch of ["mai", "Main", "MAIN", "main ", " main", "feature", "feature/", "rel/ü", "unknown-branch"]) {
      expect((await list(`${runsPath(projectId)}?branch=${encodeURIComponent(branch)}`, org.apiKey)).data, branch).toEqual([]);
    }
  });

  it("unknown query parameters are ignored", async () => {
    const page = await list(`${runsPath(projectId)}?sort=asc&foo=bar&limit=100`, org.apiKey);
    expect(page.data.map((r: any) => r.number)).toEqual(runs.map((r) => r.number).reverse());
  });
});

describe("GET /projects/:id/test_runs order and full traversal", () => {
  const COUNT = 66;
  let org: Org;
  let projectId: string;
  let expectedNumbers: number[];
  let allRuns: any[];

  beforeAll(async () => {
    org = await newOrg();
    const { project } = await h.newProject(org.organizationId, "Busy");
    projectId = project.id;
    // Runs sharing one created_at: 1–5, 14–18, 38–45 (straddling the limit-25 page boundary), 60–66.
    const sharesPrevious = (n: number) => (n >= 2 && n <= 5) || (n >= 15 && n <= 18) || (n >= 39 && n <= 45) || n >= 61;
    for (let n = 1; n <= COUNT; n++) {
      if (!sharesPrevious(n)) h.clock.advance(n % 2 === 0 ? 1 : 1000); // 1 ms apart too: millisecond precision
      const outcome = n % 9 === 0 ? "pending" : n % 11 === 0 ? "failed" : "processed";
      const run = await h.newRun(project.id, {
        meta: { branch: n % 2 ? "main" : "dev" },
        outcome,
        report: reportWith(n % 3 ? "tests_passed" : "tests_failed"),
      });
      expect(run.number).toBe(n);
    }
    expectedNumbers = Array.from({ length: COUNT }, (_, i) => COUNT - i);
    allRuns = (await list(`${runsPath(projectId)}?limit=100`, org.apiKey)).data;
  });

  it("newest first by arrival; runs with the same created_at newest (last to arrive) first", async () => {
    expect(allRuns.map((r) => r.number)).toEqual(expectedNumbers);
    for (let i = 1; i < allRuns.length; i++) expect(allRuns[i].created_at <= allRuns[i - 1].created_at).toBe(true);
    const distinct = new Set(allRuns.map((r) => r.created_at));
    expect(distinct.size).toBeLessThan(COUNT - 15);
    expect(allRuns.filter((r) => r.created_at === allRuns[0].created_at)).toHaveLength(7);
    for (const r of allRuns) expectRunTypes(r);
  });

  it.each([1, 3, 25, 100])("limit=%i: every run exactly once, in order, identical to the one-page listing", async (limit) => {
    h.clock.advance(60_000);
    const { items, pages } = await collectAll(h, runsPath(projectId), org.apiKey, limit);
    expect(items.map((r) => r.number)).toEqual(expectedNumbers);
    expect(new Set(items.map((r) => r.number)).size).toBe(COUNT);
    expect(pages).toBe(Math.ceil(COUNT / limit));
    expect(items).toEqual(allRuns);
  });

  it("pages are full until the last; has_more and next_cursor agree on every page", async () => {
    let cursor: string | null = null;
    const sizes: number[] = [];
    do {
      const page = await list(`${runsPath(projectId)}?limit=25${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, org.apiKey);
      sizes.push(page.data.length);
      cursor = page.pagination.next_cursor;
    } while (cursor);
    expect(sizes).toEqual([25, 25, 16]);
  });

  it("no limit: 25 per page; limit above 100 is capped at 100; limits may change between pages", async () => {
    const first = await list(runsPath(projectId), org.apiKey);
    expect(first.data.map((r: any) => r.number)).toEqual(expectedNumbers.slice(0, 25));
    expect(first.pagination.has_more).toBe(true);
    const second = await list(`${runsPath(projectId)}?cursor=${encodeURIComponent(first.pagination.next_cursor!)}`, org.apiKey);
    expect(second.data.map((r: any) => r.number)).toEqual(expectedNumbers.slice(25, 50));
    const rest = await list(`${runsPath(projectId)}?limit=7&cursor=${encodeURIComponent(second.pagination.next_cursor!)}`, org.apiKey);
    expect(rest.data.map((r: any) => r.number)).toEqual(expectedNumbers.slice(50, 57));
    const last = await list(`${runsPath(projectId)}?limit=1000&cursor=${encodeURIComponent(rest.pagination.next_cursor!)}`, org.apiKey);
    expect(last.data.map((r: any) => r.number)).toEqual(expectedNumbers.slice(57));
    expect(last.pagination).toEqual({ next_cursor: null, has_more: false });
    for (const limit of ["101", "1000", "99999999999999999999", "007"]) {
      const page = await list(`${runsPath(projectId)}?limit=${limit}`, org.apiKey);
      expect(page.data.map((r: any) => r.number)).toEqual(expectedNumbers.slice(0, limit === "007" ? 7 : 100));
    }
  });

  it("a cursor reused gives the same page again", async () => {
    const first = await list(`${runsPath(projectId)}?limit=10`, org.apiKey);
    const path = `${runsPath(projectId)}?limit=10&cursor=${encodeURIComponent(first.pagination.next_cursor!)}`;
    const a = await list(path, org.apiKey);
    const b = await list(path, org.apiKey);
    expect(a).toEqual(b);
    expect(a.data.map((r: any) => r.number)).toEqual(expectedNumbers.slice(10, 20));
  });

  it("filters traverse with cursors across runs sharing created_at", async () => {
    const main = await collectAll(h, `${runsPath(projectId)}?branch=main`, org.apiKey, 3);
    expect(main.items.map((r) => r.number)).toEqual(expectedNumbers.filter((n) => n % 2 === 1));
    const pending = await collectAll(h, `${runsPath(projectId)}?status=pending`, org.apiKey, 1);
    expect(pending.items.map((r) => r.number)).toEqual(expectedNumbers.filter((n) => n % 9 === 0));
    const failedResult = await collectAll(h, `${runsPath(projectId)}?result=tests_failed&branch=dev`, org.apiKey, 2);
    expect(failedResult.items.map((r) => r.number)).toEqual(
      expectedNumbers.filter((n) => n % 9 !== 0 && n % 11 !== 0 && n % 3 === 0 && n % 2 === 0),
    );
  });

  it("30 runs all sharing one created_at traverse without gaps or duplicates at limits 1, 4, 7", async () => {
    const { project } = await h.newProject(org.organizationId, "Simultaneous");
    const at = now();
    for (let i = 0; i < 30; i++) await h.newRun(project.id);
    for (const limit of [1, 4, 7]) {
      h.clock.advance(60_000);
      const { items, pages } = await collectAll(h, runsPath(project.id), org.apiKey, limit);
      expect(items.map((r) => r.number)).toEqual(Array.from({ length: 30 }, (_, i) => 30 - i));
      expect(new Set(items.map((r) => r.created_at))).toEqual(new Set([at]));
      expect(pages).toBe(Math.ceil(30 / limit));
    }
  });

  it("runs arriving during a traversal do not shift it: newer ones are not in the remaining pages", async () => {
    const { project } = await h.newProject(org.organizationId, "Growing");
    for (let i = 0; i < 6; i++) {
      h.clock.advance(1000);
      await h.newRun(project.id);
    }
    const first = await list(`${runsPath(project.id)}?limit=3`, org.apiKey);
    expect(first.data.map((r: any) => r.number)).toEqual([6, 5, 4]);
    await h.newRun(project.id); // same instant as run 6
    h.clock.advance(1000);
    await h.newRun(project.id);
    const rest = await list(`${runsPath(project.id)}?limit=10&cursor=${encodeURIComponent(first.pagination.next_cursor!)}`, org.apiKey);
    expect(rest.data.map((r: any) => r.number)).toEqual([3, 2, 1]);
    expect(rest.pagination).toEqual({ next_cursor: null, has_more: false });
    expect((await list(runsPath(project.id), org.apiKey)).data.map((r: any) => r.number)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
  });

  it("a project without runs lists none", async () => {
    const { project } = await h.newProject(org.organizationId, "Empty");
    expect(await list(runsPath(project.id), org.apiKey)).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
    expect(await list(`${runsPath(project.id)}?status=pending&branch=main`, org.apiKey)).toEqual({
      data: [],
      pagination: { next_cursor: null, has_more: false },
    });
  });
});

describe("suites and cases traversal", () => {
  const BIG = 105;
  let org: Org;
  let projectId: string;
  /** Suites in document order, as the report was built: number → parent, name, own cases. */
  const suites: { number: number; parent: number | null; name: string; own: ReportCase[] }[] = [];
  const statusOf = (i: number): ReportCase["status"] => (["passed", "failed", "passed", "errored", "skipped", "passed"] as const)[i % 6]!;

  beforeAll(async () => {
    org = await newOrg();
    const { project } = await h.newProject(org.organizationId, "Deep");
    projectId = project.id;
    // 5 top-level suites × (1 + 2 children × (1 + 3 grandchildren)) = 45 suites.
    let number = 0;
    const build = (name: string, parent: number | null, depth: number, ownCases: number): ReportSuite => {
      const me = ++number;
      const own: ReportCase[] = Array.from({ length: ownCases }, (_, i) => ({
        name: `${name} case ${i + 1}`,
        classname: name,
        status: statusOf(i),
        durationMs: i,
        failureMessage: statusOf(i) === "failed" || statusOf(i) === "errored" ? `boom ${i + 1}` : null,
      }));
      suites.push({ number: me, parent, name, own });
      const children = depth === 0 ? 2 : depth === 1 ? 3 : 0;
      return {
        name,
        durationMs: 100 + me,
        cases: own,
        suites: Array.from({ length: children }, (_, i) => build(`${name}.${i + 1}`, me, depth + 1, depth === 1 ? 2 : 1)),
      };
    };
    const report: Report = { suites: Array.from({ length: 5 }, (_, i) => build(`top${i + 1}`, null, 0, i === 0 ? BIG : 1)) };
    await h.newRun(project.id, { report });
    // Run 2 has other suites and cases: never part of run 1's listings.
    await h.newRun(project.id, { report: { suites: [{ name: "run2", cases: [{ name: "x", status: "failed" }] }] } });
    expect(suites).toHaveLength(45);
  });

  const countsOf = (number: number): Record<string, number> => {
    const counts = { tests_count: 0, passed_count: 0, failed_count: 0, errored_count: 0, skipped_count: 0 };
    const add = (n: number) => {
      for (const c of suites.find((s) => s.number === n)!.own) {
        counts.tests_count++;
        counts[`${c.status}_count` as keyof typeof counts]++;
      }
      for (const child of suites.filter((s) => s.parent === n)) add(child.number);
    };
    add(number);
    return counts;
  };

  it.each([1, 3, 25, 100])("test_suites at limit=%i: all 45 by descending number, with parents and counts", async (limit) => {
    h.clock.advance(60_000);
    const { items, pages } = await collectAll(h, suitesPath(projectId, 1), org.apiKey, limit);
    expect(pages).toBe(Math.ceil(45 / limit));
    expect(items.map((s) => s.number)).toEqual(Array.from({ length: 45 }, (_, i) => 45 - i));
    for (const s of items) {
      expectSuiteTypes(s);
      const built = suites.find((x) => x.number === s.number)!;
      expect(s).toEqual({
        number: built.number,
        parent_number: built.parent,
        name: built.name,
        duration_ms: 100 + built.number,
        ...countsOf(built.number),
      });
    }
  });

  it("test_suites without a limit: 25, then 20", async () => {
    const first = await list(suitesPath(projectId, 1), org.apiKey);
    expect(first.data.map((s: any) => s.number)).toEqual(Array.from({ length: 25 }, (_, i) => 45 - i));
    const second = await list(`${suitesPath(projectId, 1)}?cursor=${encodeURIComponent(first.pagination.next_cursor!)}`, org.apiKey);
    expect(second.data.map((s: any) => s.number)).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
    expect(second.pagination).toEqual({ next_cursor: null, has_more: false });
  });

  it.each([1, 3, 25, 100])("test_cases of the big suite at limit=%i: its 105 own cases by descending id", async (limit) => {
    h.clock.advance(60_000);
    const { items, pages } = await collectAll(h, casesPath(projectId, 1, 1), org.apiKey, limit);
    expect(pages).toBe(Math.ceil(BIG / limit));
    expect(items).toHaveLength(BIG);
    expect(new Set(items.map((c) => c.id)).size).toBe(BIG);
    expectStrictlyDescending(items.map((c) => c.id));
    expect(items.map((c) => c.name)).toEqual(suites[0]!.own.map((c) => c.name).reverse());
    for (const c of items) {
      expectCaseTypes(c, projectId, 1);
      expect(c.suite_number).toBe(1);
    }
    const full = (await list(`${casesPath(projectId, 1, 1)}?limit=100`, org.apiKey)).data;
    expect(items.slice(0, 100)).toEqual(full);
  });

  it("test_cases limit: default 25, anything above 100 capped at 100", async () => {
    const first = await list(casesPath(projectId, 1, 1), org.apiKey);
    expect(first.data).toHaveLength(25);
    expect(first.pagination.has_more).toBe(true);
    for (const limit of ["101", "1000", "99999999999999999999"]) {
      const page = await list(`${casesPath(projectId, 1, 1)}?limit=${limit}`, org.apiKey);
      expect(page.data).toHaveLength(100);
      expect(page.pagination.has_more).toBe(true);
      const rest = await list(
        `${casesPath(projectId, 1, 1)}?limit=${limit}&cursor=${encodeURIComponent(page.pagination.next_cursor!)}`,
        org.apiKey,
      );
      expect(rest.data).toHaveLength(BIG - 100);
      expect(rest.pagination).toEqual({ next_cursor: null, has_more: false });
    }
  });

  it.each(CASE_STATUSES)("test_cases?status=%s traverses only that status (limits 1, 4, 100)", async (status) => {
    h.clock.advance(60_000);
    const expected = suites[0]!.own
      .filter((c) => c.status === status)
      .map((c) => c.name)
      .reverse();
    expect(expected.length).toBeGreaterThan(10);
    for (const limit of [1, 4, 100]) {
      const { items, pages } = await collectAll(h, `${casesPath(projectId, 1, 1)}?status=${status}`, org.apiKey, limit);
      expect(items.map((c) => c.name)).toEqual(expected);
      expect(pages).toBe(Math.ceil(expected.length / limit));
      for (const c of items) expect(c.status).toBe(status);
    }
  });

  it("every suite lists only its own cases; a case's fields come through", async () => {
    h.clock.advance(60_000);
    for (const built of suites.slice(1)) {
      const page = await list(casesPath(projectId, 1, built.number), org.apiKey);
      expect(
        page.data.map((c: any) => c.name),
        built.name,
      ).toEqual(built.own.map((c) => c.name).reverse());
      for (const c of page.data) expect(c.suite_number).toBe(built.number);
    }
    const failed = (await list(`${casesPath(projectId, 1, 1)}?status=failed&limit=1`, org.apiKey)).data[0];
    const i = Number(/case (\d+)$/.exec(failed.name)![1]) - 1;
    expect(failed).toMatchObject({
      classname: "top1",
      file: null,
      status: "failed",
      duration_ms: i,
      failure_type: null,
      failure_message: `boom ${i + 1}`,
      attempts: [],
      system_out: null,
      system_err: null,
    });
    expect(await getOk(`/api/v1/test_cases/${failed.id}`, org.apiKey)).toEqual(failed);
  });

  it("another run's suites and cases are its own", async () => {
    expect((await list(suitesPath(projectId, 2), org.apiKey)).data).toEqual([
      {
        number: 1,
        parent_number: null,
        name: "run2",
        duration_ms: null,
        tests_count: 1,
        passed_count: 0,
        failed_count: 1,
        errored_count: 0,
        skipped_count: 0,
      },
    ]);
    const cases = (await list(casesPath(projectId, 2, 1), org.apiKey)).data;
    expect(cases.map((c: any) => [c.name, c.test_run_number, c.suite_number, c.status])).toEqual([["x", 2, 1, "failed"]]);
    expect((await getOk(`${runsPath(projectId)}/2`, org.apiKey)).result).toBe("tests_failed");
  });

  it("pending and failed runs have no suites", async () => {
    const pending = await h.newRun(projectId, { outcome: "pending" });
    const failed = await h.newRun(projectId, { outcome: "failed" });
    for (const run of [pending, failed]) {
      expect(await list(suitesPath(projectId, run.number), org.apiKey)).toEqual({
        data: [],
        pagination: { next_cursor: null, has_more: false },
      });
    }
    const got = await getOk(`${runsPath(projectId)}/${pending.number}`, org.apiKey);
    expectRunTypes(got);
    expect(got).toMatchObject({ status: "pending", result: null, processed_at: null, duration_ms: null, tests_count: 0 });
    expect(await getOk(`${runsPath(projectId)}/${failed.number}`, org.apiKey)).toMatchObject({
      status: "failed",
      failure_reason: "could not parse the report",
      result: null,
    });
  });
});
