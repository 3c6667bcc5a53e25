/**
 * The run page's split (docs/splitting.md, "The run's split"): a sharded run whose key made a
 * split plan lists each shard's items, and warns when items of the plan reported no results (a
 * shard that fell back, or never reported); a run whose items all reported has no warning.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addMember } from "../../src/services/tenancy/memberships";
import { createHarness } from "../support/harness";
import { WebClient, uniqueEmail } from "../support/web-client";
import { signedUpOrganization } from "../support/web-fixtures";

let h: Awaited<ReturnType<typeof createHarness>>;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

const textOf = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");
const ITEMS = ["test/a.test.ts", "test/b.test.ts", "test/c.test.ts", "test/d.test.ts"];

async function projectWithPerson() {
  const { organization } = await h.newOrganization("Split Org");
  const { project, uploadToken } = await h.newProject(organization.id, "Shop");
  const web = new WebClient(h.app);
  const email = uniqueEmail("split");
  await web.signUp({ email, organization: "Own org" });
  const { userId } = await signedUpOrganization(h.db, email);
  await addMember({ db: h.db, clock: h.clock }, { organizationId: organization.id, userId, role: "admin" });
  return { project, uploadToken, web };
}

/** A run of the key whose cases name `files` (absolute, as runners write them). */
async function runOf(token: string, key: string, files: string[]) {
  const cases = files.map((file) => ({ name: "t", file: `/home/runner/work/app/${file}`, status: "passed" }));
  return h.uploadAndWait(token, { run_key: key, shard: "1/1", suites: [{ name: "s", cases }] }) as Promise<{ number: number }>;
}

describe("the run page's split", () => {
  it("each shard's items, and a warning naming the items of the plan that reported nothing", async () => {
    const { project, uploadToken, web } = await projectWithPerson();
    const plan = await h.post("/uploads/v1/split_plans", uploadToken, { key: "build-1", shards: 2, items: ITEMS });
    expect(plan.status, plan.text).toBe(200);
    const run = await runOf(uploadToken, "build-1", ["test/a.test.ts", "test/b.test.ts"]);
    const page = textOf((await web.get(`/projects/${project.id}/runs/${run.number}`)).text);
    expect(page).toContain("Split");
    expect(page).toContain("2 item(s) of the split plan reported no results");
    expect(page).toMatch(/test\/c\.test\.ts/);
    expect(page).toMatch(/test\/d\.test\.ts/);
  });

  it("every item reported: the shards listed, no warning; a run without a plan shows no split", async () => {
    const { project, uploadToken, web } = await projectWithPerson();
    await h.post("/uploads/v1/split_plans", uploadToken, { key: "build-2", shards: 2, items: ITEMS });
    const run = await runOf(uploadToken, "build-2", ITEMS);
    const page = textOf((await web.get(`/projects/${project.id}/runs/${run.number}`)).text);
    expect(page).toContain("Plan build-2 , by file.");
    expect(page).not.toContain("reported no results");
    const other = await runOf(uploadToken, "no-plan", ITEMS);
    expect(textOf((await web.get(`/projects/${project.id}/runs/${other.number}`)).text)).not.toContain("Plan no-plan");
  });

  it("the run keeps its split after its plan expired and the key made a new one", async () => {
    const { project, uploadToken, web } = await projectWithPerson();
    await h.post("/uploads/v1/split_plans", uploadToken, { key: "build-3", shards: 2, items: ITEMS });
    const run = await runOf(uploadToken, "build-3", ITEMS.slice(0, 3));
    h.clock.advance(25 * 60 * 60 * 1000);
    const replanned = await h.post("/uploads/v1/split_plans", uploadToken, { key: "build-3", shards: 3, items: ["test/z.test.ts"] });
    expect(replanned.status, replanned.text).toBe(200);
    const page = textOf((await web.get(`/projects/${project.id}/runs/${run.number}`)).text);
    expect(page).toContain("Plan build-3 , by file.");
    expect(page).toContain("1 item(s) of the split plan reported no results");
    expect(page).toMatch(/1\/2 2 items/);
    expect(page).not.toContain("test/z.test.ts");
  });
});
