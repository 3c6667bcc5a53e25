/**
 * The pages of one project find it through the person's membership of its organization, in one
 * statement: a missing id and another organization's project get the same 404 page. Admins change
 * things; a member's forged request is refused here, on the server, with a 403 page.
 */
import type { Context } from "hono";
import { type Membership, type ProjectRow, findProjectForMember } from "../services/tenancy/memberships";
import type { PageContext, WebEnv, WebPaths } from "./env";
import { ErrorContent, Layout } from "./layout";
import { pageNotFound } from "./not-found";

export type MemberProject = { project: ProjectRow; membership: Membership; page: PageContext };

/** The project of the path's `:id` with the person's membership, or the 404 answer. */
export async function memberProject(c: Context<WebEnv>, paths: WebPaths): Promise<MemberProject | Response> {
  const person = c.var.person;
  const found = await findProjectForMember(c.env, person.userId, c.req.param("id") ?? "");
  if (!found) return pageNotFound(c, person, paths);
  return { ...found, page: { person, membership: found.membership, paths } };
}

export const isAdmin = (membership: Membership | null) => membership?.role === "admin";

/** The answer to a member who asks for what only admins may do (a forged form, a typed URL). */
export function adminsOnly(c: Context<WebEnv>, page: PageContext, what: string): Response | Promise<Response> {
  return c.html(
    <Layout title="Admins only" page={page} section="projects">
      <ErrorContent heading="Admins only" message={`Only an admin of the organization can ${what}.`} paths={page.paths} />
    </Layout>,
    403,
  );
}
