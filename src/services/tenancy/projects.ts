import { and, count, eq, getTableColumns } from "drizzle-orm";
import { alerts, organizations, projects } from "../../db/schema";
import { transactionWithRetry } from "../../db/transaction-retry";
import { ApiError, notFound, validationFailed } from "../../lib/errors";
import { DEFAULT_RETENTION, type Retention } from "../../lib/retention";
import { generateToken, hashToken } from "../../lib/keys";
import { isUuid } from "../../lib/ids";
import { DEFAULT_QUOTAS } from "../../lib/quotas";
import { type ListRequest, defineList } from "../../lib/lists";
import type { Page } from "../../lib/pagination";
import type { SecretKeyring } from "../../lib/secret-box";
import type { OrgScope, ServiceDeps } from "../shared/context";
import { ALERT_TYPES } from "../../lib/vocabulary";
import { presentProject } from "../../contract/presenters";
import { selectWithDataVersion } from "../shared/data-versions";

export type ProjectObject = ReturnType<typeof presentProject>;

/** The organization's projects, newest first; no filters. */
export const projectList = defineList<Record<string, never>, typeof projects.$inferSelect, ProjectObject, string>({
  name: "projects",
  order: { ts: projects.createdAt, id: projects.id, idKind: "uuid" },
  positionOf: (row) => ({ ts: row.createdAt, id: row.id }),
  present: (row, webAppUrl) => presentProject(row, webAppUrl),
});

export async function listProjects(scope: OrgScope, request: ListRequest<Record<string, never>>): Promise<Page<ProjectObject>> {
  const rows = await selectWithDataVersion(
    scope,
    (version) =>
      scope.db
        .select({ ...getTableColumns(projects), ...version })
        .from(projects)
        .where(and(eq(projects.organizationId, scope.organizationId), projectList.after(request)))
        .orderBy(...projectList.orderBy)
        .limit(projectList.fetchLimit(request)),
    "empty_list",
  );
  return projectList.page(rows, request, scope.webAppUrl);
}

/** The project row if it belongs to the organization; one not-found for missing and foreign ids. */
export async function findProjectRow(scope: OrgScope, projectId: string) {
  if (!isUuid(projectId)) throw notFound("Project");
  const [row] = await selectWithDataVersion(
    scope,
    (version) =>
      scope.db
        .select({ ...getTableColumns(projects), ...version })
        .from(projects)
        .where(and(eq(projects.id, projectId), eq(projects.organizationId, scope.organizationId)))
        .limit(1),
    "not_found",
  );
  if (!row) throw notFound("Project");
  return row;
}

export async function getProject(scope: OrgScope, projectId: string): Promise<ProjectObject> {
  return presentProject(await findProjectRow(scope, projectId), scope.webAppUrl);
}

/** `description: null` or `""` clears it; fields left undefined are untouched. */
export async function updateProject(
  scope: OrgScope,
  projectId: string,
  patch: { name?: string; description?: string | null },
): Promise<ProjectObject> {
  if (!isUuid(projectId)) throw notFound("Project");
  const changes: Partial<typeof projects.$inferInsert> = { updatedAt: scope.clock.now() };
  if (patch.name !== undefined) changes.name = patch.name;
  if (patch.description !== undefined) changes.description = patch.description === "" ? null : patch.description;
  const [row] = await scope.db
    .update(projects)
    .set(changes)
    .where(and(eq(projects.id, projectId), eq(projects.organizationId, scope.organizationId)))
    .returning();
  if (!row) throw notFound("Project");
  return presentProject(row, scope.webAppUrl);
}

const uploadTokenContext = (projectId: string) => `projects/${projectId}/upload_token`;

/**
 * With a keyring, the token is also kept sealed for its own row (secret-box), so that members can
 * read it on the project's settings page; without one (benchmarks' fixtures), only its hash.
 */
export type UploadTokenDeps = ServiceDeps & { secrets?: SecretKeyring };

const sealUploadToken = (deps: UploadTokenDeps, projectId: string, token: string) =>
  deps.secrets ? deps.secrets.encrypt(token, uploadTokenContext(projectId)) : Promise.resolve(null);

/** The project's upload token as sealed beside its hash; null for a token made before it was kept (rotate it to read it). */
export async function revealUploadToken(
  secrets: SecretKeyring,
  project: { id: string; uploadTokenEncrypted: string | null },
): Promise<string | null> {
  return project.uploadTokenEncrypted === null ? null : secrets.decrypt(project.uploadTokenEncrypted, uploadTokenContext(project.id));
}

/**
 * Creates the project with its upload token and its four alerts (active, not snoozed) in one
 * transaction, within the organization's projects quota (`maxProjects`, QUOTA_PROJECTS: default
 * DEFAULT_QUOTAS.projects, null for no cap): one more is a 429 `quota_exceeded`, without
 * Retry-After (waiting does not make room). The count and the insert share a transaction holding
 * the organization's row, so concurrent creations cannot both take the last place. Every path
 * that creates a project (admin API, pages, demo seed) comes here.
 */
export async function createProject(
  deps: UploadTokenDeps & { maxProjects?: number | null },
  organizationId: string,
  input: { name: string; description?: string | null; defaultBranch?: string | null },
) {
  if (!isUuid(organizationId)) throw notFound("Organization");
  const now = deps.clock.now();
  const uploadToken = generateToken("uploadToken");
  const uploadTokenHash = await hashToken(uploadToken);
  // The id is chosen here because the sealed token is bound to its row.
  const id = crypto.randomUUID();
  const uploadTokenEncrypted = await sealUploadToken(deps, id, uploadToken);
  const cap = deps.maxProjects === undefined ? DEFAULT_QUOTAS.projects : deps.maxProjects;
  return transactionWithRetry(deps.db, async (tx) => {
    const [org] = await tx
      .select({ id: organizations.id })
      .from(organizations)
      .where(eq(organizations.id, organizationId))
      .for("no key update");
    if (!org) throw notFound("Organization");
    if (cap !== null) {
      const [existing] = await tx.select({ projects: count() }).from(projects).where(eq(projects.organizationId, organizationId));
      if (existing!.projects >= cap) {
        throw new ApiError(
          "quota_exceeded",
          `This organization already has ${existing!.projects} projects, the most it may have (${cap}, QUOTA_PROJECTS). Ask the operator to raise it.`,
        );
      }
    }
    const [project] = await tx
      .insert(projects)
      .values({
        id,
        organizationId,
        name: input.name,
        description: input.description === "" ? null : (input.description ?? null),
        defaultBranch: input.defaultBranch ?? null,
        uploadTokenHash,
        uploadTokenEncrypted,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    await tx
      .insert(alerts)
      .values(ALERT_TYPES.map((alertType) => ({ organizationId, projectId: project!.id, alertType, createdAt: now, updatedAt: now })));
    return { project: presentProject(project!, deps.webAppUrl), upload_token: uploadToken };
  });
}

/**
 * The project's check settings, as PATCH sets them: `defaultBranch` (null: main, master, or no
 * branch), `autoQuarantineDays` (null: off) and `retentionDays` (null: RETENTION_DAYS; at most
 * `retention.summaryDays`, docs/retention.md); a field left undefined is kept.
 */
export async function setProjectCheckSettings(
  deps: Pick<ServiceDeps, "db" | "clock"> & { retention?: Retention },
  projectId: string,
  patch: { defaultBranch?: string | null; autoQuarantineDays?: number | null; retentionDays?: number | null },
) {
  if (!isUuid(projectId)) throw notFound("Project");
  const summaryDays = (deps.retention ?? DEFAULT_RETENTION).summaryDays;
  if (patch.retentionDays !== undefined && patch.retentionDays !== null && patch.retentionDays > summaryDays)
    throw validationFailed([{ field: "retention_days", message: `must be at most ${summaryDays} (SUMMARY_RETENTION_DAYS), or null` }]);
  const changes: Partial<typeof projects.$inferInsert> = { updatedAt: deps.clock.now() };
  if (patch.defaultBranch !== undefined) changes.defaultBranch = patch.defaultBranch;
  if (patch.autoQuarantineDays !== undefined) changes.autoQuarantineDays = patch.autoQuarantineDays;
  if (patch.retentionDays !== undefined) changes.retentionDays = patch.retentionDays;
  const [row] = await deps.db.update(projects).set(changes).where(eq(projects.id, projectId)).returning({
    id: projects.id,
    defaultBranch: projects.defaultBranch,
    autoQuarantineDays: projects.autoQuarantineDays,
    retentionDays: projects.retentionDays,
  });
  if (!row) throw notFound("Project");
  return {
    project_id: row.id,
    default_branch: row.defaultBranch,
    auto_quarantine_days: row.autoQuarantineDays,
    retention_days: row.retentionDays,
  };
}

/**
 * A new upload token: the old one is refused from the next upload (tokens are looked up by hash
 * on every request, nothing caches them). `organizationId` scopes the change (the web app's); the
 * admin API's operator may name any project.
 */
export async function regenerateUploadToken(deps: UploadTokenDeps, projectId: string, organizationId?: string) {
  if (!isUuid(projectId)) throw notFound("Project");
  const uploadToken = generateToken("uploadToken");
  const [row] = await deps.db
    .update(projects)
    .set({
      uploadTokenHash: await hashToken(uploadToken),
      uploadTokenEncrypted: await sealUploadToken(deps, projectId, uploadToken),
      updatedAt: deps.clock.now(),
    })
    .where(
      organizationId === undefined
        ? eq(projects.id, projectId)
        : and(eq(projects.id, projectId), eq(projects.organizationId, organizationId)),
    )
    .returning({ id: projects.id });
  if (!row) throw notFound("Project");
  return { upload_token: uploadToken };
}
