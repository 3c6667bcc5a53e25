/** `/settings/team`: in the navigation already, built by the next slice; signed-in only, like every page. */
import type { Hono } from "hono";
import { defaultMembership } from "../services/memberships";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { type Section, Layout } from "./layout";
import { signedIn } from "./session";

const PLACEHOLDERS: { path: string; section: Section; title: string; text: string }[] = [
  { path: "/settings/team", section: "team", title: "Team", text: "Members, invitations and the organization's API key come with the next slice." },
];

export function registerPlaceholders(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  for (const placeholder of PLACEHOLDERS) {
    web.get(placeholder.path, signedIn(config, paths), async (c) => {
      const person = c.var.person;
      const membership = await defaultMembership(c.env, person.userId, person.activeOrganizationId);
      return c.html(
        <Layout title={placeholder.title} page={{ person, membership, paths }} section={placeholder.section}>
          <h1>{placeholder.title}</h1>
          <p>{placeholder.text}</p>
        </Layout>,
      );
    });
  }
}
