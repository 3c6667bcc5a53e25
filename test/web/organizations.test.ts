/**
 * `/organizations`: a person in two organizations sees both and switches the session's
 * organization, which `/` and the team page then show; other sessions keep theirs. Switching to
 * an organization one is not a member of is the pages' 404; a cross-site post is refused; a
 * signed-out visitor is sent to sign-in.
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

const client = () => new WebClient({ request: (path, init) => h.app.request(path, init) });
/** The organization the layout's header names. */
const headerOrganization = (html: string) => /<a class="org"[^>]*>([^<]*)<\/a>/.exec(html)?.[1];

describe("switching organizations", () => {
  const aliceEmail = uniqueEmail("alice");
  const alice = client();
  let alpha: string;
  let beta: string;
  let gamma: string;

  beforeAll(async () => {
    await alice.signUp({ name: "Alice", email: aliceEmail, organization: "Org Alpha" });
    ({ organizationId: alpha } = await signedUpOrganization(h.db, aliceEmail));
    const bobEmail = uniqueEmail("bob");
    await client().signUp({ name: "Bob", email: bobEmail, organization: "Org Beta" });
    ({ organizationId: beta } = await signedUpOrganization(h.db, bobEmail));
    const carolEmail = uniqueEmail("carol");
    await client().signUp({ name: "Carol", email: carolEmail, organization: "Org Gamma" });
    ({ organizationId: gamma } = await signedUpOrganization(h.db, carolEmail));
    const { userId } = await signedUpOrganization(h.db, aliceEmail);
    // Joined later than she created Alpha: a fresh sign-in starts with the oldest membership.
    h.clock.advance(60_000);
    await addMember({ db: h.db, clock: h.clock }, { organizationId: beta, userId, role: "member" });
  });

  it("lists the person's organizations with their role and the current one; the header links to it", async () => {
    const page = await alice.get("/organizations");
    expect(page.status).toBe(200);
    expect(page.text).toContain("Org Alpha");
    expect(page.text).toContain("Org Beta");
    expect(page.text).not.toContain("Org Gamma");
    expect(page.text).toContain("<strong>Current</strong>");
    expect(page.text).toContain(`/organizations/${beta}/switch`);
    expect(page.text).not.toContain(`/organizations/${alpha}/switch`);
    expect(headerOrganization((await alice.get("/")).text)).toBe("Org Alpha");
  });

  it("switching makes the other organization the session's: / and the team page show it, other sessions keep theirs", async () => {
    const otherDevice = client();
    expect((await otherDevice.signIn(aliceEmail)).status).toBe(303);
    const switched = await alice.post(`/organizations/${beta}/switch`, {});
    expect(switched.status).toBe(303);
    expect(switched.location).toMatch(/\/$/);
    expect(headerOrganization((await alice.get("/")).text)).toBe("Org Beta");
    const team = await alice.get("/settings/team");
    expect(headerOrganization(team.text)).toBe("Org Beta");
    expect(team.text).toContain("Bob");
    // A member of Beta: no key there.
    expect(team.text).not.toContain("api-key");
    expect(headerOrganization((await otherDevice.get("/")).text)).toBe("Org Alpha");
    // And back.
    expect((await alice.post(`/organizations/${alpha}/switch`, {})).status).toBe(303);
    expect(headerOrganization((await alice.get("/settings/team")).text)).toBe("Org Alpha");
  });

  it("an organization the person is not a member of, or no organization id, is the pages' 404; the session keeps its organization", async () => {
    for (const id of [gamma, "7d3e2f1a-0b9c-4d8e-9f7a-6b5c4d3e2f1a", "not-an-id"]) {
      const refused = await alice.post(`/organizations/${id}/switch`, {});
      expect(refused.status).toBe(404);
      expect(refused.text).not.toContain("Org Gamma");
    }
    expect(headerOrganization((await alice.get("/")).text)).toBe("Org Alpha");
  });

  it("a cross-site post is refused; a signed-out visitor is sent to sign-in", async () => {
    expect((await alice.post(`/organizations/${beta}/switch`, {}, { origin: "https://evil.example" })).status).toBe(403);
    expect(headerOrganization((await alice.get("/")).text)).toBe("Org Alpha");
    const visitor = client();
    const page = await visitor.get("/organizations");
    expect(page.status).toBe(302);
    expect(page.location).toContain("/sign-in?next=%2Forganizations");
    expect((await visitor.post(`/organizations/${beta}/switch`, {})).status).toBe(302);
  });
});
