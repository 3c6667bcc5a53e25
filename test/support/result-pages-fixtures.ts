/**
 * Fixtures of the run, test and alert pages' tests (Node, in process): a signed-up admin's
 * organization with a project, two runs on main (the second with failures of two causes, one of
 * them in a test whose name, failure message and trace carry `payload`), an alert event on the
 * second run, and a member of the same organization.
 */
import { and, eq } from "drizzle-orm";
import { tests } from "../../src/db/schema";
import { addMember } from "../../src/services/tenancy/memberships";
import type { Harness } from "./harness-core";
import { WebClient, uniqueEmail } from "./web-client";
import { signedUpOrganization } from "./web-fixtures";

export const SCRIPT_PAYLOAD = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;

export async function resultPagesFixture(h: Harness, payload = "") {
  const admin = new WebClient(h.app);
  const adminEmail = uniqueEmail("pages-admin");
  await admin.signUp({ email: adminEmail, organization: `Pages Org ${payload}` });
  const { organizationId } = await signedUpOrganization(h.db, adminEmail);
  const { project, alertIds } = await h.newProject(organizationId, `Shop ${payload}`);

  const meta = {
    branch: `main`,
    commitSha: "a1b2c3d4e5f6a7b8",
    buildId: `build ${payload}`,
    buildUrl: "https://ci.example.com/builds/1",
    tags: [`nightly ${payload}`],
  };
  const passing = (name: string) => ({ name, classname: "Shop", status: "passed" as const, durationMs: 12 });
  const first = await h.newRun(project.id, {
    meta,
    report: {
      suites: [
        {
          name: "unit",
          durationMs: 40,
          cases: [passing("adds to cart"), passing(`renders ${payload}`), passing("pays"), passing("refunds")],
        },
      ],
    },
  });
  h.clock.advance(60_000);
  const second = await h.newRun(project.id, {
    meta: { ...meta, commitSha: "b1b2c3d4e5f6a7b8", buildUrl: `javascript:alert(1)//${payload}` },
    report: {
      suites: [
        {
          name: "unit",
          durationMs: 50,
          cases: [
            passing("adds to cart"),
            {
              name: `renders ${payload}`,
              classname: "Shop",
              status: "failed",
              durationMs: 30,
              failureMessage: `expected title ${payload}`,
              failureText: `AssertionError: expected title ${payload}\n    at render (shop.test.ts:10:5)`,
            },
            {
              name: "pays",
              classname: "Shop",
              status: "errored",
              durationMs: 5,
              failureMessage: "connection refused",
              failureText: "Error: connection refused\n    at connect (net.ts:3:1)",
            },
            {
              name: "refunds",
              classname: "Shop",
              status: "errored",
              durationMs: 6,
              failureMessage: "connection refused",
              failureText: "Error: connection refused\n    at connect (net.ts:3:1)",
            },
          ],
          suites: [{ name: "nested", cases: [{ name: "skips", classname: "Shop", status: "skipped" }] }],
        },
      ],
    },
  });
  const event = await h.newEvent(alertIds.test_flakiness!, second.id, { newly_failing_tests: 3, test_name: `renders ${payload}` });

  const testId = async (name: string) =>
    (
      await h.db
        .select({ id: tests.id })
        .from(tests)
        .where(and(eq(tests.projectId, project.id), eq(tests.name, name)))
    )[0]!.id;
  const member = new WebClient(h.app);
  const memberEmail = uniqueEmail("pages-member");
  await member.signUp({ email: memberEmail, organization: "Member's own org" });
  const { userId: memberUserId } = await signedUpOrganization(h.db, memberEmail);
  await addMember({ db: h.db, clock: h.clock }, { organizationId, userId: memberUserId, role: "member" });

  const stranger = new WebClient(h.app);
  await stranger.signUp({ email: uniqueEmail("pages-stranger"), organization: "Stranger Org" });

  return {
    admin,
    member,
    memberEmail,
    stranger,
    organizationId,
    project,
    alertIds,
    first,
    second,
    event,
    renderTestId: await testId(`renders ${payload}`),
    paysTestId: await testId("pays"),
  };
}
