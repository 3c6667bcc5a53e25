/**
 * `/organizations`: the organizations the person is a member of, and switching between them. The
 * pages without an organization in their path (`/`, `/alerts`, the team page, new projects) show
 * the session's organization; a person in several organizations picks it here (a POST that sets
 * the session's organization after checking the membership, behind the pages' Origin check).
 * Pages with a resource in their path (a project, a run, a test, an alert) open whatever the
 * organization, for any member of it.
 */
import type { Hono } from "hono";
import { defaultMembership, listMemberships, switchOrganization } from "../services/tenancy/memberships";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { Layout } from "./layout";
import { pageNotFound } from "./not-found";
import { signedIn } from "./session";

export function registerOrganizations(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  web.get("/organizations", signedIn(config, paths), async (c) => {
    const person = c.var.person;
    const [current, memberships] = await Promise.all([
      defaultMembership(c.env, person.userId, person.activeOrganizationId),
      listMemberships(c.env, person.userId),
    ]);
    return c.html(
      <Layout title="Your organizations" page={{ person, membership: current, paths }}>
        <h1>Your organizations</h1>
        {memberships.length === 0 ? (
          <p>You are not a member of any organization any more.</p>
        ) : (
          <table>
            <caption class="muted">The projects, alerts and team pages show the current organization.</caption>
            <thead>
              <tr>
                <th scope="col">Organization</th>
                <th scope="col">Your role</th>
                <th scope="col">
                  <span class="visually-hidden">Action</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {memberships.map((membership) => (
                <tr>
                  <td>{membership.organizationName}</td>
                  <td>{membership.role === "admin" ? "Admin" : "Member"}</td>
                  <td>
                    {membership.organizationId === current?.organizationId ? (
                      <strong>Current</strong>
                    ) : (
                      <form method="post" action={paths.to(`/organizations/${membership.organizationId}/switch`)}>
                        <button type="submit" aria-label={`Switch to ${membership.organizationName}`}>
                          Switch
                        </button>
                      </form>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Layout>,
    );
  });

  web.post("/organizations/:id/switch", signedIn(config, paths), async (c) => {
    const person = c.var.person;
    const switched = await switchOrganization(c.env, {
      sessionId: person.sessionId,
      userId: person.userId,
      organizationId: c.req.param("id"),
    });
    if (!switched) return pageNotFound(c, person, paths);
    return c.redirect(paths.to("/"), 303);
  });
}
