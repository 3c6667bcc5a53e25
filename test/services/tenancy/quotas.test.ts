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
 * - the environment's spelling of the overrides and the defaults.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { projects } from "../../../src/db/schema";
import { DEFAULT_QUOTAS, quotasFrom, resolveQuotas } from "../../../src/lib/quotas";
import { EXPORT_LEASE_MS } from "../../../src/services/tenancy/quotas";
import { createHarness } from "../../support/harness";

type Harness = Awaited<ReturnType<typeof createHarness>>;

const REPORT = `<testsuite name="s"><testcase classname="c" name="t" time="0.01"/></testsuite>`;

describe("the quotas' settings", () => {
  it("defaults fit real use: 1,000 projects, 10,000 uploads an hour, 2 exports at once", () => {
    expect(DEFAULT_QUOTAS).toEqual({ projects: 1_000, uploadsPerHour: 10_000, concurrentExports: 2 });
    expect(quotasFrom({})).toEqual(DEFAULT_QUOTAS);
    expect(resolveQuotas(undefined)).toEqual(DEFAULT_QUOTAS);
    expect(resolveQuotas({ projects: 5 })).toEqual({ ...DEFAULT_QUOTAS, projects: 5 });
  });

  it("the operator overrides each; 0 or unlimited switches one off; a malformed value names its variable", () => {
    expect(quotasFrom({ QUOTA_PROJECTS: "20", QUOTA_UPLOADS_PER_HOUR: "unlimited", QUOTA_CONCURRENT_EXPORTS: "0" })).toEqual({
      projects: 20,
      uploadsPerHour: null,
      concurrentExports: null,
    });
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
