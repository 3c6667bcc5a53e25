/**
 * `/projects/:id`: for now the project's name and description only (its overview comes with the
 * next slice), and the pattern of every page of an organization's resource: the resource is
 * looked up first, then the person's membership of its organization; without one, the same 404
 * as for a project that does not exist.
 */
import type { Hono } from "hono";
import { findMembership } from "../services/memberships";
import { findProjectById } from "../services/projects";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { Result, TimeAgo } from "./format";
import { Layout } from "./layout";
import { pageNotFound } from "./not-found";
import { signedIn } from "./session";

export function registerProject(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  web.get("/projects/:id", signedIn(config, paths), async (c) => {
    const person = c.var.person;
    const project = await findProjectById(c.env, c.req.param("id"));
    const membership = project ? await findMembership(c.env, person.userId, project.organizationId) : null;
    if (!project || !membership) return pageNotFound(c, person, paths);
    return c.html(
      <Layout title={project.name} page={{ person, membership, paths }} section="projects">
        <h1>{project.name}</h1>
        {project.description ? <p>{project.description}</p> : null}
        <p>
          Latest result: <Result result={project.latestResult} /> · last run <TimeAgo at={project.lastTestRunAt} now={c.env.clock.now()} /> ·{" "}
          {project.testRunsCount} runs
        </p>
        <p class="muted">The project's overview (trends, runs, tests) comes next.</p>
      </Layout>,
    );
  });
}
