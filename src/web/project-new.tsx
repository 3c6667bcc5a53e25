/**
 * `/projects/new` (admins of the person's organization): creates a project through the same
 * service as the admin API, then answers 303 to `/projects/:id/created`, which shows its upload
 * token once (carried by a one-time server-side message), with the command that uploads with it. A member's forged post is refused (403) before anything is created.
 */
import type { Context, Hono } from "hono";
import { defaultMembership } from "../services/tenancy/memberships";
import { ApiError } from "../lib/errors";
import { resolveQuotas } from "../lib/quotas";
import { createProject } from "../services/tenancy/projects";
import type { PageContext, WebConfig, WebEnv, WebPaths } from "./env";
import { readFlash, redirectWithFlash } from "./flash";
import { formFields } from "./forms";
import { ErrorContent, Layout } from "./layout";
import { adminsOnly, isAdmin } from "./project-access";
import { type ProjectFields, checkProjectFields } from "./project-forms";
import { CopyButton } from "./copy";
import { UploadCommands } from "./upload-commands";
import { signedIn } from "./session";

const FIELDS = ["name", "description", "defaultBranch"] as const;

/** What creating a project shows once, on `/projects/:id/created` (a one-time server-side message). */
type Created = { name: string; token: string };

const NewProjectForm = ({ page, fields, problems }: { page: PageContext; fields: Partial<ProjectFields>; problems: string[] }) => (
  <Layout title="New project" page={page} section="projects">
    <h1>New project</h1>
    {problems.length > 0 ? (
      <div class="notice" role="alert">
        <ul class="plain">
          {problems.map((problem) => (
            <li>{problem}</li>
          ))}
        </ul>
      </div>
    ) : null}
    <form method="post" action={page.paths.to("/projects/new")} class="card">
      <label>
        Name
        <input name="name" required maxlength={255} value={fields.name ?? ""} />
      </label>
      <label>
        Description <span class="muted">(optional)</span>
        <textarea name="description" rows={3} maxlength={10000}>
          {fields.description ?? ""}
        </textarea>
      </label>
      <label>
        Default branch <span class="muted">(optional: main, master, or runs without a branch)</span>
        <input name="defaultBranch" maxlength={255} value={fields.defaultBranch ?? ""} />
      </label>
      <button type="submit">Create project</button>
    </form>
  </Layout>
);

async function adminPage(c: Context<WebEnv>, paths: WebPaths): Promise<{ page: PageContext; organizationId: string } | Response> {
  const person = c.var.person;
  const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
  const page: PageContext = { person, membership, paths };
  if (!membership) {
    return c.html(
      <Layout title="No organization" page={page}>
        <ErrorContent heading="No organization" message="You are not a member of any organization any more." paths={paths} />
      </Layout>,
      404,
    );
  }
  if (!isAdmin(membership)) return adminsOnly(c, page, "create projects");
  return { page, organizationId: membership.organizationId };
}

export function registerNewProject(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  web.get("/projects/new", signedIn(config, paths), async (c) => {
    const admin = await adminPage(c, paths);
    if (admin instanceof Response) return admin;
    return c.html(<NewProjectForm page={admin.page} fields={{}} problems={[]} />);
  });

  web.post("/projects/new", signedIn(config, paths), async (c) => {
    const admin = await adminPage(c, paths);
    if (admin instanceof Response) return admin;
    const fields = await formFields(c, FIELDS);
    const checked = checkProjectFields({
      name: fields.name!,
      description: fields.description!,
      defaultBranch: fields.defaultBranch!,
      autoQuarantineDays: "",
    });
    if ("problems" in checked) return c.html(<NewProjectForm page={admin.page} fields={fields} problems={checked.problems} />, 400);
    const { value } = checked;
    let created;
    try {
      created = await createProject(
        {
          db: c.env.db,
          clock: c.env.clock,
          webAppUrl: config.webAppUrl,
          secrets: config.secrets,
          maxProjects: resolveQuotas(config.quotas).projects,
        },
        admin.organizationId,
        { name: value.name, description: value.description, defaultBranch: value.defaultBranch },
      );
    } catch (error) {
      // The organization's projects quota (QUOTA_PROJECTS): said on the form, with the API's status.
      if (error instanceof ApiError && error.code === "quota_exceeded")
        return c.html(<NewProjectForm page={admin.page} fields={fields} problems={[error.message]} />, 429);
      throw error;
    }
    // The token goes to the next page as a one-time server-side message: a reload of that page neither shows it again nor creates a second project.
    return redirectWithFlash(c, config, paths, `/projects/${created.project.id}/created`, {
      name: created.project.name,
      token: created.upload_token,
    } satisfies Created);
  });

  web.get("/projects/:id/created", signedIn(config, paths), async (c) => {
    const admin = await adminPage(c, paths);
    if (admin instanceof Response) return admin;
    const projectPath = `/projects/${c.req.param("id")}`;
    const created = await readFlash<Created>(c, config, `${projectPath}/created`);
    // Not after creating (a reload, a link): nothing to show here.
    if (!created) return c.redirect(paths.to(projectPath), 303);
    return c.html(
      <Layout title="Project created" page={admin.page} section="projects">
        <h1>Project created: {created.name}</h1>
        <p>
          Its upload token is below. Keep it as a secret of your CI (for example <code>CTA_UPLOAD_TOKEN</code>). This page shows it only now
          (a reload does not); you and every member of the organization can reveal it again on the project's settings page.
        </p>
        <p>
          <label>
            Upload token
            <input id="upload-token" readonly value={created.token} class="secret" />
          </label>
          <CopyButton target="upload-token" what="the upload token" />
        </p>
        <p>Upload your test reports from CI with:</p>
        <UploadCommands baseUrl={config.publicBaseUrl} token={created.token} nonce={c.get("secureHeadersNonce")} paths={paths} />
        <p>
          <a href={paths.to(projectPath)}>Open the project</a> · <a href={paths.to(`${projectPath}/settings`)}>Its settings</a>
        </p>
      </Layout>,
    );
  });
}
