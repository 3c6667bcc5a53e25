/**
 * PUT /uploads/v1/codeowners (docs/codeowners.md): the project's CODEOWNERS, stored with the
 * upload token; every test's `owners` follows the latest one (tests stored before it and after
 * it), and the tests list filters on one owner. Happy paths; what is refused is in
 * codeowners.errors.test.ts, who may do it in codeowners.security.test.ts, the rules themselves in
 * test/lib/codeowners.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Report } from "../../../src/services/runs/test-runs";
import { type Harness, collectAll, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

type CaseSpec = { name: string; file?: string | null; classname?: string };
const report = (cases: CaseSpec[]): Report => ({
  suites: [
    {
      name: "suite",
      cases: cases.map((c) => ({
        name: c.name,
        classname: c.classname ?? null,
        file: c.file ?? null,
        status: "passed" as const,
        durationMs: 5,
      })),
    },
  ],
});

async function newProject() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  return { apiKey, uploadToken, projectId: project.id as string };
}

async function run(projectId: string, cases: CaseSpec[]) {
  h.clock.advance(60_000);
  await h.newRun(projectId, { meta: { branch: "main" }, report: report(cases) });
}

const putCodeowners = (token: string, text: string, contentType = "text/plain") =>
  h.call("PUT", "/uploads/v1/codeowners", { key: token, headers: { "content-type": contentType }, rawBody: text });

/** The project's tests' owners, by name. */
async function ownersByName(apiKey: string, projectId: string): Promise<Record<string, string[]>> {
  const { items } = await collectAll(h, `/api/v1/projects/${projectId}/tests?sort=name`, apiKey, 100);
  return Object.fromEntries(items.map((t: any) => [t.name, t.owners]));
}

const CODEOWNERS = [
  "# Shop",
  "*                    @acme/core",
  "/services/cart/      @acme/cart cart-lead@example.com",
  "*.e2e.ts             @acme/qa",
  "/services/cart/vendor/",
].join("\n");

const CASES: CaseSpec[] = [
  { name: "adds an item", file: "services/cart/cart.test.ts" },
  { name: "checks out", file: "./services/cart/checkout.e2e.ts" },
  { name: "vendored", file: "services\\cart\\vendor\\lib.test.ts" },
  { name: "logs in", file: "/home/runner/work/shop/shop/web/login.test.ts" },
  { name: "no file", classname: "pkg.NoFile" },
];

describe("PUT /uploads/v1/codeowners", () => {
  it("stores the file and recomputes the owners of the tests already there; says what it read", async () => {
    const { apiKey, uploadToken, projectId } = await newProject();
    await run(projectId, CASES);
    expect(Object.values(await ownersByName(apiKey, projectId))).toEqual([[], [], [], [], []]);

    const res = await putCodeowners(uploadToken, CODEOWNERS);
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.body).toEqual({
      rules_count: 4,
      ignored_lines: [],
      ignored_lines_count: 0,
      changed: true,
      tests_count: 5,
      tests_with_owners_count: 3,
      files_over_budget_count: 0,
      updated_at: h.clock.now().toISOString(),
    });
    expect(await ownersByName(apiKey, projectId)).toEqual({
      "adds an item": ["@acme/cart", "cart-lead@example.com"],
      "checks out": ["@acme/qa"],
      vendored: [],
      // An absolute path: the unanchored `*` matches it, the anchored rules do not.
      "logs in": ["@acme/core"],
      "no file": [],
    });
    const one = (await h.get(`/api/v1/projects/${projectId}/tests?q=adds`, apiKey)).body.data[0];
    expect((await h.get(`/api/v1/tests/${one.id}`, apiKey)).body.owners).toEqual(["@acme/cart", "cart-lead@example.com"]);
  });

  it("tests first seen after it get their owners when their run is processed, through the upload route too", async () => {
    const { apiKey, uploadToken, projectId } = await newProject();
    expect((await putCodeowners(uploadToken, CODEOWNERS)).body).toMatchObject({ tests_count: 0, tests_with_owners_count: 0 });
    await run(projectId, CASES.slice(0, 2));
    const uploaded = await h.uploadAndWait(uploadToken, {
      branch: "main",
      suites: [{ name: "s", cases: [{ name: "pays", file: "services/cart/pay.test.ts", status: "passed" }] }],
    });
    expect(uploaded.status).toBe("processed");
    expect(await ownersByName(apiKey, projectId)).toEqual({
      "adds an item": ["@acme/cart", "cart-lead@example.com"],
      "checks out": ["@acme/qa"],
      pays: ["@acme/cart", "cart-lead@example.com"],
    });
  });

  it("a new file replaces the previous one for every test; the same file again changes nothing; an empty one clears", async () => {
    const { apiKey, uploadToken, projectId } = await newProject();
    await run(projectId, CASES);
    const first = await putCodeowners(uploadToken, CODEOWNERS);
    h.clock.advance(60_000);

    const again = await putCodeowners(uploadToken, CODEOWNERS);
    expect(again.body).toMatchObject({ changed: false, updated_at: first.body.updated_at, tests_with_owners_count: 3 });

    const replaced = await putCodeowners(uploadToken, "/services/ @acme/services\n");
    expect(replaced.body).toMatchObject({
      changed: true,
      rules_count: 1,
      updated_at: h.clock.now().toISOString(),
      tests_with_owners_count: 3,
    });
    expect(await ownersByName(apiKey, projectId)).toEqual({
      "adds an item": ["@acme/services"],
      "checks out": ["@acme/services"],
      vendored: ["@acme/services"],
      "logs in": [],
      "no file": [],
    });

    // A test stored after the replacement follows the new file, not the first one.
    await run(projectId, [{ name: "later", file: "web/later.e2e.ts" }]);
    expect((await ownersByName(apiKey, projectId)).later).toEqual([]);

    const cleared = await putCodeowners(uploadToken, "");
    expect(cleared.body).toMatchObject({ changed: true, rules_count: 0, tests_count: 6, tests_with_owners_count: 0 });
    expect(Object.values(await ownersByName(apiKey, projectId)).every((owners) => owners.length === 0)).toBe(true);
  });

  it("ignored lines are listed with their number and reason, and the rest applies", async () => {
    const { apiKey, uploadToken, projectId } = await newProject();
    await run(projectId, CASES.slice(0, 1));
    const res = await putCodeowners(
      uploadToken,
      ["* @acme/core", "!services/ @x", "services/[a-z]*/ @y", "/services/ team-without-at"].join("\r\n"),
    );
    expect(res.status).toBe(200);
    expect(res.body.rules_count).toBe(1);
    expect(res.body.ignored_lines_count).toBe(3);
    expect(res.body.ignored_lines.map((l: any) => l.line)).toEqual([2, 3, 4]);
    expect(res.body.ignored_lines[2].reason).toContain("`team-without-at` is not an owner");
    expect((await ownersByName(apiKey, projectId))["adds an item"]).toEqual(["@acme/core"]);
  });

  it("a UTF-8 file with a byte-order mark, a charset parameter, and non-ASCII paths", async () => {
    const { apiKey, uploadToken, projectId } = await newProject();
    await run(projectId, [{ name: "ünïcode", file: "tests/größe/a.test.ts" }]);
    const res = await putCodeowners(
      uploadToken,
      "\uFEFF/tests/größe/ @acme/équipe-not-a-slug @acme/size\n/tests/größe/ @acme/size",
      "text/plain; charset=UTF-8",
    );
    expect(res.status, res.text).toBe(200);
    // GitHub's handles are ASCII: the first line is ignored, the second applies.
    expect(res.body).toMatchObject({ rules_count: 1, ignored_lines: [{ line: 1, reason: expect.stringContaining("is not an owner") }] });
    expect(await ownersByName(apiKey, projectId)).toEqual({ ünïcode: ["@acme/size"] });
  });
});

describe("GET /projects/:id/tests?owner=", () => {
  it("only the tests with that owner, exactly; walked with cursors bound to the owner", async () => {
    const { apiKey, uploadToken, projectId } = await newProject();
    const cases: CaseSpec[] = [];
    for (let i = 0; i < 7; i++) cases.push({ name: `cart ${i}`, file: `services/cart/c${i}.test.ts` });
    for (let i = 0; i < 4; i++) cases.push({ name: `web ${i}`, file: `web/w${i}.test.ts` });
    cases.push({ name: "no file", classname: "pkg.X" });
    await run(projectId, cases);
    await putCodeowners(uploadToken, CODEOWNERS);

    const path = (owner: string, sort = "name") => `/api/v1/projects/${projectId}/tests?sort=${sort}&owner=${encodeURIComponent(owner)}`;
    const cart = await collectAll(h, path("@acme/cart"), apiKey, 3);
    expect(cart.pages).toBe(3);
    expect(cart.items.map((t: any) => t.name)).toEqual(Array.from({ length: 7 }, (_, i) => `cart ${i}`));
    expect((await collectAll(h, path("cart-lead@example.com", "impact"), apiKey, 2)).items).toHaveLength(7);
    expect((await collectAll(h, path("@acme/core"), apiKey, 2)).items.map((t: any) => t.name)).toEqual([
      "web 0",
      "web 1",
      "web 2",
      "web 3",
    ]);
    // Exact: no prefix, no case folding.
    for (const owner of ["@acme", "@ACME/cart", "acme/cart", "@acme/cart "])
      expect((await h.get(path(owner), apiKey)).body.data, owner).toEqual([]);

    // Combined with the other filters.
    expect((await h.get(`${path("@acme/cart")}&q=cart%203`, apiKey)).body.data.map((t: any) => t.name)).toEqual(["cart 3"]);

    // A cursor is bound to its owner.
    const page = await h.get(`${path("@acme/cart")}&limit=2`, apiKey);
    const cursor = encodeURIComponent(page.body.pagination.next_cursor);
    expect((await h.get(`${path("@acme/core")}&limit=2&cursor=${cursor}`, apiKey)).status).toBe(400);
    expect((await h.get(`${path("@acme/cart")}&limit=2&cursor=${cursor}`, apiKey)).body.data.map((t: any) => t.name)).toEqual([
      "cart 2",
      "cart 3",
    ]);
  });
});

describe("hostile files do bounded work (they froze the server before)", () => {
  it("an owner of 300 KB that made the e-mail check backtrack: answered at once, the line reported", async () => {
    const { uploadToken } = await newProject();
    const started = performance.now();
    const res = await putCodeowners(uploadToken, `* a@${"a.".repeat(150_000)}@\n* @acme/core`);
    expect(res.status, res.text).toBe(200);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(res.body).toMatchObject({ rules_count: 1, ignored_lines_count: 1 });
  });

  it("nested `**` against a deep test file: owners computed without exponential backtracking", async () => {
    const { apiKey, uploadToken, projectId } = await newProject();
    await run(projectId, [
      { name: "deep miss", file: `${"a/".repeat(40)}c` },
      { name: "deep hit", file: `${"a/".repeat(40)}b` },
    ]);
    const started = performance.now();
    const res = await putCodeowners(uploadToken, `${Array(8).fill("**/a").join("/")}/**/b @deep`);
    expect(res.status, res.text).toBe(200);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(res.body).toMatchObject({ tests_with_owners_count: 1, files_over_budget_count: 0 });
    expect(await ownersByName(apiKey, projectId)).toEqual({ "deep hit": ["@deep"], "deep miss": [] });
  });

  it("a file past its step budget keeps the rule found before, and the answer counts it", async () => {
    const { apiKey, uploadToken, projectId } = await newProject();
    await run(projectId, [{ name: "long names", file: `${"x".repeat(400)}/${"x".repeat(400)}/f.ts` }]);
    const hostile = Array.from({ length: 50 }, (_, i) => `**/*${"x".repeat(100)}?y*/** @h${i}`);
    const res = await putCodeowners(uploadToken, ["* @all", ...hostile].join("\n"));
    expect(res.body).toMatchObject({ tests_with_owners_count: 1, files_over_budget_count: 1 });
    expect(await ownersByName(apiKey, projectId)).toEqual({ "long names": ["@all"] });
  });
});
