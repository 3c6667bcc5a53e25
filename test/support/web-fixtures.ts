/** Fixtures of the pages' tests that read the database (both runtimes: the harness's db). */
import { eq } from "drizzle-orm";
import { members, users } from "../../src/db/schema";
import type { Database } from "../../src/db/types";

/** The organization a signed-up person is the admin of, and their user id. */
export async function signedUpOrganization(db: Database, email: string): Promise<{ organizationId: string; userId: string }> {
  const [row] = await db
    .select({ organizationId: members.organizationId, userId: users.id })
    .from(users)
    .innerJoin(members, eq(members.userId, users.id))
    .where(eq(users.email, email.toLowerCase()));
  if (!row) throw new Error(`no membership for ${email}`);
  return row;
}
