/** Fixtures of the project pages' tests: an organization with a signed-in admin and a signed-in member. */
import { createPasswordUser } from "../../src/auth/people";
import { addMember } from "../../src/services/tenancy/memberships";
import { WEB_APP_URL } from "./constants";
import { testSecrets } from "./harness-core";
import type { createHarness } from "./harness";
import { PASSWORD, WebClient, uniqueEmail } from "./web-client";
import { signedUpOrganization } from "./web-fixtures";

type Harness = Awaited<ReturnType<typeof createHarness>>;

/** A new organization (signed up by its admin) with a second person who is only its member; both signed in. */
export async function adminAndMember(h: Harness, organization = "Pages Org") {
  const admin = new WebClient(h.app);
  const adminEmail = uniqueEmail("admin");
  await admin.signUp({ name: "Ada Admin", email: adminEmail, organization });
  const { organizationId } = await signedUpOrganization(h.db, adminEmail);
  const memberEmail = uniqueEmail("member");
  const user = await createPasswordUser(
    { db: h.db, secrets: testSecrets, webAppUrl: WEB_APP_URL },
    { name: "Mo Member", email: memberEmail, password: PASSWORD },
  );
  await addMember({ db: h.db, clock: h.clock }, { organizationId, userId: user.id, role: "member" });
  const member = new WebClient(h.app);
  const signedIn = await member.signIn(memberEmail);
  if (signedIn.status !== 303) throw new Error(`member sign-in failed: ${signedIn.status}`);
  return { admin, member, organizationId, adminEmail, memberEmail };
}

/** The value of the `<input … value="…">` with this id (a token shown on a page), unescaped. */
export function inputValue(html: string, id: string): string | null {
  const match = new RegExp(`<input[^>]*id="${id}"[^>]*>`).exec(html);
  const value = match ? /value="([^"]*)"/.exec(match[0]) : null;
  return value
    ? value[1]!
        .replace(/&quot;/g, '"')
        .replace(/&lt;/g, "<")
        .replace(/&gt;/g, ">")
        .replace(/&amp;/g, "&")
    : null;
}
