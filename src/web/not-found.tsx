/** The pages' 404: a resource that does not exist and one of an organization the person is not a member of look the same. */
import type { Context } from "hono";
import type { SignedInPerson } from "../auth/people";
import { defaultMembership } from "../services/tenancy/memberships";
import type { WebEnv, WebPaths } from "./env";
import { ErrorContent, Layout } from "./layout";

export async function pageNotFound(c: Context<WebEnv>, person: SignedInPerson, paths: WebPaths): Promise<Response> {
  const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
  return c.html(
    <Layout title="Not found" page={{ person, membership, paths }}>
      <ErrorContent
        heading="Not found"
        message="There is no such page, or it belongs to an organization you are not a member of."
        paths={paths}
      />
    </Layout>,
    404,
  );
}
