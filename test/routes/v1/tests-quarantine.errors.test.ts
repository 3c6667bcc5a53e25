/**
 * Quarantine (/api/v1): what is refused. Invalid bodies are 422 `validation_failed` with one
 * detail per field (neither or both of `expires_at` and `duration`: a detail on `duration`, as the
 * spec does for snooze); unknown, malformed and other organizations' tests are the same 404; the
 * `quarantined` filter refuses unknown values and its cursors are bound to it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
let apiKey: string;
let projectId: string;
let testId: string;
let otherKey: string;
let otherTestId: string;
let uploadToken: string;

const DAY = 86_400_000;

async function orgWithTest(name: string) {
  const { organization, apiKey: key } = await h.newOrganization(name);
  const { project, uploadToken: token } = await h.newProject(organization.id);
  const cases = ["a", "b", "c"].map((n) => ({ name: n, classname: "C", status: "passed" as const, durationMs: 1 }));
  await h.newRun(project.id, { meta: { branch: "main", commitSha: "a" }, report: { suites: [{ name: "s", cases }] } });
  const list = await h.get(`/api/v1/projects/${project.id}/tests?sort=name`, key);
  return { key, token, projectId: project.id as string, testId: list.body.data[0].id as string };
}

beforeAll(async () => {
  h = await createHarness();
  ({ key: apiKey, projectId, testId, token: uploadToken } = await orgWithTest("Mine"));
  ({ key: otherKey, testId: otherTestId } = await orgWithTest("Other"));
});
afterAll(() => h.close());

const notFound = { error: { code: "not_found", message: expect.any(String) } };
const iso = (ms: number) => new Date(ms).toISOString();
const now = () => h.clock.now().getTime();

async function rejected(body: unknown) {
  const res = await h.post(`/api/v1/tests/${testId}/quarantine`, apiKey, body);
  expect(res.status, JSON.stringify(body)).toBe(422);
  expect(res.body.error.code).toBe("validation_failed");
  return res.body.error.details as { field: string; message: string }[];
}

const DURATION_NAMES = "1d, 7d, 14d, 30d, 90d";

describe("422 validation_failed with details per field", () => {
  it("reason: required and non-blank (null, missing, blank, not a string, too long, NUL)", async () => {
    for (const reason of [undefined, null, "", "   \n\t"]) {
      expect(await rejected({ reason, duration: "1d" })).toEqual([{ field: "reason", message: "can't be blank" }]);
    }
    expect(await rejected({ reason: 42, duration: "1d" })).toEqual([{ field: "reason", message: "must be a string" }]);
    expect(await rejected({ reason: "x".repeat(1_001), duration: "1d" })).toEqual([
      { field: "reason", message: "is too long (maximum is 1000 characters)" },
    ]);
    expect(await rejected({ reason: "a\u0000b", duration: "1d" })).toEqual([
      { field: "reason", message: "must not contain NUL characters" },
    ]);
  });

  it("neither or both of expires_at and duration: a detail on duration", async () => {
    for (const body of [{ reason: "r" }, { reason: "r", expires_at: null, duration: null }]) {
      expect(await rejected(body)).toEqual([
        { field: "duration", message: `is required unless expires_at is given: one of ${DURATION_NAMES}` },
      ]);
    }
    expect(await rejected({ reason: "r", duration: "1d", expires_at: iso(now() + DAY) })).toEqual([
      { field: "duration", message: "can't be given with expires_at: give one of the two" },
    ]);
    // An empty body: both required fields, in one answer.
    const empty = await h.call("POST", `/api/v1/tests/${testId}/quarantine`, { key: apiKey });
    expect(empty.status).toBe(422);
    expect(empty.body.error.details).toEqual([
      { field: "reason", message: "can't be blank" },
      { field: "duration", message: `is required unless expires_at is given: one of ${DURATION_NAMES}` },
    ]);
  });

  it("duration: one of the five", async () => {
    for (const duration of ["2d", "1w", "24h", "", 7, true]) {
      expect(await rejected({ reason: "r", duration })).toEqual([{ field: "duration", message: `must be one of ${DURATION_NAMES}` }]);
    }
    // An invalid duration with expires_at: the one detail on duration is about its value.
    expect(await rejected({ reason: "r", duration: "2d", expires_at: iso(now() + DAY) })).toEqual([
      { field: "duration", message: `must be one of ${DURATION_NAMES}` },
    ]);
  });

  it("expires_at: an ISO 8601 date-time with a time zone, in the future, at most 90 days ahead", async () => {
    const shape = [{ field: "expires_at", message: "must be an ISO 8601 date-time with a time zone, e.g. 2026-12-01T00:00:00Z" }];
    for (const expiresAt of ["tomorrow", "2030-01-01", "2030-01-01T00:00:00", "2030-13-01T00:00:00Z", 1_900_000_000_000, ""]) {
      expect(await rejected({ reason: "r", expires_at: expiresAt }), String(expiresAt)).toEqual(shape);
    }
    expect(await rejected({ reason: "r", expires_at: iso(now() - 1) })).toEqual([
      { field: "expires_at", message: "must be in the future" },
    ]);
    expect(await rejected({ reason: "r", expires_at: iso(now()) })).toEqual([{ field: "expires_at", message: "must be in the future" }]);
    expect(await rejected({ reason: "r", expires_at: iso(now() + 90 * DAY + 1) })).toEqual([
      { field: "expires_at", message: "must be at most 90 days ahead" },
    ]);
  });

  it("owner: an e-mail address or a @org/team handle", async () => {
    const message = [{ field: "owner", message: "must be an e-mail address or a @org/team handle" }];
    for (const owner of ["alice", "@acme", "acme/team", "@/team", "@acme/", "a b@example.com", "dev@localhost", "", "@acme/team extra"]) {
      expect(await rejected({ reason: "r", duration: "1d", owner }), owner).toEqual(message);
    }
    expect(await rejected({ reason: "r", duration: "1d", owner: 7 })).toEqual([{ field: "owner", message: "must be a string or null" }]);
    expect(await rejected({ reason: "r", duration: "1d", owner: `${"a".repeat(250)}@example.com` })).toEqual([
      { field: "owner", message: "is too long (maximum is 255 characters)" },
    ]);
  });

  it("issue_url: an http or https URL", async () => {
    for (const url of [
      "not a url",
      "ftp://example.com/1",
      "javascript:alert(1)",
      "mailto:dev@example.com",
      "//example.com/1",
      "https://",
      "",
    ]) {
      expect(await rejected({ reason: "r", duration: "1d", issue_url: url }), url).toEqual([
        { field: "issue_url", message: "must be an http or https URL" },
      ]);
    }
    expect(await rejected({ reason: "r", duration: "1d", issue_url: ["https://example.com"] })).toEqual([
      { field: "issue_url", message: "must be a string or null" },
    ]);
    expect(await rejected({ reason: "r", duration: "1d", issue_url: `https://example.com/${"a".repeat(2_048)}` })).toEqual([
      { field: "issue_url", message: "is too long (maximum is 2048 characters)" },
    ]);
  });

  it("every rejected field in one answer", async () => {
    const details = await rejected({ reason: " ", duration: "2d", owner: "nobody", issue_url: "ftp://x" });
    expect(details.map((d) => d.field).sort()).toEqual(["duration", "issue_url", "owner", "reason"]);
  });

  it("nothing changes on a refused quarantine", async () => {
    await rejected({ reason: "", duration: "1d" });
    expect((await h.get(`/api/v1/tests/${testId}`, apiKey)).body).toMatchObject({ quarantined: false, quarantine: null });
  });
});

describe("400 for bodies that are not JSON objects", () => {
  it("malformed JSON, an array, a string", async () => {
    for (const rawBody of ["{", "[]", '"reason"']) {
      const res = await h.call("POST", `/api/v1/tests/${testId}/quarantine`, {
        key: apiKey,
        rawBody,
        headers: { "content-type": "application/json" },
      });
      expect(res.status, rawBody).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
  });
});

describe("404 for unknown, malformed and other organizations' tests (security)", () => {
  const valid = { reason: "r", duration: "1d" };

  it("on quarantine and unquarantine; the other organization's test is untouched", async () => {
    for (const id of [otherTestId, "00000000-0000-4000-8000-000000000000", "not-a-uuid", "1"]) {
      for (const action of ["quarantine", "unquarantine"]) {
        const res = await h.post(`/api/v1/tests/${id}/${action}`, apiKey, action === "quarantine" ? valid : undefined);
        expect(res.status, `${action} ${id}`).toBe(404);
        expect(res.body).toEqual(notFound);
      }
    }
    expect((await h.get(`/api/v1/tests/${otherTestId}`, otherKey)).body).toMatchObject({ quarantined: false });
    // Its owner can quarantine it; then the first organization still cannot end it.
    expect((await h.post(`/api/v1/tests/${otherTestId}/quarantine`, otherKey, valid)).status).toBe(200);
    expect((await h.post(`/api/v1/tests/${otherTestId}/unquarantine`, apiKey)).status).toBe(404);
    expect((await h.get(`/api/v1/tests/${otherTestId}`, otherKey)).body).toMatchObject({ quarantined: true });
  });

  it("without an API key, or with an upload token: 401", async () => {
    expect((await h.post(`/api/v1/tests/${testId}/quarantine`, null, valid)).status).toBe(401);
    expect((await h.post(`/api/v1/tests/${testId}/unquarantine`, null)).status).toBe(401);
    expect((await h.post(`/api/v1/tests/${testId}/quarantine`, uploadToken, valid)).status).toBe(401);
    expect((await h.post(`/api/v1/tests/${testId}/unquarantine`, uploadToken)).status).toBe(401);
  });

  it("a wrong method is a 405", async () => {
    const res = await h.get(`/api/v1/tests/${testId}/quarantine`, apiKey);
    expect(res.status).toBe(405);
  });
});

describe("the quarantined filter", () => {
  it("unknown values are 400 with details", async () => {
    for (const value of ["yes", "1", "TRUE", "", "all"]) {
      const res = await h.get(`/api/v1/projects/${projectId}/tests?quarantined=${value}`, apiKey);
      expect(res.status, value).toBe(400);
      expect(res.body.error).toMatchObject({
        code: "invalid_request",
        details: [{ field: "quarantined", message: "must be one of true, false" }],
      });
    }
  });

  it("a cursor is bound to it: refused with another value or without it", async () => {
    const first = await h.get(`/api/v1/projects/${projectId}/tests?quarantined=false&limit=1`, apiKey);
    expect(first.status).toBe(200);
    const cursor = encodeURIComponent(first.body.pagination.next_cursor);
    expect((await h.get(`/api/v1/projects/${projectId}/tests?quarantined=false&limit=1&cursor=${cursor}`, apiKey)).status).toBe(200);
    for (const query of ["quarantined=true&", ""]) {
      const res = await h.get(`/api/v1/projects/${projectId}/tests?${query}limit=1&cursor=${cursor}`, apiKey);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    // And a cursor without the filter is refused with it.
    const plain = await h.get(`/api/v1/projects/${projectId}/tests?limit=1`, apiKey);
    const plainCursor = encodeURIComponent(plain.body.pagination.next_cursor);
    expect((await h.get(`/api/v1/projects/${projectId}/tests?quarantined=false&limit=1&cursor=${plainCursor}`, apiKey)).status).toBe(400);
  });
});
