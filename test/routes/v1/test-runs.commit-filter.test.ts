/**
 * GET /api/v1/projects/:id/test_runs?commit_sha=: a full SHA (40 or 64 hexadecimal characters)
 * matches exactly, a shorter one (at least 7) is a prefix, both case-insensitive; it combines with
 * the other filters and the cursor carries it; anything else is a 400 invalid_request on
 * `commit_sha`. Every assertion reads this file's own organizations' projects.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type CallResult, type Harness, collectAll, createHarness } from "../../support/harness";
import type { Report } from "../../../src/services/runs/test-runs";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());
beforeEach(() => h.clock.advance(61_000));

const SHA_A = "9fceb02d0ae598e95dc970b74767f19372d61af8";
// Shares its first 7 characters with SHA_A, not the 8th.
const SHA_B = "9fceb021111111111111111111111111111111b2";
const SHA_C = "0123456789abcdef0123456789abcdef01234567";
const SHA_256 = "a".repeat(64);

const report = (failed: boolean): Report => ({
  suites: [{ name: "s", cases: [{ name: "c", status: failed ? ("failed" as const) : ("passed" as const), durationMs: 1 }] }],
});

type Spec = { commitSha: string | null; branch: string; failed: boolean };
// The uploader may send a commit in upper case, or abbreviated (the last two runs).
const SPECS: Spec[] = [
  { commitSha: SHA_A, branch: "main", failed: false },
  { commitSha: SHA_B, branch: "main", failed: true },
  { commitSha: SHA_A, branch: "feature", failed: true },
  { commitSha: null, branch: "main", failed: false },
  { commitSha: SHA_C, branch: "main", failed: false },
  { commitSha: SHA_A.toUpperCase(), branch: "main", failed: true },
  { commitSha: SHA_256, branch: "main", failed: false },
  { commitSha: SHA_A, branch: "main", failed: true },
  { commitSha: SHA_C.slice(0, 10), branch: "feature", failed: false },
];

let key: string;
let projectId: string;
let otherKey: string;
let otherProjectId: string;
const numbers: number[] = [];

beforeAll(async () => {
  const org = await h.newOrganization("Commit filter");
  key = org.apiKey;
  projectId = (await h.newProject(org.organization.id, "By commit")).project.id;
  // A sibling project and another organization with runs of the same commits: none may leak in.
  const sibling = (await h.newProject(org.organization.id, "Sibling")).project.id;
  const other = await h.newOrganization("Commit filter, other");
  otherKey = other.apiKey;
  otherProjectId = (await h.newProject(other.organization.id, "Theirs")).project.id;
  for (const spec of SPECS) {
    h.clock.advance(1000);
    const meta = { branch: spec.branch, commitSha: spec.commitSha };
    numbers.push((await h.newRun(projectId, { meta, report: report(spec.failed) })).number);
    await h.newRun(sibling, { meta, report: report(spec.failed) });
    await h.newRun(otherProjectId, { meta, report: report(spec.failed) });
  }
});

const runsPath = (project = projectId) => `/api/v1/projects/${project}/test_runs`;

/** The numbers of this project's runs matching `keep`, newest first. */
const expected = (keep: (spec: Spec) => boolean) =>
  SPECS.map((spec, i) => (keep(spec) ? numbers[i]! : null))
    .filter((n): n is number => n !== null)
    .reverse();
const startsWith = (prefix: string) => (spec: Spec) => spec.commitSha !== null && spec.commitSha.toLowerCase().startsWith(prefix);

async function numbersOf(query: string, limit = 100): Promise<number[]> {
  const { items } = await collectAll(h, `${runsPath()}?${query}`, key, limit);
  for (const run of items) expect(run.project_id).toBe(projectId);
  return items.map((run) => run.number);
}

describe("GET /projects/:id/test_runs?commit_sha=", () => {
  it("a full SHA matches its runs exactly, whatever the case it was uploaded or asked in", async () => {
    const full = expected((spec) => spec.commitSha?.toLowerCase() === SHA_A);
    expect(full.length).toBe(4);
    expect(await numbersOf(`commit_sha=${SHA_A}`)).toEqual(full);
    expect(await numbersOf(`commit_sha=${SHA_A.toUpperCase()}`)).toEqual(full);
    expect(await numbersOf(`commit_sha=${SHA_C}`)).toEqual(expected((spec) => spec.commitSha === SHA_C));
    // A 64-character (SHA-256) commit exactly too.
    expect(await numbersOf(`commit_sha=${SHA_256}`)).toEqual(expected((spec) => spec.commitSha === SHA_256));
  });

  it("a shorter SHA (7 characters or more) is a prefix", async () => {
    expect(await numbersOf("commit_sha=9fceb02")).toEqual(expected(startsWith("9fceb02")));
    expect((await numbersOf("commit_sha=9fceb02")).length).toBe(5);
    expect(await numbersOf("commit_sha=9FCEB02D")).toEqual(expected(startsWith("9fceb02d")));
    expect(await numbersOf("commit_sha=9fceb021")).toEqual(expected(startsWith("9fceb021")));
    // A run uploaded with an abbreviated SHA matches a prefix of it, never the full SHA.
    expect(await numbersOf(`commit_sha=${SHA_C.slice(0, 8)}`)).toEqual(expected(startsWith(SHA_C.slice(0, 8))));
    expect((await numbersOf(`commit_sha=${SHA_C.slice(0, 8)}`)).length).toBe(2);
    // 39 characters: a prefix still.
    expect(await numbersOf(`commit_sha=${SHA_A.slice(0, 39)}`)).toEqual(expected(startsWith(SHA_A.slice(0, 39))));
    expect(await numbersOf("commit_sha=fffffff")).toEqual([]);
  });

  it("combines with branch, result and status, and pages with cursors that carry it", async () => {
    const failedOnMain = expected((spec) => startsWith("9fceb02")(spec) && spec.branch === "main" && spec.failed);
    expect(failedOnMain.length).toBe(3);
    expect(await numbersOf("commit_sha=9fceb02&branch=main&result=tests_failed&status=processed")).toEqual(failedOnMain);
    expect(await numbersOf(`commit_sha=${SHA_A}&branch=feature`)).toEqual(
      expected((spec) => spec.commitSha === SHA_A && spec.branch === "feature"),
    );
    const { items, pages } = await collectAll(h, `${runsPath()}?commit_sha=9fceb02&branch=main`, key, 1);
    expect(items.map((run) => run.number)).toEqual(expected((spec) => startsWith("9fceb02")(spec) && spec.branch === "main"));
    expect(pages).toBe(items.length);
  });

  it("a cursor is refused with another commit_sha, or without it; an unfiltered one with it", async () => {
    const filtered = (await h.get(`${runsPath()}?commit_sha=9fceb02&limit=1`, key)).body.pagination.next_cursor as string;
    const unfiltered = (await h.get(`${runsPath()}?limit=1`, key)).body.pagination.next_cursor as string;
    const withCursor = (query: string, cursor: string) => `${runsPath()}?${query}&cursor=${encodeURIComponent(cursor)}`;
    expect((await h.get(withCursor("commit_sha=9fceb02", filtered), key)).status).toBe(200);
    for (const query of ["commit_sha=9fceb021", `commit_sha=${SHA_A}`, "limit=1", "commit_sha=9fceb02&branch=main"])
      expectInvalid(await h.get(withCursor(query, filtered), key), null);
    expectInvalid(await h.get(withCursor("commit_sha=9fceb02", unfiltered), key), null);
  });

  it.each([
    ["too short", "9fceb0"],
    ["not hexadecimal", "9fceb0g"],
    ["a branch name", "main"],
    ["empty", ""],
    ["padded", "%209fceb02"],
    ["65 characters", "a".repeat(65)],
    ["a range", "9fceb02..abcdef0"],
    ["a LIKE pattern", "9fceb0%25"],
    ["NUL", "9fceb02%00"],
  ])("%s (%s) is a 400 invalid_request on commit_sha", async (_, value) => {
    expectInvalid(await h.get(`${runsPath()}?commit_sha=${value}`, key), "commit_sha");
  });

  it("another organization's runs of the same commit are theirs alone", async () => {
    const theirs = await h.get(`${runsPath(otherProjectId)}?commit_sha=9fceb02`, otherKey);
    expect(theirs.status).toBe(200);
    expect(theirs.body.data.length).toBe(5);
    for (const run of theirs.body.data) expect(run.project_id).toBe(otherProjectId);
    expect((await h.get(`${runsPath(otherProjectId)}?commit_sha=9fceb02`, key)).status).toBe(404);
  });
});

function expectInvalid(res: CallResult, field: string | null) {
  expect(res.status, res.text).toBe(400);
  expect(res.body.error.code).toBe("invalid_request");
  if (field === null) return;
  expect(res.body.error.details).toEqual([{ field, message: "must be a commit SHA: 7 to 64 hexadecimal characters" }]);
}
