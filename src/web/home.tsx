/**
 * `/`: the projects of the person's organization (the session's active one, else their oldest
 * membership) with the figures kept on each project and their open alerts.
 */
import type { Hono } from "hono";
import { defaultMembership } from "../services/tenancy/memberships";
import { OPEN_ALERT_DAYS, type ProjectSummary, listProjectSummaries } from "../services/runs/project-summaries";
import type { PageContext, WebConfig, WebEnv, WebPaths } from "./env";
import { Result, TimeAgo } from "./format";
import { ErrorContent, Layout } from "./layout";
import { signedIn } from "./session";

const ProjectsTable = ({ projects, page, now }: { projects: ProjectSummary[]; page: PageContext; now: Date }) => (
  // A narrow screen scrolls the table in its own box, never the page (styles.ts .table-scroll).
  <div class="table-scroll" tabindex={0} role="region" aria-label="Projects">
    <table class="projects">
      <caption class="muted">Open alerts: checking, not snoozed, tripped within {OPEN_ALERT_DAYS} days.</caption>
      <thead>
        <tr>
          <th scope="col">Project</th>
          <th scope="col">Latest result</th>
          <th scope="col">Last run</th>
          <th scope="col" class="num">
            Tests
          </th>
          <th scope="col" class="num">
            Flaky
          </th>
          <th scope="col" class="num">
            Broken
          </th>
          <th scope="col" class="num">
            Open alerts
          </th>
        </tr>
      </thead>
      <tbody>
        {projects.map((project) => (
          <tr>
            <td>
              <a href={page.paths.to(`/projects/${project.id}`)}>{project.name}</a>
              {project.description ? <div class="muted">{project.description}</div> : null}
            </td>
            <td>
              <Result result={project.latestResult} />
            </td>
            <td>
              <TimeAgo at={project.lastTestRunAt} now={now} />
            </td>
            <td class="num">{project.testsCount}</td>
            <td class="num">{project.flakyTestsCount}</td>
            <td class="num">{project.brokenTestsCount}</td>
            <td class="num">{project.openAlertsCount}</td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);

export function registerHome(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  web.get("/", signedIn(config, paths), async (c) => {
    const person = c.var.person;
    const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
    const page: PageContext = { person, membership, paths };
    if (!membership) {
      return c.html(
        <Layout title="No organization" page={page}>
          <ErrorContent heading="No organization" message="You are not a member of any organization any more." paths={paths} />
        </Layout>,
      );
    }
    const projects = await listProjectSummaries({ db: c.env.db, clock: c.env.clock, organizationId: membership.organizationId });
    const now = c.env.clock.now();
    return c.html(
      <Layout title="Projects" page={page} section="projects">
        <h1>Projects</h1>
        {membership.role === "admin" ? (
          <p>
            <a href={paths.to("/projects/new")}>New project</a>
          </p>
        ) : null}
        {projects.length === 0 ? (
          <p>
            {membership.role === "admin"
              ? "No projects yet: create the first one with New project."
              : "No projects yet: an admin of the organization creates them."}
          </p>
        ) : (
          <ProjectsTable projects={projects} page={page} now={now} />
        )}
      </Layout>,
    );
  });
}
