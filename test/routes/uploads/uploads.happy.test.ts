/**
 * The upload path end to end: every JUnit dialect fixture and the JSON format go in through
 * POST /uploads/v1/test_runs and come back out of /api/v1 exactly; the run lifecycle
 * (test_runs_count and last_test_run_at at arrival, latest_result after processing).
 * Runs in Node (in-process queue) and in workerd (Cloudflare Queue).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXPECTED, JUNIT_FIXTURES } from "../../fixtures/junit";
import { type Harness, PUBLIC_BASE_URL, WEB_APP_URL, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

async function newUploader() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  return { project, apiKey, uploadToken };
}

const xml = (cases: string, attrs = "") =>
  `<?xml version="1.0" encoding="UTF-8"?><testsuites${attrs}><testsuite name="suite" time="1.25">${cases}</testsuite></testsuites>`;
const PASS = `<testcase classname="a.B" name="passes" time="0.5"/>`;
const FAIL = `<testcase classname="a.B" name="fails" time="0.25"><failure message="expected 1 to be 2" type="AssertionError">stack</failure></testcase>`;
const ERROR = `<testcase classname="a.B" name="errors" time="0.1"><error message="boom" type="TypeError"/></testcase>`;

describe("JUnit dialects through the upload path", () => {
  for (const [file, body] of Object.entries(JUNIT_FIXTURES)) {
    it(`${file}: stored and served as parsed`, async () => {
      const { project, apiKey, uploadToken } = await newUploader();
      const expected = EXPECTED[file]!;
      const run = await h.uploadAndWait(uploadToken, body, { contentType: "application/xml" });
      expect(run.status).toBe("processed");
      expect(run.failure_reason).toBeNull();
      expect({
        tests_count: run.tests_count,
        passed_count: run.passed_count,
        failed_count: run.failed_count,
        errored_count: run.errored_count,
        skipped_count: run.skipped_count,
      }).toEqual(expected.totals);
      expect(run.result).toBe(
        expected.totals.errored_count > 0 ? "tests_errored" : expected.totals.failed_count > 0 ? "tests_failed" : "tests_passed",
      );

      const suites = await collectAll(h, `/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites`, apiKey, 100);
      const byNumber = [...suites.items].sort((a, b) => a.number - b.number);
      expect(byNumber).toEqual(
        expected.suites.map((s) => ({ ...s, duration_ms: byNumber.find((x) => x.number === s.number)?.duration_ms ?? null })),
      );

      const cases = [];
      for (const suite of byNumber) {
        const page = await collectAll(
          h,
          `/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites/${suite.number}/test_cases`,
          apiKey,
          100,
        );
        cases.push(...page.items);
      }
      const simplified = cases.map((c) => ({
        suite_number: c.suite_number,
        classname: c.classname ?? "",
        name: c.name,
        status: c.status,
        duration_ms: c.duration_ms,
        attempt_statuses: c.attempts.map((a: { status: string }) => a.status),
      }));
      const key = (c: { suite_number: number; classname: string; name: string }) => `${c.suite_number}|${c.classname}|${c.name}`;
      expect(simplified.sort((a, b) => key(a).localeCompare(key(b)))).toEqual(
        [...expected.cases].sort((a, b) => key(a).localeCompare(key(b))),
      );
    });
  }
});

describe("the run lifecycle", () => {
  it("202 with the run's number, status and URLs; Location points at the run in /api/v1", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const res = await h.upload(uploadToken, xml(PASS), {
      query:
        "branch=main&commit_sha=abc123&build_id=42&build_url=https%3A%2F%2Fci.example.com%2F42&tags=linux,unit&tags=fast&started_at=2026-11-21T10:00:00%2B02:00",
    });
    expect(res.status).toBe(202);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.body).toMatchObject({
      number: 1,
      project_id: project.id,
      status: "pending",
      failure_reason: null,
      result: null,
      branch: "main",
      commit_sha: "abc123",
      build_id: "42",
      build_url: "https://ci.example.com/42",
      tags: ["linux", "unit", "fast"],
      started_at: "2026-11-21T08:00:00.000Z",
      processed_at: null,
    });
    expect(res.body.url).toBe(`${WEB_APP_URL}/projects/${project.id}/runs/1`);
    expect(res.body.api_url).toBe(`${PUBLIC_BASE_URL}/api/v1/projects/${project.id}/test_runs/1`);
    expect(res.headers.get("location")).toBe(res.body.api_url);
    expect(res.headers.get("ratelimit-policy")).toBe('"default";q=600;w=60');

    const done = await h.waitForRun(uploadToken, 1);
    const viaApi = await h.get(`/api/v1/projects/${project.id}/test_runs/1`, apiKey);
    expect(viaApi.status).toBe(200);
    const { api_url: _ignored, ...runObject } = done;
    expect(viaApi.body).toEqual(runObject);
    expect(viaApi.body).toMatchObject({ status: "processed", result: "tests_passed", tests_count: 1, passed_count: 1, duration_ms: 1250 });
  });

  it("a run counts the moment it arrives: test_runs_count and last_test_run_at move at arrival, latest_result after processing", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const before = await h.get(`/api/v1/projects/${project.id}`, apiKey);
    expect(before.body).toMatchObject({ test_runs_count: 0, latest_result: null, last_test_run_at: null });
    h.clock.advance(60_000);
    const arrival = h.clock.now().toISOString();
    const res = await h.upload(uploadToken, xml(PASS + FAIL));
    expect(res.status).toBe(202);
    expect(res.body.created_at).toBe(arrival);
    const during = await h.get(`/api/v1/projects/${project.id}`, apiKey);
    expect(during.body.test_runs_count).toBe(1);
    expect(during.body.last_test_run_at).toBe(arrival);
    h.clock.advance(5_000);
    const run = await h.waitForRun(uploadToken, res.body.number);
    expect(run.result).toBe("tests_failed");
    const after = await h.get(`/api/v1/projects/${project.id}`, apiKey);
    expect(after.body).toMatchObject({ test_runs_count: 1, latest_result: "tests_failed", last_test_run_at: arrival });
  });

  it("latest_result follows the most recent processed run: errored beats failed beats passed; a failed run leaves it alone", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const latest = async () => (await h.get(`/api/v1/projects/${project.id}`, apiKey)).body.latest_result;
    expect((await h.uploadAndWait(uploadToken, xml(PASS + FAIL + ERROR))).result).toBe("tests_errored");
    expect(await latest()).toBe("tests_errored");
    expect((await h.uploadAndWait(uploadToken, xml(PASS))).result).toBe("tests_passed");
    expect(await latest()).toBe("tests_passed");
    const broken = await h.uploadAndWait(uploadToken, "<testsuites><testsuite>");
    expect(broken.status).toBe("failed");
    expect(broken.failure_reason).toMatch(/not well-formed/);
    expect(broken.result).toBeNull();
    expect(await latest()).toBe("tests_passed");
    expect((await h.uploadAndWait(uploadToken, xml(FAIL))).result).toBe("tests_failed");
    expect(await latest()).toBe("tests_failed");
    const project2 = (await h.get(`/api/v1/projects/${project.id}`, apiKey)).body;
    expect(project2.test_runs_count).toBe(4);
  });

  it("a report with no test cases is processed with zero counts and tests_passed", async () => {
    const { uploadToken } = await newUploader();
    const run = await h.uploadAndWait(uploadToken, "<testsuites/>");
    expect(run).toMatchObject({ status: "processed", result: "tests_passed", tests_count: 0, duration_ms: null });
  });

  it("the run's duration_ms: <testsuites time>, else the sum of the top-level suites that state one, else null", async () => {
    const { uploadToken } = await newUploader();
    const stated = await h.uploadAndWait(
      uploadToken,
      `<testsuites time="7.5"><testsuite name="a" time="1">${PASS}</testsuite></testsuites>`,
    );
    expect(stated.duration_ms).toBe(7500);
    const summed = await h.uploadAndWait(
      uploadToken,
      `<testsuites><testsuite name="a" time="1.5">${PASS}</testsuite><testsuite name="b">${PASS}</testsuite><testsuite name="c" time="0.25"/></testsuites>`,
    );
    expect(summed.duration_ms).toBe(1750);
    const untimed = await h.uploadAndWait(uploadToken, `<testsuites><testsuite name="a"><testcase name="x"/></testsuite></testsuites>`);
    expect(untimed.duration_ms).toBeNull();
    const untimedJson = await h.uploadAndWait(uploadToken, { suites: [{ name: "a", cases: [{ name: "x", status: "passed" }] }] });
    expect(untimedJson.duration_ms).toBeNull();
  });

  it("retries in one run: a failure then a pass is one passed case with its failed attempt", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const body = xml(
      `<testcase classname="a.B" name="flaky" time="0.2"><failure message="first try"/></testcase><testcase classname="a.B" name="flaky" time="0.3"/>`,
    );
    const run = await h.uploadAndWait(uploadToken, body);
    expect(run).toMatchObject({ tests_count: 1, passed_count: 1, failed_count: 0, result: "tests_passed" });
    const cases = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites/1/test_cases`, apiKey);
    expect(cases.body.data).toHaveLength(1);
    expect(cases.body.data[0]).toMatchObject({
      name: "flaky",
      status: "passed",
      duration_ms: 300,
      attempts: [{ status: "failed", duration_ms: 200, failure_message: "first try" }],
    });
  });
});

describe("include=failed_tests: the run's failures with their tests' pages (for the uploader's summary)", () => {
  it("lists the failed and errored cases of a processed run in report order, with test ids, quarantine and pages; absent unless asked for", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    await h.uploadAndWait(uploadToken, xml(PASS + FAIL + ERROR));
    const tests = (await h.get(`/api/v1/projects/${project.id}/tests?sort=name`, apiKey)).body.data as any[];
    const id = (name: string) => tests.find((t) => t.name === name).id as string;
    const quarantined = await h.post(`/api/v1/tests/${id("errors")}/quarantine`, apiKey, { reason: "known", duration: "7d" });
    expect(quarantined.status).toBe(200);

    const run = await h.uploadAndWait(uploadToken, {
      junit_xml: xml(ERROR + PASS + FAIL),
      suites: [
        {
          name: "json",
          cases: [
            { name: "no class", file: "ui/a.test.ts", status: "failed" },
            { name: "skips", status: "skipped" },
          ],
        },
      ],
    });
    const plain = await h.get(`/uploads/v1/test_runs/${run.number}`, uploadToken);
    expect(plain.status).toBe(200);
    expect(plain.body).not.toHaveProperty("failed_tests");

    const res = await h.get(`/uploads/v1/test_runs/${run.number}?include=failed_tests`, uploadToken);
    expect(res.status, res.text).toBe(200);
    const page = (testId: string) => `${WEB_APP_URL}/projects/${project.id}/tests/${testId}`;
    const noClass = (await h.get(`/api/v1/projects/${project.id}/tests?sort=name`, apiKey)).body.data.find(
      (t: any) => t.name === "no class",
    );
    expect(res.body.failed_tests).toEqual([
      {
        test_id: id("errors"),
        classname: "a.B",
        name: "errors",
        file: null,
        status: "errored",
        quarantined: true,
        url: page(id("errors")),
      },
      { test_id: id("fails"), classname: "a.B", name: "fails", file: null, status: "failed", quarantined: false, url: page(id("fails")) },
      {
        test_id: noClass.id,
        classname: null,
        name: "no class",
        file: "ui/a.test.ts",
        status: "failed",
        quarantined: false,
        url: page(noClass.id),
      },
    ]);
    // The rest of the answer is the run as without it.
    const { failed_tests: _failures, ...rest } = res.body;
    expect(rest).toEqual(plain.body);
  });

  it("null while the run is pending and when its processing failed; another value is a 400", async () => {
    const { project, uploadToken } = await newUploader();
    const pending = await h.newRun(project.id, { outcome: "pending" });
    const whilePending = await h.get(`/uploads/v1/test_runs/${pending.number}?include=failed_tests`, uploadToken);
    expect(whilePending.status).toBe(200);
    expect(whilePending.body).toMatchObject({ status: "pending", failed_tests: null });

    const broken = await h.uploadAndWait(uploadToken, "<testsuites><testsuite>");
    expect(broken.status).toBe("failed");
    expect((await h.get(`/uploads/v1/test_runs/${broken.number}?include=failed_tests`, uploadToken)).body.failed_tests).toBeNull();

    const passing = await h.uploadAndWait(uploadToken, xml(PASS));
    expect((await h.get(`/uploads/v1/test_runs/${passing.number}?include=failed_tests`, uploadToken)).body.failed_tests).toEqual([]);

    const wrong = await h.get(`/uploads/v1/test_runs/${passing.number}?include=cases`, uploadToken);
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe("invalid_request");
  });
});

describe("text is stored exactly", () => {
  // Characters that COPY's text format escapes (Postgres stores rows with COPY where it can) and others.
  const AWKWARD = ["back\\slash \\N \\.", "tab\there", "new\nline", "cr\rhere", "żółć \u2028 😀", "ends with \\"];
  const attr = (text: string) =>
    text
      .replace(/&/g, "&amp;")
      .replace(/"/g, "&quot;")
      .replace(/</g, "&lt;")
      .replace(/\t/g, "&#9;")
      .replace(/\n/g, "&#10;")
      .replace(/\r/g, "&#13;");

  it("names, classnames, messages, attempts and output with backslashes, tabs and line breaks come back unchanged", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const cases = AWKWARD.map(
      (text, i) =>
        `<testcase classname="${attr(text)}" name="${attr(`${i} ${text}`)}" time="0.01">` +
        `<flakyFailure message="${attr(`attempt ${text}`)}"/>` +
        `<failure message="${attr(`message ${text}`)}" type="${attr(text)}"/>` +
        `<system-out><![CDATA[out ${text}]]></system-out></testcase>`,
    );
    const run = await h.uploadAndWait(uploadToken, xml(cases.join("")));
    expect(run.status).toBe("processed");
    const page = await collectAll(h, `/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites/1/test_cases`, apiKey, 100);
    const byName = new Map(page.items.map((c: { name: string }) => [c.name, c]));
    AWKWARD.forEach((text, i) => {
      const stored = byName.get(`${i} ${text}`) as Record<string, any>;
      expect(stored, text).toBeDefined();
      expect(stored.classname).toBe(text);
      expect(stored.failure_type).toBe(text);
      expect(stored.failure_message).toBe(`message ${text}`);
      expect(stored.attempts.map((a: { failure_message: string }) => a.failure_message)).toEqual([`attempt ${text}`]);
      // XML turns a raw carriage return in element text into a line feed.
      expect(stored.system_out).toBe(`out ${text.replace(/\r/g, "\n")}`);
    });
    const first = (await h.get(`/api/v1/test_cases/${(byName.get(`0 ${AWKWARD[0]}`) as unknown as { id: string }).id}`, apiKey)).body;
    expect(first.name).toBe(`0 ${AWKWARD[0]}`);
  });

  it("the same through the JSON format", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const run = await h.uploadAndWait(uploadToken, {
      suites: [
        {
          name: "json\tsuite",
          cases: AWKWARD.map((text, i) => ({ name: `${i} ${text}`, classname: text, status: "failed", failure_message: text })),
        },
      ],
    });
    expect(run.status).toBe("processed");
    const page = await collectAll(h, `/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites/1/test_cases`, apiKey, 100);
    expect(
      page.items.map((c: { name: string; classname: string; failure_message: string }) => [c.name, c.classname, c.failure_message]).sort(),
    ).toEqual(AWKWARD.map((text, i) => [`${i} ${text}`, text, text]).sort());
  });

  it("a failure's message and its stack trace both come back: failure_message and failure_text", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const cases = AWKWARD.map(
      (text, i) =>
        `<testcase classname="c" name="${i}" time="0.01">` +
        `<failure message="${attr(`message ${text}`)}" type="E"><![CDATA[trace ${text}\n\tat x (x.ts:1)]]></failure></testcase>`,
    );
    const run = await h.uploadAndWait(uploadToken, xml(cases.join("") + PASS));
    expect(run.status).toBe("processed");
    const page = await collectAll(h, `/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites/1/test_cases`, apiKey, 100);
    const byName = new Map(page.items.map((c: { name: string }) => [c.name, c as Record<string, any>]));
    for (const [i, text] of AWKWARD.entries()) {
      const stored = byName.get(String(i))!;
      expect(stored.failure_message).toBe(`message ${text}`);
      // XML turns a raw carriage return in element text into a line feed.
      expect(stored.failure_text).toBe(`trace ${text.replace(/\r/g, "\n")}\n\tat x (x.ts:1)`);
      expect((await h.get(`/api/v1/test_cases/${stored.id}`, apiKey)).body.failure_text).toBe(stored.failure_text);
    }
    expect(byName.get("passes")!.failure_text).toBeNull();
  });

  it("failure_text through the JSON format; without it (older uploaders) it is null", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const run = await h.uploadAndWait(uploadToken, {
      suites: [
        {
          name: "json",
          cases: [
            ...AWKWARD.map((text, i) => ({ name: String(i), status: "failed", failure_message: "m", failure_text: text })),
            { name: "older", status: "failed", failure_message: "only a message" },
            { name: "long", status: "errored", failure_text: "t".repeat(10_000) },
          ],
        },
      ],
    });
    expect(run.status).toBe("processed");
    const page = await collectAll(h, `/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites/1/test_cases`, apiKey, 100);
    const byName = new Map(page.items.map((c: { name: string }) => [c.name, c as Record<string, any>]));
    for (const [i, text] of AWKWARD.entries()) expect(byName.get(String(i))!.failure_text).toBe(text);
    expect(byName.get("older")).toMatchObject({ failure_message: "only a message", failure_text: null });
    expect(byName.get("long")).toMatchObject({ failure_message: null, failure_text: "t".repeat(4_096) });
  });
});

describe("the JSON format", () => {
  it("suites in JSON, nested, with attempts and metadata in the envelope", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const run = await h.uploadAndWait(uploadToken, {
      branch: "feature/x",
      commit_sha: "0123abcd",
      tags: ["json", "json"],
      started_at: "2026-11-20T12:00:00Z",
      suites: [
        {
          name: "api",
          duration_ms: 900,
          cases: [
            { name: "creates", classname: "api.Create", file: "test/api.test.ts", status: "passed", duration_ms: 120 },
            {
              name: "retries",
              status: "passed",
              duration_ms: 80,
              attempts: [{ status: "failed", duration_ms: 70, failure_message: "timeout" }],
            },
          ],
          suites: [
            {
              name: "api > auth",
              cases: [
                { name: "rejects", status: "skipped" },
                { name: "breaks", status: "errored", failure_type: "Error", failure_message: "no db" },
              ],
            },
          ],
        },
      ],
    });
    expect(run).toMatchObject({
      status: "processed",
      branch: "feature/x",
      commit_sha: "0123abcd",
      tags: ["json"],
      started_at: "2026-11-20T12:00:00.000Z",
      tests_count: 4,
      passed_count: 2,
      skipped_count: 1,
      errored_count: 1,
      result: "tests_errored",
      duration_ms: 900,
    });
    const suites = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites`, apiKey);
    expect(
      suites.body.data.map((s: { number: number; parent_number: number | null; tests_count: number }) => [
        s.number,
        s.parent_number,
        s.tests_count,
      ]),
    ).toEqual([
      [2, 1, 2],
      [1, null, 4],
    ]);
    const cases = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites/1/test_cases`, apiKey);
    const retries = cases.body.data.find((c: { name: string }) => c.name === "retries");
    expect(retries.attempts).toEqual([{ status: "failed", duration_ms: 70, failure_message: "timeout" }]);
  });

  it("junit_xml as an array: several documents make one run; the envelope's metadata wins over the query string", async () => {
    const { uploadToken } = await newUploader();
    const res = await h.upload(
      uploadToken,
      { branch: "from-body", junit_xml: [xml(PASS), `<testsuite name="second">${FAIL}</testsuite>`] },
      { query: "branch=from-query&build_id=7" },
    );
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ branch: "from-body", build_id: "7" });
    const run = await h.waitForRun(uploadToken, res.body.number);
    expect(run).toMatchObject({ status: "processed", tests_count: 2, passed_count: 1, failed_count: 1 });
  });

  it("junit_xml and suites together make one run", async () => {
    const { uploadToken } = await newUploader();
    const run = await h.uploadAndWait(uploadToken, {
      junit_xml: xml(PASS),
      suites: [{ name: "json", cases: [{ name: "x", status: "failed" }] }],
    });
    expect(run).toMatchObject({ status: "processed", tests_count: 2, failed_count: 1 });
  });

  it("a gzip-compressed body is accepted", async () => {
    const { uploadToken } = await newUploader();
    const compressed = new Uint8Array(
      await new Response(new Blob([xml(PASS + FAIL)]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer(),
    );
    const res = await h.upload(uploadToken, compressed, { headers: { "content-encoding": "gzip" } });
    expect(res.status).toBe(202);
    expect((await h.waitForRun(uploadToken, res.body.number)).tests_count).toBe(2);
  });

  it("text/xml and a charset parameter are accepted; the upload token only sees its own project's runs", async () => {
    const a = await newUploader();
    const b = await newUploader();
    const res = await h.upload(a.uploadToken, xml(PASS), { contentType: "text/xml; charset=utf-8" });
    expect(res.status).toBe(202);
    await h.waitForRun(a.uploadToken, res.body.number);
    const foreign = await h.get(`/uploads/v1/test_runs/${res.body.number}`, b.uploadToken);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe("not_found");
  });
});

describe("what CI scripts send", () => {
  it("empty metadata values count as absent, started_at included, in the query string and in the JSON envelope", async () => {
    const { uploadToken } = await newUploader();
    const viaQuery = await h.upload(uploadToken, xml(PASS), { query: "branch=&commit_sha=&build_id=&build_url=&tags=&started_at=" });
    expect(viaQuery.status).toBe(202);
    expect(viaQuery.body).toMatchObject({ branch: null, commit_sha: null, build_id: null, build_url: null, tags: [], started_at: null });
    const viaJson = await h.upload(uploadToken, { branch: "", started_at: " ", tags: null, junit_xml: xml(PASS) });
    expect(viaJson.status).toBe(202);
    expect(viaJson.body).toMatchObject({ branch: null, started_at: null, tags: [] });
  });

  it("base_commit_sha: 7 to 64 hex characters from the query string or the JSON envelope, stored and served on the run; anything else a 422", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const viaQuery = await h.upload(uploadToken, xml(PASS), { query: "branch=feature&base_commit_sha=28335f0" });
    expect(viaQuery.status).toBe(202);
    expect(viaQuery.body.base_commit_sha).toBe("28335f0");
    const full = "a".repeat(40);
    const viaJson = await h.upload(uploadToken, { base_commit_sha: full, junit_xml: xml(PASS) }, { query: "base_commit_sha=1234567" });
    expect(viaJson.status).toBe(202);
    expect(viaJson.body.base_commit_sha).toBe(full);
    await h.waitForRun(uploadToken, viaJson.body.number);
    const served = await h.get(`/api/v1/projects/${project.id}/test_runs/${viaJson.body.number}`, apiKey);
    expect(served.body.base_commit_sha).toBe(full);
    const none = await h.upload(uploadToken, xml(PASS), { query: "base_commit_sha=" });
    expect(none.body.base_commit_sha).toBeNull();
    for (const bad of ["abc123", "not-a-sha1", "g".repeat(40), "a".repeat(65)]) {
      const res = await h.upload(uploadToken, xml(PASS), { query: `base_commit_sha=${bad}` });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe("validation_failed");
      expect(res.body.error.details).toEqual([{ field: "base_commit_sha", message: expect.any(String) }]);
    }
    const badJson = await h.upload(uploadToken, { base_commit_sha: "xyz", junit_xml: xml(PASS) });
    expect(badJson.status).toBe(422);
    expect(badJson.body.error.details).toEqual([{ field: "base_commit_sha", message: "must be 7 to 64 hexadecimal characters" }]);
  });

  it("blank tags are dropped in JSON as in the query string; started_at still has to be a date-time when given", async () => {
    const { uploadToken } = await newUploader();
    const res = await h.upload(uploadToken, { tags: ["linux", " ", "", "unit", "linux"], junit_xml: xml(PASS) });
    expect(res.status).toBe(202);
    expect(res.body.tags).toEqual(["linux", "unit"]);
    const bad = await h.upload(uploadToken, xml(PASS), { query: "started_at=yesterday" });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details).toEqual([{ field: "started_at", message: expect.stringMatching(/RFC 3339/) }]);
  });

  it("a JSON case with more than 20 attempts keeps the latest 20, as XML retries do", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const attempts = Array.from({ length: 25 }, (_, i) => ({ status: "failed", duration_ms: i, failure_message: `try ${i}` }));
    const run = await h.uploadAndWait(uploadToken, { suites: [{ name: "s", cases: [{ name: "flaky", status: "passed", attempts }] }] });
    expect(run.status).toBe("processed");
    const cases = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites/1/test_cases`, apiKey);
    expect(cases.body.data[0].attempts).toHaveLength(20);
    expect(cases.body.data[0].attempts[0]).toEqual({ status: "failed", duration_ms: 5, failure_message: "try 5" });
    expect(cases.body.data[0].attempts[19].failure_message).toBe("try 24");
  });

  it("junit_xml may hold more than 1,000 documents (Surefire writes one file per test class)", async () => {
    const { uploadToken } = await newUploader();
    const documents = Array.from({ length: 1_200 }, (_, i) => `<testsuite name="C${i}"><testcase classname="C${i}" name="t"/></testsuite>`);
    const run = await h.uploadAndWait(uploadToken, { junit_xml: documents });
    expect(run).toMatchObject({ status: "processed", tests_count: 1_200 });
  });

  it("XML in the encoding the Content-Type's charset names (RFC 7303: BOM, then charset, then the declaration)", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const latin1 = Uint8Array.from(`<testsuite name="caf\u00e9"><testcase name="cr\u00e8me"/></testsuite>`, (ch) => ch.charCodeAt(0));
    const run = await h.uploadAndWait(uploadToken, latin1, { contentType: "text/xml; charset=ISO-8859-1" });
    expect(run.status).toBe("processed");
    const suites = await h.get(`/api/v1/projects/${project.id}/test_runs/${run.number}/test_suites`, apiKey);
    expect(suites.body.data[0].name).toBe("caf\u00e9");
    const unknown = await h.upload(uploadToken, latin1, { contentType: 'application/xml; charset="x-no-such-charset"' });
    expect(unknown.status).toBe(415);
    expect(unknown.body.error.code).toBe("unsupported_media_type");
    const sameBytesAsUtf8 = await h.upload(uploadToken, latin1, { contentType: "application/xml" });
    expect(sameBytesAsUtf8.status).toBe(400);
    // A byte-order mark outranks the charset parameter.
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(`<testsuite name="na\u00efve"/>`)]);
    const bomRun = await h.uploadAndWait(uploadToken, withBom, { contentType: "text/xml; charset=iso-8859-1" });
    expect(bomRun.status).toBe("processed");
    const bomSuites = await h.get(`/api/v1/projects/${project.id}/test_runs/${bomRun.number}/test_suites`, apiKey);
    expect(bomSuites.body.data[0].name).toBe("na\u00efve");
  });
});

describe("Idempotency-Key", () => {
  it("a retried upload with the same key returns the first run and records nothing new", async () => {
    const { project, apiKey, uploadToken } = await newUploader();
    const key = "upload-7d1f6c2a-retry";
    const first = await h.upload(uploadToken, xml(PASS), { headers: { "idempotency-key": key } });
    expect(first.status).toBe(202);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const retry = await h.upload(uploadToken, xml(FAIL), { headers: { "idempotency-key": key } });
    expect(retry.status).toBe(202);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.body.number).toBe(first.body.number);
    expect(retry.headers.get("location")).toBe(first.headers.get("location"));
    const other = await h.upload(uploadToken, xml(FAIL), { headers: { "idempotency-key": "another-key" } });
    expect(other.body.number).toBe(first.body.number + 1);
    expect((await h.waitForRun(uploadToken, first.body.number)).result).toBe("tests_passed");
    await h.waitForRun(uploadToken, other.body.number);
    expect((await h.get(`/api/v1/projects/${project.id}`, apiKey)).body.test_runs_count).toBe(2);
  });

  it("the same key in another project is another run; a malformed key is a 422", async () => {
    const a = await newUploader();
    const b = await newUploader();
    const key = "shared-key";
    const ra = await h.upload(a.uploadToken, xml(PASS), { headers: { "idempotency-key": key } });
    const rb = await h.upload(b.uploadToken, xml(PASS), { headers: { "idempotency-key": key } });
    expect([ra.status, rb.status]).toEqual([202, 202]);
    expect(rb.headers.get("idempotent-replayed")).toBeNull();
    const bad = await h.upload(a.uploadToken, xml(PASS), { headers: { "idempotency-key": "x".repeat(256) } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details).toEqual([{ field: "Idempotency-Key", message: "must be 1 to 255 visible ASCII characters" }]);
    await h.waitForRun(a.uploadToken, ra.body.number);
    await h.waitForRun(b.uploadToken, rb.body.number);
  });
});

describe("the uploads OpenAPI document", () => {
  it("is served without a token and describes the upload operation", async () => {
    const res = await h.get("/uploads/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(["/test_runs", "/test_runs/{number}"]));
    expect(Object.keys(res.body.paths["/test_runs"].post.requestBody.content)).toEqual(["application/json", "application/xml", "text/xml"]);
  });
});

describe("absolute URLs come from the configured public base URL", () => {
  it("an upload to another host with a forged Host gets api_url and Location of the configured base", async () => {
    const { project, uploadToken } = await newUploader();
    const res = await h.call("POST", "https://evil.example/uploads/v1/test_runs", {
      key: uploadToken,
      rawBody: xml(PASS),
      headers: {
        "content-type": "application/xml",
        host: "evil.example",
        "x-forwarded-host": "evil2.example",
        "x-forwarded-proto": "http",
      },
    });
    expect(res.status, res.text).toBe(202);
    expect(res.body.api_url).toBe(`${PUBLIC_BASE_URL}/api/v1/projects/${project.id}/test_runs/${res.body.number}`);
    expect(res.headers.get("location")).toBe(res.body.api_url);
    expect(res.body.url.startsWith(`${WEB_APP_URL}/`)).toBe(true);
    const read = await h.call("GET", `https://evil.example/uploads/v1/test_runs/${res.body.number}`, {
      key: uploadToken,
      headers: { host: "evil.example" },
    });
    expect(read.body.api_url).toBe(res.body.api_url);
    expect(res.text + read.text).not.toContain("evil");
  });
});
