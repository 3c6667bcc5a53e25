/**
 * Who may see what in the web app: a person sees an organization's pages only through a
 * membership of it. Every page that shows an organization's resource looks the membership up
 * for the resource's organization, and a person without one gets the same 404 as for a resource
 * that does not exist (docs/web-app.md).
 */
import { and, asc, eq, sql } from "drizzle-orm";
import { type MemberRole, alerts, members, organizations, projects, sessions, testRuns, tests, users } from "../../db/schema";
import { isUuid, parsePathNumber } from "../../lib/ids";
import type { ServiceDeps } from "../shared/context";

export type Membership = { organizationId: string; organizationName: string; role: MemberRole };

type Deps = Pick<ServiceDeps, "db">;

const membershipColumns = { organizationId: members.organizationId, organizationName: organizations.name, role: members.role };

/** The person's membership of this organization, or null. */
export async function findMembership(deps: Deps, userId: string, organizationId: string): Promise<Membership | null> {
  if (!isUuid(organizationId)) return null;
  const [row] = await deps.db
    .select(membershipColumns)
    .from(members)
    .innerJoin(organizations, eq(organizations.id, members.organizationId))
    .where(and(eq(members.userId, userId), eq(members.organizationId, organizationId)))
    .limit(1);
  return row ?? null;
}

export type ProjectRow = typeof projects.$inferSelect;

/**
 * A project as a person may see it: one statement, the project joined to the person's membership
 * of its organization. Null for a missing id and for a project of an organization the person is
 * not a member of alike (the pages answer both with the same 404).
 */
export async function findProjectForMember(
  deps: Deps,
  userId: string,
  projectId: string,
): Promise<{ project: ProjectRow; membership: Membership } | null> {
  if (!isUuid(projectId)) return null;
  const [row] = await deps.db
    .select({ project: projects, membership: membershipColumns })
    .from(projects)
    .innerJoin(members, and(eq(members.organizationId, projects.organizationId), eq(members.userId, userId)))
    .innerJoin(organizations, eq(organizations.id, projects.organizationId))
    .where(eq(projects.id, projectId))
    .limit(1);
  return row ?? null;
}

export type TestRow = typeof tests.$inferSelect;

/**
 * The test of the path, in the project of the path, with the person's membership of the project's
 * organization, in one statement (the test pages' lookup, like findProjectForMember's); null for a
 * missing test, a test of another project and another organization's test alike.
 */
export async function findTestForMember(
  deps: Deps,
  userId: string,
  projectId: string,
  testId: string,
): Promise<{ test: TestRow; project: Pick<ProjectRow, "id" | "name" | "defaultBranch">; membership: Membership } | null> {
  if (!isUuid(projectId) || !isUuid(testId)) return null;
  const [row] = await deps.db
    .select({
      test: tests,
      project: { id: projects.id, name: projects.name, defaultBranch: projects.defaultBranch },
      membership: membershipColumns,
    })
    .from(tests)
    .innerJoin(projects, eq(projects.id, tests.projectId))
    .innerJoin(members, and(eq(members.organizationId, projects.organizationId), eq(members.userId, userId)))
    .innerJoin(organizations, eq(organizations.id, projects.organizationId))
    .where(and(eq(tests.id, testId), eq(projects.id, projectId)))
    .limit(1);
  return row ?? null;
}

export type RunRow = typeof testRuns.$inferSelect;

/**
 * The run of the path (its number in the project of the path) with its project and the person's
 * membership of the project's organization, in one statement (the run pages' lookup, like
 * findTestForMember's): the pages pass this run to the services instead of finding it again.
 * Null for a missing run, project or number and a foreign one alike.
 */
export async function findRunForMember(
  deps: Deps,
  userId: string,
  projectId: string,
  runNumber: string,
): Promise<{ run: RunRow; project: ProjectRow; membership: Membership } | null> {
  const number = parsePathNumber(runNumber);
  if (!isUuid(projectId) || number === null) return null;
  const [row] = await deps.db
    .select({ run: testRuns, project: projects, membership: membershipColumns })
    .from(testRuns)
    .innerJoin(projects, eq(projects.id, testRuns.projectId))
    .innerJoin(members, and(eq(members.organizationId, projects.organizationId), eq(members.userId, userId)))
    .innerJoin(organizations, eq(organizations.id, projects.organizationId))
    .where(and(eq(testRuns.projectId, projectId), eq(testRuns.number, number)))
    .limit(1);
  return row ?? null;
}

export type AlertRow = typeof alerts.$inferSelect;

/** The alert of the path with the person's membership of its organization, in one statement; null for missing and foreign alerts alike. */
export async function findAlertForMember(
  deps: Deps,
  userId: string,
  alertId: string,
): Promise<{ alert: AlertRow; membership: Membership } | null> {
  if (!isUuid(alertId)) return null;
  const [row] = await deps.db
    .select({ alert: alerts, membership: membershipColumns })
    .from(alerts)
    .innerJoin(members, and(eq(members.organizationId, alerts.organizationId), eq(members.userId, userId)))
    .innerJoin(organizations, eq(organizations.id, alerts.organizationId))
    .where(eq(alerts.id, alertId))
    .limit(1);
  return row ?? null;
}

/**
 * The organization a page without one in its path shows: the session's active organization while
 * the person is still a member of it, else their oldest membership; null without any.
 */
export async function defaultMembership(deps: Deps, userId: string, activeOrganizationId: string | null): Promise<Membership | null> {
  if (activeOrganizationId) {
    const active = await findMembership(deps, userId, activeOrganizationId);
    if (active) return active;
  }
  const [row] = await deps.db
    .select(membershipColumns)
    .from(members)
    .innerJoin(organizations, eq(organizations.id, members.organizationId))
    .where(eq(members.userId, userId))
    .orderBy(asc(members.createdAt), asc(members.id))
    .limit(1);
  return row ?? null;
}

/** Adds a person to an organization (the demo's member, tests); invitations come with the team page. */
export async function addMember(
  deps: Pick<ServiceDeps, "db" | "clock">,
  input: { organizationId: string; userId: string; role: MemberRole },
): Promise<void> {
  await deps.db.insert(members).values({ ...input, createdAt: deps.clock.now() });
}

/** The user with this e-mail (lower-cased as stored), or null. */
export async function findUserByEmail(deps: Deps, email: string): Promise<{ id: string; name: string } | null> {
  const [row] = await deps.db
    .select({ id: users.id, name: users.name })
    .from(users)
    .where(eq(users.email, email.trim().toLowerCase()))
    .limit(1);
  return row ?? null;
}

/** Every organization the person is a member of, by name (the organizations page). */
export async function listMemberships(deps: Deps, userId: string): Promise<Membership[]> {
  return deps.db
    .select(membershipColumns)
    .from(members)
    .innerJoin(organizations, eq(organizations.id, members.organizationId))
    .where(eq(members.userId, userId))
    .orderBy(asc(organizations.name), asc(members.organizationId));
}

/**
 * Makes `organizationId` the session's organization (the one `/`, `/alerts`, the team page and
 * new projects use), in one statement that also checks the membership: false when the person is
 * not a member of it (the caller's 404), so a session never points at a foreign organization.
 */
export async function switchOrganization(
  deps: Deps,
  input: { sessionId: string; userId: string; organizationId: string },
): Promise<boolean> {
  if (!isUuid(input.organizationId)) return false;
  const rows = await deps.db
    .update(sessions)
    .set({ activeOrganizationId: input.organizationId })
    .where(
      and(
        eq(sessions.id, input.sessionId),
        eq(sessions.userId, input.userId),
        sql`exists (select 1 from ${members} m where m.organization_id = ${input.organizationId} and m.user_id = ${input.userId})`,
      ),
    )
    .returning({ id: sessions.id });
  return rows.length > 0;
}
