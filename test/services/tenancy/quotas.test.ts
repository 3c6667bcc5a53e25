/**
 * Quotas per organization (docs/quotas.md, src/lib/quotas.ts, src/services/quotas.ts), each test
 * in an organization of its own, with small operator overrides:
 * - projects (QUOTA_PROJECTS): one more is a 429 `quota_exceeded` without Retry-After, and
 *   concurrent creations never pass the cap;
 * - uploads per hour (QUOTA_UPLOADS_PER_HOUR): one more is a 429 `rate_limited` whose Retry-After
 *   is the window's remaining seconds; the next window accepts again;
 * - concurrent exports (QUOTA_CONCURRENT_EXPORTS): a third is a 429 `rate_limited` with
 *   Retry-After; an export that ends gives its place back, one that died stops counting once its
 *   lease expires;
 * - stored cases (QUOTA_STORED_CASES): an upload, JUnit or JSON, is refused once the organization's
 *   processed runs hold the quota's cases, with a 429 `quota_exceeded` without Retry-After that takes
 *   no slot of the hourly window; the run that crosses it is accepted; deleting runs makes room
 *   again (the counter itself: test/db/run-deletion.test.ts);
 * - the environment's spelling of the overrides and the defaults.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, count, eq, sum } from "drizzle-orm";
import { projects, testCases, testRuns, uploadWindows } from "../../../src/db/schema";
import { DEFAULT_QUOTAS, quotasFrom, resolveQuotas } from "../../../src/lib/quotas";
import { EXPORT_LEASE_MS } from "../../../src/services/tenancy/quotas";
import { completeTestRun, recordTestRunArrival, storeTestRun } from "../../../src/services/runs/test-runs";
import { createHarness } from "../../support/harness";

type Harness = Awaited<ReturnType<typeof createHarness>>;

const REPORT = `<testsuite name="s"><testcase classname="c" name="t" time="0.01"/></testsuite>`;

describe("the quotas' settings", () => {
  it("defaults fit real use: 1,000 projects, 10,000 uploads an hour, 2 exports at once, 50 million stored cases", () => {
    expect(DEFAULT_QUOTAS).toEqual({ projects: 1_000, uploadsPerHour: 10_000, concurrentExports: 2, storedCases: 50_000_000 });
    expect(quotasFrom({})).toEqual(DEFAULT_QUOTAS);
    expect(resolveQuotas(undefined)).toEqual(DEFAULT_QUOTAS);
    expect(resolveQuotas({ projects: 5 })).toEqual({ ...DEFAULT_QUOTAS, projects: 5 });
  });

  it("the operator overrides each; 0 or unlimited switches one off; a malformed value names its variable", () => {
    expect(
      quotasFrom({
        QUOTA_PROJECTS: "20",
        QUOTA_UPLOADS_PER_HOUR: "unlimited",
        QUOTA_CONCURRENT_EXPORTS: "0",
        QUOTA_STORED_CASES: "2000000",
      }),
    ).toEqual({ projects: 20, uploadsPerHour: null, concurrentExports: null, storedCases: 2_000_000 });
    expect(quotasFrom({ QUOTA_STORED_CASES: " unlimited " }).storedCases).toBeNull();
    expect(quotasFrom({ QUOTA_STORED_CASES: "0" }).storedCases).toBeNull();
    expect(quotasFrom({ QUOTA_STORED_CASES: "" }).storedCases).toBe(50_000_000);
    expect(quotasFrom({ QUOTA_STORED_CASES: "1000000000" }).storedCases).toBe(1_000_000_000);
    expect(() => quotasFrom({ QUOTA_STORED_CASES: "1000000001" })).toThrow(/QUOTA_STORED_CASES/);
    expect(() => quotasFrom({ QUOTA_STORED_CASES: "50_000_000" })).toThrow(/QUOTA_STORED_CASES/);
    expect(() => quotasFrom({ QUOTA_STORED_CASES: "5e7" })).toThrow(/QUOTA_STORED_CASES/);
    expect(quotasFrom({ QUOTA_PROJECTS: " ", QUOTA_UPLOADS_PER_HOUR: "UNLIMITED" })).toEqual({ ...DEFAULT_QUOTAS, uploadsPerHour: null });
    expect(() => quotasFrom({ QUOTA_PROJECTS: "-1" })).toThrow(/QUOTA_PROJECTS/);
    expect(() => quotasFrom({ QUOTA_UPLOADS_PER_HOUR: "1e3" })).toThrow(/QUOTA_UPLOADS_PER_HOUR/);
    expect(() => quotasFrom({ QUOTA_CONCURRENT_EXPORTS: "two" })).toThrow(/QUOTA_CONCURRENT_EXPORTS/);
  });
});

describe("projects per organization (QUOTA_PROJECTS)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ overrides: { quotas: { projects: 3 } } });
  });
  afterAll(() => h.close());

  it("the project past the quota is a 429 quota_exceeded without Retry-After; other organizations keep theirs", async () => {
    const { organization } = await h.newOrganization();
    for (let i = 0; i < 3; i++) await h.newProject(organization.id, `p${i}`);
    const fourth = await h.admin("POST", `/organizations/${organization.id}/projects`, { name: "one too many" });
    expect(fourth.status, fourth.text).toBe(429);
    expect(fourth.body.error.code).toBe("quota_exceeded");
    expect(fourth.body.error.message).toContain("QUOTA_PROJECTS");
    expect(fourth.headers.get("retry-after")).toBeNull();
    expect(await h.db.select({ id: projects.id }).from(projects).where(eq(projects.organizationId, organization.id))).toHaveLength(3);

    const other = await h.newOrganization();
    expect((await h.admin("POST", `/organizations/${other.organization.id}/projects`, { name: "theirs" })).status).toBe(201);
  });

  it("concurrent creations never pass the quota", async () => {
    const { organization } = await h.newOrganization();
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => h.admin("POST", `/organizations/${organization.id}/projects`, { name: `p${i}` })),
    );
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(3);
    expect(answers.filter((answer) => answer.status === 429 && answer.body.error.code === "quota_exceeded")).toHaveLength(5);
    expect(await h.db.select({ id: projects.id }).from(projects).where(eq(projects.organizationId, organization.id))).toHaveLength(3);
  });
});

describe("uploads per organization and hour (QUOTA_UPLOADS_PER_HOUR)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ overrides: { quotas: { uploadsPerHour: 3 } } });
  });
  afterAll(() => h.close());

  it("the upload past the quota is a 429 rate_limited with the window's remaining seconds; the next window accepts again", async () => {
    const { organization } = await h.newOrganization();
    // The quota is the organization's, whichever of its projects uploads.
    const tokens = [(await h.newProject(organization.id, "a")).uploadToken, (await h.newProject(organization.id, "b")).uploadToken];
    for (let i = 0; i < 3; i++) {
      const accepted = await h.upload(tokens[i % 2]!, REPORT);
      expect(accepted.status, accepted.text).toBe(202);
      h.clock.advance(60_000);
    }
    h.clock.advance(1_000_000 - 180_000); // 1,000 s into the window
    const refused = await h.upload(tokens[1]!, REPORT);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.error.code).toBe("rate_limited");
    expect(refused.body.error.message).toContain("QUOTA_UPLOADS_PER_HOUR");
    expect(refused.headers.get("retry-after")).toBe("2600");
    expect((await h.upload(tokens[0]!, REPORT)).status).toBe(429);

    // Another organization has its own window.
    const other = await h.newOrganization();
    expect((await h.upload((await h.newProject(other.organization.id)).uploadToken, REPORT)).status).toBe(202);

    h.clock.advance(2_599_000);
    expect((await h.upload(tokens[0]!, REPORT)).headers.get("retry-after")).toBe("1");
    h.clock.advance(1_000);
    const next = await h.upload(tokens[0]!, REPORT);
    expect(next.status, next.text).toBe(202);
  });
});

describe("exports at once per organization (QUOTA_CONCURRENT_EXPORTS)", () => {
  let h: Harness;
  beforeAll(async () => {
    // One row per batch: an export of two runs stays open after its first line until it is read on.
    h = await createHarness({ overrides: { exportBatchRows: 1 } });
  });
  afterAll(() => h.close());

  it("a third export while two stream is a 429 rate_limited with Retry-After; an ended one gives its place back, a dead one's lease expires", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    await h.newRun(project.id);
    await h.newRun(project.id);
    const since = new Date(h.clock.now().getTime() - 3_600_000).toISOString();
    const until = new Date(h.clock.now().getTime() + 3_600_000).toISOString();
    const open = () =>
      h.app.request(`/api/v1/projects/${project.id}/exports/test_runs?since=${since}&until=${until}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });

    const first = await open();
    const second = await open();
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await open();
    expect(third.status).toBe(429);
    const body = (await third.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("rate_limited");
    expect(body.error.message).toContain("QUOTA_CONCURRENT_EXPORTS");
    expect(Number(third.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    // Another organization exports meanwhile.
    const other = await h.newOrganization();
    const theirs = await h.newProject(other.organization.id);
    const otherExport = await h.app.request(`/api/v1/projects/${theirs.project.id}/exports/test_runs?since=${since}&until=${until}`, {
      headers: { authorization: `Bearer ${other.apiKey}` },
    });
    expect(otherExport.status).toBe(200);
    await otherExport.text();

    // Read to its end, the first export gives its place back.
    expect((await first.text()).trim().split("\n")).toHaveLength(2);
    const fourth = await open();
    expect(fourth.status).toBe(200);
    expect((await open()).status).toBe(429);
    // A client that goes away gives it back too.
    await fourth.body!.cancel();
    const fifth = await open();
    expect(fifth.status).toBe(200);

    // Two exports now hold places and are never read on (their process died): their leases expire.
    expect((await open()).status).toBe(429);
    h.clock.advance(EXPORT_LEASE_MS);
    const afterExpiry = await open();
    expect(afterExpiry.status).toBe(200);
    await afterExpiry.text();
    await second.body!.cancel();
    await fifth.body!.cancel();
  });
});

/** A JUnit report of `cases` passing cases. */
const junitOf = (cases: number) =>
  `<testsuite name="s">${Array.from({ length: cases }, (_, i) => `<testcase classname="c" name="t${i}"/>`).join("")}</testsuite>`;

/** The same as the JSON envelope. */
const envelopeOf = (cases: number) => ({
  suites: [{ name: "s", cases: Array.from({ length: cases }, (_, i) => ({ name: `j${i}`, status: "passed" })) }],
});

describe("stored cases per organization (QUOTA_STORED_CASES)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ overrides: { quotas: { storedCases: 10, uploadsPerHour: 100 } } });
  });
  afterAll(() => h.close());

  /** The organization's stored cases as its projects' counters say, and as its cases' rows are. */
  async function storedCases(organizationId: string) {
    const [counted] = await h.db
      .select({ cases: sum(projects.storedCasesCount).mapWith(Number) })
      .from(projects)
      .where(eq(projects.organizationId, organizationId));
    const [rows] = await h.db
      .select({ cases: count() })
      .from(testCases)
      .innerJoin(projects, eq(projects.id, testCases.projectId))
      .where(eq(projects.organizationId, organizationId));
    return { counted: counted!.cases, rows: rows!.cases };
  }

  const runsOf = async (organizationId: string) =>
    (
      await h.db
        .select({ id: testRuns.id })
        .from(testRuns)
        .innerJoin(projects, eq(projects.id, testRuns.projectId))
        .where(eq(projects.organizationId, organizationId))
    ).length;

  it("once the organization stores the quota's cases, JUnit and JSON uploads are a 429 quota_exceeded without Retry-After; other organizations upload", async () => {
    const { organization } = await h.newOrganization();
    const first = await h.newProject(organization.id, "a");
    const second = await h.newProject(organization.id, "b");

    // Below the quota an upload is accepted whole, even the one that crosses it: 6 + 6 = 12 cases stored.
    expect(await h.uploadAndWait(first.uploadToken, junitOf(6))).toMatchObject({ status: "processed", tests_count: 6 });
    expect(await storedCases(organization.id)).toEqual({ counted: 6, rows: 6 });
    expect(await h.uploadAndWait(second.uploadToken, envelopeOf(6))).toMatchObject({ status: "processed", tests_count: 6 });
    expect(await storedCases(organization.id)).toEqual({ counted: 12, rows: 12 });

    // At or over it, every project of the organization is refused, whatever the format.
    const refused = [
      await h.upload(first.uploadToken, junitOf(1)),
      await h.upload(second.uploadToken, envelopeOf(1)),
      await h.upload(second.uploadToken, junitOf(1), { headers: { "idempotency-key": "k1" } }),
    ];
    for (const answer of refused) {
      expect(answer.status, answer.text).toBe(429);
      expect(answer.body.error.code).toBe("quota_exceeded");
      expect(answer.body.error.message).toContain("QUOTA_STORED_CASES");
      expect(answer.body.error.message).toContain("quota of 10 stored cases");
      expect(answer.body.error.message).toContain("stores 12 test cases");
      expect(answer.body.error.message).toContain("ask the operator");
      expect(answer.headers.get("retry-after")).toBeNull();
    }
    // Nothing recorded, and the refused uploads took no slot of the hourly window.
    expect(await runsOf(organization.id)).toBe(2);
    const [window] = await h.db.select().from(uploadWindows).where(eq(uploadWindows.organizationId, organization.id));
    expect(window?.uploads).toBe(2);
    // Reads with the upload token still answer.
    expect((await h.call("GET", "/uploads/v1/test_runs/1", { key: first.uploadToken })).status).toBe(200);
    // Waiting makes no room.
    h.clock.advance(2 * 60 * 60_000);
    expect((await h.upload(first.uploadToken, junitOf(1))).body.error.code).toBe("quota_exceeded");

    // Another organization stores its own cases.
    const other = await h.newOrganization();
    const theirs = await h.newProject(other.organization.id);
    expect(await h.uploadAndWait(theirs.uploadToken, junitOf(3))).toMatchObject({ status: "processed", tests_count: 3 });
    expect(await storedCases(other.organization.id)).toEqual({ counted: 3, rows: 3 });
  });

  it("with the hourly quota switched off, the stored cases are still checked by the token's lookup", async () => {
    const unlimitedRate = await createHarness({ overrides: { quotas: { storedCases: 2, uploadsPerHour: null } } });
    try {
      const { organization } = await unlimitedRate.newOrganization();
      const { uploadToken } = await unlimitedRate.newProject(organization.id);
      expect(await unlimitedRate.uploadAndWait(uploadToken, junitOf(2))).toMatchObject({ status: "processed", tests_count: 2 });
      const refused = await unlimitedRate.upload(uploadToken, envelopeOf(1));
      expect(refused.status, refused.text).toBe(429);
      expect(refused.body.error.code).toBe("quota_exceeded");
      expect(refused.headers.get("retry-after")).toBeNull();
      expect(await unlimitedRate.db.select().from(uploadWindows).where(eq(uploadWindows.organizationId, organization.id))).toEqual([]);
    } finally {
      await unlimitedRate.close();
    }
  });

  it("deleting runs makes room: the counter follows the deleted cases, and uploads are accepted below the quota again", async () => {
    const { organization } = await h.newOrganization();
    const { project, uploadToken } = await h.newProject(organization.id);
    await h.uploadAndWait(uploadToken, junitOf(4));
    const deleted = await h.uploadAndWait(uploadToken, junitOf(7));
    expect(await storedCases(organization.id)).toEqual({ counted: 11, rows: 11 });
    expect((await h.upload(uploadToken, junitOf(1))).status).toBe(429);

    await h.db.delete(testRuns).where(and(eq(testRuns.projectId, project.id), eq(testRuns.number, deleted.number)));
    expect(await storedCases(organization.id)).toEqual({ counted: 4, rows: 4 });
    expect(await h.uploadAndWait(uploadToken, junitOf(2))).toMatchObject({ status: "processed", tests_count: 2 });
    expect(await storedCases(organization.id)).toEqual({ counted: 6, rows: 6 });
  });

  it("each run's cases are counted once: runs processed at once, a redelivered run, a large run stored in chunks; a failed run stores none", async () => {
    const { organization } = await h.newOrganization();
    const [a, b] = [(await h.newProject(organization.id, "a")).project.id, (await h.newProject(organization.id, "b")).project.id];
    const report = (cases: number) => ({
      suites: [{ name: "s", cases: Array.from({ length: cases }, (_, i) => ({ name: `t${i}`, status: "passed" as const })) }],
    });
    const runs = await Promise.all([
      h.newRun(a, { report: report(1) }),
      h.newRun(a, { report: report(2) }),
      h.newRun(b, { report: report(3) }),
      h.newRun(b, { outcome: "failed" }),
    ]);
    expect(await storedCases(organization.id)).toEqual({ counted: 6, rows: 6 });

    // A queue message delivered again finds its run processed: nothing is stored or counted twice.
    expect(await completeTestRun(h.storeDeps, runs[0]!.id, report(1))).toBeNull();
    // A run larger than one chunk (here 2 cases) is stored and its tests advanced in chunks.
    const { run: large } = await recordTestRunArrival(h.storeDeps, b);
    const stored = await storeTestRun(h.storeDeps, large.id, async (emit) => void emit(report(5).suites), { largeAbove: 2 });
    expect(stored?.testsCount).toBe(5);
    expect(await storedCases(organization.id)).toEqual({ counted: 11, rows: 11 });
  });
});
