/**
 * The pattern of every page of an organization's resource (docs/web-app.md): the resource is found
 * through the person's membership of its organization (one statement for a project's, a test's and
 * an alert's pages); without one, the caller answers the
 * same 404 as for a resource that does not exist. With one, the page reads through the
 * same services as the API, scoped to that organization.
 */
import type { Context } from "hono";
import {
  findMembership,
  findProjectForMember,
  findRunForMember,
  type Membership,
  type ProjectRow,
  type RunRow,
} from "../services/tenancy/memberships";
import type { OrgScope } from "../services/shared/context";
import type { PageContext, WebConfig, WebEnv, WebPaths } from "./env";

export type MemberAccess = { scope: OrgScope; membership: Membership; page: PageContext };

/** The person's access to `organizationId` (null when it is unknown or they are not a member). */
export async function memberAccess(
  c: Context<WebEnv>,
  config: WebConfig,
  paths: WebPaths,
  organizationId: string | null,
): Promise<MemberAccess | null> {
  if (organizationId === null) return null;
  const person = c.var.person;
  const membership = await findMembership(c.env, person.userId, organizationId);
  return membership ? accessOf(c, config, paths, membership) : null;
}

/** The access a membership the page has found gives: the organization's scope and the layout's context. */
export function accessOf(c: Context<WebEnv>, config: WebConfig, paths: WebPaths, membership: Membership): MemberAccess {
  return {
    scope: {
      db: c.env.db,
      clock: c.env.clock,
      webAppUrl: config.webAppUrl,
      organizationId: membership.organizationId,
      retention: config.retention,
    },
    membership,
    page: { person: c.var.person, membership, paths },
  };
}

/**
 * The project of the path with the person's access to its organization, in one statement (the
 * project joined to the person's membership); null → the caller's 404 page, for missing and
 * foreign projects alike.
 */
export async function projectMemberAccess(
  c: Context<WebEnv>,
  config: WebConfig,
  paths: WebPaths,
): Promise<{ project: ProjectRow; access: MemberAccess } | null> {
  const found = await findProjectForMember(c.env, c.var.person.userId, c.req.param("id") ?? "");
  return found ? { project: found.project, access: accessOf(c, config, paths, found.membership) } : null;
}

/**
 * The run of the path (`:id`, `:number`) with its project and the person's access, in one
 * statement (findRunForMember): the run pages pass this run to the services, which then read its
 * parts without finding the project or the run again. Null → the caller's 404 page.
 */
export async function runMemberAccess(
  c: Context<WebEnv>,
  config: WebConfig,
  paths: WebPaths,
): Promise<{ run: RunRow; project: ProjectRow; access: MemberAccess } | null> {
  const found = await findRunForMember(c.env, c.var.person.userId, c.req.param("id") ?? "", c.req.param("number") ?? "");
  return found ? { run: found.run, project: found.project, access: accessOf(c, config, paths, found.membership) } : null;
}

/** What only admins may do; a member's forged request is refused by the caller with 403. */
export const isAdmin = (access: MemberAccess) => access.membership.role === "admin";

/** A path with its query: only the non-empty values, in order. */
export function withQuery(path: string, query: Record<string, string | null | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}
